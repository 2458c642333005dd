//! A pipeline's CallbackStep asking a person: the message SageMaker sends to the callback queue
//! (`token`, `pipelineExecutionArn`, `status`, `arguments`), read into the question it carries.
//! The step's `arguments` are strings: `prompt`, the sentence the person reads, and `fields`,
//! a flat JSON Schema (as JSON text) of what to answer. The token answers the step: it never
//! leaves the server, so it has no Debug or Display that shows it.

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::arn::{execution_parts, sagemaker_resource};
use super::ids::ExecutionArn;
use super::shown::{is_unsafe, shown};

/// `prompt` is at most this long, in bytes (an elicitation's message, read by a person).
pub const MAX_PROMPT_BYTES: usize = 2048;
/// At most this many fields in one question.
pub const MAX_FIELDS: usize = 20;
/// A field's name (an output parameter's name in SageMaker: at most 256).
pub const MAX_FIELD_NAME_BYTES: usize = 64;
/// A field's title or description, an enum's value.
pub const MAX_TEXT_BYTES: usize = 512;
/// At most this many values in one enum.
pub const MAX_ENUM_VALUES: usize = 50;
/// A message larger than this is no callback of ours (SQS takes 256 KiB).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// SageMaker's callback token: 10 letters and digits. Shown nowhere.
#[derive(Clone, PartialEq, Eq)]
pub struct CallbackToken(String);

impl CallbackToken {
    pub fn parse(text: &str) -> Option<CallbackToken> {
        (text.len() == 10 && text.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| CallbackToken(text.to_owned()))
    }

    /// The token itself, for the one call that answers the step and the one write that keeps it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for CallbackToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallbackToken(<redacted>)")
    }
}

/// One field of a question: what kind of answer, and how it is shown.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these words.
    Choice(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub kind: FieldKind,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
}

/// What a CallbackStep asks a person.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub prompt: String,
    pub fields: Vec<Field>,
}

impl Question {
    /// The form an elicitation asks for (`requestedSchema`): a flat object of the fields.
    pub fn requested_schema(&self) -> Value {
        let mut properties = Map::new();
        for field in &self.fields {
            let mut p = Map::new();
            let kind = match &field.kind {
                FieldKind::Text | FieldKind::Choice(_) => "string",
                FieldKind::Number => "number",
                FieldKind::Integer => "integer",
                FieldKind::Boolean => "boolean",
            };
            p.insert("type".into(), kind.into());
            if let FieldKind::Choice(values) = &field.kind {
                p.insert("enum".into(), values.clone().into());
            }
            if let Some(title) = &field.title {
                p.insert("title".into(), title.clone().into());
            }
            if let Some(description) = &field.description {
                p.insert("description".into(), description.clone().into());
            }
            properties.insert(field.name.clone(), Value::Object(p));
        }
        let required: Vec<&str> = self
            .fields
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name.as_str())
            .collect();
        serde_json::json!({"type": "object", "properties": properties, "required": required})
    }
}

/// A callback message, read.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackRequest {
    pub token: CallbackToken,
    pub execution_arn: ExecutionArn,
    pub question: Question,
}

/// Why a callback message is refused: each names what was wrong, and none quotes the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    #[error("the message is {0} bytes, more than {MAX_MESSAGE_BYTES}")]
    TooLarge(usize),
    #[error("the message is not a CallbackStep's JSON: {0}")]
    NotJson(String),
    #[error("`token` is missing or is not 10 letters and digits")]
    Token,
    #[error("`pipelineExecutionArn` is missing or is not a pipeline execution ARN")]
    ExecutionArn,
    #[error("`arguments.prompt`: {0}")]
    Prompt(String),
    #[error("`arguments.fields`: {0}")]
    Fields(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    token: Option<String>,
    pipeline_execution_arn: Option<String>,
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// Reads the message SageMaker sends to a CallbackStep's queue.
pub fn parse_callback(body: &str) -> Result<CallbackRequest, CallbackError> {
    if body.len() > MAX_MESSAGE_BYTES {
        return Err(CallbackError::TooLarge(body.len()));
    }
    let wire: Wire = serde_json::from_str(body).map_err(|e| {
        // serde's message may quote what it read: only its position is kept.
        CallbackError::NotJson(format!("at line {} column {}", e.line(), e.column()))
    })?;
    let token = wire
        .token
        .as_deref()
        .and_then(CallbackToken::parse)
        .ok_or(CallbackError::Token)?;
    let execution_arn = wire
        .pipeline_execution_arn
        .filter(|arn| {
            sagemaker_resource(arn)
                .and_then(|r| r.strip_prefix("pipeline/"))
                .and_then(execution_parts)
                .is_some()
        })
        .ok_or(CallbackError::ExecutionArn)?;
    let prompt = match wire.arguments.get("prompt") {
        Some(Value::String(p)) if p.trim().is_empty() => {
            return Err(CallbackError::Prompt("is empty".into()))
        }
        Some(Value::String(p)) if p.len() > MAX_PROMPT_BYTES => {
            return Err(CallbackError::Prompt(format!(
                "is {} bytes, more than {MAX_PROMPT_BYTES}",
                p.len()
            )))
        }
        // A person reads it: controls become visible marks and the question is still asked.
        Some(Value::String(p)) => shown(p).into_owned(),
        Some(_) => return Err(CallbackError::Prompt("is not a string".into())),
        None => return Err(CallbackError::Prompt("is missing".into())),
    };
    let fields = match wire.arguments.get("fields") {
        None => Vec::new(),
        Some(Value::String(text)) => parse_fields(text).map_err(CallbackError::Fields)?,
        Some(_) => {
            return Err(CallbackError::Fields(
                "is not a string (a JSON Schema as text)".into(),
            ))
        }
    };
    Ok(CallbackRequest {
        token,
        execution_arn: execution_arn.into(),
        question: Question { prompt, fields },
    })
}

/// A flat JSON Schema of an object: each property a string (optionally an `enum` of strings),
/// a number, an integer or a boolean, with an optional `title` and `description`; `required`
/// names some of them. Anything else is refused with what and where.
fn parse_fields(text: &str) -> Result<Vec<Field>, String> {
    let schema: Value =
        serde_json::from_str(text).map_err(|e| format!("is not JSON (column {})", e.column()))?;
    let Some(schema) = schema.as_object() else {
        return Err("is not a JSON Schema object".into());
    };
    if schema.get("type").is_some_and(|t| t != "object") {
        return Err("`type` must be \"object\"".into());
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Err("has no `properties`".into());
    };
    if properties.len() > MAX_FIELDS {
        return Err(format!(
            "{} properties, more than {MAX_FIELDS}",
            properties.len()
        ));
    }
    let required: Vec<&str> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names
            .iter()
            .map(|n| n.as_str().ok_or("`required` must name properties"))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`required` must be a list of property names".into()),
    };
    if let Some(unknown) = required.iter().find(|n| !properties.contains_key(**n)) {
        return Err(format!(
            "`required` names {}, which is no property",
            quote(unknown)
        ));
    }
    let mut fields = Vec::with_capacity(properties.len());
    for (name, property) in properties {
        let at = |what: &str| format!("`properties.{}`: {what}", bounded(name));
        if name.is_empty()
            || name.len() > MAX_FIELD_NAME_BYTES
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(at(&format!(
                "a name must be 1 to {MAX_FIELD_NAME_BYTES} letters, digits, `_` or `-`"
            )));
        }
        let Some(property) = property.as_object() else {
            return Err(at("is not a schema object"));
        };
        let text = |key: &str| -> Result<Option<String>, String> {
            match property.get(key) {
                None => Ok(None),
                Some(Value::String(s)) if s.len() <= MAX_TEXT_BYTES => {
                    Ok(Some(shown(s).into_owned()))
                }
                Some(_) => Err(at(&format!(
                    "`{key}` must be text of at most {MAX_TEXT_BYTES} bytes"
                ))),
            }
        };
        let kind = match (
            property.get("type").and_then(Value::as_str),
            property.get("enum"),
        ) {
            (Some("string") | None, Some(Value::Array(values))) => {
                if values.is_empty() || values.len() > MAX_ENUM_VALUES {
                    return Err(at(&format!(
                        "`enum` must hold 1 to {MAX_ENUM_VALUES} values"
                    )));
                }
                let values = values
                    .iter()
                    .map(|v| match v.as_str() {
                        // The value chosen goes back to SageMaker as it is: it is not made
                        // safe to show, so one that is not safe (a choice is one line, so
                        // newline and tab included) is refused.
                        Some(s) if s.chars().any(|c| c.is_control() || is_unsafe(c)) => Err(at(
                            "`enum` values must not hold control, bidirectional or line-separator characters",
                        )),
                        Some(s) if s.len() <= MAX_TEXT_BYTES => Ok(s.to_owned()),
                        _ => Err(at("`enum` values must be short strings")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                FieldKind::Choice(values)
            }
            (_, Some(_)) => return Err(at("`enum` must be a list of strings")),
            (Some("string"), None) => FieldKind::Text,
            (Some("number"), None) => FieldKind::Number,
            (Some("integer"), None) => FieldKind::Integer,
            (Some("boolean"), None) => FieldKind::Boolean,
            (Some(_), None) => return Err(at("`type` must be string, number, integer or boolean")),
            (None, None) => return Err(at("has no `type`")),
        };
        fields.push(Field {
            name: name.clone(),
            kind,
            title: text("title")?,
            description: text("description")?,
            required: required.contains(&name.as_str()),
        });
    }
    Ok(fields)
}

/// A name as a refusal quotes it: at most 64 bytes of it, each control escaped (a refusal is
/// logged, and a newline in a name must not start a log line of its own).
fn bounded(name: &str) -> String {
    let name = crate::util::truncate_utf8(name.to_owned(), MAX_FIELD_NAME_BYTES);
    let mut quoted = String::with_capacity(name.len());
    for c in name.chars() {
        match c.is_control() || is_unsafe(c) {
            true => quoted.extend(c.escape_unicode()),
            false => quoted.push(c),
        }
    }
    quoted
}

fn quote(name: &str) -> String {
    crate::util::quote(&bounded(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ARN: &str = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/abc123";

    fn message(arguments: Value) -> String {
        json!({"token": "Ab3dEf7hIj", "pipelineExecutionArn": ARN, "status": "Executing",
               "arguments": arguments})
        .to_string()
    }

    fn fields() -> String {
        json!({"type": "object", "properties": {
            "decision": {"type": "string", "enum": ["register", "retrain"], "title": "Decision"},
            "note": {"type": "string", "description": "why"},
            "threshold": {"type": "number"},
            "epochs": {"type": "integer"},
            "urgent": {"type": "boolean"}},
            "required": ["decision"]})
        .to_string()
    }

    #[test]
    fn a_callback_message_is_read_into_its_question() {
        let body = message(json!({"prompt": "Register this model?", "fields": fields()}));
        let read = parse_callback(&body).unwrap();
        assert_eq!(read.token.expose(), "Ab3dEf7hIj");
        assert_eq!(read.execution_arn.as_str(), ARN);
        assert_eq!(read.question.prompt, "Register this model?");
        assert_eq!(read.question.fields.len(), 5);
        assert_eq!(
            read.question.requested_schema(),
            json!({"type": "object", "required": ["decision"], "properties": {
                "decision": {"type": "string", "enum": ["register", "retrain"], "title": "Decision"},
                "note": {"type": "string", "description": "why"},
                "threshold": {"type": "number"},
                "epochs": {"type": "integer"},
                "urgent": {"type": "boolean"}}})
        );
        // A question with no fields is a yes or no.
        let plain = parse_callback(&message(json!({"prompt": "Go on?"}))).unwrap();
        assert!(plain.question.fields.is_empty());
    }

    #[test]
    fn the_token_is_never_shown() {
        let body = message(json!({"prompt": "Go on?"}));
        let read = parse_callback(&body).unwrap();
        let shown = format!("{read:?}");
        assert!(!shown.contains("Ab3dEf7hIj"), "{shown}");
        assert!(shown.contains("<redacted>"));
        let bad = body.replace("Ab3dEf7hIj", "Ab3dEf7hI!");
        let refused = parse_callback(&bad).unwrap_err();
        assert_eq!(refused, CallbackError::Token);
        assert!(!refused.to_string().contains("Ab3dEf7hI"));
        // Not JSON: the refusal gives a position, not what it read.
        let refused = parse_callback("{\"token\": \"Ab3dEf7hIj\", oops").unwrap_err();
        assert!(!refused.to_string().contains("Ab3dEf7hIj"), "{refused}");
    }

    #[test]
    fn what_a_person_is_shown_carries_no_control_and_the_question_is_still_asked() {
        let fields = json!({"type": "object", "properties": {
            "deploy_to": {"type": "string", "enum": ["staging", "production"],
                          "title": "Where\u{202e}", "description": "one\u{2028}two\u{7}"}}})
        .to_string();
        let prompt = "\u{1b}[32mSecurity review passed.\u{1b}[0m\r\nApprove\u{2066}?\tYes\nor no";
        let read = parse_callback(&message(json!({"prompt": prompt, "fields": fields}))).unwrap();
        assert_eq!(
            read.question.prompt,
            "\u{FFFD}[32mSecurity review passed.\u{FFFD}[0m\u{FFFD}\nApprove\u{FFFD}?\tYes\nor no"
        );
        let field = &read.question.fields[0];
        assert_eq!(field.title.as_deref(), Some("Where\u{FFFD}"));
        assert_eq!(field.description.as_deref(), Some("one\u{FFFD}two\u{FFFD}"));
        assert_eq!(
            field.kind,
            FieldKind::Choice(vec!["staging".into(), "production".into()])
        );
        let shown = read.question.requested_schema().to_string() + &read.question.prompt;
        assert!(!shown.chars().any(crate::shown::is_unsafe), "{shown}");
    }

    #[test]
    fn an_enum_value_or_a_name_that_goes_back_to_sagemaker_unsafe_is_refused_by_its_field() {
        let with_fields = |f: Value| message(json!({"prompt": "p", "fields": f.to_string()}));
        for value in ["prod\u{202e}", "a\nb", "x\u{1b}", "\u{85}"] {
            let refused = parse_callback(&with_fields(
                json!({"properties": {"deploy_to": {"enum": ["staging", value]}}}),
            ))
            .unwrap_err()
            .to_string();
            assert!(
                refused.contains("`properties.deploy_to`: `enum` values must not hold control"),
                "{refused}"
            );
        }
        // A name with a newline is refused, and the refusal (which is logged) holds no newline.
        let refused = parse_callback(&with_fields(
            json!({"properties": {"ok\nINFO forged line": {"type": "string"}}}),
        ))
        .unwrap_err()
        .to_string();
        assert!(refused.contains("a name must be"), "{refused}");
        assert!(refused.contains("ok\\u{a}INFO forged line"), "{refused}");
        assert!(!refused.chars().any(|c| c.is_control()), "{refused:?}");
    }

    #[test]
    fn each_bad_message_is_refused_naming_what_was_wrong() {
        let prompt = |p: Value| message(json!({"prompt": p}));
        let with_fields = |f: Value| message(json!({"prompt": "p", "fields": f.to_string()}));
        let cases: Vec<(String, &str)> = vec![
            ("x".repeat(MAX_MESSAGE_BYTES + 1), "bytes, more than"),
            ("[1]".into(), "not a CallbackStep's JSON"),
            (
                message(json!({})).replace(ARN, "arn:aws:s3:::b"),
                "`pipelineExecutionArn`",
            ),
            (prompt(json!("")), "`arguments.prompt`: is empty"),
            (prompt(json!(7)), "`arguments.prompt`: is not a string"),
            (
                prompt(json!("x".repeat(MAX_PROMPT_BYTES + 1))),
                "more than 2048",
            ),
            (
                message(json!({"prompt": "p", "fields": {}})),
                "is not a string",
            ),
            (
                message(json!({"prompt": "p", "fields": "{"})),
                "is not JSON",
            ),
            (
                with_fields(json!({"type": "array"})),
                "`type` must be \"object\"",
            ),
            (
                with_fields(json!({"type": "object"})),
                "has no `properties`",
            ),
            (
                with_fields(json!({"properties": {"a b": {"type": "string"}}})),
                "a name must be",
            ),
            (
                with_fields(json!({"properties": {"a": {"type": "object"}}})),
                "`properties.a`: `type` must be",
            ),
            (
                with_fields(json!({"properties": {"a": {}}})),
                "`properties.a`: has no `type`",
            ),
            (
                with_fields(json!({"properties": {"a": {"enum": []}}})),
                "`enum` must hold",
            ),
            (
                with_fields(json!({"properties": {"a": {"enum": [1]}}})),
                "`enum` values must be",
            ),
            (
                with_fields(json!({"properties": {"a": {"type": "string"}}, "required": ["b"]})),
                "names \"b\", which is no property",
            ),
            (
                with_fields(
                    json!({"properties": (0..=MAX_FIELDS).map(|i| (format!("f{i}"), json!({"type": "string"}))).collect::<Map<_, _>>()}),
                ),
                "more than 20",
            ),
        ];
        for (body, expected) in cases {
            let refused = parse_callback(&body).unwrap_err().to_string();
            assert!(
                refused.contains(expected),
                "{refused:?} should say {expected:?}"
            );
        }
    }
}
