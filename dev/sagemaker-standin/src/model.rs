//! The stand-in's models: the document classifier behind the async endpoint, two fixtures of
//! the MCP conformance suite on endpoints of their own, and the fake training whose outcome
//! follows the pipeline parameters.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

/// The endpoint whose model waits `seconds` (0 to 600) before it answers: the conformance
/// suite's `slow_compute`, served as a catalog tool (tests/conformance/fixtures.catalog.json).
pub const SLOW_COMPUTE_ENDPOINT: &str = "standin-slow-compute";
/// The endpoint whose model always fails: the conformance suite's `failing_job`.
pub const FAILING_JOB_ENDPOINT: &str = "standin-failing-job";
const MAX_COMPUTE_SECS: u64 = 600;

/// What an endpoint's model answers an input, and how long it computes first (beyond the
/// stand-in's `--inference-millis`).
pub fn answer(endpoint: &str, input: &Value) -> (Duration, Result<Value, String>) {
    match endpoint {
        SLOW_COMPUTE_ENDPOINT => {
            let seconds = input.get("seconds").and_then(Value::as_u64).unwrap_or(0);
            if seconds > MAX_COMPUTE_SECS {
                let reason = format!("ValueError: seconds must be at most {MAX_COMPUTE_SECS}");
                return (Duration::ZERO, Err(reason));
            }
            let label = input.get("label").cloned().unwrap_or(Value::Null);
            let output = json!({"computed": true, "seconds": seconds, "label": label});
            (Duration::from_secs(seconds), Ok(output))
        }
        FAILING_JOB_ENDPOINT => (
            Duration::ZERO,
            Err("RuntimeError: this model always fails (the failing_job fixture)".into()),
        ),
        _ => (Duration::ZERO, classify(input)),
    }
}

/// The small local model: labels a document by its words. With `parameters.tokens: true` it
/// also lists every word with its offset, which makes a long document's output large (too
/// large to store inline: an output read through S3 or as an MCP resource).
pub fn classify(input: &Value) -> Result<Value, String> {
    let text = match input.get("inputs") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => input.to_string(),
    };
    if text.contains("FAIL") {
        return Err("ValueError: the model could not process this input".into());
    }
    let lower = text.to_lowercase();
    let (label, confidence) = [("invoice", 0.97), ("receipt", 0.91), ("report", 0.88)]
        .into_iter()
        .find(|(word, _)| lower.contains(word))
        .unwrap_or(("other", 0.55));
    let mut output =
        json!({"label": label, "confidence": confidence, "words": text.split_whitespace().count()});
    if input.pointer("/parameters/tokens") == Some(&Value::Bool(true)) {
        output["tokens"] = tokens(&text);
    }
    Ok(output)
}

fn tokens(text: &str) -> Value {
    let mut offset = 0;
    let mut found = Vec::new();
    for word in text.split_whitespace() {
        let at = text[offset..].find(word).map_or(offset, |i| offset + i);
        found.push(json!({"token": word, "offset": at}));
        offset = at + word.len();
    }
    Value::Array(found)
}

/// The training data of a run started without InputDataUri.
pub const DEFAULT_INPUT_DATA_URI: &str = "s3://default/train";

/// Why a step fails, from the run's parameters.
pub fn step_failure(step: &str, parameters: &HashMap<String, String>) -> Option<String> {
    match step {
        "PreprocessData" => {
            let uri = parameters
                .get("InputDataUri")
                .map(String::as_str)
                .unwrap_or(DEFAULT_INPUT_DATA_URI);
            (!uri.starts_with("s3://"))
                .then(|| format!("ClientError: InputDataUri {uri:?} is not an s3:// URI"))
        }
        "EvaluateModel" => {
            let epochs: f64 = parameters
                .get("MaxEpochs")
                .and_then(|v| v.parse().ok())
                .unwrap_or(10.0);
            let threshold: f64 = parameters
                .get("AccuracyThreshold")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.9);
            let accuracy = 0.80 + 0.015 * epochs.clamp(0.0, 12.0);
            (accuracy < threshold).then(|| {
                format!("accuracy {accuracy:.3} is below AccuracyThreshold {threshold:.3}")
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_endpoints_wait_or_fail_and_any_other_classifies() {
        let input = json!({"seconds": 2, "label": "x"});
        let (wait, output) = answer(SLOW_COMPUTE_ENDPOINT, &input);
        assert_eq!(wait, Duration::from_secs(2));
        assert_eq!(output.unwrap()["label"], "x");
        let (_, refused) = answer(SLOW_COMPUTE_ENDPOINT, &json!({"seconds": 601}));
        assert!(refused.unwrap_err().contains("at most 600"));
        assert!(answer(FAILING_JOB_ENDPOINT, &json!({})).1.is_err());
        let (wait, output) = answer("any-endpoint", &json!({"inputs": "a receipt"}));
        assert_eq!(
            (wait, output.unwrap()["label"].clone()),
            (Duration::ZERO, json!("receipt"))
        );
    }

    #[test]
    fn tokens_are_listed_only_when_asked_for() {
        let plain = classify(&json!({"inputs": "an invoice  for you"})).unwrap();
        assert_eq!(plain["label"], "invoice");
        assert!(plain.get("tokens").is_none());
        let asked = json!({"inputs": "an invoice  for you", "parameters": {"tokens": true}});
        let listed = classify(&asked).unwrap();
        assert_eq!(listed["tokens"][2], json!({"token": "for", "offset": 12}));
        assert_eq!(listed["tokens"].as_array().unwrap().len(), 4);
    }
}
