//! `subscriptions/listen` naming tasks: the tasks extension's push channel. rmcp 3.11 serves
//! the method (the acknowledgement, keep-alives, the final result) but its `SubscriptionFilter`
//! has no `taskIds` and its sink refuses `notifications/tasks`, so: the door reads the named
//! ids ([`named`]) and hands them over as a request extension ([`ListenTasks`]); the handler
//! opens the listen as the caller and holds it ([`Listens::hold`]), sending each
//! `notifications/tasks` itself; and the acknowledgement is given the accepted ids on its way
//! out ([`with_accepted_ids`]).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, StreamBody};
use rmcp::model::{
    DetailedTask, ErrorCode, ErrorData, NotificationMetaObject, RequestId, ServerNotification,
    TaskStatusNotification, TaskStatusNotificationParams,
};
use rmcp::service::{Peer, SubscriptionContext};
use rmcp::RoleServer;
use serde::Deserialize;
use tokio::sync::oneshot;
use tokio::time::Instant;

use domain::caller::Caller;
use domain::task_id::MAX_TASK_ID_BYTES;
use usecases::listen::{self, Heard, Hold, ListenSink, Observed, TaskReader};
use usecases::quota;

use crate::contract::quota_refused;
use crate::deps::Backend;
use crate::server::Server;
use crate::tasks::Tasks;

pub const METHOD: &str = "subscriptions/listen";
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The hold ends this long before the listen's time is up: the final result must still go out.
const FINAL_RESULT_MARGIN: Duration = Duration::from_secs(2);

#[derive(Deserialize)]
struct Wire {
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    notifications: Option<Filter>,
    #[serde(rename = "_meta", default)]
    meta: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Filter {
    /// Read as any value, so that one of the wrong shape is refused by name, not ignored.
    #[serde(default)]
    task_ids: Option<serde_json::Value>,
}

/// The task ids a listen names (none when it names no tasks), bounded, for a client that
/// declared the tasks extension on the request; otherwise the error to answer with.
pub fn named(body: &[u8]) -> Result<Vec<String>, ErrorData> {
    let Ok(Wire {
        params: Some(params),
    }) = serde_json::from_slice::<Wire>(body)
    else {
        // rmcp answers a request it cannot read.
        return Ok(Vec::new());
    };
    let task_ids = match params.notifications.and_then(|f| f.task_ids) {
        None => return Ok(Vec::new()),
        Some(serde_json::Value::Array(ids)) => ids
            .into_iter()
            .map(|id| match id {
                serde_json::Value::String(id) => Ok(id),
                _ => Err(()),
            })
            .collect::<Result<Vec<String>, ()>>(),
        Some(_) => Err(()),
    };
    let Ok(task_ids) = task_ids else {
        return Err(ErrorData::invalid_params(
            "`notifications.taskIds`: must be a list of task ids (strings)",
            None,
        ));
    };
    if task_ids.is_empty() {
        return Ok(task_ids);
    }
    let declared = params
        .meta
        .as_ref()
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some();
    if !declared {
        return Err(ErrorData::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability: a listen that names tasks needs the io.modelcontextprotocol/tasks extension",
            None,
        ));
    }
    if task_ids.len() > listen::MAX_LISTEN_TASKS {
        return Err(ErrorData::invalid_params(
            format!(
                "`notifications.taskIds`: at most {} tasks on one listen, got {}",
                listen::MAX_LISTEN_TASKS,
                task_ids.len()
            ),
            None,
        ));
    }
    if task_ids.iter().any(|id| id.len() > MAX_TASK_ID_BYTES) {
        return Err(ErrorData::invalid_params(
            format!("`notifications.taskIds`: each at most {MAX_TASK_ID_BYTES} bytes"),
            None,
        ));
    }
    Ok(task_ids)
}

/// The tasks a listen names, from the door to the handler: how long it may be held and the
/// wait slot the door claimed for it; the handler says which tasks it accepted.
#[derive(Clone)]
pub struct ListenTasks {
    pub task_ids: Arc<Vec<String>>,
    pub hold: Duration,
    accepted: Arc<Mutex<Option<oneshot::Sender<Vec<String>>>>>,
    lease: Arc<Mutex<Option<quota::WaitLease>>>,
}

impl ListenTasks {
    pub fn new(
        task_ids: Vec<String>,
        hold: Duration,
        lease: Option<quota::WaitLease>,
    ) -> (Self, oneshot::Receiver<Vec<String>>) {
        let (tx, rx) = oneshot::channel();
        let tasks = Self {
            task_ids: Arc::new(task_ids),
            hold,
            accepted: Arc::new(Mutex::new(Some(tx))),
            lease: Arc::new(Mutex::new(lease)),
        };
        (tasks, rx)
    }

    fn accept(&self, task_ids: Vec<String>) {
        let sender = self.accepted.lock().ok().and_then(|mut s| s.take());
        if let Some(sender) = sender {
            let _ = sender.send(task_ids);
        }
    }

    /// The wait slot, to free once: by the handler when the hold ends, or by the door when
    /// rmcp answered without holding the listen (no handler will).
    pub fn take_lease(&self) -> Option<quota::WaitLease> {
        self.lease.lock().ok().and_then(|mut l| l.take())
    }
}

/// The door's reply (its `HttpResponse`), named here so this module need not import the door.
type Reply = http::Response<BoxBody<Bytes, Infallible>>;

/// Whether rmcp holds the listen: its reply is an event stream (the acknowledgement went out
/// and the handler runs), not a JSON answer.
pub fn is_held(response: &Reply) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// rmcp's streamed reply to a listen, with `params.notifications.taskIds` set on its
/// acknowledgement to the ids the handler accepted (none, if it accepted nothing or failed
/// before it could say). Every other byte passes as it is.
pub fn with_accepted_ids(response: Reply, accepted: oneshot::Receiver<Vec<String>>) -> Reply {
    if !is_held(&response) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let state = (body.into_data_stream(), Some(accepted), Vec::<u8>::new());
    let stream =
        futures_util::stream::unfold(state, |(mut body, mut accepted, mut held)| async move {
            let Some(ids) = accepted.as_mut() else {
                let next = body.next().await?;
                return Some((next, (body, None, held)));
            };
            // Hold bytes back until the acknowledgement's event is whole, then patch it.
            loop {
                if let Some(end) = ack_end(&held) {
                    let ids = ids.await.unwrap_or_default();
                    let mut out = patch_ack(&held[..end], &ids);
                    out.extend_from_slice(&held[end..]);
                    return Some((Ok(Bytes::from(out)), (body, None, Vec::new())));
                }
                match body.next().await {
                    Some(Ok(bytes)) => held.extend_from_slice(&bytes),
                    Some(Err(never)) => match never {},
                    None if held.is_empty() => return None,
                    None => {
                        let out = Bytes::from(std::mem::take(&mut held));
                        return Some((Ok(out), (body, None, Vec::new())));
                    }
                }
            }
        });
    let body = BodyExt::boxed(StreamBody::new(
        stream.map(|b| b.map(http_body::Frame::data)),
    ));
    http::Response::from_parts(parts, body)
}

/// Where the acknowledgement's event ends in `held` (past its blank line), once it is whole.
fn ack_end(held: &[u8]) -> Option<usize> {
    let mut start = 0;
    while let Some(at) = find(&held[start..], b"\n\n") {
        let end = start + at + 2;
        if find(
            &held[start..end],
            b"notifications/subscriptions/acknowledged",
        )
        .is_some()
        {
            return Some(end);
        }
        start = end;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The events up to and including the acknowledgement, its `data:` line given the ids.
fn patch_ack(events: &[u8], task_ids: &[String]) -> Vec<u8> {
    let text = String::from_utf8_lossy(events);
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let data = line.strip_prefix("data:").map(|d| d.trim());
        let ack = data
            .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .filter(|v| v["method"] == "notifications/subscriptions/acknowledged");
        match ack {
            Some(mut ack) => {
                ack["params"]["notifications"]["taskIds"] = serde_json::json!(task_ids);
                out.push_str("data: ");
                out.push_str(&ack.to_string());
                out.push('\n');
            }
            None => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// One task as `tasks/get` answers it now.
#[derive(Debug, Clone)]
pub struct Reading(pub DetailedTask);

impl Observed for Reading {
    /// Status and status message: a run's step and a job's stage are in the message.
    type Mark = (rmcp::model::TaskStatus, Option<String>);
    fn mark(&self) -> Self::Mark {
        (self.0.task.status, self.0.task.status_message.clone())
    }
    fn is_terminal(&self) -> bool {
        use rmcp::model::TaskStatus::*;
        matches!(self.0.task.status, Completed | Failed | Cancelled)
    }
}

/// A task's whole answer is built again at least this often, though its record is unchanged:
/// a run's step lives in SageMaker, not in the table, and a job's waiting words change with time.
const REFRESH: Duration = Duration::from_secs(10);

/// The caller's tasks, as `tasks/get` answers them; another's or an unknown one is None. Each
/// round reads the records in one batch per table; only a task whose record changed (or whose
/// answer is older than [`REFRESH`]) is answered again.
struct CallerTasks<'a, B> {
    tasks: Tasks<'a, B>,
    server: &'a Server<B>,
    caller: &'a Caller,
    seen: Mutex<HashMap<String, Seen>>,
}

struct Seen {
    mark: Option<listen::RecordMark>,
    at: Instant,
    reading: Option<Reading>,
}

impl<B: Backend> TaskReader for CallerTasks<'_, B> {
    type Task = Reading;
    type Error = String;
    async fn read(&self, task_ids: &[String]) -> Result<Vec<Option<Reading>>, String> {
        let d = &self.server.deps;
        let (jobs, runs, now) = (d.ports.jobs(), d.ports.runs(), d.clock.now());
        let marks = listen::record_marks(jobs, runs, self.caller, task_ids, now)
            .await
            .map_err(|e| e.to_string())?;
        let mut read = Vec::with_capacity(task_ids.len());
        for (task_id, mark) in task_ids.iter().zip(marks) {
            let unchanged = self.seen.lock().ok().and_then(|seen| {
                let s = seen.get(task_id)?;
                (mark.is_some() && s.mark == mark && s.at.elapsed() < REFRESH)
                    .then(|| s.reading.clone())
            });
            if let Some(reading) = unchanged {
                read.push(reading);
                continue;
            }
            let reading = match self.tasks.task_answer(self.caller, task_id).await {
                Ok(task) => Some(Reading(task)),
                Err(e) if e.code == ErrorCode::INVALID_PARAMS => None,
                Err(e) => return Err(e.message.into_owned()),
            };
            if let Ok(mut seen) = self.seen.lock() {
                let at = Instant::now();
                let reading = reading.clone();
                seen.insert(task_id.clone(), Seen { mark, at, reading });
            }
            read.push(reading);
        }
        Ok(read)
    }
}

/// Sends each change as `notifications/tasks` on the listen's stream. rmcp's stream sends its
/// own keep-alive comments, so the hold's are not needed.
struct PeerSink {
    peer: Peer<RoleServer>,
    subscription_id: RequestId,
}

impl ListenSink<Reading> for PeerSink {
    async fn send(&mut self, heard: Heard<Reading>) -> bool {
        let Heard::Changed { task, .. } = heard else {
            return true;
        };
        let mut meta = NotificationMetaObject::new();
        meta.set_subscription_id(self.subscription_id.clone());
        let params = TaskStatusNotificationParams::new(task.0).with_meta(meta);
        let notification = TaskStatusNotification::new(params);
        let notification = ServerNotification::TaskStatusNotification(notification);
        self.peer.send_notification(notification).await.is_ok()
    }
}

/// `subscriptions/listen` naming tasks, beside the tools, over the same [`Server`]: admitted
/// at the door, held by the handler.
pub(crate) struct Listens<'a, B> {
    server: &'a Server<B>,
}

impl<'a, B> Listens<'a, B> {
    pub fn new(server: &'a Server<B>) -> Self {
        Self { server }
    }

    /// How long a listen may be held (see [`Server::listen_time`]).
    pub fn time(&self, deadline_ms: Option<u64>) -> Duration {
        self.server.listen_time(deadline_ms)
    }
}

impl<B: Backend> Listens<'_, B> {
    /// What a listen of `hold` costs the caller, taken at the door before rmcp acknowledges
    /// it: one read against its reads per minute, then one of its wait slots. A caller over
    /// either is refused at once (-32009), before any acknowledgement.
    pub async fn admit(
        &self,
        caller: &Caller,
        hold: Duration,
    ) -> Result<Option<quota::WaitLease>, ErrorData> {
        let _read = self
            .server
            .count_read(caller)
            .await
            .map_err(quota_refused)?;
        let d = &self.server.deps;
        let (slots, limits, now) = (d.ports.quotas(), &d.config.quotas, d.clock.now());
        quota::claim_wait(slots, limits, &caller.owner, hold, now)
            .await
            .map_err(quota_refused)
    }

    /// Frees a listen's wait slot that no handler took (rmcp answered without holding it).
    pub async fn release_wait(&self, lease: Option<quota::WaitLease>) {
        quota::release_wait(self.server.deps.ports.quotas(), lease).await;
    }

    /// A listen's life after rmcp acknowledged it: the named tasks read once as the caller, the
    /// accepted ones said, then held until each has ended, the time is up or the client has
    /// gone; the wait slot the door claimed is freed at the end.
    pub async fn hold(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let context = subscription.request_context();
        let named = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<ListenTasks>())
            .cloned();
        let Some(named) = named else {
            // Names no tasks: nothing this server reports. The final result follows at once.
            return Ok(());
        };
        let held = tokio::select! {
            held = self.open_and_hold(&named, &subscription) => held,
            // The client has gone: rmcp cancels the listen when its stream is dropped, which
            // the runtime does when a write to the client (a keep-alive) fails.
            () = subscription.cancelled() => {
                tracing::info!("listen ended: its client has gone");
                Ok(())
            }
        };
        quota::release_wait(self.server.deps.ports.quotas(), named.take_lease()).await;
        held
    }

    async fn open_and_hold(
        &self,
        named: &ListenTasks,
        subscription: &SubscriptionContext,
    ) -> Result<(), ErrorData> {
        let context = subscription.request_context();
        // Its read was counted at the door (`admit`).
        let caller = self.server.task_caller(&context.extensions)?;
        let reader = CallerTasks {
            tasks: Tasks::new(self.server),
            server: self.server,
            caller: &caller,
            seen: Mutex::default(),
        };
        let opened = match listen::open(&reader, &named.task_ids).await {
            Ok(opened) => opened,
            Err(e) => {
                tracing::warn!(error = %e, "a listen's first reads failed");
                return Err(ErrorData::internal_error(crate::wording::TASK_FAILED, None));
            }
        };
        named.accept(opened.task_ids());
        if opened.accepted.is_empty() {
            return Ok(());
        }
        let until = named.hold.saturating_sub(FINAL_RESULT_MARGIN);
        let hold = Hold {
            until,
            keep_alive: until,
        };
        let mut sink = PeerSink {
            peer: context.peer.clone(),
            subscription_id: context.id.clone(),
        };
        let ended = listen::hold(&reader, opened, hold, &mut sink).await;
        tracing::info!(?ended, "listen held");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen_of(task_ids: &[String]) -> Vec<u8> {
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": METHOD, "params": {
            "notifications": {"taskIds": task_ids},
            "_meta": {CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_run_task_of_a_long_pipeline_name_is_named_and_one_past_the_bound_is_refused() {
        // A run of a pipeline whose name is 256 characters, its session 128: a genuine id,
        // longer than 512 bytes, within the one bound every task id has.
        let arn = format!(
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/{}/execution/k2p9x7q1m4z8",
            "p".repeat(256)
        );
        let genuine = domain::run::task_id(&"s".repeat(128), &arn, &"f".repeat(32));
        assert!(
            (512..=MAX_TASK_ID_BYTES).contains(&genuine.len()),
            "{}",
            genuine.len()
        );
        assert_eq!(
            named(&listen_of(std::slice::from_ref(&genuine))).unwrap(),
            [genuine]
        );
        let refused = named(&listen_of(&["t".repeat(MAX_TASK_ID_BYTES + 1)])).unwrap_err();
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
        assert!(
            refused.message.contains("each at most 1024 bytes"),
            "{}",
            refused.message
        );
    }
}
