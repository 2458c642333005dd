//! DynamoDB: one item codec, one expression builder, and the two tables as the `JobStore` and
//! `RunStore` ports. Each domain [`Write`] becomes exactly one `PutItem` or `UpdateItem` whose
//! condition expression is compiled from its [`Guard`].

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::adapters::aws::classify;
use crate::domain::item::{Applied, Attr, Change, Guard, Item, Write, WriteOp};
use crate::domain::job::{self, Job};
use crate::domain::run::{self, Run};
use crate::ports::{JobStore, RunStore, StoreError};

// ------------------------------------------------------------------------------ item codec

pub fn to_attribute(value: &Attr) -> AttributeValue {
    match value {
        Attr::S(s) => AttributeValue::S(s.clone()),
        Attr::N(n) => AttributeValue::N(n.to_string()),
        Attr::Bool(b) => AttributeValue::Bool(*b),
        Attr::Json(v) => json_to_attribute(v),
    }
}

/// Strings and integers come back as themselves; everything else as JSON.
pub fn from_attribute(value: &AttributeValue) -> Attr {
    match value {
        AttributeValue::S(s) => Attr::S(s.clone()),
        AttributeValue::N(n) => match n.parse::<i64>() {
            Ok(i) => Attr::N(i),
            Err(_) => Attr::Json(attribute_to_json(value)),
        },
        AttributeValue::Bool(b) => Attr::Bool(*b),
        other => Attr::Json(attribute_to_json(other)),
    }
}

pub fn to_item(item: &Item) -> HashMap<String, AttributeValue> {
    item.iter()
        .map(|(k, v)| (k.clone(), to_attribute(v)))
        .collect()
}

pub fn from_item(item: &HashMap<String, AttributeValue>) -> Item {
    item.iter()
        .map(|(k, v)| (k.clone(), from_attribute(v)))
        .collect()
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

// ------------------------------------------------------------------------------ expressions

/// Builds condition and update expressions with placeholders for every name (several of ours,
/// like `status`, `ttl` and `result`, are reserved words) and value.
#[derive(Default)]
pub struct Expression {
    pub names: HashMap<String, String>,
    pub values: HashMap<String, AttributeValue>,
}

impl Expression {
    fn name(&mut self, name: &str) -> String {
        let placeholder = format!("#{name}");
        self.names.insert(placeholder.clone(), name.to_owned());
        placeholder
    }

    fn value(&mut self, value: &Attr) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values.insert(placeholder.clone(), to_attribute(value));
        placeholder
    }

    pub fn condition(&mut self, guard: &Guard) -> String {
        match guard {
            Guard::Absent(name) => format!("attribute_not_exists({})", self.name(name)),
            Guard::Eq(name, value) => format!("{} = {}", self.name(name), self.value(value)),
            Guard::AtMost(name, n) => {
                format!("{} <= {}", self.name(name), self.value(&Attr::N(*n)))
            }
            Guard::In(name, values) => {
                let name = self.name(name);
                let values: Vec<String> = values.iter().map(|v| self.value(v)).collect();
                format!("{name} IN ({})", values.join(", "))
            }
            Guard::Not(g) => format!("NOT ({})", self.condition(g)),
            Guard::All(gs) => self.join(gs, " AND "),
            Guard::Any(gs) => self.join(gs, " OR "),
        }
    }

    fn join(&mut self, guards: &[Guard], op: &str) -> String {
        let parts: Vec<String> = guards.iter().map(|g| self.condition(g)).collect();
        format!("({})", parts.join(op))
    }

    pub fn update(&mut self, changes: &[Change]) -> String {
        let clauses: Vec<String> = changes
            .iter()
            .map(|change| match change {
                Change::Set(name, value) => format!("{} = {}", self.name(name), self.value(value)),
                Change::SetIfAbsent(name, value) => {
                    let (n, v) = (self.name(name), self.value(value));
                    format!("{n} = if_not_exists({n}, {v})")
                }
            })
            .collect();
        format!("SET {}", clauses.join(", "))
    }
}

// ------------------------------------------------------------------------------ tables

/// One table: conditional writes and consistent reads.
#[derive(Clone)]
struct Table {
    client: aws_sdk_dynamodb::Client,
    name: String,
}

impl Table {
    fn aws_error<E>(
        &self,
        operation: &'static str,
        e: &aws_sdk_dynamodb::error::SdkError<
            E,
            aws_smithy_runtime_api::client::orchestrator::HttpResponse,
        >,
    ) -> StoreError
    where
        E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
    {
        let failure = classify(e);
        if failure.code.as_deref() == Some("ValidationException") {
            StoreError::Rejected {
                operation,
                table: self.name.clone(),
                message: failure.message,
            }
        } else {
            StoreError::Aws {
                operation,
                table: self.name.clone(),
                failure,
            }
        }
    }

    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        let mut expr = Expression::default();
        let condition = expr.condition(&write.guard);
        match &write.op {
            WriteOp::Put(item) => {
                let mut item = to_item(item);
                item.extend(to_item(&write.key));
                let outcome = self
                    .client
                    .put_item()
                    .table_name(&self.name)
                    .set_item(Some(item))
                    .condition_expression(condition)
                    .set_expression_attribute_names(Some(expr.names))
                    .set_expression_attribute_values(
                        (!expr.values.is_empty()).then_some(expr.values),
                    )
                    .return_values(ReturnValue::AllOld)
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .send()
                    .await;
                match outcome {
                    Ok(o) => Ok(Applied::Written {
                        previous: o.attributes().filter(|a| !a.is_empty()).map(from_item),
                    }),
                    Err(e) => match e.as_service_error() {
                        Some(PutItemError::ConditionalCheckFailedException(c)) => {
                            Ok(Applied::Refused(c.item().map(from_item)))
                        }
                        _ => Err(self.aws_error("PutItem", &e)),
                    },
                }
            }
            WriteOp::Update(changes) => {
                let update = expr.update(changes);
                let outcome = self
                    .client
                    .update_item()
                    .table_name(&self.name)
                    .set_key(Some(to_item(&write.key)))
                    .update_expression(update)
                    .condition_expression(condition)
                    .set_expression_attribute_names(Some(expr.names))
                    .set_expression_attribute_values(Some(expr.values))
                    .return_values(ReturnValue::AllOld)
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .send()
                    .await;
                match outcome {
                    Ok(o) => Ok(Applied::Written {
                        previous: o.attributes().filter(|a| !a.is_empty()).map(from_item),
                    }),
                    Err(e) => match e.as_service_error() {
                        Some(UpdateItemError::ConditionalCheckFailedException(c)) => {
                            Ok(Applied::Refused(c.item().map(from_item)))
                        }
                        _ => Err(self.aws_error("UpdateItem", &e)),
                    },
                }
            }
        }
    }
}

/// The results table.
#[derive(Clone)]
pub struct DynamoJobs(Table);

impl DynamoJobs {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self(Table {
            client,
            name: table.into(),
        })
    }
}

impl JobStore for DynamoJobs {
    async fn get(&self, inference_id: &str, now: DateTime<Utc>) -> Result<Option<Job>, StoreError> {
        let t = &self.0;
        let got = t
            .client
            .get_item()
            .table_name(&t.name)
            .key(
                job::attr::INFERENCE_ID,
                AttributeValue::S(inference_id.to_owned()),
            )
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| t.aws_error("GetItem", &e))?;
        let Some(item) = got.item else {
            return Ok(None);
        };
        let job = Job::from_item(&from_item(&item)).map_err(|e| StoreError::Corrupt {
            table: t.name.clone(),
            message: e.to_string(),
        })?;
        Ok((!job.is_expired(now)).then_some(job))
    }

    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        self.0.write(write).await
    }
}

/// The pipeline results table.
#[derive(Clone)]
pub struct DynamoRuns(Table);

impl DynamoRuns {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self(Table {
            client,
            name: table.into(),
        })
    }
}

impl RunStore for DynamoRuns {
    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        self.0.write(write).await
    }

    async fn query_session(&self, session_id: &str) -> Result<Vec<Run>, StoreError> {
        let t = &self.0;
        let mut items = t
            .client
            .query()
            .table_name(&t.name)
            .key_condition_expression("#sid = :sid")
            .expression_attribute_names("#sid", run::attr::SESSION_ID)
            .expression_attribute_values(":sid", AttributeValue::S(session_id.to_owned()))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        let mut runs = Vec::new();
        while let Some(item) = items.next().await {
            let item = item.map_err(|e| t.aws_error("Query", &e))?;
            runs.push(Run::from_item(&from_item(&item)));
        }
        Ok(runs)
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

    #[test]
    fn guards_compile_to_one_condition_with_placeholders() {
        let mut e = Expression::default();
        let c = e.condition(&Guard::Any(vec![
            Guard::Absent("inference_id"),
            Guard::All(vec![
                Guard::Eq("status", Attr::s("pending")),
                Guard::AtMost("ttl", 5),
            ]),
            Guard::Not(Box::new(Guard::In(
                "status",
                vec![Attr::s("a"), Attr::s("b")],
            ))),
        ]));
        assert_eq!(
            c,
            "(attribute_not_exists(#inference_id) OR (#status = :v0 AND #ttl <= :v1) OR NOT (#status IN (:v2, :v3)))"
        );
        assert_eq!(e.names["#ttl"], "ttl");
        assert_eq!(e.values[":v1"], AttributeValue::N("5".into()));
        let u = e.update(&[
            Change::Set("status", Attr::s("completed")),
            Change::SetIfAbsent("submitted_at", Attr::s("t")),
        ]);
        assert_eq!(
            u,
            "SET #status = :v4, #submitted_at = if_not_exists(#submitted_at, :v5)"
        );
    }
}
