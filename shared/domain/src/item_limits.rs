//! What DynamoDB can store as a native attribute: its size as DynamoDB counts it, the numbers it
//! accepts, and how deep maps and lists may nest. The results table stores a small JSON output
//! inline as a native map or list only when these rules allow it; otherwise a pointer.

use serde_json::Value;

/// DynamoDB allows 32 levels of nested maps and lists.
const MAX_NESTING: usize = 32;

/// Whether DynamoDB can store `value` as a native attribute of at most `max_bytes` (by an
/// upper estimate of its stored size).
pub fn fits_inline(value: &Value, max_bytes: u64) -> bool {
    stored_size(value, 0).is_some_and(|size| size <= max_bytes)
}

/// An upper estimate of the bytes DynamoDB counts for `value` as a native attribute
/// (maps and lists: 3 bytes + 1 per element; names count their length), `None` when
/// DynamoDB cannot store it.
fn stored_size(value: &Value, depth: usize) -> Option<u64> {
    if depth > MAX_NESTING {
        return None;
    }
    Some(match value {
        Value::Null | Value::Bool(_) => 1,
        Value::Number(n) => {
            if !dynamodb_number(n) {
                return None;
            }
            n.to_string().len() as u64 + 1
        }
        Value::String(s) => s.len() as u64,
        Value::Array(items) => {
            let mut total = 3;
            for item in items {
                total += 1 + stored_size(item, depth + 1)?;
            }
            total
        }
        Value::Object(fields) => {
            let mut total = 3;
            for (name, item) in fields {
                if name.is_empty() {
                    return None;
                }
                total += 1 + name.len() as u64 + stored_size(item, depth + 1)?;
            }
            total
        }
    })
}

/// DynamoDB numbers: magnitude from 1e-130 to below 1e126, at most 38 significant digits
/// (integers and f64 values never exceed the digits).
fn dynamodb_number(n: &serde_json::Number) -> bool {
    if n.is_i64() || n.is_u64() {
        return true;
    }
    match n.as_f64() {
        Some(0.0) => true,
        Some(f) => f.is_finite() && (1e-130..1e126).contains(&f.abs()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// JSON text that fits, as the results table would take it.
    fn fits(text: &[u8], max: u64) -> bool {
        fits_inline(&serde_json::from_slice(text).unwrap(), max)
    }

    #[test]
    fn small_json_fits() {
        assert!(fits(br#"{"label":"ok","score":0.93}"#, 1024));
        assert!(fits(b"[1,2,3]", 1024));
        assert!(fits_inline(&json!(null), 1));
    }

    #[test]
    fn oversize_values_do_not_fit() {
        let big = serde_json::to_vec(&json!({"text": "x".repeat(2000)})).unwrap();
        assert!(!fits(&big, 1024));
        assert!(fits(&big, 4096));
    }

    #[test]
    fn the_limit_counts_stored_size_not_json_text() {
        // 1000 small numbers: 2 bytes of JSON each but 3 stored, plus the list's own 3.
        let ones = serde_json::to_vec(&vec![1; 1000]).unwrap();
        assert_eq!(ones.len(), 2001);
        assert!(!fits(&ones, 2100));
        assert!(!fits(&ones, 3002));
        assert!(fits(&ones, 3003));
    }

    #[test]
    fn values_dynamodb_cannot_store_do_not_fit() {
        assert!(!fits(br#"{"x": 1e300}"#, 1024));
        assert!(!fits(br#"{"x": 1e-200}"#, 1024));
        assert!(!fits(br#"{"": 1}"#, 1024));
        let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
        assert!(!fits(deep.as_bytes(), 1024));
        let limit = format!("{}1{}", "[".repeat(32), "]".repeat(32));
        assert!(fits(limit.as_bytes(), 1024), "32 levels of lists");
        let over = format!("{}1{}", "[".repeat(33), "]".repeat(33));
        assert!(!fits(over.as_bytes(), 1024));
        assert!(fits(
            br#"{"x": 0.0, "y": -2.5e10, "z": 18446744073709551615}"#,
            1024
        ));
    }
}
