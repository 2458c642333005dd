//! DynamoDB: the two tables as the `JobStore` and `RunStore` ports. Each domain [`Write`]
//! becomes exactly one `PutItem` or `UpdateItem` whose condition expression is compiled from
//! its [`Guard`](domain::item::Guard).
//! - [`codec`]: the one item codec;
//! - [`expression`]: the one expression builder;
//! - [`limits`]: what DynamoDB can store inline (sizes, numbers, nesting), from the domain.

pub mod codec;
pub mod expression;
mod subscriptions;
pub use domain::item_limits as limits;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, ReturnValue, ReturnValuesOnConditionCheckFailure,
};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use chrono::{DateTime, Utc};
use serde_json::Value;

pub use codec::{
    attribute_to_json, from_attribute, from_item, json_to_attribute, to_attribute, to_item,
};
pub use expression::Expression;
pub use subscriptions::DynamoSubscriptions;

use crate::aws::{classify, SdkClient};
use domain::caller::Owner;
use domain::events::{self, Cursor, Event};
use domain::ids::InferenceId;
use domain::item::{Applied, Write, WriteOp};
use domain::job::{self, Job};
use domain::run::{self, Run};
use ports::{EventLog, JobStore, RunStore, StoreError};

type Attributes = std::collections::HashMap<String, AttributeValue>;

/// The part PutItem and UpdateItem share: the table, the condition with its placeholders, and
/// the items returned (the one replaced when written, the one stored when refused).
macro_rules! conditional {
    ($request:expr, $table:expr, $condition:expr, $expr:expr) => {
        $request
            .table_name($table)
            .condition_expression($condition)
            .set_expression_attribute_names(Some($expr.names))
            .set_expression_attribute_values((!$expr.values.is_empty()).then_some($expr.values))
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    };
}

/// One table: conditional writes and consistent reads.
#[derive(Clone)]
pub(crate) struct Table {
    pub(crate) client: SdkClient<aws_sdk_dynamodb::Client>,
    pub(crate) name: String,
}

impl Table {
    /// One read of a key no item has (GetItem, one key attribute projected: half a read
    /// unit), answered or not within `within`: what a process's first call through the SDK does
    /// once (the connection and its TLS session, the credentials, the endpoint, the SDK's first
    /// pass through its code) is done here, in init, where Lambda gives a whole CPU, and not in
    /// the first invocation, which at 128 MB gets 128/1769 of one (docs/performance.md, "The
    /// first answer at 128 MB"). The first call makes its own connection when this one failed.
    /// `key`: the table's key attributes.
    async fn warm_up(&self, key: &[&str], within: std::time::Duration) -> WarmUp {
        let read = self
            .client
            .get_item()
            .table_name(&self.name)
            .set_key(Some(
                key.iter()
                    .map(|name| (name.to_string(), AttributeValue::S(NO_ITEM.into())))
                    .collect(),
            ))
            .projection_expression("#k")
            .expression_attribute_names("#k", key[0])
            .send();
        match tokio::time::timeout(within, read).await {
            Ok(Ok(_)) => WarmUp::Answered,
            Ok(Err(e)) => WarmUp::Refused(classify(&e)),
            Err(_) => WarmUp::NoAnswerWithin(within),
        }
    }

    pub(crate) fn aws_error<E>(
        &self,
        operation: &'static str,
        e: &SdkError<E, HttpResponse>,
    ) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
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

    /// The items at `keys` (at most 100) by one BatchGetItem, eventually consistent (half the
    /// read units of a strong read: a listen sees a change a round later at worst). Keys
    /// DynamoDB leaves unprocessed (throttling) are asked again, a few times. One answer per
    /// key, in order.
    async fn get_many(
        &self,
        keys: Vec<Attributes>,
        key_names: &[&str],
    ) -> Result<Vec<Option<Attributes>>, StoreError> {
        const ATTEMPTS: u32 = 5;
        if keys.is_empty() {
            // BatchGetItem refuses a request with no keys: nothing to read, no call.
            return Ok(Vec::new());
        }
        let mut found: Vec<Attributes> = Vec::with_capacity(keys.len());
        let mut pending = keys.clone();
        for attempt in 0..ATTEMPTS {
            if pending.is_empty() {
                break;
            }
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(50 << attempt)).await;
            }
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .build()
                .map_err(|e| StoreError::Rejected {
                    operation: "BatchGetItem",
                    table: self.name.clone(),
                    message: e.to_string(),
                })?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.name, request)
                .send()
                .await
                .map_err(|e| self.aws_error("BatchGetItem", &e))?;
            let mut responses = out.responses.unwrap_or_default();
            found.extend(responses.remove(&self.name).unwrap_or_default());
            let mut unprocessed = out.unprocessed_keys.unwrap_or_default();
            pending = unprocessed
                .remove(&self.name)
                .map(|k| k.keys)
                .unwrap_or_default();
        }
        if !pending.is_empty() {
            return Err(StoreError::Aws {
                operation: "BatchGetItem",
                table: self.name.clone(),
                failure: ports::AwsFailure {
                    code: Some("UnprocessedKeys".into()),
                    message: format!(
                        "{} keys still unprocessed after {ATTEMPTS} attempts",
                        pending.len()
                    ),
                    retryable: true,
                    ambiguous: false,
                },
            });
        }
        let same = |item: &Attributes, key: &Attributes| {
            key_names
                .iter()
                .all(|name| item.get(*name) == key.get(*name))
        };
        Ok(keys
            .iter()
            .map(|key| found.iter().find(|item| same(item, key)).cloned())
            .collect())
    }

    pub(crate) async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        let mut expr = Expression::default();
        let condition = expr.condition(&write.guard);
        match &write.op {
            WriteOp::Put(item) => {
                let mut item = to_item(item);
                item.extend(to_item(&write.key));
                let request = self.client.put_item().set_item(Some(item));
                let outcome = conditional!(request, &self.name, condition, expr)
                    .send()
                    .await;
                self.applied(
                    "PutItem",
                    outcome,
                    |o| o.attributes(),
                    |e| match e {
                        PutItemError::ConditionalCheckFailedException(c) => Some(c.item()),
                        _ => None,
                    },
                )
            }
            WriteOp::Update(changes) => {
                let update = expr.update(changes);
                let request = self
                    .client
                    .update_item()
                    .set_key(Some(to_item(&write.key)))
                    .update_expression(update);
                let outcome = conditional!(request, &self.name, condition, expr)
                    .send()
                    .await;
                self.applied(
                    "UpdateItem",
                    outcome,
                    |o| o.attributes(),
                    |e| match e {
                        UpdateItemError::ConditionalCheckFailedException(c) => Some(c.item()),
                        _ => None,
                    },
                )
            }
        }
    }

    /// What a conditional write did: the item it replaced when written, the item as stored
    /// when its condition failed (`refused` picks that failure out of the operation's errors).
    fn applied<O, E>(
        &self,
        operation: &'static str,
        outcome: Result<O, SdkError<E, HttpResponse>>,
        previous: impl FnOnce(&O) -> Option<&Attributes>,
        refused: impl FnOnce(&E) -> Option<Option<&Attributes>>,
    ) -> Result<Applied, StoreError>
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        match outcome {
            Ok(o) => Ok(Applied::Written {
                previous: previous(&o).filter(|a| !a.is_empty()).map(from_item),
            }),
            Err(e) => match e.as_service_error().and_then(refused) {
                Some(stored) => Ok(Applied::Refused(stored.map(from_item))),
                None => Err(self.aws_error(operation, &e)),
            },
        }
    }
}

/// The results table.
#[derive(Clone)]
pub struct DynamoJobs(Table);

impl DynamoJobs {
    pub fn new(client: SdkClient<aws_sdk_dynamodb::Client>, table: impl Into<String>) -> Self {
        Self(Table {
            client,
            name: table.into(),
        })
    }

    /// The warm-up read ([`Table::warm_up`]) on the results table.
    pub async fn warm_up(&self, within: std::time::Duration) -> WarmUp {
        self.0.warm_up(&[job::attr::INFERENCE_ID], within).await
    }
}

/// How long a cold start waits for its warm-up read (tens of milliseconds in a region, its TLS
/// handshake included): a network that does not answer delays init by at most this, and the
/// first call opens its own connection.
pub const WARM_UP_WITHIN: std::time::Duration = std::time::Duration::from_millis(500);

/// A key value no item has: inference ids are SageMaker's, execution ARNs ARNs, session ids
/// the server's.
const NO_ITEM: &str = "-";

/// How [`DynamoJobs::warm_up`]'s read ended; none of them stops a cold start.
#[derive(Debug)]
pub enum WarmUp {
    Answered,
    Refused(ports::AwsFailure),
    NoAnswerWithin(std::time::Duration),
}

impl JobStore for DynamoJobs {
    async fn get(
        &self,
        inference_id: &InferenceId,
        now: DateTime<Utc>,
    ) -> Result<Option<Job>, StoreError> {
        let t = &self.0;
        let got = t
            .client
            .get_item()
            .table_name(&t.name)
            .key(
                job::attr::INFERENCE_ID,
                AttributeValue::S(inference_id.to_string()),
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

    async fn get_many(
        &self,
        inference_ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<Job>>, StoreError> {
        let t = &self.0;
        let key = |id: &String| {
            Attributes::from([(
                job::attr::INFERENCE_ID.to_owned(),
                AttributeValue::S(id.clone()),
            )])
        };
        let keys = inference_ids.iter().map(key).collect();
        let items = t.get_many(keys, &[job::attr::INFERENCE_ID]).await?;
        items
            .into_iter()
            .map(|item| {
                let Some(item) = item else { return Ok(None) };
                let job = Job::from_item(&from_item(&item)).map_err(|e| StoreError::Corrupt {
                    table: t.name.clone(),
                    message: e.to_string(),
                })?;
                Ok((!job.is_expired(now)).then_some(job))
            })
            .collect()
    }

    fn fits_inline(&self, value: &Value, max_bytes: u64) -> bool {
        limits::fits_inline(value, max_bytes)
    }
}

/// The pipeline results table.
#[derive(Clone)]
pub struct DynamoRuns(Table);

impl DynamoRuns {
    pub fn new(client: SdkClient<aws_sdk_dynamodb::Client>, table: impl Into<String>) -> Self {
        Self(Table {
            client,
            name: table.into(),
        })
    }

    /// The warm-up read ([`Table::warm_up`]) on the pipeline results table.
    pub async fn warm_up(&self, within: std::time::Duration) -> WarmUp {
        self.0
            .warm_up(&[run::attr::SESSION_ID, run::attr::EXECUTION_ARN], within)
            .await
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

    async fn get_many(&self, keys: &[(String, String)]) -> Result<Vec<Option<Run>>, StoreError> {
        let key = |(session_key, execution_arn): &(String, String)| {
            Attributes::from([
                (
                    run::attr::SESSION_ID.to_owned(),
                    AttributeValue::S(session_key.clone()),
                ),
                (
                    run::attr::EXECUTION_ARN.to_owned(),
                    AttributeValue::S(execution_arn.clone()),
                ),
            ])
        };
        let names = [run::attr::SESSION_ID, run::attr::EXECUTION_ARN];
        let items = self
            .0
            .get_many(keys.iter().map(key).collect(), &names)
            .await?;
        Ok(items
            .into_iter()
            .map(|item| item.map(|item| Run::from_item(&from_item(&item))))
            .collect())
    }
}

/// The event log table: partition `owner`, sort `position`, a `ttl`.
pub struct DynamoEventLog(Table);

impl DynamoEventLog {
    pub fn new(client: SdkClient<aws_sdk_dynamodb::Client>, table: impl Into<String>) -> Self {
        Self(Table {
            client,
            name: table.into(),
        })
    }
}

impl EventLog for DynamoEventLog {
    async fn append(
        &self,
        event: &Event,
        deliver_to: &[String],
        ttl: i64,
    ) -> Result<Applied, StoreError> {
        self.0.write(&event.append(ttl, deliver_to)).await
    }

    async fn read(
        &self,
        owner: &Owner,
        after: Option<&Cursor>,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<Vec<Event>, StoreError> {
        let t = &self.0;
        let query = t
            .client
            .query()
            .table_name(&t.name)
            .expression_attribute_names("#owner", events::attr::OWNER)
            .expression_attribute_values(":owner", AttributeValue::S(owner.as_str().to_owned()));
        // DynamoDB takes no empty key value: without a cursor, the whole partition.
        let query = match after {
            None => query.key_condition_expression("#owner = :owner"),
            Some(cursor) => query
                .key_condition_expression("#owner = :owner AND #position > :from")
                .expression_attribute_names("#position", events::attr::POSITION)
                .expression_attribute_values(":from", AttributeValue::S(cursor.position())),
        };
        let out = query
            .consistent_read(true)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX).max(1))
            .send()
            .await
            .map_err(|e| t.aws_error("Query", &e))?;
        Ok(out
            .items
            .unwrap_or_default()
            .iter()
            .map(from_item)
            .filter(|item| !Event::expired(item, now))
            .filter_map(|item| Event::from_item(&item))
            .collect())
    }
}
