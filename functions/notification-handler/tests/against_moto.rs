//! The real handler with real SDK clients against the local moto stack (started by
//! `make test` through scripts/local_stack.py). Each test uses its own table, so scans are
//! exact while tests run in parallel.

use std::collections::HashMap;
use std::path::Path;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use serde_json::{json, Value};

use adapters::aws::{dynamodb_client, s3_client};
use adapters::dynamodb::{attribute_to_json, DynamoEventLog, DynamoJobs, DynamoSubscriptions};
use adapters::eventbridge::{eventbridge_client, EventBridgeEvents};
use adapters::s3::S3Objects;
use domain::job::JobPolicy;
use notification_handler::Handler;
use usecases::events::Subscribers;
use usecases::JobSettings;

type Subs = Subscribers<DynamoEventLog, DynamoSubscriptions>;

type Item = HashMap<String, AttributeValue>;

const TTL_SECS: u64 = 3600;
const INLINE_MAX: u64 = 64 * 1024;

struct Stack {
    sdk: aws_config::SdkConfig,
    bucket: String,
}

async fn stack() -> Stack {
    let bucket = std::env::var("IO_BUCKET").ok();
    let endpoint = std::env::var("AWS_ENDPOINT_URL").ok();
    let (Some(bucket), Some(_)) = (bucket, endpoint) else {
        panic!("these tests need the local AWS stack: run `make test` (or `.venv/bin/python scripts/local_stack.py -- cargo test`)");
    };
    Stack {
        sdk: aws_config::load_from_env().await,
        bucket,
    }
}

impl Stack {
    /// A queue of its own: its URL and ARN.
    async fn new_queue(&self, prefix: &str) -> (String, String) {
        let sqs = aws_sdk_sqs::Client::new(&self.sdk);
        let queue_url = sqs
            .create_queue()
            .queue_name(unique(prefix))
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let attribute = aws_sdk_sqs::types::QueueAttributeName::QueueArn;
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(&queue_url)
            .attribute_names(attribute.clone())
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap();
        (queue_url, attributes[&attribute].clone())
    }

    async fn new_table(&self) -> String {
        let name = format!("results-{}", uuid::Uuid::new_v4());
        dynamodb_client(&self.sdk)
            .create_table()
            .table_name(&name)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("inference_id")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("inference_id")
                    .key_type(KeyType::Hash)
                    .build()
                    .unwrap(),
            )
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await
            .expect("create table");
        name
    }

    fn handler(&self, table: &str) -> Handler<DynamoJobs, S3Objects, EventBridgeEvents, Subs> {
        Handler {
            clock: domain::time::Clock::system(),
            store: DynamoJobs::new(dynamodb_client(&self.sdk), table),
            objects: S3Objects::new(s3_client(&self.sdk)),
            events: None,
            // The local stack's events table: every test's outcomes are logged, each under its
            // own owner's partition.
            subscribers: std::env::var("EVENTS_TABLE").ok().map(|t| Subscribers {
                log: DynamoEventLog::new(dynamodb_client(&self.sdk), t),
                // And the stack's webhooks: a test's subscriptions are its own owner's.
                subscriptions: std::env::var("SUBSCRIPTIONS_TABLE")
                    .ok()
                    .map(|table| DynamoSubscriptions::new(dynamodb_client(&self.sdk), table)),
            }),
            settings: JobSettings {
                policy: JobPolicy {
                    result_ttl_secs: TTL_SECS,
                    ..JobPolicy::default()
                },
                inline_result_max_bytes: INLINE_MAX,
                ..JobSettings::default()
            },
            batch_concurrency: 8,
        }
    }

    async fn put_object(&self, key: &str, body: impl Into<Vec<u8>>) {
        s3_client(&self.sdk)
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(body.into().into())
            .send()
            .await
            .expect("put object");
    }

    /// An output object where SageMaker would write it; its s3:// location.
    async fn put_output(&self, body: impl Into<Vec<u8>>) -> String {
        let key = format!("outputs/{}.out", uuid::Uuid::new_v4());
        self.put_object(&key, body).await;
        format!("s3://{}/{key}", self.bucket)
    }

    async fn item(&self, table: &str, id: &str) -> Option<Item> {
        dynamodb_client(&self.sdk)
            .get_item()
            .table_name(table)
            .key("inference_id", AttributeValue::S(id.into()))
            .consistent_read(true)
            .send()
            .await
            .expect("get item")
            .item
    }

    /// The stored item's status.
    async fn status(&self, table: &str, id: &str) -> Option<String> {
        s(&self.item(table, id).await?, "status")
    }

    /// The sample success for `id`, its output at `location`, handled: the item then stored.
    async fn record_success(&self, table: &str, id: &str, location: &str) -> Item {
        self.handler(table)
            .handle(success(id, location))
            .await
            .expect("recorded");
        self.item(table, id).await.expect("item written")
    }

    async fn all_items(&self, table: &str) -> Vec<Item> {
        dynamodb_client(&self.sdk)
            .scan()
            .table_name(table)
            .send()
            .await
            .expect("scan")
            .items
            .unwrap_or_default()
    }
}

fn s(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4())
}

/// A sample event from events/, as it is.
fn event(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../events")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A sample event from events/, its (single) message given a fresh inference id and object keys.
fn sample(name: &str, inference_id: &str, rewrite: impl Fn(&mut Value)) -> Value {
    let mut event = event(name);
    let record = &mut event["Records"][0]["Sns"];
    let mut message: Value = serde_json::from_str(record["Message"].as_str().unwrap()).unwrap();
    message["inferenceId"] = json!(inference_id);
    rewrite(&mut message);
    record["Message"] = json!(message.to_string());
    record["MessageId"] = json!(uuid::Uuid::new_v4().to_string());
    event
}

fn set_output(message: &mut Value, location: &str) {
    message["responseParameters"]["outputLocation"] = json!(location);
}

/// The sample success for `inference_id`, its output at `location`.
fn success(inference_id: &str, location: &str) -> Value {
    sample("sns-success.json", inference_id, |m| {
        set_output(m, location)
    })
}

#[tokio::test]
async fn success_with_small_json_output_stores_it_inline_and_keeps_submitted_at() {
    let st = stack().await;
    let table = st.new_table().await;
    let id = unique("ok");
    let location = st
        .put_output(
            r#"{"label":"invoice","confidence":0.97,"fields":{"total":"12.50"},"tags":["a","b"]}"#,
        )
        .await;
    // The pending item submit_job writes before invoking.
    dynamodb_client(&st.sdk)
        .put_item()
        .table_name(&table)
        .item("inference_id", AttributeValue::S(id.clone()))
        .item("status", AttributeValue::S("pending".into()))
        .item(
            "submitted_at",
            AttributeValue::S("2026-11-20T10:14:00.000Z".into()),
        )
        .item("endpoint_name", AttributeValue::S("my-endpoint".into()))
        .send()
        .await
        .unwrap();
    let event = success(&id, &location);

    let before = chrono::Utc::now().timestamp();
    st.handler(&table).handle(event).await.expect("recorded");
    let after = chrono::Utc::now().timestamp();

    let item = st.item(&table, &id).await.expect("item written");
    assert_eq!(s(&item, "status").as_deref(), Some("completed"));
    assert_eq!(s(&item, "output_location"), Some(location));
    assert_eq!(
        s(&item, "completed_at").as_deref(),
        Some("2026-11-20T10:15:01.902Z")
    );
    assert_eq!(
        s(&item, "submitted_at").as_deref(),
        Some("2026-11-20T10:14:00.000Z"),
        "submit time kept"
    );
    assert_eq!(
        s(&item, "endpoint_name").as_deref(),
        Some("my-endpoint"),
        "submit-time field kept"
    );
    assert_eq!(
        attribute_to_json(&item["result"]),
        json!({"label":"invoice","confidence":0.97,"fields":{"total":"12.50"},"tags":["a","b"]})
    );
    assert!(
        item["result"].is_m(),
        "result is a native map, not a string"
    );
    let ttl: i64 = item["ttl"].as_n().unwrap().parse().unwrap();
    assert!(
        (before + TTL_SECS as i64..=after + TTL_SECS as i64).contains(&ttl),
        "ttl {ttl} not now + {TTL_SECS}"
    );
    assert!(!item.contains_key("failure_reason"));
}

#[tokio::test]
async fn success_with_response_body_uses_it_without_reading_s3() {
    let st = stack().await;
    let table = st.new_table().await;
    let id = unique("body");
    // No object at the output location: a read would fail and leave only a pointer.
    let location = format!("s3://{}/outputs/{}.out", st.bucket, uuid::Uuid::new_v4());
    let event = sample("sns-success-response-body.json", &id, |m| {
        set_output(m, &location)
    });

    st.handler(&table).handle(event).await.expect("recorded");

    let item = st.item(&table, &id).await.unwrap();
    assert_eq!(s(&item, "status").as_deref(), Some("completed"));
    assert_eq!(
        attribute_to_json(&item["result"]),
        json!({"label": "invoice", "confidence": 0.97})
    );
    assert_eq!(s(&item, "output_location"), Some(location));
    // No pending item existed: the submit time is SageMaker's receive time.
    assert_eq!(
        s(&item, "submitted_at").as_deref(),
        Some("2026-11-20T10:14:12.455Z")
    );
}

#[tokio::test]
async fn failure_with_failure_object_stores_reason_location_and_excerpt() {
    let st = stack().await;
    let table = st.new_table().await;
    let id = unique("fail");
    let key = format!("failures/{}-error.out", uuid::Uuid::new_v4());
    let trace = format!(
        "Traceback (most recent call last):\n{}ValueError: bad input",
        "  frame\n".repeat(1000)
    );
    st.put_object(&key, trace.clone()).await;
    let location = format!("s3://{}/{key}", st.bucket);
    let event = sample("sns-failure.json", &id, |m| {
        m["responseParameters"]["failureLocation"] = json!(location)
    });

    st.handler(&table).handle(event).await.expect("recorded");

    let item = st.item(&table, &id).await.unwrap();
    assert_eq!(s(&item, "status").as_deref(), Some("failed"));
    assert!(s(&item, "failure_reason")
        .unwrap()
        .starts_with("ClientError: Received server error (500)"));
    assert_eq!(s(&item, "failure_location"), Some(location));
    let excerpt = s(&item, "failure_excerpt").unwrap();
    assert!(
        excerpt.starts_with(&trace[..4096]),
        "excerpt is the start of the object"
    );
    assert!(
        excerpt.ends_with(&format!("[... {} bytes in all]", trace.len())),
        "{}",
        &excerpt[4000..]
    );
    assert!(!item.contains_key("result") && !item.contains_key("output_location"));
}

#[tokio::test]
async fn seed_shapes_are_recorded() {
    let st = stack().await;
    let table = st.new_table().await;
    let ok_id = unique("seed-ok");
    let key = format!("outputs/{ok_id}/output");
    st.put_object(&key, r#"{"summary":"short"}"#).await;
    let location = format!("s3://{}/{key}", st.bucket);
    let ok = sample("sns-seed-success.json", &ok_id, |m| {
        m["outputLocation"] = json!(location)
    });
    let fail_id = unique("seed-fail");
    let failed = sample("sns-seed-failure.json", &fail_id, |_| {});

    let handler = st.handler(&table);
    handler.handle(ok).await.expect("seed success recorded");
    handler.handle(failed).await.expect("seed failure recorded");

    let item = st.item(&table, &ok_id).await.unwrap();
    assert_eq!(s(&item, "status").as_deref(), Some("completed"));
    assert_eq!(
        s(&item, "endpoint_name").as_deref(),
        Some("mcp-doc-processor-async")
    );
    assert_eq!(
        attribute_to_json(&item["result"]),
        json!({"summary":"short"})
    );

    let item = st.item(&table, &fail_id).await.unwrap();
    assert_eq!(s(&item, "status").as_deref(), Some("failed"));
    assert_eq!(
        s(&item, "failure_reason").as_deref(),
        Some("InvocationTimeoutExceeded: Container did not respond within 300 seconds")
    );
    assert_eq!(
        s(&item, "failure_location").as_deref(),
        Some("s3://mcp-sagemaker-async-io/outputs/demo-seed-0006/failure")
    );
    // The failure object does not exist: the outcome is recorded without an excerpt.
    assert!(!item.contains_key("failure_excerpt"));
}

#[tokio::test]
async fn the_same_notification_three_times_changes_nothing_after_the_first() {
    let st = stack().await;
    let table = st.new_table().await;
    let id = unique("dup");
    let key = format!("outputs/{}.out", uuid::Uuid::new_v4());
    st.put_object(&key, r#"{"n":1}"#).await;
    let location = format!("s3://{}/{key}", st.bucket);
    let event = success(&id, &location);
    let handler = st.handler(&table);

    handler.handle(event.clone()).await.unwrap();
    let first = st.item(&table, &id).await.unwrap();
    // Overwrite the object: a re-read on a duplicate would show up in the item.
    st.put_object(&key, r#"{"n":2}"#).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await; // a rewrite would move ttl
    handler.handle(event.clone()).await.unwrap();
    handler.handle(event).await.unwrap();

    assert_eq!(st.item(&table, &id).await.unwrap(), first);
    assert_eq!(st.all_items(&table).await.len(), 1);
}

#[tokio::test]
async fn a_failure_after_a_success_does_not_overwrite_it() {
    let st = stack().await;
    let table = st.new_table().await;
    let id = unique("late");
    let location = st.put_output(r#"{"ok":true}"#).await;

    let stored = st.record_success(&table, &id, &location).await;
    st.handler(&table)
        .handle(sample("sns-failure.json", &id, |_| {}))
        .await
        .expect("late delivery acknowledged");

    let item = st.item(&table, &id).await.unwrap();
    assert_eq!(item, stored);
    assert_eq!(s(&item, "status").as_deref(), Some("completed"));
    assert!(!item.contains_key("failure_reason"));
}

#[tokio::test]
async fn test_notification_is_acknowledged_and_writes_nothing() {
    let st = stack().await;
    let table = st.new_table().await;
    let event = event("sns-test-notification.json");

    let reply = st
        .handler(&table)
        .handle(event)
        .await
        .expect("acknowledged");

    assert_eq!(reply, json!({"processed": 1}));
    assert!(st.all_items(&table).await.is_empty());
}

#[tokio::test]
async fn malformed_messages_fail_with_their_message_id_while_good_records_are_still_written() {
    let st = stack().await;
    let table = st.new_table().await;
    let good_id = unique("good");
    let location = st.put_output(r#"{"fine":1}"#).await;

    let mut records = Vec::new();
    let mut expected = Vec::new();
    for (file, reason) in [
        ("sns-bad-not-json.json", "message is not JSON"),
        ("sns-bad-no-inference-id.json", "message has no inferenceId"),
        (
            "sns-bad-unknown-status.json",
            "invocationStatus \"InProgress\" is unknown",
        ),
        ("sns-bad-event-source.json", "eventSource is \"aws:s3\""),
    ] {
        let record = event(file)["Records"][0].clone();
        expected.push(format!(
            "{}: {reason}",
            record["Sns"]["MessageId"].as_str().unwrap()
        ));
        records.push(record);
    }
    let good = success(&good_id, &location)["Records"][0].clone();
    records.insert(2, good);

    let err = st
        .handler(&table)
        .handle(json!({"Records": records}))
        .await
        .expect_err("bad records fail the event");

    let text = err.to_string();
    assert!(text.starts_with("4 of 5 SNS records failed"), "{text}");
    for e in expected {
        assert!(text.contains(&e), "{text:?} should contain {e:?}");
    }
    let items = st.all_items(&table).await;
    assert_eq!(items.len(), 1, "only the good record is written");
    assert_eq!(s(&items[0], "inference_id"), Some(good_id));
    let diagnostic: lambda_runtime::Diagnostic = err.into();
    assert_eq!(diagnostic.error_type, "NotificationsNotRecorded");
}

#[tokio::test]
async fn events_that_are_not_sns_or_sqs_are_rejected() {
    let st = stack().await;
    let table = st.new_table().await;
    let handler = st.handler(&table);
    for event in [
        json!({}),
        json!({"Records": [{"eventSource": "aws:s3"}]}),
        json!({"detail": {}}),
    ] {
        let err = handler.handle(event.clone()).await.expect_err("rejected");
        assert!(
            err.to_string().contains("neither an SNS nor an SQS event"),
            "{event}: {err}"
        );
    }
    let mut wrong_source = sample("sns-success.json", "x", |_| {});
    wrong_source["Records"][0]["EventSource"] = json!("aws:kinesis");
    let err = handler.handle(wrong_source).await.unwrap_err();
    assert!(
        err.to_string().contains("EventSource is \"aws:kinesis\""),
        "{err}"
    );
    assert!(st.all_items(&table).await.is_empty());
}

#[tokio::test]
async fn an_output_over_400_kb_is_stored_as_a_pointer() {
    let st = stack().await;
    let table = st.new_table().await;
    let id = unique("big");
    let big =
        serde_json::to_vec(&json!({"pages": vec!["lorem ipsum dolor sit amet ".repeat(40); 450]}))
            .unwrap();
    assert!(big.len() > 400 * 1024);
    let location = st.put_output(big).await;

    let item = st.record_success(&table, &id, &location).await;

    assert_eq!(s(&item, "status").as_deref(), Some("completed"));
    assert_eq!(s(&item, "output_location"), Some(location));
    assert!(
        !item.contains_key("result"),
        "large output is a pointer only"
    );
}

#[tokio::test]
async fn non_json_output_is_stored_as_a_pointer() {
    let st = stack().await;
    let table = st.new_table().await;
    let id = unique("csv");
    let location = st.put_output("label,score\ninvoice,0.97\n").await;

    let item = st.record_success(&table, &id, &location).await;

    assert_eq!(s(&item, "status").as_deref(), Some("completed"));
    assert!(!item.contains_key("result"));
}

/// The SQS path, fed as Lambda would be: real SNS-to-SQS fan-out in moto, then the received
/// messages as an SQS event.
#[tokio::test]
async fn sqs_batch_with_one_bad_message_reports_only_that_one() {
    let st = stack().await;
    let table = st.new_table().await;
    let sns = aws_sdk_sns::Client::new(&st.sdk);
    let sqs = aws_sdk_sqs::Client::new(&st.sdk);
    let topic = sns
        .create_topic()
        .name(unique("topic"))
        .send()
        .await
        .unwrap()
        .topic_arn
        .unwrap();
    let (queue_url, queue_arn) = st.new_queue("queue").await;
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(&queue_arn)
        .send()
        .await
        .unwrap();

    let (ok_id, failed_id) = (unique("sqs-ok"), unique("sqs-failed"));
    let location = st.put_output(r#"{"via":"sqs"}"#).await;
    let message_of = |event: Value| {
        event["Records"][0]["Sns"]["Message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let ok_message = message_of(success(&ok_id, &location));
    let failed_message = message_of(sample("sns-failure.json", &failed_id, |_| {}));
    for message in [
        ok_message,
        "{\"inferenceId\": \"x\", \"invocationStatus\": \"Exploded\"}".to_owned(),
        failed_message,
    ] {
        sns.publish()
            .topic_arn(&topic)
            .message(message)
            .send()
            .await
            .unwrap();
    }

    let mut messages = Vec::new();
    for _ in 0..10 {
        let got = sqs
            .receive_message()
            .queue_url(&queue_url)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        messages.extend(got.messages.unwrap_or_default());
        if messages.len() >= 3 {
            break;
        }
    }
    assert_eq!(
        messages.len(),
        3,
        "all three published messages reach the queue"
    );
    let bad_sqs_id = messages
        .iter()
        .find(|m| m.body().unwrap().contains("Exploded"))
        .and_then(|m| m.message_id.clone())
        .unwrap();
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(),
                "attributes": {}, "messageAttributes": {}, "md5OfBody": m.md5_of_body(),
                "eventSource": "aws:sqs", "eventSourceARN": queue_arn, "awsRegion": "us-east-1"
            })
        })
        .collect();

    let reply = st
        .handler(&table)
        .handle(json!({"Records": records}))
        .await
        .expect("batch response");

    assert_eq!(
        reply,
        json!({"batchItemFailures": [{"itemIdentifier": bad_sqs_id}]})
    );
    assert_eq!(
        st.status(&table, &ok_id).await.as_deref(),
        Some("completed")
    );
    assert_eq!(
        st.status(&table, &failed_id).await.as_deref(),
        Some("failed")
    );
    assert_eq!(st.all_items(&table).await.len(), 2);
}

#[tokio::test]
async fn the_sample_sqs_batch_reports_its_bad_message() {
    let st = stack().await;
    let table = st.new_table().await;
    let reply = st
        .handler(&table)
        .handle(event("sqs-batch.json"))
        .await
        .unwrap();

    assert_eq!(
        reply,
        json!({"batchItemFailures": [{"itemIdentifier": "44444444-0000-4000-8000-000000000003"}]})
    );
    assert_eq!(
        st.status(&table, "demo-sqs-0008").await.as_deref(),
        Some("completed")
    );
    assert_eq!(
        st.status(&table, "demo-sqs-raw-0009").await.as_deref(),
        Some("failed")
    );
}

/// A large batch is recorded concurrently: every good message is written, and exactly the bad
/// ones (wherever they stand in the batch) are reported.
#[tokio::test]
async fn a_100_message_batch_reports_exactly_its_bad_messages() {
    let st = stack().await;
    let table = st.new_table().await;
    let location = st.put_output(r#"{"batch":true}"#).await;
    let mut records = Vec::new();
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for n in 0..100 {
        let sqs_id = format!("sqs-{n}");
        let body = if n % 33 == 5 {
            bad.push(sqs_id.clone());
            "{\"inferenceId\": \"x\", \"invocationStatus\": \"Exploded\"}".to_owned()
        } else {
            let id = unique("batch");
            good.push(id.clone());
            success(&id, &location)["Records"][0]["Sns"]["Message"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        records.push(json!({
            "messageId": sqs_id, "receiptHandle": "r", "body": body, "attributes": {},
            "messageAttributes": {}, "md5OfBody": "x", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q", "awsRegion": "us-east-1"
        }));
    }

    let reply = st
        .handler(&table)
        .handle(json!({"Records": records}))
        .await
        .expect("batch response");

    let mut reported: Vec<String> = reply["batchItemFailures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["itemIdentifier"].as_str().unwrap().to_owned())
        .collect();
    reported.sort();
    bad.sort();
    assert_eq!(reported, bad);
    assert_eq!(st.all_items(&table).await.len(), good.len());
    for id in &good {
        assert_eq!(
            st.status(&table, id).await.as_deref(),
            Some("completed"),
            "{id}"
        );
    }
}

/// A bus of its own with a rule (this project's source and detail types) that delivers to an
/// SQS queue, as a consumer of the events would set it up; the bus name and the queue's URL.
async fn event_bus_to_queue(st: &Stack) -> (String, String) {
    let events = aws_sdk_eventbridge::Client::new(&st.sdk);
    let bus = unique("completions");
    events.create_event_bus().name(&bus).send().await.unwrap();
    let (queue_url, queue_arn) = st.new_queue("completions").await;
    let pattern = json!({"source": ["mcp.async-jobs"],
                         "detail-type": ["Async Job Completed", "Async Job Failed"]});
    events
        .put_rule()
        .name("to-queue")
        .event_bus_name(&bus)
        .event_pattern(pattern.to_string())
        .send()
        .await
        .unwrap();
    events
        .put_targets()
        .rule("to-queue")
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(queue_arn)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    (bus, queue_url)
}

/// The events the rule delivered so far, as EventBridge's JSON.
async fn delivered(st: &Stack, queue_url: &str) -> Vec<Value> {
    let sqs = aws_sdk_sqs::Client::new(&st.sdk);
    let mut all = Vec::new();
    loop {
        let out = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        let messages = out.messages.unwrap_or_default();
        if messages.is_empty() {
            return all;
        }
        for m in messages {
            all.push(serde_json::from_str(m.body().unwrap()).unwrap());
        }
    }
}

#[tokio::test]
async fn each_outcome_reaches_the_bus_and_through_a_rule_its_queue_once_written() {
    let st = stack().await;
    let table = st.new_table().await;
    let (bus, queue_url) = event_bus_to_queue(&st).await;
    let mut handler = st.handler(&table);
    handler.events = Some(EventBridgeEvents::new(eventbridge_client(&st.sdk), &bus));
    let (ok_id, failed_id) = (unique("event-ok"), unique("event-failed"));
    let location = st.put_output(r#"{"label":"private"}"#).await;
    let completed = success(&ok_id, &location);
    handler.handle(completed.clone()).await.unwrap();
    let failure = sample("sns-failure.json", &failed_id, |m| {
        m["responseParameters"] = json!({});
    });
    handler.handle(failure).await.unwrap();
    // SNS delivers the success again.
    handler.handle(completed).await.unwrap();

    let events = delivered(&st, &queue_url).await;
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["detail-type"].as_str().unwrap(),
                e["detail"]["inference_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("Async Job Completed", ok_id.as_str()),
            ("Async Job Failed", failed_id.as_str()),
            ("Async Job Completed", ok_id.as_str()),
        ]
    );
    assert!(events.iter().all(|e| e["source"] == "mcp.async-jobs"));
    // Field by field: what the table holds, never the result.
    assert_eq!(
        events[0]["detail"],
        json!({"inference_id": ok_id, "status": "completed", "output_location": location,
               "submitted_at": "2026-11-20T10:14:12.455Z", "completed_at": "2026-11-20T10:15:01.902Z",
               "endpoint_name": "mcp-doc-processor-async"})
    );
    assert_eq!(events[2]["detail"], events[0]["detail"]);
    let failed = &events[1]["detail"];
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["failure_reason"].as_str().unwrap().len() > 5,
        "{failed}"
    );
    assert!(!events[0].to_string().contains("private"));

    // A write that fails (no such table): no event.
    let mut broken = st.handler(&unique("no-such-table"));
    broken.events = handler.events.clone();
    let lost = success(&unique("event-lost"), &location);
    assert!(broken.handle(lost).await.is_err());
    assert!(delivered(&st, &queue_url).await.is_empty());
}

#[tokio::test]
async fn an_owned_jobs_outcome_is_logged_for_its_subscribers_once_however_often_it_comes() {
    use domain::caller::Principal;
    use domain::events::EventName;
    use domain::ids::InferenceId;
    use domain::job::{reserve, Submission};
    use ports::{EventLog, JobStore};

    let stack = stack().await;
    let events_table = std::env::var("EVENTS_TABLE").expect("the local stack's EVENTS_TABLE");
    let table = stack.new_table().await;
    let handler = stack.handler(&table);
    // A job of its own caller's: an owner nobody else logs for.
    let name = format!("events-{}", uuid::Uuid::new_v4().simple());
    let owner = Principal::Bearer { name }.caller().owner;
    let id = unique("owned");
    let mut s = Submission::new(&owner, "ep", "b", b"{}".to_vec(), None, 300, 600);
    s.inference_id = InferenceId::parse(&id).unwrap();
    let now = handler.clock.now();
    handler
        .store
        .write(&reserve(&s, &JobPolicy::default(), now))
        .await
        .unwrap();
    let location = format!("s3://{}/outputs/{id}.out", stack.bucket);
    stack
        .put_object(&format!("outputs/{id}.out"), r#"{"label": "spam"}"#)
        .await;
    // The owner's webhook subscription (its callback's challenge answered by a fake).
    let subscriptions = handler
        .subscribers
        .as_ref()
        .unwrap()
        .subscriptions
        .as_ref()
        .unwrap();
    let key = domain::events::SubscriptionKey {
        owner: owner.clone(),
        url: "https://hooks.example.com/in".into(),
        name: EventName::JobEnded,
        arguments: json!({"endpoint": "ep"}),
    };
    let ask = usecases::events::SubscribeAsk {
        key: key.clone(),
        secret: domain::webhook::WebhookSecret::from_bytes(vec![3; 32]).unwrap(),
        ttl: domain::subscription::DEFAULT_TTL,
    };
    let hooks = fakes::FakeWebhooks::default();
    usecases::events::subscribe(subscriptions, &hooks, ask, now)
        .await
        .unwrap();
    // SageMaker's notification of now (an event is kept for a day after it happened).
    let notification = sample("sns-success.json", &id, |m| {
        set_output(m, &location);
        m["eventTime"] = json!(domain::time::rfc3339(now));
    });
    for _ in 0..2 {
        // SNS delivers the notification twice: one event.
        handler.handle(notification.clone()).await.unwrap();
    }
    let log = DynamoEventLog::new(dynamodb_client(&stack.sdk), &events_table);
    let logged = log.read(&owner, None, 10, now).await.unwrap();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0].name, EventName::JobEnded);
    assert_eq!(logged[0].data["status"], "completed");
    assert_eq!(logged[0].data["output"], format!("job://{id}/output"));
    assert!(!logged[0].data.to_string().contains("s3://"));
    // The logged item names the subscription, as the table's stream hands it to
    // event-delivery (its filter passes `webhooks` true only).
    let items = dynamodb_client(&stack.sdk)
        .query()
        .table_name(&events_table)
        .key_condition_expression("#o = :o")
        .expression_attribute_names("#o", "owner")
        .expression_attribute_values(":o", AttributeValue::S(owner.as_str().to_owned()))
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].get("webhooks"), Some(&AttributeValue::Bool(true)));
    assert_eq!(
        items[0].get("deliver_to"),
        Some(&AttributeValue::S(key.id()))
    );
}
