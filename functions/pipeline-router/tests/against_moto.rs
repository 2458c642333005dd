//! The real handler with real SDK clients: DynamoDB and SQS on moto, DescribePipelineExecution
//! on the SageMaker stand-in (moto's pipelines have no failure reasons). Started by `make test`.
//! Each test has its own table and queue.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use serde_json::{json, Value};

use adapters::aws::dynamodb_client;
use adapters::dynamodb::{DynamoEventLog, DynamoRuns, DynamoSubscriptions};
use adapters::sagemaker::{sagemaker_client, SageMakerPipeline};
use adapters::sqs::{sqs_client, SqsCompletionQueue};
use pipeline_router::Handler;
use usecases::events::Subscribers;

type Subs = Subscribers<DynamoEventLog, DynamoSubscriptions>;

type Item = HashMap<String, AttributeValue>;
const TTL_SECS: u64 = 3600;

struct Stack {
    sdk: aws_config::SdkConfig,
}

async fn stack() -> Stack {
    if std::env::var("AWS_ENDPOINT_URL").is_err()
        || std::env::var("AWS_ENDPOINT_URL_SAGEMAKER").is_err()
    {
        panic!("these tests need the local AWS stack and the SageMaker stand-in: run `make test`");
    }
    Stack {
        sdk: aws_config::load_from_env().await,
    }
}

struct Fixture {
    table: String,
    queue_url: String,
    handler: Handler<DynamoRuns, SageMakerPipeline, SqsCompletionQueue, Subs>,
}

impl Stack {
    async fn fixture(&self, fifo: bool) -> Fixture {
        let table = format!("pipeline-results-{}", uuid::Uuid::new_v4());
        let key = |name: &str, kind| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .unwrap()
        };
        let def = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap()
        };
        dynamodb_client(&self.sdk)
            .create_table()
            .table_name(&table)
            .attribute_definitions(def("session_id"))
            .attribute_definitions(def("execution_arn"))
            .key_schema(key("session_id", KeyType::Hash))
            .key_schema(key("execution_arn", KeyType::Range))
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await
            .unwrap();
        let mut create = sqs_client(&self.sdk).create_queue();
        if fifo {
            create = create
                .queue_name(format!("completions-{}.fifo", uuid::Uuid::new_v4()))
                .attributes(QueueAttributeName::FifoQueue, "true");
        } else {
            create = create.queue_name(format!("completions-{}", uuid::Uuid::new_v4()));
        }
        let queue_url = create.send().await.unwrap().queue_url.unwrap();
        Fixture {
            handler: self.handler(&table, &queue_url),
            table,
            queue_url,
        }
    }

    fn handler(
        &self,
        table: &str,
        queue_url: &str,
    ) -> Handler<DynamoRuns, SageMakerPipeline, SqsCompletionQueue, Subs> {
        Handler {
            clock: domain::time::Clock::system(),
            store: DynamoRuns::new(dynamodb_client(&self.sdk), table),
            pipeline: SageMakerPipeline::new(sagemaker_client(&self.sdk)),
            queue: SqsCompletionQueue::new(sqs_client(&self.sdk), queue_url),
            result_ttl_secs: TTL_SECS,
            // The stack's events and webhooks: a test's runs are its own owners'.
            subscribers: std::env::var("EVENTS_TABLE").ok().map(|t| Subscribers {
                log: DynamoEventLog::new(dynamodb_client(&self.sdk), t),
                subscriptions: std::env::var("SUBSCRIPTIONS_TABLE")
                    .ok()
                    .map(|table| DynamoSubscriptions::new(dynamodb_client(&self.sdk), table)),
            }),
        }
    }

    async fn items(&self, table: &str) -> Vec<Item> {
        dynamodb_client(&self.sdk)
            .scan()
            .table_name(table)
            .send()
            .await
            .unwrap()
            .items
            .unwrap_or_default()
    }

    /// Every message on the queue: (body, message attributes, system attributes).
    async fn drain(
        &self,
        queue_url: &str,
    ) -> Vec<(Value, HashMap<String, String>, HashMap<String, String>)> {
        let mut out = Vec::new();
        loop {
            let got = sqs_client(&self.sdk)
                .receive_message()
                .queue_url(queue_url)
                .max_number_of_messages(10)
                .message_attribute_names("All")
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .send()
                .await
                .unwrap();
            let messages = got.messages.unwrap_or_default();
            if messages.is_empty() {
                return out;
            }
            for m in messages {
                let attributes = m
                    .message_attributes()
                    .map(|a| {
                        a.iter()
                            .map(|(k, v)| {
                                (k.clone(), v.string_value().unwrap_or_default().to_owned())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let system = m
                    .attributes()
                    .map(|a| {
                        a.iter()
                            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push((
                    serde_json::from_str(m.body().unwrap()).unwrap(),
                    attributes,
                    system,
                ));
            }
        }
    }
}

fn s(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

fn sample(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../events")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A sample event given a fresh session id (so runs of parallel tests never meet).
fn sample_for(name: &str, session_id: &str) -> Value {
    let mut event = sample(name);
    event["detail"]["pipelineExecutionDescription"] = json!(format!(
        "session_id={session_id}; triggered at 2026-11-20T10:41:51.734Z"
    ));
    event
}

fn session() -> String {
    format!("sess-{}", uuid::Uuid::new_v4())
}

#[tokio::test]
async fn terminal_statuses_are_stored_and_sent() {
    let st = stack().await;
    for (file, status) in [
        ("pipeline-succeeded.json", "Succeeded"),
        ("pipeline-stopped.json", "Stopped"),
        (
            "pipeline-completed-with-failures.json",
            "CompletedWithFailures",
        ),
    ] {
        let f = st.fixture(false).await;
        let sid = session();
        let event = sample_for(file, &sid);
        let before = chrono::Utc::now().timestamp();

        let reply = f.handler.handle(event.clone()).await.expect("routed");

        assert_eq!(
            reply,
            json!({"routed": true, "session_id": sid, "status": status, "sent": true})
        );
        let items = st.items(&f.table).await;
        assert_eq!(items.len(), 1, "{file}");
        let item = &items[0];
        let execution_arn = event["detail"]["pipelineExecutionArn"].as_str().unwrap();
        assert_eq!(s(item, "session_id"), Some(sid.clone()));
        assert_eq!(s(item, "execution_arn").as_deref(), Some(execution_arn));
        assert_eq!(
            s(item, "pipeline_arn").as_deref(),
            event["detail"]["pipelineArn"].as_str()
        );
        assert_eq!(s(item, "status").as_deref(), Some(status));
        assert_eq!(
            s(item, "started_at").as_deref(),
            Some("2026-11-20T10:41:52.000Z")
        );
        assert_eq!(
            s(item, "ended_at").as_deref(),
            Some("2026-11-20T11:02:10.000Z")
        );
        assert!(s(item, "updated_at").is_some());
        let ttl: i64 = item["ttl"].as_n().unwrap().parse().unwrap();
        assert!((ttl - before - TTL_SECS as i64).abs() <= 5, "ttl {ttl}");

        let messages = st.drain(&f.queue_url).await;
        assert_eq!(messages.len(), 1, "{file}");
        let (body, attributes, _) = &messages[0];
        assert_eq!(
            body,
            &json!({
                "session_id": sid, "execution_arn": execution_arn,
                "pipeline_arn": event["detail"]["pipelineArn"], "status": status,
                "previous_status": event["detail"]["previousPipelineExecutionStatus"],
                "started_at": "2026-11-20T10:41:52.000Z", "ended_at": "2026-11-20T11:02:10.000Z",
                "event_id": event["id"], "event_time": "2026-11-20T11:02:11.000Z"
            })
        );
        assert_eq!(attributes.get("session_id"), Some(&sid));
        assert_eq!(attributes.get("status").map(String::as_str), Some(status));
    }
}

#[tokio::test]
async fn a_failed_run_stores_and_sends_the_reason_sagemaker_gives() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let sid = session();
    // A run the stand-in fails at its evaluation step.
    let sm = sagemaker_client(&st.sdk);
    let arn = sm
        .start_pipeline_execution()
        .pipeline_name("mcp-intent-classifier-pipeline")
        .pipeline_execution_description(format!(
            "session_id={sid}; triggered at 2026-11-20T10:41:51.734Z"
        ))
        .pipeline_parameters(
            aws_sdk_sagemaker::types::Parameter::builder()
                .name("AccuracyThreshold")
                .value("0.99")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .pipeline_execution_arn
        .unwrap();
    let mut reason = None;
    for _ in 0..100 {
        let d = sm
            .describe_pipeline_execution()
            .pipeline_execution_arn(&arn)
            .send()
            .await
            .unwrap();
        if d.pipeline_execution_status().map(|s| s.as_str()) == Some("Failed") {
            reason = d.failure_reason;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reason = reason.expect("the stand-in run fails with a reason");
    assert!(
        reason.contains("accuracy 0.950 is below AccuracyThreshold 0.990"),
        "{reason}"
    );
    let mut event = sample_for("pipeline-failed.json", &sid);
    event["detail"]["pipelineExecutionArn"] = json!(arn);

    f.handler.handle(event).await.expect("routed");

    let items = st.items(&f.table).await;
    assert_eq!(s(&items[0], "status").as_deref(), Some("Failed"));
    assert_eq!(s(&items[0], "failure_reason"), Some(reason.clone()));
    let messages = st.drain(&f.queue_url).await;
    assert_eq!(messages[0].0["failure_reason"], json!(reason));
    assert_eq!(messages[0].0["status"], json!("Failed"));
}

#[tokio::test]
async fn a_failed_run_sagemaker_does_not_know_is_recorded_with_why_there_is_no_reason() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let sid = session();

    f.handler
        .handle(sample_for("pipeline-failed.json", &sid))
        .await
        .expect("routed, not retried forever");

    let reason = s(&st.items(&f.table).await[0], "failure_reason").unwrap();
    assert!(
        reason.starts_with("failure reason unavailable: ResourceNotFound"),
        "{reason}"
    );
    assert_eq!(st.drain(&f.queue_url).await.len(), 1);
}

#[tokio::test]
async fn fifo_queue_gets_group_and_deduplication_ids_and_drops_the_redelivery() {
    let st = stack().await;
    let f = st.fixture(true).await;
    let sid = session();
    let event = sample_for("pipeline-succeeded.json", &sid);

    f.handler.handle(event.clone()).await.unwrap();
    f.handler
        .handle(event.clone())
        .await
        .expect("the redelivery succeeds too");

    let messages = st.drain(&f.queue_url).await;
    assert_eq!(
        messages.len(),
        1,
        "SQS dropped the second send by its deduplication id"
    );
    let (_, _, system) = &messages[0];
    assert_eq!(system.get("MessageGroupId"), Some(&sid));
    assert_eq!(
        system.get("MessageDeduplicationId").map(String::as_str),
        event["id"].as_str()
    );
    assert_eq!(st.items(&f.table).await.len(), 1);
}

#[tokio::test]
async fn the_same_event_twice_on_a_standard_queue_is_stored_once_and_sent_twice() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let sid = session();
    let event = sample_for("pipeline-succeeded.json", &sid);

    f.handler.handle(event.clone()).await.unwrap();
    let stored = st.items(&f.table).await;
    f.handler.handle(event).await.unwrap();

    assert_eq!(
        st.items(&f.table).await,
        stored,
        "the second delivery changes no item"
    );
    let messages = st.drain(&f.queue_url).await;
    assert_eq!(
        messages.len(),
        2,
        "at least once: the consumer deduplicates by event_id"
    );
    assert_eq!(messages[0].0, messages[1].0);
}

#[tokio::test]
async fn a_late_executing_after_succeeded_changes_nothing_and_sends_nothing() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let sid = session();

    f.handler
        .handle(sample_for("pipeline-succeeded.json", &sid))
        .await
        .unwrap();
    let stored = st.items(&f.table).await;
    let reply = f
        .handler
        .handle(sample_for("pipeline-executing.json", &sid))
        .await
        .unwrap();

    assert_eq!(reply["routed"], json!(false));
    assert_eq!(st.items(&f.table).await, stored);
    assert_eq!(s(&stored[0], "status").as_deref(), Some("Succeeded"));
    assert_eq!(
        st.drain(&f.queue_url).await.len(),
        1,
        "only the completion was sent"
    );
}

#[tokio::test]
async fn executing_then_succeeded_updates_in_place_and_sends_only_the_completion() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let sid = session();

    f.handler
        .handle(sample_for("pipeline-executing.json", &sid))
        .await
        .unwrap();
    let items = st.items(&f.table).await;
    assert_eq!(s(&items[0], "status").as_deref(), Some("Executing"));
    assert!(!items[0].contains_key("ended_at"));
    assert!(
        st.drain(&f.queue_url).await.is_empty(),
        "a non-terminal status is not a completion"
    );

    f.handler
        .handle(sample_for("pipeline-succeeded.json", &sid))
        .await
        .unwrap();
    let items = st.items(&f.table).await;
    assert_eq!(items.len(), 1);
    assert_eq!(s(&items[0], "status").as_deref(), Some("Succeeded"));
    assert_eq!(st.drain(&f.queue_url).await.len(), 1);
}

#[tokio::test]
async fn description_with_other_parts_and_spaces_finds_the_session() {
    let st = stack().await;
    let f = st.fixture(false).await;

    f.handler
        .handle(sample("pipeline-description-variants.json"))
        .await
        .unwrap();

    let items = st.items(&f.table).await;
    assert_eq!(s(&items[0], "session_id").as_deref(), Some("sess-43"));
}

#[tokio::test]
async fn a_run_without_session_id_writes_and_sends_nothing() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let mut null_description = sample("pipeline-succeeded.json");
    null_description["detail"]["pipelineExecutionDescription"] = Value::Null;
    let mut empty_description = sample("pipeline-succeeded.json");
    empty_description["detail"]["pipelineExecutionDescription"] = json!("");
    let mut absent = sample("pipeline-succeeded.json");
    absent["detail"]
        .as_object_mut()
        .unwrap()
        .remove("pipelineExecutionDescription");

    for event in [
        sample("pipeline-no-session.json"),
        null_description,
        empty_description,
        absent,
    ] {
        let reply = f
            .handler
            .handle(event)
            .await
            .expect("not ours is not an error");
        assert_eq!(reply["routed"], json!(false));
    }

    assert!(st.items(&f.table).await.is_empty());
    assert!(st.drain(&f.queue_url).await.is_empty());
}

#[tokio::test]
async fn malformed_events_are_refused_naming_the_field() {
    let st = stack().await;
    let f = st.fixture(false).await;
    for (file, expected) in [
        ("pipeline-bad-no-detail.json", "event has no detail"),
        (
            "pipeline-bad-detail-type.json",
            "detail-type is \"SageMaker Training Job State Change\"",
        ),
        (
            "pipeline-bad-missing-arn.json",
            "event has no detail.pipelineExecutionArn",
        ),
        (
            "pipeline-bad-time.json",
            "detail.executionEndTime is \"20/11/2026 11:02\", which is not an RFC 3339 time",
        ),
    ] {
        let err = f.handler.handle(sample(file)).await.expect_err(file);
        assert!(err.to_string().contains(expected), "{file}: {err}");
        let diagnostic: lambda_runtime::Diagnostic = err.into();
        assert_eq!(diagnostic.error_type, "BadPipelineEvent");
    }
    let mut wrong_source = sample("pipeline-succeeded.json");
    wrong_source["source"] = json!("aws.events");
    let err = f.handler.handle(wrong_source).await.unwrap_err();
    assert!(
        err.to_string().contains("source is \"aws.events\""),
        "{err}"
    );

    assert!(st.items(&f.table).await.is_empty());
    assert!(st.drain(&f.queue_url).await.is_empty());
}

#[tokio::test]
async fn a_send_that_fails_after_the_write_is_made_on_the_retry() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let sid = session();
    let event = sample_for("pipeline-succeeded.json", &sid);
    let missing_queue = format!("{}-missing", f.queue_url);
    let broken = st.handler(&f.table, &missing_queue);

    let err = broken
        .handle(event.clone())
        .await
        .expect_err("the send fails");
    assert!(err.to_string().contains("SQS SendMessage"), "{err}");
    assert_eq!(
        st.items(&f.table).await.len(),
        1,
        "the table write happened first"
    );

    // EventBridge retries the same event; by then the queue is reachable.
    f.handler.handle(event).await.expect("the retry succeeds");
    let messages = st.drain(&f.queue_url).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].0["session_id"], json!(sid));
}

/// The stand-in's control API (`/_standin/...`), over plain HTTP/1.1.
async fn standin_control(method: &str, path: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let base = std::env::var("AWS_ENDPOINT_URL_SAGEMAKER").unwrap();
    let authority = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).await.unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    reply
}

/// A pipeline on the stand-in whose CallbackStep asks a person (dev/pipelines/approval.json).
async fn approval_pipeline(sm: &aws_sdk_sagemaker::Client) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dev/pipelines/approval.json");
    let name = format!(
        "callback-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    sm.create_pipeline()
        .pipeline_name(&name)
        .role_arn("arn:aws:iam::123456789012:role/p")
        .client_request_token(uuid::Uuid::new_v4().to_string())
        .pipeline_definition(std::fs::read_to_string(path).unwrap())
        .send()
        .await
        .unwrap();
    name
}

/// A run of `pipeline` started and recorded as trigger_training starts one, once its
/// CallbackStep waits: its ARN and the token SageMaker lists for the step.
async fn waiting_run(
    f: &Fixture,
    sm: &aws_sdk_sagemaker::Client,
    pipeline: &str,
) -> (String, String) {
    use domain::caller::Principal;
    use domain::pipeline_event::execution_description;
    use domain::run::record_triggered;
    use ports::RunStore;
    let owner = Principal::Local.caller().owner;
    let sid = session();
    let arn = sm
        .start_pipeline_execution()
        .pipeline_name(pipeline)
        .pipeline_execution_description(execution_description(&sid, &owner, chrono::Utc::now()))
        .client_request_token(uuid::Uuid::new_v4().to_string())
        .send()
        .await
        .unwrap()
        .pipeline_execution_arn
        .unwrap();
    let triggered = record_triggered(
        &owner,
        &sid,
        &arn,
        "2026-12-06T10:00:00Z",
        1 << 40,
        "s3cret",
        None,
    );
    f.handler.store.write(&triggered).await.unwrap();
    for _ in 0..200 {
        if let Some((token, "Executing")) = callback_step(sm, &arn).await {
            return (arn, token);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{arn}'s CallbackStep never waited");
}

/// The run's CallbackStep as ListPipelineExecutionSteps lists it: its token and status.
async fn callback_step(
    sm: &aws_sdk_sagemaker::Client,
    arn: &str,
) -> Option<(String, &'static str)> {
    let steps = sm
        .list_pipeline_execution_steps()
        .pipeline_execution_arn(arn)
        .send()
        .await
        .unwrap();
    steps.pipeline_execution_steps().iter().find_map(|s| {
        let token = s.metadata()?.callback()?.callback_token()?.to_owned();
        let status = match s.step_status()?.as_str() {
            "Executing" => "Executing",
            "Succeeded" => "Succeeded",
            _ => "other",
        };
        Some((token, status))
    })
}

/// One SQS event of callback messages: (message id, token, the run the message names).
fn callback_batch(messages: &[(&str, &str, &str)]) -> Value {
    let records: Vec<Value> = messages
        .iter()
        .map(|(id, token, arn)| {
            let body = json!({"token": token, "pipelineExecutionArn": arn, "status": "Executing",
                "arguments": {"prompt": "Security review passed.\u{1b}[0m Approve deploy to production?"}});
            json!({"messageId": id, "receiptHandle": format!("AQEB{id}"), "body": body.to_string(),
                   "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
                   "eventSource": "aws:sqs", "awsRegion": "us-east-1",
                   "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:mcp-pipeline-callbacks"})
        })
        .collect();
    json!({"Records": records})
}

/// How many questions the run's item holds, open or answered.
async fn questions_on(st: &Stack, f: &Fixture, arn: &str) -> usize {
    let items = st.items(&f.table).await;
    let item = items
        .iter()
        .find(|i| s(i, "execution_arn").as_deref() == Some(arn))
        .expect("the run is recorded");
    item.get("questions")
        .and_then(|q| q.as_m().ok())
        .map_or(0, HashMap::len)
}

fn failed_ids(answer: &Value) -> Vec<&str> {
    answer["batchItemFailures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["itemIdentifier"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_question_is_recorded_only_on_the_run_whose_waiting_callback_step_holds_its_token() {
    let st = stack().await;
    let f = st.fixture(false).await;
    let sm = sagemaker_client(&st.sdk);
    let pipeline = approval_pipeline(&sm).await;
    let (victim, victim_token) = waiting_run(&f, &sm, &pipeline).await;
    let (sender, sender_token) = waiting_run(&f, &sm, &pipeline).await;

    // The sender's own token with the victim's run, and a token no step holds: nothing is
    // recorded on either run, and each message is a failed item (retried, then the DLQ).
    let forged = callback_batch(&[
        ("m-forged", &sender_token, &victim),
        ("m-made-up", "ZzZzZzZz00", &victim),
    ]);
    let answer = f.handler.handle(forged).await.unwrap();
    assert_eq!(failed_ids(&answer), ["m-forged", "m-made-up"], "{answer}");
    assert_eq!(questions_on(&st, &f, &victim).await, 0);
    assert_eq!(questions_on(&st, &f, &sender).await, 0);

    // The listing throttled past the SDK's retries: a failed item, nothing recorded; the
    // delivery after it records the genuine question.
    let genuine = callback_batch(&[("m-genuine", &victim_token, &victim)]);
    standin_control(
        "POST",
        "/_standin/pipeline",
        r#"{"throttle_list_steps": 3}"#,
    )
    .await;
    let answer = f.handler.handle(genuine.clone()).await.unwrap();
    standin_control("DELETE", "/_standin/pipeline", "").await;
    assert_eq!(failed_ids(&answer), ["m-genuine"], "{answer}");
    assert_eq!(questions_on(&st, &f, &victim).await, 0);
    let answer = f.handler.handle(genuine).await.unwrap();
    assert_eq!(failed_ids(&answer), Vec::<&str>::new(), "{answer}");
    assert_eq!(questions_on(&st, &f, &victim).await, 1);
    // Its prompt's colour code is kept as a visible mark; the words stay.
    let items = st.items(&f.table).await;
    let item = items
        .iter()
        .find(|i| s(i, "execution_arn").as_deref() == Some(victim.as_str()))
        .unwrap();
    let question = item["questions"].as_m().unwrap().values().next().unwrap();
    let prompt = question.as_m().unwrap()["prompt"].as_s().unwrap();
    assert_eq!(
        prompt,
        "Security review passed.\u{FFFD}[0m Approve deploy to production?"
    );

    // The sender's step answered in SageMaker: its token no longer waits, so a message with
    // it, even naming its own run, asks nothing.
    sm.send_pipeline_execution_step_success()
        .callback_token(&sender_token)
        .output_parameters(
            aws_sdk_sagemaker::types::OutputParameter::builder()
                .name("deploy_to")
                .value("staging")
                .build(),
        )
        .client_request_token(uuid::Uuid::new_v4().to_string())
        .send()
        .await
        .unwrap();
    for _ in 0..100 {
        if callback_step(&sm, &sender).await.map(|s| s.1) == Some("Succeeded") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let late = callback_batch(&[("m-late", &sender_token, &sender)]);
    let answer = f.handler.handle(late).await.unwrap();
    assert_eq!(failed_ids(&answer), ["m-late"], "{answer}");
    assert_eq!(questions_on(&st, &f, &sender).await, 0);

    sm.stop_pipeline_execution()
        .pipeline_execution_arn(&victim)
        .client_request_token(uuid::Uuid::new_v4().to_string())
        .send()
        .await
        .unwrap();
}
