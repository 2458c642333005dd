//! A webhook subscription (MCP Events): whose it is, where its events go, which events, the
//! client's signing secret, how long it is granted, whether its callback answered the
//! challenge, and how its deliveries fare. Keyed as the extension keys it (owner, URL, event,
//! arguments): a refresh is the same key, so the same item and id.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};

use crate::caller::Owner;
use crate::delivery::{DeliveryStatus, Failure};
use crate::events::{canonical_json, EventName, SubscriptionKey};
use crate::item::{Attr, Change, Fields, Guard, Item, Write, WriteOp};
use crate::time::parse_rfc3339;
use crate::webhook::WebhookSecret;

/// The subscriptions table's attributes: one partition per owner, an item per subscription id.
pub mod attr {
    pub const OWNER: &str = "owner";
    pub const ID: &str = "id";
    pub const URL: &str = "url";
    pub const NAME: &str = "name";
    /// The arguments as canonical JSON (the key's form).
    pub const ARGUMENTS: &str = "arguments";
    /// The client's secret, its bytes base64-encoded (the table is encrypted at rest).
    pub const SECRET: &str = "secret";
    /// The secret a refresh replaced, signed with beside the new one until `previous_until`.
    pub const PREVIOUS_SECRET: &str = "previous_secret";
    pub const PREVIOUS_UNTIL: &str = "previous_until";
    pub const REFRESH_BEFORE: &str = "refresh_before";
    pub const CREATED_AT: &str = "created_at";
    pub const VERIFIED: &str = "verified";
    pub const ACTIVE: &str = "active";
    pub const FAILURES: &str = "failures";
    pub const FAILED_SINCE: &str = "failed_since";
    pub const LAST_DELIVERY_AT: &str = "last_delivery_at";
    pub const LAST_ERROR: &str = "last_error";
    pub const TTL: &str = "ttl";
}

/// A subscription's grant when the client suggests none (`ttlMs` absent).
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// A shorter suggestion is raised to this.
pub const MIN_TTL: Duration = Duration::from_secs(60);
/// The longest grant, also for a client that asks for no expiry (`ttlMs: null`).
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// The most live subscriptions one caller holds.
pub const MAX_PER_CALLER: usize = 20;
/// How long a refresh that changed the secret signs with the old one too.
pub const SECRET_GRACE: Duration = Duration::from_secs(600);
/// How long a lapsed subscription's item stays (its status is reported to a late refresh)
/// before DynamoDB deletes it.
const KEPT_AFTER_LAPSE_SECS: i64 = 24 * 3600;
/// The longest callback URL taken.
pub const MAX_URL_CHARS: usize = 2048;

/// What a client suggested for its subscription's lifetime (`ttlMs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlAsked {
    /// Absent: the server's default.
    Default,
    /// `null`: no expiry asked (granted the longest).
    NoExpiry,
    Millis(u64),
}

/// The lifetime granted: never longer than asked unless the ask was under the minimum.
pub fn grant(asked: TtlAsked) -> Duration {
    match asked {
        TtlAsked::Default => DEFAULT_TTL,
        TtlAsked::NoExpiry => MAX_TTL,
        TtlAsked::Millis(ms) => Duration::from_millis(ms).clamp(MIN_TTL, MAX_TTL),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub key: SubscriptionKey,
    pub secret: WebhookSecret,
    /// The secret a refresh replaced, and until when it still signs.
    pub previous_secret: Option<(WebhookSecret, DateTime<Utc>)>,
    pub refresh_before: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    /// Its callback answered the challenge (or another of the owner's subscriptions to the
    /// same URL did): events may be sent to it.
    pub verified: bool,
    pub status: DeliveryStatus,
}

fn time(t: DateTime<Utc>) -> Attr {
    Attr::s(t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

fn duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl Subscription {
    pub fn new(
        key: SubscriptionKey,
        secret: WebhookSecret,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Self {
        // To the millisecond, as it is stored.
        let now = now.trunc_subsecs(3);
        Self {
            key,
            secret,
            previous_secret: None,
            refresh_before: now + duration(ttl),
            created_at: now,
            verified: false,
            status: DeliveryStatus::default(),
        }
    }

    pub fn id(&self) -> String {
        self.key.id()
    }

    pub fn owner(&self) -> &Owner {
        &self.key.owner
    }

    /// Whether its grant ran out: it hears nothing until subscribed again.
    pub fn lapsed(&self, now: DateTime<Utc>) -> bool {
        self.refresh_before <= now
    }

    /// The same subscription refreshed (the same key): granted again from now, with the
    /// secret given (the old one signing beside it for a while when it changed), and active
    /// again if it was paused. Its verification and delivery history stay.
    pub fn refreshed(&self, secret: WebhookSecret, now: DateTime<Utc>, ttl: Duration) -> Self {
        let now = now.trunc_subsecs(3);
        let previous_secret = match secret == self.secret {
            true => self
                .previous_secret
                .clone()
                .filter(|(_, until)| *until > now),
            false => Some((self.secret.clone(), now + duration(SECRET_GRACE))),
        };
        Self {
            key: self.key.clone(),
            secret,
            previous_secret,
            refresh_before: now + duration(ttl),
            created_at: self.created_at,
            verified: self.verified,
            status: DeliveryStatus {
                active: true,
                failures: 0,
                failed_since: None,
                ..self.status.clone()
            },
        }
    }

    /// The `webhook-signature` value for one POST: the secret's signature, and the replaced
    /// secret's while it is in its grace (a receiver still holding it verifies too).
    pub fn signatures(
        &self,
        webhook_id: &str,
        timestamp: i64,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> String {
        let mut signatures = self.secret.sign(webhook_id, timestamp, body);
        if let Some((previous, until)) = &self.previous_secret {
            if *until > now {
                signatures.push(' ');
                signatures.push_str(&previous.sign(webhook_id, timestamp, body));
            }
        }
        signatures
    }

    fn key_item(owner: &Owner, id: &str) -> Item {
        Item::from([
            (attr::OWNER.to_owned(), Attr::s(owner.as_str())),
            (attr::ID.to_owned(), Attr::s(id)),
        ])
    }

    pub fn to_item(&self) -> Item {
        let mut item = Self::key_item(self.owner(), &self.id());
        let mut set = |name: &str, value: Attr| {
            item.insert(name.to_owned(), value);
        };
        set(attr::URL, Attr::s(&self.key.url));
        set(attr::NAME, Attr::s(self.key.name.as_str()));
        set(
            attr::ARGUMENTS,
            Attr::s(canonical_json(&self.key.arguments)),
        );
        set(attr::SECRET, Attr::s(STANDARD.encode(self.secret.bytes())));
        if let Some((previous, until)) = &self.previous_secret {
            set(
                attr::PREVIOUS_SECRET,
                Attr::s(STANDARD.encode(previous.bytes())),
            );
            set(attr::PREVIOUS_UNTIL, time(*until));
        }
        set(attr::REFRESH_BEFORE, time(self.refresh_before));
        set(attr::CREATED_AT, time(self.created_at));
        set(attr::VERIFIED, Attr::Bool(self.verified));
        set(
            attr::TTL,
            Attr::N(self.refresh_before.timestamp() + KEPT_AFTER_LAPSE_SECS),
        );
        for change in status_changes(&self.status) {
            if let Change::Set(name, value) = change {
                set(name, value);
            }
        }
        item
    }

    /// A subscription read back; None for an item that is not one (damaged, or written by
    /// another version), which a reader treats as absent.
    pub fn from_item(item: &Item) -> Option<Self> {
        let f = Fields(item);
        let t = |name: &str| f.s(name).as_deref().and_then(parse_rfc3339);
        let secret = |name: &str| {
            let bytes = STANDARD.decode(f.s(name)?).ok()?;
            WebhookSecret::from_bytes(bytes).ok()
        };
        let key = SubscriptionKey {
            owner: Owner::stored(f.s(attr::OWNER)?),
            url: f.s(attr::URL)?,
            name: EventName::parse(&f.s(attr::NAME)?)?,
            arguments: serde_json::from_str(&f.s(attr::ARGUMENTS)?).ok()?,
        };
        let previous_secret = secret(attr::PREVIOUS_SECRET).zip(t(attr::PREVIOUS_UNTIL));
        let flag = |name: &str| matches!(item.get(name), Some(Attr::Bool(true)));
        Some(Self {
            key,
            secret: secret(attr::SECRET)?,
            previous_secret,
            refresh_before: t(attr::REFRESH_BEFORE)?,
            created_at: t(attr::CREATED_AT)?,
            verified: flag(attr::VERIFIED),
            status: DeliveryStatus {
                active: flag(attr::ACTIVE),
                failures: f
                    .n(attr::FAILURES)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0),
                failed_since: t(attr::FAILED_SINCE),
                last_delivery_at: t(attr::LAST_DELIVERY_AT),
                last_error: f.s(attr::LAST_ERROR).as_deref().and_then(Failure::parse),
            },
        })
    }

    /// The write that stores it: a new subscription only where none is (`prior` None), a
    /// refresh only over the one it refreshes (the same creation), so two racing subscribes
    /// of one key cannot both believe they made it.
    pub fn put(&self, prior: Option<&Subscription>) -> Write {
        let guard = match prior {
            None => Guard::Absent(attr::ID),
            Some(prior) => Guard::Eq(attr::CREATED_AT, time(prior.created_at)),
        };
        Write {
            key: Self::key_item(self.owner(), &self.id()),
            op: WriteOp::Put(self.to_item()),
            guard,
        }
    }

    /// The write that records a delivery's effect on its status: refused when the
    /// subscription is gone or was made anew since it was read.
    pub fn record(&self, status: &DeliveryStatus) -> Write {
        Write {
            key: Self::key_item(self.owner(), &self.id()),
            op: WriteOp::Update(status_changes(status)),
            guard: Guard::Eq(attr::CREATED_AT, time(self.created_at)),
        }
    }
}

/// A status as attribute changes; an absent time or error is stored empty (read back as none).
fn status_changes(status: &DeliveryStatus) -> Vec<Change> {
    let time_or_empty = |t: Option<DateTime<Utc>>| t.map(time).unwrap_or_else(|| Attr::s(""));
    vec![
        Change::Set(attr::ACTIVE, Attr::Bool(status.active)),
        Change::Set(attr::FAILURES, Attr::N(i64::from(status.failures))),
        Change::Set(attr::FAILED_SINCE, time_or_empty(status.failed_since)),
        Change::Set(
            attr::LAST_DELIVERY_AT,
            time_or_empty(status.last_delivery_at),
        ),
        Change::Set(
            attr::LAST_ERROR,
            Attr::s(status.last_error.map(Failure::as_str).unwrap_or("")),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Principal;
    use crate::delivery::Verdict;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        parse_rfc3339("2026-12-06T10:00:00Z").unwrap()
    }

    fn secret(byte: u8) -> WebhookSecret {
        WebhookSecret::from_bytes(vec![byte; 32]).unwrap()
    }

    fn subscription() -> Subscription {
        let key = SubscriptionKey {
            owner: Principal::Local.caller().owner,
            url: "https://hooks.example.com/in".into(),
            name: EventName::JobEnded,
            arguments: json!({"endpoint": "doc-processor"}),
        };
        Subscription::new(key, secret(1), now(), DEFAULT_TTL)
    }

    #[test]
    fn a_grant_is_the_ask_within_a_minute_and_a_day() {
        assert_eq!(grant(TtlAsked::Default), DEFAULT_TTL);
        assert_eq!(grant(TtlAsked::NoExpiry), MAX_TTL);
        assert_eq!(grant(TtlAsked::Millis(1)), MIN_TTL);
        assert_eq!(grant(TtlAsked::Millis(600_000)), Duration::from_secs(600));
        assert_eq!(grant(TtlAsked::Millis(u64::MAX)), MAX_TTL);
    }

    #[test]
    fn a_subscription_reads_back_as_it_was_stored() {
        let mut s = subscription();
        assert_eq!(Subscription::from_item(&s.to_item()), Some(s.clone()));
        s.verified = true;
        s.status = DeliveryStatus::default()
            .after(
                Verdict::Retry(Failure::Timeout),
                now(),
                Duration::from_secs(1),
            )
            .unwrap();
        let s = s.refreshed(secret(2), now(), MAX_TTL);
        let item = s.to_item();
        assert_eq!(Subscription::from_item(&item), Some(s.clone()));
        assert_eq!(
            item[attr::TTL],
            Attr::N(s.refresh_before.timestamp() + 86400)
        );
        let mut damaged = item.clone();
        damaged.insert(attr::SECRET.into(), Attr::s("AAAA"));
        assert_eq!(Subscription::from_item(&damaged), None);
        // The secret is stored as bytes, never as the client's text; Debug never shows it.
        assert!(!format!("{s:?}").contains(&STANDARD.encode(vec![2u8; 32])));
    }

    #[test]
    fn a_refresh_grants_again_resumes_delivery_and_signs_with_both_secrets_for_a_while() {
        let mut s = subscription();
        s.verified = true;
        s.status.active = false;
        s.status.failures = 9;
        s.status.last_error = Some(Failure::Http5xx);
        let later = now() + chrono::Duration::minutes(30);
        let r = s.refreshed(secret(2), later, DEFAULT_TTL);
        assert_eq!(
            (r.id(), r.created_at, r.verified),
            (s.id(), s.created_at, true)
        );
        assert_eq!(r.refresh_before, later + chrono::Duration::hours(1));
        assert!(r.status.active && r.status.failures == 0);
        assert_eq!(
            r.status.last_error,
            Some(Failure::Http5xx),
            "kept for the record"
        );
        let both = r.signatures("evt_1", 1, b"{}", later);
        assert_eq!(
            both,
            format!(
                "{} {}",
                secret(2).sign("evt_1", 1, b"{}"),
                secret(1).sign("evt_1", 1, b"{}")
            )
        );
        let after_grace = later + chrono::Duration::minutes(11);
        assert_eq!(
            r.signatures("evt_1", 1, b"{}", after_grace),
            secret(2).sign("evt_1", 1, b"{}")
        );
        // Refreshed again with the same secret: the old one's grace is not renewed.
        let again = r.refreshed(secret(2), after_grace, DEFAULT_TTL);
        assert_eq!(again.previous_secret, None);
        assert!(
            !again.lapsed(after_grace) && again.lapsed(after_grace + chrono::Duration::hours(1))
        );
    }

    #[test]
    fn a_new_subscription_is_written_only_where_none_is_and_a_refresh_only_over_its_own() {
        let s = subscription();
        assert_eq!(s.put(None).guard, Guard::Absent(attr::ID));
        let stored = s.to_item();
        let refreshed = s.refreshed(secret(2), now(), DEFAULT_TTL);
        assert!(refreshed.put(Some(&s)).apply_to(Some(&stored)).is_some());
        let mut remade = s.clone();
        remade.created_at = now() + chrono::Duration::seconds(1);
        assert!(refreshed
            .put(Some(&s))
            .apply_to(Some(&remade.to_item()))
            .is_none());
        assert!(s.put(None).apply_to(Some(&stored)).is_none());
        let status = DeliveryStatus {
            active: false,
            ..DeliveryStatus::default()
        };
        let recorded = s.record(&status).apply_to(Some(&stored)).unwrap();
        assert!(!Subscription::from_item(&recorded).unwrap().status.active);
        assert!(
            s.record(&status).apply_to(None).is_none(),
            "gone: not made again"
        );
    }
}
