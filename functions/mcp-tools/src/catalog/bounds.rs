//! The sizes a tool's schema bounds, checked before boon walks anything: an array past
//! `maxItems`, a string past `maxLength` (in characters, as JSON Schema counts) or an object
//! past `maxProperties` is refused before its items are looked at, so an oversized argument
//! costs what its bound says, not what its items would (boon checks every item and keeps every
//! error). Read once per schema at cold start. Only keywords that always apply are followed
//! (`properties`, `prefixItems`, `items`, `additionalProperties` as a schema, `$ref` to a place
//! in the same schema), so whatever this refuses boon refuses too; what it does not read
//! (`anyOf`, `if`, `patternProperties`, other resources…) is boon's alone.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

/// How deep the check follows the value and the schema's `$ref`s: past it, boon alone decides.
const MAX_DEPTH: usize = 64;

type Id = usize;

/// One place in the schema: its own bounds and where its keywords lead.
#[derive(Debug, Default)]
struct Node {
    max_items: Option<usize>,
    max_length: Option<usize>,
    max_properties: Option<usize>,
    properties: BTreeMap<String, Id>,
    /// By position; `None` where the item's schema is not read.
    prefix_items: Vec<Option<Id>>,
    items: Option<Id>,
    /// `additionalProperties`, when no `patternProperties` decides which names it covers.
    additional: Option<Id>,
    reference: Option<Id>,
    /// This place, or one it leads to, bounds a size: the walk goes nowhere else.
    bounds: bool,
}

/// A schema's size bounds, ready to check a value.
#[derive(Debug, Default)]
pub(super) struct Bounds {
    /// The schema's root first; empty when the schema bounds no size.
    nodes: Vec<Node>,
}

/// One step into a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step<'v> {
    Property(&'v str),
    Item(usize),
}

/// A size past its bound: where (the steps into the value, innermost first, as the check
/// came back out) and the rule, in boon's words.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Breach<'v> {
    pub(super) steps: Vec<Step<'v>>,
    pub(super) rule: String,
}

impl<'v> Breach<'v> {
    fn new(rule: String) -> Self {
        Self {
            steps: Vec::new(),
            rule,
        }
    }

    fn within(mut self, step: Step<'v>) -> Self {
        self.steps.push(step);
        self
    }
}

impl Bounds {
    /// The bounds of `schema` (a compiled one: checked against the 2020-12 metaschema).
    pub(super) fn read(schema: &Map<String, Value>) -> Self {
        let mut reader = Reader {
            root: schema,
            nodes: Vec::new(),
            references: HashMap::new(),
        };
        let root = reader.push();
        reader.fill(root, schema, 0);
        let mut nodes = reader.nodes;
        mark_bounds(&mut nodes);
        if !nodes[root].bounds {
            nodes.clear();
        }
        Self { nodes }
    }

    /// Refuses the first size past its bound, its items unread.
    pub(super) fn check<'v>(&self, value: &'v Value) -> Result<(), Breach<'v>> {
        if self.nodes.is_empty() {
            return Ok(());
        }
        self.walk(0, value, 0)
    }

    fn walk<'v>(&self, id: Id, value: &'v Value, depth: usize) -> Result<(), Breach<'v>> {
        let node = &self.nodes[id];
        if !node.bounds || depth > MAX_DEPTH {
            return Ok(());
        }
        // The size first: past its bound, nothing inside is looked at.
        match value {
            Value::Array(items) => {
                if let Some(max) = node.max_items.filter(|max| items.len() > *max) {
                    return Err(Breach::new(format!(
                        "maximum {max} items required, but got {} items",
                        items.len()
                    )));
                }
            }
            // Bytes are at least as many as characters: counted only when they might be over.
            Value::String(text) => {
                if let Some(max) = node.max_length.filter(|max| text.len() > *max) {
                    let got = text.chars().count();
                    if got > max {
                        return Err(Breach::new(format!(
                            "length must be <={max}, but got {got}"
                        )));
                    }
                }
            }
            Value::Object(members) => {
                if let Some(max) = node.max_properties.filter(|max| members.len() > *max) {
                    return Err(Breach::new(format!(
                        "maximum {max} properties required, but got {} properties",
                        members.len()
                    )));
                }
            }
            _ => {}
        }
        if let Some(target) = node.reference {
            self.walk(target, value, depth + 1)?;
        }
        match value {
            Value::Array(items) => self.items(node, items, depth),
            Value::Object(members) => self.members(node, members, depth),
            _ => Ok(()),
        }
    }

    fn items<'v>(&self, node: &Node, items: &'v [Value], depth: usize) -> Result<(), Breach<'v>> {
        let prefix = node.prefix_items.len().min(items.len());
        for (i, (schema, item)) in node.prefix_items.iter().zip(items).enumerate() {
            if let Some(schema) = self.leads_to_bounds(*schema) {
                self.walk(schema, item, depth + 1)
                    .map_err(|b| b.within(Step::Item(i)))?;
            }
        }
        if let Some(schema) = self.leads_to_bounds(node.items) {
            for (i, item) in items.iter().enumerate().skip(prefix) {
                self.walk(schema, item, depth + 1)
                    .map_err(|b| b.within(Step::Item(i)))?;
            }
        }
        Ok(())
    }

    fn members<'v>(
        &self,
        node: &Node,
        members: &'v Map<String, Value>,
        depth: usize,
    ) -> Result<(), Breach<'v>> {
        let step = |name: &'v String, schema: Id, value: &'v Value| {
            self.walk(schema, value, depth + 1)
                .map_err(|b| b.within(Step::Property(name)))
        };
        match self.leads_to_bounds(node.additional) {
            // Every member has a schema: each is read once.
            Some(additional) => {
                for (name, value) in members {
                    let schema = node.properties.get(name).copied().unwrap_or(additional);
                    step(name, schema, value)?;
                }
            }
            // Only the named ones do: each is looked up.
            None => {
                for (name, schema) in &node.properties {
                    if let Some((name, value)) = members.get_key_value(name) {
                        step(name, *schema, value)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn leads_to_bounds(&self, id: Option<Id>) -> Option<Id> {
        id.filter(|id| self.nodes[*id].bounds)
    }
}

/// Reads a schema into nodes, each `$ref` target once (so a recursive schema is a cycle of
/// nodes, not an endless tree).
struct Reader<'s> {
    root: &'s Map<String, Value>,
    nodes: Vec<Node>,
    references: HashMap<&'s str, Option<Id>>,
}

impl<'s> Reader<'s> {
    fn push(&mut self) -> Id {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    /// The node of a subschema; None for one this does not read (a boolean schema, another
    /// resource, too deep).
    fn node(&mut self, schema: &'s Value, depth: usize) -> Option<Id> {
        let schema = schema.as_object()?;
        if depth > MAX_DEPTH || schema.contains_key("$id") {
            return None;
        }
        let id = self.push();
        self.fill(id, schema, depth);
        Some(id)
    }

    fn fill(&mut self, id: Id, schema: &'s Map<String, Value>, depth: usize) {
        let size = |keyword: &str| {
            schema
                .get(keyword)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
        };
        let (max_items, max_length, max_properties) =
            (size("maxItems"), size("maxLength"), size("maxProperties"));
        let mut properties = BTreeMap::new();
        for (name, sub) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(child) = self.node(sub, depth + 1) {
                properties.insert(name.clone(), child);
            }
        }
        let prefix_items = match schema.get("prefixItems") {
            Some(Value::Array(subs)) => subs.iter().map(|s| self.node(s, depth + 1)).collect(),
            _ => Vec::new(),
        };
        let items = schema.get("items").and_then(|s| self.node(s, depth + 1));
        let additional = if schema.contains_key("patternProperties") {
            None
        } else {
            schema
                .get("additionalProperties")
                .and_then(|s| self.node(s, depth + 1))
        };
        let reference = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| self.reference(r, depth + 1));
        self.nodes[id] = Node {
            max_items,
            max_length,
            max_properties,
            properties,
            prefix_items,
            items,
            additional,
            reference,
            bounds: false,
        };
    }

    /// The node `#` or `#/<JSON Pointer>` names in the same schema; None for any other
    /// reference (an anchor, another resource, a percent-encoded pointer), left to boon.
    fn reference(&mut self, reference: &'s str, depth: usize) -> Option<Id> {
        if let Some(known) = self.references.get(reference) {
            return *known;
        }
        let target = self.target(reference).filter(|_| depth <= MAX_DEPTH);
        let Some(target) = target else {
            self.references.insert(reference, None);
            return None;
        };
        let id = self.push();
        self.references.insert(reference, Some(id));
        self.fill(id, target, depth);
        Some(id)
    }

    fn target(&self, reference: &str) -> Option<&'s Map<String, Value>> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.contains('%') || !(pointer.is_empty() || pointer.starts_with('/')) {
            return None;
        }
        let mut tokens = pointer.split('/').skip(1).map(unescape);
        let Some(first) = tokens.next() else {
            return Some(self.root);
        };
        let mut at = self.root.get(&first)?;
        // A place inside another resource reads its own references against that one.
        let elsewhere = |v: &Value| v.as_object().is_some_and(|m| m.contains_key("$id"));
        if elsewhere(at) {
            return None;
        }
        for token in tokens {
            at = match at {
                Value::Object(map) => map.get(&token)?,
                Value::Array(list) => list.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
            if elsewhere(at) {
                return None;
            }
        }
        at.as_object()
    }
}

/// A JSON Pointer token as the name it stands for.
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Marks each node that bounds a size or leads to one, until nothing changes (a `$ref` cycle
/// is a cycle of nodes).
fn mark_bounds(nodes: &mut [Node]) {
    loop {
        let mut changed = false;
        for i in 0..nodes.len() {
            if nodes[i].bounds {
                continue;
            }
            let node = &nodes[i];
            let own = node.max_items.is_some()
                || node.max_length.is_some()
                || node.max_properties.is_some();
            let leads = node
                .properties
                .values()
                .copied()
                .chain(node.prefix_items.iter().flatten().copied())
                .chain(node.items)
                .chain(node.additional)
                .chain(node.reference)
                .any(|child| nodes[child].bounds);
            if own || leads {
                nodes[i].bounds = true;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}
