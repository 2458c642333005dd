//! MCP Events: an event logged once in its owner's log, naming each of the owner's webhook
//! subscriptions it matches; a poll of the log from a cursor; a webhook subscription made (its
//! callback verified first), refreshed and ended; one delivery sent, at its first try or from
//! the retry queue.

use std::time::Duration;

use chrono::{DateTime, Utc};

use domain::caller::Owner;
use domain::delivery::{
    backoff, verdict, Answer, Challenge, Delivery, DeliveryStatus, Failure, Verdict,
};
use domain::events::{Cursor, Event, EventName, Filter, SubscriptionKey};
use domain::item::Applied;
use domain::subscription::{Subscription, MAX_PER_CALLER};
use domain::webhook::{WebhookSecret, ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use ports::{EventLog, StoreError, SubscriptionStore, WebhookPost, Webhooks};

/// How long an event stays in its owner's log after it happened: a poll replays what is
/// younger, and a cursor older than this is answered with `truncated`.
pub const EVENT_RETENTION_SECS: i64 = 24 * 3600;

/// The header naming the subscription a POST is for (the extension's).
pub const SUBSCRIPTION_HEADER: &str = "X-MCP-Subscription-Id";

/// What publishing one event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// This call logged it (false: it was logged already, the same outcome delivered again).
    pub logged: bool,
    /// The webhook subscriptions it names, for the table's stream to hand to the delivery
    /// function.
    pub subscribers: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("the event was not logged: {0}")]
    Log(#[source] StoreError),
    #[error("the event's subscriptions were not read: {0}")]
    Subscriptions(#[source] StoreError),
}

/// Logs `event` once in its owner's log (kept [`EVENT_RETENTION_SECS`] after it happened),
/// naming each live webhook subscription of the owner's that it matches. The one write is
/// both: the log `events/poll` reads, and (through the table's stream, when it names any
/// subscription) the delivery function's work. A retried call, the same outcome delivered
/// again, finds it logged and adds nothing; a call that failed is retried whole.
pub async fn publish<L: EventLog, S: SubscriptionStore>(
    log: &L,
    subscriptions: Option<&S>,
    event: &Event,
    now: DateTime<Utc>,
) -> Result<Published, PublishError> {
    let deliver_to: Vec<String> = match subscriptions {
        // Past the extension's bound a body is not sent whole: polled only (none is, by
        // construction: the largest event is a few KB).
        Some(_) if !event.fits() => Vec::new(),
        Some(store) => store
            .of_owner(&event.owner)
            .await
            .map_err(PublishError::Subscriptions)?
            .iter()
            .filter(|s| hears(s, event, now))
            .map(Subscription::id)
            .collect(),
        None => Vec::new(),
    };
    let keep_until = event.at.timestamp() + EVENT_RETENTION_SECS;
    let logged = matches!(
        log.append(event, &deliver_to, keep_until)
            .await
            .map_err(PublishError::Log)?,
        Applied::Written { .. }
    );
    Ok(Published {
        logged,
        subscribers: if logged { deliver_to.len() } else { 0 },
    })
}

/// Where a completion path's events go: its log, and (when webhooks are deployed) the owner's
/// subscriptions each event names.
pub struct Subscribers<L, S> {
    pub log: L,
    pub subscriptions: Option<S>,
}

/// Publishing an event, as a completion path holds it (one type to name, whatever its parts).
pub trait Publish: Sync {
    fn publish(
        &self,
        event: &Event,
        now: DateTime<Utc>,
    ) -> impl std::future::Future<Output = Result<Published, PublishError>> + Send;
}

impl<L: EventLog, S: SubscriptionStore> Publish for Subscribers<L, S> {
    async fn publish(&self, event: &Event, now: DateTime<Utc>) -> Result<Published, PublishError> {
        publish(&self.log, self.subscriptions.as_ref(), event, now).await
    }
}

/// Whether a subscription is sent `event`: live, verified, not paused, of its type, and its
/// filter keeps it.
fn hears(subscription: &Subscription, event: &Event, now: DateTime<Utc>) -> bool {
    let key = &subscription.key;
    !subscription.lapsed(now)
        && subscription.verified
        && subscription.status.active
        && key.name == event.name
        && Filter::parse(key.name, &key.arguments).is_ok_and(|f| f.matches(event))
}

/// One poll's ask: the events of a type its filter keeps, after a cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct PollAsk {
    pub name: EventName,
    pub filter: Filter,
    /// None: start from now (no events, a fresh cursor).
    pub cursor: Option<Cursor>,
    /// Replay nothing older than this.
    pub max_age: Option<Duration>,
    pub max_events: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Polled {
    pub events: Vec<Event>,
    /// Where the next poll resumes.
    pub cursor: Cursor,
    /// The read started later than the cursor given (older than the log keeps, or than
    /// `max_age`): events may have been missed.
    pub truncated: bool,
    /// More may be waiting: poll again at once.
    pub has_more: bool,
}

/// How long after it happened an event is given to pollers: an outcome is logged a moment
/// after it happened (SageMaker's notification, SNS, the handler), and a cursor never passes a
/// moment whose events may still be coming, so none is skipped and none is given twice. (One
/// logged later than this, a delivery retried after a failure, reaches webhooks, and pollers
/// whose cursor is behind it.)
pub const POLL_SETTLE: Duration = Duration::from_secs(5);

/// How many logged events one poll reads at most (its filter may keep fewer).
pub const POLL_READ_PAGE: u32 = 100;
/// The most events one poll returns.
pub const MAX_POLL_EVENTS: u32 = 100;

/// `owner`'s events of the asked type after the cursor that happened at least
/// [`POLL_SETTLE`] ago, oldest first: one strongly consistent read of at most
/// [`POLL_READ_PAGE`] of the owner's events, so a poll costs a known amount whatever its
/// filter keeps.
pub async fn poll<L: EventLog>(
    log: &L,
    owner: &Owner,
    ask: &PollAsk,
    now: DateTime<Utc>,
) -> Result<Polled, StoreError> {
    let settle = chrono::Duration::from_std(POLL_SETTLE).unwrap_or_default();
    let settled = now - settle;
    let Some(cursor) = &ask.cursor else {
        return Ok(Polled {
            events: Vec::new(),
            cursor: Cursor::at(settled),
            truncated: false,
            has_more: false,
        });
    };
    let mut floor = now - chrono::Duration::seconds(EVENT_RETENTION_SECS);
    if let Some(max_age) = ask.max_age {
        floor =
            floor.max(now - chrono::Duration::from_std(max_age).unwrap_or(chrono::Duration::MAX));
    }
    let (start, truncated) = match cursor.at_ms < floor.timestamp_millis() {
        true => (Cursor::at(floor), true),
        false => (cursor.clone(), false),
    };
    let read = log.read(owner, Some(&start), POLL_READ_PAGE, now).await?;
    let max_events = ask.max_events.clamp(1, MAX_POLL_EVENTS) as usize;
    let mut events = Vec::new();
    let mut next = start;
    let mut has_more = read.len() as u32 >= POLL_READ_PAGE;
    for (i, event) in read.iter().enumerate() {
        if event.at > settled {
            // Not settled yet: it and what follows are the next poll's.
            has_more = false;
            break;
        }
        next = Cursor::after(event);
        if event.name == ask.name && ask.filter.matches(event) {
            events.push(event.clone());
            if events.len() == max_events {
                has_more |= i + 1 < read.len();
                break;
            }
        }
    }
    Ok(Polled {
        events,
        cursor: next,
        truncated,
        has_more,
    })
}

/// A webhook subscription asked for (or refreshed: the same key).
#[derive(Debug, Clone)]
pub struct SubscribeAsk {
    pub key: SubscriptionKey,
    pub secret: WebhookSecret,
    /// The lifetime granted (`domain::subscription::grant`).
    pub ttl: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subscribed {
    pub subscription: Subscription,
    /// How its deliveries fared before this refresh (None: it is new).
    pub prior_status: Option<DeliveryStatus>,
    /// It was live and delivering until this refresh (not new, lapsed or paused): nothing was
    /// passed over.
    pub was_delivering: bool,
    /// The watermark to keep: delivery starts from now.
    pub cursor: Cursor,
}

#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    #[error("this caller holds {max} subscriptions, the most it may")]
    TooMany { max: usize },
    /// The callback did not answer the challenge: nothing is stored.
    #[error("the callback was not verified: {}", .0.as_str())]
    Callback(Failure),
    #[error("another subscribe of the same key changed it meanwhile; try again")]
    Raced,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Makes or refreshes a webhook subscription. A callback URL the owner has not verified yet is
/// sent a signed challenge first (with the secret given) and must echo it; nothing is stored
/// when it does not. At most [`MAX_PER_CALLER`] live subscriptions per owner.
pub async fn subscribe<S: SubscriptionStore, W: Webhooks>(
    store: &S,
    webhooks: &W,
    ask: SubscribeAsk,
    now: DateTime<Utc>,
) -> Result<Subscribed, SubscribeError> {
    let id = ask.key.id();
    let existing = store.of_owner(&ask.key.owner).await?;
    let prior = existing.iter().find(|s| s.id() == id);
    let live_others = existing
        .iter()
        .filter(|s| s.id() != id && !s.lapsed(now))
        .count();
    if live_others >= MAX_PER_CALLER {
        return Err(SubscribeError::TooMany {
            max: MAX_PER_CALLER,
        });
    }
    let verified = existing
        .iter()
        .any(|s| s.key.url == ask.key.url && s.verified && (s.id() == id || !s.lapsed(now)));
    if !verified {
        verify(webhooks, &ask, &id, now).await?;
    }
    let mut subscription = match prior {
        Some(prior) => prior.refreshed(ask.secret, now, ask.ttl),
        None => Subscription::new(ask.key, ask.secret, now, ask.ttl),
    };
    subscription.verified = true;
    match store.write(&subscription.put(prior)).await? {
        Applied::Written { .. } => Ok(Subscribed {
            subscription,
            prior_status: prior.map(|p| p.status.clone()),
            was_delivering: prior.is_some_and(|p| !p.lapsed(now) && p.status.active),
            cursor: Cursor::at(now),
        }),
        Applied::Refused(_) => Err(SubscribeError::Raced),
    }
}

/// The challenge: a signed `{"type":"verification","challenge":<nonce>}` POST, answered 2xx
/// with `{"challenge":<nonce>}`.
async fn verify<W: Webhooks>(
    webhooks: &W,
    ask: &SubscribeAsk,
    id: &str,
    now: DateTime<Utc>,
) -> Result<(), SubscribeError> {
    let challenge = Challenge::new();
    let body = challenge.body();
    let webhook_id = challenge.webhook_id();
    let timestamp = now.timestamp();
    let signature = ask.secret.sign(&webhook_id, timestamp, &body);
    let post = signed_post(&ask.key.url, id, webhook_id, timestamp, signature, body);
    let reply = webhooks.post(&post).await;
    match reply.answer {
        Answer::Status(200..=299) if challenge.echoed(&reply.body) => Ok(()),
        Answer::Status(200..=299) => Err(SubscribeError::Callback(Failure::ChallengeFailed)),
        Answer::Status(status) => Err(SubscribeError::Callback(Failure::of_status(status))),
        Answer::Failed(failure) => Err(SubscribeError::Callback(failure)),
    }
}

fn signed_post(
    url: &str,
    subscription_id: &str,
    webhook_id: String,
    timestamp: i64,
    signature: String,
    body: Vec<u8>,
) -> WebhookPost {
    WebhookPost {
        url: url.to_owned(),
        headers: vec![
            (ID_HEADER, webhook_id),
            (TIMESTAMP_HEADER, timestamp.to_string()),
            (SIGNATURE_HEADER, signature),
            (SUBSCRIPTION_HEADER, subscription_id.to_owned()),
        ],
        body,
    }
}

/// Ends a subscription, by its key; whether there was one.
pub async fn unsubscribe<S: SubscriptionStore>(
    store: &S,
    key: &SubscriptionKey,
) -> Result<bool, StoreError> {
    store.delete(&key.owner, &key.id()).await
}

/// How deliveries are retried, from the deployment's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliverySettings {
    /// The first retry's wait; each next one doubles.
    pub retry_first: Duration,
    /// How long a subscription fails without a break before it is paused.
    pub pause_after: Duration,
}

/// Why a delivery was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The subscription was ended.
    Gone,
    /// Its grant ran out.
    Lapsed,
    /// It failed too long and waits for a refresh.
    Paused,
}

/// Which try of a delivery this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Straight from the log's stream: not sent while the subscription has earlier
    /// deliveries waiting in the retry queue ([`Delivered::Behind`]).
    First,
    /// From the retry queue, in the subscription's order.
    Queued,
}

/// What one delivery did; every case but `Retry` and `Behind` is done with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    Sent,
    /// Not sent: the subscription is failing, so its earlier deliveries wait in the retry
    /// queue; this one goes behind them, to keep the subscription's order.
    Behind,
    Skipped(Skip),
    /// The receiver refused this event for good (410, 413).
    Dropped(Failure),
    /// It failed: try again after this long.
    Retry {
        after: Duration,
        failure: Failure,
    },
    /// It failed, and the subscription failed too long: paused, this event given up (a poll
    /// still has it).
    Paused(Failure),
}

/// Sends one delivery: the subscription read, the event signed with its secret (and the one
/// it replaced, during the grace), POSTed, and the answer recorded on the subscription when it
/// changes its status.
pub async fn deliver<S: SubscriptionStore, W: Webhooks>(
    store: &S,
    webhooks: &W,
    delivery: &Delivery,
    attempt: Attempt,
    settings: DeliverySettings,
    now: DateTime<Utc>,
) -> Result<Delivered, StoreError> {
    let Some(subscription) = store
        .get(&delivery.owner, &delivery.subscription_id)
        .await?
    else {
        return Ok(Delivered::Skipped(Skip::Gone));
    };
    if subscription.lapsed(now) {
        return Ok(Delivered::Skipped(Skip::Lapsed));
    }
    if !subscription.status.active || !subscription.verified {
        return Ok(Delivered::Skipped(Skip::Paused));
    }
    if attempt == Attempt::First && subscription.status.failures > 0 {
        return Ok(Delivered::Behind);
    }
    let body = delivery.body();
    let timestamp = now.timestamp();
    let signature = subscription.signatures(&delivery.event_id, timestamp, &body, now);
    let post = signed_post(
        &subscription.key.url,
        &delivery.subscription_id,
        delivery.event_id.clone(),
        timestamp,
        signature,
        body,
    );
    let verdict = verdict(webhooks.post(&post).await.answer);
    let status = subscription
        .status
        .after(verdict, now, settings.pause_after);
    if let Some(status) = &status {
        // Refused: ended or made anew meanwhile; the answer stands either way.
        store.write(&subscription.record(status)).await?;
    }
    Ok(match verdict {
        Verdict::Delivered => Delivered::Sent,
        Verdict::Dropped(failure) => Delivered::Dropped(failure),
        Verdict::Retry(failure) => match status {
            Some(s) if !s.active => Delivered::Paused(failure),
            Some(s) => Delivered::Retry {
                after: backoff(s.failures, settings.retry_first),
                failure,
            },
            None => Delivered::Retry {
                after: settings.retry_first,
                failure,
            },
        },
    })
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
