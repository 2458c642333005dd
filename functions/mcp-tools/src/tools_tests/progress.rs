//! Progress while waiting.

use super::*;

/// An MCP client on a pipe that keeps every progress notification with the (tokio) time it
/// arrived.
#[derive(Clone, Default)]
struct ProgressClient {
    seen: Arc<std::sync::Mutex<Vec<(std::time::Duration, rmcp::model::ProgressNotificationParam)>>>,
    start: Arc<std::sync::OnceLock<tokio::time::Instant>>,
}

impl rmcp::ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let at = self.start.get().map(|s| s.elapsed()).unwrap_or_default();
        self.seen.lock().unwrap().push((at, params));
    }
}

impl World {
    /// A job of one document submitted: its inference id.
    async fn submitted(&self) -> String {
        let out = self.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
        out["inference_id"].as_str().unwrap().to_owned()
    }

    /// check_job_status waiting `wait_secs` on `inference_id`, called over a pipe by rmcp's own
    /// client, which sends a progress token with every request. The result, and each
    /// notification's arrival time and content.
    async fn wait_with_progress(
        &self,
        inference_id: &str,
        wait_secs: u64,
    ) -> (
        CallToolResult,
        Vec<(std::time::Duration, rmcp::model::ProgressNotificationParam)>,
    ) {
        use rmcp::ServiceExt;
        let tools = Tools::for_sole_caller(self.deps.clone(), self.principal.clone());
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(server) = tools.serve(server_io).await {
                let _ = server.waiting().await;
            }
        });
        let handler = ProgressClient::default();
        let client = handler.clone().serve(client_io).await.unwrap();
        let arguments = json!({"inference_id": inference_id, "wait_secs": wait_secs});
        let params = rmcp::model::CallToolRequestParams::new(names::CHECK_JOB_STATUS)
            .with_arguments(object(arguments).unwrap());
        handler.start.set(tokio::time::Instant::now()).unwrap();
        let result = client.call_tool(params).await.unwrap();
        let seen = handler.seen.lock().unwrap().clone();
        client.cancel().await.unwrap();
        (result, seen)
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_with_a_progress_token_reports_the_job_as_it_moves_then_answers() {
    let w = world(&[]);
    let id = w.submitted().await;
    let later = w.as_caller(Principal::Local);
    let finisher = {
        let id = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            later
                .notify(&id, "Completed", Some(json!({"label": "ok"})))
                .await;
        })
    };
    let (result, seen) = w.wait_with_progress(&id, 10).await;
    finisher.await.unwrap();
    assert_eq!(result.structured_content.unwrap()["status"], "completed");
    let said: Vec<(u64, f64, Option<f64>, &str)> = seen
        .iter()
        .map(|(at, p)| {
            (
                at.as_millis() as u64,
                p.progress,
                p.total,
                p.message.as_deref().unwrap(),
            )
        })
        .collect();
    // Reads at 0, 0.25, 0.75, 1.75 and 3.75 s: the outcome, recorded at 3 s, is seen at the last.
    assert_eq!(
        said,
        [
            (
                0,
                0.0,
                Some(10.0),
                "invoked: SageMaker has the request; waiting for its outcome"
            ),
            (3750, 3.75, Some(10.0), "outcome recorded: completed"),
        ]
    );
    // Each under the request's token.
    assert!(seen
        .windows(2)
        .all(|w| w[0].1.progress_token == w[1].1.progress_token));
}

#[tokio::test(start_paused = true)]
async fn a_long_streamed_wait_beats_steadily_and_a_plain_one_stays_silent_and_short() {
    let w = world(&[("FUNCTION_TIMEOUT_SECS", "120")]);
    let id = w.submitted().await;
    let (result, seen) = w.wait_with_progress(&id, 60).await;
    assert_eq!(result.structured_content.unwrap()["status"], "pending");
    let times: Vec<u64> = seen.iter().map(|(at, _)| at.as_secs()).collect();
    // The first read, then a heartbeat on the first read 5 s or more after the last one
    // (reads every 2 s once the wait is under way), and nothing after the last read at 60 s.
    assert_eq!(times.first(), Some(&0));
    assert!(
        times.windows(2).all(|w| (5..=7).contains(&(w[1] - w[0]))),
        "{times:?}"
    );
    assert!(*times.last().unwrap() >= 53, "{times:?}");
    let progress: Vec<f64> = seen.iter().map(|(_, p)| p.progress).collect();
    assert!(progress.windows(2).all(|w| w[1] > w[0]), "{progress:?}");
    assert!(seen[1..].iter().all(|(_, p)| p
        .message
        .as_deref()
        .unwrap()
        .ends_with("(still waiting)")));

    // Without a token (rmcp's client always sends one; the direct call does not): the wait is
    // held to 20 s, and what a wait would send has nowhere to go.
    let started = tokio::time::Instant::now();
    let plain = w
        .ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 5}),
        )
        .await;
    assert_eq!(plain["status"], "pending");
    assert_eq!(started.elapsed().as_secs(), 5);
    let message = w
        .tool_error(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 60}),
        )
        .await;
    assert!(message.contains("without a progress token"), "{message}");
    // With one, up to the timeout less 10 s.
    let (result, _) = w.wait_with_progress(&id, 111).await;
    assert_eq!(
        text(&result),
        "`wait_secs` is 111; it must be from 0 to 110 (the function's timeout, 120 s, less 10 s)"
    );
}

#[tokio::test(start_paused = true)]
async fn a_job_done_before_the_wait_gets_its_answer_without_a_notification() {
    let w = world(&[]);
    let id = w.submitted().await;
    w.notify(&id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let (result, seen) = w.wait_with_progress(&id, 10).await;
    assert_eq!(result.structured_content.unwrap()["status"], "completed");
    assert!(seen.is_empty(), "{seen:?}");
}
