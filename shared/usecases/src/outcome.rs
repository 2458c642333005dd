//! Record an outcome: from a SageMaker notification, or from what S3 shows when the
//! notification did not arrive. Both end in the same conditional write (`domain::job::record_outcome`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::events::{Publish, PublishError, Published};
use crate::JobSettings;
use domain::completion::JobCompletion;
use domain::events;
use domain::item::{Applied, Attr};
use domain::job::{
    self, failure_excerpt, Job, JobStatus, OutcomeRecord, Probe, MAX_FAILURE_EXCERPT_BYTES,
    MAX_FAILURE_REASON_BYTES, MAX_LOCATION_BYTES,
};
use domain::notification::{InferenceOutcome, OutcomeKind};
use domain::s3_location::S3Location;
use domain::time::{parse_rfc3339, rfc3339, ttl_after};
use domain::trace::TraceContext;
use domain::util::truncate_utf8;
use ports::{
    CompletionEvents, EventError, JobStore, ObjectError, ObjectPrefix, ObjectStore, StoreError,
};

/// How one outcome was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The outcome was written (a new item, or a `pending` one completed in place).
    Written {
        inference_id: String,
        status: JobStatus,
        result_inline: bool,
        /// A record of the job was there (this server submitted it, or an earlier outcome
        /// arrived); false for an outcome of a job never seen here.
        known_job: bool,
        /// From the request's receipt (or submission) to its outcome, by the recorded times.
        took_ms: Option<u64>,
        /// The event the recorded job announces.
        completion: Option<JobCompletion>,
        /// The job's stored trace (its submitting call's), for this outcome's log lines.
        trace: Option<TraceContext>,
    },
    /// The item already holds a terminal state; nothing changed.
    AlreadyFinal {
        inference_id: String,
        /// The stored job's event when it holds this same outcome: a delivery retried (or a
        /// notification after the outcome was reconciled) announces it again, so an event whose
        /// put failed the first time is not lost.
        repeated: Option<JobCompletion>,
        /// The job's stored trace.
        trace: Option<TraceContext>,
    },
}

impl Recorded {
    /// The trace the job was submitted in, when it was stored with one.
    pub fn trace(&self) -> Option<&TraceContext> {
        match self {
            Recorded::Written { trace, .. } | Recorded::AlreadyFinal { trace, .. } => {
                trace.as_ref()
            }
        }
    }

    /// The event to put for this outcome, if any.
    pub fn completion(&self) -> Option<&JobCompletion> {
        match self {
            Recorded::Written { completion, .. } => completion.as_ref(),
            Recorded::AlreadyFinal { repeated, .. } => repeated.as_ref(),
        }
    }
}

/// Publishes the event the outcome raises for its owner's MCP Events subscribers (none for a
/// job no caller owns): after the write. A retried delivery logs nothing new (see
/// [`events::publish`](crate::events::publish)). None when there was no event to publish.
pub async fn publish_event<P: Publish>(
    subscribers: Option<&P>,
    recorded: &Recorded,
    now: DateTime<Utc>,
) -> Result<Option<Published>, PublishError> {
    let Some(subscribers) = subscribers else {
        return Ok(None);
    };
    let event = recorded
        .completion()
        .and_then(|c| events::job_ended(c, now));
    match event {
        Some(event) => subscribers.publish(&event, now).await.map(Some),
        None => Ok(None),
    }
}

/// Puts the outcome's event, when it has one: after the write, never instead of it.
pub async fn announce<E: CompletionEvents>(
    events: &E,
    recorded: &Recorded,
) -> Result<(), EventError> {
    match recorded.completion() {
        Some(completion) => events.put(completion).await,
        None => Ok(()),
    }
}

/// One notification: reads the output (from the body when SageMaker included it, else one
/// bounded S3 read), decides inline or pointer, and writes.
pub async fn record_notification<S: JobStore, O: ObjectStore>(
    store: &S,
    objects: &O,
    settings: JobSettings,
    outcome: InferenceOutcome,
    now: DateTime<Utc>,
) -> Result<Recorded, StoreError> {
    let mut record = base_record(outcome.inference_id.as_str(), settings, now);
    record.completed_at = rfc3339(outcome.event_time.unwrap_or(now));
    record.submitted_at = outcome.received_time.map(rfc3339);
    record.endpoint_name = outcome
        .endpoint_name
        .map(|s| truncate_utf8(s, MAX_LOCATION_BYTES));
    record.input_location = outcome
        .input_location
        .map(|s| truncate_utf8(s, MAX_LOCATION_BYTES));
    match outcome.kind {
        OutcomeKind::Completed {
            output_location,
            response_body,
            ..
        } => {
            let max = settings.inline_result_max_bytes;
            record.result = match (response_body, &output_location) {
                (Some(body), _) => inline_result(store, &body, max),
                (None, Some(location)) => read_inline_result(store, objects, location, max).await,
                (None, None) => None,
            };
            record.output_location = output_location.map(|l| l.to_string());
        }
        OutcomeKind::Failed {
            failure_reason,
            failure_location,
        } => {
            record.status = JobStatus::Failed;
            record.failure_reason = Some(truncate_utf8(failure_reason, MAX_FAILURE_REASON_BYTES));
            if let Some(location) = failure_location
                .as_deref()
                .and_then(|l| l.parse::<S3Location>().ok())
            {
                let max = MAX_FAILURE_EXCERPT_BYTES as u64;
                record.failure_excerpt = match objects.read_prefix(&location, max).await {
                    Ok(p) => Some(failure_excerpt(&p.bytes, p.total_len)),
                    Err(e) => {
                        tracing::warn!(%location, error = %e, "could not read the failure object; storing its location only");
                        None
                    }
                };
            }
            record.failure_location =
                failure_location.map(|s| truncate_utf8(s, MAX_LOCATION_BYTES));
        }
    }
    write_outcome(store, record).await
}

fn base_record(inference_id: &str, settings: JobSettings, now: DateTime<Utc>) -> OutcomeRecord {
    OutcomeRecord {
        inference_id: inference_id.to_owned().into(),
        status: JobStatus::Completed,
        completed_at: rfc3339(now),
        submitted_at: None,
        endpoint_name: None,
        input_location: None,
        output_location: None,
        result: None,
        failure_reason: None,
        failure_location: None,
        failure_excerpt: None,
        ttl: ttl_after(now, settings.policy.result_ttl_secs),
        reconciled_at: None,
    }
}

/// The write, with one retry as a pointer: a result DynamoDB refuses (a shape the size
/// estimate did not foresee) must not lose the outcome.
async fn write_outcome<S: JobStore>(
    store: &S,
    mut record: OutcomeRecord,
) -> Result<Recorded, StoreError> {
    let mut write = job::record_outcome(&record);
    let applied = match store.write(&write).await {
        Err(StoreError::Rejected { .. }) if record.result.is_some() => {
            tracing::warn!(inference_id = %record.inference_id, "DynamoDB rejected the inline result; storing a pointer only");
            record.result = None;
            write = job::record_outcome(&record);
            store.write(&write).await?
        }
        other => other?,
    };
    Ok(match applied {
        Applied::Written { previous } => {
            // The item as now stored: the write applied to what it replaced.
            let stored = write
                .apply_to(previous.as_ref())
                .and_then(|stored| Job::from_item(&stored).ok());
            let completion = stored.as_ref().and_then(JobCompletion::of);
            // The stored submit time when the job was submitted here, else SageMaker's receipt.
            let submitted_at = previous
                .as_ref()
                .and_then(|item| item.get(job::attr::SUBMITTED_AT))
                .and_then(Attr::as_s)
                .map(str::to_owned)
                .or(record.submitted_at);
            Recorded::Written {
                result_inline: record.result.is_some(),
                known_job: previous.is_some(),
                took_ms: elapsed_ms(submitted_at.as_deref(), &record.completed_at),
                inference_id: record.inference_id.into(),
                status: record.status,
                completion,
                trace: stored.and_then(|job| job.trace),
            }
        }
        Applied::Refused(stored) => {
            let stored = stored.and_then(|item| Job::from_item(&item).ok());
            Recorded::AlreadyFinal {
                repeated: stored
                    .as_ref()
                    .and_then(JobCompletion::of)
                    .filter(|c| c.status == record.status.as_str()),
                trace: stored.and_then(|job| job.trace),
                inference_id: record.inference_id.into(),
            }
        }
    })
}

fn elapsed_ms(from: Option<&str>, to: &str) -> Option<u64> {
    let ms = (parse_rfc3339(to)? - parse_rfc3339(from?)?).num_milliseconds();
    u64::try_from(ms).ok()
}

/// The output as a JSON value to store inline, or `None` when it must be a pointer: not JSON,
/// larger than `max` as text, or more than the store can hold inline within `max`.
fn inline_result<S: JobStore>(store: &S, bytes: &[u8], max: u64) -> Option<Value> {
    if bytes.len() as u64 > max {
        return None;
    }
    let value: Value = serde_json::from_slice(bytes).ok()?;
    store.fits_inline(&value, max).then_some(value)
}

async fn read_inline_result<S: JobStore, O: ObjectStore>(
    store: &S,
    objects: &O,
    location: &S3Location,
    max: u64,
) -> Option<Value> {
    match objects.read_prefix(location, max).await {
        Ok(ObjectPrefix {
            bytes, total_len, ..
        }) if total_len <= max => inline_result(store, &bytes, max),
        Ok(ObjectPrefix { total_len, .. }) => {
            tracing::info!(%location, total_len, max, "output larger than the inline limit; storing a pointer");
            None
        }
        Err(e) => {
            // The pointer is still stored, and the output can be fetched from it later.
            tracing::warn!(%location, error = %e, "could not read the output; storing a pointer");
            None
        }
    }
}

/// One S3 probe for a pending job's outcome; records it when the object is there.
/// `Ok(None)`: nothing there yet.
pub async fn reconcile<S: JobStore, O: ObjectStore>(
    store: &S,
    objects: &O,
    settings: JobSettings,
    inference_id: &str,
    probe: Probe,
    now: DateTime<Utc>,
) -> Result<Option<Recorded>, ReconcileError> {
    let mut record = base_record(inference_id, settings, now);
    record.reconciled_at = Some(rfc3339(now));
    match probe {
        Probe::Output(location) => {
            let max = settings.inline_result_max_bytes;
            let prefix = match objects.read_prefix(&location, max).await {
                Err(ObjectError::NotFound { .. }) => return Ok(None),
                other => other?,
            };
            if prefix.total_len <= max {
                record.result = inline_result(store, &prefix.bytes, max);
            }
            record.output_location = Some(location.to_string());
        }
        Probe::Failure(location) => {
            let prefix = match objects
                .read_prefix(&location, MAX_FAILURE_EXCERPT_BYTES as u64)
                .await
            {
                Err(ObjectError::NotFound { .. }) => return Ok(None),
                other => other?,
            };
            record.status = JobStatus::Failed;
            record.failure_reason = Some(format!(
                "SageMaker wrote a failure object at {location}; its error notification did not arrive"
            ));
            record.failure_excerpt = Some(failure_excerpt(&prefix.bytes, prefix.total_len));
            record.failure_location = Some(location.to_string());
        }
    }
    Ok(Some(write_outcome(store, record).await?))
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use domain::notification::{parse_notification, Notification};
    use fakes::{MemoryJobs, MemoryObjects};
    use serde_json::json;

    const SETTINGS: JobSettings = JobSettings {
        policy: domain::job::JobPolicy {
            result_ttl_secs: 3600,
            submit_crash_after_secs: 60,
            lost_grace_secs: 120,
            reconcile_after_secs: 30,
        },
        inline_result_max_bytes: 1024,
        in_progress_wait: std::time::Duration::from_secs(5),
    };

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 20, 10, 16, 0).unwrap()
    }

    fn outcome(message: Value) -> InferenceOutcome {
        match parse_notification(&message.to_string()).unwrap() {
            Notification::Outcome(o) => o,
            Notification::Test => unreachable!(),
        }
    }

    fn success(id: &str) -> InferenceOutcome {
        outcome(json!({"invocationStatus": "Completed", "inferenceId": id,
            "eventTime": "2026-11-20T10:15:01.902Z", "receivedTime": "2026-11-20T10:14:12.455Z",
            "responseParameters": {"outputLocation": "s3://b/out/1"}}))
    }

    /// Records `id`'s success notification, which must be written with no inline result.
    async fn record_as_pointer(store: &MemoryJobs, objects: &MemoryObjects, id: &str) {
        let recorded = record_notification(store, objects, SETTINGS, success(id), now())
            .await
            .unwrap();
        assert!(
            matches!(
                recorded,
                Recorded::Written {
                    result_inline: false,
                    ..
                }
            ),
            "{recorded:?}"
        );
    }

    #[tokio::test]
    async fn completes_a_pending_item_in_place() {
        let store = MemoryJobs::default();
        store.insert_pending("j1", "2026-11-20T10:14:00.000Z");
        let objects = MemoryObjects::default().with("s3://b/out/1", r#"{"a":1}"#);

        let recorded = record_notification(&store, &objects, SETTINGS, success("j1"), now())
            .await
            .unwrap();

        let completion = recorded.completion().cloned().unwrap();
        assert_eq!(
            recorded,
            Recorded::Written {
                inference_id: "j1".into(),
                status: JobStatus::Completed,
                result_inline: true,
                known_job: true,
                // The stored submit time (10:14:00.000) to SageMaker's event time (10:15:01.902).
                took_ms: Some(61_902),
                completion: Some(completion.clone()),
                trace: None,
            }
        );
        // The event says what the item now holds: the stored submit time beside the outcome's.
        assert_eq!(
            (
                completion.inference_id.as_str(),
                completion.status,
                completion.submitted_at.as_deref(),
                completion.completed_at.as_deref(),
                completion.output_location.as_deref(),
            ),
            (
                "j1",
                "completed",
                Some("2026-11-20T10:14:00.000Z"),
                Some("2026-11-20T10:15:01.902Z"),
                Some("s3://b/out/1")
            )
        );
        let item = store.job("j1").unwrap();
        assert_eq!(
            item.submitted_at.as_deref(),
            Some("2026-11-20T10:14:00.000Z")
        );
        assert_eq!(
            item.completed_at.as_deref(),
            Some("2026-11-20T10:15:01.902Z")
        );
        assert_eq!(item.ttl, Some(now().timestamp() + 3600));
        assert_eq!(item.result, Some(json!({"a": 1})));
    }

    #[tokio::test]
    async fn a_second_outcome_for_the_same_job_is_ignored() {
        let store = MemoryJobs::default();
        let objects = MemoryObjects::default().with("s3://b/out/1", "{}");
        let first = record_notification(&store, &objects, SETTINGS, success("j2"), now())
            .await
            .unwrap();
        // No job j2 was submitted here: the outcome is stored, and said to be of an unknown job,
        // timed from SageMaker's receipt of the request.
        assert!(matches!(
            first,
            Recorded::Written {
                known_job: false,
                took_ms: Some(49_447),
                ..
            }
        ));
        let late_failure = outcome(
            json!({"invocationStatus": "Failed", "inferenceId": "j2", "failureReason": "boom"}),
        );
        let recorded = record_notification(&store, &objects, SETTINGS, late_failure, now())
            .await
            .unwrap();
        // Another outcome than the one recorded: nothing to announce again.
        assert_eq!(
            recorded,
            Recorded::AlreadyFinal {
                inference_id: "j2".into(),
                repeated: None,
                trace: None,
            }
        );
        assert_eq!(store.job("j2").unwrap().status, JobStatus::Completed);
        // The same outcome delivered again: its event is put again (at least once).
        let again = record_notification(&store, &objects, SETTINGS, success("j2"), now())
            .await
            .unwrap();
        assert!(matches!(&again, Recorded::AlreadyFinal { .. }));
        assert_eq!(again.completion(), first.completion());
    }

    #[tokio::test]
    async fn an_outcome_carries_the_trace_its_job_was_submitted_in() {
        use domain::caller::Principal;
        use domain::job::{reserve, Submission};
        let store = MemoryJobs::default();
        let objects = MemoryObjects::default().with("s3://b/out/1", "{}");
        let trace = TraceContext::for_request(
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            None,
        );
        let owner = Principal::Local.caller().owner;
        let mut s = Submission::new(&owner, "ep", "b", b"{}".to_vec(), None, 300, 600)
            .with_trace(trace.clone());
        s.inference_id = domain::ids::InferenceId::parse("j7").unwrap();
        store
            .write(&reserve(&s, &SETTINGS.policy, now()))
            .await
            .unwrap();
        let recorded = record_notification(&store, &objects, SETTINGS, success("j7"), now())
            .await
            .unwrap();
        assert_eq!(recorded.trace(), Some(&trace));
        let traceparent = trace.traceparent();
        assert_eq!(
            recorded.completion().unwrap().traceparent.as_deref(),
            Some(traceparent.as_str())
        );
        // A repeated delivery still knows the job's trace.
        let again = record_notification(&store, &objects, SETTINGS, success("j7"), now())
            .await
            .unwrap();
        assert!(matches!(&again, Recorded::AlreadyFinal { .. }));
        assert_eq!(again.trace(), Some(&trace));
        // An outcome of a job never submitted here has none.
        let unknown = record_notification(&store, &objects, SETTINGS, success("j8"), now())
            .await
            .unwrap();
        assert_eq!(unknown.trace(), None);
        assert_eq!(unknown.completion().unwrap().traceparent, None);
    }

    #[tokio::test]
    async fn a_missing_output_object_still_records_the_outcome_as_a_pointer() {
        let store = MemoryJobs::default();
        record_as_pointer(&store, &MemoryObjects::default(), "j3").await;
        assert_eq!(
            store.job("j3").unwrap().output_location.as_deref(),
            Some("s3://b/out/1")
        );
    }

    #[tokio::test]
    async fn a_rejected_inline_result_is_retried_as_a_pointer() {
        let store = MemoryJobs::default();
        store.reject_inline_results();
        let objects = MemoryObjects::default().with("s3://b/out/1", r#"{"a":1}"#);
        record_as_pointer(&store, &objects, "j4").await;
        assert_eq!(store.job("j4").unwrap().result, None);
    }

    #[tokio::test]
    async fn failure_reason_and_excerpt_are_bounded() {
        let store = MemoryJobs::default();
        let objects = MemoryObjects::default().with("s3://b/fail/1", "é".repeat(5000));
        let failed = outcome(json!({"invocationStatus": "Failed", "inferenceId": "j5",
            "failureReason": "x".repeat(10_000), "responseParameters": {"failureLocation": "s3://b/fail/1"}}));
        record_notification(&store, &objects, SETTINGS, failed, now())
            .await
            .unwrap();
        let item = store.job("j5").unwrap();
        assert_eq!(item.failure_reason.unwrap().len(), MAX_FAILURE_REASON_BYTES);
        let excerpt = item.failure_excerpt.unwrap();
        assert!(
            excerpt.starts_with("éé") && excerpt.ends_with("[... 10000 bytes in all]"),
            "{excerpt}"
        );
        assert!(excerpt.len() < MAX_FAILURE_EXCERPT_BYTES + 64);
    }

    #[tokio::test]
    async fn a_probe_records_what_s3_holds_and_nothing_when_it_is_empty() {
        let store = MemoryJobs::default();
        store.insert_pending("j6", "2026-11-20T10:14:00.000Z");
        let objects = MemoryObjects::default().with("s3://b/fail/6", "CUDA out of memory");
        let out: S3Location = "s3://b/out/6".parse().unwrap();
        let fail: S3Location = "s3://b/fail/6".parse().unwrap();
        let nothing = reconcile(&store, &objects, SETTINGS, "j6", Probe::Output(out), now())
            .await
            .unwrap();
        assert_eq!(nothing, None);
        assert_eq!(store.job("j6").unwrap().status, JobStatus::Pending);
        let found = reconcile(
            &store,
            &objects,
            SETTINGS,
            "j6",
            Probe::Failure(fail),
            now(),
        )
        .await
        .unwrap();
        assert!(matches!(
            found,
            Some(Recorded::Written {
                status: JobStatus::Failed,
                ..
            })
        ));
        let job = store.job("j6").unwrap();
        assert_eq!(job.failure_excerpt.as_deref(), Some("CUDA out of memory"));
        assert!(job.failure_reason.unwrap().contains("did not arrive"));
        assert!(job.reconciled_at.is_some());
    }
}
