//! Every transition of a job as one conditional [`Write`] on the results table.
//!
//! ```text
//!   (none) ──reserve──> pending/reserved ──invoked───> pending/invoked ──outcome──> completed | failed
//!                              │        ──ambiguous─> pending/uncertain ─outcome─> completed | failed
//!                              └─refused (4xx)─> failed/refused
//! ```
//! Terminal states (`completed`, `failed`, `cancelled`) are never left or overwritten by an
//! outcome. The same idempotency key re-drives (same inference_id, same input, next attempt) a
//! `reserved` job whose submission crashed, an `invoked` or `uncertain` job once it is
//! probably lost, and a `refused` one.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::ids::InferenceId;
use crate::item::{Attr, Change, Guard, Item, Write, WriteOp};
use crate::job::condition::CANCELLED_REASON;
use crate::job::state::{attr, JobPolicy, JobStatus, Stage};
use crate::job::submission::Submission;
use crate::time::{rfc3339, ttl_after};
use crate::trace::TraceContext;
use crate::util::truncate_utf8;

/// How much of a failure's text and of a location a record keeps: enough for an agent to act
/// on, and small whatever a notification carries.
pub const MAX_FAILURE_REASON_BYTES: usize = 4096;
pub const MAX_FAILURE_EXCERPT_BYTES: usize = 4096;
pub const MAX_LOCATION_BYTES: usize = 2048;

fn key(inference_id: &InferenceId) -> Item {
    Item::from([(
        attr::INFERENCE_ID.to_owned(),
        Attr::s(inference_id.as_str()),
    )])
}

fn pending() -> Attr {
    Attr::s(JobStatus::Pending.as_str())
}

fn reserved_item(s: &Submission, attempt: i64, policy: &JobPolicy, now: DateTime<Utc>) -> Item {
    // The item must outlive the request's time in the queue and on the model, then keep the
    // outcome for the result TTL.
    let ttl = ttl_after(
        now,
        u64::from(s.request_ttl_secs)
            + u64::from(s.invocation_timeout_secs)
            + policy.result_ttl_secs,
    );
    [
        (attr::STATUS, pending()),
        (attr::STAGE, Stage::Reserved.attr()),
        (attr::ATTEMPT, Attr::N(attempt)),
        (attr::SUBMITTED_AT, Attr::s(rfc3339(now))),
        (attr::ENDPOINT_NAME, Attr::s(&s.endpoint_name)),
        (attr::REQUEST_TTL_SECS, Attr::N(s.request_ttl_secs.into())),
        (
            attr::INVOCATION_TIMEOUT_SECS,
            Attr::N(s.invocation_timeout_secs.into()),
        ),
        (attr::INPUT_SHA256, Attr::s(&s.input_sha256)),
        (attr::TASK_SECRET, Attr::s(&s.task_secret)),
        (attr::OWNER, Attr::s(s.owner.as_str())),
        (
            attr::REDRIVE_AFTER,
            Attr::N(ttl_after(now, policy.submit_crash_after_secs)),
        ),
        (attr::TTL, Attr::N(ttl)),
    ]
    .into_iter()
    // An input sent inline has no location.
    .chain(
        s.input_location
            .as_ref()
            .map(|l| (attr::INPUT_LOCATION, Attr::s(l.to_string()))),
    )
    .chain(TraceContext::item_attrs(s.trace.as_ref()))
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The first reservation of an id: only when no live item has it (expired items are absent).
pub fn reserve(s: &Submission, policy: &JobPolicy, now: DateTime<Utc>) -> Write {
    Write {
        key: key(&s.inference_id),
        op: WriteOp::Put(reserved_item(s, 1, policy, now)),
        guard: Guard::Any(vec![
            Guard::Absent(attr::INFERENCE_ID),
            Guard::AtMost(attr::TTL, now.timestamp()),
        ]),
    }
}

/// A new attempt for a job the key may re-drive; the attempt check makes concurrent re-drives
/// produce one.
pub fn redrive(s: &Submission, seen_attempt: i64, policy: &JobPolicy, now: DateTime<Utc>) -> Write {
    let t = now.timestamp();
    Write {
        key: key(&s.inference_id),
        op: WriteOp::Put(reserved_item(s, seen_attempt + 1, policy, now)),
        guard: Guard::All(vec![
            Guard::Eq(attr::ATTEMPT, Attr::N(seen_attempt)),
            Guard::Eq(attr::INPUT_SHA256, Attr::s(&s.input_sha256)),
            Guard::Eq(attr::OWNER, Attr::s(s.owner.as_str())),
            Guard::Any(vec![
                Guard::All(vec![
                    Guard::Eq(attr::STATUS, pending()),
                    Guard::AtMost(attr::REDRIVE_AFTER, t),
                ]),
                Guard::All(vec![
                    Guard::Eq(attr::STATUS, Attr::s(JobStatus::Failed.as_str())),
                    Guard::Eq(attr::STAGE, Stage::Refused.attr()),
                ]),
                Guard::AtMost(attr::TTL, t),
            ]),
        ]),
    }
}

/// Only the attempt that reserved the job moves it on from `reserved`.
fn from_reserved(attempt: i64) -> Guard {
    Guard::All(vec![
        Guard::Eq(attr::ATTEMPT, Attr::N(attempt)),
        Guard::Eq(attr::STAGE, Stage::Reserved.attr()),
    ])
}

/// Where SageMaker will write the outcome of one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Locations {
    pub output_location: Option<String>,
    pub failure_location: Option<String>,
}

/// InvokeEndpointAsync answered. The stage moves even when a (fast) outcome already made the
/// job terminal, so a replay finds the locations the first call returned.
pub fn mark_invoked(
    inference_id: &InferenceId,
    attempt: i64,
    at: &Locations,
    lost_after: i64,
) -> Write {
    let mut changes = vec![
        Change::Set(attr::STAGE, Stage::Invoked.attr()),
        Change::Set(attr::REDRIVE_AFTER, Attr::N(lost_after)),
    ];
    if let Some(l) = &at.output_location {
        changes.push(Change::Set(attr::OUTPUT_LOCATION, Attr::s(l)));
    }
    if let Some(l) = &at.failure_location {
        changes.push(Change::Set(attr::FAILURE_LOCATION, Attr::s(l)));
    }
    Write {
        key: key(inference_id),
        op: WriteOp::Update(changes),
        guard: from_reserved(attempt),
    }
}

/// The invoke's outcome is unknown: still `pending`, so a notification can complete it.
pub fn mark_uncertain(
    inference_id: &InferenceId,
    attempt: i64,
    error: &str,
    lost_after: i64,
) -> Write {
    Write {
        key: key(inference_id),
        op: WriteOp::Update(vec![
            Change::Set(attr::STAGE, Stage::Uncertain.attr()),
            Change::Set(
                attr::INVOKE_ERROR,
                Attr::s(truncate_utf8(error.to_owned(), MAX_FAILURE_REASON_BYTES)),
            ),
            Change::Set(attr::REDRIVE_AFTER, Attr::N(lost_after)),
        ]),
        guard: from_reserved(attempt),
    }
}

/// SageMaker (or S3) definitely refused the submission: `failed` with the reason.
pub fn mark_refused(
    inference_id: &InferenceId,
    attempt: i64,
    reason: &str,
    policy: &JobPolicy,
    now: DateTime<Utc>,
) -> Write {
    let mut guard = from_reserved(attempt);
    if let Guard::All(gs) = &mut guard {
        gs.push(Guard::Eq(attr::STATUS, pending()));
    }
    Write {
        key: key(inference_id),
        op: WriteOp::Update(vec![
            Change::Set(attr::STATUS, Attr::s(JobStatus::Failed.as_str())),
            Change::Set(attr::STAGE, Stage::Refused.attr()),
            Change::Set(
                attr::FAILURE_REASON,
                Attr::s(truncate_utf8(reason.to_owned(), MAX_FAILURE_REASON_BYTES)),
            ),
            Change::Set(attr::COMPLETED_AT, Attr::s(rfc3339(now))),
            Change::Set(attr::TTL, Attr::N(ttl_after(now, policy.result_ttl_secs))),
        ]),
        guard,
    }
}

/// Everything one outcome (a notification, or what S3 shows) writes to the results table.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRecord {
    pub inference_id: InferenceId,
    /// `Completed` or `Failed`.
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
    /// When the outcome was read from S3 instead of a notification.
    pub reconciled_at: Option<String>,
}

/// The client cancelled a pending job. SageMaker cannot stop an async request, so it may still
/// run; being terminal, `cancelled` keeps its later outcome out (record_outcome refuses).
pub fn cancel(inference_id: &InferenceId, result_ttl_secs: u64, now: DateTime<Utc>) -> Write {
    Write {
        key: key(inference_id),
        op: WriteOp::Update(vec![
            Change::Set(attr::STATUS, Attr::s(JobStatus::Cancelled.as_str())),
            Change::Set(attr::COMPLETED_AT, Attr::s(rfc3339(now))),
            Change::Set(attr::FAILURE_REASON, Attr::s(CANCELLED_REASON)),
            Change::Set(attr::TTL, Attr::N(ttl_after(now, result_ttl_secs))),
        ]),
        guard: Guard::Eq(attr::STATUS, pending()),
    }
}

/// An outcome is written only when no item exists or the item is `pending`: a duplicate, a
/// replay or a late contradictory delivery changes nothing; submit-time fields are kept.
pub fn record_outcome(r: &OutcomeRecord) -> Write {
    let mut changes = vec![
        Change::Set(attr::STATUS, Attr::s(r.status.as_str())),
        Change::Set(attr::COMPLETED_AT, Attr::s(&r.completed_at)),
        Change::Set(attr::TTL, Attr::N(r.ttl)),
    ];
    for (name, value) in [
        (attr::SUBMITTED_AT, &r.submitted_at),
        (attr::ENDPOINT_NAME, &r.endpoint_name),
        (attr::INPUT_LOCATION, &r.input_location),
    ] {
        if let Some(v) = value {
            changes.push(Change::SetIfAbsent(name, Attr::s(v)));
        }
    }
    for (name, value) in [
        (attr::OUTPUT_LOCATION, &r.output_location),
        (attr::FAILURE_REASON, &r.failure_reason),
        (attr::FAILURE_LOCATION, &r.failure_location),
        (attr::FAILURE_EXCERPT, &r.failure_excerpt),
        (attr::RECONCILED_AT, &r.reconciled_at),
    ] {
        if let Some(v) = value {
            changes.push(Change::Set(name, Attr::s(v)));
        }
    }
    if let Some(result) = &r.result {
        changes.push(Change::Set(attr::RESULT, Attr::Json(result.clone())));
    }
    Write {
        key: key(&r.inference_id),
        op: WriteOp::Update(changes),
        guard: Guard::Any(vec![
            Guard::Absent(attr::INFERENCE_ID),
            Guard::Eq(attr::STATUS, pending()),
        ]),
    }
}

/// The start of a failure object as text, saying how long the whole object is when cut.
pub fn failure_excerpt(bytes: &[u8], total_len: u64) -> String {
    let text =
        String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FAILURE_EXCERPT_BYTES)]).into_owned();
    let mut text = truncate_utf8(text, MAX_FAILURE_EXCERPT_BYTES);
    if total_len > MAX_FAILURE_EXCERPT_BYTES as u64 {
        text.push_str(&format!("\n[... {total_len} bytes in all]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use serde_json::json;

    use crate::job::test_support::{
        at, both_locations, job, outcome, run, start, submission, POLICY,
    };

    #[test]
    fn reserved_then_invoked_stores_both_locations() {
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let locations = both_locations();
        let (item, applied) = run(&[
            reserve(&s, &POLICY, now),
            mark_invoked(&s.inference_id, 1, &locations, 5),
        ]);
        assert_eq!(applied, [true, true]);
        let j = job(&item);
        assert_eq!(
            (j.status, j.stage),
            (JobStatus::Pending, Some(Stage::Invoked))
        );
        assert_eq!(j.output_location.as_deref(), Some("s3://b/out"));
        assert_eq!(j.failure_location.as_deref(), Some("s3://b/fail"));
        assert_eq!(j.submitted_at.as_deref(), Some("2026-11-20T10:00:00.000Z"));
    }

    #[test]
    fn a_second_reservation_of_a_live_id_is_refused_an_expired_one_is_replaced() {
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let (_, applied) = run(&[reserve(&s, &POLICY, now), reserve(&s, &POLICY, now)]);
        assert_eq!(applied, [true, false]);
        let much_later = now + Duration::days(2);
        let (item, applied) = run(&[reserve(&s, &POLICY, now), reserve(&s, &POLICY, much_later)]);
        assert_eq!(applied, [true, true]);
        assert_eq!(job(&item).submitted_at.unwrap(), rfc3339(much_later));
    }

    #[test]
    fn only_the_reserving_attempt_moves_the_job_on() {
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let (_, applied) = run(&[
            reserve(&s, &POLICY, now),
            mark_invoked(&s.inference_id, 2, &Locations::default(), 5),
            mark_uncertain(&s.inference_id, 1, "timeout", 5),
            mark_invoked(&s.inference_id, 1, &Locations::default(), 5),
            mark_refused(&s.inference_id, 1, "400", &POLICY, now),
        ]);
        assert_eq!(applied, [true, false, true, false, false]);
    }

    #[test]
    fn an_uncertain_job_is_completed_by_a_later_outcome() {
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let (item, applied) = run(&[
            reserve(&s, &POLICY, now),
            mark_uncertain(&s.inference_id, 1, "InternalFailure", 5),
            record_outcome(&outcome(s.inference_id.as_str(), JobStatus::Completed)),
        ]);
        assert_eq!(applied, [true, true, true]);
        let j = job(&item);
        assert_eq!(j.status, JobStatus::Completed);
        assert_eq!(j.result, Some(json!({"a": 1})));
        assert_eq!(
            j.submitted_at.as_deref(),
            Some("2026-11-20T10:00:00.000Z"),
            "kept"
        );
    }

    #[test]
    fn terminal_states_are_never_overwritten_by_outcomes() {
        let id = "j";
        for first in [JobStatus::Completed, JobStatus::Failed] {
            let (item, applied) = run(&[
                record_outcome(&outcome(id, first)),
                record_outcome(&outcome(id, JobStatus::Failed)),
                record_outcome(&outcome(id, JobStatus::Completed)),
            ]);
            assert_eq!(applied, [true, false, false]);
            assert_eq!(job(&item).status, first);
        }
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let (_, applied) = run(&[
            reserve(&s, &POLICY, now),
            mark_refused(&s.inference_id, 1, "ValidationError", &POLICY, now),
            record_outcome(&outcome(s.inference_id.as_str(), JobStatus::Completed)),
        ]);
        assert_eq!(applied, [true, true, false]);
    }

    #[test]
    fn a_fast_outcome_before_the_invoke_answer_still_gets_the_locations() {
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let locations = both_locations();
        let (item, applied) = run(&[
            reserve(&s, &POLICY, now),
            record_outcome(&outcome(s.inference_id.as_str(), JobStatus::Completed)),
            mark_invoked(&s.inference_id, 1, &locations, 5),
        ]);
        assert_eq!(applied, [true, true, true]);
        let j = job(&item);
        assert_eq!(j.status, JobStatus::Completed);
        assert_eq!(j.failure_location.as_deref(), Some("s3://b/fail"));
        // Nor does a refusal of the reserving attempt touch an outcome that arrived first.
        let (item, applied) = run(&[
            reserve(&s, &POLICY, now),
            record_outcome(&outcome(s.inference_id.as_str(), JobStatus::Completed)),
            mark_refused(&s.inference_id, 1, "PutObject failed", &POLICY, now),
        ]);
        assert_eq!(applied, [true, true, false]);
        assert_eq!(job(&item).status, JobStatus::Completed);
    }

    #[test]
    fn a_redrive_needs_the_seen_attempt_and_a_redrivable_state() {
        let (s, t0) = start();
        let later = t0 + Duration::seconds(61);
        // A crashed reservation: one re-drive wins, the same re-drive again loses.
        let (item, applied) = run(&[
            reserve(&s, &POLICY, t0),
            redrive(&s, 1, &POLICY, t0),
            redrive(&s, 1, &POLICY, later),
            redrive(&s, 1, &POLICY, later),
        ]);
        assert_eq!(applied, [true, false, true, false]);
        let j = job(&item);
        assert_eq!((j.attempt, j.stage), (2, Some(Stage::Reserved)));
        // A caller that read attempt 1 long ago must not undo a later re-drive.
        let much_later = later + Duration::seconds(61);
        let (item, applied) = run(&[
            reserve(&s, &POLICY, t0),
            redrive(&s, 1, &POLICY, later),
            redrive(&s, 1, &POLICY, much_later),
            redrive(&s, 2, &POLICY, much_later),
        ]);
        assert_eq!(applied, [true, true, false, true]);
        assert_eq!(job(&item).attempt, 3);
        // A completed job is never re-driven.
        let (_, applied) = run(&[
            reserve(&s, &POLICY, t0),
            record_outcome(&outcome(s.inference_id.as_str(), JobStatus::Completed)),
            redrive(&s, 1, &POLICY, later),
        ]);
        assert_eq!(applied, [true, true, false]);
        // Nor re-driven with another input.
        let other = Submission {
            input_sha256: "other".into(),
            ..s.clone()
        };
        let (_, applied) = run(&[reserve(&s, &POLICY, t0), redrive(&other, 1, &POLICY, later)]);
        assert_eq!(applied, [true, false]);
    }

    #[test]
    fn the_submitting_calls_trace_is_stored_and_kept_through_the_outcome() {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let trace = TraceContext::for_request(Some(parent), Some("rojo=1"));
        let s = submission().with_trace(trace.clone());
        let now = at("2026-11-20T10:00:00Z");
        let (item, _) = run(&[
            reserve(&s, &POLICY, now),
            mark_invoked(&s.inference_id, 1, &both_locations(), 5),
            record_outcome(&outcome(s.inference_id.as_str(), JobStatus::Completed)),
        ]);
        let stored = item.clone().unwrap();
        assert_eq!(
            stored[attr::TRACEPARENT].as_s(),
            Some(trace.traceparent().as_str())
        );
        assert_eq!(stored[attr::TRACESTATE].as_s(), Some("rojo=1"));
        assert_eq!(job(&item).trace, Some(trace));
        // Without one, neither attribute is written.
        let (item, _) = run(&[reserve(&submission(), &POLICY, now)]);
        let stored = item.unwrap();
        assert!(!stored.contains_key(attr::TRACEPARENT) && !stored.contains_key(attr::TRACESTATE));
    }
}
