use std::time::Duration;

use serde_json::{json, Value};

use domain::caller::{Owner, Principal};
use domain::delivery::{Answer, Delivery};
use domain::events::{Event, EventName, Subject, SubscriptionKey};
use domain::ids::InferenceId;
use domain::item::{Attr, Item, WriteOp};
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
        first_tries_budget: FIRST_TRIES_BUDGET,
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

fn event(job: &str) -> Event {
    Event::new(
        EventName::JobEnded,
        owner(),
        chrono::Utc::now(),
        Subject::Job {
            inference_id: InferenceId::parse(job).unwrap(),
            endpoint: None,
        },
        "completed",
        json!({"inference_id": job}),
    )
}

fn delivery(subscription_id: &str, job: &str) -> Delivery {
    Delivery::of(&event(job), &owner(), subscription_id)
}

/// An item in DynamoDB's JSON, as a stream record carries it.
fn image(item: &Item) -> Value {
    item.iter()
        .map(|(name, value)| {
            let typed = match value {
                Attr::S(s) => json!({ "S": s }),
                Attr::N(n) => json!({ "N": n.to_string() }),
                Attr::Bool(b) => json!({ "BOOL": b }),
                Attr::Json(v) => v.clone(),
            };
            (name.clone(), typed)
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// A stream batch of these events, each logged naming these subscriptions.
fn stream(events: &[(&str, &Event, &[String])]) -> Value {
    let records: Vec<Value> = events
        .iter()
        .map(|(sequence, event, to)| {
            let WriteOp::Put(item) = event.append(1_900_000_000, to).op else {
                panic!("a put")
            };
            json!({"eventID": sequence, "eventName": "INSERT", "eventSource": "aws:dynamodb",
                   "dynamodb": {"SequenceNumber": sequence, "NewImage": image(&item),
                                "StreamViewType": "NEW_IMAGE"}})
        })
        .collect();
    json!({ "Records": records })
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

#[tokio::test]
async fn a_new_event_is_sent_at_once_and_a_failed_first_try_waits_its_backoff_in_the_queue() {
    let h = handler();
    let a = subscribed(&h, "https://a.example/h").await;
    let b = subscribed(&h, "https://b.example/h").await;
    let challenges = h.webhooks.posts().len();
    // j1 to a fails, to b goes; j2 to a waits behind j1 without a try.
    h.webhooks
        .answer([Answer::Status(503), Answer::Status(204)]);
    let (j1, j2) = (event("j1"), event("j2"));
    let both = [a.clone(), b.clone()];
    let only_a = [a.clone()];
    let answer = h
        .handle(stream(&[("100", &j1, &both), ("200", &j2, &only_a)]))
        .await
        .unwrap();
    assert!(failures(&answer).is_empty(), "{answer}");
    let urls: Vec<String> = h.webhooks.posts()[challenges..]
        .iter()
        .map(|p| p.url.clone())
        .collect();
    assert_eq!(urls, ["https://a.example/h", "https://b.example/h"]);
    let queued = h.queue.queued();
    let order: Vec<(&str, &str)> = queued
        .iter()
        .map(|d| (d.subscription_id.as_str(), d.event_id.as_str()))
        .collect();
    assert_eq!(
        order,
        [(a.as_str(), j1.id.as_str()), (a.as_str(), j2.id.as_str())]
    );
    let now = h.clock.now();
    let wait = queued[0].wait(now).unwrap();
    assert!(
        wait > Duration::from_secs(8) && wait <= Duration::from_secs(10),
        "{wait:?}"
    );
    assert_eq!(
        queued[1].wait(now),
        None,
        "behind it in the group, due at once"
    );
    // From the queue, the failed first try waits out its backoff unsent, and its follower
    // is handed back behind it.
    let answer = h
        .handle(batch(&[
            ("m1", queued[0].to_message()),
            ("m2", queued[1].to_message()),
        ]))
        .await
        .unwrap();
    assert_eq!(failures(&answer), ["m1", "m2"]);
    assert_eq!(
        h.webhooks.posts().len(),
        challenges + 2,
        "nothing sent early"
    );
    let waits = h.queue.waits();
    assert_eq!(waits[1], ("rh-m2".to_owned(), Duration::ZERO));
    assert!(waits[0].1 > Duration::from_secs(8), "{waits:?}");
}

#[tokio::test]
async fn a_stream_record_whose_retries_cannot_be_queued_is_handed_again_with_what_follows() {
    let h = handler();
    let a = subscribed(&h, "https://a.example/h").await;
    h.queue.fail_enqueues();
    h.webhooks.answer([Answer::Status(500)]);
    let (j1, j2) = (event("j1"), event("j2"));
    let to = [a.clone()];
    let answer = h
        .handle(stream(&[("100", &j1, &to), ("200", &j2, &to)]))
        .await
        .unwrap();
    assert_eq!(
        failures(&answer),
        ["100"],
        "resume from the first: nothing is lost"
    );
    // Not one try of the second: it comes again with the first.
    let ids: Vec<String> = h
        .webhooks
        .posts()
        .iter()
        .filter_map(|p| {
            p.headers
                .iter()
                .find(|(n, _)| *n == "webhook-id")
                .map(|h| h.1.clone())
        })
        .filter(|id| id.starts_with("evt_"))
        .collect();
    assert_eq!(ids, std::slice::from_ref(&j1.id));
}

#[tokio::test]
async fn a_stream_record_that_names_nobody_or_is_no_event_sends_nothing() {
    let h = handler();
    let challenges = h.webhooks.posts().len();
    let j1 = event("j1");
    let mut batch = stream(&[("100", &j1, &[])]);
    batch["Records"]
        .as_array_mut()
        .unwrap()
        .push(json!({"eventName": "INSERT", "eventSource": "aws:dynamodb",
                     "dynamodb": {"SequenceNumber": "200", "NewImage": {"owner": {"S": "x"}}}}));
    batch["Records"]
        .as_array_mut()
        .unwrap()
        .push(json!({"eventName": "REMOVE", "eventSource": "aws:dynamodb",
                     "dynamodb": {"SequenceNumber": "300"}}));
    let answer = h.handle(batch).await.unwrap();
    assert!(failures(&answer).is_empty());
    assert_eq!(h.webhooks.posts().len(), challenges);
    assert!(h.queue.queued().is_empty());
}

#[tokio::test]
async fn a_stream_batch_out_of_time_for_first_tries_queues_the_rest_untried() {
    let mut h = handler();
    h.first_tries_budget = Duration::ZERO;
    let a = subscribed(&h, "https://a.example/h").await;
    let challenges = h.webhooks.posts().len();
    let (j1, j2) = (event("j1"), event("j2"));
    let to = [a.clone()];
    let answer = h
        .handle(stream(&[("100", &j1, &to), ("200", &j2, &to)]))
        .await
        .unwrap();
    assert!(failures(&answer).is_empty(), "{answer}");
    assert_eq!(h.webhooks.posts().len(), challenges, "nothing tried");
    let queued: Vec<(String, Option<Duration>)> = h
        .queue
        .queued()
        .iter()
        .map(|d| (d.event_id.clone(), d.wait(h.clock.now())))
        .collect();
    assert_eq!(
        queued,
        [(j1.id.clone(), None), (j2.id.clone(), None)],
        "due at once, in order"
    );
}
