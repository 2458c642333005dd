//! The MCP Events subscriptions table as the `SubscriptionStore` port: one partition per owner.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::{from_item, Table};
use crate::aws::SdkClient;
use domain::caller::Owner;
use domain::item::{Applied, Write};
use domain::subscription::{attr, Subscription};
use ports::{StoreError, SubscriptionStore, MAX_SUBSCRIPTION_ITEMS};

#[derive(Clone)]
pub struct DynamoSubscriptions(Table);

impl DynamoSubscriptions {
    pub fn new(client: SdkClient<aws_sdk_dynamodb::Client>, table: impl Into<String>) -> Self {
        Self(Table {
            client,
            name: table.into(),
        })
    }

    fn key(owner: &Owner, id: &str) -> std::collections::HashMap<String, AttributeValue> {
        std::collections::HashMap::from([
            (
                attr::OWNER.to_owned(),
                AttributeValue::S(owner.as_str().to_owned()),
            ),
            (attr::ID.to_owned(), AttributeValue::S(id.to_owned())),
        ])
    }
}

impl SubscriptionStore for DynamoSubscriptions {
    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        self.0.write(write).await
    }

    async fn get(&self, owner: &Owner, id: &str) -> Result<Option<Subscription>, StoreError> {
        let t = &self.0;
        // Eventually consistent: half the read, and a delivery a moment after a refresh
        // signs with the secret it replaced, which the grace keeps valid.
        let got = t
            .client
            .get_item()
            .table_name(&t.name)
            .set_key(Some(Self::key(owner, id)))
            .send()
            .await
            .map_err(|e| t.aws_error("GetItem", &e))?;
        Ok(got
            .item
            .map(|item| from_item(&item))
            .and_then(|item| Subscription::from_item(&item)))
    }

    async fn of_owner(&self, owner: &Owner) -> Result<Vec<Subscription>, StoreError> {
        let t = &self.0;
        let mut pages = t
            .client
            .query()
            .table_name(&t.name)
            .key_condition_expression("#owner = :owner")
            .expression_attribute_names("#owner", attr::OWNER)
            .expression_attribute_values(":owner", AttributeValue::S(owner.as_str().to_owned()))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        let mut found = Vec::new();
        let mut read = 0;
        while let Some(item) = pages.next().await {
            let item = item.map_err(|e| t.aws_error("Query", &e))?;
            read += 1;
            found.extend(Subscription::from_item(&from_item(&item)));
            if read >= MAX_SUBSCRIPTION_ITEMS {
                break;
            }
        }
        Ok(found)
    }

    async fn delete(&self, owner: &Owner, id: &str) -> Result<bool, StoreError> {
        let t = &self.0;
        let out = t
            .client
            .delete_item()
            .table_name(&t.name)
            .set_key(Some(Self::key(owner, id)))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| t.aws_error("DeleteItem", &e))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }
}
