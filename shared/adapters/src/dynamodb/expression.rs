//! The one expression builder: a domain [`Guard`] as a condition expression, [`Change`]s as an
//! update expression.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::dynamodb::codec::to_attribute;
use domain::item::{Attr, Change, Guard};

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
            // DynamoDB refuses redundant parentheses: a group is parenthesized once.
            Guard::Not(g) => match g.as_ref() {
                Guard::All(_) | Guard::Any(_) => format!("NOT {}", self.condition(g)),
                _ => format!("NOT ({})", self.condition(g)),
            },
            Guard::All(gs) => self.join(gs, " AND "),
            Guard::Any(gs) => self.join(gs, " OR "),
        }
    }

    fn join(&mut self, guards: &[Guard], op: &str) -> String {
        let parts: Vec<String> = guards.iter().map(|g| self.condition(g)).collect();
        match parts.as_slice() {
            [one] => one.clone(),
            _ => format!("({})", parts.join(op)),
        }
    }

    pub fn update(&mut self, changes: &[Change]) -> String {
        let (mut set, mut add) = (Vec::new(), Vec::new());
        for change in changes {
            match change {
                Change::Set(name, value) => {
                    set.push(format!("{} = {}", self.name(name), self.value(value)))
                }
                Change::SetIfAbsent(name, value) => {
                    let (n, v) = (self.name(name), self.value(value));
                    set.push(format!("{n} = if_not_exists({n}, {v})"));
                }
                Change::Add(name, delta) => add.push(format!(
                    "{} {}",
                    self.name(name),
                    self.value(&Attr::N(*delta))
                )),
            }
        }
        let mut clauses = Vec::new();
        if !set.is_empty() {
            clauses.push(format!("SET {}", set.join(", ")));
        }
        if !add.is_empty() {
            clauses.push(format!("ADD {}", add.join(", ")));
        }
        clauses.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // A group is parenthesized once, under NOT too: DynamoDB refuses redundant ones.
        let mut g = Expression::default();
        let given_back = g.condition(&Guard::Not(Box::new(Guard::Any(vec![
            Guard::Absent("quota_count"),
            Guard::AtMost("quota_count", 0),
        ]))));
        assert_eq!(
            given_back,
            "NOT (attribute_not_exists(#quota_count) OR #quota_count <= :v0)"
        );
        let single = g.condition(&Guard::All(vec![Guard::Absent("lease")]));
        assert_eq!(single, "attribute_not_exists(#lease)");
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
        let counted = e.update(&[
            Change::Add("quota_count", 1),
            Change::Set("ttl", Attr::N(9)),
        ]);
        assert_eq!(counted, "SET #ttl = :v7 ADD #quota_count :v6");
        assert_eq!(
            e.update(&[Change::Add("quota_count", -1)]),
            "ADD #quota_count :v8"
        );
    }
}
