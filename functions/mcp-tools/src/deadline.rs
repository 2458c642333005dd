//! How long a call may wait: the time left until the invocation's Lambda deadline, less a
//! margin for the reply.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lambda_http::RequestExt;
use rmcp::model::Extensions;

/// Kept free of a long poll so the reply leaves before the Lambda times out.
const WAIT_MARGIN: Duration = Duration::from_secs(3);

/// Time left in this invocation, when the runtime gives a real deadline. The Lambda context
/// comes inside the HTTP request (Function URL), or on its own (other front doors, see
/// [`crate::direct`]).
pub(crate) fn remaining_time(extensions: &Extensions) -> Option<Duration> {
    left_until(lambda_context(extensions)?.deadline)
}

/// Time left until a deadline in epoch milliseconds, now (see [`time_left`]).
pub(crate) fn left_until(deadline_ms: u64) -> Option<Duration> {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    time_left(deadline_ms, now_ms)
}

/// The Lambda context, on the request's parts, where both doors put it.
pub(crate) fn lambda_context(extensions: &Extensions) -> Option<&lambda_http::Context> {
    extensions
        .get::<http::request::Parts>()?
        .extensions
        .lambda_context_ref()
}

/// From a deadline in epoch milliseconds. Local emulators pass a duration there instead, far
/// below any epoch time of this century: no deadline is known then.
fn time_left(deadline_ms: u64, now_ms: u64) -> Option<Duration> {
    (deadline_ms >= 1_000_000_000_000)
        .then(|| Duration::from_millis(deadline_ms.saturating_sub(now_ms)))
}

/// The wait asked for, cut so the reply leaves [`WAIT_MARGIN`] before the invocation ends.
pub(crate) fn wait_within(asked: Duration, left: Option<Duration>) -> Duration {
    left.map_or(asked, |left| asked.min(left.saturating_sub(WAIT_MARGIN)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_deadline_bounds_the_wait_and_an_emulators_duration_does_not() {
        let now_ms = 1_780_000_000_000;
        assert_eq!(
            time_left(now_ms + 10_000, now_ms),
            Some(Duration::from_secs(10))
        );
        assert_eq!(time_left(now_ms - 1, now_ms), Some(Duration::ZERO));
        // cargo lambda watch passes the function's timeout as a duration.
        assert_eq!(time_left(30_000, now_ms), None);
        let asked = Duration::from_secs(20);
        assert_eq!(wait_within(asked, None), asked);
        assert_eq!(
            wait_within(asked, Some(Duration::from_secs(10))),
            Duration::from_secs(7)
        );
        assert_eq!(
            wait_within(asked, Some(Duration::from_secs(60))),
            asked,
            "time to spare"
        );
        assert_eq!(
            wait_within(asked, Some(Duration::from_secs(2))),
            Duration::ZERO
        );
    }
}
