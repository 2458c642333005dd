//! Check_job_status.

use super::*;

#[tokio::test]
async fn check_job_status_reports_the_result_inline_or_as_a_url() {
    let w = world(&[]);
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap();
    let pending = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(pending["status"], "pending");
    assert!(pending.get("result").is_none());
    w.notify(id, "Completed", Some(json!({"label": "ok", "score": 0.93})))
        .await;
    let done = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"], json!({"label": "ok", "score": 0.93}));
    assert!(done.get("result_url").is_none());

    w.ports()
        .jobs
        .insert_completed_pointer("big", "s3://b/outputs/big.out");
    let pointer = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": "big"}))
        .await;
    assert_eq!(
        pointer["result_url"],
        "https://presigned.example/b/outputs/big.out"
    );
    assert!(pointer.get("result").is_none());
}

#[tokio::test]
async fn a_failed_job_reports_its_reason() {
    let w = world(&[]);
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap();
    w.notify(id, "Failed", None).await;
    let failed = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["failure_reason"],
        "ClientError: the model raised an error"
    );
}

#[tokio::test]
async fn an_unknown_id_or_a_bad_wait_is_a_tool_error_that_says_so() {
    let w = world(&[]);
    let message = w
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": "nope"}))
        .await;
    assert!(
        message.starts_with("no job with inference_id \"nope\""),
        "{message}"
    );
    let message = w
        .tool_error(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": "x", "wait_secs": 21}),
        )
        .await;
    // The test config's function timeout is the default 45 s.
    assert_eq!(
        message,
        "`wait_secs` is 21; without a progress token (`_meta.progressToken`) it must be from 0 to 20; with one, up to 35"
    );
    let message = w
        .tool_error(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/e", "wait_secs": 901}),
        )
        .await;
    assert_eq!(message, "`wait_secs` is 901; it must be from 0 to 900");
    let message = w
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": " "}))
        .await;
    assert!(message.contains("`inference_id`"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn wait_secs_returns_as_soon_as_the_outcome_is_recorded() {
    let w = Arc::new(world(&[]));
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap().to_owned();
    let (reads_before, _) = w.ports().jobs.calls();
    let notifier = {
        let (w, id) = (w.clone(), id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
            w.notify(&id, "Completed", Some(json!({"n": 1}))).await;
        })
    };
    let started = tokio::time::Instant::now();
    let done = w
        .ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 20}),
        )
        .await;
    notifier.await.unwrap();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"], json!({"n": 1}));
    // Reads after 0, 0.25, 0.75 and 1.75 s: the fourth sees the outcome recorded at 1.6 s.
    let (reads_after, _) = w.ports().jobs.calls();
    assert_eq!(reads_after - reads_before, 4);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
