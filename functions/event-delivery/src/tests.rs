use std::time::Duration;

use serde_json::{json, Value};

use domain::caller::{Owner, Principal};
use domain::delivery::{Answer, Delivery};
use domain::events::{Event, EventName, Subject, SubscriptionKey};
use domain::ids::InferenceId;
use domain::subscription::DEFAULT_TTL;
use domain::webhook::WebhookSecret;
use fakes::{FakeWebhooks, MemoryDeliveryQueue, MemorySubscriptions};
use usecases::events::{subscribe, DeliverySettings, SubscribeAsk};

use super::*;

type TestHandler = Handler<MemorySubscriptions, FakeWebhooks, MemoryDeliveryQueue>;

fn handler() -> TestHandler {
    Handler {
        subscriptions: MemorySubscriptions::default(),
        webhooks: FakeWebhooks::default(),
        queue: MemoryDeliveryQueue::default(),
        settings: DeliverySettings {
            retry_first: Duration::from_secs(10),
            pause_after: Duration::from_secs(3600),
        },
        clock: domain::time::Clock::system(),
    }
}

fn owner() -> Owner {
    Principal::Local.caller().owner
}

async fn subscribed(h: &TestHandler, url: &str) -> String {
    let key = SubscriptionKey {
        owner: owner(),
        url: url.into(),
        name: EventName::JobEnded,
        arguments: json!({}),
    };
    let ask = SubscribeAsk {
        key,
        secret: WebhookSecret::from_bytes(vec![1; 32]).unwrap(),
        ttl: DEFAULT_TTL,
    };
    let made = subscribe(&h.subscriptions, &h.webhooks, ask, h.clock.now())
        .await
        .unwrap();
    made.subscription.id()
}

fn delivery(subscription_id: &str, job: &str) -> Delivery {
    let event = Event::new(
        EventName::JobEnded,
        owner(),
        chrono::Utc::now(),
        Subject::Job {
            inference_id: InferenceId::parse(job).unwrap(),
            endpoint: None,
        },
        "completed",
        json!({"inference_id": job}),
    );
    Delivery::of(&event, &owner(), subscription_id)
}

fn batch(messages: &[(&str, String)]) -> Value {
    let records: Vec<Value> = messages
        .iter()
        .map(|(id, body)| {
            json!({"messageId": id, "receiptHandle": format!("rh-{id}"), "body": body,
                   "eventSource": "aws:sqs", "attributes": {}, "messageAttributes": {}})
        })
        .collect();
    json!({ "Records": records })
}

fn failures(answer: &Value) -> Vec<String> {
    answer["batchItemFailures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["itemIdentifier"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_batch_is_delivered_in_order_and_a_failure_holds_back_the_rest_of_its_subscription() {
    let h = handler();
    let a = subscribed(&h, "https://a.example/h").await;
    let b = subscribed(&h, "https://b.example/h").await;
    let challenges = h.webhooks.posts().len();
    // a's first fails; b's goes; a's second waits behind a's first, unsent.
    h.webhooks
        .answer([Answer::Status(500), Answer::Status(200)]);
    let answer = h
        .handle(batch(&[
            ("m1", delivery(&a, "j1").to_message()),
            ("m2", delivery(&b, "j2").to_message()),
            ("m3", delivery(&a, "j3").to_message()),
        ]))
        .await
        .unwrap();
    assert_eq!(failures(&answer), ["m1", "m3"]);
    let posts = &h.webhooks.posts()[challenges..];
    let urls: Vec<&str> = posts.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(urls, ["https://a.example/h", "https://b.example/h"]);
    // The failed one waits its backoff; the one behind it is handed back at once.
    assert_eq!(
        h.queue.waits(),
        [
            ("rh-m1".to_owned(), Duration::from_secs(10)),
            ("rh-m3".to_owned(), Duration::ZERO)
        ]
    );
}

#[tokio::test]
async fn a_message_that_is_no_delivery_is_reported_and_one_for_no_subscription_is_done() {
    let h = handler();
    let answer = h
        .handle(batch(&[
            ("bad", "{\"v\":7}".to_owned()),
            ("gone", delivery("sub_0000000000000000", "j1").to_message()),
        ]))
        .await
        .unwrap();
    assert_eq!(failures(&answer), ["bad"]);
    assert!(h.webhooks.posts().is_empty());
    assert!(h.handle(json!({"nope": 1})).await.is_err());
}
