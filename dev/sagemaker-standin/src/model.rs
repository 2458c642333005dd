//! The stand-in's models: the document classifier behind the async endpoint, and the fake
//! training whose outcome follows the pipeline parameters.

use std::collections::HashMap;

use serde_json::{json, Value};

/// The small local model: labels a document by its words.
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
    Ok(json!({"label": label, "confidence": confidence, "words": text.split_whitespace().count()}))
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
