//! The results table in memory: jobs as submit_job and the outcomes write them, with faults
//! a test can switch on.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use domain::ids::InferenceId;
use domain::item::{Applied, Attr, Change, Item, Write, WriteOp};
use domain::job::{attr, Job};
use ports::*;

use crate::table::{apply, key_of};

#[derive(Default)]
pub struct MemoryJobs {
    items: Mutex<HashMap<String, Item>>,
    reject_inline: Mutex<bool>,
    unavailable: Mutex<bool>,
    calls: Mutex<(usize, usize)>,
}

impl MemoryJobs {
    /// How many reads and writes were made, as DynamoDB would count GetItem and the
    /// conditional writes.
    pub fn calls(&self) -> (usize, usize) {
        *self.calls.lock().unwrap()
    }

    /// The job as stored, expired or not.
    pub fn job(&self, inference_id: &str) -> Option<Job> {
        let items = self.items.lock().unwrap();
        items.get(inference_id).map(|i| Job::from_item(i).unwrap())
    }

    /// A `pending` item as submit_job writes it, with its submit time.
    pub fn insert_pending(&self, inference_id: &str, submitted_at: &str) {
        self.insert(
            inference_id,
            &[
                (attr::STATUS, Attr::s("pending")),
                (attr::STAGE, Attr::s("invoked")),
                (attr::SUBMITTED_AT, Attr::s(submitted_at)),
            ],
        );
    }

    /// A completed job whose output is stored as a pointer only.
    pub fn insert_completed_pointer(&self, inference_id: &str, output_location: &str) {
        self.insert(
            inference_id,
            &[
                (attr::STATUS, Attr::s("completed")),
                (attr::OUTPUT_LOCATION, Attr::s(output_location)),
            ],
        );
    }

    fn insert(&self, inference_id: &str, attrs: &[(&str, Attr)]) {
        let mut item: Item = attrs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        item.insert(attr::INFERENCE_ID.into(), Attr::s(inference_id));
        self.items.lock().unwrap().insert(inference_id.into(), item);
    }

    /// Every write with an inline result fails from now on, as DynamoDB's ValidationException would.
    pub fn reject_inline_results(&self) {
        *self.reject_inline.lock().unwrap() = true;
    }

    /// Every write fails from now on, as an unreachable table's would.
    pub fn fail_writes(&self) {
        *self.unavailable.lock().unwrap() = true;
    }
}

impl JobStore for MemoryJobs {
    async fn get(
        &self,
        inference_id: &InferenceId,
        now: DateTime<Utc>,
    ) -> Result<Option<Job>, StoreError> {
        tokio::task::yield_now().await;
        self.calls.lock().unwrap().0 += 1;
        let item = self
            .items
            .lock()
            .unwrap()
            .get(inference_id.as_str())
            .cloned();
        let job =
            item.map(|i| Job::from_item(&i))
                .transpose()
                .map_err(|e| StoreError::Corrupt {
                    table: "memory".into(),
                    message: e.to_string(),
                })?;
        Ok(job.filter(|j| !j.is_expired(now)))
    }

    async fn get_many(
        &self,
        inference_ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<Job>>, StoreError> {
        let mut jobs = Vec::with_capacity(inference_ids.len());
        for id in inference_ids {
            jobs.push(self.get(&id.clone().into(), now).await?);
        }
        Ok(jobs)
    }

    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        tokio::task::yield_now().await;
        self.calls.lock().unwrap().1 += 1;
        let has_result = matches!(&write.op, WriteOp::Update(changes)
            if changes.iter().any(|c| matches!(c, Change::Set(attr::RESULT, _))));
        if *self.unavailable.lock().unwrap() {
            return Err(StoreError::Aws {
                operation: "UpdateItem",
                table: "memory".into(),
                failure: AwsFailure {
                    code: Some("ServiceUnavailable".into()),
                    message: "down".into(),
                    retryable: true,
                    ambiguous: true,
                },
            });
        }
        if has_result && *self.reject_inline.lock().unwrap() {
            return Err(StoreError::Rejected {
                operation: "UpdateItem",
                table: "memory".into(),
                message: "inline result rejected".into(),
            });
        }
        Ok(apply(&self.items, key_of(write, attr::INFERENCE_ID), write))
    }

    /// DynamoDB's rules: the fake stands in for the results table.
    fn fits_inline(&self, value: &serde_json::Value, max_bytes: u64) -> bool {
        domain::item_limits::fits_inline(value, max_bytes)
    }
}
