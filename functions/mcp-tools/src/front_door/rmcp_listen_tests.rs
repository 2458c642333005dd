//! rmcp's own client (3.11) holding a listen against the door: its streamable HTTP client
//! transport, over an HTTP client that hands each request to the door in-process. What a Rust
//! client of the crate can do today: `Peer::listen` cannot name tasks (its `SubscriptionFilter`
//! has no `taskIds`, and it drops a listen on the first `notifications/tasks` as outside its
//! filter); the same listen sent as a custom request gets every change through
//! `ClientHandler::on_task_status`.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientJsonRpcMessage,
    ClientRequest, CustomRequest, Implementation, ServerJsonRpcMessage, SubscriptionFilter,
    TaskStatus, TaskStatusNotificationParams,
};
use rmcp::service::{
    serve_client_with_lifecycle, ClientLifecycleMode, NotificationContext, SubscriptionEnd,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
    StreamableHttpError, StreamableHttpPostResponse,
};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::streaming_tests::{event, open_door};
use super::*;
use crate::tools_tests::{world, FakePorts};

const HOST: &str = "https://abc.lambda-url.us-east-1.on.aws/mcp";

/// An HTTP client whose every request is answered by the door, in this process.
#[derive(Clone)]
struct InProcess(Arc<FrontDoor<FakePorts>>);

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct DoorError(String);

type Answer = Result<StreamableHttpPostResponse, StreamableHttpError<DoorError>>;

impl StreamableHttpClient for InProcess {
    type Error = DoorError;

    async fn post_message(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        _session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Answer {
        let mut headers = json!({});
        for (name, value) in &custom_headers {
            headers[name.as_str()] = json!(value.to_str().unwrap_or_default());
        }
        let body = serde_json::to_value(&message)?;
        // rmcp sends no version header with `initialize`: the one its body names.
        if headers.get("mcp-protocol-version").is_none() {
            let version = body["params"]["protocolVersion"]
                .as_str()
                .unwrap_or("2025-11-25");
            headers["mcp-protocol-version"] = json!(version);
        }
        let request = lambda_http::Request::from(event("POST", "/mcp", headers, Some(body)));
        let response = self.0.handle(request).await;
        let status = response.status();
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if status == http::StatusCode::ACCEPTED {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if content_type.starts_with("text/event-stream") {
            let events = sse_stream::SseStream::new(response.into_body()).boxed();
            return Ok(StreamableHttpPostResponse::Sse(events, None));
        }
        let bytes = response.into_body().collect().await.map(|b| b.to_bytes());
        let bytes = bytes.unwrap_or_default();
        match serde_json::from_slice::<ServerJsonRpcMessage>(&bytes) {
            Ok(message) => Ok(StreamableHttpPostResponse::Json(message, None)),
            Err(_) => Err(StreamableHttpError::Client(DoorError(format!(
                "{status}: {}",
                String::from_utf8_lossy(&bytes)
            )))),
        }
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        _session_id: Arc<str>,
        _auth_header: Option<String>,
        _custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<DoorError>> {
        Ok(())
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        _session_id: Option<Arc<str>>,
        _last_event_id: Option<String>,
        _auth_header: Option<String>,
        _custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        StreamableHttpError<DoorError>,
    > {
        Err(StreamableHttpError::ServerDoesNotSupportSse)
    }
}

/// A client declaring the tasks extension, passing on each task status it is told.
#[derive(Clone)]
struct Listener(mpsc::UnboundedSender<(String, TaskStatus)>);

impl ClientHandler for Listener {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_tasks().build();
        rmcp::model::ClientConfig::new(capabilities, Implementation::new("listen-test", "1"))
    }

    async fn on_task_status(
        &self,
        params: TaskStatusNotificationParams,
        _context: NotificationContext<RoleClient>,
    ) {
        let task = &params.task.task;
        let _ = self.0.send((task.task_id.clone(), task.status));
    }
}

// Real time, as rmcp's keep-alive timer needs (see streaming_tests).
#[tokio::test]
async fn rmcps_client_hears_a_tasks_changes_on_a_listen_it_sends_itself() {
    let w = world(&[]);
    let door = open_door(&w);
    let (heard, mut hearing) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::with_client(
        InProcess(door),
        StreamableHttpClientTransportConfig::with_uri(HOST),
    );
    // The 2026-07-28 lifecycle: server/discover, and each request carrying its own metadata.
    let modern = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = serve_client_with_lifecycle(Listener(heard), transport, modern)
        .await
        .unwrap();

    let args = json!({"document": "a"}).as_object().cloned().unwrap();
    let submit = CallToolRequestParams::new("submit_job").with_arguments(args);
    let CallToolResponse::Task(created) = client.call_tool_once(submit).await.unwrap() else {
        panic!("a client that declared tasks gets a task");
    };
    let task_id = created.task.task_id;

    // Peer::listen: its filter cannot name the task; acknowledged with nothing, ended at once.
    let mut subscription = client.listen(SubscriptionFilter::new()).await.unwrap();
    assert!(subscription.next().await.unwrap().is_none());
    assert!(matches!(
        subscription.end(),
        Some(SubscriptionEnd::Graceful(_))
    ));

    // The listen the tasks extension describes, sent as a custom request.
    let params = json!({"notifications": {"taskIds": [task_id]}});
    let listen =
        ClientRequest::CustomRequest(CustomRequest::new("subscriptions/listen", Some(params)));
    let peer = client.peer().clone();
    let listening = tokio::spawn(async move { peer.send_request(listen).await });
    let first = hearing.recv().await.unwrap();
    assert_eq!(first, (task_id.clone(), TaskStatus::Working));
    let inference_id = task_id.rsplit_once('.').unwrap().0.to_owned();
    w.notify(&inference_id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let done = hearing.recv().await.unwrap();
    assert_eq!(done, (task_id, TaskStatus::Completed));
    let ended = listening.await.unwrap().unwrap();
    let ended: Value = serde_json::to_value(ended).unwrap();
    assert_eq!(ended["resultType"], "complete", "{ended}");
    client.cancel().await.unwrap();
}
