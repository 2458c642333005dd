//! One behaviour per port, each a function run against the in-memory fakes (the unit tests
//! below) and against the real adapters on the local AWS stack (`shared/tests/contract_on_moto.rs`),
//! so a fake cannot drift from what DynamoDB, S3, SQS and SageMaker do: conditions, TTL as
//! absence, stored states.
//!
//! Each suite module lists its behaviours once in a macro (`job_store_contract!` and the
//! others) that declares one `#[tokio::test]` per behaviour, each on a fresh port from the
//! expression it is given. A behaviour uses ids no other test uses; a broken expectation panics
//! with what differed.

use chrono::{DateTime, Utc};

use crate::domain::item::Applied;

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

/// Declares one `#[tokio::test]` per behaviour of `$suite`, each on the port `$make.await` gives.
#[doc(hidden)]
#[macro_export]
macro_rules! __port_contract_tests {
    ($suite:ident, $make:expr, [$($behaviour:ident),* $(,)?]) => {
        $(
            #[tokio::test]
            async fn $behaviour() {
                let port = $make.await;
                $crate::port_contract::$suite::$behaviour(&port).await;
            }
        )*
    };
}

// ------------------------------------------------------------------------------ results table

pub mod job_store {
    //! The results table: every transition's condition, terminal states, TTL as absence.

    use chrono::Duration;
    use serde_json::json;

    use super::{now, refused, written};
    use crate::domain::item::Applied;
    use crate::domain::job::Submission;
    use crate::domain::job::{self, Job, JobPolicy, JobStatus, Locations, OutcomeRecord, Stage};
    use crate::domain::time::rfc3339;
    use crate::ports::JobStore;

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
            &crate::domain::caller::Principal::Local.caller().owner,
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
            inference_id: inference_id.to_owned(),
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
            ..outcome(&s.inference_id, JobStatus::Completed, t0)
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

    pub async fn a_terminal_job_refuses_outcomes_redrives_and_refusals<S: JobStore>(store: &S) {
        let (s, t0) = (fresh(), now());
        reserved(store, &s, t0).await;
        let done = outcome(&s.inference_id, JobStatus::Completed, t0);
        written(
            store.write(&job::record_outcome(&done)).await.unwrap(),
            "outcome",
        );
        let failed = outcome(&s.inference_id, JobStatus::Failed, t0);
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
                .write(&job::record_outcome(&outcome(&id, JobStatus::Failed, t0)))
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
        let done = outcome(&s.inference_id, JobStatus::Completed, t0);
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

    pub async fn values_the_table_cannot_hold_are_not_inline<S: JobStore>(store: &S) {
        assert!(store.fits_inline(&json!({"label": "ok", "score": 0.5}), 1024));
        assert!(!store.fits_inline(&json!({"x": 1e300}), 1024));
        assert!(!store.fits_inline(&json!({"": 1}), 1024));
        assert!(!store.fits_inline(&json!({"text": "x".repeat(2000)}), 1024));
    }
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
                a_terminal_job_refuses_outcomes_redrives_and_refusals,
                an_outcome_without_an_item_creates_it,
                a_refused_job_is_redriven_by_its_key,
                a_pending_job_is_cancelled_once,
                an_expired_item_is_absent_to_reads_and_to_a_reservation,
                values_the_table_cannot_hold_are_not_inline,
            ]
        );
    };
}

// ------------------------------------------------------------------------------ pipeline results table

pub mod run_store {
    //! The pipeline results table: a trigger writes once, a terminal status is kept.

    use crate::domain::caller::{Owner, Principal};
    use crate::domain::item::Applied;
    use crate::domain::pipeline_status::{PipelineStatus, RunStatus};
    use crate::domain::run::{self, session_key, Run, RunRecord};
    use crate::domain::time::{parse_rfc3339, rfc3339};
    use crate::ports::RunStore;

    use super::{refused, written};

    fn session() -> String {
        format!("s-{}", uuid::Uuid::new_v4().simple())
    }

    /// The caller the runs belong to, and where its session is stored.
    fn owner() -> Owner {
        Principal::Local.caller().owner
    }

    fn key(session: &str) -> String {
        session_key(Some(&owner()), session)
    }

    fn arn(n: u32) -> String {
        format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}")
    }

    fn started() -> String {
        rfc3339(parse_rfc3339("2026-11-20T10:00:00Z").unwrap())
    }

    fn record(session: &str, n: u32, status: PipelineStatus) -> RunRecord {
        RunRecord {
            session_id: session.to_owned(),
            owner: Some(owner()),
            execution_arn: arn(n),
            pipeline_arn: "arn:p".into(),
            status,
            started_at: Some(started()),
            ended_at: None,
            failure_reason: None,
            updated_at: started(),
            ttl: 9_999_999_999,
        }
    }

    async fn change<S: RunStore>(
        store: &S,
        session: &str,
        n: u32,
        status: PipelineStatus,
    ) -> Applied {
        store
            .write(&run::record_status_change(&record(session, n, status)))
            .await
            .unwrap()
    }

    async fn stored<S: RunStore>(store: &S, session: &str, n: u32) -> Run {
        let runs = store.query_session(&key(session)).await.unwrap();
        let run = runs
            .into_iter()
            .find(|r| r.execution_arn == arn(n))
            .expect("the run is stored");
        assert_eq!(
            run.session_id, session,
            "the session, without the owner tag"
        );
        assert_eq!(run.owner.as_deref(), Some(owner().as_str()));
        run
    }

    pub async fn a_trigger_is_written_once<S: RunStore>(store: &S) {
        let s = session();
        let trigger =
            run::record_triggered(&owner(), &s, &arn(1), &started(), 9_999_999_999, "secret");
        written(store.write(&trigger).await.unwrap(), "triggered");
        refused(&store.write(&trigger).await.unwrap(), "triggered twice");
        let run = stored(store, &s, 1).await;
        assert_eq!(run.status, RunStatus::Pending);
        assert_eq!(run.started_at, Some(started()));
        assert_eq!(run.task_secret.as_deref(), Some("secret"));
    }

    pub async fn a_terminal_status_is_kept_against_a_late_executing<S: RunStore>(store: &S) {
        let s = session();
        written(
            change(store, &s, 1, PipelineStatus::Executing).await,
            "Executing",
        );
        written(change(store, &s, 1, PipelineStatus::Failed).await, "Failed");
        match change(store, &s, 1, PipelineStatus::Executing).await {
            Applied::Refused(Some(item)) => {
                assert_eq!(Run::from_item(&item).status, PipelineStatus::Failed.into())
            }
            other => {
                panic!("a late Executing: expected a refusal with the stored item, got {other:?}")
            }
        }
        assert_eq!(
            stored(store, &s, 1).await.status,
            PipelineStatus::Failed.into()
        );
    }

    pub async fn a_run_heard_of_at_its_end_refuses_a_later_trigger<S: RunStore>(store: &S) {
        let s = session();
        written(
            change(store, &s, 2, PipelineStatus::Succeeded).await,
            "first heard of at its end",
        );
        refused(
            &store
                .write(&run::record_triggered(
                    &owner(),
                    &s,
                    &arn(2),
                    &started(),
                    1,
                    "secret",
                ))
                .await
                .unwrap(),
            "triggered after the router recorded it",
        );
        written(
            store
                .write(&run::attach_task_secret(&owner(), &s, &arn(2), "secret"))
                .await
                .unwrap(),
            "the secret attached",
        );
        written(
            store
                .write(&run::attach_task_secret(&owner(), &s, &arn(2), "other"))
                .await
                .unwrap(),
            "a second secret (kept out by if_not_exists)",
        );
        let run = stored(store, &s, 2).await;
        assert_eq!(run.status, PipelineStatus::Succeeded.into());
        assert_eq!(
            run.task_secret.as_deref(),
            Some("secret"),
            "the first secret is kept"
        );
    }

    pub async fn a_session_query_returns_its_runs_only<S: RunStore>(store: &S) {
        let (s, other) = (session(), session());
        written(change(store, &s, 1, PipelineStatus::Failed).await, "run 1");
        written(
            change(store, &s, 2, PipelineStatus::Succeeded).await,
            "run 2",
        );
        written(
            change(store, &other, 3, PipelineStatus::Executing).await,
            "another session's",
        );
        let mut runs = store.query_session(&key(&s)).await.unwrap();
        runs.sort_by(|a, b| a.execution_arn.cmp(&b.execution_arn));
        let statuses: Vec<_> = runs
            .iter()
            .map(|r| (r.execution_arn.clone(), r.status.clone()))
            .collect();
        assert_eq!(
            statuses,
            [
                (arn(1), PipelineStatus::Failed.into()),
                (arn(2), PipelineStatus::Succeeded.into())
            ]
        );
        assert!(store
            .query_session(&key(&session()))
            .await
            .unwrap()
            .is_empty());
        assert!(
            store.query_session(&s).await.unwrap().is_empty(),
            "an owner's runs are not under the bare session id"
        );
    }
}

/// One `#[tokio::test]` per pipeline-results-table behaviour, on the `RunStore` `$make.await` gives.
#[macro_export]
macro_rules! run_store_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            run_store,
            $make,
            [
                a_trigger_is_written_once,
                a_terminal_status_is_kept_against_a_late_executing,
                a_run_heard_of_at_its_end_refuses_a_later_trigger,
                a_session_query_returns_its_runs_only,
            ]
        );
    };
}

// ------------------------------------------------------------------------------ objects

pub mod object_store {
    //! Objects: bounded reads, absence, empty objects, presigned URLs.

    use crate::domain::s3_location::S3Location;
    use crate::ports::{ObjectError, ObjectStore};

    /// An object store and the bucket the behaviours may write to.
    pub struct Objects<O> {
        pub objects: O,
        pub bucket: String,
    }

    impl<O> Objects<O> {
        fn at(&self, name: &str) -> S3Location {
            S3Location {
                bucket: self.bucket.clone(),
                key: format!("contract/{}/{name}", uuid::Uuid::new_v4()),
            }
        }
    }

    pub async fn an_object_is_read_back_whole<O: ObjectStore>(o: &Objects<O>) {
        let body = o.at("body.json");
        o.objects
            .put_json(&body, b"0123456789".to_vec())
            .await
            .unwrap();
        let whole = o.objects.read_prefix(&body, 100).await.unwrap();
        assert_eq!(
            (whole.bytes.as_slice(), whole.total_len),
            (&b"0123456789"[..], 10)
        );
        let exact = o.objects.read_prefix(&body, 10).await.unwrap();
        assert_eq!(exact.bytes.len(), 10, "max = the length reads it all");
    }

    pub async fn a_bounded_read_gives_max_plus_one_bytes_and_the_length<O: ObjectStore>(
        o: &Objects<O>,
    ) {
        let body = o.at("body.json");
        o.objects
            .put_json(&body, b"0123456789".to_vec())
            .await
            .unwrap();
        let cut = o.objects.read_prefix(&body, 3).await.unwrap();
        assert_eq!((cut.bytes.as_slice(), cut.total_len), (&b"0123"[..], 10));
    }

    pub async fn a_missing_object_is_not_found<O: ObjectStore>(o: &Objects<O>) {
        let missing = o.at("missing");
        match o.objects.read_prefix(&missing, 10).await {
            Err(ObjectError::NotFound { location }) => assert_eq!(location, missing),
            other => panic!("expected NotFound, got {other:?}"),
        }
    }

    pub async fn an_empty_object_reads_as_empty<O: ObjectStore>(o: &Objects<O>) {
        let empty = o.at("empty");
        o.objects.put_json(&empty, Vec::new()).await.unwrap();
        let read = o.objects.read_prefix(&empty, 10).await.unwrap();
        assert_eq!((read.bytes.len(), read.total_len), (0, 0));
    }

    pub async fn a_presigned_url_names_the_object<O: ObjectStore>(o: &Objects<O>) {
        let body = o.at("body.json");
        o.objects.put_json(&body, b"{}".to_vec()).await.unwrap();
        let url = o
            .objects
            .presign_get(&body, std::time::Duration::from_secs(60))
            .await
            .unwrap();
        assert!(url.starts_with("http") && url.contains(&body.key), "{url}");
        assert!(url.contains(&body.bucket), "{url}");
    }
}

/// One `#[tokio::test]` per object-store behaviour, on the [`object_store::Objects`] `$make.await` gives.
#[macro_export]
macro_rules! object_store_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            object_store,
            $make,
            [
                an_object_is_read_back_whole,
                a_bounded_read_gives_max_plus_one_bytes_and_the_length,
                a_missing_object_is_not_found,
                an_empty_object_reads_as_empty,
                a_presigned_url_names_the_object,
            ]
        );
    };
}

// ------------------------------------------------------------------------------ async endpoint

pub mod async_invoker {
    //! The async endpoint: an accepted request answers where its outcome will be written.

    use crate::domain::s3_location::S3Location;
    use crate::ports::{AsyncInvoker, InvokeRequest};

    /// An invoker, the endpoint it was configured with, and an input it may name.
    pub struct Endpoint<I> {
        pub invoker: I,
        pub endpoint_name: String,
        pub input_location: String,
    }

    fn request<I>(e: &Endpoint<I>) -> InvokeRequest {
        InvokeRequest {
            inference_id: uuid::Uuid::new_v4().to_string(),
            input_location: e.input_location.clone(),
            invocation_timeout_secs: 300,
            request_ttl_secs: 600,
        }
    }

    pub async fn it_names_the_configured_endpoint<I: AsyncInvoker>(e: &Endpoint<I>) {
        assert_eq!(e.invoker.endpoint_name(), e.endpoint_name);
    }

    pub async fn an_accepted_request_answers_both_locations_in_s3<I: AsyncInvoker>(
        e: &Endpoint<I>,
    ) {
        let at = e.invoker.invoke(&request(e)).await.unwrap();
        for location in [&at.output_location, &at.failure_location] {
            let location = location.as_deref().expect("both locations are answered");
            location
                .parse::<S3Location>()
                .unwrap_or_else(|err| panic!("{err}"));
        }
        assert_ne!(at.output_location, at.failure_location);
    }

    pub async fn each_request_gets_its_own_output_location<I: AsyncInvoker>(e: &Endpoint<I>) {
        let first = e.invoker.invoke(&request(e)).await.unwrap();
        let second = e.invoker.invoke(&request(e)).await.unwrap();
        assert_ne!(first.output_location, second.output_location);
    }
}

/// One `#[tokio::test]` per async-endpoint behaviour, on the [`async_invoker::Endpoint`] `$make.await` gives.
#[macro_export]
macro_rules! async_invoker_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            async_invoker,
            $make,
            [
                it_names_the_configured_endpoint,
                an_accepted_request_answers_both_locations_in_s3,
                each_request_gets_its_own_output_location,
            ]
        );
    };
}

// ------------------------------------------------------------------------------ pipeline runs

pub mod pipeline_control {
    //! Pipeline runs: a token starts at most one run; unknown runs are refused, not retried.

    use crate::domain::caller::Principal;
    use crate::domain::pipeline_status::{ExecutionStatus, PipelineStatus};
    use crate::domain::run::client_request_token;
    use crate::ports::{PipelineControl, StartRequest};

    fn start_request() -> StartRequest {
        StartRequest {
            description: "session_id=contract; triggered at 2026-11-20T10:00:00.000Z".into(),
            parameters: vec![("InputDataUri".into(), "s3://bucket/train/".into())],
            client_request_token: client_request_token(
                &Principal::Local.caller().owner,
                "p",
                "s",
                &uuid::Uuid::new_v4().to_string(),
            ),
            max_parallel_steps: None,
        }
    }

    const UNKNOWN: &str =
        "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/doesnotexist";

    pub async fn a_token_starts_one_run<P: PipelineControl>(pipeline: &P) {
        let request = start_request();
        let first = pipeline.start(&request).await.unwrap();
        assert_eq!(
            pipeline.start(&request).await.unwrap(),
            first,
            "the same token, the same run"
        );
        let other = pipeline
            .start(&StartRequest {
                client_request_token: uuid::Uuid::new_v4().simple().to_string(),
                ..request
            })
            .await
            .unwrap();
        assert_ne!(other, first, "another token, another run");
    }

    pub async fn a_started_run_is_described_with_its_steps<P: PipelineControl>(pipeline: &P) {
        let arn = pipeline.start(&start_request()).await.unwrap();
        let described = pipeline.describe(&arn).await.unwrap();
        // Not stopped: running, or ended by itself (the stand-in's runs are quick).
        assert!(
            matches!(
                described.status,
                ExecutionStatus::Known(
                    PipelineStatus::Executing | PipelineStatus::Succeeded | PipelineStatus::Failed
                )
            ),
            "a run nobody stopped is {}",
            described.status
        );
        let steps = pipeline.steps(&arn).await.unwrap();
        for step in &steps {
            assert!(
                !step.name.is_empty() && !step.status.as_str().is_empty(),
                "{step:?}"
            );
        }
        let definition = pipeline.definition(&arn).await.unwrap();
        assert!(
            crate::domain::pipeline_definition::step_count(&definition).is_some_and(|n| n > 0),
            "the definition a run executes names its steps: {definition}"
        );
    }

    pub async fn a_stopped_run_is_stopping_or_stopped<P: PipelineControl>(pipeline: &P) {
        let arn = pipeline.start(&start_request()).await.unwrap();
        // Stopped at once, while it certainly still runs.
        pipeline.stop(&arn).await.unwrap();
        let status = pipeline.describe(&arn).await.unwrap().status;
        assert!(
            status.is(PipelineStatus::Stopping) || status.is(PipelineStatus::Stopped),
            "a stopped run is Stopping or Stopped, not {status}"
        );
    }

    pub async fn an_unknown_run_is_refused_not_retried<P: PipelineControl>(pipeline: &P) {
        let failure = pipeline.describe(UNKNOWN).await.unwrap_err();
        assert!(
            !failure.retryable && !failure.ambiguous,
            "describe: {failure}"
        );
        let failure = pipeline.stop(UNKNOWN).await.unwrap_err();
        assert!(!failure.retryable && !failure.ambiguous, "stop: {failure}");
        let failure = pipeline.definition(UNKNOWN).await.unwrap_err();
        assert!(
            !failure.retryable && !failure.ambiguous,
            "definition: {failure}"
        );
    }
}

/// One `#[tokio::test]` per pipeline behaviour, on the `PipelineControl` `$make.await` gives.
#[macro_export]
macro_rules! pipeline_control_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            pipeline_control,
            $make,
            [
                a_token_starts_one_run,
                a_started_run_is_described_with_its_steps,
                a_stopped_run_is_stopping_or_stopped,
                an_unknown_run_is_refused_not_retried,
            ]
        );
    };
}

// ------------------------------------------------------------------------------ completion queue

pub mod completion_queue {
    //! The completion queue: what is sent arrives, whole, as JSON, once per send.

    use std::future::Future;

    use serde_json::Value;

    use crate::domain::caller::Principal;
    use crate::domain::pipeline_status::PipelineStatus;
    use crate::domain::run::CompletionMessage;
    use crate::ports::CompletionQueue;

    /// A queue under test that can also tell what it received (every message body since it
    /// was created, as JSON): the fake from memory, SQS by ReceiveMessage.
    pub trait Inbox: CompletionQueue {
        fn received(&self) -> impl Future<Output = Vec<Value>> + Send;
    }

    fn message(status: PipelineStatus) -> CompletionMessage {
        CompletionMessage {
            session_id: format!("s-{}", uuid::Uuid::new_v4().simple()),
            owner: Some(Principal::Local.caller().owner.as_str().to_owned()),
            execution_arn: "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/1".into(),
            pipeline_arn: "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p".into(),
            status,
            previous_status: Some(PipelineStatus::Executing.into()),
            started_at: Some("2026-11-20T10:00:00.000Z".into()),
            ended_at: Some("2026-11-20T10:20:00.000Z".into()),
            failure_reason: (status == PipelineStatus::Failed)
                .then(|| "Step failure: Evaluate".into()),
            event_id: uuid::Uuid::new_v4().to_string(),
            event_time: "2026-11-20T10:20:01.000Z".into(),
        }
    }

    pub async fn a_sent_message_arrives_whole_as_json<Q: Inbox>(queue: &Q) {
        let sent = message(PipelineStatus::Failed);
        queue.send(&sent).await.unwrap();
        let received = queue.received().await;
        assert_eq!(received, [serde_json::to_value(&sent).unwrap()]);
        assert_eq!(received[0]["status"], "Failed");
        assert_eq!(received[0]["previous_status"], "Executing");
    }

    pub async fn each_send_is_one_message<Q: Inbox>(queue: &Q) {
        let (a, b) = (
            message(PipelineStatus::Succeeded),
            message(PipelineStatus::Stopped),
        );
        queue.send(&a).await.unwrap();
        queue.send(&b).await.unwrap();
        let mut ids: Vec<_> = queue
            .received()
            .await
            .iter()
            .map(|m| m["event_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        let mut expected = vec![a.event_id, b.event_id];
        expected.sort();
        assert_eq!(ids, expected);
    }
}

/// One `#[tokio::test]` per completion-queue behaviour, on the [`completion_queue::Inbox`] `$make.await` gives.
#[macro_export]
macro_rules! completion_queue_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            completion_queue,
            $make,
            [
                a_sent_message_arrives_whole_as_json,
                each_send_is_one_message,
            ]
        );
    };
}

// ------------------------------------------------------------------------------ lineage

pub mod lineage_graph {
    //! SageMaker's lineage around a registered model: the package is tracked by the one
    //! artifact whose source URI is its ARN; associations are listed from either end, page by
    //! page; a model package is not a lineage entity; unknown packages and artifacts are
    //! refused, not retried. The port under test pages by one association, so that every
    //! behaviour follows NextToken.

    use std::collections::HashSet;
    use std::future::Future;

    use crate::domain::lineage::{Association, Direction, EntityKind};
    use crate::ports::LineageGraph;

    /// A model a pipeline run registered.
    #[derive(Debug, Clone)]
    pub struct Registered {
        pub model_package_arn: String,
        pub execution_arn: String,
        pub input_data_uri: String,
    }

    /// A lineage under test that can also get a registered model into it: the fake records
    /// one, the stand-in runs a pipeline until its RegisterModel step is done.
    pub trait Registrar: LineageGraph {
        fn register(&self, input_data_uri: &str) -> impl Future<Output = Registered> + Send;
    }

    fn input_data_uri() -> String {
        format!(
            "s3://contract-data/{}/train/",
            uuid::Uuid::new_v4().simple()
        )
    }

    /// Every association of `arn` in `direction`, all pages, and how many pages there were.
    async fn all<L: LineageGraph>(
        lineage: &L,
        arn: &str,
        direction: Direction,
    ) -> (Vec<Association>, usize) {
        let (mut found, mut pages, mut token) = (Vec::new(), 0, None::<String>);
        loop {
            let page = lineage
                .associations(arn, direction, token.as_deref())
                .await
                .unwrap_or_else(|e| panic!("ListAssociations of {arn}: {e}"));
            pages += 1;
            found.extend(page.associations);
            match page.next_token {
                Some(next) if pages < 100 => token = Some(next),
                Some(_) => panic!("{arn}: pages without end"),
                None => return (found, pages),
            }
        }
    }

    async fn package_artifact<L: Registrar>(lineage: &L, registered: &Registered) -> String {
        let arns = lineage
            .artifacts_with_source(&registered.model_package_arn)
            .await
            .unwrap();
        assert_eq!(
            arns.len(),
            1,
            "one artifact stands for the package: {arns:?}"
        );
        arns[0].clone()
    }

    pub async fn a_registered_model_is_described_and_tracked_by_one_artifact<L: Registrar>(
        lineage: &L,
    ) {
        let registered = lineage.register(&input_data_uri()).await;
        let package = lineage
            .describe_model_package(&registered.model_package_arn)
            .await
            .unwrap();
        assert_eq!(package.arn, registered.model_package_arn);
        assert_eq!(package.status.as_deref(), Some("Completed"));
        assert!(
            package.group_name.is_some() && package.version.is_some(),
            "{package:?}"
        );
        assert_eq!(
            package.generated_by.as_deref(),
            Some(registered.execution_arn.as_str()),
            "a pipeline's package names the run that made it"
        );
        let artifact = package_artifact(lineage, &registered).await;
        let described = lineage.describe_artifact(&artifact).await.unwrap();
        assert_eq!(described.arn, artifact);
        assert_eq!(
            described.source_uri.as_deref(),
            Some(registered.model_package_arn.as_str())
        );
    }

    pub async fn upstream_lists_what_ends_at_an_entity_and_reaches_the_data<L: Registrar>(
        lineage: &L,
    ) {
        let uri = input_data_uri();
        let registered = lineage.register(&uri).await;
        let mut frontier = vec![package_artifact(lineage, &registered).await];
        let mut seen: HashSet<String> = frontier.iter().cloned().collect();
        let mut data = None;
        for _depth in 0..3 {
            let mut next = Vec::new();
            for arn in &frontier {
                let (found, _) = all(lineage, arn, Direction::Upstream).await;
                for a in found {
                    assert_eq!(&a.destination_arn, arn, "upstream of {arn}: {a:?}");
                    assert!(a.association_type.is_some(), "{a:?}");
                    if seen.insert(a.source_arn.clone()) {
                        next.push(a.source_arn);
                    }
                }
            }
            for arn in &next {
                if EntityKind::of_arn(arn) == Some(EntityKind::Artifact) {
                    let artifact = lineage.describe_artifact(arn).await.unwrap();
                    if artifact.source_uri.as_deref() == Some(uri.as_str()) {
                        data = Some(artifact);
                    }
                }
            }
            frontier = next
                .into_iter()
                .filter(|a| EntityKind::of_arn(a).is_some_and(|k| k.has_associations()))
                .collect();
        }
        let data = data.expect("the run's input data, within three associations upstream");
        assert_eq!(data.artifact_type.as_deref(), Some("DataSet"));
    }

    pub async fn downstream_lists_what_starts_at_an_entity<L: Registrar>(lineage: &L) {
        let registered = lineage.register(&input_data_uri()).await;
        let artifact = package_artifact(lineage, &registered).await;
        let (found, _) = all(lineage, &artifact, Direction::Downstream).await;
        assert!(!found.is_empty(), "the package feeds something (its group)");
        for a in &found {
            assert_eq!(a.source_arn, artifact, "{a:?}");
        }
        assert!(
            found
                .iter()
                .any(|a| EntityKind::of_arn(&a.destination_arn) == Some(EntityKind::Context)),
            "{found:?}"
        );
    }

    pub async fn pages_follow_on_to_every_association_once<L: Registrar>(lineage: &L) {
        let registered = lineage.register(&input_data_uri()).await;
        let artifact = package_artifact(lineage, &registered).await;
        let (found, pages) = all(lineage, &artifact, Direction::Upstream).await;
        assert!(found.len() >= 2, "the model and its image: {found:?}");
        assert!(
            pages >= found.len(),
            "{pages} pages of one for {} associations",
            found.len()
        );
        let distinct: HashSet<&str> = found.iter().map(|a| a.source_arn.as_str()).collect();
        assert_eq!(
            distinct.len(),
            found.len(),
            "each association once: {found:?}"
        );
    }

    pub async fn a_model_package_is_not_a_lineage_entity<L: Registrar>(lineage: &L) {
        let registered = lineage.register(&input_data_uri()).await;
        for direction in [Direction::Upstream, Direction::Downstream] {
            let failure = lineage
                .associations(&registered.model_package_arn, direction, None)
                .await
                .unwrap_err();
            assert_eq!(
                failure.code.as_deref(),
                Some("ValidationException"),
                "{failure}"
            );
            assert!(!failure.retryable && !failure.ambiguous, "{failure}");
        }
    }

    pub async fn unknown_packages_and_artifacts_are_refused_not_retried<L: Registrar>(lineage: &L) {
        let id = uuid::Uuid::new_v4().simple();
        let package = format!("arn:aws:sagemaker:us-east-1:123456789012:model-package/none-{id}/1");
        let failure = lineage.describe_model_package(&package).await.unwrap_err();
        assert_eq!(
            failure.code.as_deref(),
            Some("ValidationException"),
            "{failure}"
        );
        assert!(!failure.retryable && !failure.ambiguous, "{failure}");
        let artifact = format!("arn:aws:sagemaker:us-east-1:123456789012:artifact/{id}");
        let failure = lineage.describe_artifact(&artifact).await.unwrap_err();
        assert_eq!(
            failure.code.as_deref(),
            Some("ResourceNotFound"),
            "{failure}"
        );
        assert!(!failure.retryable && !failure.ambiguous, "{failure}");
        assert_eq!(
            lineage.artifacts_with_source(&package).await.unwrap(),
            Vec::<String>::new()
        );
    }
}

/// One `#[tokio::test]` per lineage behaviour, on the [`lineage_graph::Registrar`] `$make.await` gives.
#[macro_export]
macro_rules! lineage_graph_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            lineage_graph,
            $make,
            [
                a_registered_model_is_described_and_tracked_by_one_artifact,
                upstream_lists_what_ends_at_an_entity_and_reaches_the_data,
                downstream_lists_what_starts_at_an_entity,
                pages_follow_on_to_every_association_once,
                a_model_package_is_not_a_lineage_entity,
                unknown_packages_and_artifacts_are_refused_not_retried,
            ]
        );
    };
}

impl lineage_graph::Registrar for crate::fakes::MemoryLineage {
    async fn register(&self, input_data_uri: &str) -> lineage_graph::Registered {
        let execution_arn = format!(
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/contract-pipeline/execution/{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        lineage_graph::Registered {
            model_package_arn: self.register_model(&execution_arn, input_data_uri),
            execution_arn,
            input_data_uri: input_data_uri.to_owned(),
        }
    }
}

impl completion_queue::Inbox for crate::fakes::MemoryQueue {
    async fn received(&self) -> Vec<serde_json::Value> {
        self.sent()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect()
    }
}

#[cfg(test)]
mod on_the_fakes {
    mod job_store {
        crate::job_store_contract!(async { crate::fakes::MemoryJobs::default() });
    }

    mod run_store {
        crate::run_store_contract!(async { crate::fakes::MemoryRuns::default() });
    }

    mod object_store {
        crate::object_store_contract!(async {
            crate::port_contract::object_store::Objects {
                objects: crate::fakes::MemoryObjects::default(),
                bucket: "bucket".to_owned(),
            }
        });
    }

    mod async_invoker {
        crate::async_invoker_contract!(async {
            crate::port_contract::async_invoker::Endpoint {
                invoker: crate::fakes::FakeInvoker::new("ep"),
                endpoint_name: "ep".to_owned(),
                input_location: "s3://b/inputs/x.json".to_owned(),
            }
        });
    }

    mod pipeline_control {
        crate::pipeline_control_contract!(async { crate::fakes::FakePipeline::default() });
    }

    mod completion_queue {
        crate::completion_queue_contract!(async { crate::fakes::MemoryQueue::default() });
    }

    mod lineage_graph {
        crate::lineage_graph_contract!(async {
            crate::fakes::MemoryLineage::default().with_page_size(1)
        });
    }
}
