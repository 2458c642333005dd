//! What the job modules' tests share: fixed times, a submission, and writes applied in order.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::item::{Item, Write};
use crate::job::state::{Job, JobPolicy, JobStatus};
use crate::job::submission::Submission;
use crate::job::transition::{Locations, OutcomeRecord};
use crate::time::parse_rfc3339;

pub fn at(s: &str) -> DateTime<Utc> {
    parse_rfc3339(s).unwrap()
}

/// The submission most tests start from, and the moment they start at.
pub fn start() -> (Submission, DateTime<Utc>) {
    (submission(), at("2026-11-20T10:00:00Z"))
}

pub fn submission() -> Submission {
    Submission::new(
        &crate::caller::Principal::Local.caller().owner,
        "ep",
        "bucket",
        b"{\"inputs\":\"a\"}".to_vec(),
        Some("k1"),
        300,
        600,
    )
}

pub const POLICY: JobPolicy = JobPolicy {
    result_ttl_secs: 3600,
    submit_crash_after_secs: 60,
    lost_grace_secs: 120,
    reconcile_after_secs: 30,
};

/// Applies writes in order to one stored item, as a store would.
pub fn run(writes: &[Write]) -> (Option<Item>, Vec<bool>) {
    let mut stored: Option<Item> = None;
    let mut applied = Vec::new();
    for w in writes {
        match w.apply_to(stored.as_ref()) {
            Some(item) => {
                stored = Some(item);
                applied.push(true);
            }
            None => applied.push(false),
        }
    }
    (stored, applied)
}

pub fn job(item: &Option<Item>) -> Job {
    Job::from_item(item.as_ref().unwrap()).unwrap()
}

pub fn outcome(id: &str, status: JobStatus) -> OutcomeRecord {
    OutcomeRecord {
        inference_id: id.to_owned().into(),
        status,
        completed_at: "2026-11-20T10:05:00.000Z".into(),
        submitted_at: Some("2026-11-20T09:59:00.000Z".into()),
        endpoint_name: None,
        input_location: None,
        output_location: Some("s3://b/out".into()),
        result: Some(json!({"a": 1})),
        failure_reason: None,
        failure_location: None,
        failure_excerpt: None,
        ttl: 9_999_999_999,
        reconciled_at: None,
    }
}

/// Both locations InvokeEndpointAsync answers.
pub fn both_locations() -> Locations {
    Locations {
        output_location: Some("s3://b/out".into()),
        failure_location: Some("s3://b/fail".into()),
    }
}
