//! A DynamoDB stream batch as Lambda delivers it to a function (event-delivery, on the events
//! table's stream): each record's new image read into the domain's item, and the answer that
//! names the record to resume from (a partial batch failure: Lambda retries from the lowest
//! sequence number reported, so the records before it are done).

use serde_json::{json, Map, Value};

use domain::item::{Attr, Item};

/// One stream record: where it stands in its shard, what changed, and the item as written.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRecord {
    pub sequence_number: String,
    /// `INSERT`, `MODIFY` or `REMOVE`.
    pub event_name: String,
    /// The item after the change (a `NEW_IMAGE` stream's); empty for a removal.
    pub new_image: Item,
}

/// Why a record does not read (Lambda never sends one; another version's shape, say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stream record {index} does not read: {what}")]
pub struct BadRecord {
    pub index: usize,
    pub what: &'static str,
}

/// Record `index` of the batch.
pub fn record(index: usize, raw: &Value) -> Result<StreamRecord, BadRecord> {
    let bad = |what| BadRecord { index, what };
    let dynamodb = raw.get("dynamodb").ok_or(bad("no dynamodb"))?;
    let sequence_number = dynamodb
        .get("SequenceNumber")
        .and_then(Value::as_str)
        .ok_or(bad("no SequenceNumber"))?
        .to_owned();
    let event_name = raw
        .get("eventName")
        .and_then(Value::as_str)
        .ok_or(bad("no eventName"))?
        .to_owned();
    let new_image = match dynamodb.get("NewImage") {
        None | Some(Value::Null) => Item::new(),
        Some(Value::Object(image)) => item(image),
        Some(_) => return Err(bad("NewImage is not a map")),
    };
    Ok(StreamRecord {
        sequence_number,
        event_name,
        new_image,
    })
}

/// An image in DynamoDB's JSON (`{"name": {"S": "..."}}`) as the domain's item: strings,
/// whole numbers and booleans as such; any other value (a map, a list, a set) kept as its JSON.
fn item(image: &Map<String, Value>) -> Item {
    image
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), attr(value)?)))
        .collect()
}

fn attr(value: &Value) -> Option<Attr> {
    let (kind, inner) = value.as_object()?.iter().next()?;
    Some(match (kind.as_str(), inner) {
        ("S", Value::String(s)) => Attr::S(s.clone()),
        ("N", Value::String(n)) => Attr::N(n.parse().ok()?),
        ("BOOL", Value::Bool(b)) => Attr::Bool(*b),
        _ => Attr::Json(value.clone()),
    })
}

/// The batch's answer (`DynamoDBStreamsResponse`): the record to resume from, when one failed.
pub fn response(resume_from: Option<String>) -> Value {
    let failures: Vec<Value> = resume_from
        .map(|sequence_number| json!({"itemIdentifier": sequence_number}))
        .into_iter()
        .collect();
    json!({"batchItemFailures": failures})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_into_its_item_and_one_that_does_not_is_refused_by_index() {
        let raw = json!({
            "eventName": "INSERT",
            "eventSource": "aws:dynamodb",
            "dynamodb": {
                "SequenceNumber": "111",
                "NewImage": {
                    "owner": {"S": "bearer:me"},
                    "ttl": {"N": "1900000000"},
                    "webhooks": {"BOOL": true},
                    "tags": {"SS": ["a"]},
                    "odd": {"N": "1.5"}
                }
            }
        });
        let record = record(0, &raw).unwrap();
        assert_eq!(record.sequence_number, "111");
        assert_eq!(record.event_name, "INSERT");
        let image = &record.new_image;
        assert_eq!(image["owner"], Attr::s("bearer:me"));
        assert_eq!(image["ttl"], Attr::N(1_900_000_000));
        assert_eq!(image["webhooks"], Attr::Bool(true));
        assert_eq!(image["tags"], Attr::Json(json!({"SS": ["a"]})));
        assert!(!image.contains_key("odd"), "not a whole number: left out");
        let no_sequence = json!({"eventName": "INSERT", "dynamodb": {}});
        assert_eq!(
            super::record(3, &no_sequence).unwrap_err(),
            BadRecord {
                index: 3,
                what: "no SequenceNumber"
            }
        );
        let removed = json!({"eventName": "REMOVE", "dynamodb": {"SequenceNumber": "2"}});
        assert!(super::record(0, &removed).unwrap().new_image.is_empty());
    }

    #[test]
    fn the_answer_names_the_record_to_resume_from() {
        assert_eq!(
            response(Some("222".into())),
            json!({"batchItemFailures": [{"itemIdentifier": "222"}]})
        );
        assert_eq!(response(None), json!({"batchItemFailures": []}));
    }
}
