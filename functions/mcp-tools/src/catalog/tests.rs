//! The catalog's format, each mistake it can hold, and each JSON Schema keyword it documents.

use serde_json::{json, Value};

use super::*;

const EXAMPLE: &str = include_str!("../../../../infra/catalog.example.json");

fn one_async_tool(input_schema: Value) -> Catalog {
    let text = json!({"async_tools": [{
        "name": "t", "description": "d", "endpoint": "ep", "input_schema": input_schema
    }]});
    Catalog::parse(&text.to_string()).unwrap()
}

/// The mistakes a catalog holds, each as `tool: field: problem`.
fn mistakes(catalog: Value) -> Vec<String> {
    let err = Catalog::parse(&catalog.to_string()).unwrap_err();
    err.mistakes.iter().map(ToString::to_string).collect()
}

fn async_tool(extra: Value) -> Value {
    let mut tool = json!({
        "name": "summarize", "description": "Summarizes.", "endpoint": "doc-ep",
        "input_schema": {"type": "object", "properties": {"document": {"type": "string"}}}
    });
    for (k, v) in extra.as_object().unwrap() {
        tool[k] = v.clone();
    }
    tool
}

fn pipeline_tool(extra: Value) -> Value {
    let mut tool = json!({
        "name": "retrain", "description": "Retrains.", "pipeline": "train-pipeline",
        "parameters": {"epochs": {"parameter": "MaxEpochs", "schema": {"type": "integer"}}}
    });
    for (k, v) in extra.as_object().unwrap() {
        tool[k] = v.clone();
    }
    tool
}

fn assert_one(found: Vec<String>, expected: &str) {
    assert!(
        found.iter().any(|m| m.contains(expected)),
        "{expected:?} not among {found:#?}"
    );
}

#[test]
fn the_example_catalog_declares_two_models_and_a_pipeline() {
    let catalog = Catalog::parse(EXAMPLE).unwrap();
    let names: Vec<&str> = catalog
        .async_tools
        .iter()
        .map(|t| t.spec.name.as_str())
        .chain(catalog.pipeline_tools.iter().map(|t| t.spec.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            "summarize_document",
            "score_churn_risk",
            "retrain_intent_classifier"
        ]
    );
    assert_eq!(
        catalog.endpoints(),
        ["mcp-churn-scorer-async", "mcp-doc-processor-async"]
    );
    assert_eq!(catalog.pipelines(), ["mcp-intent-classifier-pipeline"]);
    let retrain = catalog.pipeline_tool("retrain_intent_classifier").unwrap();
    assert_eq!(retrain.spec.parameters["epochs"].parameter, "MaxEpochs");
}

#[test]
fn the_catalog_can_be_shared_by_every_request() {
    fn shared<T: Send + Sync>() {}
    shared::<Catalog>();
}

#[test]
fn the_files_shape_is_checked_first() {
    // A mistake about the whole file has no place of its own: the error names the file once.
    assert_one(mistakes(json!("tools")), "invalid type");
    assert!(mistakes(json!("tools"))[0].starts_with("invalid type"));
    let err = Catalog::parse("{not json").unwrap_err().to_string();
    assert!(err.contains("is not JSON"), "{err}");
    assert_one(
        mistakes(json!({"async_tool": []})),
        "unknown field `async_tool`",
    );
    assert_one(mistakes(json!({})), "declares no tool");
    let many: Vec<Value> = (0..51)
        .map(|i| async_tool(json!({"name": format!("t{i}")})))
        .collect();
    assert_one(
        mistakes(json!({"async_tools": many})),
        "51 tools; at most 50",
    );
}

#[test]
fn each_mistake_in_an_async_tool_is_named_with_its_tool_and_field() {
    let cases = [
        (json!({"description": null}), "summarize: description: invalid type"),
        (json!({"colour": "red"}), "summarize: colour: unknown field `colour`, expected one of `name`"),
        (json!({"name": "has space"}), "async_tools[0]: name: must be 1 to 64"),
        (json!({"name": "check_job_status"}), "check_job_status: name: check_job_status is a built-in tool's or a protocol method's name"),
        // Any built-in tool's, served or not: a catalog tool would replace its route.
        (json!({"name": "approve_model_package"}), "approve_model_package: name: approve_model_package is a built-in tool's"),
        (json!({"name": "answer_training_input"}), "answer_training_input: name: answer_training_input is a built-in tool's"),
        (json!({"name": "submit_job"}), "submit_job: name: submit_job is a built-in tool's"),
        (json!({"name": "ping"}), "ping: name: ping is a built-in tool's or a protocol method's name"),
        (json!({"description": " "}), "summarize: description: must say what the tool does"),
        (json!({"title": ""}), "summarize: title: must be 1 to 128 bytes"),
        (json!({"endpoint": "-ep"}), "summarize: endpoint: must be a SageMaker endpoint name"),
        // SageMaker's ARNs, and so the stack's grants and the template's pattern, are lowercase.
        (json!({"endpoint": "Doc-Processor"}), "summarize: endpoint: must be a SageMaker endpoint name as its ARN spells it"),
        (json!({"content_type": "json"}), "summarize: content_type: must be a MIME type"),
        (json!({"accept": "text/"}), "summarize: accept: must be a MIME type"),
        (json!({"invocation_timeout_secs": 0}), "summarize: invocation_timeout_secs: must be from 1 to 3600"),
        (json!({"request_ttl_secs": 21601}), "summarize: request_ttl_secs: must be from 60 to 21600"),
        (json!({"input_schema": {"type": "string"}}), "summarize: input_schema.type: must be \"object\""),
        (
            json!({"input_schema": {"type": "object", "properties": {"idempotency_key": {"type": "string"}}}}),
            "summarize: input_schema.properties.idempotency_key: is an argument every async tool takes",
        ),
        (
            json!({"input_schema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}}),
            "summarize: input_schema.$schema: must be https://json-schema.org/draft/2020-12/schema",
        ),
        (
            json!({"input_schema": {"type": "object", "properties": {"n": {"minimum": "one"}}}}),
            "summarize: input_schema: the schema is not valid against metaschema: \
             jsonschema validation failed with https://json-schema.org/draft/2020-12/schema# \
             - at '/properties/n/minimum': want number, but got string",
        ),
        (
            json!({"input_schema": {"type": "object", "properties": {"n": {"$ref": "https://example.com/n.json"}}}}),
            "is outside the catalog; a schema may refer only to itself",
        ),
        (
            json!({"input_schema": {"type": "object", "properties": {"n": {"$ref": "n.json"}}}}),
            "summarize: input_schema: error loading n.json: n.json is outside the catalog; a schema may refer only to itself",
        ),
        // Checked against the metaschema wherever it sits, `$defs` too.
        (
            json!({"input_schema": {"type": "object", "$defs": {"n": {"maxItems": -1}}}}),
            "summarize: input_schema: the schema is not valid against metaschema: \
             jsonschema validation failed with https://json-schema.org/draft/2020-12/schema# \
             - at '/$defs/n/maxItems': must be >=0, but got -1",
        ),
    ];
    for (change, expected) in cases {
        assert_one(
            mistakes(json!({"async_tools": [async_tool(change)]})),
            expected,
        );
    }
}

#[test]
fn each_mistake_in_a_pipeline_tool_is_named_with_its_tool_and_field() {
    let cases = [
        (json!({"pipeline": "train_pipeline"}), "retrain: pipeline: must be a SageMaker pipeline name"),
        (json!({"pipeline": "Train-Pipeline"}), "retrain: pipeline: must be a SageMaker pipeline name as its ARN spells it"),
        (
            json!({"parameters": {"e": {"parameter": "Epochs", "schema": {"type": "integer"}, "required": "yes"}}}),
            "retrain: parameters.e.required: invalid type: string \"yes\", expected a boolean",
        ),
        (
            json!({"parameters": {"Epochs": {"parameter": "MaxEpochs", "schema": {"type": "integer"}}}}),
            "retrain: parameters.Epochs: an argument's name must be 1 to 64 lowercase letters",
        ),
        (
            json!({"parameters": {"session_id": {"parameter": "Session", "schema": {"type": "string"}}}}),
            "retrain: parameters.session_id: is an argument every pipeline tool takes",
        ),
        (
            json!({"parameters": {"e": {"parameter": "Max Epochs", "schema": {"type": "integer"}}}}),
            "retrain: parameters.e.parameter: must be a pipeline parameter name",
        ),
        (
            json!({"parameters": {
                "a": {"parameter": "MaxEpochs", "schema": {"type": "integer"}},
                "b": {"parameter": "MaxEpochs", "schema": {"type": "integer"}}}}),
            "retrain: parameters.b.parameter: MaxEpochs is set by two arguments",
        ),
        (
            json!({"parameters": {"e": {"parameter": "Epochs", "schema": {"type": "array"}}}}),
            "retrain: parameters.e.schema.type: must be \"string\", \"integer\", \"number\" or \"boolean\"",
        ),
        (
            json!({"parameters": {"e": {"parameter": "Epochs"}}}),
            "retrain: parameters.e: missing field `schema`",
        ),
    ];
    for (change, expected) in cases {
        assert_one(
            mistakes(json!({"pipeline_tools": [pipeline_tool(change)]})),
            expected,
        );
    }
}

#[test]
fn a_pipeline_parameter_the_catalog_marks_required_is_required() {
    let text = json!({"pipeline_tools": [pipeline_tool(json!({"parameters": {
        "epochs": {"parameter": "MaxEpochs", "schema": {"type": "integer"}},
        "data": {"parameter": "InputDataUri", "schema": {"type": "string"}, "required": true}
    }}))]});
    let catalog = Catalog::parse(&text.to_string()).unwrap();
    let tool = catalog.pipeline_tool("retrain").unwrap();
    assert_eq!(tool.spec.arguments_schema()["required"], json!(["data"]));
    let missing = catalog
        .check_pipeline_arguments(tool, &json!({"epochs": 3}))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("data"), "{missing}");
    assert!(catalog
        .check_pipeline_arguments(tool, &json!({"data": "s3://b/k"}))
        .is_ok());
    // Without `required`, every argument may be left out (the pipeline's defaults apply).
    let optional =
        Catalog::parse(&json!({"pipeline_tools": [pipeline_tool(json!({}))]}).to_string()).unwrap();
    let tool = optional.pipeline_tool("retrain").unwrap();
    assert_eq!(tool.spec.arguments_schema().get("required"), None);
    assert!(optional.check_pipeline_arguments(tool, &json!({})).is_ok());
}

#[test]
fn every_mistake_is_named_at_once_and_names_are_unique_across_kinds() {
    let found = mistakes(json!({
        "async_tools": [async_tool(json!({"endpoint": "bad_ep"})), async_tool(json!({}))],
        "pipeline_tools": [pipeline_tool(json!({"name": "summarize", "pipeline": ""}))]
    }));
    assert_one(
        found.clone(),
        "summarize: endpoint: must be a SageMaker endpoint name",
    );
    assert_one(
        found.clone(),
        "summarize: name: summarize is declared twice",
    );
    assert_one(
        found.clone(),
        "summarize: pipeline: must be a SageMaker pipeline name",
    );
    assert!(found.len() >= 4, "{found:#?}");
}

#[test]
fn a_file_that_cannot_be_read_is_named() {
    let err = Catalog::load("/nonexistent/catalog.json")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("the tool catalog /nonexistent/catalog.json is refused:\n  cannot be read"),
        "{err}"
    );
}

#[test]
fn a_cold_start_refuses_a_schema_that_does_not_compile_for_its_own_tool_alone() {
    let dir = std::env::temp_dir().join(format!("catalog-first-call-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("catalog.json");
    let broken = async_tool(json!({"name": "broken",
        "input_schema": {"type": "object", "properties": {"n": {"minimum": "one"}}}}));
    let sound = async_tool(json!({"name": "sound",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}}}));
    std::fs::write(&path, json!({"async_tools": [broken, sound]}).to_string()).unwrap();
    let path = path.to_str().unwrap();

    // Before a deploy, every schema is compiled and the broken one refuses the catalog.
    let refused = Catalog::load(path).unwrap_err().to_string();
    assert!(
        refused.contains("broken: input_schema: the schema is not valid against metaschema"),
        "{refused}"
    );

    // At a cold start the other checks pass; the broken schema refuses only its own tool's
    // calls, and the sound one checks arguments as a compiled catalog does.
    let served = Catalog::load_with(path, Schemas::EachAlone).unwrap();
    let broken = served.async_tool("broken").unwrap();
    let err = served
        .check_async_arguments(broken, &json!({"n": 1}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the arguments: cannot be checked: this tool's input schema in the catalog is refused \
         (the deployment's check-catalog names the mistake)"
    );
    let sound = served.async_tool("sound").unwrap();
    assert!(served
        .check_async_arguments(sound, &json!({"n": 3}))
        .is_ok());
    let err = served
        .check_async_arguments(sound, &json!({"n": 4}))
        .unwrap_err();
    assert_eq!(err.path, "/n");
    // A mistake in anything but a schema still stops the cold start.
    std::fs::write(
        dir.join("catalog.json"),
        json!({"async_tools": [async_tool(json!({"endpoint": ""}))]}).to_string(),
    )
    .unwrap();
    assert!(Catalog::load_with(path, Schemas::EachAlone).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// (schema of one argument `a`, a value that breaks it, the rule's words).
fn keyword_cases() -> Vec<(Value, Value, &'static str)> {
    vec![
        (
            json!({"type": "integer"}),
            json!("7"),
            "want integer, but got string",
        ),
        (
            json!({"enum": ["free", "team"]}),
            json!("gold"),
            "value must be one of 'free', 'team'",
        ),
        (json!({"const": "v1"}), json!("v2"), "value must be 'v1'"),
        (json!({"minimum": 1}), json!(0), "must be >=1"),
        (json!({"maximum": 20}), json!(21), "must be <=20"),
        (json!({"exclusiveMinimum": 0}), json!(0), "must be > 0"),
        (json!({"exclusiveMaximum": 1}), json!(1), "must be < 1"),
        (json!({"multipleOf": 5}), json!(7), "not multipleOf 5"),
        (
            json!({"minLength": 2}),
            json!("x"),
            "length must be >=2, but got 1",
        ),
        (
            json!({"maxLength": 3}),
            json!("long"),
            "length must be <=3, but got 4",
        ),
        (
            json!({"pattern": "^C[0-9]+$"}),
            json!("secret-value"),
            "does not match the pattern \"^C[0-9]+$\"",
        ),
        (
            json!({"format": "date-time"}),
            json!("yesterday"),
            "is not a valid date-time",
        ),
        (
            json!({"items": {"type": "string"}}),
            json!(["a", 2]),
            "want string, but got number",
        ),
        (
            json!({"minItems": 1}),
            json!([]),
            "minimum 1 items required, but got 0 items",
        ),
        (
            json!({"maxItems": 1}),
            json!([1, 2]),
            "maximum 1 items required, but got 2 items",
        ),
        (
            json!({"prefixItems": [{"type": "string"}]}),
            json!([1]),
            "want string, but got number",
        ),
        (
            json!({"maxProperties": 1}),
            json!({"b": 1, "c": 2}),
            "maximum 1 properties required, but got 2 properties",
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, 1]),
            "items at 0 and 1 are equal",
        ),
        (
            json!({"type": "object", "properties": {"b": {"type": "boolean"}}}),
            json!({"b": "yes"}),
            "want boolean, but got string",
        ),
        (
            json!({"type": "object", "required": ["b"]}),
            json!({}),
            "missing properties 'b'",
        ),
        (
            json!({"type": "object", "additionalProperties": false}),
            json!({"c": 1}),
            "additionalProperties 'c' not allowed",
        ),
    ]
}

#[test]
fn each_documented_keyword_refuses_naming_the_arguments_path_and_the_rule() {
    for (schema, bad, rule) in keyword_cases() {
        let catalog = one_async_tool(json!({"type": "object", "properties": {"a": schema}}));
        let tool = &catalog.async_tools[0];
        let err = catalog
            .check_async_arguments(tool, &json!({"a": bad}))
            .unwrap_err();
        assert!(err.path.starts_with("/a"), "{schema}: {err:?}");
        assert!(
            err.rule.contains(rule),
            "{schema}: {:?} lacks {rule:?}",
            err.rule
        );
        assert!(err.to_string().starts_with("`a"), "{err}");
    }
}

#[test]
fn a_pattern_or_format_refusal_never_repeats_the_value() {
    let catalog = one_async_tool(json!({"type": "object", "properties": {
        "id": {"type": "string", "pattern": "^C[0-9]+$"},
        "at": {"type": "string", "format": "date-time"}}}));
    let tool = &catalog.async_tools[0];
    let secret = "sk-live-0123456789";
    for arguments in [json!({"id": secret}), json!({"at": secret})] {
        let err = catalog.check_async_arguments(tool, &arguments).unwrap_err();
        assert!(!err.to_string().contains(secret), "{err}");
    }
}

#[test]
fn several_violations_are_named_up_to_three_and_counted() {
    let catalog = one_async_tool(json!({
        "type": "object", "required": ["a", "b", "c", "d", "e"], "additionalProperties": false
    }));
    let tool = &catalog.async_tools[0];
    let err = catalog
        .check_async_arguments(tool, &json!({"x": 1, "y": 2}))
        .unwrap_err();
    assert_eq!(err.path, "");
    let text = err.to_string();
    assert!(text.starts_with("the arguments: "), "{text}");
    assert!(
        text.contains("missing properties") && text.contains("not allowed"),
        "{text}"
    );
}

#[test]
fn valid_arguments_pass_and_a_pipeline_tools_arguments_are_its_parameters_only() {
    let catalog = Catalog::parse(EXAMPLE).unwrap();
    let summarize = catalog.async_tool("summarize_document").unwrap();
    catalog
        .check_async_arguments(
            summarize,
            &json!({"document": "Q3 report", "max_sentences": 3}),
        )
        .unwrap();
    let err = catalog
        .check_async_arguments(summarize, &json!({"document": "", "max_sentences": 21}))
        .unwrap_err();
    assert!(
        err.to_string().contains("`document`: length must be >=1"),
        "{err}"
    );
    assert!(
        err.to_string().contains("`max_sentences`: must be <=20"),
        "{err}"
    );

    let retrain = catalog.pipeline_tool("retrain_intent_classifier").unwrap();
    catalog
        .check_pipeline_arguments(retrain, &json!({"epochs": 3, "min_accuracy": 0.9}))
        .unwrap();
    catalog
        .check_pipeline_arguments(retrain, &json!({}))
        .unwrap();
    let err = catalog
        .check_pipeline_arguments(retrain, &json!({"MaxEpochs": 3}))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("additionalProperties 'MaxEpochs' not allowed"),
        "{err}"
    );
}
