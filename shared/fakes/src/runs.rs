//! The pipeline results table in memory: runs by session and execution.

use std::collections::HashMap;
use std::sync::Mutex;

use domain::item::{Applied, Item, Write};
use domain::run::{self, Run};
use ports::*;

use crate::table::{apply, key_of};

#[derive(Default)]
pub struct MemoryRuns {
    items: Mutex<HashMap<(String, String), Item>>,
}

impl MemoryRuns {
    pub fn all(&self) -> Vec<Run> {
        self.items
            .lock()
            .unwrap()
            .values()
            .map(Run::from_item)
            .collect()
    }
}

impl RunStore for MemoryRuns {
    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        tokio::task::yield_now().await;
        let key = (
            key_of(write, run::attr::SESSION_ID),
            key_of(write, run::attr::EXECUTION_ARN),
        );
        Ok(apply(&self.items, key, write))
    }

    async fn query_session(&self, session_id: &str) -> Result<Vec<Run>, StoreError> {
        let items = self.items.lock().unwrap();
        Ok(items
            .iter()
            .filter(|((s, _), _)| s == session_id)
            .map(|(_, i)| Run::from_item(i))
            .collect())
    }

    async fn get_many(&self, keys: &[(String, String)]) -> Result<Vec<Option<Run>>, StoreError> {
        tokio::task::yield_now().await;
        let items = self.items.lock().unwrap();
        Ok(keys
            .iter()
            .map(|key| items.get(key).map(Run::from_item))
            .collect())
    }
}
