//! Arguments as strings.

use super::*;

#[tokio::test]
async fn numbers_and_booleans_sent_as_strings_are_taken_for_their_values() {
    let w = world(&[]);
    let submitted = w
        .ok(
            names::SUBMIT_JOB,
            json!({"document": "a", "invocation_timeout_secs": "100"}),
        )
        .await;
    let id = submitted["inference_id"].as_str().unwrap();
    let status = w
        .ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": "0"}),
        )
        .await;
    assert_eq!(status["status"], "pending");
    assert_eq!(
        w.ports().jobs.job(id).unwrap().invocation_timeout_secs,
        Some(100)
    );
    w.ok(
        names::TRIGGER_TRAINING,
        json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_epochs": "15", "accuracy_threshold": "0.9"}),
    )
    .await;
    assert_eq!(
        w.ports().pipeline.started()[0].parameters,
        [
            ("InputDataUri".to_owned(), "s3://b/train/t".to_owned()),
            ("MaxEpochs".to_owned(), "15".to_owned()),
            ("AccuracyThreshold".to_owned(), "0.9".to_owned())
        ]
    );
    // The task form takes them the same way.
    let created = w
        .call_as_task(
            names::SUBMIT_JOB,
            json!({"document": "b", "request_ttl_secs": "900"}),
        )
        .await;
    assert_eq!(created["status"], "working", "{created}");
}

#[tokio::test]
async fn a_bad_string_is_refused_naming_the_argument_and_what_was_expected() {
    let w = world(&[]);
    for (tool, args, expected) in [
        (
            names::CHECK_JOB_STATUS,
            json!({"inference_id": "x", "wait_secs": "five"}),
            "`wait_secs` must be a whole number from 0 to 900; got \"five\"",
        ),
        (
            names::CHECK_JOB_STATUS,
            json!({"inference_id": "x", "wait_secs": "25"}),
            "`wait_secs` is 25; without a progress token (`_meta.progressToken`) it must be from 0 to 20; with one, up to 35",
        ),
        (
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "accuracy_threshold": "1e999"}),
            "`accuracy_threshold` must be a number from 0 to 1; got \"1e999\"",
        ),
        (
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_epochs": " 5"}),
            "`max_epochs` must be a whole number from 1 to 1000; got \" 5\"",
        ),
    ] {
        assert_eq!(w.tool_error(tool, args).await, expected);
    }
    assert!(w.ports().pipeline.started().is_empty());
    assert_eq!(w.ports().jobs.calls(), (0, 0));
}
