//! The MCP Events extension's requests and answers (SEP-3415): `events/poll`,
//! `events/subscribe` and `events/unsubscribe` read from their params (each field checked,
//! bounded, and named when refused; a caller's value never echoed), and the extension's errors
//! with its codes.

use chrono::{DateTime, SecondsFormat, Utc};
use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{json, Map, Value};

use domain::address::not_public;
use domain::delivery::{DeliveryStatus, Failure};
use domain::events::{Cursor, Event, EventName, Filter};
use domain::subscription::{grant, TtlAsked, MAX_URL_CHARS};
use domain::webhook::WebhookSecret;
use usecases::events::PollAsk;

/// The extension's error codes (provisional in the SEP: the numbers after the ones MCP had
/// allocated when it was written).
pub const NOT_FOUND: ErrorCode = ErrorCode(-32023);
pub const FORBIDDEN: ErrorCode = ErrorCode(-32024);
pub const RESOURCE_EXHAUSTED: ErrorCode = ErrorCode(-32025);
pub const UNSUPPORTED: ErrorCode = ErrorCode(-32026);
pub const CALLBACK_ENDPOINT_ERROR: ErrorCode = ErrorCode(-32027);

/// How long a client waits between polls when nothing is waiting.
pub const NEXT_POLL_MS: u64 = 10_000;
/// A poll's `maxEvents` when the client gives none.
pub const DEFAULT_MAX_EVENTS: u32 = 50;

pub fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

pub fn unknown_event() -> ErrorData {
    ErrorData::new(
        NOT_FOUND,
        "NotFound: `name` is no event type of this server (events/list names them)",
        Some(json!({"kind": "event"})),
    )
}

pub fn unknown_subscription() -> ErrorData {
    ErrorData::new(
        NOT_FOUND,
        "NotFound: no subscription of yours has this name, arguments and delivery.url",
        Some(json!({"kind": "subscription"})),
    )
}

pub fn forbidden(reason: &str) -> ErrorData {
    ErrorData::new(FORBIDDEN, format!("Forbidden: {reason}"), None)
}

pub fn unsupported(feature: &str, value: &str) -> ErrorData {
    ErrorData::new(
        UNSUPPORTED,
        format!("Unsupported: {feature} {value} is not offered here"),
        Some(json!({"feature": feature, "value": value})),
    )
}

pub fn too_many(max: usize) -> ErrorData {
    ErrorData::new(
        RESOURCE_EXHAUSTED,
        format!("ResourceExhausted: you hold {max} subscriptions, the most allowed; end one first"),
        Some(json!({"limit": "subscriptions", "max": max})),
    )
}

pub fn callback_failed(failure: Failure) -> ErrorData {
    ErrorData::new(
        CALLBACK_ENDPOINT_ERROR,
        format!(
            "CallbackEndpointError: the callback did not answer its verification ({}); it must \
             answer the signed challenge 2xx with {{\"challenge\": <the nonce>}}",
            failure.as_str()
        ),
        Some(json!({"reason": failure.as_str()})),
    )
}

/// What the events' tables answered when they failed: never AWS's words.
const STORE_FAILED: &str =
    "the events could not be read or written just now (a transient AWS error); try again";

/// A failed call to the events' tables, logged; the caller is told it was transient.
pub fn store_failed(method: &str, error: &ports::StoreError) -> ErrorData {
    tracing::error!(method, error = %error, "events store call failed");
    ErrorData::internal_error(STORE_FAILED, None)
}

fn params(params: Option<&Value>) -> Result<&Map<String, Value>, ErrorData> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match params {
        None | Some(Value::Null) => Ok(EMPTY.get_or_init(Map::new)),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(invalid("params must be an object")),
    }
}

/// The event type asked for (`name`).
fn name(params: &Map<String, Value>) -> Result<EventName, ErrorData> {
    match params.get("name") {
        Some(Value::String(name)) => EventName::parse(name).ok_or_else(unknown_event),
        Some(_) => Err(invalid(
            "`name` must be a string (an event type events/list names)",
        )),
        None => Err(invalid(
            "`name` is required (an event type events/list names)",
        )),
    }
}

/// The arguments (absent: `{}`) and the filter they make.
fn arguments(params: &Map<String, Value>, name: EventName) -> Result<(Value, Filter), ErrorData> {
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(value) => value.clone(),
    };
    let filter = Filter::parse(name, &arguments).map_err(|e| invalid(e.0))?;
    Ok((arguments, filter))
}

/// `cursor`: null or absent is "from now".
fn cursor(params: &Map<String, Value>) -> Result<Option<Cursor>, ErrorData> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Cursor::decode(text)
            .map(Some)
            .map_err(|e| invalid(e.to_string())),
        Some(_) => Err(invalid(
            "`cursor` must be a string this server gave, or null",
        )),
    }
}

fn non_negative(params: &Map<String, Value>, field: &str) -> Result<Option<u64>, ErrorData> {
    match params.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| invalid(format!("`{field}` must be a whole number of 0 or more"))),
    }
}

/// What `events/poll` (and `events/stream`) asks.
pub fn poll_params(raw: Option<&Value>) -> Result<PollAsk, ErrorData> {
    let p = params(raw)?;
    let name = name(p)?;
    let (_, filter) = arguments(p, name)?;
    let max_events = match non_negative(p, "maxEvents")? {
        None => DEFAULT_MAX_EVENTS,
        Some(n @ 1..=100) => n as u32,
        Some(_) => return Err(invalid("`maxEvents` must be 1 to 100")),
    };
    Ok(PollAsk {
        name,
        filter,
        cursor: cursor(p)?,
        max_age: non_negative(p, "maxAgeMs")?.map(std::time::Duration::from_millis),
        max_events,
    })
}

/// `events/poll`'s answer.
pub fn polled(events: &[Event], cursor: &Cursor, truncated: bool, has_more: bool) -> Value {
    let events: Vec<Value> = events.iter().map(Event::occurrence).collect();
    json!({
        "resultType": "complete",
        "events": events,
        "cursor": cursor.encode(),
        "truncated": truncated,
        "hasMore": has_more,
        "nextPollMs": NEXT_POLL_MS,
    })
}

/// What `events/subscribe` asks, checked before anything is sent anywhere.
#[derive(Debug, Clone)]
pub struct SubscribeParams {
    pub name: EventName,
    pub arguments: Value,
    pub url: String,
    pub secret: WebhookSecret,
    /// The client gave a cursor (its last watermark, on a refresh).
    pub cursor_given: bool,
    pub ttl: std::time::Duration,
}

/// The `delivery` object: its mode (webhook), and its `url` checked: https (http only where
/// local callbacks are allowed), at most [`MAX_URL_CHARS`], no credentials in it, and an
/// address for a host a public one.
fn delivery_url(
    params: &Map<String, Value>,
    allow_local: bool,
) -> Result<(String, &Map<String, Value>), ErrorData> {
    let Some(Value::Object(delivery)) = params.get("delivery") else {
        return Err(invalid(
            "`delivery` is required: {\"mode\": \"webhook\", \"url\", \"secret\"}",
        ));
    };
    match delivery.get("mode") {
        None | Some(Value::Null) => {}
        Some(Value::String(mode)) if mode == "webhook" => {}
        Some(Value::String(mode)) if mode == "poll" || mode == "push" => {
            return Err(invalid(format!(
                "`delivery.mode`: {mode} is not subscribed to; it is events/{}",
                if mode == "poll" { "poll" } else { "stream" }
            )))
        }
        Some(_) => return Err(invalid("`delivery.mode` must be \"webhook\"")),
    }
    let Some(Value::String(text)) = delivery.get("url") else {
        return Err(invalid(
            "`delivery.url` is required: the https URL events are POSTed to",
        ));
    };
    if text.chars().count() > MAX_URL_CHARS {
        return Err(invalid(format!(
            "`delivery.url` is longer than {MAX_URL_CHARS} characters"
        )));
    }
    let url = url::Url::parse(text).map_err(|_| invalid("`delivery.url` is not a URL"))?;
    match (url.scheme(), allow_local) {
        ("https", _) | ("http", true) => {}
        _ => return Err(invalid("`delivery.url` must be an https URL")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("`delivery.url` must not carry credentials"));
    }
    let address = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(ip.into()),
        Some(url::Host::Ipv6(ip)) => Some(ip.into()),
        Some(url::Host::Domain(_)) => None,
        None => return Err(invalid("`delivery.url` has no host")),
    };
    if let Some(class) = address.and_then(not_public).filter(|_| !allow_local) {
        return Err(invalid(format!(
            "`delivery.url` is a {class} address: events go to public ones"
        )));
    }
    Ok((url.to_string(), delivery))
}

pub fn subscribe_params(
    raw: Option<&Value>,
    allow_local: bool,
) -> Result<SubscribeParams, ErrorData> {
    let p = params(raw)?;
    let name = name(p)?;
    let (arguments, _) = arguments(p, name)?;
    let (url, delivery) = delivery_url(p, allow_local)?;
    let secret = match delivery.get("secret") {
        Some(Value::String(text)) => {
            WebhookSecret::parse(text).map_err(|e| invalid(format!("`delivery.secret` {e}")))?
        }
        _ => {
            return Err(invalid(
                "`delivery.secret` is required: whsec_ and the base64 of 24 to 64 random bytes",
            ))
        }
    };
    let ttl =
        match p.get("ttlMs") {
            None => TtlAsked::Default,
            Some(Value::Null) => TtlAsked::NoExpiry,
            Some(value) => TtlAsked::Millis(value.as_u64().ok_or_else(|| {
                invalid("`ttlMs` must be a whole number of milliseconds, or null")
            })?),
        };
    Ok(SubscribeParams {
        name,
        arguments,
        url,
        secret,
        cursor_given: cursor(p)?.is_some(),
        ttl: grant(ttl),
    })
}

/// What `events/unsubscribe` names: the key's name, arguments and URL.
pub fn unsubscribe_params(
    raw: Option<&Value>,
    allow_local: bool,
) -> Result<(EventName, Value, String), ErrorData> {
    let p = params(raw)?;
    let name = name(p)?;
    let (arguments, _) = arguments(p, name)?;
    let (url, _) = delivery_url(p, allow_local)?;
    Ok((name, arguments, url))
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `events/subscribe`'s answer. `prior` is how deliveries fared before this refresh.
pub fn subscribed(
    id: &str,
    refresh_before: DateTime<Utc>,
    cursor: &Cursor,
    truncated: bool,
    prior: Option<&DeliveryStatus>,
) -> Value {
    let mut answer = json!({
        "resultType": "complete",
        "id": id,
        "refreshBefore": time(refresh_before),
        "cursor": cursor.encode(),
        "truncated": truncated,
    });
    if let Some(prior) = prior {
        answer["deliveryStatus"] = prior.to_wire();
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn secret() -> String {
        let bytes = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        format!("whsec_{bytes}")
    }

    fn subscribe(params: Value) -> Result<SubscribeParams, ErrorData> {
        subscribe_params(Some(&params), false)
    }

    #[test]
    fn a_poll_names_its_type_and_bounds_what_it_asks() {
        let p = poll_params(Some(&json!({"name": "job.ended"}))).unwrap();
        assert_eq!(
            (p.name, p.cursor, p.max_events),
            (EventName::JobEnded, None, 50)
        );
        let p = poll_params(Some(
            &json!({"name": "run.ended", "arguments": {"pipeline": "p"},
            "maxEvents": 3, "maxAgeMs": 60000}),
        ))
        .unwrap();
        assert_eq!(p.filter.pipeline.as_deref(), Some("p"));
        assert_eq!(p.max_age, Some(std::time::Duration::from_secs(60)));
        for (params, code, said) in [
            (json!({}), ErrorCode::INVALID_PARAMS, "`name` is required"),
            (json!({"name": "job.started"}), NOT_FOUND, "NotFound"),
            (
                json!({"name": "job.ended", "maxEvents": 0}),
                ErrorCode::INVALID_PARAMS,
                "`maxEvents`",
            ),
            (
                json!({"name": "job.ended", "maxEvents": "9"}),
                ErrorCode::INVALID_PARAMS,
                "`maxEvents`",
            ),
            (
                json!({"name": "job.ended", "cursor": "nope"}),
                ErrorCode::INVALID_PARAMS,
                "`cursor`",
            ),
            (
                json!({"name": "job.ended", "arguments": {"x": 1}}),
                ErrorCode::INVALID_PARAMS,
                "`arguments`",
            ),
            (
                json!({"name": "job.ended", "maxAgeMs": -1}),
                ErrorCode::INVALID_PARAMS,
                "`maxAgeMs`",
            ),
            (json!([]), ErrorCode::INVALID_PARAMS, "params"),
        ] {
            let e = poll_params(Some(&params)).unwrap_err();
            assert_eq!(e.code, code, "{params}");
            assert!(e.message.contains(said), "{params}: {}", e.message);
        }
        assert_eq!(unknown_event().data, Some(json!({"kind": "event"})));
    }

    #[test]
    fn a_subscription_needs_an_https_public_callback_and_a_whsec_secret() {
        let ok = json!({"name": "job.ended", "delivery": {"mode": "webhook",
            "url": "https://hooks.example.com/in", "secret": secret()}});
        let p = subscribe(ok.clone()).unwrap();
        assert_eq!(p.url, "https://hooks.example.com/in");
        assert_eq!(p.ttl, domain::subscription::DEFAULT_TTL);
        assert!(!p.cursor_given);
        let with = |field: &str, value: Value| {
            let mut params = ok.clone();
            params["delivery"][field] = value;
            subscribe(params)
        };
        for (field, value, said) in [
            (
                "url",
                json!("http://hooks.example.com/in"),
                "must be an https URL",
            ),
            (
                "url",
                json!("https://10.0.0.7/in"),
                "is a private (RFC 1918) address",
            ),
            (
                "url",
                json!("https://169.254.169.254/latest"),
                "is a link-local address",
            ),
            ("url", json!("https://[::1]/in"), "is a loopback address"),
            (
                "url",
                json!("https://user:pw@hooks.example.com/in"),
                "must not carry credentials",
            ),
            ("url", json!("not a url"), "is not a URL"),
            (
                "url",
                json!(format!("https://h.example.com/{}", "a".repeat(3000))),
                "longer than 2048",
            ),
            (
                "secret",
                json!("MfKQ9r8G"),
                "`delivery.secret` must start with `whsec_`",
            ),
            (
                "secret",
                json!("whsec_AAAA"),
                "`delivery.secret` must hold 24 to 64 bytes",
            ),
            ("mode", json!("push"), "events/stream"),
            ("mode", json!("smoke"), "must be \"webhook\""),
        ] {
            let e = with(field, value.clone()).unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{field}={value}");
            assert!(e.message.contains(said), "{field}={value}: {}", e.message);
            // A refusal never echoes what it was given.
            if let Some(text) = value.as_str() {
                assert!(
                    text.len() < 12 || !e.message.contains(text),
                    "{}",
                    e.message
                );
            }
        }
        let mut no_delivery = ok.clone();
        no_delivery.as_object_mut().unwrap().remove("delivery");
        assert!(subscribe(no_delivery)
            .unwrap_err()
            .message
            .contains("`delivery` is required"));
        // Local development may call this machine over http.
        let local = json!({"name": "job.ended", "delivery": {"url": "http://127.0.0.1:9/in", "secret": secret()}});
        assert!(subscribe_params(Some(&local), true).is_ok());
        assert!(subscribe_params(Some(&local), false).is_err());
    }

    #[test]
    fn a_subscriptions_lifetime_is_asked_for_and_granted_within_bounds() {
        let ttl = |v: Value| {
            subscribe(json!({"name": "job.ended", "ttlMs": v,
                "delivery": {"url": "https://h.example.com/", "secret": secret()}}))
        };
        assert_eq!(
            ttl(json!(120_000)).unwrap().ttl,
            std::time::Duration::from_secs(120)
        );
        assert_eq!(ttl(Value::Null).unwrap().ttl, domain::subscription::MAX_TTL);
        assert_eq!(ttl(json!(5)).unwrap().ttl, domain::subscription::MIN_TTL);
        assert!(ttl(json!("1h")).unwrap_err().message.contains("`ttlMs`"));
    }

    #[test]
    fn answers_carry_the_extensions_fields() {
        let now = domain::time::parse_rfc3339("2026-12-06T10:00:00Z").unwrap();
        let cursor = Cursor::at(now);
        let answer = subscribed("sub_1", now, &cursor, false, None);
        assert_eq!(answer["refreshBefore"], "2026-12-06T10:00:00Z");
        assert_eq!(answer["resultType"], "complete");
        assert!(answer.get("deliveryStatus").is_none());
        let answer = subscribed(
            "sub_1",
            now,
            &cursor,
            true,
            Some(&DeliveryStatus::default()),
        );
        assert_eq!(answer["deliveryStatus"]["active"], true);
        let polled = polled(&[], &cursor, false, false);
        assert_eq!(polled["events"], json!([]));
        assert_eq!(polled["nextPollMs"], NEXT_POLL_MS);
        let e = too_many(20);
        assert_eq!(
            (e.code, e.data),
            (
                RESOURCE_EXHAUSTED,
                Some(json!({"limit": "subscriptions", "max": 20}))
            )
        );
        let e = callback_failed(Failure::ChallengeFailed);
        assert_eq!(e.data, Some(json!({"reason": "challenge_failed"})));
    }
}
