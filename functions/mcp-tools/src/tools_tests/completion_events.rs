//! Completion events.

use super::*;

#[tokio::test(start_paused = true)]
async fn an_outcome_a_status_check_finds_in_s3_is_announced_like_a_notifications() {
    let w = world(&[("RECONCILE_AFTER_SECS", "2")]);
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap().to_owned();
    let output = submitted["output_location"].as_str().unwrap();
    w.ports()
        .objects
        .put_json(&output.parse().unwrap(), br#"{"label":"ok"}"#.to_vec())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let done = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(done["status"], "completed");
    let put = w.ports().events.put();
    assert_eq!(put.len(), 1, "{put:?}");
    assert_eq!(
        (
            put[0].inference_id.as_str(),
            put[0].status,
            put[0].reconciled
        ),
        (id.as_str(), "completed", true)
    );
    assert_eq!(put[0].output_location.as_deref(), Some(output));
    assert_eq!(
        put[0].owner.as_deref(),
        Some(Principal::Local.caller().owner.as_str())
    );
    // Read again: nothing new is recorded, nothing announced.
    w.ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(w.ports().events.put().len(), 1);
}
