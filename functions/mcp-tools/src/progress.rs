//! Progress notifications to the client that asked for them (`_meta.progressToken`), sent on
//! the request's own stream: rmcp turns the reply into SSE once one is sent.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};

use domain::progress::Progress;
use ports::ProgressSink;

/// On a tool call's extensions when its request carries a progress token: its reply may then
/// stream, and a wait may be longer.
#[derive(Debug, Clone, Copy)]
pub struct ProgressAsked;

/// The client's progress token and the way back to it, with the words for each event.
pub struct ClientProgress<F> {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    words: F,
}

impl<F> ClientProgress<F> {
    /// For a request that carries a progress token; None for one that does not.
    pub fn of(context: &RequestContext<RoleServer>, words: F) -> Option<Self> {
        let token = context.meta.get_progress_token()?;
        Some(Self {
            peer: context.peer.clone(),
            token,
            words,
        })
    }
}

impl<E, F> ProgressSink<E> for ClientProgress<F>
where
    E: Send,
    F: Fn(&E) -> String + Send + Sync,
{
    async fn send(&mut self, update: Progress<E>) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), update.progress)
            .with_message((self.words)(&update.event));
        if let Some(total) = update.total {
            param = param.with_total(total);
        }
        // A client gone away ends the request soon enough; the wait need not stop for it here.
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "progress notification not sent");
        }
    }
}
