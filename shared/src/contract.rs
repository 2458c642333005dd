//! One behaviour per port, run against the in-memory fakes (unit tests) and against the real
//! adapters on the local AWS stack (`shared/tests/contract_on_moto.rs`), so a fake cannot drift
//! from what DynamoDB, S3 and SageMaker do: conditions, TTL as absence, stored states.
//!
//! Each suite takes a fresh port and ids no other test uses; a broken expectation panics
//! with what differed.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::domain::item::Applied;
use crate::domain::job::{self, JobPolicy, JobStatus, Locations, OutcomeRecord, Stage, Submission};
use crate::domain::pipeline_event::PipelineStatus;
use crate::domain::run::{self, RunRecord};
use crate::domain::s3_location::S3Location;
use crate::domain::time::{parse_rfc3339, rfc3339};
use crate::ports::*;

const POLICY: JobPolicy = JobPolicy {
    result_ttl_secs: 3600,
    submit_crash_after_secs: 60,
    lost_grace_secs: 120,
    reconcile_after_secs: 30,
};

fn now() -> DateTime<Utc> {
    // Real time: DynamoDB's own clock plays no part, but items must not be expired for real.
    Utc::now()
}

fn written(applied: Applied, what: &str) {
    assert!(
        matches!(applied, Applied::Written { .. }),
        "{what}: expected the write to happen, got {applied:?}"
    );
}

fn refused(applied: &Applied, what: &str) {
    assert!(
        matches!(applied, Applied::Refused(_)),
        "{what}: expected the guard to refuse, got {applied:?}"
    );
}

/// The results table: every transition's condition, terminal states, TTL as absence.
pub async fn job_store<S: JobStore>(store: &S) {
    let t0 = now();
    let key = uuid::Uuid::new_v4().to_string();
    let s = Submission::new(
        "ep",
        "bucket",
        br#"{"inputs":"x"}"#.to_vec(),
        Some(&key),
        300,
        600,
    );
    let id = &s.inference_id;
    assert_eq!(
        store.get(id, t0).await.unwrap(),
        None,
        "an unknown id is absent"
    );

    assert_eq!(
        store.write(&job::reserve(&s, &POLICY, t0)).await.unwrap(),
        Applied::Written { previous: None },
        "first reservation: a new item"
    );
    let again = store.write(&job::reserve(&s, &POLICY, t0)).await.unwrap();
    match &again {
        Applied::Refused(Some(item)) => {
            let stored = job::Job::from_item(item).unwrap();
            assert_eq!(
                stored.stage,
                Some(Stage::Reserved),
                "the refused write returns the stored item"
            );
        }
        other => {
            panic!("second reservation: expected a refusal with the stored item, got {other:?}")
        }
    }
    let reserved = store.get(id, t0).await.unwrap().expect("reserved job");
    assert_eq!(
        (reserved.status, reserved.stage, reserved.attempt),
        (JobStatus::Pending, Some(Stage::Reserved), 1)
    );
    assert_eq!(
        reserved.input_sha256.as_deref(),
        Some(s.input_sha256.as_str())
    );

    refused(
        &store
            .write(&job::mark_invoked(id, 2, &Locations::default(), 1))
            .await
            .unwrap(),
        "invoked by another attempt",
    );
    refused(
        &store
            .write(&job::redrive(&s, 1, &POLICY, t0))
            .await
            .unwrap(),
        "re-drive of a fresh reservation",
    );
    let later = t0 + Duration::seconds(61);
    match store
        .write(&job::redrive(&s, 1, &POLICY, later))
        .await
        .unwrap()
    {
        Applied::Written {
            previous: Some(item),
        } => assert_eq!(
            job::Job::from_item(&item).unwrap().stage,
            Some(Stage::Reserved),
            "re-drive of a crashed reservation: the write returns the item it replaced"
        ),
        other => panic!("re-drive of a crashed reservation: expected a write, got {other:?}"),
    }
    refused(
        &store
            .write(&job::redrive(&s, 1, &POLICY, later))
            .await
            .unwrap(),
        "a second re-drive of the same attempt",
    );

    let at = Locations {
        output_location: Some("s3://bucket/out/1.out".into()),
        failure_location: Some("s3://bucket/fail/1.out".into()),
    };
    written(
        store
            .write(&job::mark_uncertain(
                id,
                2,
                "InternalFailure",
                s.lost_after(later, &POLICY),
            ))
            .await
            .unwrap(),
        "uncertain",
    );
    refused(
        &store
            .write(&job::mark_invoked(id, 2, &at, 1))
            .await
            .unwrap(),
        "invoked after uncertain",
    );
    let uncertain = store.get(id, later).await.unwrap().unwrap();
    assert_eq!(
        (uncertain.status, uncertain.stage),
        (JobStatus::Pending, Some(Stage::Uncertain))
    );
    assert_eq!(uncertain.invoke_error.as_deref(), Some("InternalFailure"));

    let result = json!({"label": "invoice", "score": 0.93, "tags": ["a", "b"], "nested": {"n": 1, "none": null}});
    let outcome = OutcomeRecord {
        inference_id: id.clone(),
        status: JobStatus::Completed,
        completed_at: rfc3339(later),
        submitted_at: Some("1999-01-01T00:00:00.000Z".into()),
        endpoint_name: Some("other".into()),
        input_location: None,
        output_location: at.output_location.clone(),
        result: Some(result.clone()),
        failure_reason: None,
        failure_location: None,
        failure_excerpt: None,
        ttl: (later + Duration::hours(1)).timestamp(),
        reconciled_at: None,
    };
    written(
        store.write(&job::record_outcome(&outcome)).await.unwrap(),
        "outcome of an uncertain job",
    );
    let done = store.get(id, later).await.unwrap().unwrap();
    assert_eq!(done.status, JobStatus::Completed);
    assert_eq!(done.result, Some(result), "the inline result round-trips");
    assert_eq!(
        done.submitted_at,
        Some(rfc3339(later)),
        "submit-time fields are kept"
    );
    assert_eq!(done.endpoint_name.as_deref(), Some("ep"));
    let failed = OutcomeRecord {
        status: JobStatus::Failed,
        result: None,
        ..outcome.clone()
    };
    refused(
        &store.write(&job::record_outcome(&failed)).await.unwrap(),
        "an outcome over a terminal state",
    );
    refused(
        &store
            .write(&job::redrive(&s, 2, &POLICY, later + Duration::minutes(30)))
            .await
            .unwrap(),
        "re-drive of a completed job",
    );
    refused(
        &store
            .write(&job::mark_refused(id, 2, "x", &POLICY, later))
            .await
            .unwrap(),
        "refusal of a completed job",
    );

    // An outcome for a job submitted elsewhere creates the item.
    let elsewhere = OutcomeRecord {
        inference_id: format!("{id}-elsewhere"),
        ..failed
    };
    written(
        store.write(&job::record_outcome(&elsewhere)).await.unwrap(),
        "outcome without an item",
    );
    let item = store
        .get(&elsewhere.inference_id, later)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((item.status, item.stage), (JobStatus::Failed, None));

    // A refusal, then the key re-drives it.
    let key2 = uuid::Uuid::new_v4().to_string();
    let s2 = Submission::new("ep", "bucket", b"{}".to_vec(), Some(&key2), 300, 600);
    written(
        store.write(&job::reserve(&s2, &POLICY, t0)).await.unwrap(),
        "reservation",
    );
    written(
        store
            .write(&job::mark_refused(
                &s2.inference_id,
                1,
                "ValidationError",
                &POLICY,
                t0,
            ))
            .await
            .unwrap(),
        "refusal",
    );
    let refused_job = store.get(&s2.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(
        (refused_job.status, refused_job.stage),
        (JobStatus::Failed, Some(Stage::Refused))
    );
    written(
        store
            .write(&job::redrive(&s2, 1, &POLICY, t0))
            .await
            .unwrap(),
        "re-drive of a refused job",
    );

    // TTL: an expired item is absent to reads and to a new reservation.
    let key3 = uuid::Uuid::new_v4().to_string();
    let s3 = Submission::new("ep", "bucket", b"{}".to_vec(), Some(&key3), 300, 600);
    let past = t0 - Duration::days(3);
    written(
        store
            .write(&job::reserve(&s3, &POLICY, past))
            .await
            .unwrap(),
        "an old reservation",
    );
    assert_eq!(
        store.get(&s3.inference_id, t0).await.unwrap(),
        None,
        "an expired item reads as absent"
    );
    assert!(store.get(&s3.inference_id, past).await.unwrap().is_some());
    written(
        store.write(&job::reserve(&s3, &POLICY, t0)).await.unwrap(),
        "reservation over an expired item",
    );
}

/// The pipeline results table.
pub async fn run_store<S: RunStore>(store: &S) {
    let session = format!("s-{}", uuid::Uuid::new_v4().simple());
    let arn = |n: u32| format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}");
    let t = parse_rfc3339("2026-11-20T10:00:00Z").unwrap();
    written(
        store
            .write(&run::record_triggered(
                &session,
                &arn(1),
                &rfc3339(t),
                9_999_999_999,
                "secret",
            ))
            .await
            .unwrap(),
        "triggered",
    );
    refused(
        &store
            .write(&run::record_triggered(
                &session,
                &arn(1),
                &rfc3339(t),
                9_999_999_999,
                "secret",
            ))
            .await
            .unwrap(),
        "triggered twice",
    );
    let record = |n, status| RunRecord {
        session_id: session.clone(),
        execution_arn: arn(n),
        pipeline_arn: "arn:p".into(),
        status,
        started_at: Some(rfc3339(t)),
        ended_at: None,
        failure_reason: None,
        updated_at: rfc3339(t),
        ttl: 9_999_999_999,
    };
    written(
        store
            .write(&run::record_status_change(&record(
                1,
                PipelineStatus::Executing,
            )))
            .await
            .unwrap(),
        "Executing over pending",
    );
    written(
        store
            .write(&run::record_status_change(&record(
                1,
                PipelineStatus::Failed,
            )))
            .await
            .unwrap(),
        "Failed",
    );
    match store
        .write(&run::record_status_change(&record(
            1,
            PipelineStatus::Executing,
        )))
        .await
        .unwrap()
    {
        Applied::Refused(Some(item)) => assert_eq!(run::Run::from_item(&item).status, "Failed"),
        other => panic!("a late Executing: expected a refusal with the stored item, got {other:?}"),
    }
    written(
        store
            .write(&run::record_status_change(&record(
                2,
                PipelineStatus::Succeeded,
            )))
            .await
            .unwrap(),
        "a run first heard of at its end",
    );
    refused(
        &store
            .write(&run::record_triggered(
                &session,
                &arn(2),
                &rfc3339(t),
                1,
                "secret",
            ))
            .await
            .unwrap(),
        "triggered after the router recorded it",
    );
    let mut runs = store.query_session(&session).await.unwrap();
    runs.sort_by(|a, b| a.execution_arn.cmp(&b.execution_arn));
    let statuses: Vec<_> = runs
        .iter()
        .map(|r| (r.execution_arn.clone(), r.status.clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            (arn(1), "Failed".to_owned()),
            (arn(2), "Succeeded".to_owned())
        ]
    );
    assert!(store
        .query_session("no-such-session")
        .await
        .unwrap()
        .is_empty());
}

/// Objects: bounded reads, absence, empty objects.
pub async fn object_store<O: ObjectStore>(objects: &O, bucket: &str) {
    let at = |name: &str| S3Location {
        bucket: bucket.to_owned(),
        key: format!("contract/{}/{name}", uuid::Uuid::new_v4()),
    };
    let body = at("body.json");
    objects
        .put_json(&body, b"0123456789".to_vec())
        .await
        .unwrap();
    let whole = objects.read_prefix(&body, 100).await.unwrap();
    assert_eq!(
        (whole.bytes.as_slice(), whole.total_len),
        (&b"0123456789"[..], 10)
    );
    let cut = objects.read_prefix(&body, 3).await.unwrap();
    assert_eq!(
        (cut.bytes.as_slice(), cut.total_len),
        (&b"0123"[..], 10),
        "max + 1 bytes and the full length"
    );
    let missing = at("missing");
    assert!(
        matches!(
            objects.read_prefix(&missing, 10).await,
            Err(ObjectError::NotFound { .. })
        ),
        "a missing object is NotFound"
    );
    let empty = at("empty");
    objects.put_json(&empty, Vec::new()).await.unwrap();
    let read = objects.read_prefix(&empty, 10).await.unwrap();
    assert_eq!((read.bytes.len(), read.total_len), (0, 0));
    let url = objects
        .presign_get(&body, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    assert!(url.starts_with("http") && url.contains(&body.key), "{url}");
}

/// Pipeline runs: a token starts at most one run; unknown runs are refused, not retried.
pub async fn pipeline_control<P: PipelineControl>(pipeline: &P) {
    let token =
        crate::domain::run::client_request_token("p", "s", &uuid::Uuid::new_v4().to_string());
    let request = StartRequest {
        description: "session_id=contract; triggered at 2026-11-20T10:00:00.000Z".into(),
        parameters: vec![("InputDataUri".into(), "s3://bucket/train/".into())],
        client_request_token: token,
        max_parallel_steps: None,
    };
    let first = pipeline.start(&request).await.unwrap();
    let again = pipeline.start(&request).await.unwrap();
    assert_eq!(
        first, again,
        "the same ClientRequestToken returns the same run"
    );
    let other = pipeline
        .start(&StartRequest {
            client_request_token: uuid::Uuid::new_v4().simple().to_string(),
            ..request
        })
        .await
        .unwrap();
    assert_ne!(other, first);
    // Stopped at once, while it certainly still runs.
    pipeline.stop(&other).await.unwrap();
    pipeline.describe(&first).await.unwrap();
    pipeline.steps(&first).await.unwrap();
    let stopping = pipeline.describe(&other).await.unwrap().status;
    assert!(
        ["Stopping", "Stopped"].contains(&stopping.as_str()),
        "a stopped run is Stopping or Stopped, not {stopping}"
    );
    let unknown = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/doesnotexist";
    let failure = pipeline.describe(unknown).await.unwrap_err();
    assert!(!failure.retryable && !failure.ambiguous, "{failure}");
}

#[cfg(test)]
mod tests {
    use crate::fakes::*;

    #[tokio::test]
    async fn the_memory_job_store_keeps_the_contract() {
        super::job_store(&MemoryJobs::default()).await;
    }

    #[tokio::test]
    async fn the_memory_run_store_keeps_the_contract() {
        super::run_store(&MemoryRuns::default()).await;
    }

    #[tokio::test]
    async fn the_memory_object_store_keeps_the_contract() {
        super::object_store(&MemoryObjects::default(), "bucket").await;
    }

    #[tokio::test]
    async fn the_fake_pipeline_keeps_the_contract() {
        super::pipeline_control(&FakePipeline::default()).await;
    }
}
