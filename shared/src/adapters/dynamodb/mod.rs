//! DynamoDB: the two tables as the `JobStore` and `RunStore` ports. Each domain [`Write`]
//! becomes exactly one `PutItem` or `UpdateItem` whose condition expression is compiled from
//! its [`Guard`](crate::domain::item::Guard).
//! - [`codec`]: the one item codec;
//! - [`expression`]: the one expression builder;
//! - [`limits`]: what DynamoDB can store inline (sizes, numbers, nesting).

pub mod codec;
pub mod expression;
pub mod limits;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use chrono::{DateTime, Utc};
use serde_json::Value;

pub use codec::{
    attribute_to_json, from_attribute, from_item, json_to_attribute, to_attribute, to_item,
};
pub use expression::Expression;

use crate::adapters::aws::classify;
use crate::domain::item::{Applied, Write, WriteOp};
use crate::domain::job::{self, Job};
use crate::domain::run::{self, Run};
use crate::ports::{JobStore, RunStore, StoreError};

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

    fn fits_inline(&self, value: &Value, max_bytes: u64) -> bool {
        limits::fits_inline(value, max_bytes)
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
