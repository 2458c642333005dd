//! The MCP Events extension's methods (SEP-3415): `events/list`; `events/poll` over the
//! caller's own event log; `events/stream` held on the request's stream (`crate::events_stream`);
//! webhook subscriptions (`events/subscribe`, `events/unsubscribe`),
//! keyed by the caller's principal, so another's subscription is unknown, as another's task
//! is. Offered where the deployment keeps an event log; elsewhere every `events/*` method is
//! not found, as the extension asks.

use rmcp::model::{ErrorCode, ErrorData, Extensions};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::Value;

use domain::caller::Principal;
use domain::events::{Cursor, SubscriptionKey};
use usecases::events::{poll, subscribe, unsubscribe, SubscribeAsk, SubscribeError};

use crate::contract::events;
use crate::contract::events_wire::{self as wire, SubscribeParams};
use crate::deps::Backend;
use crate::events_stream::Stream;
use crate::server::Server;

pub(crate) struct Events<'a, B> {
    server: &'a Server<B>,
}

impl<'a, B: Backend> Events<'a, B> {
    pub fn new(server: &'a Server<B>) -> Self {
        Self { server }
    }

    /// Whether the extension is offered (and advertised): an event log is deployed.
    pub fn offered(&self) -> bool {
        self.server.deps.ports.event_log().is_some()
    }

    /// Where webhook subscriptions are kept; a deployment without them offers no webhook.
    fn subscriptions(&self) -> Result<&B::Subscriptions, ErrorData> {
        let subscriptions = self.server.deps.ports.subscriptions();
        subscriptions.ok_or_else(|| wire::unsupported("deliveryMode", "webhook"))
    }

    fn allow_local(&self) -> bool {
        let events = self.server.deps.config.events.as_ref();
        events.is_some_and(|e| e.allow_local_callbacks)
    }

    /// One `events/*` request.
    pub async fn call(
        &self,
        method: &str,
        params: Option<&Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        if !self.offered() {
            return Err(not_found());
        }
        let extensions = &context.extensions;
        match method {
            "events/list" => {
                let webhooks = self.server.deps.ports.subscriptions().is_some();
                events::list(params, webhooks).map_err(wire::invalid)
            }
            "events/poll" => self.poll(params, extensions).await,
            "events/subscribe" => self.subscribe(params, extensions).await,
            "events/unsubscribe" => self.unsubscribe(params, extensions).await,
            "events/stream" => Stream::new(self.server).hold(params, context).await,
            _ => Err(not_found()),
        }
    }

    async fn poll(
        &self,
        params: Option<&Value>,
        extensions: &Extensions,
    ) -> Result<Value, ErrorData> {
        let ask = wire::poll_params(params)?;
        let caller = self.server.reading_caller(extensions).await?;
        let log = self.server.deps.ports.event_log().ok_or_else(not_found)?;
        let polled = poll(log, &caller.owner, &ask, self.server.deps.clock.now())
            .await
            .map_err(|e| wire::store_failed("events/poll", &e))?;
        Ok(wire::polled(
            &polled.events,
            &polled.cursor,
            polled.truncated,
            polled.has_more,
        ))
    }

    /// The caller a webhook is keyed by: an authenticated one (or, where local callbacks are
    /// allowed, the local caller).
    fn webhook_caller(&self, extensions: &Extensions) -> Result<domain::caller::Caller, ErrorData> {
        let principal = self.server.principal_of(extensions);
        match principal {
            Some(Principal::Local) if !self.allow_local() => Err(wire::forbidden(
                "a webhook is keyed by who subscribes, and this server does not authenticate \
                 its callers (AUTH_MODE none); use events/poll",
            )),
            Some(Principal::Gateway) => Err(wire::forbidden(
                "the Gateway's callers are one identity here; subscribe directly",
            )),
            Some(principal) => Ok(principal.caller()),
            None => Err(ErrorData::internal_error(crate::wording::NO_CALLER, None)),
        }
    }

    async fn subscribe(
        &self,
        params: Option<&Value>,
        extensions: &Extensions,
    ) -> Result<Value, ErrorData> {
        let subscriptions = self.subscriptions()?;
        let SubscribeParams {
            name,
            arguments,
            url,
            secret,
            cursor_given,
            ttl,
        } = wire::subscribe_params(params, self.allow_local())?;
        let caller = self.webhook_caller(extensions)?;
        // A subscribe may send a challenge: it is counted as a read.
        let _read = self
            .server
            .count_read(&caller)
            .await
            .map_err(crate::contract::quota_refused)?;
        let key = SubscriptionKey {
            owner: caller.owner,
            url,
            name,
            arguments,
        };
        let ask = SubscribeAsk { key, secret, ttl };
        let now = self.server.deps.clock.now();
        let webhooks = self.server.deps.ports.webhooks();
        let made = subscribe(subscriptions, webhooks, ask, now)
            .await
            .map_err(|e| match e {
                SubscribeError::TooMany { max } => wire::too_many(max),
                SubscribeError::Callback(failure) => wire::callback_failed(failure),
                SubscribeError::Raced => ErrorData::internal_error(
                    "another subscribe of the same subscription changed it meanwhile; try again",
                    None,
                ),
                SubscribeError::Store(e) => wire::store_failed("events/subscribe", &e),
            })?;
        let subscription = &made.subscription;
        tracing::info!(
            subscription_id = %subscription.id(),
            event = subscription.key.name.as_str(),
            refreshed = made.prior_status.is_some(),
            "webhook subscription stored"
        );
        // Delivery goes on from now: what came since a cursor the client gave was delivered
        // unless the subscription is new, lapsed or was paused (then poll from the cursor).
        let truncated = cursor_given && !made.was_delivering;
        Ok(wire::subscribed(
            &subscription.id(),
            subscription.refresh_before,
            &Cursor::at(now),
            truncated,
            made.prior_status.as_ref(),
        ))
    }

    async fn unsubscribe(
        &self,
        params: Option<&Value>,
        extensions: &Extensions,
    ) -> Result<Value, ErrorData> {
        let subscriptions = self.subscriptions()?;
        let (name, arguments, url) = wire::unsubscribe_params(params, self.allow_local())?;
        let caller = self.webhook_caller(extensions)?;
        let key = SubscriptionKey {
            owner: caller.owner,
            url,
            name,
            arguments,
        };
        match unsubscribe(subscriptions, &key).await {
            Ok(true) => Ok(serde_json::json!({"resultType": "complete"})),
            Ok(false) => Err(wire::unknown_subscription()),
            Err(e) => Err(wire::store_failed("events/unsubscribe", &e)),
        }
    }
}

fn not_found() -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "Method not found", None)
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
