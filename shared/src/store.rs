//! The results table: the write rule every notification goes through, a DynamoDB
//! implementation, and an in-memory one for tests of the domain logic.
//!
//! The rule: a notification writes only when no item exists or the item is `pending`; a
//! stored terminal state (`completed`, `failed`, later `cancelled`) is never overwritten, so a
//! duplicate, a replay or a late contradictory delivery changes nothing. Fields set at submit
//! time (`submitted_at`, `endpoint_name`, `input_location`) are kept.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use serde_json::Value;

use crate::aws::{classify, AwsFailure};
use crate::jobs::{attr, JobStatus, OutcomeRecord};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordResult {
    Written,
    AlreadyFinal,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// DynamoDB refused the item itself (ValidationException): retrying the same write cannot help.
    #[error("DynamoDB {operation} on table {table} rejected the item: {message}")]
    Rejected {
        operation: &'static str,
        table: String,
        message: String,
    },
    #[error("DynamoDB {operation} on table {table} failed: {failure}")]
    Aws {
        operation: &'static str,
        table: String,
        failure: AwsFailure,
    },
}

pub trait ResultsStore: Sync {
    /// Writes `record` under the rule above, in one conditional write.
    fn record_outcome(
        &self,
        record: &OutcomeRecord,
    ) -> impl Future<Output = Result<RecordResult, StoreError>> + Send;
}

pub struct DynamoResultsStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoResultsStore {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

/// Builds `SET` clauses with placeholder names (several of ours, like `status`, `ttl` and
/// `result`, are DynamoDB reserved words).
#[derive(Default)]
struct Update {
    clauses: Vec<String>,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl Update {
    fn name(&mut self, name: &str) -> String {
        let placeholder = format!("#{name}");
        self.names.insert(placeholder.clone(), name.to_owned());
        placeholder
    }

    fn set(&mut self, name: &str, value: AttributeValue) {
        let n = self.name(name);
        self.values.insert(format!(":{name}"), value);
        self.clauses.push(format!("{n} = :{name}"));
    }

    fn set_if_absent(&mut self, name: &str, value: Option<&String>) {
        if let Some(v) = value {
            let n = self.name(name);
            self.values
                .insert(format!(":{name}"), AttributeValue::S(v.clone()));
            self.clauses
                .push(format!("{n} = if_not_exists({n}, :{name})"));
        }
    }

    fn set_opt(&mut self, name: &str, value: Option<&String>) {
        if let Some(v) = value {
            self.set(name, AttributeValue::S(v.clone()));
        }
    }
}

impl ResultsStore for DynamoResultsStore {
    async fn record_outcome(&self, record: &OutcomeRecord) -> Result<RecordResult, StoreError> {
        let mut u = Update::default();
        u.set(
            attr::STATUS,
            AttributeValue::S(record.status.as_str().to_owned()),
        );
        u.set(
            attr::COMPLETED_AT,
            AttributeValue::S(record.completed_at.clone()),
        );
        u.set(attr::TTL, AttributeValue::N(record.ttl.to_string()));
        u.set_if_absent(attr::SUBMITTED_AT, record.submitted_at.as_ref());
        u.set_if_absent(attr::ENDPOINT_NAME, record.endpoint_name.as_ref());
        u.set_if_absent(attr::INPUT_LOCATION, record.input_location.as_ref());
        u.set_opt(attr::OUTPUT_LOCATION, record.output_location.as_ref());
        u.set_opt(attr::FAILURE_REASON, record.failure_reason.as_ref());
        u.set_opt(attr::FAILURE_LOCATION, record.failure_location.as_ref());
        u.set_opt(attr::FAILURE_EXCERPT, record.failure_excerpt.as_ref());
        if let Some(result) = &record.result {
            u.set(attr::RESULT, json_to_attribute(result));
        }
        let id = u.name(attr::INFERENCE_ID);
        let status = u.name(attr::STATUS);
        u.values.insert(
            ":pending".into(),
            AttributeValue::S(JobStatus::Pending.as_str().into()),
        );

        let outcome = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(
                attr::INFERENCE_ID,
                AttributeValue::S(record.inference_id.clone()),
            )
            .update_expression(format!("SET {}", u.clauses.join(", ")))
            .condition_expression(format!("attribute_not_exists({id}) OR {status} = :pending"))
            .set_expression_attribute_names(Some(u.names))
            .set_expression_attribute_values(Some(u.values))
            .return_values(ReturnValue::None)
            .send()
            .await;
        match outcome {
            Ok(_) => Ok(RecordResult::Written),
            Err(e) => {
                let failure = classify(&e);
                match failure.code.as_deref() {
                    Some("ConditionalCheckFailedException") => Ok(RecordResult::AlreadyFinal),
                    Some("ValidationException") => Err(StoreError::Rejected {
                        operation: "UpdateItem",
                        table: self.table.clone(),
                        message: failure.message,
                    }),
                    _ => Err(StoreError::Aws {
                        operation: "UpdateItem",
                        table: self.table.clone(),
                        failure,
                    }),
                }
            }
        }
    }
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

/// The same rule over a map, for tests of the domain logic without AWS.
#[derive(Default)]
pub struct MemoryResultsStore {
    items: Mutex<HashMap<String, OutcomeRecord>>,
    pending: Mutex<HashMap<String, String>>,
    /// Makes every write with an inline result fail as DynamoDB's ValidationException would.
    pub reject_inline_results: bool,
}

impl MemoryResultsStore {
    /// A `pending` item as submit_job writes it, with its submit time.
    pub fn insert_pending(&self, inference_id: &str, submitted_at: &str) {
        self.pending
            .lock()
            .unwrap()
            .insert(inference_id.into(), submitted_at.into());
    }

    pub fn get(&self, inference_id: &str) -> Option<OutcomeRecord> {
        self.items.lock().unwrap().get(inference_id).cloned()
    }
}

impl ResultsStore for MemoryResultsStore {
    async fn record_outcome(&self, record: &OutcomeRecord) -> Result<RecordResult, StoreError> {
        if self.reject_inline_results && record.result.is_some() {
            return Err(StoreError::Rejected {
                operation: "UpdateItem",
                table: "memory".into(),
                message: "inline result rejected".into(),
            });
        }
        let mut items = self.items.lock().unwrap();
        if items.contains_key(&record.inference_id) {
            return Ok(RecordResult::AlreadyFinal);
        }
        let mut stored = record.clone();
        if let Some(submitted_at) = self.pending.lock().unwrap().remove(&record.inference_id) {
            stored.submitted_at = Some(submitted_at);
        }
        items.insert(record.inference_id.clone(), stored);
        Ok(RecordResult::Written)
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
