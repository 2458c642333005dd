//! The results table: every transition's condition, terminal states, TTL as absence.

use chrono::Duration;
use serde_json::json;

use super::{now, refused, written};
use domain::ids::InferenceId;
use domain::item::Applied;
use domain::job::Submission;
use domain::job::{self, attr, Job, JobPolicy, JobStatus, Locations, OutcomeRecord, Stage};
use domain::time::rfc3339;
use domain::trace::TraceContext;
use ports::JobStore;

const POLICY: JobPolicy = JobPolicy {
    result_ttl_secs: 3600,
    submit_crash_after_secs: 60,
    lost_grace_secs: 120,
    reconcile_after_secs: 30,
};

/// A submission under a key no other test uses.
fn fresh() -> Submission {
    let key = uuid::Uuid::new_v4().to_string();
    Submission::new(
        &domain::caller::Principal::Local.caller().owner,
        "ep",
        "bucket",
        br#"{"inputs":"x"}"#.to_vec(),
        Some(&key),
        300,
        600,
    )
}

async fn reserved<S: JobStore>(store: &S, s: &Submission, at: chrono::DateTime<chrono::Utc>) {
    written(
        store.write(&job::reserve(s, &POLICY, at)).await.unwrap(),
        "reservation",
    );
}

fn outcome(
    inference_id: &str,
    status: JobStatus,
    at: chrono::DateTime<chrono::Utc>,
) -> OutcomeRecord {
    OutcomeRecord {
        inference_id: InferenceId::parse(inference_id).expect("an inference id"),
        status,
        completed_at: rfc3339(at),
        submitted_at: Some("1999-01-01T00:00:00.000Z".into()),
        endpoint_name: Some("other".into()),
        input_location: None,
        output_location: Some("s3://bucket/out/1.out".into()),
        result: None,
        failure_reason: None,
        failure_location: None,
        failure_excerpt: None,
        ttl: (at + Duration::hours(1)).timestamp(),
        reconciled_at: None,
    }
}

pub async fn an_unknown_id_is_absent<S: JobStore>(store: &S) {
    assert_eq!(store.get(&fresh().inference_id, now()).await.unwrap(), None);
}

pub async fn the_first_reservation_is_a_new_item<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    assert_eq!(
        store.write(&job::reserve(&s, &POLICY, t0)).await.unwrap(),
        Applied::Written { previous: None },
    );
    let stored = store
        .get(&s.inference_id, t0)
        .await
        .unwrap()
        .expect("reserved job");
    assert_eq!(
        (stored.status, stored.stage, stored.attempt),
        (JobStatus::Pending, Some(Stage::Reserved), 1)
    );
    assert_eq!(
        stored.input_sha256.as_deref(),
        Some(s.input_sha256.as_str())
    );
    assert_eq!(stored.task_secret.as_deref(), Some(s.task_secret.as_str()));
    assert_eq!(stored.submitted_at, Some(rfc3339(t0)));
}

pub async fn a_second_reservation_is_refused_with_the_stored_item<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
    match store.write(&job::reserve(&s, &POLICY, t0)).await.unwrap() {
        Applied::Refused(Some(item)) => {
            let stored = Job::from_item(&item).unwrap();
            assert_eq!(
                (stored.inference_id.as_str(), stored.stage),
                (s.inference_id.as_str(), Some(Stage::Reserved))
            );
        }
        other => panic!("expected a refusal with the stored item, got {other:?}"),
    }
}

pub async fn only_the_reserving_attempt_marks_it_invoked<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
    let at = Locations {
        output_location: Some("s3://bucket/out/1.out".into()),
        failure_location: Some("s3://bucket/fail/1.out".into()),
    };
    refused(
        &store
            .write(&job::mark_invoked(&s.inference_id, 2, &at, 1))
            .await
            .unwrap(),
        "invoked by another attempt",
    );
    written(
        store
            .write(&job::mark_invoked(&s.inference_id, 1, &at, 1))
            .await
            .unwrap(),
        "invoked by the reserving attempt",
    );
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(stored.stage, Some(Stage::Invoked));
    assert_eq!(stored.output_location, at.output_location);
    assert_eq!(stored.failure_location, at.failure_location);
}

pub async fn a_crashed_reservation_is_redriven_once<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
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
            Job::from_item(&item).unwrap().attempt,
            1,
            "the write returns the item it replaced"
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
    let stored = store.get(&s.inference_id, later).await.unwrap().unwrap();
    assert_eq!((stored.attempt, stored.stage), (2, Some(Stage::Reserved)));
}

pub async fn an_uncertain_job_is_not_marked_invoked_after<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
    written(
        store
            .write(&job::mark_uncertain(
                &s.inference_id,
                1,
                "InternalFailure",
                s.lost_after(t0, &POLICY),
            ))
            .await
            .unwrap(),
        "uncertain",
    );
    refused(
        &store
            .write(&job::mark_invoked(
                &s.inference_id,
                1,
                &Locations::default(),
                1,
            ))
            .await
            .unwrap(),
        "invoked after uncertain",
    );
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.stage),
        (JobStatus::Pending, Some(Stage::Uncertain))
    );
    assert_eq!(stored.invoke_error.as_deref(), Some("InternalFailure"));
}

pub async fn an_outcome_completes_a_pending_job_and_keeps_its_submit_fields<S: JobStore>(
    store: &S,
) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
    let result = json!({"label": "invoice", "score": 0.93, "tags": ["a", "b"], "nested": {"n": 1, "none": null}});
    let done = OutcomeRecord {
        result: Some(result.clone()),
        ..outcome(s.inference_id.as_str(), JobStatus::Completed, t0)
    };
    written(
        store.write(&job::record_outcome(&done)).await.unwrap(),
        "outcome",
    );
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(stored.status, JobStatus::Completed);
    assert_eq!(stored.result, Some(result), "the inline result round-trips");
    assert_eq!(
        stored.submitted_at,
        Some(rfc3339(t0)),
        "submit-time fields are kept"
    );
    assert_eq!(stored.endpoint_name.as_deref(), Some("ep"));
    assert_eq!(stored.output_location, done.output_location);
}

pub async fn a_reservation_stores_the_submitting_calls_trace<S: JobStore>(store: &S) {
    let t0 = now();
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let trace = TraceContext::parse(Some(traceparent), Some("rojo=00f067aa0ba902b7")).unwrap();
    let s = fresh().with_trace(trace.clone());
    reserved(store, &s, t0).await;
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(
        stored.trace,
        Some(trace.clone()),
        "traceparent and tracestate"
    );
    let done = outcome(s.inference_id.as_str(), JobStatus::Completed, t0);
    match store.write(&job::record_outcome(&done)).await.unwrap() {
        Applied::Written {
            previous: Some(item),
        } => {
            assert_eq!(item[attr::TRACEPARENT].as_s(), Some(traceparent));
            assert_eq!(item[attr::TRACESTATE].as_s(), Some("rojo=00f067aa0ba902b7"));
        }
        other => panic!("an outcome: expected the stored item back, got {other:?}"),
    }
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(stored.trace, Some(trace), "kept through the outcome");
    // A submission without one stores neither attribute.
    let plain = fresh();
    reserved(store, &plain, t0).await;
    assert_eq!(
        store
            .get(&plain.inference_id, t0)
            .await
            .unwrap()
            .unwrap()
            .trace,
        None
    );
}

pub async fn a_terminal_job_refuses_outcomes_redrives_and_refusals<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
    let done = outcome(s.inference_id.as_str(), JobStatus::Completed, t0);
    written(
        store.write(&job::record_outcome(&done)).await.unwrap(),
        "outcome",
    );
    let failed = outcome(s.inference_id.as_str(), JobStatus::Failed, t0);
    refused(
        &store.write(&job::record_outcome(&failed)).await.unwrap(),
        "a second outcome",
    );
    // Past the crash window, before the outcome expires.
    let later = t0 + Duration::minutes(30);
    refused(
        &store
            .write(&job::redrive(&s, 1, &POLICY, later))
            .await
            .unwrap(),
        "re-drive",
    );
    refused(
        &store
            .write(&job::mark_refused(&s.inference_id, 1, "x", &POLICY, t0))
            .await
            .unwrap(),
        "refusal",
    );
    refused(
        &store
            .write(&job::cancel(&s.inference_id, 3600, t0))
            .await
            .unwrap(),
        "cancel",
    );
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.attempt), (JobStatus::Completed, 1));
}

pub async fn an_outcome_without_an_item_creates_it<S: JobStore>(store: &S) {
    let (id, t0) = (fresh().inference_id, now());
    written(
        store
            .write(&job::record_outcome(&outcome(
                id.as_str(),
                JobStatus::Failed,
                t0,
            )))
            .await
            .unwrap(),
        "outcome without an item",
    );
    let stored = store.get(&id, t0).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.stage), (JobStatus::Failed, None));
    assert_eq!(
        stored.submitted_at.as_deref(),
        Some("1999-01-01T00:00:00.000Z")
    );
}

pub async fn a_refused_job_is_redriven_by_its_key<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
    written(
        store
            .write(&job::mark_refused(
                &s.inference_id,
                1,
                "ValidationError",
                &POLICY,
                t0,
            ))
            .await
            .unwrap(),
        "refusal",
    );
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.stage),
        (JobStatus::Failed, Some(Stage::Refused))
    );
    assert_eq!(stored.failure_reason.as_deref(), Some("ValidationError"));
    written(
        store
            .write(&job::redrive(&s, 1, &POLICY, t0))
            .await
            .unwrap(),
        "re-drive",
    );
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.attempt), (JobStatus::Pending, 2));
}

pub async fn a_pending_job_is_cancelled_once<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    reserved(store, &s, t0).await;
    written(
        store
            .write(&job::cancel(&s.inference_id, 3600, t0))
            .await
            .unwrap(),
        "cancel",
    );
    let cancelled = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    refused(
        &store
            .write(&job::cancel(&s.inference_id, 60, t0))
            .await
            .unwrap(),
        "cancel again",
    );
    let done = outcome(s.inference_id.as_str(), JobStatus::Completed, t0);
    refused(
        &store.write(&job::record_outcome(&done)).await.unwrap(),
        "a late outcome",
    );
    assert_eq!(
        store.get(&s.inference_id, t0).await.unwrap().unwrap(),
        cancelled
    );
}

pub async fn an_expired_item_is_absent_to_reads_and_to_a_reservation<S: JobStore>(store: &S) {
    let (s, t0) = (fresh(), now());
    let past = t0 - Duration::days(3);
    reserved(store, &s, past).await;
    assert_eq!(store.get(&s.inference_id, t0).await.unwrap(), None);
    assert!(store.get(&s.inference_id, past).await.unwrap().is_some());
    reserved(store, &s, t0).await;
    let stored = store.get(&s.inference_id, t0).await.unwrap().unwrap();
    assert_eq!(stored.submitted_at, Some(rfc3339(t0)));
}

pub async fn a_batch_read_answers_each_id_in_order_absent_and_expired_as_none<S: JobStore>(
    store: &S,
) {
    let (a, b, old, t0) = (fresh(), fresh(), fresh(), now());
    reserved(store, &a, t0).await;
    reserved(store, &b, t0).await;
    reserved(store, &old, t0 - Duration::days(3)).await;
    let ids: Vec<String> = [
        b.inference_id.as_str(),
        "never-submitted",
        old.inference_id.as_str(),
        a.inference_id.as_str(),
    ]
    .map(String::from)
    .into();
    let read = store.get_many(&ids, t0).await.unwrap();
    let found: Vec<Option<&str>> = read
        .iter()
        .map(|j| j.as_ref().map(|j| j.inference_id.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            Some(b.inference_id.as_str()),
            None,
            None,
            Some(a.inference_id.as_str())
        ]
    );
    assert_eq!(read[3], store.get(&a.inference_id, t0).await.unwrap());
    let many: Vec<String> = (0..ports::MAX_BATCH_READ)
        .map(|i| format!("none-{i}"))
        .collect();
    assert!(store
        .get_many(&many, t0)
        .await
        .unwrap()
        .iter()
        .all(Option::is_none));
    assert!(store.get_many(&[], t0).await.unwrap().is_empty());
}

pub async fn values_the_table_cannot_hold_are_not_inline<S: JobStore>(store: &S) {
    assert!(store.fits_inline(&json!({"label": "ok", "score": 0.5}), 1024));
    assert!(!store.fits_inline(&json!({"x": 1e300}), 1024));
    assert!(!store.fits_inline(&json!({"": 1}), 1024));
    assert!(!store.fits_inline(&json!({"text": "x".repeat(2000)}), 1024));
}

/// One `#[tokio::test]` per results-table behaviour, on the `JobStore` `$make.await` gives.
#[macro_export]
macro_rules! job_store_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            job_store,
            $make,
            [
                an_unknown_id_is_absent,
                the_first_reservation_is_a_new_item,
                a_second_reservation_is_refused_with_the_stored_item,
                only_the_reserving_attempt_marks_it_invoked,
                a_crashed_reservation_is_redriven_once,
                an_uncertain_job_is_not_marked_invoked_after,
                an_outcome_completes_a_pending_job_and_keeps_its_submit_fields,
                a_reservation_stores_the_submitting_calls_trace,
                a_terminal_job_refuses_outcomes_redrives_and_refusals,
                an_outcome_without_an_item_creates_it,
                a_refused_job_is_redriven_by_its_key,
                a_pending_job_is_cancelled_once,
                an_expired_item_is_absent_to_reads_and_to_a_reservation,
                values_the_table_cannot_hold_are_not_inline,
                a_batch_read_answers_each_id_in_order_absent_and_expired_as_none,
            ]
        );
    };
}
