//! Submission planning: a validated submission, the id an idempotency key derives, and what
//! a submit call does given what is stored under that id.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::caller::Owner;
use crate::ids::InferenceId;
use crate::job::state::{lost_after, Job, JobPolicy, JobStatus, Stage};
use crate::job::task::new_task_secret;
use crate::s3_location::S3Location;
use crate::trace::TraceContext;
use crate::util::hex;

/// The largest input `InvokeEndpointAsync` takes inline (its `Body`); a larger one goes
/// through S3.
pub const INLINE_INPUT_MAX_BYTES: usize = 128_000;

/// What the model is told the input is, and asked to answer in, when nothing else is said.
pub const DEFAULT_CONTENT_TYPE: &str = "application/json";

/// A validated submission: what is sent, where, and how long SageMaker may take.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub inference_id: InferenceId,
    pub endpoint_name: String,
    /// Where the input is uploaded; `None` when it fits inline ([`INLINE_INPUT_MAX_BYTES`]).
    pub input_location: Option<S3Location>,
    pub input: Vec<u8>,
    pub input_sha256: String,
    /// The input's MIME type (`ContentType`) and the one asked of the output (`Accept`).
    pub content_type: String,
    pub accept: Option<String>,
    pub invocation_timeout_secs: u32,
    pub request_ttl_secs: u32,
    /// Random, stored with the job: with the inference_id it makes the job's task id.
    pub task_secret: String,
    /// Whose job it is.
    pub owner: Owner,
    /// The id derives from an idempotency key, so a job may already be stored under it.
    pub keyed: bool,
    /// The trace context of the submitting call, stored on the item it reserves.
    pub trace: Option<TraceContext>,
}

impl Submission {
    /// With an idempotency key the id is derived from it (and the owner); without one it is
    /// random. JSON in and out, unless [`Submission::with_content_type`] says otherwise.
    pub fn new(
        owner: &Owner,
        endpoint_name: &str,
        io_bucket: &str,
        input: Vec<u8>,
        idempotency_key: Option<&str>,
        invocation_timeout_secs: u32,
        request_ttl_secs: u32,
    ) -> Self {
        let inference_id = match idempotency_key {
            Some(key) => inference_id_for_key(owner, endpoint_name, key),
            None => uuid::Uuid::new_v4().to_string(),
        };
        Self {
            input_location: None,
            inference_id: inference_id.into(),
            endpoint_name: endpoint_name.to_owned(),
            input_sha256: hex(&Sha256::digest(&input)),
            input,
            content_type: DEFAULT_CONTENT_TYPE.to_owned(),
            accept: Some(DEFAULT_CONTENT_TYPE.to_owned()),
            invocation_timeout_secs,
            request_ttl_secs,
            task_secret: new_task_secret(),
            owner: owner.clone(),
            keyed: idempotency_key.is_some(),
            trace: None,
        }
        .with_inline_max(INLINE_INPUT_MAX_BYTES, io_bucket)
    }

    /// The input inline only up to `max_bytes` (at most [`INLINE_INPUT_MAX_BYTES`]; 0: every
    /// input through S3, as a deployment that keeps its inputs asks).
    pub fn with_inline_max(mut self, max_bytes: usize, io_bucket: &str) -> Self {
        let inline = self.input.len() <= max_bytes.min(INLINE_INPUT_MAX_BYTES);
        self.input_location = (!inline).then(|| S3Location {
            bucket: io_bucket.to_owned(),
            key: format!("inputs/{}.json", self.inference_id),
        });
        self
    }

    /// The input's MIME type and the one asked of the output (`None`: the model's choice).
    pub fn with_content_type(mut self, content_type: &str, accept: Option<&str>) -> Self {
        self.content_type = content_type.to_owned();
        self.accept = accept.map(str::to_owned);
        self
    }

    /// Submitted within `trace` (the submitting call's span).
    pub fn with_trace(mut self, trace: TraceContext) -> Self {
        self.trace = Some(trace);
        self
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

/// The same key (for the same owner and endpoint) always gives the same id, shaped like a
/// UUID; two callers' equal keys give unrelated ids.
pub fn inference_id_for_key(owner: &Owner, endpoint_name: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("submit_job\0{owner}\0{endpoint_name}\0{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_sha1_bytes(bytes)
        .into_uuid()
        .to_string()
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

pub fn plan_submit(stored: Option<&Job>, s: &Submission, now: DateTime<Utc>) -> SubmitPlan {
    let Some(job) = stored.filter(|j| !j.is_expired(now)) else {
        return SubmitPlan::Reserve;
    };
    // Ids derive from the owner, so another owner's job here is no replay of this caller's.
    let theirs = job.owner.as_ref() != Some(&s.owner);
    if theirs || job.input_sha256.as_deref() != Some(s.input_sha256.as_str()) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    use crate::caller::Principal;
    use crate::job::test_support::{at, job, run, start, submission, POLICY};
    use crate::job::transition::{mark_invoked, mark_refused, reserve, Locations};

    #[test]
    fn the_plan_follows_the_stored_state() {
        let (s, t0) = start();
        let reserved = job(&run(&[reserve(&s, &POLICY, t0)]).0);
        assert_eq!(plan_submit(None, &s, t0), SubmitPlan::Reserve);
        assert_eq!(plan_submit(Some(&reserved), &s, t0), SubmitPlan::InProgress);
        let other_input = Submission {
            input_sha256: "other".into(),
            ..s.clone()
        };
        assert_eq!(
            plan_submit(Some(&reserved), &other_input, t0),
            SubmitPlan::InputConflict
        );
        // Ids derive from the owner; another owner's job under this id is no replay of ours.
        let someone_else = Submission {
            owner: Principal::Bearer { name: "b".into() }.caller().owner,
            ..s.clone()
        };
        assert_eq!(
            plan_submit(Some(&reserved), &someone_else, t0),
            SubmitPlan::InputConflict
        );
        // Past the crash window the reservation belongs to a crashed submission.
        let later = t0 + Duration::seconds(61);
        assert!(reserved.crashed(later));
        assert_eq!(
            plan_submit(Some(&reserved), &s, later),
            SubmitPlan::Redrive { seen_attempt: 1 }
        );
        let lost_after = s.lost_after(t0, &POLICY);
        let invoked = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_invoked(&s.inference_id, 1, &Locations::default(), lost_after),
        ])
        .0);
        assert_eq!(plan_submit(Some(&invoked), &s, later), SubmitPlan::Replay);
        let lost = at("2026-11-20T10:17:00Z");
        assert!(invoked.probably_lost(lost));
        assert!(!invoked.probably_lost(lost - Duration::seconds(1)));
        assert_eq!(
            plan_submit(Some(&invoked), &s, lost),
            SubmitPlan::Redrive { seen_attempt: 1 }
        );
        let refused = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_refused(&s.inference_id, 1, "400", &POLICY, t0),
        ])
        .0);
        assert_eq!(
            plan_submit(Some(&refused), &s, t0),
            SubmitPlan::Redrive { seen_attempt: 1 }
        );
        let mut expired = invoked.clone();
        expired.ttl = Some(t0.timestamp());
        assert_eq!(
            plan_submit(Some(&expired), &other_input, t0),
            SubmitPlan::Reserve
        );
    }

    /// Pinned: a changed derivation would re-submit every keyed job after a deploy.
    #[test]
    fn the_key_derivation_is_pinned() {
        let local = Principal::Local.caller().owner;
        assert_eq!(
            inference_id_for_key(&local, "ep", "k1"),
            "c14bc613-a1b4-5b3a-a673-dc4b15c04d96"
        );
        assert_eq!(
            inference_id_for_key(&local, "invoice-classifier", "order-2026-11-20-0001"),
            "6e88ccc0-1c84-5dde-9940-2a4a4717b619"
        );
        assert_eq!(
            large_submission().input_location.unwrap().to_string(),
            "s3://bucket/inputs/c14bc613-a1b4-5b3a-a673-dc4b15c04d96.json"
        );
    }

    #[test]
    fn the_same_key_gives_the_same_id_per_owner_and_endpoint() {
        let local = Principal::Local.caller().owner;
        let other = Principal::Bearer { name: "b".into() }.caller().owner;
        let id = |owner, endpoint, key| inference_id_for_key(owner, endpoint, key);
        assert_eq!(submission().inference_id, id(&local, "ep", "k1"));
        assert_ne!(id(&local, "ep", "k1"), id(&local, "other", "k1"));
        assert_ne!(id(&local, "ep", "k1"), id(&local, "ep", "k2"));
        assert_ne!(id(&local, "ep", "k1"), id(&other, "ep", "k1"));
        assert_eq!(
            large_submission().input_location.unwrap().to_string(),
            format!("s3://bucket/inputs/{}.json", submission().inference_id)
        );
    }

    fn sized(len: usize) -> Submission {
        let local = Principal::Local.caller().owner;
        Submission::new(
            &local,
            "ep",
            "bucket",
            vec![b' '; len],
            Some("k1"),
            300,
            600,
        )
    }

    fn large_submission() -> Submission {
        sized(INLINE_INPUT_MAX_BYTES + 1)
    }

    #[test]
    fn an_input_of_at_most_128000_bytes_goes_inline_and_a_larger_one_through_s3() {
        assert_eq!(INLINE_INPUT_MAX_BYTES, 128_000);
        assert_eq!(sized(0).input_location, None);
        assert_eq!(sized(128_000).input_location, None);
        let large = sized(128_001);
        assert_eq!(
            large.input_location.map(|l| l.to_string()),
            Some(format!("s3://bucket/inputs/{}.json", large.inference_id))
        );
        assert_eq!(
            sized(10)
                .with_inline_max(0, "bucket")
                .input_location
                .map(|l| l.key),
            Some(format!("inputs/{}.json", sized(10).inference_id)),
            "0: every input through S3"
        );
        assert_eq!(sized(10).with_inline_max(10, "bucket").input_location, None);
        assert!(sized(11)
            .with_inline_max(10, "bucket")
            .input_location
            .is_some());
        assert!(large_submission()
            .with_inline_max(usize::MAX, "bucket")
            .input_location
            .is_some());
        let s = sized(10).with_content_type("text/csv", None);
        assert_eq!((s.content_type.as_str(), s.accept), ("text/csv", None));
        assert_eq!(
            (
                submission().content_type.as_str(),
                submission().accept.as_deref()
            ),
            ("application/json", Some("application/json"))
        );
    }
}
