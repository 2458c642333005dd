//! Use cases: each entry point calls one of these. Generic over the ports, so they are tested
//! with the fakes and run in production with the AWS adapters.

use std::time::Duration;

use domain::job::JobPolicy;

pub mod answer;
pub mod approval;
pub mod callback;
pub mod check;
pub mod events;
pub mod job_object;
pub mod lineage;
pub mod listen;
pub mod outcome;
pub mod quota;
pub mod route;
pub mod submit;
pub mod task;
pub mod training;

/// An inline result is paid for by size: its completing write costs a write unit per KB, and
/// every status check that reads it a read unit per 4 KB. At 4 KiB the largest inline item is a
/// few units; past that a pointer (one small write, and one S3 GET if the output is fetched) is
/// cheaper. BENCHMARKS.md has the figures.
pub const DEFAULT_INLINE_RESULT_MAX_BYTES: u64 = 4 * 1024;

/// What the job use cases are told by configuration: one value per function, built once at
/// cold start (`ToolsConfig::job_settings`, `NotificationHandlerConfig::job_settings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSettings {
    /// The lifecycle's timing rules, the outcomes' TTL among them.
    pub policy: JobPolicy,
    /// The largest output stored inline in the item; a larger one is stored as a pointer.
    pub inline_result_max_bytes: u64,
    /// How long a call with an idempotency key waits for a concurrent first call's answer.
    pub in_progress_wait: Duration,
}

impl Default for JobSettings {
    fn default() -> Self {
        Self {
            policy: JobPolicy::default(),
            inline_result_max_bytes: DEFAULT_INLINE_RESULT_MAX_BYTES,
            in_progress_wait: Duration::from_secs(5),
        }
    }
}
