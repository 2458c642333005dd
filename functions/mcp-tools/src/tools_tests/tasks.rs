//! Tasks.

use super::*;

/// A job submitted as a task on `w`: its task id and its inference id.
async fn job_task(w: &World) -> (String, String) {
    let created = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    let inference_id = task_id.rsplit_once('.').unwrap().0.to_owned();
    (task_id, inference_id)
}

#[tokio::test]
async fn a_job_task_is_working_then_completed_with_the_result() {
    let w = world(&[]);
    let created = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert_eq!(
        created["statusMessage"],
        "invoked: SageMaker has queued the request"
    );
    // request 3600 (the deployment's default) + timeout 300 + result TTL 3600 seconds.
    assert_eq!(created["ttlMs"], 7_500_000);
    assert_eq!(created["pollIntervalMs"], 5000);
    let task_id = created["taskId"].as_str().unwrap();
    let (inference_id, secret) = task_id.rsplit_once('.').unwrap();
    assert!(secret.len() >= 32);

    let working = w.get_task(task_id).await.unwrap();
    assert_eq!(working["status"], "working", "{working}");
    w.notify(inference_id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["result"],
        json!({"label": "ok"})
    );
    assert_ne!(done["result"]["isError"], true);
}

#[tokio::test]
async fn a_failed_jobs_task_completes_with_a_tool_error() {
    let w = world(&[]);
    let (task_id, inference_id) = &job_task(&w).await;
    let (task_id, inference_id) = (task_id.as_str(), inference_id.as_str());
    w.notify(inference_id, "Failed", None).await;
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(done["result"]["structuredContent"]["status"], "failed");
}

#[tokio::test]
async fn a_cancelled_job_task_stays_cancelled_when_its_outcome_arrives() {
    let w = world(&[]);
    let (task_id, inference_id) = &job_task(&w).await;
    let (task_id, inference_id) = (task_id.as_str(), inference_id.as_str());
    w.cancel_task(task_id).await.unwrap();
    w.notify(inference_id, "Completed", Some(json!({"late": true})))
        .await;
    let cancelled = w.get_task(task_id).await.unwrap();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let job = w.ports().jobs.job(inference_id).unwrap();
    assert_eq!(job.status, JobStatus::Cancelled);
    assert_eq!(job.result, None);
}

#[tokio::test]
async fn an_unknown_or_forged_task_is_invalid_params_with_one_answer() {
    let w = world(&[]);
    let (_, inference_id) = job_task(&w).await;
    let forged = format!("{inference_id}.{}", "0".repeat(32));
    let unknown = format!("nope.{}", "0".repeat(32));
    let mut messages = Vec::new();
    for id in [forged.as_str(), unknown.as_str(), "malformed"] {
        let error = w.get_task(id).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{id}");
        messages.push(error.message.to_string());
        let error = w.cancel_task(id).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{id}");
    }
    assert!(messages.iter().all(|m| m == &messages[0]), "{messages:?}");
    assert_eq!(
        w.ports().jobs.job(&inference_id).unwrap().status,
        JobStatus::Pending
    );
}

#[tokio::test]
async fn a_bad_argument_to_a_task_form_is_the_same_tool_error_as_a_plain_call() {
    let w = world(&[]);
    let plain = w
        .tool_error(names::SUBMIT_JOB, json!({"document": ""}))
        .await;
    let task = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": ""}))
        .await;
    assert_eq!(task["isError"], true, "{task}");
    assert_eq!(task["content"][0]["text"], plain);
}

#[tokio::test]
async fn a_run_task_follows_the_run_and_cancel_stops_it() {
    let w = world(&[]);
    let args = json!({"input_data_uri": "s3://b/train/t", "session_id": "s"});
    let created = w.call_as_task(names::TRIGGER_TRAINING, args.clone()).await;
    assert_eq!(created["status"], "working", "{created}");
    let task_id = created["taskId"].as_str().unwrap();
    let working = w.get_task(task_id).await.unwrap();
    assert_eq!(working["status"], "working", "{working}");
    assert_eq!(
        working["statusMessage"],
        "Executing: no step has started yet"
    );
    w.cancel_task(task_id).await.unwrap();
    let stopped = w.get_task(task_id).await.unwrap();
    assert_eq!(stopped["status"], "cancelled", "{stopped}");

    let failing = w.call_as_task(names::TRIGGER_TRAINING, args).await;
    let failing_id = failing["taskId"].as_str().unwrap();
    let arn = w.ports().pipeline.started().len();
    let arn = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{arn}");
    w.ports()
        .pipeline
        .set_failure_reason(&arn, "AlgorithmError");
    let done = w.get_task(failing_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(
        done["result"]["structuredContent"]["failure_reason"],
        "AlgorithmError"
    );
}

#[tokio::test]
async fn a_finished_run_tasks_result_names_the_model_package_it_registered() {
    let w = world(&[]);
    let args = json!({"input_data_uri": "s3://b/train/", "session_id": "s"});
    let created = w.call_as_task(names::TRIGGER_TRAINING, args).await;
    let task_id = created["taskId"].as_str().unwrap();
    let n = w.ports().pipeline.started().len();
    let arn = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}");
    let package = w.ports().lineage.register_model(&arn, "s3://b/train/");
    w.ports().pipeline.succeed_with_model(&arn, &package);
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false);
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["model_package_arn"], package.as_str());
    assert_eq!(result["steps"][3]["model_package_arn"], package.as_str());
}
