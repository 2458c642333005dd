//! Tool schemas in plain JSON Schema 2020-12. schemars marks integer widths with formats the
//! specification does not define (`"format": "uint32"`, `"int64"`, `"double"`), and clients
//! that check formats warn on every listing (Claude Code: `unknown format "uint32" ignored`).
//! The bounds those formats imply are already said with `minimum`/`maximum` where they matter.

use serde_json::{Map, Value};

/// The formats JSON Schema 2020-12 defines (Validation, section 7.3).
const FORMATS_2020_12: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is one subschema.
const ONE_SCHEMA: &[&str] = &[
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas (the names themselves are not keywords).
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Removes every `format` 2020-12 does not define, wherever a subschema may sit. A property
/// that happens to be named `format` is a name, not a keyword, and stays.
pub fn only_2020_12_formats(schema: &mut Map<String, Value>) {
    if schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| !FORMATS_2020_12.contains(&format))
    {
        schema.remove("format");
    }
    for (keyword, value) in schema.iter_mut() {
        let keyword = keyword.as_str();
        if ONE_SCHEMA.contains(&keyword) {
            clean_value(value);
        } else if SCHEMA_ARRAYS.contains(&keyword) {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(clean_value);
            }
        } else if SCHEMA_MAPS.contains(&keyword) {
            if let Value::Object(named) = value {
                named.values_mut().for_each(clean_value);
            }
        }
    }
}

fn clean_value(value: &mut Value) {
    if let Value::Object(schema) = value {
        only_2020_12_formats(schema);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_formats_go_and_defined_ones_and_property_names_stay() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "depth": {"type": "integer", "format": "uint32", "minimum": 0},
                "format": {"type": "string", "format": "uri"},
                "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
                "sizes": {"type": "array", "items": {"type": "number", "format": "double"}}
            },
            "$defs": {"Node": {"type": "object", "properties": {"n": {"type": "integer", "format": "int64"}}}}
        });
        only_2020_12_formats(schema.as_object_mut().unwrap());
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "depth": {"type": "integer", "minimum": 0},
                    "format": {"type": "string", "format": "uri"},
                    "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
                    "sizes": {"type": "array", "items": {"type": "number"}}
                },
                "$defs": {"Node": {"type": "object", "properties": {"n": {"type": "integer"}}}}
            })
        );
    }
}
