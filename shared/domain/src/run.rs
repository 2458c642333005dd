//! A pipeline run as the pipeline results table records it, and its two writes: the run a
//! trigger starts (`pending`, with the trigger time) and each status change SageMaker reports.
//! A terminal status is never overwritten, so a late `Executing` or a replay changes nothing.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::caller::Owner;
use super::ids::{ExecutionArn, SessionId};
use super::item::{Attr, Change, Fields, Guard, Item, Write, WriteOp};
use super::pipeline_status::{ExecutionStatus, PipelineStatus, RunStatus};
use super::question::{Questions, RunKey};
use super::trace::TraceContext;
use crate::util::hex;

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
    /// The random part of the run's MCP task id (see [`super::task_id`]).
    pub const TASK_SECRET: &str = "task_secret";
    /// The triggering caller's owner tag; the partition key then starts with it.
    pub const OWNER: &str = "owner";
    /// W3C trace context of the call that triggered the run (its mcp-tools span).
    pub use crate::trace::attr::{TRACEPARENT, TRACESTATE};
}

/// Where a session's runs are stored: an owner's sessions under `<owner tag>#<session_id>`, so
/// two callers' equal session ids never meet (a session id never holds `#`); runs with no
/// owner (triggered before owners existed, or outside the tools) under the session id.
pub fn session_key(owner: Option<&Owner>, session_id: &str) -> String {
    match owner {
        Some(owner) => format!("{owner}#{session_id}"),
        None => session_id.to_owned(),
    }
}

pub const MAX_FAILURE_REASON_BYTES: usize = 4096;

/// What one status change writes.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub session_id: SessionId,
    /// From the run's description; None for a run the tools did not trigger for an owner.
    pub owner: Option<Owner>,
    pub execution_arn: ExecutionArn,
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
    /// The caller's session id (without the owner tag of the partition key).
    pub session_id: SessionId,
    pub owner: Option<Owner>,
    pub execution_arn: ExecutionArn,
    pub status: RunStatus,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub failure_reason: Option<String>,
    pub updated_at: Option<String>,
    pub ttl: Option<i64>,
    pub task_secret: Option<String>,
    /// The triggering call's trace; None for runs the tools did not trigger, or triggered
    /// before traces were stored.
    pub trace: Option<TraceContext>,
    /// What its CallbackSteps asked a person, open or settled.
    pub questions: Questions,
}

impl Run {
    pub fn from_item(item: &Item) -> Run {
        let f = Fields(item);
        let owner = f.s(attr::OWNER);
        let key = f.s(attr::SESSION_ID).unwrap_or_default();
        let session_id = match &owner {
            Some(owner) => key
                .strip_prefix(owner.as_str())
                .and_then(|rest| rest.strip_prefix('#'))
                .map(str::to_owned)
                .unwrap_or(key),
            None => key,
        };
        Run {
            session_id: session_id.into(),
            owner: owner.map(Owner::stored),
            execution_arn: f.s(attr::EXECUTION_ARN).unwrap_or_default().into(),
            status: RunStatus::parse(&f.s(attr::STATUS).unwrap_or_default()),
            started_at: f.s(attr::STARTED_AT),
            ended_at: f.s(attr::ENDED_AT),
            failure_reason: f.s(attr::FAILURE_REASON),
            updated_at: f.s(attr::UPDATED_AT),
            ttl: f.n(attr::TTL),
            task_secret: f.s(attr::TASK_SECRET),
            trace: TraceContext::from_fields(&f),
            questions: Questions::from_item(item),
        }
    }

    /// The item's key, for a write of its questions.
    pub fn record_key(&self) -> RunKey {
        RunKey {
            key: key(
                &session_key(self.owner.as_ref(), self.session_id.as_str()),
                self.execution_arn.as_str(),
            ),
            partition_key: attr::SESSION_ID,
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
    if let Some(owner) = &r.owner {
        changes.push(Set(attr::OWNER, Attr::s(owner.as_str())));
    }
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
        key: key(
            &session_key(r.owner.as_ref(), r.session_id.as_str()),
            r.execution_arn.as_str(),
        ),
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
    owner: &Owner,
    session_id: &str,
    execution_arn: &str,
    triggered_at: &str,
    ttl: i64,
    task_secret: &str,
    trace: Option<&TraceContext>,
) -> Write {
    let mut item = Item::from([
        (attr::OWNER.to_owned(), Attr::s(owner.as_str())),
        (attr::TASK_SECRET.to_owned(), Attr::s(task_secret)),
        (attr::STATUS.to_owned(), Attr::s(RunStatus::PENDING)),
        (attr::STARTED_AT.to_owned(), Attr::s(triggered_at)),
        (attr::UPDATED_AT.to_owned(), Attr::s(triggered_at)),
        (attr::TTL.to_owned(), Attr::N(ttl)),
    ]);
    item.extend(
        TraceContext::item_attrs(trace)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v)),
    );
    Write {
        key: key(&session_key(Some(owner), session_id), execution_arn),
        op: WriteOp::Put(item),
        guard: Guard::Absent(attr::SESSION_ID),
    }
}

/// Gives a run recorded without them (pipeline-router heard of it first) its task secret and
/// the triggering call's trace; what is stored is kept.
pub fn attach_task_secret(
    owner: &Owner,
    session_id: &str,
    execution_arn: &str,
    secret: &str,
    trace: Option<&TraceContext>,
) -> Write {
    let mut changes = vec![Change::SetIfAbsent(attr::TASK_SECRET, Attr::s(secret))];
    changes.extend(
        TraceContext::item_attrs(trace)
            .into_iter()
            .map(|(name, value)| Change::SetIfAbsent(name, value)),
    );
    Write {
        key: key(&session_key(Some(owner), session_id), execution_arn),
        op: WriteOp::Update(changes),
        guard: Guard::Not(Box::new(Guard::Absent(attr::SESSION_ID))),
    }
}

const RUN_TASK_PREFIX: &str = "run.";

/// A run's MCP task id: the session and execution (base64url, so any characters survive) and
/// the random secret. A bearer handle, like a job's.
pub fn task_id(session_id: &str, execution_arn: &str, secret: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{RUN_TASK_PREFIX}{}.{}.{secret}",
        b64.encode(session_id),
        b64.encode(execution_arn)
    )
}

/// The session, execution and secret of a run's task id; `None` for anything else.
pub fn parse_task_id(task_id: &str) -> Option<(String, String, &str)> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = task_id.strip_prefix(RUN_TASK_PREFIX)?.splitn(3, '.');
    let session = String::from_utf8(b64.decode(parts.next()?).ok()?).ok()?;
    let arn = String::from_utf8(b64.decode(parts.next()?).ok()?).ok()?;
    let secret = parts.next().filter(|s| s.len() >= 32)?;
    Some((session, arn, secret))
}

/// Whether a task id names a run (rather than a job).
pub fn is_run_task(task_id: &str) -> bool {
    task_id.starts_with(RUN_TASK_PREFIX)
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
/// characters (SageMaker takes 32 to 128), the same for the same owner, pipeline, session and
/// key; two callers' equal keys never name one request.
pub fn client_request_token(
    owner: &Owner,
    pipeline_name: &str,
    session_id: &str,
    idempotency_key: &str,
) -> String {
    hex(&Sha256::digest(
        format!("trigger_training\0{owner}\0{pipeline_name}\0{session_id}\0{idempotency_key}")
            .as_bytes(),
    ))
}

/// The session of a run started without one (a catalog pipeline tool's `session_id` is
/// optional): derived from the idempotency key, so a retried call lands in the same session as
/// it gets the same run, else new. The answer names it, for check_training_result.
pub fn default_session_id(pipeline_name: &str, idempotency_key: Option<&str>) -> String {
    match idempotency_key {
        Some(key) => {
            let digest = hex(&Sha256::digest(
                format!("default_session\0{pipeline_name}\0{key}").as_bytes(),
            ));
            format!("run-{}", &digest[..32])
        }
        None => format!("run-{}", uuid::Uuid::new_v4().simple()),
    }
}

/// StopPipelineExecution's token for a run: a retried stop is the same request.
pub fn stop_request_token(execution_arn: &str) -> String {
    hex(&Sha256::digest(
        format!("stop_pipeline_execution\0{execution_arn}").as_bytes(),
    ))
}

/// The message sent to the completion queue (JSON body).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionMessage {
    pub session_id: SessionId,
    /// The triggering caller's owner tag, so a consumer can tell two callers' sessions apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub execution_arn: ExecutionArn,
    pub pipeline_arn: String,
    pub status: PipelineStatus,
    pub previous_status: Option<ExecutionStatus>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub event_id: String,
    pub event_time: String,
    /// The W3C `traceparent` stored with the run (the triggering call's span); None for a run
    /// stored without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Principal;
    use crate::time::parse_rfc3339;

    fn owner() -> Owner {
        Principal::Local.caller().owner
    }

    fn record(status: PipelineStatus) -> RunRecord {
        RunRecord {
            session_id: "s".to_owned().into(),
            owner: Some(owner()),
            execution_arn: "arn:e".to_owned().into(),
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
        let triggered = record_triggered(
            &owner(),
            "s",
            "arn:e",
            "2026-11-20T09:59:59.000Z",
            10,
            "secret",
            None,
        );
        let item = triggered.apply_to(None).unwrap();
        assert_eq!(Run::from_item(&item).status, RunStatus::Pending);
        assert_eq!(
            Run::from_item(&item).session_id,
            "s",
            "without the owner tag"
        );
        assert_eq!(
            item[attr::SESSION_ID].as_s(),
            Some(format!("{}#s", owner()).as_str())
        );
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
        assert_eq!(Run::from_item(&done).status, PipelineStatus::Stopped.into());
        for late in [PipelineStatus::Executing, PipelineStatus::Succeeded] {
            assert_eq!(
                record_status_change(&record(late)).apply_to(Some(&done)),
                None
            );
        }
    }

    /// Pinned: a changed derivation would start a second run for a retried trigger after a
    /// deploy, or a second stop.
    #[test]
    fn the_tokens_are_pinned() {
        assert_eq!(
            client_request_token(&owner(), "p", "s", "k"),
            "cd6ffed07c795d68b22d5f542d3de79fb6cf72ed57fcef5ccdf53763a59be460"
        );
        assert_eq!(
            stop_request_token("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/abc"),
            "b985c3b1ad7a0bd870d9a7a70e9ad74bf29af136ef131bf9f3ee52bb7651288f"
        );
    }

    /// Pinned: task ids handed out before a deploy must still be read after it.
    #[test]
    fn the_run_task_id_format_is_pinned() {
        let arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/abc";
        let secret = "0123456789abcdef0123456789abcdef";
        let id = "run.c2Vzcy4x.YXJuOmF3czpzYWdlbWFrZXI6dXMtZWFzdC0xOjEyMzQ1Njc4OTAxMjpwaXBlbGluZS9wL2V4ZWN1dGlvbi9hYmM.0123456789abcdef0123456789abcdef";
        assert_eq!(task_id("sess.1", arn, secret), id);
        assert_eq!(
            parse_task_id(id),
            Some(("sess.1".to_owned(), arn.to_owned(), secret))
        );
    }

    #[test]
    fn tokens_are_stable_per_key_and_within_sagemakers_length() {
        let o = owner();
        let t = client_request_token(&o, "p", "s", "k");
        assert_eq!(t.len(), 64);
        assert_eq!(t, client_request_token(&o, "p", "s", "k"));
        assert_ne!(t, client_request_token(&o, "p", "s", "k2"));
        assert_ne!(t, client_request_token(&o, "p", "s2", "k"));
        let other = Principal::Bearer { name: "b".into() }.caller().owner;
        assert_ne!(t, client_request_token(&other, "p", "s", "k"));
    }

    #[test]
    fn runs_are_newest_first_without_expired_ones() {
        let now = parse_rfc3339("2026-11-20T12:00:00Z").unwrap();
        let run = |arn: &str, started: Option<&str>, ttl: i64| Run {
            session_id: "s".to_owned().into(),
            execution_arn: arn.to_owned().into(),
            status: PipelineStatus::Succeeded.into(),
            started_at: started.map(Into::into),
            ended_at: None,
            failure_reason: None,
            updated_at: Some("2026-11-20T11:00:00Z".into()),
            ttl: Some(ttl),
            task_secret: None,
            owner: None,
            trace: None,
            questions: Default::default(),
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

    #[test]
    fn a_run_task_id_carries_its_session_and_execution() {
        let arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/abc";
        let id = task_id("sess.1", arn, &"s".repeat(32));
        assert!(is_run_task(&id) && !id[4..].contains(':'));
        let (session, execution, secret) = parse_task_id(&id).unwrap();
        assert_eq!((session.as_str(), execution.as_str()), ("sess.1", arn));
        assert_eq!(secret, "s".repeat(32));
        assert!(parse_task_id("run.x.y.short").is_none());
        assert!(parse_task_id("not-a-run").is_none());
    }
}
