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

/// The outcome of a conditional write: `Ok(true)` written, `Ok(false)` the condition did not
/// hold; a refused item and every other failure become a [`StoreError`].
pub(crate) fn conditional_write<T, E>(
    operation: &'static str,
    table: &str,
    outcome: Result<
        T,
        aws_sdk_dynamodb::error::SdkError<
            E,
            aws_smithy_runtime_api::client::orchestrator::HttpResponse,
        >,
    >,
) -> Result<bool, StoreError>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    let Err(e) = outcome else { return Ok(true) };
    let failure = classify(&e);
    match failure.code.as_deref() {
        Some("ConditionalCheckFailedException") => Ok(false),
        Some("ValidationException") => Err(StoreError::Rejected {
            operation,
            table: table.to_owned(),
            message: failure.message,
        }),
        _ => Err(StoreError::Aws {
            operation,
            table: table.to_owned(),
            failure,
        }),
    }
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
        Ok(
            match conditional_write("UpdateItem", &self.table, outcome)? {
                true => RecordResult::Written,
                false => RecordResult::AlreadyFinal,
            },
        )
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

// ------------------------------------------------------------ reads and submits (mcp-tools)

/// What submit_job writes before it invokes the endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingJob {
    pub inference_id: String,
    pub submitted_at: String,
    pub endpoint_name: String,
    pub input_location: String,
    pub request_ttl_secs: u32,
    pub invocation_timeout_secs: u32,
    pub input_sha256: String,
    pub ttl: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutPending {
    Created,
    /// A live job with this id exists (an idempotent resubmit).
    Exists,
}

pub const SUBMISSION_FAILED: &str = "submission_failed";
const REQUEST_TTL_SECS: &str = "request_ttl_secs";
const INVOCATION_TIMEOUT_SECS: &str = "invocation_timeout_secs";
const INPUT_SHA256: &str = "input_sha256";

impl DynamoResultsStore {
    /// Creates the `pending` item unless a live job has the id. An expired item, or one whose
    /// submission failed, may be replaced: retrying such a submit must start the job.
    pub async fn put_pending(
        &self,
        job: &PendingJob,
        now_epoch: i64,
    ) -> Result<PutPending, StoreError> {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let n = |v: i64| AttributeValue::N(v.to_string());
        let outcome = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::INFERENCE_ID, s(&job.inference_id))
            .item(attr::STATUS, s(JobStatus::Pending.as_str()))
            .item(attr::SUBMITTED_AT, s(&job.submitted_at))
            .item(attr::ENDPOINT_NAME, s(&job.endpoint_name))
            .item(attr::INPUT_LOCATION, s(&job.input_location))
            .item(REQUEST_TTL_SECS, n(job.request_ttl_secs.into()))
            .item(
                INVOCATION_TIMEOUT_SECS,
                n(job.invocation_timeout_secs.into()),
            )
            .item(INPUT_SHA256, s(&job.input_sha256))
            .item(attr::TTL, n(job.ttl))
            .condition_expression("attribute_not_exists(#id) OR #ttl <= :now OR #failed = :true")
            .expression_attribute_names("#id", attr::INFERENCE_ID)
            .expression_attribute_names("#ttl", attr::TTL)
            .expression_attribute_names("#failed", SUBMISSION_FAILED)
            .expression_attribute_values(":now", n(now_epoch))
            .expression_attribute_values(":true", AttributeValue::Bool(true))
            .send()
            .await;
        Ok(match conditional_write("PutItem", &self.table, outcome)? {
            true => PutPending::Created,
            false => PutPending::Exists,
        })
    }

    /// One strongly consistent read.
    pub async fn get_job(
        &self,
        inference_id: &str,
    ) -> Result<Option<crate::tools::StoredJob>, StoreError> {
        let got = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(
                attr::INFERENCE_ID,
                AttributeValue::S(inference_id.to_owned()),
            )
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| StoreError::Aws {
                operation: "GetItem",
                table: self.table.clone(),
                failure: classify(&e),
            })?;
        Ok(got.item.map(|item| stored_job(&item)))
    }

    /// Records that the job could not be submitted, so a status check says why and a retry
    /// with the same idempotency key may start it again.
    pub async fn mark_submission_failed(
        &self,
        inference_id: &str,
        reason: &str,
        completed_at: &str,
    ) -> Result<(), StoreError> {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let outcome = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::INFERENCE_ID, s(inference_id))
            .update_expression(
                "SET #status = :failed, #reason = :reason, #completed = :at, #sf = :true",
            )
            .condition_expression("#status = :pending")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#reason", attr::FAILURE_REASON)
            .expression_attribute_names("#completed", attr::COMPLETED_AT)
            .expression_attribute_names("#sf", SUBMISSION_FAILED)
            .expression_attribute_values(":failed", s(JobStatus::Failed.as_str()))
            .expression_attribute_values(":pending", s(JobStatus::Pending.as_str()))
            .expression_attribute_values(":reason", s(reason))
            .expression_attribute_values(":at", s(completed_at))
            .expression_attribute_values(":true", AttributeValue::Bool(true))
            .send()
            .await;
        // Not pending any more (the outcome arrived first): nothing to mark.
        conditional_write("UpdateItem", &self.table, outcome).map(|_| ())
    }
}

/// A results-table item as the tools read it.
pub fn stored_job(item: &HashMap<String, AttributeValue>) -> crate::tools::StoredJob {
    let s = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    let n = |name: &str| {
        item.get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse::<i64>().ok())
    };
    crate::tools::StoredJob {
        inference_id: s(attr::INFERENCE_ID).unwrap_or_default(),
        status: s(attr::STATUS).unwrap_or_default(),
        submitted_at: s(attr::SUBMITTED_AT),
        completed_at: s(attr::COMPLETED_AT),
        output_location: s(attr::OUTPUT_LOCATION),
        failure_location: s(attr::FAILURE_LOCATION),
        failure_reason: s(attr::FAILURE_REASON),
        failure_excerpt: s(attr::FAILURE_EXCERPT),
        result: item.get(attr::RESULT).map(attribute_to_json),
        ttl: n(attr::TTL),
        request_ttl_secs: n(REQUEST_TTL_SECS).and_then(|v| u64::try_from(v).ok()),
        invocation_timeout_secs: n(INVOCATION_TIMEOUT_SECS).and_then(|v| u64::try_from(v).ok()),
        input_sha256: s(INPUT_SHA256),
        submission_failed: item
            .get(SUBMISSION_FAILED)
            .and_then(|v| v.as_bool().ok())
            .copied()
            .unwrap_or(false),
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
