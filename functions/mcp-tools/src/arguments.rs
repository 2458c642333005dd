//! Arguments as real clients send them. Some send every value as a string (the MCP Inspector's
//! CLI `--tool-arg wait_secs=5`; LLMs now and then write `"max_epochs": "15"`), and servers on
//! the Python and TypeScript SDKs accept a string holding exactly one number or boolean. So
//! does this one, by one pass over the arguments driven by the tool's own input schema (the
//! schema a client sees stays as it is). The same pass refuses a value of the wrong type, or
//! outside the schema's range, with a message that names the argument, the value and what was
//! expected, before serde could say `invalid type: string "five", expected u32`.

use domain::util::quote;
use serde_json::{Map, Number, Value};

/// What a property's schema says its value is (besides `null`, for an optional one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Integer,
    Number,
    Boolean,
    String,
    Object,
    Array,
}

impl Kind {
    fn of(schema: &Value) -> Option<Kind> {
        let types: Vec<&str> = match schema.get("type")? {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return None,
        };
        let mut kinds = types.into_iter().filter(|t| *t != "null").map(|t| match t {
            "integer" => Some(Kind::Integer),
            "number" => Some(Kind::Number),
            "boolean" => Some(Kind::Boolean),
            "string" => Some(Kind::String),
            "object" => Some(Kind::Object),
            "array" => Some(Kind::Array),
            _ => None,
        });
        match (kinds.next(), kinds.next()) {
            (Some(kind), None) => kind,
            _ => None,
        }
    }

    fn holds(self, value: &Value) -> bool {
        match (self, value) {
            (Kind::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (Kind::Number, Value::Number(_)) => true,
            (Kind::Boolean, Value::Bool(_)) => true,
            (Kind::String, Value::String(_)) => true,
            (Kind::Object, Value::Object(_)) => true,
            (Kind::Array, Value::Array(_)) => true,
            _ => false,
        }
    }

    /// The value a string holds, when it holds exactly one of this kind: no sign of `+`, no
    /// space around it, nothing after it, and a number JSON could carry.
    fn parse(self, text: &str) -> Option<Value> {
        match self {
            Kind::Boolean => match text {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            Kind::Integer => {
                let digits = text.strip_prefix('-').unwrap_or(text);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                text.parse::<i64>()
                    .map(Number::from)
                    .or_else(|_| text.parse::<u64>().map(Number::from))
                    .ok()
                    .map(Value::Number)
            }
            Kind::Number => {
                // JSON's own number grammar, which has no leading `+`, `.5`, `inf` or `NaN`.
                if text.trim() != text {
                    return None;
                }
                let number: Number = serde_json::from_str(text).ok()?;
                number.as_f64().filter(|f| f.is_finite())?;
                Some(Value::Number(number))
            }
            Kind::String | Kind::Object | Kind::Array => None,
        }
    }

    fn expected(self, schema: &Value) -> String {
        let range = match (bound(schema, "minimum"), bound(schema, "maximum")) {
            (Some(min), Some(max)) => format!(" from {min} to {max}"),
            (Some(min), None) => format!(" of at least {min}"),
            (None, Some(max)) => format!(" of at most {max}"),
            (None, None) => String::new(),
        };
        match self {
            Kind::Integer => format!("a whole number{range}"),
            Kind::Number => format!("a number{range}"),
            Kind::Boolean => "true or false".to_owned(),
            Kind::String => "a string".to_owned(),
            Kind::Object => "a JSON object".to_owned(),
            Kind::Array => "a JSON array".to_owned(),
        }
    }
}

/// Coerces `arguments` in place to the types `input_schema` declares, or says which argument
/// is wrong. An argument the schema does not list is refused when the schema allows no others
/// (named, and cut: a caller's name can be long); a value outside its `enum` too.
pub fn coerce(
    input_schema: &Map<String, Value>,
    arguments: &mut Map<String, Value>,
) -> Result<(), String> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    let closed = input_schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (name, value) in arguments.iter_mut() {
        let Some(schema) = properties.get(name) else {
            if closed {
                let mut known: Vec<&str> = properties.keys().map(String::as_str).collect();
                known.sort_unstable();
                return Err(format!(
                    "unknown argument {}; this tool takes: {}",
                    quote(name),
                    known.join(", ")
                ));
            }
            continue;
        };
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
            if !value.is_null() && !allowed.contains(value) {
                let allowed: Vec<String> = allowed
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(Value::to_string)
                    .collect();
                return Err(format!(
                    "`{name}` must be one of {}; got {}",
                    allowed.join(", "),
                    quoted_json(value)
                ));
            }
        }
        let Some(kind) = Kind::of(schema) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        if !kind.holds(value) {
            match value.as_str().and_then(|text| kind.parse(text)) {
                Some(parsed) => *value = parsed,
                None => {
                    return Err(format!(
                        "`{name}` must be {}; got {}",
                        kind.expected(schema),
                        quoted_json(value)
                    ))
                }
            }
        }
        check_range(name, schema, value)?;
    }
    Ok(())
}

/// A caller's value as JSON, cut as every quoted value is (200 characters, then `…` and its
/// length). The JSON is written into a writer that keeps only its start and counts the rest,
/// so a value of megabytes is never copied whole to be quoted.
fn quoted_json(value: &Value) -> String {
    let mut start = JsonStart::default();
    // Writing to memory cannot fail; a value that cannot be written is quoted as far as it went.
    let _ = serde_json::to_writer(&mut start, value);
    let text = String::from_utf8_lossy(&start.kept);
    if start.chars <= domain::util::QUOTE_MAX_CHARS {
        text.into_owned()
    } else {
        let head: String = text.chars().take(domain::util::QUOTE_MAX_CHARS).collect();
        format!("{head:?}… ({} characters)", start.chars)
    }
}

/// The first bytes of what is written (enough for 200 characters of any width) and how many
/// characters were written in all.
#[derive(Default)]
struct JsonStart {
    kept: Vec<u8>,
    chars: usize,
}

impl std::io::Write for JsonStart {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let room = (4 * domain::util::QUOTE_MAX_CHARS).saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..room.min(bytes.len())]);
        // A character is each byte that does not continue one.
        self.chars += bytes.iter().filter(|b| (*b & 0xC0) != 0x80).count();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A bound of the schema as the tools' own checks write numbers (`1`, not `1.0`).
fn bound(schema: &Value, key: &str) -> Option<String> {
    schema
        .get(key)
        .and_then(Value::as_f64)
        .map(|b| b.to_string())
}

/// The schema's `minimum` and `maximum`, as the tools' own checks word them.
fn check_range(name: &str, schema: &Value, value: &Value) -> Result<(), String> {
    let Some(v) = value.as_f64() else {
        return Ok(());
    };
    let limit = |key: &str| schema.get(key).and_then(Value::as_f64);
    let outside =
        limit("minimum").is_some_and(|min| v < min) || limit("maximum").is_some_and(|max| v > max);
    if !outside {
        return Ok(());
    }
    let value = v.to_string();
    Err(match (bound(schema, "minimum"), bound(schema, "maximum")) {
        (Some(min), Some(max)) => format!("`{name}` is {value}; it must be from {min} to {max}"),
        (Some(min), None) => format!("`{name}` is {value}; it must be at least {min}"),
        (None, Some(max)) => format!("`{name}` is {value}; it must be at most {max}"),
        (None, None) => return Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Map<String, Value> {
        json!({"type": "object", "properties": {
            "wait_secs": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "maximum": 20},
            "max_epochs": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000},
            "accuracy_threshold": {"type": ["number", "null"], "minimum": 0.0, "maximum": 1.0},
            "dry_run": {"type": "boolean"},
            "session_id": {"type": "string"},
            "payload": {"type": ["object", "null"]},
            "anything": true
        }})
        .as_object()
        .cloned()
        .unwrap()
    }

    fn coerced(arguments: Value) -> Result<Value, String> {
        let mut arguments = arguments.as_object().cloned().unwrap();
        coerce(&schema(), &mut arguments).map(|()| Value::Object(arguments))
    }

    #[test]
    fn a_string_holding_one_value_of_the_declared_type_becomes_that_value() {
        assert_eq!(
            coerced(
                json!({"wait_secs": "5", "accuracy_threshold": "0.88", "dry_run": "true", "max_epochs": "15"})
            ),
            Ok(
                json!({"wait_secs": 5, "accuracy_threshold": 0.88, "dry_run": true, "max_epochs": 15})
            )
        );
        assert_eq!(
            coerced(json!({"accuracy_threshold": "1"})),
            Ok(json!({"accuracy_threshold": 1}))
        );
        assert_eq!(
            coerced(json!({"dry_run": "false"})),
            Ok(json!({"dry_run": false}))
        );
    }

    #[test]
    fn values_already_of_their_type_and_strings_for_strings_are_kept() {
        let args = json!({"wait_secs": 5, "accuracy_threshold": 0.5, "dry_run": true,
                          "session_id": "42", "payload": {"a": "1"}, "anything": "7", "unlisted": "3",
                          "max_epochs": null});
        assert_eq!(coerced(args.clone()), Ok(args));
    }

    #[test]
    fn anything_else_is_refused_naming_the_argument_the_value_and_what_was_expected() {
        let cases = [
            (
                json!({"wait_secs": "five"}),
                "`wait_secs` must be a whole number from 0 to 20; got \"five\"",
            ),
            (
                json!({"wait_secs": " 5"}),
                "`wait_secs` must be a whole number from 0 to 20; got \" 5\"",
            ),
            (
                json!({"wait_secs": "5.0"}),
                "`wait_secs` must be a whole number from 0 to 20; got \"5.0\"",
            ),
            (
                json!({"wait_secs": "+5"}),
                "`wait_secs` must be a whole number from 0 to 20; got \"+5\"",
            ),
            (
                json!({"wait_secs": ""}),
                "`wait_secs` must be a whole number from 0 to 20; got \"\"",
            ),
            (
                json!({"wait_secs": 2.5}),
                "`wait_secs` must be a whole number from 0 to 20; got 2.5",
            ),
            (
                json!({"wait_secs": true}),
                "`wait_secs` must be a whole number from 0 to 20; got true",
            ),
            (
                json!({"accuracy_threshold": "1e999"}),
                "`accuracy_threshold` must be a number from 0 to 1; got \"1e999\"",
            ),
            (
                json!({"accuracy_threshold": "NaN"}),
                "`accuracy_threshold` must be a number from 0 to 1; got \"NaN\"",
            ),
            (
                json!({"accuracy_threshold": "0.9 "}),
                "`accuracy_threshold` must be a number from 0 to 1; got \"0.9 \"",
            ),
            (
                json!({"dry_run": "yes"}),
                "`dry_run` must be true or false; got \"yes\"",
            ),
            (
                json!({"dry_run": "True"}),
                "`dry_run` must be true or false; got \"True\"",
            ),
            (
                json!({"session_id": 42}),
                "`session_id` must be a string; got 42",
            ),
            (
                json!({"payload": "{}"}),
                "`payload` must be a JSON object; got \"{}\"",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(coerced(args.clone()), Err(expected.to_owned()), "{args}");
        }
    }

    #[test]
    fn unknown_arguments_and_values_outside_an_enum_are_refused_and_long_ones_cut() {
        let mut closed = schema();
        closed.insert("additionalProperties".into(), Value::Bool(false));
        let mut properties = closed["properties"].as_object().cloned().unwrap();
        properties.insert(
            "direction".into(),
            json!({"type": "string", "enum": ["upstream", "downstream"]}),
        );
        closed.insert("properties".into(), Value::Object(properties));
        let check = |args: Value| {
            let mut args = args.as_object().cloned().unwrap();
            coerce(&closed, &mut args)
        };
        let long = "x".repeat(100_000);
        let message = check(json!({ long.clone(): 1 })).unwrap_err();
        assert!(
            message.starts_with(&format!(
                "unknown argument \"{}\"… (100000 characters)",
                "x".repeat(200)
            )),
            "{message}"
        );
        assert!(message.len() < 600, "{}", message.len());
        assert_eq!(
            check(json!({"direction": "sideways"})),
            Err(
                "`direction` must be one of \"upstream\", \"downstream\"; got \"sideways\""
                    .to_owned()
            )
        );
        assert_eq!(check(json!({"direction": "upstream"})), Ok(()));
        let message = check(json!({ "wait_secs": long })).unwrap_err();
        assert!(message.ends_with("… (100002 characters)"), "{message}");
        assert!(message.len() < 600);
    }

    #[test]
    fn ranges_are_checked_after_coercion() {
        assert_eq!(
            coerced(json!({"wait_secs": "25"})),
            Err("`wait_secs` is 25; it must be from 0 to 20".to_owned())
        );
        assert_eq!(
            coerced(json!({"wait_secs": "-1"})),
            Err("`wait_secs` is -1; it must be from 0 to 20".to_owned())
        );
        assert_eq!(
            coerced(json!({"max_epochs": 0})),
            Err("`max_epochs` is 0; it must be from 1 to 1000".to_owned())
        );
        assert_eq!(
            coerced(json!({"accuracy_threshold": "1.5"})),
            Err("`accuracy_threshold` is 1.5; it must be from 0 to 1".to_owned())
        );
        assert_eq!(
            coerced(json!({"wait_secs": "20"})),
            Ok(json!({"wait_secs": 20}))
        );
    }
}
