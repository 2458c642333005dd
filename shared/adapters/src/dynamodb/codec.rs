//! The one item codec: domain [`Attr`]s and items to DynamoDB's `AttributeValue`s and back,
//! and JSON as native maps and lists.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::Value;

use domain::item::{Attr, Item};

pub fn to_attribute(value: &Attr) -> AttributeValue {
    match value {
        Attr::S(s) => AttributeValue::S(s.clone()),
        Attr::N(n) => AttributeValue::N(n.to_string()),
        Attr::Bool(b) => AttributeValue::Bool(*b),
        Attr::Json(v) => json_to_attribute(v),
    }
}

/// Strings and integers come back as themselves; everything else as JSON.
pub fn from_attribute(value: &AttributeValue) -> Attr {
    match value {
        AttributeValue::S(s) => Attr::S(s.clone()),
        AttributeValue::N(n) => match n.parse::<i64>() {
            Ok(i) => Attr::N(i),
            Err(_) => Attr::Json(attribute_to_json(value)),
        },
        AttributeValue::Bool(b) => Attr::Bool(*b),
        other => Attr::Json(attribute_to_json(other)),
    }
}

pub fn to_item(item: &Item) -> HashMap<String, AttributeValue> {
    item.iter()
        .map(|(k, v)| (k.clone(), to_attribute(v)))
        .collect()
}

pub fn from_item(item: &HashMap<String, AttributeValue>) -> Item {
    item.iter()
        .map(|(k, v)| (k.clone(), from_attribute(v)))
        .collect()
}

/// A JSON value as a native DynamoDB attribute (maps and lists, as the seed code stored it).
pub fn json_to_attribute(value: &Value) -> AttributeValue {
    match value {
        Value::Null => AttributeValue::Null(true),
        Value::Bool(b) => AttributeValue::Bool(*b),
        Value::Number(n) => AttributeValue::N(n.to_string()),
        Value::String(s) => AttributeValue::S(s.clone()),
        Value::Array(items) => AttributeValue::L(items.iter().map(json_to_attribute).collect()),
        Value::Object(fields) => AttributeValue::M(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), json_to_attribute(v)))
                .collect(),
        ),
    }
}

/// A native DynamoDB attribute back as JSON (numbers that do not parse become strings).
pub fn attribute_to_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::N(n) => serde_json::from_str::<serde_json::Number>(n)
            .map(Value::Number)
            .unwrap_or_else(|_| Value::String(n.clone())),
        AttributeValue::S(s) => Value::String(s.clone()),
        AttributeValue::L(items) => Value::Array(items.iter().map(attribute_to_json).collect()),
        AttributeValue::M(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), attribute_to_json(v)))
                .collect(),
        ),
        AttributeValue::Ss(items) => {
            Value::Array(items.iter().cloned().map(Value::String).collect())
        }
        AttributeValue::Ns(items) => Value::Array(
            items
                .iter()
                .map(|n| attribute_to_json(&AttributeValue::N(n.clone())))
                .collect(),
        ),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_attributes() {
        let v = json!({"label": "ok", "scores": [0.5, 1, -3], "nested": {"flag": true, "none": null}, "big": 18446744073709551615u64});
        assert_eq!(attribute_to_json(&json_to_attribute(&v)), v);
    }
}
