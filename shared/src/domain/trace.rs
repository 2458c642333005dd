//! W3C Trace Context (`traceparent`, `tracestate`), as MCP requests carry it in
//! `params._meta` (SEP-414): read the caller's, continue it (same trace id, a span id of our
//! own), or start one. Tracing never refuses a call: a malformed `traceparent` is ignored and a
//! new trace started in its place.

use std::fmt;

use crate::domain::item::{Attr, Fields};

/// Where both tables store the trace context of the call that created an item.
pub mod attr {
    pub const TRACEPARENT: &str = "traceparent";
    pub const TRACESTATE: &str = "tracestate";
}

/// The longest `tracestate` kept; a longer one is dropped whole (W3C: a vendor may drop it
/// rather than cut list members, and 512 is what it must at least propagate).
pub const MAX_TRACESTATE_CHARS: usize = 512;

/// The version this code writes; it reads later versions by the W3C rules.
const VERSION: u8 = 0;
/// The only flag this code propagates.
const SAMPLED: u8 = 0x01;
/// `00-` + 32 + `-` + 16 + `-` + 2.
const VERSION_00_LEN: usize = 55;

/// One span's trace context: the trace it belongs to, its own span id, its flags, and the
/// vendors' `tracestate` passed along unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: u128,
    span_id: u64,
    flags: u8,
    tracestate: Option<String>,
}

impl TraceContext {
    /// The context a request names, or None when its `traceparent` is absent or malformed (its
    /// `tracestate` then means nothing, and is ignored too).
    pub fn parse(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Self> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent?)?;
        Some(Self {
            trace_id,
            span_id,
            flags,
            tracestate: tracestate.and_then(bounded_tracestate),
        })
    }

    /// A new trace: a random trace id and span id, sampled (every call of these tools is kept).
    pub fn start() -> Self {
        Self {
            trace_id: random_trace_id(),
            span_id: random_span_id(),
            flags: SAMPLED,
            tracestate: None,
        }
    }

    /// A child of `parent`: the same trace and `tracestate`, a span id of our own, and only the
    /// sampled flag (the one this version defines).
    pub fn continue_from(parent: &TraceContext) -> Self {
        Self {
            trace_id: parent.trace_id,
            span_id: random_span_id(),
            flags: parent.flags & SAMPLED,
            tracestate: parent.tracestate.clone(),
        }
    }

    /// This server's span for a request: continuing the caller's trace when its `traceparent`
    /// is valid, else a new trace.
    pub fn for_request(traceparent: Option<&str>, tracestate: Option<&str>) -> Self {
        match Self::parse(traceparent, tracestate) {
            Some(parent) => Self::continue_from(&parent),
            None => Self::start(),
        }
    }

    /// The trace context stored on an item; None when there is none, or it does not parse.
    pub fn from_fields(f: &Fields) -> Option<Self> {
        Self::parse(
            f.s(attr::TRACEPARENT).as_deref(),
            f.s(attr::TRACESTATE).as_deref(),
        )
    }

    /// As item attributes: `traceparent`, and `tracestate` when one came.
    pub fn item_attrs(trace: Option<&TraceContext>) -> Vec<(&'static str, Attr)> {
        let Some(trace) = trace else {
            return Vec::new();
        };
        let mut attrs = vec![(attr::TRACEPARENT, Attr::s(trace.traceparent()))];
        if let Some(state) = trace.tracestate() {
            attrs.push((attr::TRACESTATE, Attr::s(state)));
        }
        attrs
    }

    /// The trace id, 32 lowercase hex digits (what log lines and queries carry).
    pub fn trace_id(&self) -> String {
        format!("{:032x}", self.trace_id)
    }

    /// This span's id, 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        format!("{:016x}", self.span_id)
    }

    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The `traceparent` header naming this span (version 00).
    pub fn traceparent(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{VERSION:02x}-{:032x}-{:016x}-{:02x}",
            self.trace_id, self.span_id, self.flags
        )
    }
}

/// `version-trace_id-parent_id-flags`, lowercase hex only. Version 00 is exactly 55
/// characters; a later version (never `ff`) may be longer, and is read by its first four
/// fields when the 56th character is `-`, as the W3C asks.
fn parse_traceparent(value: &str) -> Option<(u128, u64, u8)> {
    let bytes = value.as_bytes();
    if bytes.len() < VERSION_00_LEN {
        return None;
    }
    let version = hex_field(&bytes[0..2])? as u8;
    let fits = match version {
        0xff => false,
        VERSION => bytes.len() == VERSION_00_LEN,
        _ => bytes.len() == VERSION_00_LEN || bytes[VERSION_00_LEN] == b'-',
    };
    if !fits || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return None;
    }
    let trace_id = hex_field(&bytes[3..35])?;
    let span_id = hex_field(&bytes[36..52])? as u64;
    let flags = hex_field(&bytes[53..55])? as u8;
    // All-zero ids are invalid.
    (trace_id != 0 && span_id != 0).then_some((trace_id, span_id, flags))
}

/// Lowercase hex digits (at most 32) as a number; None for anything else, uppercase included.
fn hex_field(digits: &[u8]) -> Option<u128> {
    digits.iter().try_fold(0u128, |n, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        Some(n << 4 | u128::from(v))
    })
}

/// A `tracestate` worth passing on: non-empty, at most [`MAX_TRACESTATE_CHARS`], printable
/// ASCII only (the header's alphabet; it is stored on items).
fn bounded_tracestate(value: &str) -> Option<String> {
    let ok = !value.trim().is_empty()
        && value.len() <= MAX_TRACESTATE_CHARS
        && value.bytes().all(|b| (b' '..=b'~').contains(&b));
    ok.then(|| value.to_owned())
}

/// 122 random bits of a v4 UUID; never zero (its version bits are set).
fn random_trace_id() -> u128 {
    uuid::Uuid::new_v4().as_u128()
}

/// The low half of a v4 UUID: 62 random bits, never zero (its variant bit is set).
fn random_span_id() -> u64 {
    uuid::Uuid::new_v4().as_u128() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_valid_traceparent_reads_back_as_itself() {
        let t = TraceContext::parse(Some(PARENT), Some("rojo=00f067aa0ba902b7")).unwrap();
        assert_eq!(t.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(t.span_id(), "b7ad6b7169203331");
        assert!(t.sampled());
        assert_eq!(t.traceparent(), PARENT);
        assert_eq!(t.tracestate(), Some("rojo=00f067aa0ba902b7"));
        let unsampled = PARENT.replace("-01", "-00");
        assert!(!TraceContext::parse(Some(&unsampled), None)
            .unwrap()
            .sampled());
    }

    #[test]
    fn a_malformed_traceparent_is_none() {
        let zero_trace = "00-00000000000000000000000000000000-b7ad6b7169203331-01";
        let zero_span = "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01";
        let upper = PARENT.to_uppercase();
        let bad = [
            "",
            "00",
            zero_trace,
            zero_span,
            upper.as_str(),
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            // Version 00 is exactly 55 characters.
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",
            "00-0af7651916cd43dd8448eb211c8031-9c-b7ad6b7169203331-01",
            "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
            "0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333g-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0x",
            " 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 ",
            "00-0af7651916cd43dd8448eb211c80319\u{e9}-b7ad6b7169203331-01",
        ];
        for value in bad {
            assert_eq!(
                TraceContext::parse(Some(value), Some("a=b")),
                None,
                "{value:?}"
            );
            assert_eq!(TraceContext::parse(Some(value), None), None, "{value:?}");
        }
        assert_eq!(TraceContext::parse(None, Some("a=b")), None);
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let v1 = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert!(TraceContext::parse(Some(v1), None).is_some());
        let longer = format!("{v1}-whatever-comes-next");
        let t = TraceContext::parse(Some(&longer), None).unwrap();
        assert_eq!(t.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        // Rendered again in the version this code writes.
        assert_eq!(t.traceparent(), PARENT);
        assert_eq!(TraceContext::parse(Some(&format!("{v1}x")), None), None);
    }

    #[test]
    fn continuing_keeps_the_trace_and_state_and_takes_a_new_span() {
        let parent = TraceContext::parse(Some(PARENT), Some("congo=t61rcWkgMzE")).unwrap();
        let child = TraceContext::continue_from(&parent);
        assert_eq!(child.trace_id(), parent.trace_id());
        assert_ne!(child.span_id(), parent.span_id());
        assert_ne!(child.span_id(), "0000000000000000");
        assert_eq!(child.tracestate(), Some("congo=t61rcWkgMzE"));
        assert!(child.sampled());
        let rendered = child.traceparent();
        assert_eq!(rendered.len(), 55);
        assert!(rendered.starts_with("00-0af7651916cd43dd8448eb211c80319c-"));
        assert!(rendered.ends_with("-01"));
        assert_eq!(
            TraceContext::parse(Some(&rendered), None)
                .unwrap()
                .span_id(),
            child.span_id()
        );
        // Flags this version does not define are not passed on.
        let odd = PARENT.replace("-01", "-ff");
        let child = TraceContext::continue_from(&TraceContext::parse(Some(&odd), None).unwrap());
        assert!(child.traceparent().ends_with("-01"));
    }

    #[test]
    fn a_request_without_a_valid_traceparent_starts_a_trace() {
        let a = TraceContext::for_request(None, None);
        let b = TraceContext::for_request(Some("not a traceparent"), Some("a=b"));
        for t in [&a, &b] {
            assert!(TraceContext::parse(Some(&t.traceparent()), None).is_some());
            assert_eq!(
                t.tracestate(),
                None,
                "a state without its parent means nothing"
            );
            assert!(t.sampled());
        }
        assert_ne!(a.trace_id(), b.trace_id());
        let continued = TraceContext::for_request(Some(PARENT), None);
        assert_eq!(continued.trace_id(), "0af7651916cd43dd8448eb211c80319c");
    }

    #[test]
    fn a_tracestate_too_long_or_not_printable_is_dropped() {
        let parse = |state: &str| {
            TraceContext::parse(Some(PARENT), Some(state))
                .map(|t| t.tracestate().map(str::to_owned))
        };
        let longest = format!("a={}", "x".repeat(MAX_TRACESTATE_CHARS - 2));
        assert_eq!(parse(&longest), Some(Some(longest.clone())));
        let longer = format!("{longest}x");
        assert_eq!(parse(&longer), Some(None), "the traceparent stays");
        assert_eq!(parse("a=b\nc=d"), Some(None));
        assert_eq!(parse("a=\u{e9}"), Some(None));
        assert_eq!(parse(""), Some(None));
    }
}
