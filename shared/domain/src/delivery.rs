//! One event's delivery to one webhook subscription (MCP Events): the message that carries it
//! through the delivery queue, what the receiver's answer means, how long a failed delivery
//! waits before its next attempt, and how a subscription's delivery status follows.
//!
//! The extension's rules: a 2xx is delivered; 410 and 413 end that delivery (not the
//! subscription) and are not retried; anything else, a timeout or no connection is retried.
//! Redirects are never followed: a 3xx is a failure like a 4xx.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde_json::{json, Value};

use crate::caller::Owner;
use crate::events::{Cursor, Event};

/// Why a delivery (or a callback's verification) failed, in the extension's categories: never
/// the receiver's body, headers or status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    ConnectionRefused,
    Timeout,
    TlsError,
    Http4xx,
    Http5xx,
    ChallengeFailed,
}

impl Failure {
    pub const ALL: [Failure; 6] = [
        Self::ConnectionRefused,
        Self::Timeout,
        Self::TlsError,
        Self::Http4xx,
        Self::Http5xx,
        Self::ChallengeFailed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ConnectionRefused => "connection_refused",
            Self::Timeout => "timeout",
            Self::TlsError => "tls_error",
            Self::Http4xx => "http_4xx",
            Self::Http5xx => "http_5xx",
            Self::ChallengeFailed => "challenge_failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == text)
    }

    /// The category of a receiver's non-2xx status.
    pub fn of_status(status: u16) -> Self {
        match status {
            500..=599 => Self::Http5xx,
            _ => Self::Http4xx,
        }
    }
}

/// What a receiver did with one POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// It answered with this status.
    Status(u16),
    /// It gave no answer: no connection, no TLS, or not in time.
    Failed(Failure),
}

/// What a delivery's answer means for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Not delivered and not tried again (410 Gone, 413 too large): that event only.
    Dropped(Failure),
    /// Tried again later.
    Retry(Failure),
}

pub fn verdict(answer: Answer) -> Verdict {
    match answer {
        Answer::Status(200..=299) => Verdict::Delivered,
        Answer::Status(status @ (410 | 413)) => Verdict::Dropped(Failure::of_status(status)),
        Answer::Status(status) => Verdict::Retry(Failure::of_status(status)),
        Answer::Failed(failure) => Verdict::Retry(failure),
    }
}

/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// How long the delivery waits after its `failures`-th failure in a row: `first`, doubled at
/// each failure after it, at most [`MAX_BACKOFF`].
pub fn backoff(failures: u32, first: Duration) -> Duration {
    let doublings = failures.saturating_sub(1).min(20);
    first.saturating_mul(1 << doublings).min(MAX_BACKOFF)
}

/// How a subscription's deliveries fare: the extension's `deliveryStatus`, and the count of
/// failures in a row its backoff is reckoned from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryStatus {
    /// False once it failed for longer than the deployment allows: nothing is sent until it
    /// is refreshed (`events/poll` still has every event).
    pub active: bool,
    pub failures: u32,
    pub failed_since: Option<DateTime<Utc>>,
    pub last_delivery_at: Option<DateTime<Utc>>,
    pub last_error: Option<Failure>,
}

impl Default for DeliveryStatus {
    fn default() -> Self {
        Self {
            active: true,
            failures: 0,
            failed_since: None,
            last_delivery_at: None,
            last_error: None,
        }
    }
}

/// How stale a recorded `lastDeliveryAt` may grow before a delivery writes it again: a
/// write per delivery would cost more than the delivery.
pub const LAST_DELIVERY_GRAIN_SECS: i64 = 3600;

impl DeliveryStatus {
    /// The status after one delivery's verdict; None when nothing worth a write changed (a
    /// success after successes, within [`LAST_DELIVERY_GRAIN_SECS`] of the last recorded).
    /// A subscription failing for `pause_after` without a break is paused.
    pub fn after(
        &self,
        verdict: Verdict,
        now: DateTime<Utc>,
        pause_after: Duration,
    ) -> Option<DeliveryStatus> {
        // To the millisecond, as it is stored.
        let now = now.trunc_subsecs(3);
        let mut next = self.clone();
        match verdict {
            Verdict::Delivered => {
                let recent = self
                    .last_delivery_at
                    .is_some_and(|at| (now - at).num_seconds() < LAST_DELIVERY_GRAIN_SECS);
                if self.failures == 0 && recent {
                    return None;
                }
                next.failures = 0;
                next.failed_since = None;
                next.last_delivery_at = Some(now);
            }
            Verdict::Dropped(failure) => {
                if self.last_error == Some(failure) {
                    return None;
                }
                next.last_error = Some(failure);
            }
            Verdict::Retry(failure) => {
                next.failures = self.failures.saturating_add(1);
                next.last_error = Some(failure);
                let since = *next.failed_since.get_or_insert(now);
                let failing = (now - since).to_std().unwrap_or_default();
                if failing >= pause_after {
                    next.active = false;
                }
            }
        }
        Some(next)
    }

    /// The extension's `deliveryStatus` object.
    pub fn to_wire(&self) -> Value {
        let time =
            |t: &Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true));
        let mut wire = json!({
            "active": self.active,
            "lastDeliveryAt": time(&self.last_delivery_at),
            "lastError": self.last_error.map(Failure::as_str),
        });
        if let Some(since) = time(&self.failed_since) {
            wire["failedSince"] = Value::String(since);
        }
        wire
    }
}

/// One event on its way to one subscription, as the delivery queue carries it: the body is
/// the event (an `EventOccurrence`) with the cursor just after it, the receiver's
/// safe-to-persist watermark (the subscription's earlier events are in the queue's order
/// before it: delivered, or given up).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The subscription's owner and id: where its URL and secret are read.
    pub owner: Owner,
    pub subscription_id: String,
    pub event_id: String,
    pub occurrence: Value,
    /// Not to be tried before this (a first try that failed waits its backoff in the queue);
    /// None: at once.
    pub due: Option<DateTime<Utc>>,
}

/// A queued message that is not a delivery this code wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the message is not a delivery: {0}")]
pub struct BadDelivery(&'static str);

impl Delivery {
    pub fn of(event: &Event, owner: &Owner, subscription_id: &str) -> Self {
        let mut occurrence = event.occurrence();
        occurrence["cursor"] = Value::String(Cursor::after(event).encode());
        Self {
            owner: owner.clone(),
            subscription_id: subscription_id.to_owned(),
            event_id: event.id.clone(),
            occurrence,
            due: None,
        }
    }

    /// The same delivery, not to be tried before `due`.
    pub fn due_at(self, due: DateTime<Utc>) -> Self {
        Self {
            due: Some(due.trunc_subsecs(3)),
            ..self
        }
    }

    /// How long it still waits at `now`: None when it is due.
    pub fn wait(&self, now: DateTime<Utc>) -> Option<Duration> {
        self.due
            .and_then(|due| (due - now).to_std().ok())
            .filter(|wait| !wait.is_zero())
    }

    /// The queue's message group: one subscription's deliveries go in order, one at a time.
    pub fn group(&self) -> &str {
        &self.subscription_id
    }

    /// The queue's deduplication id: the same event queued twice for one subscription (an
    /// outcome delivered again) is one message.
    pub fn dedup_id(&self) -> String {
        format!("{}.{}", self.event_id, self.subscription_id)
    }

    pub fn to_message(&self) -> String {
        let mut message = json!({
            "v": 1,
            "owner": self.owner.as_str(),
            "subscription": self.subscription_id,
            "event": self.occurrence,
        });
        if let Some(due) = self.due {
            message["due_ms"] = Value::from(due.timestamp_millis());
        }
        message.to_string()
    }

    pub fn from_message(body: &str) -> Result<Self, BadDelivery> {
        let value: Value = serde_json::from_str(body).map_err(|_| BadDelivery("not JSON"))?;
        if value["v"] != 1 {
            return Err(BadDelivery("not version 1"));
        }
        let text = |field: &'static str| {
            value[field]
                .as_str()
                .map(str::to_owned)
                .ok_or(BadDelivery(field))
        };
        let owner = Owner::parse(&text("owner")?).ok_or(BadDelivery("owner"))?;
        let subscription_id = text("subscription")?;
        let occurrence = value["event"].clone();
        let event_id = occurrence["eventId"]
            .as_str()
            .ok_or(BadDelivery("event"))?
            .to_owned();
        let due = match &value["due_ms"] {
            Value::Null => None,
            ms => Some(
                ms.as_i64()
                    .and_then(DateTime::from_timestamp_millis)
                    .ok_or(BadDelivery("due_ms"))?,
            ),
        };
        Ok(Self {
            owner,
            subscription_id,
            event_id,
            occurrence,
            due,
        })
    }

    /// The POST's body, exactly as signed.
    pub fn body(&self) -> Vec<u8> {
        self.occurrence.to_string().into_bytes()
    }
}

/// A callback's verification: the signed challenge a new callback URL must echo before any
/// event is sent to it. Its `webhook-id` is `msg_verification_<nonce>`.
pub struct Challenge {
    pub nonce: String,
}

impl Challenge {
    pub fn new() -> Self {
        Self {
            nonce: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    pub fn webhook_id(&self) -> String {
        format!("msg_verification_{}", self.nonce)
    }

    pub fn body(&self) -> Vec<u8> {
        json!({"type": "verification", "challenge": self.nonce})
            .to_string()
            .into_bytes()
    }

    /// Whether a receiver's answer echoes the nonce (`{"challenge": "<nonce>"}`), compared in
    /// constant time.
    pub fn echoed(&self, answer: &[u8]) -> bool {
        let Ok(value) = serde_json::from_slice::<Value>(answer) else {
            return false;
        };
        let Some(echo) = value.get("challenge").and_then(Value::as_str) else {
            return false;
        };
        let (a, b) = (echo.as_bytes(), self.nonce.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
    }
}

impl Default for Challenge {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Principal;
    use crate::events::{EventName, Subject};
    use crate::ids::InferenceId;

    fn at(text: &str) -> DateTime<Utc> {
        crate::time::parse_rfc3339(text).unwrap()
    }

    #[test]
    fn a_2xx_is_delivered_410_and_413_are_dropped_and_the_rest_retried() {
        assert_eq!(verdict(Answer::Status(200)), Verdict::Delivered);
        assert_eq!(verdict(Answer::Status(204)), Verdict::Delivered);
        assert_eq!(
            verdict(Answer::Status(410)),
            Verdict::Dropped(Failure::Http4xx)
        );
        assert_eq!(
            verdict(Answer::Status(413)),
            Verdict::Dropped(Failure::Http4xx)
        );
        for (status, failure) in [
            (500, Failure::Http5xx),
            (503, Failure::Http5xx),
            (425, Failure::Http4xx),
            (404, Failure::Http4xx),
            (301, Failure::Http4xx),
        ] {
            assert_eq!(verdict(Answer::Status(status)), Verdict::Retry(failure));
        }
        assert_eq!(
            verdict(Answer::Failed(Failure::Timeout)),
            Verdict::Retry(Failure::Timeout)
        );
        for failure in Failure::ALL {
            assert_eq!(Failure::parse(failure.as_str()), Some(failure));
        }
    }

    #[test]
    fn the_wait_doubles_from_the_first_and_stops_at_an_hour() {
        let first = Duration::from_secs(10);
        let waits: Vec<u64> = (1..=11).map(|n| backoff(n, first).as_secs()).collect();
        assert_eq!(
            waits,
            [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600]
        );
        assert_eq!(backoff(u32::MAX, first), MAX_BACKOFF);
        assert_eq!(backoff(0, first), first);
    }

    #[test]
    fn a_subscription_failing_past_its_allowance_is_paused_and_a_success_resets_it() {
        let pause_after = Duration::from_secs(3 * 3600);
        let t0 = at("2026-12-06T10:00:00Z");
        let fresh = DeliveryStatus::default();
        let failed = fresh
            .after(Verdict::Retry(Failure::Http5xx), t0, pause_after)
            .unwrap();
        assert_eq!(
            (failed.active, failed.failures, failed.failed_since),
            (true, 1, Some(t0))
        );
        let later = at("2026-12-06T12:59:59Z");
        let still = failed
            .after(Verdict::Retry(Failure::Timeout), later, pause_after)
            .unwrap();
        assert_eq!(
            (still.active, still.failures, still.failed_since),
            (true, 2, Some(t0))
        );
        assert_eq!(still.last_error, Some(Failure::Timeout));
        let paused = still
            .after(
                Verdict::Retry(Failure::Timeout),
                at("2026-12-06T13:00:00Z"),
                pause_after,
            )
            .unwrap();
        assert!(!paused.active);
        let back = still.after(Verdict::Delivered, later, pause_after).unwrap();
        assert_eq!((back.failures, back.failed_since), (0, None));
        assert_eq!(back.last_delivery_at, Some(later));
        // A success after recent successes writes nothing; an hour on, it does.
        assert_eq!(back.after(Verdict::Delivered, later, pause_after), None);
        let hour_on = later + chrono::Duration::seconds(LAST_DELIVERY_GRAIN_SECS);
        assert!(back
            .after(Verdict::Delivered, hour_on, pause_after)
            .is_some());
        // A dropped delivery is noted once, and is no failure in a row.
        let dropped = back
            .after(Verdict::Dropped(Failure::Http4xx), later, pause_after)
            .unwrap();
        assert_eq!((dropped.failures, dropped.active), (0, true));
        assert_eq!(
            dropped.after(Verdict::Dropped(Failure::Http4xx), later, pause_after),
            None
        );
        let wire = paused.to_wire();
        assert_eq!(wire["active"], false);
        assert_eq!(wire["lastError"], "timeout");
        assert_eq!(wire["failedSince"], "2026-12-06T10:00:00Z");
        assert_eq!(fresh.to_wire()["lastDeliveryAt"], Value::Null);
        assert!(fresh.to_wire().get("failedSince").is_none());
    }

    #[test]
    fn a_delivery_reads_back_from_its_message_and_carries_the_cursor_after_its_event() {
        let owner = Principal::Local.caller().owner;
        let event = Event::new(
            EventName::JobEnded,
            owner.clone(),
            at("2026-12-06T10:00:00Z"),
            Subject::Job {
                inference_id: InferenceId::parse("j1").unwrap(),
                endpoint: None,
            },
            "completed",
            json!({"status": "completed"}),
        );
        let delivery = Delivery::of(&event, &owner, "sub_0123456789abcdef");
        assert_eq!(
            Delivery::from_message(&delivery.to_message()),
            Ok(delivery.clone())
        );
        assert_eq!(delivery.group(), "sub_0123456789abcdef");
        assert_eq!(
            delivery.dedup_id(),
            format!("{}.sub_0123456789abcdef", event.id)
        );
        assert!(delivery.dedup_id().len() <= 128);
        let body: Value = serde_json::from_slice(&delivery.body()).unwrap();
        assert_eq!(body["eventId"], event.id.as_str());
        assert_eq!(
            Cursor::decode(body["cursor"].as_str().unwrap()),
            Ok(Cursor::after(&event))
        );
        assert!(
            body.get("type").is_none(),
            "an event, not a control envelope"
        );
        for bad in [
            "",
            "[]",
            r#"{"v":2}"#,
            r#"{"v":1,"owner":"x","subscription":"s","event":{"eventId":"e"}}"#,
        ] {
            assert!(Delivery::from_message(bad).is_err(), "{bad}");
        }
        // A first try that failed waits in the queue until it is due, and says so.
        let now = at("2026-12-06T10:00:00Z");
        assert_eq!(delivery.wait(now), None);
        let later = delivery.clone().due_at(now + chrono::Duration::seconds(10));
        assert_eq!(
            Delivery::from_message(&later.to_message()),
            Ok(later.clone())
        );
        assert_eq!(later.wait(now), Some(Duration::from_secs(10)));
        assert_eq!(later.wait(now + chrono::Duration::seconds(11)), None);
        let mut message: Value = serde_json::from_str(&later.to_message()).unwrap();
        message["due_ms"] = json!("soon");
        assert!(Delivery::from_message(&message.to_string()).is_err());
    }

    #[test]
    fn a_challenge_is_echoed_only_with_its_own_nonce() {
        let challenge = Challenge::new();
        assert!(challenge.webhook_id().starts_with("msg_verification_"));
        let body: Value = serde_json::from_slice(&challenge.body()).unwrap();
        assert_eq!(body["type"], "verification");
        let echo = json!({"challenge": challenge.nonce}).to_string();
        assert!(challenge.echoed(echo.as_bytes()));
        let other = json!({"challenge": Challenge::new().nonce}).to_string();
        assert!(!challenge.echoed(other.as_bytes()));
        assert!(!challenge.echoed(b"ok"));
        assert!(!challenge.echoed(br#"{"challenge": 7}"#));
        assert_ne!(Challenge::new().nonce, challenge.nonce);
    }
}
