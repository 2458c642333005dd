//! The events a caller's work raises, for MCP Events subscribers (poll, push or webhook): what
//! each is about, its id (the same for an outcome however often it is delivered, so it is
//! written and delivered once), which subscriptions it matches, a webhook subscription's key
//! and derived id, and the opaque cursor a poll resumes from.

use std::collections::BTreeSet;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::caller::Owner;
use crate::completion::JobCompletion;
use crate::ids::{ExecutionArn, InferenceId};
use crate::item::{Attr, Fields, Guard, Item, Write, WriteOp};
use crate::job::object::{uri, JobObject};
use crate::run::{CompletionMessage, Run};
use crate::task_id::TaskId;
use crate::time::parse_rfc3339;
use crate::util::hex;

/// The event log's attributes: one partition per owner, its events in the order they happened.
pub mod attr {
    pub const OWNER: &str = "owner";
    /// `<epoch milliseconds, 13 digits>#<event id>`: sorts by time, then by id.
    pub const POSITION: &str = "position";
    pub const NAME: &str = "name";
    pub const AT: &str = "at";
    pub const SUBJECT: &str = "subject";
    pub const ENDPOINT: &str = "endpoint";
    pub const PIPELINE: &str = "pipeline";
    pub const DATA: &str = "data";
    pub const TTL: &str = "ttl";
    /// `true` on an event with webhook subscriptions to send it to: what the delivery
    /// function's stream filter passes (the others never invoke it).
    pub const WEBHOOKS: &str = "webhooks";
    /// The ids of those subscriptions, separated by spaces.
    pub const DELIVER_TO: &str = "deliver_to";
}

/// The most subscriptions one event is sent to: an owner's live subscriptions are bounded
/// (`subscription::MAX_PER_CALLER`), and a logged list is read no further than this.
pub const MAX_DELIVER_TO: usize = 64;

/// The most bytes one delivery's body may hold (the extension's webhook bound, kept for every
/// mode): a payload past it is not sent whole.
pub const MAX_EVENT_BYTES: usize = 256 * 1024;

/// The event types, as `events/list` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventName {
    JobEnded,
    RunEnded,
    RunAsks,
}

impl EventName {
    pub const ALL: [EventName; 3] = [Self::JobEnded, Self::RunEnded, Self::RunAsks];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::JobEnded => "job.ended",
            Self::RunEnded => "run.ended",
            Self::RunAsks => "run.asks",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|n| n.as_str() == text)
    }
}

/// What an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Job {
        inference_id: InferenceId,
        /// The async endpoint it ran on (a catalog tool's, or the deployment's), when known.
        endpoint: Option<String>,
    },
    Run {
        execution_arn: ExecutionArn,
        pipeline: String,
    },
}

impl Subject {
    fn key(&self) -> &str {
        match self {
            Self::Job { inference_id, .. } => inference_id.as_str(),
            Self::Run { execution_arn, .. } => execution_arn.as_str(),
        }
    }
}

/// One event: its owner hears of it (and, for a question, whoever may answer).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub name: EventName,
    pub owner: Owner,
    pub at: DateTime<Utc>,
    pub subject: Subject,
    /// The payload, as the event type's `payloadSchema` says.
    pub data: Value,
}

impl Event {
    /// An event whose id is derived from what happened: `what` tells apart the events of one
    /// subject (a status, a question's key), so a redelivered outcome makes the same event.
    pub fn new(
        name: EventName,
        owner: Owner,
        at: DateTime<Utc>,
        subject: Subject,
        what: &str,
        data: Value,
    ) -> Self {
        let digest = Sha256::digest(format!("{}\0{}\0{what}", name.as_str(), subject.key()));
        Self {
            id: format!("evt_{}", hex(&digest[..16])),
            name,
            owner,
            // To the millisecond, as it is logged and delivered.
            at: at.trunc_subsecs(3),
            subject,
            data,
        }
    }

    /// The event as every mode delivers it (an `EventOccurrence`).
    pub fn occurrence(&self) -> Value {
        json!({
            "eventId": self.id,
            "name": self.name.as_str(),
            "timestamp": self.at.to_rfc3339_opts(SecondsFormat::Millis, true),
            "data": self.data,
        })
    }

    /// Where it stands in its owner's log.
    pub fn position(&self) -> String {
        position(self.at.timestamp_millis(), &self.id)
    }

    /// The write that logs it once, kept until `ttl` (epoch seconds), naming the webhook
    /// subscriptions it is to be sent to (the table's stream hands it to the delivery function
    /// when there are any): refused when it is logged already (the same outcome delivered
    /// again), so it is sent once.
    pub fn append(&self, ttl: i64, deliver_to: &[String]) -> Write {
        let mut item = Item::from([
            (attr::OWNER.to_owned(), Attr::s(self.owner.as_str())),
            (attr::POSITION.to_owned(), Attr::s(self.position())),
            (attr::NAME.to_owned(), Attr::s(self.name.as_str())),
            (
                attr::AT.to_owned(),
                Attr::s(self.at.to_rfc3339_opts(SecondsFormat::Millis, true)),
            ),
            (attr::DATA.to_owned(), Attr::s(self.data.to_string())),
            (attr::TTL.to_owned(), Attr::N(ttl)),
        ]);
        let subject = match &self.subject {
            Subject::Job {
                inference_id,
                endpoint,
            } => {
                if let Some(endpoint) = endpoint {
                    item.insert(attr::ENDPOINT.to_owned(), Attr::s(endpoint));
                }
                inference_id.as_str()
            }
            Subject::Run {
                execution_arn,
                pipeline,
            } => {
                item.insert(attr::PIPELINE.to_owned(), Attr::s(pipeline));
                execution_arn.as_str()
            }
        };
        item.insert(attr::SUBJECT.to_owned(), Attr::s(subject));
        if !deliver_to.is_empty() {
            item.insert(attr::WEBHOOKS.to_owned(), Attr::Bool(true));
            item.insert(attr::DELIVER_TO.to_owned(), Attr::s(deliver_to.join(" ")));
        }
        let key = Item::from([
            (attr::OWNER.to_owned(), Attr::s(self.owner.as_str())),
            (attr::POSITION.to_owned(), Attr::s(self.position())),
        ]);
        Write {
            key,
            op: WriteOp::Put(item),
            guard: Guard::Absent(attr::POSITION),
        }
    }

    /// An event read back from the log; None for an item that is not one (logged by
    /// another version, or damaged), which a reader skips.
    pub fn from_item(item: &Item) -> Option<Event> {
        let f = Fields(item);
        let name = EventName::parse(&f.s(attr::NAME)?)?;
        let position = f.s(attr::POSITION)?;
        let (_, id) = position.split_once('#')?;
        let subject = f.s(attr::SUBJECT)?;
        let subject = match name {
            EventName::JobEnded => Subject::Job {
                inference_id: subject.into(),
                endpoint: f.s(attr::ENDPOINT),
            },
            EventName::RunEnded | EventName::RunAsks => Subject::Run {
                execution_arn: subject.into(),
                pipeline: f.s(attr::PIPELINE)?,
            },
        };
        Some(Event {
            id: id.to_owned(),
            name,
            owner: Owner::stored(f.s(attr::OWNER)?),
            at: parse_rfc3339(&f.s(attr::AT)?)?,
            subject,
            data: serde_json::from_str(&f.s(attr::DATA)?).ok()?,
        })
    }

    /// The webhook subscriptions a logged event is to be sent to (at most
    /// [`MAX_DELIVER_TO`]); none when it names none.
    pub fn deliver_to(item: &Item) -> Vec<String> {
        Fields(item)
            .s(attr::DELIVER_TO)
            .map(|ids| {
                ids.split(' ')
                    .filter(|id| !id.is_empty())
                    .take(MAX_DELIVER_TO)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether its time in the log has run out (DynamoDB deletes such items late: a reader
    /// treats them as gone).
    pub fn expired(item: &Item, now: DateTime<Utc>) -> bool {
        Fields(item)
            .n(attr::TTL)
            .is_some_and(|ttl| ttl <= now.timestamp())
    }

    /// Whether it can be delivered whole, within [`MAX_EVENT_BYTES`].
    pub fn fits(&self) -> bool {
        self.occurrence().to_string().len() <= MAX_EVENT_BYTES
    }
}

/// The event a job's recorded outcome raises, for its owner; None for a job no caller of this
/// server owns (its outcome arrived for a job submitted elsewhere: nobody subscribed to it)
/// or one that did not end. Its time is the recorded outcome's, so a redelivered outcome
/// makes the same event; its payload links the output or failure detail as resources.
pub fn job_ended(completion: &JobCompletion, now: DateTime<Utc>) -> Option<Event> {
    let owner = Owner::parse(completion.owner.as_deref()?)?;
    let inference_id = &completion.inference_id;
    let at = completion
        .completed_at
        .as_deref()
        .and_then(parse_rfc3339)
        .unwrap_or(now);
    let (output, failure) = match completion.status {
        "completed" => (Some(uri(inference_id.as_str(), JobObject::Output)), None),
        "failed" => (None, Some(uri(inference_id.as_str(), JobObject::Failure))),
        _ => return None,
    };
    let data = json!({
        "inference_id": inference_id.as_str(),
        "endpoint": completion.endpoint_name,
        "status": completion.status,
        "ended_at": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "output": output,
        "failure": failure,
    });
    let subject = Subject::Job {
        inference_id: inference_id.clone(),
        endpoint: completion.endpoint_name.clone(),
    };
    let status = completion.status;
    Some(Event::new(
        EventName::JobEnded,
        owner,
        at,
        subject,
        status,
        data,
    ))
}

/// The event a run's recorded end raises, for the owner that started it; None for a run no
/// caller of this server owns. Its time is the run's end (SageMaker's), so a redelivered status
/// change makes the same event.
pub fn run_ended(message: &CompletionMessage, now: DateTime<Utc>) -> Option<Event> {
    let owner = Owner::parse(message.owner.as_deref()?)?;
    let at = message
        .ended_at
        .as_deref()
        .or(Some(message.event_time.as_str()))
        .and_then(parse_rfc3339)
        .unwrap_or(now);
    let pipeline = pipeline_of(&message.pipeline_arn);
    let status = message.status.as_str();
    let data = json!({
        "execution_arn": message.execution_arn.as_str(),
        "session_id": message.session_id.as_str(),
        "pipeline": pipeline,
        "status": status,
        "ended_at": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "failure_reason": message.failure_reason,
    });
    let subject = Subject::Run {
        execution_arn: message.execution_arn.clone(),
        pipeline,
    };
    Some(Event::new(
        EventName::RunEnded,
        owner,
        at,
        subject,
        status,
        data,
    ))
}

/// The event a run's question raises when it is recorded (a CallbackStep asks), for the run's
/// owner; None for a run no caller of this server owns. Its id is the question's key, so a
/// redelivered question makes the same event; the question itself is not in it (whoever may
/// answer reads it with `tasks/get`).
pub fn run_asks(run: &Run, key: &str, asked_at: DateTime<Utc>) -> Option<Event> {
    let owner = run.owner.clone()?;
    let pipeline = pipeline_of(run.execution_arn.as_str());
    let data = json!({
        "execution_arn": run.execution_arn.as_str(),
        "session_id": run.session_id.as_str(),
        "pipeline": pipeline,
        "asking": "question",
        "key": key,
        "asked_at": asked_at.to_rfc3339_opts(SecondsFormat::Millis, true),
    });
    let subject = Subject::Run {
        execution_arn: run.execution_arn.clone(),
        pipeline,
    };
    Some(Event::new(
        EventName::RunAsks,
        owner,
        asked_at,
        subject,
        key,
        data,
    ))
}

/// A pipeline's name from its ARN or one of its runs' (`...:pipeline/<name>[/execution/..]`).
fn pipeline_of(arn: &str) -> String {
    let after = arn.rsplit_once(":pipeline/").map_or(arn, |(_, rest)| rest);
    after.split('/').next().unwrap_or(after).to_owned()
}

/// What a subscription's arguments keep of the caller's events: every one of its type, or only
/// those of an endpoint, a pipeline, or the named jobs and runs. (A job records the endpoint it
/// ran on, not the tool that started it: a catalog's tool is known by its endpoint.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub endpoint: Option<String>,
    pub pipeline: Option<String>,
    pub inference_ids: BTreeSet<String>,
    pub execution_arns: BTreeSet<String>,
}

/// The most task ids one subscription's filter names.
pub const MAX_FILTER_TASK_IDS: usize = 100;
/// A filter's endpoint (SageMaker's bound on an endpoint's name) and pipeline, in characters.
pub const ENDPOINT_MAX_CHARS: usize = 63;
pub const PIPELINE_MAX_CHARS: usize = 256;

/// Arguments that are not the event type's: the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadArguments(pub String);

impl Filter {
    /// A subscription's arguments read into the filter its events pass: refused, naming the
    /// field, when they are not the event type's (an unknown field, a value past its bound),
    /// or name a task that is not of its kind. Absent or null arguments keep every event.
    pub fn parse(name: EventName, arguments: &Value) -> Result<Filter, BadArguments> {
        let bad = |m: String| Err(BadArguments(m));
        let fields = match arguments {
            Value::Null => return Ok(Filter::default()),
            Value::Object(fields) => fields,
            _ => return bad("`arguments` must be an object".to_owned()),
        };
        let (place, kind) = match name {
            EventName::JobEnded => ("endpoint", "a job's"),
            EventName::RunEnded | EventName::RunAsks => ("pipeline", "a run's"),
        };
        let mut filter = Filter::default();
        for (field, value) in fields {
            if field == place {
                let max = match name {
                    EventName::JobEnded => ENDPOINT_MAX_CHARS,
                    _ => PIPELINE_MAX_CHARS,
                };
                let text = match value.as_str() {
                    Some(t) if !t.is_empty() && t.chars().count() <= max => t.to_owned(),
                    _ => return bad(format!("`arguments.{field}` must be 1 to {max} characters")),
                };
                match name {
                    EventName::JobEnded => filter.endpoint = Some(text),
                    _ => filter.pipeline = Some(text),
                }
            } else if field == "task_ids" {
                let Some(ids) = value.as_array() else {
                    return bad("`arguments.task_ids` must be an array of task ids".to_owned());
                };
                if ids.len() > MAX_FILTER_TASK_IDS {
                    return bad(format!(
                        "`arguments.task_ids`: at most {MAX_FILTER_TASK_IDS} task ids, got {}",
                        ids.len()
                    ));
                }
                for (i, id) in ids.iter().enumerate() {
                    let parsed = id.as_str().map(TaskId::parse);
                    match (name, parsed) {
                        (EventName::JobEnded, Some(Ok(TaskId::Job(task)))) => {
                            filter.inference_ids.insert(task.inference_id.into_string());
                        }
                        (EventName::RunEnded | EventName::RunAsks, Some(Ok(TaskId::Run(task)))) => {
                            filter
                                .execution_arns
                                .insert(task.execution_arn.into_string());
                        }
                        _ => {
                            return bad(format!("`arguments.task_ids[{i}]` is not {kind} task id"))
                        }
                    }
                }
            } else {
                // Named by its length only: a caller's text is not echoed.
                return bad(format!(
                    "`arguments`: unknown field ({} characters); {} takes `{place}` and `task_ids`",
                    field.chars().count(),
                    name.as_str()
                ));
            }
        }
        Ok(filter)
    }

    pub fn matches(&self, event: &Event) -> bool {
        let named = |ids: &BTreeSet<String>, id: &str| ids.is_empty() || ids.contains(id);
        match &event.subject {
            Subject::Job {
                inference_id,
                endpoint,
            } => {
                self.endpoint
                    .as_ref()
                    .is_none_or(|e| endpoint.as_ref() == Some(e))
                    && named(&self.inference_ids, inference_id.as_str())
            }
            Subject::Run {
                execution_arn,
                pipeline,
            } => {
                self.pipeline.as_ref().is_none_or(|p| p == pipeline)
                    && named(&self.execution_arns, execution_arn.as_str())
            }
        }
    }
}

/// A webhook subscription's key, as the extension keys it: whose it is, where it goes, which
/// events and which arguments. Its id is derived from it, so a refresh (the same key) is the
/// same subscription, and the id itself is never taken as input.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionKey {
    pub owner: Owner,
    pub url: String,
    pub name: EventName,
    pub arguments: Value,
}

impl SubscriptionKey {
    pub fn id(&self) -> String {
        let canonical = format!(
            "{}\0{}\0{}\0{}",
            self.owner.as_str(),
            self.url,
            self.name.as_str(),
            canonical_json(&self.arguments)
        );
        format!("sub_{}", hex(&Sha256::digest(canonical)[..8]))
    }
}

/// JSON with every object's keys in order: equal arguments, however a client orders them, are
/// one key.
pub fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), canonical_json(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// Where a poll resumes: after this event of the caller's log. Opaque to clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub at_ms: i64,
    pub event_id: String,
}

fn position(at_ms: i64, event_id: &str) -> String {
    format!("{at_ms:013}#{event_id}")
}

/// A cursor this server did not give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("`cursor` is not one this server gave")]
pub struct BadCursor;

/// The longest cursor this server gives, encoded: a longer one is refused unread.
const MAX_CURSOR_CHARS: usize = 128;

impl Cursor {
    /// A cursor at a moment: a read from it gets what is logged at or after it.
    pub fn at(moment: DateTime<Utc>) -> Self {
        Self {
            at_ms: moment.timestamp_millis(),
            event_id: String::new(),
        }
    }

    pub fn after(event: &Event) -> Self {
        Self {
            at_ms: event.at.timestamp_millis(),
            event_id: event.id.clone(),
        }
    }

    /// The position in the owner's log it stands at: a read resumes after it.
    pub fn position(&self) -> String {
        position(self.at_ms, &self.event_id)
    }

    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("v1:{}:{}", self.at_ms, self.event_id))
    }

    pub fn decode(text: &str) -> Result<Self, BadCursor> {
        if text.len() > MAX_CURSOR_CHARS {
            return Err(BadCursor);
        }
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| BadCursor)?;
        let text = String::from_utf8(bytes).map_err(|_| BadCursor)?;
        let mut parts = text.splitn(3, ':');
        let (Some("v1"), Some(at), Some(event_id)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(BadCursor);
        };
        let at_ms = at.parse().map_err(|_| BadCursor)?;
        // No id: a cursor at a moment (`Cursor::at`).
        let ok = event_id.is_empty()
            || (event_id.starts_with("evt_")
                && event_id[4..].bytes().all(|b| b.is_ascii_hexdigit()));
        match ok {
            true => Ok(Self {
                at_ms,
                event_id: event_id.to_owned(),
            }),
            false => Err(BadCursor),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Principal;

    fn owner() -> Owner {
        Principal::Local.caller().owner
    }

    fn at() -> DateTime<Utc> {
        crate::time::parse_rfc3339("2026-12-06T10:00:00Z").unwrap()
    }

    fn ended_job(id: &str, endpoint: Option<&str>, status: &str) -> Event {
        let subject = Subject::Job {
            inference_id: InferenceId::parse(id).unwrap(),
            endpoint: endpoint.map(str::to_owned),
        };
        let data = json!({"inference_id": id, "status": status});
        Event::new(EventName::JobEnded, owner(), at(), subject, status, data)
    }

    #[test]
    fn an_outcome_makes_the_same_event_however_often_it_comes() {
        let once = ended_job("j1", Some("submit_job"), "completed");
        let again = ended_job("j1", Some("submit_job"), "completed");
        assert_eq!(once.id, again.id);
        assert!(
            once.id.starts_with("evt_") && once.id.len() == 36,
            "{}",
            once.id
        );
        assert_ne!(once.id, ended_job("j1", None, "failed").id);
        assert_ne!(once.id, ended_job("j2", None, "completed").id);
        let occurrence = once.occurrence();
        assert_eq!(occurrence["eventId"], once.id.as_str());
        assert_eq!(occurrence["name"], "job.ended");
        assert_eq!(occurrence["timestamp"], "2026-12-06T10:00:00.000Z");
        assert!(once.fits());
        let mut big = once.clone();
        big.data = json!({"detail": "x".repeat(MAX_EVENT_BYTES)});
        assert!(!big.fits());
    }

    #[test]
    fn a_filter_keeps_its_endpoint_pipeline_and_named_work_only() {
        let event = ended_job("j1", Some("summarize"), "completed");
        assert!(Filter::default().matches(&event));
        let endpoint = |e: &str| Filter {
            endpoint: Some(e.to_owned()),
            ..Filter::default()
        };
        assert!(endpoint("summarize").matches(&event));
        assert!(!endpoint("doc-processor").matches(&event));
        let named = |ids: &[&str]| Filter {
            inference_ids: ids.iter().map(|s| s.to_string()).collect(),
            ..Filter::default()
        };
        assert!(named(&["j0", "j1"]).matches(&event));
        assert!(!named(&["j0"]).matches(&event));
        let arn = "arn:aws:sagemaker:us-east-1:1:pipeline/p/execution/e";
        let run = Event::new(
            EventName::RunEnded,
            owner(),
            at(),
            Subject::Run {
                execution_arn: ExecutionArn::parse(arn).unwrap(),
                pipeline: "p".into(),
            },
            "Succeeded",
            json!({}),
        );
        let pipeline = |p: &str| Filter {
            pipeline: Some(p.to_owned()),
            ..Filter::default()
        };
        assert!(pipeline("p").matches(&run) && !pipeline("q").matches(&run));
        // A job's filter names no run: only its pipeline and run ids count for runs.
        assert!(named(&["j0"]).matches(&run));
    }

    #[test]
    fn a_subscriptions_id_is_its_key_whatever_the_order_of_its_arguments() {
        let key = |arguments: Value, url: &str| SubscriptionKey {
            owner: owner(),
            url: url.to_owned(),
            name: EventName::JobEnded,
            arguments,
        };
        let a = key(
            json!({"tool": "t", "task_ids": ["x", "y"]}),
            "https://h.example/a",
        );
        let b = key(
            json!({"task_ids": ["x", "y"], "tool": "t"}),
            "https://h.example/a",
        );
        assert_eq!(a.id(), b.id());
        assert!(a.id().starts_with("sub_") && a.id().len() == 20);
        assert_ne!(
            a.id(),
            key(json!({"tool": "t"}), "https://h.example/a").id()
        );
        assert_ne!(
            a.id(),
            key(
                json!({"tool": "t", "task_ids": ["y", "x"]}),
                "https://h.example/a"
            )
            .id()
        );
        assert_ne!(
            a.id(),
            key(
                json!({"tool": "t", "task_ids": ["x", "y"]}),
                "https://h.example/b"
            )
            .id()
        );
        assert_eq!(
            canonical_json(&json!({"b": 1, "a": {"d": [1, "x"], "c": null}})),
            r#"{"a":{"c":null,"d":[1,"x"]},"b":1}"#
        );
    }

    #[test]
    fn a_recorded_outcome_raises_its_owners_event_with_its_results_linked() {
        let completion = |status: &'static str, owner: Option<&Owner>| JobCompletion {
            inference_id: InferenceId::parse("j 1").unwrap(),
            status,
            owner: owner.map(Owner::to_string),
            endpoint_name: Some("doc-processor".into()),
            output_location: Some("s3://b/outputs/j.out".into()),
            failure_reason: None,
            submitted_at: None,
            completed_at: Some("2026-12-06T10:00:00Z".into()),
            reconciled: false,
            traceparent: None,
        };
        let later = at() + chrono::Duration::hours(1);
        let done = job_ended(&completion("completed", Some(&owner())), later).unwrap();
        assert_eq!(done.name, EventName::JobEnded);
        assert_eq!((done.owner.clone(), done.at), (owner(), at()));
        assert_eq!(done.data["output"], "job://j%201/output");
        assert_eq!(done.data["failure"], Value::Null);
        assert_eq!(done.data["endpoint"], "doc-processor");
        assert_eq!(done.data["ended_at"], "2026-12-06T10:00:00.000Z");
        // Nothing of where the output is in S3 reaches a subscriber.
        assert!(!done.data.to_string().contains("s3://"));
        // The same outcome again, read later: the same event.
        assert_eq!(
            job_ended(&completion("completed", Some(&owner())), at()),
            Some(done.clone())
        );
        let failed = job_ended(&completion("failed", Some(&owner())), later).unwrap();
        assert_eq!(failed.data["failure"], "job://j%201/failure");
        assert_ne!(failed.id, done.id);
        assert_eq!(
            job_ended(&completion("completed", None), later),
            None,
            "no owner"
        );
    }

    #[test]
    fn an_event_is_logged_once_and_reads_back_as_it_was() {
        let event = ended_job("j1", Some("summarize"), "completed");
        let append = event.append(1_900_000_000, &[]);
        assert_eq!(append.guard, Guard::Absent(attr::POSITION));
        let WriteOp::Put(item) = &append.op else {
            panic!("a put")
        };
        assert_eq!(Event::from_item(item), Some(event.clone()));
        assert_eq!(event.position(), Cursor::after(&event).position());
        assert!(event.position().starts_with("1796551200000#evt_"));
        assert!(!Event::expired(item, at()));
        let later = DateTime::from_timestamp(1_900_000_000, 0).unwrap();
        assert!(Event::expired(item, later));
        let mut damaged = item.clone();
        damaged.insert(attr::NAME.to_owned(), Attr::s("job.started"));
        assert_eq!(Event::from_item(&damaged), None);
        // Nobody to send it to: nothing for the stream's filter to pass.
        assert!(!item.contains_key(attr::WEBHOOKS));
        assert!(Event::deliver_to(item).is_empty());
    }

    #[test]
    fn an_event_with_subscribers_names_them_for_the_stream() {
        let event = ended_job("j1", None, "completed");
        let ids = vec!["sub_a".to_owned(), "sub_b".to_owned()];
        let WriteOp::Put(item) = event.append(1_900_000_000, &ids).op else {
            panic!("a put")
        };
        assert_eq!(item.get(attr::WEBHOOKS), Some(&Attr::Bool(true)));
        assert_eq!(Event::deliver_to(&item), ids);
        assert_eq!(Event::from_item(&item), Some(event));
        // A damaged list reads no further than the bound, and no empty id.
        let mut long = item.clone();
        let many = vec!["s"; MAX_DELIVER_TO + 5].join("  ");
        long.insert(attr::DELIVER_TO.to_owned(), Attr::s(many));
        assert_eq!(Event::deliver_to(&long).len(), MAX_DELIVER_TO);
    }

    #[test]
    fn a_cursor_reads_back_and_one_this_server_did_not_give_is_refused() {
        let event = ended_job("j1", None, "completed");
        let cursor = Cursor::after(&event);
        assert_eq!(Cursor::decode(&cursor.encode()), Ok(cursor.clone()));
        for bad in [
            "",
            "not base64!",
            &URL_SAFE_NO_PAD.encode("v2:1:evt_ab"),
            &URL_SAFE_NO_PAD.encode("v1:x:evt_ab"),
            &URL_SAFE_NO_PAD.encode("v1:1:sub_ab"),
            &URL_SAFE_NO_PAD.encode("v1:1:evt_zz"),
            &"A".repeat(MAX_CURSOR_CHARS + 1),
        ] {
            assert_eq!(Cursor::decode(bad), Err(BadCursor), "{bad}");
        }
        assert_eq!(EventName::parse("run.asks"), Some(EventName::RunAsks));
        assert_eq!(EventName::parse("job.started"), None);
    }

    #[test]
    fn a_cursor_at_a_moment_comes_before_what_is_logged_at_it() {
        let event = ended_job("j1", None, "completed");
        let at = Cursor::at(event.at);
        assert!(at.position() < event.position());
        assert!(
            Cursor::at(event.at + chrono::Duration::milliseconds(1)).position() > event.position()
        );
        assert_eq!(Cursor::decode(&at.encode()), Ok(at));
    }

    #[test]
    fn arguments_become_the_filter_and_a_task_of_another_kind_is_refused_by_its_place() {
        let secret = "0123456789abcdef0123456789abcdef";
        let job = crate::job::task_id("j1", secret);
        let arn = "arn:aws:sagemaker:us-east-1:1:pipeline/p/execution/e";
        let run = crate::run::task_id("s1", arn, secret);
        let jobs = Filter::parse(
            EventName::JobEnded,
            &json!({"endpoint": "summarize", "task_ids": [job]}),
        )
        .unwrap();
        assert_eq!(jobs.endpoint.as_deref(), Some("summarize"));
        assert!(jobs.inference_ids.contains("j1") && jobs.execution_arns.is_empty());
        let runs = Filter::parse(EventName::RunAsks, &json!({"task_ids": [run]})).unwrap();
        assert!(runs.execution_arns.contains(arn));
        assert_eq!(
            Filter::parse(EventName::RunEnded, &Value::Null).unwrap(),
            Filter::default()
        );
        assert_eq!(
            Filter::parse(EventName::RunEnded, &json!({})).unwrap(),
            Filter::default()
        );
        for (name, arguments, said) in [
            (
                EventName::JobEnded,
                json!({"task_ids": [job, run]}),
                "`arguments.task_ids[1]` is not a job's task id",
            ),
            (
                EventName::RunEnded,
                json!({"task_ids": ["nope"]}),
                "`arguments.task_ids[0]` is not a run's task id",
            ),
            (
                EventName::RunEnded,
                json!({"task_ids": [7]}),
                "`arguments.task_ids[0]` is not a run's task id",
            ),
            (
                EventName::RunEnded,
                json!({"endpoint": "e"}),
                "`arguments`: unknown field (8 characters); run.ended takes `pipeline`",
            ),
            (
                EventName::JobEnded,
                json!({"endpoint": ""}),
                "`arguments.endpoint` must be 1 to 63 characters",
            ),
            (
                EventName::JobEnded,
                json!({"endpoint": 7}),
                "`arguments.endpoint` must be 1 to 63 characters",
            ),
            (
                EventName::JobEnded,
                json!({"task_ids": vec!["x"; 101]}),
                "`arguments.task_ids`: at most 100",
            ),
            (
                EventName::JobEnded,
                json!({"task_ids": "x"}),
                "`arguments.task_ids` must be an array",
            ),
            (
                EventName::JobEnded,
                json!([1]),
                "`arguments` must be an object",
            ),
        ] {
            let refused = Filter::parse(name, &arguments).unwrap_err().0;
            assert!(refused.starts_with(said), "{refused}");
        }
    }

    #[test]
    fn a_runs_end_raises_its_owners_event_once_however_often_it_is_routed() {
        use crate::pipeline_status::PipelineStatus;
        let arn = "arn:aws:sagemaker:us-east-1:1:pipeline/intent/execution/e1";
        let message = |owner: Option<String>| CompletionMessage {
            session_id: crate::ids::SessionId::parse("s-1").unwrap(),
            owner,
            execution_arn: ExecutionArn::parse(arn).unwrap(),
            pipeline_arn: "arn:aws:sagemaker:us-east-1:1:pipeline/intent".into(),
            status: PipelineStatus::Failed,
            previous_status: None,
            started_at: None,
            ended_at: Some("2026-12-06T10:00:00Z".into()),
            failure_reason: Some("step Train failed".into()),
            event_id: "ev-1".into(),
            event_time: "2026-12-06T10:00:01Z".into(),
            traceparent: None,
        };
        let event = run_ended(&message(Some(owner().to_string())), at()).unwrap();
        assert_eq!((event.name, event.at), (EventName::RunEnded, at()));
        assert_eq!(event.data["pipeline"], "intent");
        assert_eq!(event.data["status"], "Failed");
        assert_eq!(event.data["failure_reason"], "step Train failed");
        assert_eq!(event.data["session_id"], "s-1");
        let later = at() + chrono::Duration::hours(1);
        assert_eq!(
            run_ended(&message(Some(owner().to_string())), later),
            Some(event.clone())
        );
        assert_eq!(run_ended(&message(None), at()), None);
        let by_pipeline =
            Filter::parse(EventName::RunEnded, &json!({"pipeline": "intent"})).unwrap();
        assert!(by_pipeline.matches(&event));
    }

    #[test]
    fn a_runs_question_raises_its_owners_event_keyed_by_the_question() {
        let arn = "arn:aws:sagemaker:us-east-1:1:pipeline/intent/execution/e1";
        let item = crate::run::record_triggered(
            &owner(),
            "s-1",
            arn,
            "2026-12-06T09:00:00.000Z",
            1,
            "secret",
            None,
        );
        let stored = item.apply_to(None).unwrap();
        let run = Run::from_item(&stored);
        let asked = run_asks(&run, "q-1", at()).unwrap();
        assert_eq!(
            (asked.name, asked.owner.clone()),
            (EventName::RunAsks, owner())
        );
        assert_eq!(asked.data["pipeline"], "intent");
        assert_eq!(asked.data["key"], "q-1");
        assert_eq!(asked.data["asking"], "question");
        assert_eq!(run_asks(&run, "q-1", at()), Some(asked.clone()));
        assert_ne!(run_asks(&run, "q-2", at()).unwrap().id, asked.id);
        assert_eq!(
            pipeline_of("arn:aws:sagemaker:us-east-1:1:pipeline/intent"),
            "intent"
        );
    }
}
