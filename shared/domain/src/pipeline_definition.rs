//! What a SageMaker pipeline definition (the JSON a run executes) says of its steps: how many
//! a run goes through, so a follower can be told "step k of n".

use serde_json::Value;

/// The number of steps a run of this definition goes through: the top level's, and of each
/// condition step's branches the larger (only one of them runs). None for text that is not a
/// definition with steps.
pub fn step_count(definition: &str) -> Option<u32> {
    let definition: Value = serde_json::from_str(definition).ok()?;
    let steps = definition.get("Steps")?.as_array()?;
    let count = count(steps);
    (count > 0).then_some(count)
}

fn count(steps: &[Value]) -> u32 {
    steps
        .iter()
        .map(|step| {
            let branch = |name: &str| {
                step.pointer(&format!("/Arguments/{name}"))
                    .and_then(Value::as_array)
                    .map_or(0, |steps| count(steps))
            };
            let is_condition = step.get("Type").and_then(Value::as_str) == Some("Condition");
            1 + if is_condition {
                branch("IfSteps").max(branch("ElseSteps"))
            } else {
                0
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_counted_with_the_longer_branch_of_each_condition() {
        let definition = r#"{"Version": "2020-12-01", "Steps": [
            {"Name": "Prepare", "Type": "Processing"},
            {"Name": "Train", "Type": "Training"},
            {"Name": "Good enough?", "Type": "Condition", "Arguments": {
                "IfSteps": [{"Name": "Register", "Type": "RegisterModel"}, {"Name": "Deploy", "Type": "Lambda"}],
                "ElseSteps": [{"Name": "Fail", "Type": "Fail"}]}}
        ]}"#;
        assert_eq!(step_count(definition), Some(5));
    }

    #[test]
    fn text_that_is_not_a_definition_with_steps_has_no_count() {
        for text in ["", "not json", "{}", r#"{"Steps": []}"#, r#"{"Steps": {}}"#] {
            assert_eq!(step_count(text), None, "{text}");
        }
    }
}
