//! Async inference jobs: the outcome record one notification writes, what is stored inline,
//! and the flow from a parsed notification to one conditional write.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::notification::{InferenceOutcome, OutcomeKind};
use crate::objects::{ObjectPrefix, ObjectReader};
use crate::s3_location::S3Location;
use crate::store::{RecordResult, ResultsStore, StoreError};
use crate::time::{rfc3339, ttl_after};

/// Attribute names of the results table (the deployment contract).
pub mod attr {
    pub const INFERENCE_ID: &str = "inference_id";
    pub const STATUS: &str = "status";
    pub const SUBMITTED_AT: &str = "submitted_at";
    pub const COMPLETED_AT: &str = "completed_at";
    pub const ENDPOINT_NAME: &str = "endpoint_name";
    pub const INPUT_LOCATION: &str = "input_location";
    pub const OUTPUT_LOCATION: &str = "output_location";
    pub const FAILURE_LOCATION: &str = "failure_location";
    pub const FAILURE_REASON: &str = "failure_reason";
    pub const FAILURE_EXCERPT: &str = "failure_excerpt";
    pub const RESULT: &str = "result";
    pub const TTL: &str = "ttl";
}

/// Bounds that keep an item far below DynamoDB's 400 KB whatever a notification carries.
pub const MAX_FAILURE_REASON_BYTES: usize = 4096;
pub const MAX_FAILURE_EXCERPT_BYTES: usize = 4096;
pub const MAX_LOCATION_BYTES: usize = 2048;
/// DynamoDB allows 32 levels of nested maps and lists.
const MAX_NESTING: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Pending,
    Completed,
    Failed,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
        }
    }
}

/// Everything one notification writes to the results table.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRecord {
    pub inference_id: String,
    /// `Completed` or `Failed`: a notification never writes `pending`.
    pub status: JobStatus,
    pub completed_at: String,
    /// Kept when the item already has one (the submit time); otherwise SageMaker's receive time.
    pub submitted_at: Option<String>,
    pub endpoint_name: Option<String>,
    pub input_location: Option<String>,
    pub output_location: Option<String>,
    /// The decoded output, when it is JSON and small enough to store inline.
    pub result: Option<Value>,
    pub failure_reason: Option<String>,
    pub failure_location: Option<String>,
    pub failure_excerpt: Option<String>,
    pub ttl: i64,
}

/// How one notification was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    TestNotification,
    /// The outcome was written (a new item, or a `pending` one completed in place).
    Written {
        inference_id: String,
        status: JobStatus,
        result_inline: bool,
    },
    /// The item already holds a terminal state; nothing changed.
    AlreadyFinal {
        inference_id: String,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct RecordSettings {
    pub result_ttl_secs: u64,
    pub inline_result_max_bytes: u64,
}

/// Turns one parsed outcome into one conditional write: reads the output (from the body when
/// SageMaker included it, else one bounded S3 read), decides inline or pointer, and writes.
pub async fn record_outcome<S, R>(
    store: &S,
    objects: &R,
    settings: RecordSettings,
    outcome: InferenceOutcome,
    now: DateTime<Utc>,
) -> Result<Recorded, StoreError>
where
    S: ResultsStore,
    R: ObjectReader,
{
    let mut record = OutcomeRecord {
        inference_id: outcome.inference_id.clone(),
        status: JobStatus::Completed,
        completed_at: rfc3339(outcome.event_time.unwrap_or(now)),
        submitted_at: outcome.received_time.map(rfc3339),
        endpoint_name: outcome
            .endpoint_name
            .map(|s| truncate_utf8(s, MAX_LOCATION_BYTES)),
        input_location: outcome
            .input_location
            .map(|s| truncate_utf8(s, MAX_LOCATION_BYTES)),
        output_location: None,
        result: None,
        failure_reason: None,
        failure_location: None,
        failure_excerpt: None,
        ttl: ttl_after(now, settings.result_ttl_secs),
    };
    match outcome.kind {
        OutcomeKind::Completed {
            output_location,
            response_body,
            ..
        } => {
            let max = settings.inline_result_max_bytes;
            record.result = match (response_body, &output_location) {
                (Some(body), _) => inline_result(&body, max),
                (None, Some(location)) => read_inline_result(objects, location, max).await,
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
                record.failure_excerpt = read_failure_excerpt(objects, &location).await;
            }
            record.failure_location =
                failure_location.map(|s| truncate_utf8(s, MAX_LOCATION_BYTES));
        }
    }

    let result = match store.record_outcome(&record).await {
        // A result DynamoDB refuses (a shape the size estimate did not foresee) must not lose
        // the outcome: store it again as a pointer to the output.
        Err(StoreError::Rejected { .. }) if record.result.is_some() => {
            tracing::warn!(inference_id = %record.inference_id, "DynamoDB rejected the inline result; storing a pointer only");
            record.result = None;
            store.record_outcome(&record).await?
        }
        other => other?,
    };
    Ok(match result {
        RecordResult::Written => Recorded::Written {
            inference_id: record.inference_id,
            status: record.status,
            result_inline: record.result.is_some(),
        },
        RecordResult::AlreadyFinal => Recorded::AlreadyFinal {
            inference_id: record.inference_id,
        },
    })
}

async fn read_inline_result<R: ObjectReader>(
    objects: &R,
    location: &S3Location,
    max: u64,
) -> Option<Value> {
    match objects.read_prefix(location, max).await {
        Ok(ObjectPrefix { bytes, total_len }) if total_len <= max => inline_result(&bytes, max),
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

async fn read_failure_excerpt<R: ObjectReader>(
    objects: &R,
    location: &S3Location,
) -> Option<String> {
    let max = MAX_FAILURE_EXCERPT_BYTES as u64;
    match objects.read_prefix(location, max).await {
        Ok(ObjectPrefix { bytes, total_len }) => {
            let text =
                String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FAILURE_EXCERPT_BYTES)])
                    .into_owned();
            let mut text = truncate_utf8(text, MAX_FAILURE_EXCERPT_BYTES);
            if total_len > max {
                text.push_str(&format!("\n[... {total_len} bytes in all]"));
            }
            Some(text)
        }
        Err(e) => {
            tracing::warn!(%location, error = %e, "could not read the failure object; storing its location only");
            None
        }
    }
}

/// The output as a JSON value to store inline, or `None` when it must be a pointer: not JSON,
/// larger than `max` as text or once stored, nested deeper than DynamoDB allows, or holding a number or
/// key DynamoDB cannot store.
pub fn inline_result(bytes: &[u8], max: u64) -> Option<Value> {
    if bytes.len() as u64 > max {
        return None;
    }
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let size = stored_size(&value, 0)?;
    (size <= max).then_some(value)
}

/// An upper estimate of the bytes DynamoDB counts for `value` as a native attribute
/// (maps and lists: 3 bytes + 1 per element; names count their length), `None` when
/// DynamoDB cannot store it.
fn stored_size(value: &Value, depth: usize) -> Option<u64> {
    if depth > MAX_NESTING {
        return None;
    }
    Some(match value {
        Value::Null | Value::Bool(_) => 1,
        Value::Number(n) => {
            if !dynamodb_number(n) {
                return None;
            }
            n.to_string().len() as u64 + 1
        }
        Value::String(s) => s.len() as u64,
        Value::Array(items) => {
            let mut total = 3;
            for item in items {
                total += 1 + stored_size(item, depth + 1)?;
            }
            total
        }
        Value::Object(fields) => {
            let mut total = 3;
            for (name, item) in fields {
                if name.is_empty() {
                    return None;
                }
                total += 1 + name.len() as u64 + stored_size(item, depth + 1)?;
            }
            total
        }
    })
}

/// DynamoDB numbers: magnitude from 1e-130 to below 1e126, at most 38 significant digits
/// (integers and f64 values never exceed the digits).
fn dynamodb_number(n: &serde_json::Number) -> bool {
    if n.is_i64() || n.is_u64() {
        return true;
    }
    match n.as_f64() {
        Some(0.0) => true,
        Some(f) => f.is_finite() && (1e-130..1e126).contains(&f.abs()),
        None => false,
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub fn truncate_utf8(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_json_is_inline() {
        assert_eq!(
            inline_result(br#"{"label":"ok","score":0.93}"#, 1024),
            Some(json!({"label":"ok","score":0.93}))
        );
        assert_eq!(inline_result(b"[1,2,3]", 1024), Some(json!([1, 2, 3])));
    }

    #[test]
    fn non_json_and_oversize_are_pointers() {
        assert_eq!(inline_result(b"label=ok", 1024), None);
        assert_eq!(inline_result(b"", 1024), None);
        let big = serde_json::to_vec(&json!({"text": "x".repeat(2000)})).unwrap();
        assert_eq!(inline_result(&big, 1024), None);
        assert!(inline_result(&big, 4096).is_some());
    }

    #[test]
    fn the_limit_counts_stored_size_not_json_text() {
        // 1000 small numbers: 2 bytes of JSON each but 3 stored.
        let ones = serde_json::to_vec(&vec![1; 1000]).unwrap();
        assert_eq!(ones.len(), 2001);
        assert_eq!(inline_result(&ones, 2100), None);
    }

    #[test]
    fn values_dynamodb_cannot_store_are_pointers() {
        assert_eq!(inline_result(br#"{"x": 1e300}"#, 1024), None);
        assert_eq!(inline_result(br#"{"x": 1e-200}"#, 1024), None);
        assert_eq!(inline_result(br#"{"": 1}"#, 1024), None);
        let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
        assert_eq!(inline_result(deep.as_bytes(), 1024), None);
        let ok = format!("{}1{}", "[".repeat(30), "]".repeat(30));
        assert!(inline_result(ok.as_bytes(), 1024).is_some());
        assert!(inline_result(
            br#"{"x": 0.0, "y": -2.5e10, "z": 18446744073709551615}"#,
            1024
        )
        .is_some());
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_utf8("héllo".into(), 2), "h");
        assert_eq!(truncate_utf8("abc".into(), 10), "abc");
    }

    mod flow {
        use super::*;
        use crate::notification::{parse_notification, Notification};
        use crate::objects::MemoryObjects;
        use crate::store::MemoryResultsStore;
        use chrono::TimeZone;

        const SETTINGS: RecordSettings = RecordSettings {
            result_ttl_secs: 3600,
            inline_result_max_bytes: 1024,
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

        #[tokio::test]
        async fn completes_a_pending_item_in_place() {
            let store = MemoryResultsStore::default();
            store.insert_pending("j1", "2026-11-20T10:14:00.000Z");
            let objects = MemoryObjects::default().with("s3://b/out/1", r#"{"a":1}"#);

            let recorded = record_outcome(&store, &objects, SETTINGS, success("j1"), now())
                .await
                .unwrap();

            assert_eq!(
                recorded,
                Recorded::Written {
                    inference_id: "j1".into(),
                    status: JobStatus::Completed,
                    result_inline: true
                }
            );
            let item = store.get("j1").unwrap();
            assert_eq!(
                item.submitted_at.as_deref(),
                Some("2026-11-20T10:14:00.000Z")
            );
            assert_eq!(item.completed_at, "2026-11-20T10:15:01.902Z");
            assert_eq!(item.ttl, now().timestamp() + 3600);
            assert_eq!(item.result, Some(json!({"a": 1})));
        }

        #[tokio::test]
        async fn a_second_outcome_for_the_same_job_is_ignored() {
            let store = MemoryResultsStore::default();
            let objects = MemoryObjects::default().with("s3://b/out/1", "{}");
            record_outcome(&store, &objects, SETTINGS, success("j2"), now())
                .await
                .unwrap();
            let late_failure = outcome(
                json!({"invocationStatus": "Failed", "inferenceId": "j2", "failureReason": "boom"}),
            );

            let recorded = record_outcome(&store, &objects, SETTINGS, late_failure, now())
                .await
                .unwrap();

            assert_eq!(
                recorded,
                Recorded::AlreadyFinal {
                    inference_id: "j2".into()
                }
            );
            assert_eq!(store.get("j2").unwrap().status, JobStatus::Completed);
        }

        #[tokio::test]
        async fn a_missing_output_object_still_records_the_outcome_as_a_pointer() {
            let store = MemoryResultsStore::default();
            let recorded = record_outcome(
                &store,
                &MemoryObjects::default(),
                SETTINGS,
                success("j3"),
                now(),
            )
            .await
            .unwrap();
            assert!(matches!(
                recorded,
                Recorded::Written {
                    result_inline: false,
                    ..
                }
            ));
            assert_eq!(
                store.get("j3").unwrap().output_location.as_deref(),
                Some("s3://b/out/1")
            );
        }

        #[tokio::test]
        async fn a_rejected_inline_result_is_retried_as_a_pointer() {
            let mut store = MemoryResultsStore::default();
            store.reject_inline_results = true;
            let objects = MemoryObjects::default().with("s3://b/out/1", r#"{"a":1}"#);

            let recorded = record_outcome(&store, &objects, SETTINGS, success("j4"), now())
                .await
                .unwrap();

            assert!(matches!(
                recorded,
                Recorded::Written {
                    result_inline: false,
                    ..
                }
            ));
            assert_eq!(store.get("j4").unwrap().result, None);
        }

        #[tokio::test]
        async fn failure_reason_and_excerpt_are_bounded() {
            let store = MemoryResultsStore::default();
            let objects = MemoryObjects::default().with("s3://b/fail/1", "é".repeat(5000));
            let failed = outcome(json!({"invocationStatus": "Failed", "inferenceId": "j5",
                "failureReason": "x".repeat(10_000), "responseParameters": {"failureLocation": "s3://b/fail/1"}}));

            record_outcome(&store, &objects, SETTINGS, failed, now())
                .await
                .unwrap();

            let item = store.get("j5").unwrap();
            assert_eq!(item.failure_reason.unwrap().len(), MAX_FAILURE_REASON_BYTES);
            let excerpt = item.failure_excerpt.unwrap();
            assert!(
                excerpt.starts_with("éé") && excerpt.ends_with("[... 10000 bytes in all]"),
                "{excerpt}"
            );
            assert!(excerpt.len() < MAX_FAILURE_EXCERPT_BYTES + 64);
        }
    }
}
