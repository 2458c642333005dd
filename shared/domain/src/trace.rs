//! W3C Trace Context (`traceparent`, `tracestate`), as MCP requests carry it in
//! `params._meta` (SEP-414): read the caller's, continue it (same trace id, a span id of our
//! own), or start one. Tracing never refuses a call: a malformed `traceparent` is ignored and a
//! new trace started in its place; a `tracestate` that breaks W3C's grammar is dropped whole
//! (the `traceparent` is still continued), and a valid one is kept as its members re-rendered,
//! never as the caller's bytes.

use std::fmt;

use crate::item::{Attr, Fields};

/// Where both tables store the trace context of the call that created an item.
pub mod attr {
    pub const TRACEPARENT: &str = "traceparent";
    pub const TRACESTATE: &str = "tracestate";
}

/// The longest `tracestate` kept (re-rendered); a longer one is dropped whole (W3C: a vendor
/// may drop it rather than cut list members, and 512 is what it must at least propagate).
pub const MAX_TRACESTATE_CHARS: usize = 512;
/// W3C's limits: list members, a key's and a value's length.
pub const MAX_TRACESTATE_MEMBERS: usize = 32;
const MAX_KEY_CHARS: usize = 256;
const MAX_VALUE_CHARS: usize = 256;
/// A multi-tenant key's parts (`tenant@system`).
const MAX_TENANT_CHARS: usize = 241;
const MAX_SYSTEM_CHARS: usize = 14;

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
            tracestate: tracestate.and_then(parse_tracestate),
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

/// A `tracestate` by W3C Trace Context's grammar (Level 1): `key=value` list members separated
/// by `,` with optional spaces and tabs around them, empty members skipped, at most
/// [`MAX_TRACESTATE_MEMBERS`], each key once. Its members rendered again (`k=v,k=v`), or None
/// when it breaks the grammar, has no member, or renders longer than [`MAX_TRACESTATE_CHARS`].
fn parse_tracestate(value: &str) -> Option<String> {
    let mut members: Vec<(&str, &str)> = Vec::new();
    for member in value.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        if members.len() == MAX_TRACESTATE_MEMBERS {
            return None;
        }
        let (key, value) = member.split_once('=')?;
        let repeated = members.iter().any(|(k, _)| *k == key);
        if repeated || !valid_key(key) || !valid_value(value) {
            return None;
        }
        members.push((key, value));
    }
    let rendered = members
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    (!rendered.is_empty() && rendered.len() <= MAX_TRACESTATE_CHARS).then_some(rendered)
}

/// `simple-key = lcalpha 0*255(keychar)`, or `multi-tenant-key = tenant-id "@" system-id`
/// with `tenant-id = (lcalpha / DIGIT) 0*240(keychar)` and `system-id = lcalpha 0*13(keychar)`;
/// `keychar = lcalpha / DIGIT / "_" / "-" / "*" / "/"`.
fn valid_key(key: &str) -> bool {
    let keychar = |b: u8| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/');
    let part = |s: &str, max: usize, first: fn(u8) -> bool| {
        let bytes = s.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= max
            && first(bytes[0])
            && bytes[1..].iter().all(|&b| keychar(b))
    };
    match key.split_once('@') {
        None => part(key, MAX_KEY_CHARS, |b| b.is_ascii_lowercase()),
        Some((tenant, system)) => {
            part(tenant, MAX_TENANT_CHARS, |b| {
                b.is_ascii_lowercase() || b.is_ascii_digit()
            }) && part(system, MAX_SYSTEM_CHARS, |b| b.is_ascii_lowercase())
        }
    }
}

/// `value = 0*255(chr) nblk-chr`: 1 to 256 printable ASCII characters (0x20 to 0x7E) but `,`
/// and `=`, the last not a space.
fn valid_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_VALUE_CHARS
        && bytes.last() != Some(&b' ')
        && bytes
            .iter()
            .all(|&b| (b' '..=b'~').contains(&b) && b != b',' && b != b'=')
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

    /// The state kept for a valid `traceparent` and `state`; the parent is always continued.
    fn kept(state: &str) -> Option<String> {
        let t = TraceContext::parse(Some(PARENT), Some(state)).expect("the traceparent stays");
        t.tracestate().map(str::to_owned)
    }

    #[test]
    fn a_tracestate_by_the_grammar_is_kept_as_its_members() {
        for (given, stored) in [
            ("rojo=00f067aa0ba902b7", "rojo=00f067aa0ba902b7"),
            (
                "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
                "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
            ),
            // Spaces and tabs around members, and empty members, are not part of the list.
            (" rojo=1 ,\tcongo=2\t, ,,", "rojo=1,congo=2"),
            // Leading spaces belong to the value; trailing ones do not.
            ("a=  b  ", "a=  b"),
            // Every key form: digits, `_-*/`, multi-tenant.
            (
                "a0_-*/=1,t0@sys=2,0t@s-1*/_=3",
                "a0_-*/=1,t0@sys=2,0t@s-1*/_=3",
            ),
            // A value is any printable ASCII but `,` and `=`: quotes and markup included.
            (
                r#"vendor="quoted",x=<script>alert(1)</script>"#,
                r#"vendor="quoted",x=<script>alert(1)</script>"#,
            ),
            (
                "k=!~ #$%&'()*+-./:;<>?@[\\]^_`{|}",
                "k=!~ #$%&'()*+-./:;<>?@[\\]^_`{|}",
            ),
        ] {
            assert_eq!(kept(given).as_deref(), Some(stored), "{given:?}");
        }
        let longest_key = format!("a{}", "z".repeat(MAX_KEY_CHARS - 1));
        let longest_value = "v".repeat(MAX_VALUE_CHARS);
        let tenant = format!("{}@{}", "t".repeat(241), "s".repeat(14));
        for state in [
            format!("{longest_key}=v"),
            format!("k={longest_value}"),
            format!("{tenant}=v"),
        ] {
            assert_eq!(kept(&state), Some(state.clone()));
        }
        let members: Vec<String> = (0..MAX_TRACESTATE_MEMBERS)
            .map(|i| format!("k{i}=v"))
            .collect();
        assert!(kept(&members.join(",")).is_some());
    }

    #[test]
    fn a_tracestate_that_breaks_the_grammar_is_dropped_whole() {
        let too_many: Vec<String> = (0..=MAX_TRACESTATE_MEMBERS)
            .map(|i| format!("k{i}=v"))
            .collect();
        let too_many = too_many.join(",");
        let long_key = format!("a{}=v", "z".repeat(MAX_KEY_CHARS));
        let long_value = format!("k={}", "v".repeat(MAX_VALUE_CHARS + 1));
        let long_tenant = format!("{}@s=v", "t".repeat(242));
        let long_system = format!("t@{}=v", "s".repeat(15));
        let bad = [
            "",
            " , ,",
            "rojo",
            "rojo=",
            "=value",
            "rojo=1,congo",
            "Rojo=1",
            "0rojo=1",
            "_rojo=1",
            "ro jo=1",
            "rojo =1",
            "a=b=c",
            "a=b\tc",
            "a=b\nc=d",
            "a=\u{e9}",
            "a=\u{7f}",
            "a@=1",
            "@b=1",
            "a@0b=1",
            "a@b@c=1",
            "A@b=1",
            "_a@b=1",
            "rojo=1,rojo=2",
            "<script>=1",
            "rojo=1,<script>alert(1)</script>",
            "rojo=1;congo=2",
            too_many.as_str(),
            long_key.as_str(),
            long_value.as_str(),
            long_tenant.as_str(),
            long_system.as_str(),
        ];
        for state in bad {
            assert_eq!(kept(state), None, "{state:?}");
        }
    }

    #[test]
    fn a_tracestate_longer_than_kept_is_dropped_whole() {
        // 257 + 1 + 254: the longest kept.
        let longest = format!("a={},b={}", "x".repeat(255), "y".repeat(252));
        assert_eq!(longest.len(), MAX_TRACESTATE_CHARS);
        assert_eq!(kept(&longest), Some(longest.clone()));
        // Measured as rendered: the spaces a caller adds do not count.
        assert_eq!(kept(&longest.replace(',', " ,\t ")), Some(longest.clone()));
        let longer = format!("a={},b={}", "x".repeat(255), "y".repeat(253));
        assert_eq!(kept(&longer), None);
    }

    #[test]
    fn a_stored_tracestate_reads_back_as_itself() {
        let t = TraceContext::parse(Some(PARENT), Some(" rojo=1 ,, congo=x y")).unwrap();
        let item: crate::item::Item = TraceContext::item_attrs(Some(&t))
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        let read = TraceContext::from_fields(&Fields(&item)).unwrap();
        assert_eq!(read.tracestate(), Some("rojo=1,congo=x y"));
        assert_eq!(read, t);
    }
}
