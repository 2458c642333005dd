//! Tools/list.

use super::*;
use crate::contract::Access;
use crate::wording;

#[test]
fn the_router_serves_exactly_the_named_tools_with_their_schemas() {
    let tools = Tools::<FakePorts>::definitions();
    let mut listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    listed.sort_unstable();
    let mut named: Vec<&str> = policy::BUILT_IN.iter().map(|(name, _)| *name).collect();
    named.sort_unstable();
    assert_eq!(listed, named);
    for tool in &tools {
        assert!(
            tool.output_schema.is_some(),
            "{} has no outputSchema",
            tool.name
        );
        // A description wrapped in the source reads as one line of prose to the agent.
        let said = tool.description.as_deref().unwrap_or_default();
        assert!(!said.contains("  "), "{}: {said:?}", tool.name);
    }
    // Ranges come from the bounds the checks use.
    let check = tools
        .iter()
        .find(|t| t.name == names::CHECK_JOB_STATUS)
        .unwrap();
    let wait = &check.input_schema["properties"]["wait_secs"];
    assert_eq!(
        (wait["minimum"].clone(), wait["maximum"].clone()),
        (json!(0), json!(900))
    );
    assert_eq!(
        wait["description"],
        "Wait up to this many seconds for a pending job to finish: 0 to 20, default 0. A request that \
         carries a progress token (`_meta.progressToken`) may wait up to the function's timeout less \
         10 s, and gets progress notifications while it waits."
    );
    let trigger = tools
        .iter()
        .find(|t| t.name == names::TRIGGER_TRAINING)
        .unwrap();
    let properties = trigger.input_schema["properties"].as_object().unwrap();
    for argument in crate::config::TRAINING_ARGUMENTS {
        assert!(properties.contains_key(argument), "{argument}");
    }
    assert_eq!(properties["accuracy_threshold"]["maximum"], json!(1.0));
}

#[test]
fn each_tools_policy_asks_the_scope_its_annotations_declare() {
    // A tool that is not read-only needs more than the read scope (the ones that answer a
    // run's question the approval scope, the rest the write scope), and one that starts work
    // is a starter; a catalog's tools as well as the built-in ones.
    for world in [world(&[]), catalog_world()] {
        let scoped = world.tools.scoped_tools();
        for tool in world.tools.served() {
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
            let name = tool.name.to_string();
            let access = scoped.iter().find(|(t, _)| *t == name).map(|(_, a)| *a);
            let answers = names::ANSWERING.contains(&name.as_str());
            let expected = match (read_only, answers) {
                (Some(true), _) => None,
                (_, true) => Some(Access::Approve),
                (_, false) => Some(Access::Write),
            };
            assert_eq!(access, expected, "{name}");
        }
    }
    for (name, policy) in policy::BUILT_IN {
        assert_eq!(policy.starts_work(), !policy.counts_read, "{name}");
        assert!(!(policy.starts_work() && policy.may_wait), "{name}");
    }
}

/// Every `format` in a schema, with where it is.
fn formats(value: &Value, at: String, found: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if let (true, Some(format)) = (key == "format", inner.as_str()) {
                    found.push((at.clone(), format.to_owned()));
                }
                formats(inner, format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                formats(inner, format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn every_schema_listed_uses_only_formats_json_schema_2020_12_defines() {
    let catalog = catalog_world().tools.served();
    let listed = Tools::<FakePorts>::definitions().into_iter().chain(catalog);
    let mut found = Vec::new();
    for tool in listed {
        let schemas = [Some(&tool.input_schema), tool.output_schema.as_ref()];
        for schema in schemas.into_iter().flatten() {
            let schema = Value::Object(schema.as_ref().clone());
            formats(&schema, tool.name.to_string(), &mut found);
        }
    }
    let unknown: Vec<_> = found
        .iter()
        .filter(|(_, f)| !["date-time", "uri", "uuid"].contains(&f.as_str()))
        .collect();
    assert!(unknown.is_empty(), "{unknown:?}");
    // The schemas did carry integer formats before they were cleaned: the check looks at them.
    let raw = serde_json::to_value(schemars::schema_for!(
        crate::contract::GetModelProvenanceArgs
    ));
    assert!(raw.unwrap().to_string().contains("\"format\":\"uint"));
}

#[tokio::test]
async fn events_list_names_the_event_types_through_the_server() {
    let w = world(&[]);
    let listed = w.task_request("events/list", json!({})).await.unwrap();
    let names: Vec<&str> = listed["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["job.ended", "run.ended", "run.asks"]);
    let refused = w
        .task_request("events/list", json!({"cursor": "next"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn where_answers_come_only_through_the_form_the_tools_that_answer_are_not_served() {
    let w = world(&[("APPROVALS_VIA", "elicitation")]);
    let listed: Vec<String> = w
        .tools
        .served()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    for name in names::ANSWERING {
        assert!(!listed.iter().any(|t| t == name), "{name} listed");
        // A model that calls one anyway is told why, and how a person answers.
        let called = crate::direct::call_tool(
            w.tools.clone(),
            Principal::Local,
            name,
            json!({}).as_object().cloned(),
            None,
        )
        .await;
        let message = called.unwrap_err().message;
        assert!(
            message.contains("APPROVALS_VIA=elicitation") && message.contains("tasks/update"),
            "{message}"
        );
    }
    assert!(listed.iter().any(|t| t == names::CHECK_TRAINING_STATUS));
    // By default both are served.
    let served: Vec<String> = (world(&[]).tools.served().iter())
        .map(|t| t.name.to_string())
        .collect();
    for name in names::ANSWERING {
        assert!(served.iter().any(|t| t == name), "{name}");
    }
}

#[test]
fn who_may_answer_is_said_in_one_sentence_by_the_tools_the_template_and_the_docs() {
    let said = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = said(wording::WHO_MAY_ANSWER);
    for tool in Tools::<FakePorts>::definitions() {
        if names::ANSWERING.contains(&tool.name.as_ref()) {
            let description = tool.description.as_deref().unwrap_or_default();
            assert!(said(description).contains(&sentence), "{}", tool.name);
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for file in [
        "infra/template.yaml",
        "docs/approvals.md",
        "docs/tasks.md",
        "docs/configuration.md",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            said(&text).contains(&sentence),
            "{file} does not say: {sentence}"
        );
    }
}
