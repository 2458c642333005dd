//! Tools/list.

use super::*;

#[test]
fn the_router_serves_exactly_the_named_tools_with_their_schemas() {
    let tools = Tools::<FakePorts>::definitions();
    let mut listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    listed.sort_unstable();
    let mut named = names::ALL.to_vec();
    named.sort_unstable();
    assert_eq!(listed, named);
    for tool in &tools {
        assert!(
            tool.output_schema.is_some(),
            "{} has no outputSchema",
            tool.name
        );
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
