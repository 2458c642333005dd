//! Submit_job.

use super::*;

#[tokio::test]
async fn submit_job_stores_the_job_before_it_invokes_and_answers_pending() {
    let w = world(&[]);
    let out = w.ok(names::SUBMIT_JOB, json!({"document": "hello"})).await;
    let id = out["inference_id"].as_str().unwrap();
    assert_eq!(out["status"], "pending");
    assert_eq!(out["output_location"], format!("s3://b/outputs/{id}.out"));
    assert_eq!(out["failure_location"], format!("s3://b/failures/{id}.out"));
    assert!(out.get("idempotent_replay").is_none());
    let job = w.ports().jobs.job(id).unwrap();
    assert_eq!(
        (job.status, job.stage),
        (JobStatus::Pending, Some(Stage::Invoked))
    );
    assert_eq!(
        job.output_location.as_deref(),
        out["output_location"].as_str()
    );
    // A small input goes inline: no S3 object, the body in the request.
    assert!(!w.ports().objects.has(&format!("s3://b/inputs/{id}.json")));
    let requests = w.ports().endpoint.requests();
    assert_eq!(requests.len(), 1);
    let ports::InvokeInput::Inline(body) = &requests[0].input else {
        panic!("{:?}", requests[0])
    };
    assert_eq!(
        serde_json::from_slice::<Value>(body).unwrap(),
        json!({"inputs": "hello"})
    );
}

#[tokio::test]
async fn the_same_idempotency_key_returns_the_first_job_and_never_invokes_twice() {
    let w = world(&[]);
    let args = json!({"document": "hello", "idempotency_key": "order-7"});
    let first = w.ok(names::SUBMIT_JOB, args.clone()).await;
    let again = w.ok(names::SUBMIT_JOB, args).await;
    let id = first["inference_id"].as_str().unwrap();
    assert_eq!(again["inference_id"], id);
    assert_eq!(again["output_location"], first["output_location"]);
    assert_eq!(again["submitted_at"], first["submitted_at"]);
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(w.ports().endpoint.calls(id), 1);
    let conflict = w
        .tool_error(
            names::SUBMIT_JOB,
            json!({"document": "other", "idempotency_key": "order-7"}),
        )
        .await;
    assert!(
        conflict.contains("already used with a different input"),
        "{conflict}"
    );
    assert_eq!(w.ports().endpoint.calls(id), 1);
}

#[tokio::test]
async fn bad_submit_arguments_are_tool_errors_and_touch_nothing() {
    let w = world(&[]);
    for (args, expected) in [
        (json!({}), "give one of `document`"),
        (
            json!({"document": "a", "request_ttl_secs": 59}),
            "`request_ttl_secs` is 59; it must be from 60 to 21600",
        ),
        (
            json!({"document": "a", "invocation_timeout_secs": 2000}),
            "at least twice",
        ),
        (
            json!({"document": "a", "endpoint": "other"}),
            "unknown argument \"endpoint\"",
        ),
    ] {
        let message = w.tool_error(names::SUBMIT_JOB, args.clone()).await;
        assert!(message.contains(expected), "{args}: {message}");
    }
    assert_eq!(w.ports().jobs.calls(), (0, 0));
}

#[tokio::test]
async fn a_refused_invoke_is_a_tool_error_and_the_job_is_failed() {
    let w = world(&[]);
    w.ports().endpoint.fail_next(InvokeFault::Refused);
    let args = json!({"document": "a", "idempotency_key": "k-refused"});
    let message = w.tool_error(names::SUBMIT_JOB, args).await;
    assert!(
        message.contains("was not submitted") && message.contains("ValidationError"),
        "{message}"
    );
    let owner = Principal::Local.caller().owner;
    let id = domain::job::inference_id_for_key(&owner, ENDPOINT, "k-refused");
    let job = w.ports().jobs.job(&id).unwrap();
    assert_eq!(
        (job.status, job.stage),
        (JobStatus::Failed, Some(Stage::Refused))
    );
}

#[tokio::test]
async fn an_ambiguous_invoke_answers_pending_and_says_the_outcome_is_unknown() {
    let w = world(&[]);
    w.ports().endpoint.fail_next(InvokeFault::Ambiguous);
    let out = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    assert_eq!(out["status"], "pending");
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("not known"), "{message}");
    let job = w
        .ports()
        .jobs
        .job(out["inference_id"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        (job.status, job.stage),
        (JobStatus::Pending, Some(Stage::Uncertain))
    );
}

#[tokio::test]
async fn with_inline_inputs_off_every_input_goes_through_s3() {
    let w = world(&[("INLINE_INPUT_MAX_BYTES", "0")]);
    let out = w.ok(names::SUBMIT_JOB, json!({"document": "hello"})).await;
    let id = out["inference_id"].as_str().unwrap();
    let location = format!("s3://b/inputs/{id}.json");
    assert!(w.ports().objects.has(&location));
    assert_eq!(
        w.ports().endpoint.requests()[0].input,
        ports::InvokeInput::S3(location)
    );
}
