//! An SQS batch as Lambda delivers it to a function (notification-handler's buffer,
//! pipeline-router's callback queue): each record read, and the records that failed reported by
//! id (a partial batch failure), so SQS delivers only those again.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsMessage};
use serde_json::Value;

/// Record `index` of the batch; one that does not read (SQS never sends one) is logged, and its
/// `messageId`, when it has one, is what to report.
pub fn message(index: usize, raw: &Value) -> Result<SqsMessage, Option<String>> {
    serde_json::from_value(raw.clone()).map_err(|e| {
        tracing::error!(record = index, error = %e, "SQS record does not parse");
        raw.get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

/// The batch's answer: the messages that failed, by id.
pub fn response(failed: impl IntoIterator<Item = String>) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for id in failed {
        response.add_failure(id);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_that_does_not_read_is_reported_by_its_id_when_it_has_one() {
        let good = json!({"messageId": "m-1", "body": "{}"});
        assert_eq!(
            message(0, &good).unwrap().message_id.as_deref(),
            Some("m-1")
        );
        let bad = json!({"messageId": "m-2", "body": 7});
        assert_eq!(message(1, &bad).unwrap_err().as_deref(), Some("m-2"));
        assert_eq!(message(2, &json!("not a record")).unwrap_err(), None);
        let answer = serde_json::to_value(response(["m-2".to_owned()])).unwrap();
        assert_eq!(
            answer,
            json!({"batchItemFailures": [{"itemIdentifier": "m-2"}]})
        );
    }
}
