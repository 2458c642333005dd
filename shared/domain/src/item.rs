//! The vocabulary of conditional writes: an item as named attributes, the guard a write is
//! conditioned on, and the changes it makes.
//!
//! Every state transition is written once, as a [`Write`], by pure functions of the domain.
//! The DynamoDB adapter compiles it into one `PutItem` or `UpdateItem` with a condition
//! expression; the in-memory store evaluates the same [`Guard`] with [`Guard::holds`], whose
//! rules are DynamoDB's (a comparison with a missing attribute is false). So the fakes model
//! exactly the states the real conditions encode, and the port contract tests hold both to it.

use std::collections::BTreeMap;

use serde_json::Value;

/// One attribute value. `Json` is a native map, list or other JSON value (the inline result).
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    S(String),
    N(i64),
    Bool(bool),
    Json(Value),
}

impl Attr {
    pub fn s(v: impl Into<String>) -> Self {
        Attr::S(v.into())
    }

    pub fn as_s(&self) -> Option<&str> {
        match self {
            Attr::S(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_n(&self) -> Option<i64> {
        match self {
            Attr::N(n) => Some(*n),
            _ => None,
        }
    }

    /// Any attribute as JSON (a string stays a string, a number a number).
    pub fn to_json(&self) -> Value {
        match self {
            Attr::S(s) => Value::String(s.clone()),
            Attr::N(n) => Value::from(*n),
            Attr::Bool(b) => Value::Bool(*b),
            Attr::Json(v) => v.clone(),
        }
    }
}

/// An item: attribute name → value.
pub type Item = BTreeMap<String, Attr>;

/// The condition of a write, evaluated against the item as stored (or its absence).
#[derive(Debug, Clone, PartialEq)]
pub enum Guard {
    /// The attribute is absent (on a key attribute: no item).
    Absent(&'static str),
    Eq(&'static str, Attr),
    /// A number attribute at most this value; false when absent.
    AtMost(&'static str, i64),
    /// Equal to one of the values; false when absent.
    In(&'static str, Vec<Attr>),
    Not(Box<Guard>),
    All(Vec<Guard>),
    Any(Vec<Guard>),
}

impl Guard {
    /// DynamoDB's rule: comparisons with a missing attribute are false.
    pub fn holds(&self, item: Option<&Item>) -> bool {
        let get = |name: &str| item.and_then(|i| i.get(name));
        match self {
            Guard::Absent(name) => get(name).is_none(),
            Guard::Eq(name, value) => get(name) == Some(value),
            Guard::AtMost(name, n) => get(name).and_then(Attr::as_n).is_some_and(|v| v <= *n),
            Guard::In(name, values) => get(name).is_some_and(|v| values.contains(v)),
            Guard::Not(g) => !g.holds(item),
            Guard::All(gs) => gs.iter().all(|g| g.holds(item)),
            Guard::Any(gs) => gs.iter().any(|g| g.holds(item)),
        }
    }
}

/// One change of an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Set(&'static str, Attr),
    /// Sets the attribute only when the item does not have it yet (keeps submit-time fields).
    SetIfAbsent(&'static str, Attr),
    /// Adds to a number attribute, taking a missing one as 0 (an atomic counter).
    Add(&'static str, i64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// Replaces the whole item.
    Put(Item),
    /// Changes some attributes, creating the item (with its key) when there is none.
    Update(Vec<Change>),
}

/// One conditional write: the key of the item, what to write, and when it may be written.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub key: Item,
    pub op: WriteOp,
    pub guard: Guard,
}

/// What a conditional write did.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// `previous`: the item stored under the key before this write (expired or not), so a caller
    /// can tell a new record from one it changed, and read what it held.
    Written { previous: Option<Item> },
    /// The guard did not hold; the item as it was stored, when there was one.
    Refused(Option<Item>),
}

impl Write {
    /// The write applied to `stored` in memory: the new item, or `None` when the guard does not
    /// hold. The in-memory stores use this; DynamoDB does the same on its side.
    pub fn apply_to(&self, stored: Option<&Item>) -> Option<Item> {
        if !self.guard.holds(stored) {
            return None;
        }
        Some(match &self.op {
            WriteOp::Put(item) => {
                let mut item = item.clone();
                item.extend(self.key.clone());
                item
            }
            WriteOp::Update(changes) => {
                let mut item = stored.cloned().unwrap_or_else(|| self.key.clone());
                for change in changes {
                    match change {
                        Change::Set(name, value) => {
                            item.insert((*name).to_owned(), value.clone());
                        }
                        Change::SetIfAbsent(name, value) => {
                            item.entry((*name).to_owned())
                                .or_insert_with(|| value.clone());
                        }
                        Change::Add(name, delta) => {
                            let was = item.get(*name).and_then(Attr::as_n).unwrap_or(0);
                            item.insert((*name).to_owned(), Attr::N(was + delta));
                        }
                    }
                }
                item
            }
        })
    }
}

/// A typed reading of an item's attributes.
pub struct Fields<'a>(pub &'a Item);

impl Fields<'_> {
    pub fn s(&self, name: &str) -> Option<String> {
        self.0.get(name).and_then(Attr::as_s).map(str::to_owned)
    }

    pub fn n(&self, name: &str) -> Option<i64> {
        self.0.get(name).and_then(Attr::as_n)
    }

    pub fn json(&self, name: &str) -> Option<Value> {
        self.0.get(name).map(Attr::to_json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, Attr)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn comparisons_with_missing_attributes_are_false_as_in_dynamodb() {
        let i = item(&[("id", Attr::s("a")), ("status", Attr::s("pending"))]);
        assert!(!Guard::AtMost("ttl", 10).holds(Some(&i)));
        assert!(Guard::Not(Box::new(Guard::In("stage", vec![Attr::s("x")]))).holds(Some(&i)));
        assert!(Guard::Absent("id").holds(None));
        assert!(!Guard::Eq("status", Attr::s("pending")).holds(None));
        assert!(Guard::Any(vec![Guard::Absent("id"), Guard::AtMost("ttl", 1)]).holds(None));
    }

    #[test]
    fn updates_keep_what_set_if_absent_finds_and_create_missing_items_with_their_key() {
        let key = item(&[("id", Attr::s("a"))]);
        let w = Write {
            key: key.clone(),
            op: WriteOp::Update(vec![
                Change::Set("status", Attr::s("completed")),
                Change::SetIfAbsent("submitted_at", Attr::s("late")),
            ]),
            guard: Guard::Any(vec![
                Guard::Absent("id"),
                Guard::Eq("status", Attr::s("pending")),
            ]),
        };
        let created = w.apply_to(None).unwrap();
        assert_eq!(created["id"], Attr::s("a"));
        assert_eq!(created["submitted_at"], Attr::s("late"));
        let pending = item(&[
            ("id", Attr::s("a")),
            ("status", Attr::s("pending")),
            ("submitted_at", Attr::s("early")),
        ]);
        assert_eq!(
            w.apply_to(Some(&pending)).unwrap()["submitted_at"],
            Attr::s("early")
        );
        assert_eq!(w.apply_to(Some(&created)), None);
    }
}
