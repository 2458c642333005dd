//! How long a call may wait for a job or a run to finish: the schema's bounds, the plain and the
//! streamed limit.

use crate::config::ToolsConfig;

use super::common::*;

/// The schema's bounds: the most any call may ask, streamed (Lambda's longest timeout).
/// [`allowed_wait`] holds each call to what it can have.
pub const WAIT_SECS: Bounds<u32> = Bounds {
    name: "wait_secs",
    min: 0,
    max: 900,
    default: Some(0),
};
/// The longest wait of a call without a progress token: its reply arrives all at once, and
/// clients give up on a silent request long before a Lambda would.
pub const PLAIN_WAIT_SECS_MAX: u32 = 20;
/// Left free at the end of a streamed wait, for the reads and the reply around it.
pub const STREAMED_WAIT_MARGIN_SECS: u64 = 10;

/// The longest wait of a call that asked for progress: the function's timeout less the margin.
pub fn streamed_wait_secs_max(config: &ToolsConfig) -> u32 {
    let secs = config
        .function_timeout_secs
        .saturating_sub(STREAMED_WAIT_MARGIN_SECS);
    u32::try_from(secs)
        .unwrap_or(WAIT_SECS.max)
        .clamp(PLAIN_WAIT_SECS_MAX, WAIT_SECS.max)
}

/// The wait a call may have: up to [`PLAIN_WAIT_SECS_MAX`] without a progress token, up to
/// [`streamed_wait_secs_max`] with one (its progress notifications stream while it waits).
pub fn allowed_wait(
    asked_secs: u32,
    streamed: bool,
    config: &ToolsConfig,
) -> Result<std::time::Duration, ToolError> {
    let streamed_max = streamed_wait_secs_max(config);
    if streamed && asked_secs > streamed_max {
        return Err(ToolError::invalid(format!(
            "`wait_secs` is {asked_secs}; it must be from 0 to {streamed_max} (the function's timeout, {} s, less {STREAMED_WAIT_MARGIN_SECS} s)",
            config.function_timeout_secs
        )));
    }
    if !streamed && asked_secs > PLAIN_WAIT_SECS_MAX {
        return Err(ToolError::invalid(format!(
            "`wait_secs` is {asked_secs}; without a progress token (`_meta.progressToken`) it must be from 0 to {PLAIN_WAIT_SECS_MAX}; with one, up to {streamed_max}"
        )));
    }
    Ok(std::time::Duration::from_secs(asked_secs.into()))
}
/// `wait_secs` in words, for both tools that wait.
pub(crate) fn wait_description(what: &str) -> String {
    format!(
        "Wait up to this many seconds for {what} to finish: 0 to {PLAIN_WAIT_SECS_MAX}, default 0. A \
         request that carries a progress token (`_meta.progressToken`) may wait up to the function's \
         timeout less {STREAMED_WAIT_MARGIN_SECS} s, and gets progress notifications while it waits."
    )
}

/// A status check to make: what it checks (a job's or a run's id), and how long it may wait
/// for it to finish, as asked; [`allowed_wait`] decides what the call may have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCheck<I> {
    pub id: I,
    pub wait_secs: u32,
}
