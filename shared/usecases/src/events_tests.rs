use super::*;
use domain::caller::Principal;
use domain::delivery::DeliveryStatus;
use domain::events::{job_ended, Subject};
use domain::ids::InferenceId;
use domain::subscription::DEFAULT_TTL;
use fakes::{FakeWebhooks, MemoryEventLog, MemorySubscriptions};
use serde_json::{json, Value};

fn now() -> DateTime<Utc> {
    domain::time::parse_rfc3339("2026-12-06T10:00:00Z").unwrap()
}

fn owner(name: &str) -> Owner {
    Principal::Bearer { name: name.into() }.caller().owner
}

fn secret(byte: u8) -> WebhookSecret {
    WebhookSecret::from_bytes(vec![byte; 32]).unwrap()
}

fn ended(owner: &Owner, id: &str, endpoint: &str, at: DateTime<Utc>) -> Event {
    Event::new(
        EventName::JobEnded,
        owner.clone(),
        at,
        Subject::Job {
            inference_id: InferenceId::parse(id).unwrap(),
            endpoint: Some(endpoint.into()),
        },
        "completed",
        json!({"inference_id": id, "status": "completed"}),
    )
}

fn key(owner: &Owner, url: &str, name: EventName, arguments: Value) -> SubscriptionKey {
    SubscriptionKey {
        owner: owner.clone(),
        url: url.into(),
        name,
        arguments,
    }
}

fn ask(key: SubscriptionKey, byte: u8) -> SubscribeAsk {
    SubscribeAsk {
        key,
        secret: secret(byte),
        ttl: DEFAULT_TTL,
    }
}

const SETTINGS: DeliverySettings = DeliverySettings {
    retry_first: Duration::from_secs(10),
    pause_after: Duration::from_secs(3 * 3600),
};

struct World {
    log: MemoryEventLog,
    subs: MemorySubscriptions,
    hooks: FakeWebhooks,
}

impl World {
    fn new() -> Self {
        Self {
            log: MemoryEventLog::default(),
            subs: MemorySubscriptions::default(),
            hooks: FakeWebhooks::default(),
        }
    }

    async fn subscribe(&self, key: SubscriptionKey) -> Subscribed {
        subscribe(&self.subs, &self.hooks, ask(key, 1), now())
            .await
            .unwrap()
    }

    /// The last logged event's delivery to the first subscription it names, as the stream
    /// hands it over.
    fn delivery_of_last(&self) -> Delivery {
        let (event, to) = self.log.logged().pop().unwrap();
        Delivery::of(&event, &event.owner, &to[0])
    }

    async fn publish(&self, event: &Event) -> Published {
        publish(&self.log, Some(&self.subs), event, now())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn an_event_is_logged_once_naming_each_subscription_of_its_owner_it_matches() {
    let w = World::new();
    let (me, them) = (owner("me"), owner("them"));
    let all = w
        .subscribe(key(
            &me,
            "https://a.example/h",
            EventName::JobEnded,
            json!({}),
        ))
        .await;
    let summarize = w
        .subscribe(key(
            &me,
            "https://a.example/h",
            EventName::JobEnded,
            json!({"endpoint": "summarize"}),
        ))
        .await;
    // Not matched: another endpoint, another type, another owner.
    w.subscribe(key(
        &me,
        "https://a.example/h",
        EventName::JobEnded,
        json!({"endpoint": "other"}),
    ))
    .await;
    w.subscribe(key(
        &me,
        "https://a.example/h",
        EventName::RunEnded,
        json!({}),
    ))
    .await;
    w.subscribe(key(
        &them,
        "https://b.example/h",
        EventName::JobEnded,
        json!({}),
    ))
    .await;
    let event = ended(&me, "j1", "summarize", now());
    let first = w.publish(&event).await;
    assert_eq!(
        first,
        Published {
            logged: true,
            subscribers: 2
        }
    );
    let logged = w.log.logged();
    assert_eq!(logged.len(), 1);
    let (logged_event, mut named) = logged[0].clone();
    assert_eq!(logged_event, event);
    named.sort();
    let mut expected = vec![all.subscription.id(), summarize.subscription.id()];
    expected.sort();
    assert_eq!(named, expected);
    // The same outcome again: nothing new logged (so nothing for the stream to send twice).
    let again = w.publish(&event).await;
    assert_eq!(
        again,
        Published {
            logged: false,
            subscribers: 0
        }
    );
    assert_eq!(w.log.logged().len(), 1);
    assert_eq!(w.log.read(&me, None, 10, now()).await.unwrap(), vec![event]);
}

#[tokio::test]
async fn a_lapsed_or_paused_subscription_is_sent_nothing() {
    let w = World::new();
    let me = owner("me");
    let made = w
        .subscribe(key(
            &me,
            "https://a.example/h",
            EventName::JobEnded,
            json!({}),
        ))
        .await;
    let later = now() + chrono::Duration::hours(2);
    let event = ended(&me, "j1", "e", later);
    let published = publish(&w.log, Some(&w.subs), &event, later).await.unwrap();
    assert_eq!(published.subscribers, 0, "lapsed an hour ago");
    let mut paused = made.subscription.clone();
    paused.status.active = false;
    w.subs.write(&paused.record(&paused.status)).await.unwrap();
    let published = w.publish(&ended(&me, "j2", "e", now())).await;
    assert_eq!(published.subscribers, 0, "paused");
    assert!(w.log.logged().iter().all(|(_, to)| to.is_empty()));
    let mut resumed = paused.clone();
    resumed.status.active = true;
    w.subs
        .write(&resumed.record(&resumed.status))
        .await
        .unwrap();
    // Past the extension's 256 KiB a body is not sent: logged for polls only.
    let mut big = ended(&me, "j4", "e", now());
    big.data = json!({"x": "y".repeat(domain::events::MAX_EVENT_BYTES)});
    let published = w.publish(&big).await;
    assert_eq!(
        (published.logged, published.subscribers),
        (true, 0),
        "too big"
    );
    assert_eq!(
        w.publish(&ended(&me, "j5", "e", now())).await.subscribers,
        1
    );
    // Without webhooks, the event is logged all the same.
    let none: Option<&MemorySubscriptions> = None;
    let logged = publish(&w.log, none, &ended(&me, "j3", "e", now()), now())
        .await
        .unwrap();
    assert_eq!(
        logged,
        Published {
            logged: true,
            subscribers: 0
        }
    );
}

#[tokio::test]
async fn a_poll_from_a_cursor_gets_what_it_missed_of_its_type_in_order() {
    let w = World::new();
    let me = owner("me");
    let ask = |cursor: Option<Cursor>, max_events: u32| PollAsk {
        name: EventName::JobEnded,
        filter: Filter::default(),
        cursor,
        max_age: None,
        max_events,
    };
    let start = poll(&w.log, &me, &ask(None, 10), now()).await.unwrap();
    assert!(start.events.is_empty() && !start.truncated && !start.has_more);
    // From a moment that has settled.
    assert_eq!(
        start.cursor,
        Cursor::at(now() - chrono::Duration::seconds(5))
    );
    let events: Vec<Event> = (1..=3)
        .map(|n| {
            ended(
                &me,
                &format!("j{n}"),
                "e",
                now() + chrono::Duration::seconds(n),
            )
        })
        .collect();
    for event in events.iter().rev() {
        w.publish(event).await;
    }
    w.publish(&ended(
        &owner("them"),
        "x",
        "e",
        now() + chrono::Duration::seconds(1),
    ))
    .await;
    let later = now() + chrono::Duration::minutes(1);
    let two = poll(&w.log, &me, &ask(Some(start.cursor.clone()), 2), later)
        .await
        .unwrap();
    assert_eq!(two.events, events[..2].to_vec());
    assert!(two.has_more && !two.truncated);
    let rest = poll(&w.log, &me, &ask(Some(two.cursor.clone()), 10), later)
        .await
        .unwrap();
    assert_eq!(rest.events, events[2..].to_vec());
    assert!(!rest.has_more);
    let none = poll(&w.log, &me, &ask(Some(rest.cursor.clone()), 10), later)
        .await
        .unwrap();
    assert!(none.events.is_empty());
    assert_eq!(none.cursor, rest.cursor, "nothing new: the cursor stays");
    // A filter that keeps none of them still moves the cursor past them.
    let other = PollAsk {
        filter: Filter::parse(EventName::JobEnded, &json!({"endpoint": "other"})).unwrap(),
        ..ask(Some(start.cursor.clone()), 10)
    };
    let filtered = poll(&w.log, &me, &other, later).await.unwrap();
    assert!(filtered.events.is_empty());
    assert_eq!(filtered.cursor, Cursor::after(&events[2]));
    // An event that has not settled is the next poll's, and nothing after it is this one's.
    let late = ended(&me, "j-late", "e", later - chrono::Duration::seconds(2));
    w.publish(&late).await;
    let settling = poll(&w.log, &me, &ask(Some(rest.cursor.clone()), 10), later)
        .await
        .unwrap();
    assert!(settling.events.is_empty() && !settling.has_more);
    assert_eq!(settling.cursor, rest.cursor);
    let settled = later + chrono::Duration::seconds(4);
    let now_settled = poll(&w.log, &me, &ask(Some(rest.cursor.clone()), 10), settled)
        .await
        .unwrap();
    assert_eq!(now_settled.events, vec![late]);
    // A cursor older than the log keeps: truncated, from the oldest kept.
    let day_on = now() + chrono::Duration::hours(25);
    let old = poll(&w.log, &me, &ask(Some(start.cursor.clone()), 10), day_on)
        .await
        .unwrap();
    assert!(old.truncated);
    // As is one past the client's own max age.
    let aged = PollAsk {
        max_age: Some(Duration::from_secs(10)),
        ..ask(Some(start.cursor), 10)
    };
    let aged = poll(&w.log, &me, &aged, later).await.unwrap();
    assert!(aged.truncated && aged.events.is_empty());
}

#[tokio::test]
async fn a_new_callback_is_challenged_signed_and_a_refresh_of_it_is_not() {
    let w = World::new();
    let me = owner("me");
    let k = key(&me, "https://a.example/h", EventName::JobEnded, json!({}));
    let made = w.subscribe(k.clone()).await;
    assert_eq!(made.prior_status, None);
    assert_eq!(made.cursor, Cursor::at(now()));
    let posts = w.hooks.posts();
    assert_eq!(posts.len(), 1, "one challenge");
    let challenge = &posts[0];
    let header = |name: &str| {
        challenge
            .headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    let id = header(ID_HEADER);
    assert!(id.starts_with("msg_verification_"));
    let timestamp: i64 = header(TIMESTAMP_HEADER).parse().unwrap();
    assert!(secret(1).verify(
        &id,
        timestamp,
        &challenge.body,
        &header(SIGNATURE_HEADER),
        timestamp
    ));
    assert_eq!(header(SUBSCRIPTION_HEADER), k.id());
    let body: Value = serde_json::from_slice(&challenge.body).unwrap();
    assert_eq!(body["type"], "verification");
    // Refreshed with a new secret: no challenge, the old secret signs beside it a while.
    let refreshed = subscribe(&w.subs, &w.hooks, ask(k.clone(), 2), now())
        .await
        .unwrap();
    assert_eq!(w.hooks.posts().len(), 1);
    assert_eq!(refreshed.prior_status, Some(DeliveryStatus::default()));
    assert!(refreshed.was_delivering && !made.was_delivering);
    assert_eq!(refreshed.subscription.secret, secret(2));
    assert_eq!(w.subs.all().len(), 1);
    // Another event type to the same callback: verified already.
    w.subscribe(key(
        &me,
        "https://a.example/h",
        EventName::RunEnded,
        json!({}),
    ))
    .await;
    assert_eq!(w.hooks.posts().len(), 1);
    // The same callback for another owner is challenged again.
    w.subscribe(key(
        &owner("them"),
        "https://a.example/h",
        EventName::JobEnded,
        json!({}),
    ))
    .await;
    assert_eq!(w.hooks.posts().len(), 2);
}

#[tokio::test]
async fn a_callback_that_does_not_answer_the_challenge_subscribes_nothing() {
    let w = World::new();
    let me = owner("me");
    let k = |url: &str| key(&me, url, EventName::JobEnded, json!({}));
    w.hooks
        .answer([Answer::Status(500), Answer::Failed(Failure::Timeout)]);
    for expected in [Failure::Http5xx, Failure::Timeout] {
        let refused = subscribe(&w.subs, &w.hooks, ask(k("https://a.example/h"), 1), now())
            .await
            .unwrap_err();
        assert!(
            matches!(refused, SubscribeError::Callback(f) if f == expected),
            "{refused}"
        );
    }
    w.hooks.never_echo();
    let refused = subscribe(&w.subs, &w.hooks, ask(k("https://a.example/h"), 1), now())
        .await
        .unwrap_err();
    assert!(matches!(
        refused,
        SubscribeError::Callback(Failure::ChallengeFailed)
    ));
    assert_eq!(
        refused.to_string(),
        "the callback was not verified: challenge_failed"
    );
    assert!(w.subs.all().is_empty());
}

#[tokio::test]
async fn a_caller_holds_at_most_its_share_of_live_subscriptions() {
    let w = World::new();
    let me = owner("me");
    let k = |n: usize| {
        key(
            &me,
            "https://a.example/h",
            EventName::JobEnded,
            json!({"endpoint": format!("e{n}")}),
        )
    };
    for n in 0..MAX_PER_CALLER {
        w.subscribe(k(n)).await;
    }
    let refused = subscribe(&w.subs, &w.hooks, ask(k(99), 1), now())
        .await
        .unwrap_err();
    assert!(matches!(
        refused,
        SubscribeError::TooMany {
            max: MAX_PER_CALLER
        }
    ));
    // A refresh of one held is no new one; once they lapse, there is room again.
    subscribe(&w.subs, &w.hooks, ask(k(0), 1), now())
        .await
        .unwrap();
    let later = now() + chrono::Duration::hours(2);
    subscribe(&w.subs, &w.hooks, ask(k(99), 1), later)
        .await
        .unwrap();
    // Ending one is by its key; another's key ends nothing of mine.
    assert!(unsubscribe(&w.subs, &k(99)).await.unwrap());
    assert!(!unsubscribe(&w.subs, &k(99)).await.unwrap());
    let theirs = key(
        &owner("them"),
        "https://a.example/h",
        EventName::JobEnded,
        json!({"endpoint": "e0"}),
    );
    assert!(!unsubscribe(&w.subs, &theirs).await.unwrap());
}

#[tokio::test]
async fn a_delivery_is_signed_retried_with_backoff_paused_when_it_keeps_failing_and_reset_by_success(
) {
    let w = World::new();
    let me = owner("me");
    let k = key(&me, "https://a.example/h", EventName::JobEnded, json!({}));
    let a_day = |key: SubscriptionKey| SubscribeAsk {
        ttl: domain::subscription::MAX_TTL,
        ..ask(key, 1)
    };
    let made = subscribe(&w.subs, &w.hooks, a_day(k.clone()), now())
        .await
        .unwrap();
    let event = ended(&me, "j1", "e", now());
    w.publish(&event).await;
    let delivery = w.delivery_of_last();
    w.hooks.answer([
        Answer::Status(500),
        Answer::Status(503),
        Answer::Status(204),
    ]);
    let t = |secs: i64| now() + chrono::Duration::seconds(secs);
    let first = deliver(
        &w.subs,
        &w.hooks,
        &delivery,
        Attempt::Queued,
        SETTINGS,
        t(1),
    )
    .await
    .unwrap();
    assert_eq!(
        first,
        Delivered::Retry {
            after: Duration::from_secs(10),
            failure: Failure::Http5xx
        }
    );
    let second = deliver(
        &w.subs,
        &w.hooks,
        &delivery,
        Attempt::Queued,
        SETTINGS,
        t(11),
    )
    .await
    .unwrap();
    assert_eq!(
        second,
        Delivered::Retry {
            after: Duration::from_secs(20),
            failure: Failure::Http5xx
        }
    );
    let stored = w
        .subs
        .get(&me, &made.subscription.id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.status.failures, stored.status.failed_since),
        (2, Some(t(1)))
    );
    let third = deliver(
        &w.subs,
        &w.hooks,
        &delivery,
        Attempt::Queued,
        SETTINGS,
        t(31),
    )
    .await
    .unwrap();
    assert_eq!(third, Delivered::Sent);
    let stored = w
        .subs
        .get(&me, &made.subscription.id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.status.failures, stored.status.last_delivery_at),
        (0, Some(t(31)))
    );
    // Every attempt the same event, its id stable, its signature fresh for its timestamp.
    let posts = w.hooks.posts();
    let attempts = &posts[1..];
    assert_eq!(attempts.len(), 3);
    for post in attempts {
        let header = |name: &str| {
            post.headers
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(header(ID_HEADER), event.id);
        assert_eq!(header(SUBSCRIPTION_HEADER), made.subscription.id());
        let ts: i64 = header(TIMESTAMP_HEADER).parse().unwrap();
        assert!(secret(1).verify(&event.id, ts, &post.body, &header(SIGNATURE_HEADER), ts));
        assert_eq!(post.body, delivery.body());
    }
    // Failing for three hours without a break: paused, the event given up to poll.
    w.hooks.answer([Answer::Status(500), Answer::Status(500)]);
    deliver(
        &w.subs,
        &w.hooks,
        &delivery,
        Attempt::Queued,
        SETTINGS,
        t(100),
    )
    .await
    .unwrap();
    let paused = deliver(
        &w.subs,
        &w.hooks,
        &delivery,
        Attempt::Queued,
        SETTINGS,
        t(100 + 3 * 3600),
    )
    .await
    .unwrap();
    assert_eq!(paused, Delivered::Paused(Failure::Http5xx));
    let skipped = deliver(
        &w.subs,
        &w.hooks,
        &delivery,
        Attempt::Queued,
        SETTINGS,
        t(100 + 3 * 3600 + 1),
    )
    .await
    .unwrap();
    assert_eq!(skipped, Delivered::Skipped(Skip::Paused));
    // A refresh resumes it, and reports how it fared.
    let refreshed = subscribe(&w.subs, &w.hooks, a_day(k), t(100 + 3 * 3600 + 2))
        .await
        .unwrap();
    assert!(!refreshed.prior_status.unwrap().active);
    assert!(!refreshed.was_delivering, "it was paused");
    w.hooks.answer([Answer::Status(410)]);
    let gone = deliver(
        &w.subs,
        &w.hooks,
        &delivery,
        Attempt::Queued,
        SETTINGS,
        t(100 + 3 * 3600 + 2),
    )
    .await
    .unwrap();
    assert_eq!(
        gone,
        Delivered::Dropped(Failure::Http4xx),
        "410: that event only"
    );
    let still = w
        .subs
        .get(&me, &made.subscription.id())
        .await
        .unwrap()
        .unwrap();
    assert!(still.status.active);
}

#[tokio::test]
async fn a_first_try_goes_behind_a_failing_subscriptions_queued_deliveries() {
    let w = World::new();
    let me = owner("me");
    let made = w
        .subscribe(key(
            &me,
            "https://a.example/h",
            EventName::JobEnded,
            json!({}),
        ))
        .await;
    w.publish(&ended(&me, "j1", "e", now())).await;
    let first = w.delivery_of_last();
    w.publish(&ended(&me, "j2", "e", now() + chrono::Duration::seconds(1)))
        .await;
    let second = w.delivery_of_last();
    w.hooks.answer([
        Answer::Status(503),
        Answer::Status(204),
        Answer::Status(204),
    ]);
    let tried = deliver(&w.subs, &w.hooks, &first, Attempt::First, SETTINGS, now())
        .await
        .unwrap();
    assert!(matches!(tried, Delivered::Retry { .. }), "{tried:?}");
    // The next event's first try is not sent while the first waits in the queue.
    let behind = deliver(&w.subs, &w.hooks, &second, Attempt::First, SETTINGS, now())
        .await
        .unwrap();
    assert_eq!(behind, Delivered::Behind);
    assert_eq!(w.hooks.posts().len(), 2, "the challenge and the failed try");
    // From the queue, in order: both sent, and the subscription is well again.
    for delivery in [&first, &second] {
        let sent = deliver(
            &w.subs,
            &w.hooks,
            delivery,
            Attempt::Queued,
            SETTINGS,
            now(),
        )
        .await
        .unwrap();
        assert_eq!(sent, Delivered::Sent);
    }
    let ids: Vec<String> = w.hooks.posts()[1..]
        .iter()
        .map(|p| {
            p.headers
                .iter()
                .find(|(n, _)| *n == ID_HEADER)
                .unwrap()
                .1
                .clone()
        })
        .collect();
    assert_eq!(
        ids,
        [&first.event_id, &first.event_id, &second.event_id].map(String::clone)
    );
    let stored = w
        .subs
        .get(&me, &made.subscription.id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status.failures, 0);
    w.publish(&ended(&me, "j3", "e", now() + chrono::Duration::seconds(2)))
        .await;
    let third = w.delivery_of_last();
    let sent = deliver(&w.subs, &w.hooks, &third, Attempt::First, SETTINGS, now())
        .await
        .unwrap();
    assert_eq!(sent, Delivered::Sent, "straight from the stream again");
}

#[tokio::test]
async fn a_delivery_to_an_ended_or_lapsed_subscription_is_not_sent() {
    let w = World::new();
    let me = owner("me");
    let k = key(&me, "https://a.example/h", EventName::JobEnded, json!({}));
    w.subscribe(k.clone()).await;
    w.publish(&ended(&me, "j1", "e", now())).await;
    let delivery = w.delivery_of_last();
    let lapsed = now() + chrono::Duration::hours(1);
    assert_eq!(
        deliver(
            &w.subs,
            &w.hooks,
            &delivery,
            Attempt::Queued,
            SETTINGS,
            lapsed
        )
        .await
        .unwrap(),
        Delivered::Skipped(Skip::Lapsed)
    );
    unsubscribe(&w.subs, &k).await.unwrap();
    assert_eq!(
        deliver(
            &w.subs,
            &w.hooks,
            &delivery,
            Attempt::Queued,
            SETTINGS,
            now()
        )
        .await
        .unwrap(),
        Delivered::Skipped(Skip::Gone)
    );
    assert_eq!(w.hooks.posts().len(), 1, "the challenge only");
}

#[test]
fn job_ended_is_what_publish_is_given_for_an_outcome() {
    // The notification path's event: its owner's, linking its output.
    let completion = domain::completion::JobCompletion {
        inference_id: InferenceId::parse("j1").unwrap(),
        status: "completed",
        owner: Some(owner("me").to_string()),
        endpoint_name: Some("e".into()),
        output_location: None,
        failure_reason: None,
        submitted_at: None,
        completed_at: Some("2026-12-06T10:00:00Z".into()),
        reconciled: false,
        traceparent: None,
    };
    let event = job_ended(&completion, now()).unwrap();
    assert_eq!(event.owner, owner("me"));
}
