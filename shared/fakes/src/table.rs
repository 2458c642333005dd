//! A write applied to a stored item as DynamoDB applies it: what both table fakes share, so
//! their conditions are the DynamoDB adapter's own.

use std::collections::HashMap;
use std::sync::Mutex;

use domain::item::{Applied, Attr, Item, Write};

pub(crate) fn key_of(write: &Write, name: &str) -> String {
    write
        .key
        .get(name)
        .and_then(Attr::as_s)
        .unwrap_or_default()
        .to_owned()
}

/// Applies `write` to the item under `key` as DynamoDB would, returning the stored item on refusal.
pub(crate) fn apply<K: std::hash::Hash + Eq>(
    items: &Mutex<HashMap<K, Item>>,
    key: K,
    write: &Write,
) -> Applied {
    let mut items = items.lock().unwrap();
    let stored = items.get(&key);
    match write.apply_to(stored) {
        Some(item) => {
            let previous = items.insert(key, item);
            Applied::Written { previous }
        }
        None => Applied::Refused(stored.cloned()),
    }
}
