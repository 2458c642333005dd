//! Reads count too: status checks, provenance walks, `resources/read` and `tasks/get` against
//! each caller's reads per minute, with paused time for the window.

use super::*;

use crate::contract::QUOTA_REACHED;

fn bob() -> Principal {
    Principal::Bearer { name: "bob".into() }
}

impl World {
    async fn read_resource(&self, uri: &str) -> Result<Value, rmcp::ErrorData> {
        let principal = self.principal.clone();
        request(
            self.tools.clone(),
            principal,
            "resources/read",
            json!({"uri": uri}),
            None,
        )
        .await
    }
}

const REFUSED: &str = "Quota reached: each caller may make 3 reads (status checks, provenance, \
                       resources/read, tasks/get) per minute. Nothing was read; try again in ";

#[tokio::test(start_paused = true)]
async fn reads_over_the_quota_read_nothing_and_say_when_to_come_back() {
    let w = world(&[("CALLER_READS_PER_MINUTE", "3")]);
    let task = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = task["taskId"].as_str().unwrap().to_owned();
    let id = task_id.rsplit_once('.').unwrap().0.to_owned();
    w.notify(&id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let check = json!({"inference_id": id});
    w.ok(names::CHECK_JOB_STATUS, check.clone()).await;
    w.ok(names::CHECK_TRAINING_RESULT, json!({"session_id": "s"}))
        .await;
    w.get_task(&task_id).await.unwrap();

    // The fourth read of the minute, in every form: refused with the seconds left, and only
    // the counter written (one refused write, then none: the refusal is remembered).
    let (reads, writes) = w.ports().jobs.calls();
    let message = w.tool_error(names::CHECK_JOB_STATUS, check.clone()).await;
    assert!(message.starts_with(REFUSED), "{message}");
    let secs: u64 = message[REFUSED.len()..]
        .trim_end_matches(" s.")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&secs), "{message}");
    for (tool, args) in [
        (
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/x1"}),
        ),
        (names::CHECK_TRAINING_RESULT, json!({"session_id": "s"})),
        (
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": "arn:aws:sagemaker:us-east-1:123456789012:model-package/g/1"}),
        ),
    ] {
        let message = w.tool_error(tool, args).await;
        assert!(message.starts_with(REFUSED), "{tool}: {message}");
    }
    for refused in [
        w.get_task(&task_id).await,
        w.read_resource(&format!("job://{id}/output")).await,
    ] {
        let error = refused.unwrap_err();
        assert_eq!(error.code, QUOTA_REACHED);
        assert!(error.message.starts_with(REFUSED), "{error:?}");
        let data = error.data.unwrap();
        assert_eq!(data["limit"], 3);
        assert!((1..=60).contains(&data["retryAfterSecs"].as_u64().unwrap()));
    }
    assert_eq!(w.ports().jobs.calls(), (reads, writes + 1));
    assert_eq!(w.ports().lineage.calls("DescribeModelPackage"), 0);

    // Another caller reads; so does this one once the minute ends.
    let bob = w.as_caller(bob());
    bob.ok(names::CHECK_TRAINING_RESULT, json!({"session_id": "s"}))
        .await;
    tokio::time::advance(std::time::Duration::from_secs(secs)).await;
    let status = w.ok(names::CHECK_JOB_STATUS, check).await;
    assert_eq!(status["status"], "completed");
}

#[tokio::test(start_paused = true)]
async fn a_read_quota_of_zero_is_off() {
    let w = world(&[("CALLER_READS_PER_MINUTE", "0")]);
    let job = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let (_, writes) = w.ports().jobs.calls();
    for _ in 0..20 {
        w.ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": job["inference_id"]}),
        )
        .await;
    }
    assert_eq!(w.ports().jobs.calls().1, writes, "no counter written");
}

#[tokio::test]
async fn a_read_whose_count_cannot_be_written_is_refused_as_retryable() {
    let w = world(&[]);
    let job = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    w.ports().jobs.fail_writes();
    let (reads, _) = w.ports().jobs.calls();
    let message = w
        .tool_error(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": job["inference_id"]}),
        )
        .await;
    let retryable = "This read could not be counted against the caller's quota, so nothing was \
                     read; retrying may succeed.";
    assert_eq!(message, retryable);
    let id = job["inference_id"].as_str().unwrap();
    let error = w
        .read_resource(&format!("job://{id}/output"))
        .await
        .unwrap_err();
    assert_eq!(
        (error.code, &*error.message),
        (ErrorCode::INTERNAL_ERROR, retryable)
    );
    let error = w.get_task(&format!("{id}.secret")).await.unwrap_err();
    assert_eq!(
        (error.code, &*error.message),
        (ErrorCode::INTERNAL_ERROR, retryable)
    );
    assert_eq!(w.ports().jobs.calls().0, reads, "the job not read");
}
