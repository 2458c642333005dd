//! The event log: an event is logged once, an owner reads only its own, in order, from its
//! cursor, and an event past its time is gone.

use chrono::Duration;
use serde_json::json;

use domain::caller::{Owner, Principal};
use domain::events::{Cursor, Event, EventName, Subject};
use domain::ids::InferenceId;
use ports::EventLog;

use super::{now, refused, written};

/// An owner no other behaviour logs for.
fn owner() -> Owner {
    let name = format!("events-{}", uuid::Uuid::new_v4().simple());
    Principal::Bearer { name }.caller().owner
}

fn ended(owner: &Owner, n: i64) -> Event {
    let id = format!("j{n}");
    let subject = Subject::Job {
        inference_id: InferenceId::parse(&id).unwrap(),
        endpoint: Some("summarize".into()),
    };
    let at = now() - Duration::minutes(10) + Duration::seconds(n);
    let data = json!({"inference_id": id, "status": "completed"});
    Event::new(
        EventName::JobEnded,
        owner.clone(),
        at,
        subject,
        "completed",
        data,
    )
}

fn kept() -> i64 {
    (now() + Duration::hours(1)).timestamp()
}

pub async fn an_event_is_logged_once<L: EventLog>(log: &L) {
    let owner = owner();
    let event = ended(&owner, 1);
    let to = ["sub_a".to_owned()];
    written(
        log.append(&event, &to, kept()).await.unwrap(),
        "the first time",
    );
    refused(
        &log.append(&event, &to, kept()).await.unwrap(),
        "the same event again",
    );
    let read = log.read(&owner, None, 10, now()).await.unwrap();
    assert_eq!(read, vec![event], "logged once, read back as it was");
}

pub async fn an_owner_reads_its_own_events_in_order_from_its_cursor<L: EventLog>(log: &L) {
    let (mine, theirs) = (owner(), owner());
    let events: Vec<Event> = (1..=4).map(|n| ended(&mine, n)).collect();
    // Logged out of order: read in the order they happened.
    for event in events.iter().rev() {
        written(log.append(event, &[], kept()).await.unwrap(), "an event");
    }
    written(
        log.append(&ended(&theirs, 2), &[], kept()).await.unwrap(),
        "another owner's",
    );
    let all = log.read(&mine, None, 10, now()).await.unwrap();
    assert_eq!(all, events, "every event of the owner's, oldest first");
    let after = Cursor::after(&events[1]);
    let rest = log.read(&mine, Some(&after), 10, now()).await.unwrap();
    assert_eq!(rest, events[2..], "only what came after the cursor");
    let one = log.read(&mine, Some(&after), 1, now()).await.unwrap();
    assert_eq!(one, events[2..3], "at most the limit");
    let end = Cursor::after(&events[3]);
    assert!(log
        .read(&mine, Some(&end), 10, now())
        .await
        .unwrap()
        .is_empty());
}

pub async fn an_event_past_its_time_is_gone<L: EventLog>(log: &L) {
    let owner = owner();
    let event = ended(&owner, 1);
    let gone = (now() - Duration::seconds(1)).timestamp();
    written(
        log.append(&event, &[], gone).await.unwrap(),
        "an expired event",
    );
    assert!(log.read(&owner, None, 10, now()).await.unwrap().is_empty());
}

#[macro_export]
macro_rules! event_log_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            event_log,
            $make,
            [
                an_event_is_logged_once,
                an_owner_reads_its_own_events_in_order_from_its_cursor,
                an_event_past_its_time_is_gone,
            ]
        );
    };
}
