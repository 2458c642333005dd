//! A pipeline run as the pipeline results table records it, and its two writes: the run a
//! trigger starts (`pending`, with the trigger time) and each status change SageMaker reports.
//! A terminal status is never overwritten, so a late `Executing` or a replay changes nothing.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::item::{Attr, Fields, Guard, Item, Write, WriteOp};
use super::job::hex;
use super::pipeline_event::PipelineStatus;

/// Attribute names of the pipeline results table (the deployment contract).
pub mod attr {
    pub const SESSION_ID: &str = "session_id";
    pub const EXECUTION_ARN: &str = "execution_arn";
    pub const PIPELINE_ARN: &str = "pipeline_arn";
    pub const STATUS: &str = "status";
    pub const STARTED_AT: &str = "started_at";
    pub const ENDED_AT: &str = "ended_at";
    pub const FAILURE_REASON: &str = "failure_reason";
    pub const UPDATED_AT: &str = "updated_at";
    pub const TTL: &str = "ttl";
}

pub const MAX_FAILURE_REASON_BYTES: usize = 4096;

/// What one status change writes.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub session_id: String,
    pub execution_arn: String,
    pub pipeline_arn: String,
    pub status: PipelineStatus,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub failure_reason: Option<String>,
    pub updated_at: String,
    pub ttl: i64,
}

/// A pipeline results item, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub session_id: String,
    pub execution_arn: String,
    /// SageMaker's word, or `pending` for a run triggered and not yet heard of.
    pub status: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub failure_reason: Option<String>,
    pub updated_at: Option<String>,
    pub ttl: Option<i64>,
}

impl Run {
    pub fn from_item(item: &Item) -> Run {
        let f = Fields(item);
        Run {
            session_id: f.s(attr::SESSION_ID).unwrap_or_default(),
            execution_arn: f.s(attr::EXECUTION_ARN).unwrap_or_default(),
            status: f.s(attr::STATUS).unwrap_or_default(),
            started_at: f.s(attr::STARTED_AT),
            ended_at: f.s(attr::ENDED_AT),
            failure_reason: f.s(attr::FAILURE_REASON),
            updated_at: f.s(attr::UPDATED_AT),
            ttl: f.n(attr::TTL),
        }
    }

    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.ttl.is_some_and(|ttl| ttl <= now.timestamp())
    }
}

fn key(session_id: &str, execution_arn: &str) -> Item {
    Item::from([
        (attr::SESSION_ID.to_owned(), Attr::s(session_id)),
        (attr::EXECUTION_ARN.to_owned(), Attr::s(execution_arn)),
    ])
}

/// A status change: written unless a terminal status is stored.
pub fn record_status_change(r: &RunRecord) -> Write {
    use super::item::Change::Set;
    let mut changes = vec![
        Set(attr::PIPELINE_ARN, Attr::s(&r.pipeline_arn)),
        Set(attr::STATUS, Attr::s(r.status.as_str())),
        Set(attr::UPDATED_AT, Attr::s(&r.updated_at)),
        Set(attr::TTL, Attr::N(r.ttl)),
    ];
    for (name, value) in [
        (attr::STARTED_AT, &r.started_at),
        (attr::ENDED_AT, &r.ended_at),
        (attr::FAILURE_REASON, &r.failure_reason),
    ] {
        if let Some(v) = value {
            changes.push(Set(name, Attr::s(v)));
        }
    }
    let terminal = PipelineStatus::TERMINAL
        .iter()
        .map(|s| Attr::s(s.as_str()))
        .collect();
    Write {
        key: key(&r.session_id, &r.execution_arn),
        op: WriteOp::Update(changes),
        guard: Guard::Any(vec![
            Guard::Absent(attr::SESSION_ID),
            Guard::Not(Box::new(Guard::In(attr::STATUS, terminal))),
        ]),
    }
}

/// A run just triggered, `pending` with the trigger time as its start so newest-first holds
/// while it runs; not written when the run is already recorded (pipeline-router was first, or
/// this is a retried trigger).
pub fn record_triggered(
    session_id: &str,
    execution_arn: &str,
    triggered_at: &str,
    ttl: i64,
) -> Write {
    let item = Item::from([
        (
            attr::STATUS.to_owned(),
            Attr::s(PipelineStatus::Pending.as_str()),
        ),
        (attr::STARTED_AT.to_owned(), Attr::s(triggered_at)),
        (attr::UPDATED_AT.to_owned(), Attr::s(triggered_at)),
        (attr::TTL.to_owned(), Attr::N(ttl)),
    ]);
    Write {
        key: key(session_id, execution_arn),
        op: WriteOp::Put(item),
        guard: Guard::Absent(attr::SESSION_ID),
    }
}

/// Unexpired runs, newest first (by start, then by last update).
pub fn newest_runs(mut runs: Vec<Run>, now: DateTime<Utc>) -> Vec<Run> {
    runs.retain(|r| !r.is_expired(now));
    runs.sort_by(|a, b| {
        (b.started_at.as_deref(), b.updated_at.as_deref())
            .cmp(&(a.started_at.as_deref(), a.updated_at.as_deref()))
    });
    runs
}

/// The StartPipelineExecution `ClientRequestToken` for a caller's idempotency key: 64 hex
/// characters (SageMaker takes 32 to 128), the same for the same pipeline, session and key.
pub fn client_request_token(
    pipeline_name: &str,
    session_id: &str,
    idempotency_key: &str,
) -> String {
    hex(&Sha256::digest(
        format!("trigger_training\0{pipeline_name}\0{session_id}\0{idempotency_key}").as_bytes(),
    ))
}

/// The message sent to the completion queue (JSON body).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionMessage {
    pub session_id: String,
    pub execution_arn: String,
    pub pipeline_arn: String,
    pub status: String,
    pub previous_status: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub event_id: String,
    pub event_time: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::parse_rfc3339;

    fn record(status: PipelineStatus) -> RunRecord {
        RunRecord {
            session_id: "s".into(),
            execution_arn: "arn:e".into(),
            pipeline_arn: "arn:p".into(),
            status,
            started_at: Some("2026-11-20T10:00:00.000Z".into()),
            ended_at: None,
            failure_reason: None,
            updated_at: "2026-11-20T10:01:00.000Z".into(),
            ttl: 10,
        }
    }

    #[test]
    fn a_terminal_status_is_kept_and_pending_is_overwritten() {
        let triggered = record_triggered("s", "arn:e", "2026-11-20T09:59:59.000Z", 10);
        let item = triggered.apply_to(None).unwrap();
        assert_eq!(Run::from_item(&item).status, "pending");
        assert_eq!(
            triggered.apply_to(Some(&item)),
            None,
            "a retried trigger writes nothing"
        );
        let executing = record_status_change(&record(PipelineStatus::Executing))
            .apply_to(Some(&item))
            .unwrap();
        let done = record_status_change(&record(PipelineStatus::Stopped))
            .apply_to(Some(&executing))
            .unwrap();
        assert_eq!(Run::from_item(&done).status, "Stopped");
        for late in [PipelineStatus::Executing, PipelineStatus::Succeeded] {
            assert_eq!(
                record_status_change(&record(late)).apply_to(Some(&done)),
                None
            );
        }
    }

    #[test]
    fn tokens_are_stable_per_key_and_within_sagemakers_length() {
        let t = client_request_token("p", "s", "k");
        assert_eq!(t.len(), 64);
        assert_eq!(t, client_request_token("p", "s", "k"));
        assert_ne!(t, client_request_token("p", "s", "k2"));
        assert_ne!(t, client_request_token("p", "s2", "k"));
    }

    #[test]
    fn runs_are_newest_first_without_expired_ones() {
        let now = parse_rfc3339("2026-11-20T12:00:00Z").unwrap();
        let run = |arn: &str, started: Option<&str>, ttl: i64| Run {
            session_id: "s".into(),
            execution_arn: arn.into(),
            status: "Succeeded".into(),
            started_at: started.map(Into::into),
            ended_at: None,
            failure_reason: None,
            updated_at: Some("2026-11-20T11:00:00Z".into()),
            ttl: Some(ttl),
        };
        let runs = newest_runs(
            vec![
                run("old", Some("2026-11-20T09:00:00Z"), now.timestamp() + 10),
                run("new", Some("2026-11-20T10:00:00Z"), now.timestamp() + 10),
                run("expired", Some("2026-11-20T11:00:00Z"), now.timestamp()),
            ],
            now,
        );
        let arns: Vec<_> = runs.iter().map(|r| r.execution_arn.as_str()).collect();
        assert_eq!(arns, ["new", "old"]);
    }
}
