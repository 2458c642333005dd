//! Who sees what.

use super::*;

fn bearer(name: &str) -> Principal {
    Principal::Bearer { name: name.into() }
}

/// A tool error's text with one id replaced, so two answers about different ids compare.
fn without(text: &str, id: &str) -> String {
    text.replace(id, "<id>")
}

#[tokio::test]
async fn two_callers_with_one_idempotency_key_get_two_jobs() {
    let w = world(&[]);
    let (a, b) = (
        w.as_caller(bearer("agent-a")),
        w.as_caller(bearer("agent-b")),
    );
    let args = json!({"document": "a", "idempotency_key": "order-1"});
    let first = a.ok(names::SUBMIT_JOB, args.clone()).await;
    let other = b
        .ok(
            names::SUBMIT_JOB,
            json!({"document": "b", "idempotency_key": "order-1"}),
        )
        .await;
    assert_ne!(first["inference_id"], other["inference_id"]);
    assert_eq!(other.get("idempotent_replay"), None, "no replay of A's job");
    // A's key still replays A's job.
    let again = a.ok(names::SUBMIT_JOB, args).await;
    assert_eq!(again["inference_id"], first["inference_id"]);
    assert_eq!(again["idempotent_replay"], true);
    let ids = [&first, &other].map(|o| o["inference_id"].as_str().unwrap().to_owned());
    let owners = ids.map(|id| w.ports().jobs.job(&id).unwrap().owner.unwrap());
    assert_ne!(owners[0], owners[1]);
    for owner in &owners {
        assert!(!owner.as_str().contains("agent"), "an opaque tag: {owner}");
    }
}

#[tokio::test]
async fn another_callers_job_and_task_read_exactly_as_unknown_ones() {
    let w = world(&[]);
    let (a, b) = (
        w.as_caller(bearer("agent-a")),
        w.as_caller(bearer("agent-b")),
    );
    let job = a.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = job["inference_id"].as_str().unwrap();
    w.notify(id, "Completed", Some(json!({"label": "secret"})))
        .await;
    let theirs = b
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    let unknown_id = "00000000-0000-4000-8000-000000000000";
    let unknown = b
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": unknown_id}))
        .await;
    assert_eq!(without(&theirs, id), without(&unknown, unknown_id));
    assert!(!theirs.contains("secret"));
    let mine = a
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(mine["result"], json!({"label": "secret"}));

    let created = a
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = created["taskId"].as_str().unwrap();
    let unknown_task = format!("{unknown_id}.{}", "0".repeat(32));
    let theirs = b.get_task(task_id).await.unwrap_err();
    let unknown = b.get_task(&unknown_task).await.unwrap_err();
    assert_eq!(theirs.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(theirs.message, unknown.message);
    let refused = b.cancel_task(task_id).await.unwrap_err();
    assert_eq!(refused.message, unknown.message);
    let inference_id = task_id.rsplit_once('.').unwrap().0;
    assert_eq!(
        w.ports().jobs.job(inference_id).unwrap().status,
        JobStatus::Pending,
        "B's cancel changed nothing"
    );
    assert!(
        a.get_task(task_id).await.is_ok(),
        "the owner still reads it"
    );
}

#[tokio::test]
async fn sessions_and_runs_are_per_caller() {
    let w = world(&[]);
    let (a, b) = (
        w.as_caller(bearer("agent-a")),
        w.as_caller(bearer("agent-b")),
    );
    let args = json!({"input_data_uri": "s3://b/train/", "session_id": "shared-name", "idempotency_key": "k"});
    let run_a = a.ok(names::TRIGGER_TRAINING, args.clone()).await;
    let run_b = b.ok(names::TRIGGER_TRAINING, args).await;
    assert_ne!(
        run_a["execution_arn"], run_b["execution_arn"],
        "one key, two runs"
    );
    for (caller, own) in [(&a, &run_a), (&b, &run_b)] {
        let listed = caller
            .ok(
                names::CHECK_TRAINING_RESULT,
                json!({"session_id": "shared-name"}),
            )
            .await;
        let arns: Vec<_> = listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["execution_arn"].clone())
            .collect();
        assert_eq!(arns, [own["execution_arn"].clone()]);
        assert_eq!(listed["session_id"], "shared-name");
    }
    let arn = run_a["execution_arn"].as_str().unwrap();
    let theirs = b
        .tool_error(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    let unknown_arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/none";
    let unknown = b
        .tool_error(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": unknown_arn}),
        )
        .await;
    assert_eq!(without(&theirs, arn), without(&unknown, unknown_arn));
    a.ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    // No raw principal in what SageMaker stores.
    for started in w.ports().pipeline.started() {
        assert!(
            !started.description.contains("agent"),
            "{}",
            started.description
        );
    }
}

#[tokio::test]
async fn items_from_before_owners_are_seen_only_where_everyone_shared_them() {
    let w = world(&[]);
    w.ports()
        .jobs
        .insert_completed_pointer("legacy-1", "s3://b/outputs/legacy-1.out");
    let args = json!({"inference_id": "legacy-1"});
    for principal in [Principal::Local, bearer("default")] {
        let seen = w
            .as_caller(principal)
            .ok(names::CHECK_JOB_STATUS, args.clone())
            .await;
        assert_eq!(seen["status"], "completed");
    }
    let oauth = Principal::OAuth {
        issuer: "https://issuer".into(),
        subject: "alice".into(),
    };
    for principal in [bearer("agent-a"), oauth, Principal::Gateway] {
        let refused = w
            .as_caller(principal.clone())
            .tool_error(names::CHECK_JOB_STATUS, args.clone())
            .await;
        assert!(
            refused.contains("no job with inference_id"),
            "{principal:?}: {refused}"
        );
    }
}
