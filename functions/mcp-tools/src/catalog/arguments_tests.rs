//! Hostile arguments cost what the schema checks: their size is measured first, a size past
//! `maxItems`, `maxLength` or `maxProperties` is refused before anything inside it is read, and
//! of boon's violations a few are kept and the rest counted.

use serde_json::{json, Value};

use super::schema::json_size_within;
use super::*;
use crate::contract::MAX_INPUT_BYTES;

fn one_async_tool(input_schema: Value) -> Catalog {
    let text = json!({"async_tools": [{
        "name": "t", "description": "d", "endpoint": "ep", "input_schema": input_schema
    }]});
    Catalog::parse(&text.to_string()).unwrap()
}

/// The refusal of `arguments` by the one tool whose schema is `input_schema`.
fn refusal(input_schema: Value, arguments: Value) -> ArgumentError {
    let catalog = one_async_tool(input_schema);
    catalog
        .check_async_arguments(&catalog.async_tools[0], &arguments)
        .unwrap_err()
}

fn passes(input_schema: Value, arguments: Value) {
    let catalog = one_async_tool(input_schema);
    catalog
        .check_async_arguments(&catalog.async_tools[0], &arguments)
        .unwrap();
}

/// An array of items that each break [`customer_items`] three ways.
fn bad_customers(n: usize) -> Value {
    Value::Array(vec![json!({"plan": 1, "x": 0}); n])
}

fn customers_schema(customers: Value) -> Value {
    json!({"type": "object", "properties": {"customers": customers}})
}

fn customer_items() -> Value {
    json!({"type": "object", "required": ["id"], "additionalProperties": false,
           "properties": {"plan": {"enum": ["free", "team"]}}})
}

#[test]
fn the_size_is_counted_as_compact_json_and_counting_stops_past_the_limit() {
    let value = json!({"a": [1, "é"], "b": null});
    let written = serde_json::to_vec(&value).unwrap().len();
    assert_eq!(json_size_within(&value, written), Some(written));
    assert_eq!(json_size_within(&value, written - 1), None);
    assert_eq!(json_size_within(&json!({}), 0), None);
}

#[test]
fn arguments_past_the_size_limit_are_refused_before_the_schema_is_read() {
    // A string of exactly the limit: with its quotes and its name, a few bytes over.
    let schema = json!({"type": "object", "properties": {"document": {"type": "integer"}}});
    let err = refusal(
        schema.clone(),
        json!({"document": "x".repeat(MAX_INPUT_BYTES)}),
    );
    assert_eq!(err.path, "");
    assert_eq!(
        err.to_string(),
        "the arguments: more than 4194304 bytes as JSON; the limit is 4194304 bytes (4 MiB)"
    );
    // Under the limit, the schema decides.
    let err = refusal(schema, json!({"document": "x"}));
    assert!(err.rule.contains("want integer"), "{err}");
    // A pipeline tool's arguments too.
    let catalog = Catalog::parse(include_str!("../../../../infra/catalog.example.json")).unwrap();
    let retrain = catalog.pipeline_tool("retrain_intent_classifier").unwrap();
    let err = catalog
        .check_pipeline_arguments(
            retrain,
            &json!({"training_data": "s".repeat(MAX_INPUT_BYTES)}),
        )
        .unwrap_err();
    assert!(err.rule.contains("the limit is 4194304 bytes"), "{err}");
}

#[test]
fn an_array_past_max_items_is_refused_without_its_items_being_checked() {
    let schema =
        customers_schema(json!({"type": "array", "maxItems": 500, "items": customer_items()}));
    let err = refusal(schema.clone(), json!({"customers": bad_customers(200_000)}));
    // One violation: had boon walked the items, each would add three.
    assert_eq!(
        err.to_string(),
        "`customers`: maximum 500 items required, but got 200000 items"
    );
    // At the bound, every item is checked.
    let err = refusal(schema, json!({"customers": bad_customers(500)}));
    assert!(err.path.starts_with("/customers/0"), "{err}");
    assert!(err.rule.ends_with("; and 1497 more"), "{err}");
}

#[test]
fn max_length_counts_characters_not_bytes() {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 4}}});
    // Four characters, twelve bytes.
    passes(schema.clone(), json!({"name": "日本語!"}));
    passes(schema.clone(), json!({"name": "😀😀😀😀"}));
    let err = refusal(schema.clone(), json!({"name": "日本語です"}));
    assert_eq!(err.to_string(), "`name`: length must be <=4, but got 5");
    // A long string with a pattern it breaks: refused by its length alone.
    let schema = json!({"type": "object", "properties": {"name": {
        "type": "string", "maxLength": 4, "pattern": "^[a-z]+$"}}});
    let err = refusal(schema, json!({"name": "É".repeat(1_000_000)}));
    assert_eq!(
        err.to_string(),
        "`name`: length must be <=4, but got 1000000"
    );
}

#[test]
fn an_object_past_max_properties_is_refused_without_its_members_being_checked() {
    let schema = json!({"type": "object", "properties": {"labels": {
        "type": "object", "maxProperties": 2, "additionalProperties": {"type": "integer"}}}});
    passes(schema.clone(), json!({"labels": {"a": 1, "b": 2}}));
    let labels: serde_json::Map<String, Value> = (0..100_000)
        .map(|i| (format!("k{i}"), json!("not a number")))
        .collect();
    let err = refusal(schema, json!({"labels": labels}));
    assert_eq!(
        err.to_string(),
        "`labels`: maximum 2 properties required, but got 100000 properties"
    );
    // The arguments themselves too.
    let err = refusal(
        json!({"type": "object", "maxProperties": 1}),
        json!({"a": 1, "b": 2}),
    );
    assert_eq!(
        err.to_string(),
        "the arguments: maximum 1 properties required, but got 2 properties"
    );
}

#[test]
fn bounds_are_found_through_properties_items_prefix_items_additional_properties_and_refs() {
    let schema = json!({
        "type": "object",
        "properties": {"rows": {
            "type": "array",
            "prefixItems": [{"$ref": "#/$defs/tag"}],
            "items": {"type": "object", "additionalProperties": {"$ref": "#/$defs/list"}}
        }},
        "$defs": {
            "tag": {"type": "string", "maxLength": 3},
            "list": {"type": "array", "maxItems": 2, "items": {"type": "string"}}
        }
    });
    passes(schema.clone(), json!({"rows": ["abc", {"k": ["a", "b"]}]}));
    let cases = [
        (
            json!({"rows": ["abcd"]}),
            "`rows/0`: length must be <=3, but got 4",
        ),
        (
            json!({"rows": ["a", {"k": ["a"]}, {"x/y~": [1, 2, 3]}]}),
            "`rows/2/x~1y~0`: maximum 2 items required, but got 3 items",
        ),
    ];
    for (arguments, expected) in cases {
        assert_eq!(refusal(schema.clone(), arguments).to_string(), expected);
    }
}

#[test]
fn a_recursive_schema_is_followed_as_deep_as_the_value_goes() {
    let schema = json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/node"}}}}}
    });
    let leaf = json!({"children": [{}, {}, {}]});
    let tree = json!({"children": [{}, {"children": [{}, leaf]}]});
    let err = refusal(schema.clone(), json!({"tree": tree}));
    assert_eq!(
        err.to_string(),
        "`tree/children/1/children/1/children`: maximum 2 items required, but got 3 items"
    );
    // A schema that refers to itself at once: the early check stops, boon names the cycle.
    let schema = json!({"type": "object", "$defs": {"a": {"$ref": "#/$defs/a", "maxLength": 3}},
                        "properties": {"x": {"$ref": "#/$defs/a"}}});
    let err = refusal(schema.clone(), json!({"x": "long"}));
    assert_eq!(err.to_string(), "`x`: length must be <=3, but got 4");
    let err = refusal(schema, json!({"x": "ok"}));
    assert_eq!(err.path, "/x", "{err}");
}

#[test]
fn what_the_early_check_does_not_read_is_still_boons() {
    // Under anyOf, a bound applies only if the branch is the one taken: boon decides.
    let schema = json!({"type": "object", "properties": {"x": {
        "anyOf": [{"type": "array", "maxItems": 1}, {"type": "string"}]}}});
    passes(schema.clone(), json!({"x": "long enough"}));
    let err = refusal(schema, json!({"x": [1, 2]}));
    assert!(err.rule.contains("maximum 1 items required"), "{err}");
    // patternProperties decides which members additionalProperties covers: boon's alone.
    let schema = json!({"type": "object", "patternProperties": {"^p": {"type": "string"}},
                        "additionalProperties": {"type": "string", "maxLength": 1}});
    passes(schema.clone(), json!({"pa": "long"}));
    let err = refusal(schema, json!({"qa": "long"}));
    assert_eq!(err.to_string(), "`qa`: length must be <=1, but got 4");
}

#[test]
fn a_long_name_in_a_path_is_cut() {
    let name = "n".repeat(1000);
    let schema = json!({"type": "object",
                        "additionalProperties": {"type": "string", "maxLength": 1}});
    for arguments in [json!({name.clone(): "long"}), json!({name.clone(): 5})] {
        let err = refusal(schema.clone(), arguments);
        assert_eq!(err.path.chars().count(), 201, "{err}");
        assert!(err.path.ends_with('…'), "{err}");
    }
}

#[test]
fn of_many_violations_three_are_named_the_rest_counted() {
    let schema = customers_schema(json!({"type": "array", "items": customer_items()}));
    let err = refusal(schema, json!({"customers": bad_customers(20_000)}));
    let text = err.to_string();
    assert!(text.starts_with("`customers/0`"), "{text}");
    assert_eq!(text.matches("; `customers/").count(), 2, "{text}");
    assert!(text.ends_with("; and 59997 more"), "{text}");
}

#[test]
fn a_long_list_of_names_in_a_rule_is_cut() {
    let schema = json!({"type": "object", "properties": {"o": {
        "type": "object", "additionalProperties": false}}});
    let members: serde_json::Map<String, Value> =
        (0..50).map(|i| (format!("m{i:02}"), json!(1))).collect();
    let err = refusal(schema, json!({"o": members}));
    assert_eq!(
        err.rule,
        "additionalProperties 'm00', 'm01', 'm02', 'm03', 'm04', 'm05', 'm06', 'm07', 'm08', \
         'm09' not allowed (and 40 more)"
    );
}
