//! An async inference job: its states, its stored record, and every transition between states
//! as one conditional [`Write`].
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

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::item::{Attr, Change, Fields, Guard, Item, Write, WriteOp};
use super::s3_location::S3Location;
use super::time::{parse_rfc3339, rfc3339, ttl_after};

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
    /// How far submission got while `pending`: reserved, invoked, uncertain (or refused).
    pub const STAGE: &str = "stage";
    /// 1 for the first submission, +1 for each re-drive; every submit transition checks it.
    pub const ATTEMPT: &str = "attempt";
    /// Epoch seconds after which the same idempotency key may re-drive the pending job.
    pub const REDRIVE_AFTER: &str = "redrive_after";
    /// The ambiguous error of an `uncertain` invoke.
    pub const INVOKE_ERROR: &str = "invoke_error";
    pub const REQUEST_TTL_SECS: &str = "request_ttl_secs";
    pub const INVOCATION_TIMEOUT_SECS: &str = "invocation_timeout_secs";
    pub const INPUT_SHA256: &str = "input_sha256";
    /// Set when the outcome was read from S3 because no notification arrived.
    pub const RECONCILED_AT: &str = "reconciled_at";
    /// The random half of the job's MCP task id (see [`super::task_id`]).
    pub const TASK_SECRET: &str = "task_secret";
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
    Cancelled,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            JobStatus::Pending,
            JobStatus::Completed,
            JobStatus::Failed,
            JobStatus::Cancelled,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        self != JobStatus::Pending
    }
}

/// How far the submission got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The item exists; SageMaker has not confirmed the request (the input may not be in S3).
    Reserved,
    /// InvokeEndpointAsync answered; both locations are stored.
    Invoked,
    /// The invoke failed in a way that does not tell whether SageMaker queued the request.
    Uncertain,
    /// SageMaker (or S3, for the input) definitely refused: `failed`, and re-drivable.
    Refused,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Reserved => "reserved",
            Stage::Invoked => "invoked",
            Stage::Uncertain => "uncertain",
            Stage::Refused => "refused",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Stage::Reserved,
            Stage::Invoked,
            Stage::Uncertain,
            Stage::Refused,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    fn attr(self) -> Attr {
        Attr::s(self.as_str())
    }
}

/// The timing rules of the lifecycle, from configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobPolicy {
    /// How long an outcome is kept.
    pub result_ttl_secs: u64,
    /// A `reserved` item older than this belongs to a submission that crashed: the submitting
    /// function's timeout plus a margin.
    pub submit_crash_after_secs: u64,
    /// Grace after a request's TTL and invocation timeout before a pending job is called lost.
    pub lost_grace_secs: u64,
    /// A job pending this long with known locations is looked for in S3 by status checks.
    pub reconcile_after_secs: u64,
}

impl Default for JobPolicy {
    fn default() -> Self {
        Self {
            result_ttl_secs: 3600,
            submit_crash_after_secs: 60,
            lost_grace_secs: 120,
            reconcile_after_secs: 60,
        }
    }
}

/// A results-table item, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub inference_id: String,
    pub status: JobStatus,
    /// `None` for items not written by submit_job (an outcome for a job submitted elsewhere).
    pub stage: Option<Stage>,
    pub attempt: i64,
    pub submitted_at: Option<String>,
    pub completed_at: Option<String>,
    pub endpoint_name: Option<String>,
    pub input_location: Option<String>,
    pub output_location: Option<String>,
    pub failure_location: Option<String>,
    pub failure_reason: Option<String>,
    pub failure_excerpt: Option<String>,
    pub result: Option<Value>,
    pub ttl: Option<i64>,
    pub request_ttl_secs: Option<i64>,
    pub invocation_timeout_secs: Option<i64>,
    pub input_sha256: Option<String>,
    pub redrive_after: Option<i64>,
    pub invoke_error: Option<String>,
    pub reconciled_at: Option<String>,
    /// `None` for items written before tasks existed, or by an outcome alone.
    pub task_secret: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("item {inference_id:?} has status {status:?}, which is not a job status")]
pub struct BadJobItem {
    pub inference_id: String,
    pub status: String,
}

impl Job {
    pub fn from_item(item: &Item) -> Result<Job, BadJobItem> {
        let f = Fields(item);
        let inference_id = f.s(attr::INFERENCE_ID).unwrap_or_default();
        let status_text = f.s(attr::STATUS).unwrap_or_default();
        let status = JobStatus::parse(&status_text).ok_or(BadJobItem {
            inference_id: inference_id.clone(),
            status: status_text,
        })?;
        let mut stage = f.s(attr::STAGE).as_deref().and_then(Stage::parse);
        let submitted_at = f.s(attr::SUBMITTED_AT);
        let request_ttl_secs = f.n(attr::REQUEST_TTL_SECS);
        let invocation_timeout_secs = f.n(attr::INVOCATION_TIMEOUT_SECS);
        let mut redrive_after = f.n(attr::REDRIVE_AFTER);
        // Items written before stages existed were written once the invoke had answered (no
        // other writer leaves a job pending).
        if stage.is_none() && status == JobStatus::Pending {
            stage = Some(Stage::Invoked);
            redrive_after = redrive_after.or_else(|| {
                let submitted = submitted_at.as_deref().and_then(parse_rfc3339)?;
                Some(lost_after(
                    submitted,
                    request_ttl_secs.unwrap_or(600),
                    invocation_timeout_secs.unwrap_or(300),
                    JobPolicy::default().lost_grace_secs,
                ))
            });
        }
        Ok(Job {
            inference_id,
            status,
            stage,
            attempt: f.n(attr::ATTEMPT).unwrap_or(1),
            submitted_at,
            completed_at: f.s(attr::COMPLETED_AT),
            endpoint_name: f.s(attr::ENDPOINT_NAME),
            input_location: f.s(attr::INPUT_LOCATION),
            output_location: f.s(attr::OUTPUT_LOCATION),
            failure_location: f.s(attr::FAILURE_LOCATION),
            failure_reason: f.s(attr::FAILURE_REASON),
            failure_excerpt: f.s(attr::FAILURE_EXCERPT),
            result: f.json(attr::RESULT),
            ttl: f.n(attr::TTL),
            request_ttl_secs,
            invocation_timeout_secs,
            input_sha256: f.s(attr::INPUT_SHA256),
            redrive_after,
            invoke_error: f.s(attr::INVOKE_ERROR),
            reconciled_at: f.s(attr::RECONCILED_AT),
            task_secret: f.s(attr::TASK_SECRET),
        })
    }

    /// DynamoDB deletes expired items only eventually: an item past its `ttl` is absent.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.ttl.is_some_and(|ttl| ttl <= now.timestamp())
    }

    fn redrive_due(&self, now: DateTime<Utc>) -> bool {
        self.redrive_after.is_some_and(|t| t <= now.timestamp())
    }

    /// A submission that stopped before SageMaker confirmed it (the function crashed or timed out).
    pub fn crashed(&self, now: DateTime<Utc>) -> bool {
        self.status == JobStatus::Pending
            && self.stage == Some(Stage::Reserved)
            && self.redrive_due(now)
    }

    /// SageMaker drops a request whose TTL passes in the queue, and without an error topic
    /// nobody hears of it: a job pending past TTL + timeout + grace is probably lost.
    pub fn probably_lost(&self, now: DateTime<Utc>) -> bool {
        self.status == JobStatus::Pending
            && matches!(self.stage, Some(Stage::Invoked | Stage::Uncertain))
            && self.redrive_due(now)
    }

    /// Whether the same idempotency key may submit this job again.
    pub fn redrivable(&self, now: DateTime<Utc>) -> bool {
        self.crashed(now)
            || self.probably_lost(now)
            || (self.status == JobStatus::Failed && self.stage == Some(Stage::Refused))
    }

    /// What a status check says beside the status, when there is something to say.
    pub fn status_message(&self, now: DateTime<Utc>) -> Option<String> {
        if self.status != JobStatus::Pending {
            return None;
        }
        let again = "Submit it again with the same idempotency_key to re-drive it under the same \
                     inference_id (without a key, submit it as a new job).";
        Some(match self.stage {
            _ if self.crashed(now) => format!(
                "The submission stopped before SageMaker confirmed the request, so it was probably never \
                 queued. {again}"
            ),
            _ if self.probably_lost(now) => format!(
                "No outcome has arrived long after the request's TTL and invocation timeout. SageMaker drops \
                 requests that expire in its queue, and without an error topic nobody is told. {again}"
            ),
            Some(Stage::Reserved) => "The submission is still in progress.".to_owned(),
            Some(Stage::Uncertain) => uncertain_message(self.invoke_error.as_deref()),
            _ => return None,
        })
    }
}

/// What the agent is told when the invoke's outcome is unknown.
pub fn uncertain_message(error: Option<&str>) -> String {
    let cause = error.map(|e| format!(" ({e})")).unwrap_or_default();
    format!(
        "SageMaker's answer to the submission was lost{cause}, so whether the request was queued is not \
         known yet. The job stays pending: if SageMaker runs it, its outcome is recorded as usual. Check it \
         with check_job_status; if it is reported probably lost, submit again with the same idempotency_key."
    )
}

// ------------------------------------------------------------------------------ submission

/// A validated submission: what is uploaded, and how long SageMaker may take.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub inference_id: String,
    pub endpoint_name: String,
    pub input_location: S3Location,
    pub input: Vec<u8>,
    pub input_sha256: String,
    pub invocation_timeout_secs: u32,
    pub request_ttl_secs: u32,
    /// Random, stored with the job: with the inference_id it makes the job's task id.
    pub task_secret: String,
}

impl Submission {
    /// With an idempotency key the id is derived from it; without one it is random.
    pub fn new(
        endpoint_name: &str,
        io_bucket: &str,
        input: Vec<u8>,
        idempotency_key: Option<&str>,
        invocation_timeout_secs: u32,
        request_ttl_secs: u32,
    ) -> Self {
        let inference_id = match idempotency_key {
            Some(key) => inference_id_for_key(endpoint_name, key),
            None => uuid::Uuid::new_v4().to_string(),
        };
        Self {
            input_location: S3Location {
                bucket: io_bucket.to_owned(),
                key: format!("inputs/{inference_id}.json"),
            },
            inference_id,
            endpoint_name: endpoint_name.to_owned(),
            input_sha256: hex(&Sha256::digest(&input)),
            input,
            invocation_timeout_secs,
            request_ttl_secs,
            task_secret: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// Epoch seconds after which an invoked job is probably lost.
    pub fn lost_after(&self, submitted: DateTime<Utc>, policy: &JobPolicy) -> i64 {
        lost_after(
            submitted,
            self.request_ttl_secs.into(),
            self.invocation_timeout_secs.into(),
            policy.lost_grace_secs,
        )
    }
}

fn lost_after(submitted: DateTime<Utc>, request_ttl: i64, timeout: i64, grace: u64) -> i64 {
    (submitted + Duration::seconds(request_ttl + timeout + grace as i64)).timestamp()
}

/// The same key (for the same endpoint) always gives the same id, shaped like a UUID.
pub fn inference_id_for_key(endpoint_name: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("submit_job\0{endpoint_name}\0{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_sha1_bytes(bytes)
        .into_uuid()
        .to_string()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a submit call does, given what is stored under the job's id.
#[derive(Debug, Clone, PartialEq)]
pub enum SubmitPlan {
    /// Nothing live is stored: reserve the id.
    Reserve,
    /// The stored job may be submitted again: the next attempt after `seen_attempt`.
    Redrive { seen_attempt: i64 },
    /// Another call is submitting it right now: wait for it, then replay.
    InProgress,
    /// Answer with the stored job, as the first call did.
    Replay,
    /// The key was used for a different input.
    InputConflict,
}

pub fn plan_submit(stored: Option<&Job>, input_sha256: &str, now: DateTime<Utc>) -> SubmitPlan {
    let Some(job) = stored.filter(|j| !j.is_expired(now)) else {
        return SubmitPlan::Reserve;
    };
    if job.input_sha256.as_deref() != Some(input_sha256) {
        return SubmitPlan::InputConflict;
    }
    if job.redrivable(now) {
        return SubmitPlan::Redrive {
            seen_attempt: job.attempt,
        };
    }
    if job.status == JobStatus::Pending && job.stage == Some(Stage::Reserved) {
        return SubmitPlan::InProgress;
    }
    SubmitPlan::Replay
}

fn key(inference_id: &str) -> Item {
    Item::from([(attr::INFERENCE_ID.to_owned(), Attr::s(inference_id))])
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
        (attr::INPUT_LOCATION, Attr::s(s.input_location.to_string())),
        (attr::REQUEST_TTL_SECS, Attr::N(s.request_ttl_secs.into())),
        (
            attr::INVOCATION_TIMEOUT_SECS,
            Attr::N(s.invocation_timeout_secs.into()),
        ),
        (attr::INPUT_SHA256, Attr::s(&s.input_sha256)),
        (attr::TASK_SECRET, Attr::s(&s.task_secret)),
        (
            attr::REDRIVE_AFTER,
            Attr::N(ttl_after(now, policy.submit_crash_after_secs)),
        ),
        (attr::TTL, Attr::N(ttl)),
    ]
    .into_iter()
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
pub fn mark_invoked(inference_id: &str, attempt: i64, at: &Locations, lost_after: i64) -> Write {
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
pub fn mark_uncertain(inference_id: &str, attempt: i64, error: &str, lost_after: i64) -> Write {
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
    inference_id: &str,
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

// ------------------------------------------------------------------------------ outcomes

/// Everything one outcome (a notification, or what S3 shows) writes to the results table.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRecord {
    pub inference_id: String,
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

/// A job's MCP task id: its inference_id and its random secret. A task id is a bearer handle:
/// whoever holds it may read and cancel the job, so it is unguessable and never logged whole.
pub fn task_id(inference_id: &str, secret: &str) -> String {
    format!("{inference_id}.{secret}")
}

/// The inference_id and secret of a task id (inference ids hold no `.`).
pub fn parse_task_id(task_id: &str) -> Option<(&str, &str)> {
    task_id
        .rsplit_once('.')
        .filter(|(id, secret)| !id.is_empty() && secret.len() >= 32)
}

/// Whether `secret` is the job's, compared in constant time.
pub fn task_secret_matches(job: &Job, secret: &str) -> bool {
    secrets_match(job.task_secret.as_deref(), secret)
}

/// A stored task secret against a given one, in constant time; no stored secret matches nothing.
pub fn secrets_match(stored: Option<&str>, secret: &str) -> bool {
    let Some(stored) = stored else {
        return false;
    };
    stored.len() == secret.len()
        && stored
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// The client cancelled a pending job. SageMaker cannot stop an async request, so it may still
/// run; being terminal, `cancelled` keeps its later outcome out (record_outcome refuses).
pub fn cancel(inference_id: &str, result_ttl_secs: u64, now: DateTime<Utc>) -> Write {
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

pub const CANCELLED_REASON: &str =
    "Cancelled by the client. SageMaker cannot stop an asynchronous \
    request once queued: it may still run, and what it reports is not recorded for this job.";

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

/// Where a status check looks in S3 for an outcome whose notification did not arrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Output(S3Location),
    Failure(S3Location),
}

/// At most one probe per status check, for a job pending past the threshold whose locations
/// are known. With both known, successive threshold periods alternate between them.
pub fn reconcile_probe(job: &Job, policy: &JobPolicy, now: DateTime<Utc>) -> Option<Probe> {
    if job.status != JobStatus::Pending || job.stage != Some(Stage::Invoked) {
        return None;
    }
    let submitted = job.submitted_at.as_deref().and_then(parse_rfc3339)?;
    let age = (now - submitted).num_seconds();
    let every = policy.reconcile_after_secs.max(1) as i64;
    if age < every {
        return None;
    }
    let output = job.output_location.as_deref().and_then(|l| l.parse().ok());
    let failure = job.failure_location.as_deref().and_then(|l| l.parse().ok());
    match (output, failure) {
        (Some(o), Some(f)) => Some(if (age / every) % 2 == 1 {
            Probe::Output(o)
        } else {
            Probe::Failure(f)
        }),
        (Some(o), None) => Some(Probe::Output(o)),
        (None, Some(f)) => Some(Probe::Failure(f)),
        (None, None) => None,
    }
}

/// The output as a JSON value to store inline, or `None` when it must be a pointer: not JSON,
/// larger than `max` as text or once stored, nested deeper than DynamoDB allows, or holding a
/// number or key DynamoDB cannot store.
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
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        parse_rfc3339(s).unwrap()
    }

    fn submission() -> Submission {
        Submission::new(
            "ep",
            "bucket",
            b"{\"inputs\":\"a\"}".to_vec(),
            Some("k1"),
            300,
            600,
        )
    }

    const POLICY: JobPolicy = JobPolicy {
        result_ttl_secs: 3600,
        submit_crash_after_secs: 60,
        lost_grace_secs: 120,
        reconcile_after_secs: 30,
    };

    /// Applies writes in order to one stored item, as a store would.
    fn run(writes: &[Write]) -> (Option<Item>, Vec<bool>) {
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

    fn job(item: &Option<Item>) -> Job {
        Job::from_item(item.as_ref().unwrap()).unwrap()
    }

    fn outcome(id: &str, status: JobStatus) -> OutcomeRecord {
        OutcomeRecord {
            inference_id: id.into(),
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

    #[test]
    fn reserved_then_invoked_stores_both_locations() {
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let locations = Locations {
            output_location: Some("s3://b/out".into()),
            failure_location: Some("s3://b/fail".into()),
        };
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
            record_outcome(&outcome(&s.inference_id, JobStatus::Completed)),
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
            record_outcome(&outcome(&s.inference_id, JobStatus::Completed)),
        ]);
        assert_eq!(applied, [true, true, false]);
    }

    #[test]
    fn a_fast_outcome_before_the_invoke_answer_still_gets_the_locations() {
        let s = submission();
        let now = at("2026-11-20T10:00:00Z");
        let locations = Locations {
            output_location: Some("s3://b/out".into()),
            failure_location: Some("s3://b/fail".into()),
        };
        let (item, applied) = run(&[
            reserve(&s, &POLICY, now),
            record_outcome(&outcome(&s.inference_id, JobStatus::Completed)),
            mark_invoked(&s.inference_id, 1, &locations, 5),
        ]);
        assert_eq!(applied, [true, true, true]);
        let j = job(&item);
        assert_eq!(j.status, JobStatus::Completed);
        assert_eq!(j.failure_location.as_deref(), Some("s3://b/fail"));
        // Nor does a refusal of the reserving attempt touch an outcome that arrived first.
        let (item, applied) = run(&[
            reserve(&s, &POLICY, now),
            record_outcome(&outcome(&s.inference_id, JobStatus::Completed)),
            mark_refused(&s.inference_id, 1, "PutObject failed", &POLICY, now),
        ]);
        assert_eq!(applied, [true, true, false]);
        assert_eq!(job(&item).status, JobStatus::Completed);
    }

    #[test]
    fn the_plan_follows_the_stored_state() {
        let s = submission();
        let t0 = at("2026-11-20T10:00:00Z");
        let reserved = job(&run(&[reserve(&s, &POLICY, t0)]).0);
        assert_eq!(plan_submit(None, &s.input_sha256, t0), SubmitPlan::Reserve);
        assert_eq!(
            plan_submit(Some(&reserved), &s.input_sha256, t0),
            SubmitPlan::InProgress
        );
        assert_eq!(
            plan_submit(Some(&reserved), "other", t0),
            SubmitPlan::InputConflict
        );
        // Past the crash window the reservation belongs to a crashed submission.
        let later = t0 + Duration::seconds(61);
        assert!(reserved.crashed(later));
        assert_eq!(
            plan_submit(Some(&reserved), &s.input_sha256, later),
            SubmitPlan::Redrive { seen_attempt: 1 }
        );
        let lost_after = s.lost_after(t0, &POLICY);
        let invoked = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_invoked(&s.inference_id, 1, &Locations::default(), lost_after),
        ])
        .0);
        assert_eq!(
            plan_submit(Some(&invoked), &s.input_sha256, later),
            SubmitPlan::Replay
        );
        let lost = at("2026-11-20T10:17:00Z");
        assert!(invoked.probably_lost(lost));
        assert!(!invoked.probably_lost(lost - Duration::seconds(1)));
        assert_eq!(
            plan_submit(Some(&invoked), &s.input_sha256, lost),
            SubmitPlan::Redrive { seen_attempt: 1 }
        );
        let refused = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_refused(&s.inference_id, 1, "400", &POLICY, t0),
        ])
        .0);
        assert_eq!(
            plan_submit(Some(&refused), &s.input_sha256, t0),
            SubmitPlan::Redrive { seen_attempt: 1 }
        );
        let mut expired = invoked.clone();
        expired.ttl = Some(t0.timestamp());
        assert_eq!(
            plan_submit(Some(&expired), "other", t0),
            SubmitPlan::Reserve
        );
    }

    #[test]
    fn a_redrive_needs_the_seen_attempt_and_a_redrivable_state() {
        let s = submission();
        let t0 = at("2026-11-20T10:00:00Z");
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
            record_outcome(&outcome(&s.inference_id, JobStatus::Completed)),
            redrive(&s, 1, &POLICY, later),
        ]);
        assert_eq!(applied, [true, true, false]);
        // Nor re-driven with another input.
        let other = Submission::new("ep", "bucket", b"{}".to_vec(), Some("k1"), 300, 600);
        let (_, applied) = run(&[reserve(&s, &POLICY, t0), redrive(&other, 1, &POLICY, later)]);
        assert_eq!(applied, [true, false]);
    }

    #[test]
    fn uncertain_and_crashed_jobs_say_what_happened() {
        let s = submission();
        let t0 = at("2026-11-20T10:00:00Z");
        let uncertain = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_uncertain(
                &s.inference_id,
                1,
                "InternalFailure: boom",
                s.lost_after(t0, &POLICY),
            ),
        ])
        .0);
        let message = uncertain.status_message(t0).unwrap();
        assert!(
            message.contains("not known") && message.contains("InternalFailure: boom"),
            "{message}"
        );
        assert!(!uncertain.probably_lost(t0));
        let reserved = job(&run(&[reserve(&s, &POLICY, t0)]).0);
        assert!(reserved
            .status_message(t0 + Duration::seconds(61))
            .unwrap()
            .contains("same idempotency_key"));
    }

    #[test]
    fn probes_start_after_the_threshold_and_alternate() {
        let s = submission();
        let t0 = at("2026-11-20T10:00:00Z");
        let locations = Locations {
            output_location: Some("s3://b/out".into()),
            failure_location: Some("s3://b/fail".into()),
        };
        let invoked = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_invoked(&s.inference_id, 1, &locations, 5),
        ])
        .0);
        assert_eq!(
            reconcile_probe(&invoked, &POLICY, t0 + Duration::seconds(29)),
            None
        );
        let out: S3Location = "s3://b/out".parse().unwrap();
        let fail: S3Location = "s3://b/fail".parse().unwrap();
        assert_eq!(
            reconcile_probe(&invoked, &POLICY, t0 + Duration::seconds(30)),
            Some(Probe::Output(out))
        );
        assert_eq!(
            reconcile_probe(&invoked, &POLICY, t0 + Duration::seconds(60)),
            Some(Probe::Failure(fail))
        );
        let reserved = job(&run(&[reserve(&s, &POLICY, t0)]).0);
        assert_eq!(
            reconcile_probe(&reserved, &POLICY, t0 + Duration::days(1)),
            None
        );
    }

    #[test]
    fn items_written_before_stages_read_as_invoked() {
        let item: Item = [
            ("inference_id", Attr::s("old")),
            ("status", Attr::s("pending")),
            ("submitted_at", Attr::s("2026-11-20T10:00:00.000Z")),
            ("request_ttl_secs", Attr::N(600)),
            ("invocation_timeout_secs", Attr::N(300)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let j = Job::from_item(&item).unwrap();
        assert_eq!(j.stage, Some(Stage::Invoked));
        assert!(j.probably_lost(at("2026-11-20T10:17:00Z")));
        assert!(!j.probably_lost(at("2026-11-20T10:16:59Z")));
        let mut bad = item.clone();
        bad.insert("status".into(), Attr::s("weird"));
        assert!(Job::from_item(&bad).is_err());
    }

    #[test]
    fn the_same_key_gives_the_same_id_per_endpoint() {
        assert_eq!(inference_id_for_key("ep", "k1"), submission().inference_id);
        assert_ne!(
            inference_id_for_key("ep", "k1"),
            inference_id_for_key("other", "k1")
        );
        assert_ne!(
            inference_id_for_key("ep", "k1"),
            inference_id_for_key("ep", "k2")
        );
        assert_eq!(
            submission().input_location.to_string(),
            format!("s3://bucket/inputs/{}.json", submission().inference_id)
        );
    }

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
}
