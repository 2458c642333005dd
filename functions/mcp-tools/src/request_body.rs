//! The JSON-RPC body as the front door reads it, after the caller is known: one pass over the
//! bytes that builds no JSON tree. It picks out what the door decides on (each message's method
//! and tool, a lone request's task id) and the values it bounds before rmcp sees them (a
//! method's length, a progress token's, a protocol version's), and counts the body's values so
//! that rmcp's own parse, which builds the tree (twice over, for a request's arguments), stays
//! within what a 128 MB function can hold.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The most JSON values (numbers, strings, member names, items...) a body may hold. rmcp's
/// parse of a tool call builds them three times over (serde's buffer of the message, of its
/// request, then the arguments), each value 32 bytes and more with its container's growth, so
/// the bound keeps a refused call within a 128 MB function (BENCHMARKS.md, "Hostile input"). An
/// input of 4 MiB as a `document` string is one value; a `payload` an agent writes is far
/// smaller.
pub const MAX_BODY_VALUES: usize = 250_000;
/// The longest method name read whole: every MCP method is under 64 characters.
pub const MAX_METHOD_BYTES: usize = 128;
/// The longest progress token accepted (DESIGN: over 256 bytes is refused).
pub const MAX_PROGRESS_TOKEN_BYTES: usize = 256;
/// The longest protocol version accepted (they are dates, 10 characters): rmcp quotes an
/// unsupported one back.
pub const MAX_VERSION_BYTES: usize = 64;
/// The longest request id accepted: every reply carries it back.
pub const MAX_ID_BYTES: usize = 200;
pub use domain::task_id::MAX_TASK_ID_BYTES;
/// How much of a value past its bound is kept, for a refusal that quotes it short.
pub const KEPT_BYTES: usize = 256;

/// What the front door reads of a JSON-RPC body. A body that is not JSON has no messages (rmcp
/// refuses it, as it always has).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RpcBody {
    pub messages: Vec<RpcMessage>,
    /// `params.taskId` of a body that is one message (not a batch).
    pub task_id: Option<String>,
}

/// One JSON-RPC message, as far as the front door reads it. A member that is not text is read
/// as absent, as rmcp refuses it anyway.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RpcMessage {
    /// `method`, when it is at most [`MAX_METHOD_BYTES`] long (see `too_long`).
    pub method: Option<String>,
    /// `params.name`: the tool a `tools/call` calls.
    pub tool: Option<String>,
    /// The request's id (text or a number) when it is within its bound, for a refusal's reply.
    pub id: Option<serde_json::Value>,
    /// The first of this message's values that is past its bound, if any.
    pub too_long: Option<TooLong>,
    /// The kind of `params.inputResponses`, when present: `tasks/update` needs an object.
    pub input_responses: Option<JsonKind>,
}

/// What kind of JSON value a member holds, as a refusal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonKind {
    Object,
    Array,
    Text,
    Number,
    Boolean,
    Null,
}

impl JsonKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JsonKind::Object => "an object",
            JsonKind::Array => "a list",
            JsonKind::Text => "a string",
            JsonKind::Number => "a number",
            JsonKind::Boolean => "a boolean",
            JsonKind::Null => "null",
        }
    }
}

/// A value past its bound, with its first characters (for a refusal that quotes it short).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong {
    pub what: Member,
    pub bytes: usize,
    /// At most [`KEPT_BYTES`] of it, cut at a character boundary.
    pub start: String,
}

/// The members the front door bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Method,
    Id,
    ProgressToken,
    ProtocolVersion,
    TaskId,
}

/// Why a body is refused before rmcp reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyRefusal {
    #[error("the body holds more than {MAX_BODY_VALUES} JSON values")]
    TooManyValues,
}

impl RpcBody {
    /// Reads `body` once, without building a tree. Invalid JSON reads as no messages (rmcp
    /// answers it with its parse error); only a body past [`MAX_BODY_VALUES`] is refused here.
    pub fn parse(body: &[u8]) -> Result<Self, BodyRefusal> {
        Self::parse_within(body, MAX_BODY_VALUES)
    }

    fn parse_within(body: &[u8], max_values: usize) -> Result<Self, BodyRefusal> {
        let budget = Budget {
            left: Cell::new(max_values),
            spent: Cell::new(false),
        };
        let mut de = serde_json::Deserializer::from_slice(body);
        let scanned = de
            .deserialize_any(BodyVisitor(&budget))
            .and_then(|body| de.end().map(|()| body));
        match scanned {
            Ok(body) => Ok(body),
            Err(_) if budget.spent.get() => Err(BodyRefusal::TooManyValues),
            Err(_) => Ok(Self::default()),
        }
    }
}

/// Whether a JSON document holds at most [`MAX_BODY_VALUES`] values, counted without building
/// it (for a door whose whole event is a tool's arguments). Invalid JSON passes: the parse
/// that follows says what is wrong with it.
pub fn check_values(document: &[u8]) -> Result<(), BodyRefusal> {
    let budget = Budget {
        left: Cell::new(MAX_BODY_VALUES),
        spent: Cell::new(false),
    };
    let mut de = serde_json::Deserializer::from_slice(document);
    match de.deserialize_any(Any(&budget)) {
        Err(_) if budget.spent.get() => Err(BodyRefusal::TooManyValues),
        _ => Ok(()),
    }
}

/// The values a body may still hold; `spent` tells a refusal for size from invalid JSON.
struct Budget {
    left: Cell<usize>,
    spent: Cell<bool>,
}

impl Budget {
    fn take<E: de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.spent.set(true);
                Err(E::custom("too many values"))
            }
        }
    }
}

/// A value of the wrong kind where the door looks for an object: counted, and read as
/// `$default` (rmcp refuses the message). Arrays are walked to count their values.
macro_rules! other_values_read_as {
    ($value:ty, $default:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            self.0.take().map(|()| $default)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            self.0.take().map(|()| $default)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            self.0.take().map(|()| $default)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            self.0.take().map(|()| $default)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$value, E> {
            self.0.take().map(|()| $default)
        }
        fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
            self.0.take().map(|()| $default)
        }
    };
    ($value:ty, $default:expr, arrays) => {
        other_values_read_as!($value, $default);
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<$value, A::Error> {
            Any(self.0).visit_seq(seq).map(|()| $default)
        }
    };
}

/// The top level: one message, or a batch of them.
struct BodyVisitor<'b>(&'b Budget);

impl<'de> Visitor<'de> for BodyVisitor<'_> {
    type Value = RpcBody;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RpcBody, A::Error> {
        self.0.take()?;
        let mut messages = Vec::new();
        while let Some(message) = seq.next_element_seed(MessageSeed(self.0))? {
            messages.push(message.message);
        }
        Ok(RpcBody {
            messages,
            task_id: None,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RpcBody, A::Error> {
        let message = MessageVisitor(self.0).visit_map(map)?;
        Ok(RpcBody {
            messages: vec![message.message],
            task_id: message.task_id,
        })
    }

    other_values_read_as!(RpcBody, RpcBody::default());
}

/// One message and its task id.
#[derive(Default)]
struct Scanned {
    message: RpcMessage,
    task_id: Option<String>,
}

struct MessageSeed<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for MessageSeed<'_> {
    type Value = Scanned;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Scanned, D::Error> {
        d.deserialize_any(MessageVisitor(self.0))
    }
}

struct MessageVisitor<'b>(&'b Budget);

impl<'de> Visitor<'de> for MessageVisitor<'_> {
    type Value = Scanned;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scanned, A::Error> {
        self.0.take()?;
        let mut scanned = Scanned::default();
        let mut too_long = Vec::new();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            match key.as_str() {
                "method" => {
                    let text = map.next_value_seed(Text(self.0))?;
                    scanned.message.method =
                        bounded(text, Member::Method, MAX_METHOD_BYTES, &mut too_long);
                }
                "id" => {
                    let text = map.next_value_seed(Text(self.0))?;
                    let number = text.as_ref().is_some_and(|t| t.number);
                    scanned.message.id = bounded(text, Member::Id, MAX_ID_BYTES, &mut too_long)
                        .map(|id| match id.parse::<serde_json::Number>() {
                            Ok(n) if number => serde_json::Value::Number(n),
                            _ => serde_json::Value::String(id),
                        });
                }
                "params" => {
                    let params = map.next_value_seed(ParamsSeed(self.0))?;
                    scanned.message.tool = params.name;
                    scanned.message.input_responses = params.input_responses;
                    scanned.task_id = bounded(
                        params.task_id,
                        Member::TaskId,
                        MAX_TASK_ID_BYTES,
                        &mut too_long,
                    );
                    too_long.extend(params.too_long);
                }
                _ => map.next_value_seed(Any(self.0))?,
            }
        }
        scanned.message.too_long = too_long.into_iter().next();
        Ok(scanned)
    }

    other_values_read_as!(Scanned, Scanned::default(), arrays);
}

/// The text kept when it is within `max` bytes; a longer one is noted in `too_long`.
fn bounded(
    text: Option<Bounded>,
    what: Member,
    max: usize,
    too_long: &mut Vec<TooLong>,
) -> Option<String> {
    let text = text?;
    if text.bytes <= max {
        return Some(text.start);
    }
    too_long.push(TooLong {
        what,
        bytes: text.bytes,
        start: text.start,
    });
    None
}

/// What `params` holds that the door reads.
#[derive(Default)]
struct Params {
    name: Option<String>,
    task_id: Option<Bounded>,
    input_responses: Option<JsonKind>,
    too_long: Vec<TooLong>,
}

struct ParamsSeed<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for ParamsSeed<'_> {
    type Value = Params;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Params, D::Error> {
        d.deserialize_any(ParamsVisitor(self.0))
    }
}

struct ParamsVisitor<'b>(&'b Budget);

impl<'de> Visitor<'de> for ParamsVisitor<'_> {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        self.0.take()?;
        let mut params = Params::default();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            match key.as_str() {
                // A tool name past the bound is no tool of ours: the tool router says so.
                "name" => params.name = map.next_value_seed(Text(self.0))?.map(|name| name.start),
                "taskId" => params.task_id = map.next_value_seed(Text(self.0))?,
                "inputResponses" => {
                    params.input_responses = Some(map.next_value_seed(Kind(self.0))?);
                }
                "protocolVersion" => {
                    let text = map.next_value_seed(Text(self.0))?;
                    bounded(
                        text,
                        Member::ProtocolVersion,
                        MAX_VERSION_BYTES,
                        &mut params.too_long,
                    );
                }
                "_meta" => {
                    let meta = map.next_value_seed(MetaSeed(self.0))?;
                    params.too_long.extend(meta);
                }
                _ => map.next_value_seed(Any(self.0))?,
            }
        }
        Ok(params)
    }

    other_values_read_as!(Params, Params::default(), arrays);
}

/// `params._meta`: the progress token and the per-request protocol version past their bounds.
struct MetaSeed<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = Vec<TooLong>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<TooLong>, D::Error> {
        d.deserialize_any(MetaVisitor(self.0))
    }
}

struct MetaVisitor<'b>(&'b Budget);

impl<'de> Visitor<'de> for MetaVisitor<'_> {
    type Value = Vec<TooLong>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("_meta")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<TooLong>, A::Error> {
        self.0.take()?;
        let mut too_long = Vec::new();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            let (what, max) = match key.as_str() {
                "progressToken" => (Member::ProgressToken, MAX_PROGRESS_TOKEN_BYTES),
                "io.modelcontextprotocol/protocolVersion" => {
                    (Member::ProtocolVersion, MAX_VERSION_BYTES)
                }
                _ => {
                    map.next_value_seed(Any(self.0))?;
                    continue;
                }
            };
            let text = map.next_value_seed(Text(self.0))?;
            bounded(text, what, max, &mut too_long);
        }
        Ok(too_long)
    }

    other_values_read_as!(Vec<TooLong>, Vec::new(), arrays);
}

/// A member's name. Names the door looks for are short: a longer one is kept only by its
/// start, which matches none of them.
struct Key<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<String, E> {
        self.0.take()?;
        Ok(start_of(text, 64).0)
    }
}

/// A text value (or a number, as text: ids and progress tokens may be numbers) by its first
/// [`KEPT_BYTES`] and its length; anything else reads as absent.
struct Bounded {
    start: String,
    bytes: usize,
    number: bool,
}

struct Text<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Text<'_> {
    type Value = Option<Bounded>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Bounded>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Text<'_> {
    type Value = Option<Bounded>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Option<Bounded>, E> {
        self.0.take()?;
        let (start, bytes) = start_of(text, KEPT_BYTES);
        Ok(Some(Bounded {
            start,
            bytes,
            number: false,
        }))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Option<Bounded>, E> {
        number(self.visit_str(&n.to_string()))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Option<Bounded>, E> {
        number(self.visit_str(&n.to_string()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Option<Bounded>, E> {
        number(self.visit_str(&n.to_string()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Bounded>, E> {
        self.0.take().map(|()| None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Bounded>, E> {
        self.0.take().map(|()| None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Bounded>, A::Error> {
        Any(self.0).visit_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Bounded>, A::Error> {
        Any(self.0).visit_map(map).map(|()| None)
    }
}

fn number<E>(text: Result<Option<Bounded>, E>) -> Result<Option<Bounded>, E> {
    text.map(|t| t.map(|t| Bounded { number: true, ..t }))
}

/// At most `max` bytes of `text` (cut at a character boundary), and its whole length.
fn start_of(text: &str, max: usize) -> (String, usize) {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), text.len())
}

/// Any value, counted, read as its kind alone.
struct Kind<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Kind<'_> {
    type Value = JsonKind;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<JsonKind, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Kind<'_> {
    type Value = JsonKind;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<JsonKind, A::Error> {
        Any(self.0).visit_map(map).map(|()| JsonKind::Object)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<JsonKind, A::Error> {
        Any(self.0).visit_seq(seq).map(|()| JsonKind::Array)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<JsonKind, E> {
        self.0.take().map(|()| JsonKind::Text)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<JsonKind, E> {
        self.0.take().map(|()| JsonKind::Number)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<JsonKind, E> {
        self.0.take().map(|()| JsonKind::Number)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<JsonKind, E> {
        self.0.take().map(|()| JsonKind::Number)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<JsonKind, E> {
        self.0.take().map(|()| JsonKind::Boolean)
    }
    fn visit_unit<E: de::Error>(self) -> Result<JsonKind, E> {
        self.0.take().map(|()| JsonKind::Null)
    }
}

/// Any value, counted and dropped.
#[derive(Clone, Copy)]
struct Any<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Any<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Any<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.0.take()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.0.take()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.0.take()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.0.take()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.0.take()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.take()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.take()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.take()?;
        while map.next_key_seed(Key(self.0))?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "request_body_tests.rs"]
mod tests;
