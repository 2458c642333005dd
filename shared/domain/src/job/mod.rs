//! An async inference job, by concern:
//! - [`state`]: statuses, stages, the timing rules, and the decoded record (with the migration
//!   of items written before stages existed);
//! - [`transition`]: every change of state as one conditional write;
//! - [`submission`]: a validated submission, the id a key derives, and the submit plan;
//! - [`reconcile`]: where a status check looks in S3 for a lost outcome;
//! - [`task`]: the job's MCP task id and its secret;
//! - [`condition`]: what a pending job's record says beyond its status;
//! - [`object`]: its output and failure detail, and the resource URIs that name them.
//!
//! The names most callers need are re-exported here.

pub mod condition;
pub mod object;
pub mod reconcile;
pub mod state;
pub mod submission;
pub mod task;
pub mod transition;

#[cfg(test)]
mod test_support;

pub use condition::{PendingCondition, CANCELLED_REASON};
pub use reconcile::{reconcile_probe, Probe};
pub use state::{attr, BadJobItem, Job, JobPolicy, JobStatus, Stage};
pub use submission::{
    inference_id_for_key, plan_submit, Submission, SubmitPlan, DEFAULT_CONTENT_TYPE,
    INLINE_INPUT_MAX_BYTES,
};
pub use task::{new_task_secret, parse_task_id, secrets_match, task_id, task_secret_matches};
pub use transition::{
    cancel, failure_excerpt, mark_invoked, mark_refused, mark_uncertain, record_outcome, redrive,
    reserve, Locations, OutcomeRecord, MAX_FAILURE_EXCERPT_BYTES, MAX_FAILURE_REASON_BYTES,
    MAX_LOCATION_BYTES,
};
