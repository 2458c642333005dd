//! The event log in memory: each owner's events in the order of their position.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use domain::caller::Owner;
use domain::events::{attr, Cursor, Event};
use domain::item::{Applied, Item};
use ports::*;

use crate::table::{apply, key_of};

#[derive(Default)]
pub struct MemoryEventLog {
    items: Mutex<HashMap<(String, String), Item>>,
}

impl MemoryEventLog {
    /// Every logged event with the subscriptions it names, in the order they happened: what
    /// the table's stream would hand the delivery function.
    pub fn logged(&self) -> Vec<(Event, Vec<String>)> {
        let items = self.items.lock().unwrap();
        let in_order: BTreeMap<&(String, String), &Item> = items.iter().collect();
        in_order
            .into_values()
            .filter_map(|item| Some((Event::from_item(item)?, Event::deliver_to(item))))
            .collect()
    }
}

impl EventLog for MemoryEventLog {
    async fn append(
        &self,
        event: &Event,
        deliver_to: &[String],
        ttl: i64,
    ) -> Result<Applied, StoreError> {
        tokio::task::yield_now().await;
        let write = event.append(ttl, deliver_to);
        let key = (key_of(&write, attr::OWNER), key_of(&write, attr::POSITION));
        Ok(apply(&self.items, key, &write))
    }

    async fn read(
        &self,
        owner: &Owner,
        after: Option<&Cursor>,
        limit: u32,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<Event>, StoreError> {
        tokio::task::yield_now().await;
        let from = after.map(Cursor::position).unwrap_or_default();
        let items = self.items.lock().unwrap();
        let in_order: BTreeMap<&String, &Item> = items
            .iter()
            .filter(|((o, position), _)| o == owner.as_str() && *position > from)
            .map(|((_, position), item)| (position, item))
            .collect();
        Ok(in_order
            .into_values()
            .take(limit as usize)
            .filter(|item| !Event::expired(item, now))
            .filter_map(Event::from_item)
            .collect())
    }
}
