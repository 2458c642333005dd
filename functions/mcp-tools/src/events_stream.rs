//! `events/stream`, the Events extension's push mode: one subscription held on the request's
//! own stream (rmcp turns the reply into SSE once a notification is sent). First
//! `notifications/events/active` with the cursor it starts from, then each of the caller's
//! events as `notifications/events/event` as it settles in the log, a heartbeat carrying the
//! cursor when nothing was sent for a while, and the final result when the hold is over (the
//! client reconnects with its cursor). Like a listen, it holds one invocation and one of the
//! caller's wait slots for as long as it lasts.

use std::time::Duration;

use rmcp::model::{CustomNotification, ErrorData, ServerNotification};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::{json, Value};

use domain::events::{Cursor, Event};
use usecases::events::{poll, PollAsk, MAX_POLL_EVENTS};
use usecases::quota;

use crate::contract::events_wire as wire;
use crate::contract::quota_refused;
use crate::deadline::lambda_context;
use crate::deps::Backend;
use crate::server::Server;

/// How often the log is read while the stream is held.
const READ_EVERY: Duration = Duration::from_secs(1);
/// The longest the stream stays silent: a heartbeat (with the cursor) after this.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(15);
/// Kept back from the invocation's time, for the final result to be written.
const FINAL_RESULT_MARGIN: Duration = Duration::from_secs(2);
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

pub(crate) struct Stream<'a, B> {
    server: &'a Server<B>,
}

/// Where the stream's notifications go, each tagged with its subscription (the request's id).
struct Sink<'a> {
    context: &'a RequestContext<RoleServer>,
    meta: Value,
}

impl Sink<'_> {
    /// Whether it was sent (false: the client has gone).
    async fn send(&self, method: &str, mut params: Value) -> bool {
        params["_meta"] = self.meta.clone();
        let notification = CustomNotification::new(method, Some(params));
        let notification = ServerNotification::CustomNotification(notification);
        self.context
            .peer
            .send_notification(notification)
            .await
            .is_ok()
    }

    async fn event(&self, event: &Event) -> bool {
        let mut occurrence = event.occurrence();
        occurrence["cursor"] = Value::String(Cursor::after(event).encode());
        self.send("notifications/events/event", occurrence).await
    }
}

impl<'a, B: Backend> Stream<'a, B> {
    pub fn new(server: &'a Server<B>) -> Self {
        Self { server }
    }

    pub async fn hold(
        &self,
        params: Option<&Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let ask = PollAsk {
            // Every event it may send at once, not a poll's page.
            max_events: MAX_POLL_EVENTS,
            ..wire::poll_params(params)?
        };
        let caller = self.server.reading_caller(&context.extensions).await?;
        let d = &self.server.deps;
        let deadline_ms = lambda_context(&context.extensions).map(|c| c.deadline);
        let hold = self
            .server
            .listen_time(deadline_ms)
            .saturating_sub(FINAL_RESULT_MARGIN);
        let (slots, limits) = (d.ports.quotas(), &d.config.quotas);
        let lease = quota::claim_wait(slots, limits, &caller.owner, hold, d.clock.now())
            .await
            .map_err(quota_refused)?;
        let meta = json!({ SUBSCRIPTION_ID: context.id });
        let sink = Sink {
            context,
            meta: meta.clone(),
        };
        let held = tokio::select! {
            held = self.run(&caller.owner, ask, hold, &sink) => held,
            () = context.ct.cancelled() => Ok(()),
        };
        quota::release_wait(slots, lease).await;
        held.map(|()| json!({"resultType": "complete", "_meta": meta}))
    }

    /// The stream's life: from the cursor asked, each settled event sent, until `hold` is over
    /// or the client has gone.
    async fn run(
        &self,
        owner: &domain::caller::Owner,
        mut ask: PollAsk,
        hold: Duration,
        sink: &Sink<'_>,
    ) -> Result<(), ErrorData> {
        let d = &self.server.deps;
        let log = d.ports.event_log().ok_or_else(wire::unknown_event)?;
        let started = tokio::time::Instant::now();
        let first = poll(log, owner, &ask, d.clock.now())
            .await
            .map_err(|e| wire::store_failed("events/stream", &e))?;
        let active = json!({"cursor": first.cursor.encode(), "truncated": first.truncated});
        if !sink.send("notifications/events/active", active).await {
            return Ok(());
        }
        for event in &first.events {
            if !sink.event(event).await {
                return Ok(());
            }
        }
        ask.cursor = Some(first.cursor);
        // Only the first read replays from the client's floor.
        ask.max_age = None;
        let mut more = first.has_more;
        let mut last_sent = tokio::time::Instant::now();
        while started.elapsed() < hold {
            if !more {
                let left = hold.saturating_sub(started.elapsed());
                tokio::time::sleep(READ_EVERY.min(left)).await;
            }
            match poll(log, owner, &ask, d.clock.now()).await {
                Ok(polled) => {
                    for event in &polled.events {
                        if !sink.event(event).await {
                            return Ok(());
                        }
                        last_sent = tokio::time::Instant::now();
                    }
                    more = polled.has_more;
                    ask.cursor = Some(polled.cursor);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "events/stream read failed; the stream goes on");
                    let error = json!({"error": {"code": -32603, "message": "UpstreamError",
                        "data": {"reason": "the event log could not be read just now"}}});
                    if !sink.send("notifications/events/error", error).await {
                        return Ok(());
                    }
                    more = false;
                }
            }
            if last_sent.elapsed() >= HEARTBEAT_EVERY {
                let cursor = ask.cursor.as_ref().map(Cursor::encode);
                if !sink
                    .send("notifications/events/heartbeat", json!({"cursor": cursor}))
                    .await
                {
                    return Ok(());
                }
                last_sent = tokio::time::Instant::now();
            }
        }
        Ok(())
    }
}
