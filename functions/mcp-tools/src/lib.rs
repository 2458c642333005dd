//! mcp-tools: the MCP server an agent reaches at the Function URL. Stateless: every request
//! may land on a fresh instance, so nothing but the SDK clients lives in the process.
//! Tool logic (validation, views) is in `shared::tools`; here the tools call the adapters.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use lambda_http::RequestExt;
use rmcp::handler::server::{router::tool::ToolRouter, tool::Extension, wrapper::Parameters};
use rmcp::model::{Implementation, ProtocolVersion, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    session::never::NeverSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{tool, tool_handler, tool_router, Json, ServerHandler};

use shared::config::{AuthMode, McpToolsConfig};
use shared::objects::S3Io;
use shared::pipeline::execution_description;
use shared::pipeline_runs::DynamoPipelineRunStore;
use shared::s3_location::S3Location;
use shared::sagemaker::{AsyncEndpoint, Pipeline};
use shared::store::{DynamoResultsStore, PendingJob, PutPending};
use shared::time::{now, rfc3339, ttl_after};
use shared::tools::*;

/// A Function URL request is at most 6 MB.
pub const MAX_REQUEST_BODY_BYTES: usize = 6_000_000;
/// Kept free of a long poll so the reply leaves before the Lambda times out.
const WAIT_MARGIN: Duration = Duration::from_secs(3);
/// A triggered run's `pending` item outlives a day-long run before its TTL.
const PENDING_RUN_GRACE_SECS: u64 = 86_400;

/// Everything a tool call needs, built once at cold start.
pub struct Deps {
    pub config: McpToolsConfig,
    pub results: DynamoResultsStore,
    pub runs: DynamoPipelineRunStore,
    pub s3: S3Io,
    pub endpoint: AsyncEndpoint,
    pub pipeline: Pipeline,
}

#[derive(Clone)]
pub struct Tools {
    deps: Arc<Deps>,
    router: Arc<ToolRouter<Tools>>,
}

/// The macro reads `Result<Json<T>, _>` in a tool's signature to derive its `outputSchema`,
/// so tool signatures spell it out; helpers use this alias.
type ToolResult<T> = Result<Json<T>, String>;

fn fail<T>(e: impl Into<ToolError>) -> ToolResult<T> {
    Err(e.into().message)
}

#[tool_router]
impl Tools {
    /// Starts an asynchronous inference on the configured SageMaker endpoint and returns at once.
    #[tool(
        description = "Submit a document or JSON payload to the asynchronous ML endpoint. Returns an inference_id at \
                       once; the job takes from seconds to minutes. Call check_job_status with the id (wait_secs lets \
                       it wait up to 20 s). Pass idempotency_key to make retries safe.",
        annotations(
            title = "Submit job",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn submit_job(
        &self,
        Parameters(args): Parameters<SubmitJobArgs>,
    ) -> Result<Json<SubmitJobOutput>, String> {
        let d = &self.deps;
        let job = match args.validate(d.endpoint.endpoint_name()) {
            Ok(job) => job,
            Err(e) => return fail(e),
        };
        let submitted = now();
        let input_location = S3Location {
            bucket: d.config.io_bucket.clone(),
            key: format!("inputs/{}.json", job.inference_id),
        };
        let pending = PendingJob {
            inference_id: job.inference_id.clone(),
            submitted_at: rfc3339(submitted),
            endpoint_name: d.endpoint.endpoint_name().to_owned(),
            input_location: input_location.to_string(),
            request_ttl_secs: job.request_ttl_secs,
            invocation_timeout_secs: job.invocation_timeout_secs,
            input_sha256: job.input_sha256.clone(),
            ttl: pending_ttl(submitted, &job, d.config.result_ttl_secs),
        };
        match d.results.put_pending(&pending, submitted.timestamp()).await {
            Err(e) => return fail(e),
            Ok(PutPending::Exists) => return self.replay(&job).await,
            Ok(PutPending::Created) => {}
        }
        if let Err(e) = d.s3.put_json(&input_location, job.input.clone()).await {
            return self.submission_failed(&job.inference_id, e.into()).await;
        }
        let invocation = match d
            .endpoint
            .invoke(
                &job.inference_id,
                &pending.input_location,
                job.invocation_timeout_secs,
                job.request_ttl_secs,
            )
            .await
        {
            Ok(invocation) => invocation,
            Err(failure) => {
                return self
                    .submission_failed(
                        &job.inference_id,
                        ToolError::aws("SageMaker InvokeEndpointAsync", &failure),
                    )
                    .await
            }
        };
        tracing::info!(inference_id = %job.inference_id, "job submitted");
        Ok(Json(SubmitJobOutput {
            inference_id: job.inference_id,
            status: "pending".into(),
            output_location: invocation.output_location,
            failure_location: invocation.failure_location,
            submitted_at: pending.submitted_at,
            idempotent_replay: false,
        }))
    }

    /// Reads a job's status and, once it is done, its result.
    #[tool(
        description = "Get the status of a job started with submit_job: pending, completed (with the result inline, or \
                       a short-lived result_url for large outputs) or failed (with the reason). wait_secs (0-20) waits \
                       for a pending job to finish.",
        annotations(
            title = "Check job status",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_job_status(
        &self,
        Parameters(args): Parameters<CheckJobStatusArgs>,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<Json<JobStatusOutput>, String> {
        let wait = match args.validate() {
            Ok(wait) => Duration::from_secs(wait.into()),
            Err(e) => return fail(e),
        };
        let wait =
            remaining_time(&parts).map_or(wait, |left| wait.min(left.saturating_sub(WAIT_MARGIN)));
        let deadline = Instant::now() + wait;
        let mut attempt = 0;
        loop {
            let job = match self.deps.results.get_job(&args.inference_id).await {
                Ok(Some(job)) if !job.is_expired(now()) => job,
                Ok(_) => {
                    return fail(ToolError::invalid(format!(
                        "no job with inference_id {:?}: it was not submitted here, or its record expired \
                         ({} s after completion)",
                        args.inference_id, self.deps.config.result_ttl_secs
                    )))
                }
                Err(e) => return fail(e),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if job.status != "pending" || left.is_zero() {
                let url = self.result_url(&job).await;
                return Ok(Json(job.view(now(), url)));
            }
            tokio::time::sleep(poll_delay(attempt).min(left)).await;
            attempt += 1;
        }
    }

    /// Starts a run of the configured training pipeline for a session.
    #[tool(
        description = "Start a run of the training pipeline for session_id, with only the parameters given. Returns the \
                       execution_arn at once; follow it with check_training_status, or list the session's runs with \
                       check_training_result.",
        annotations(
            title = "Trigger training",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn trigger_training(
        &self,
        Parameters(args): Parameters<TriggerTrainingArgs>,
    ) -> Result<Json<TriggerTrainingOutput>, String> {
        let parameters = match args.parameters() {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let at = now();
        let token = uuid::Uuid::new_v4().simple().to_string();
        let execution_arn = match self
            .deps
            .pipeline
            .start(
                &execution_description(&args.session_id, at),
                &parameters,
                &token,
            )
            .await
        {
            Ok(arn) => arn,
            Err(failure) => {
                return fail(ToolError::aws("SageMaker StartPipelineExecution", &failure))
            }
        };
        let ttl = ttl_after(
            at,
            self.deps.config.result_ttl_secs + PENDING_RUN_GRACE_SECS,
        );
        // The run has started: a failed bookkeeping write must not make the agent start another.
        let message = match self
            .deps
            .runs
            .put_pending_run(&args.session_id, &execution_arn, &rfc3339(at), ttl)
            .await
        {
            Ok(()) => None,
            Err(e) => {
                tracing::error!(%execution_arn, error = %e, "run started but its pending item was not written");
                Some(format!(
                    "The run started, but recording it failed ({e}); check_training_result will list it once it finishes."
                ))
            }
        };
        Ok(Json(TriggerTrainingOutput {
            execution_arn,
            status: "Executing".into(),
            session_id: args.session_id,
            message,
        }))
    }

    /// The live status of one pipeline run and its steps.
    #[tool(
        description = "Get the status of a training run (execution_arn from trigger_training), with its failure reason \
                       and the status of each step.",
        annotations(
            title = "Check training status",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn check_training_status(
        &self,
        Parameters(args): Parameters<CheckTrainingStatusArgs>,
    ) -> Result<Json<TrainingStatusOutput>, String> {
        if let Err(e) = args.validate() {
            return fail(e);
        }
        let pipeline = &self.deps.pipeline;
        let described = match pipeline.describe(&args.execution_arn).await {
            Ok(d) => d,
            Err(failure) => {
                return fail(ToolError::aws(
                    "SageMaker DescribePipelineExecution",
                    &failure,
                ))
            }
        };
        let steps = match pipeline.steps(&args.execution_arn).await {
            Ok(s) => s,
            Err(failure) => {
                return fail(ToolError::aws(
                    "SageMaker ListPipelineExecutionSteps",
                    &failure,
                ))
            }
        };
        Ok(Json(TrainingStatusOutput {
            execution_arn: args.execution_arn,
            status: described.status,
            failure_reason: described.failure_reason,
            steps,
        }))
    }

    /// The recorded outcomes of a session's runs.
    #[tool(
        description = "List the training runs of a session, newest first, with their outcome as recorded when they \
                       finished (status pending: triggered, not finished yet).",
        annotations(
            title = "Check training result",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_training_result(
        &self,
        Parameters(args): Parameters<CheckTrainingResultArgs>,
    ) -> Result<Json<TrainingResultOutput>, String> {
        if let Err(e) = validate_session_id(&args.session_id) {
            return fail(e);
        }
        match self.deps.runs.query_session(&args.session_id).await {
            Ok(runs) => Ok(Json(TrainingResultOutput {
                session_id: args.session_id,
                runs: newest_runs(runs, now()),
            })),
            Err(e) => fail(e),
        }
    }
}

impl Tools {
    pub fn new(deps: Arc<Deps>) -> Self {
        Self {
            deps,
            router: Arc::new(Self::tool_router()),
        }
    }

    /// A second submit with the same idempotency key: the first job, unless the input differs.
    async fn replay(&self, job: &ValidSubmission) -> ToolResult<SubmitJobOutput> {
        let stored = match self.deps.results.get_job(&job.inference_id).await {
            Ok(Some(stored)) => stored,
            Ok(None) => {
                return fail(ToolError::invalid(
                    "the job for this idempotency_key vanished; submit again",
                ))
            }
            Err(e) => return fail(e),
        };
        if stored.input_sha256.as_deref() != Some(job.input_sha256.as_str()) {
            return fail(ToolError::invalid(
                "this idempotency_key was already used with a different input; use a new key for a new job",
            ));
        }
        Ok(Json(SubmitJobOutput {
            inference_id: stored.inference_id,
            status: stored.status,
            output_location: stored.output_location,
            failure_location: stored.failure_location,
            submitted_at: stored.submitted_at.unwrap_or_default(),
            idempotent_replay: true,
        }))
    }

    async fn submission_failed<T>(&self, inference_id: &str, error: ToolError) -> ToolResult<T> {
        if let Err(e) = self
            .deps
            .results
            .mark_submission_failed(inference_id, &error.message, &rfc3339(now()))
            .await
        {
            tracing::error!(%inference_id, error = %e, "could not mark the failed submission");
        }
        tracing::warn!(%inference_id, error = %error.message, "submission failed");
        fail(error)
    }

    /// A presigned URL for an output stored as a pointer.
    async fn result_url(&self, job: &StoredJob) -> Option<String> {
        if job.status != "completed" || job.result.is_some() {
            return None;
        }
        let location: S3Location = job.output_location.as_deref()?.parse().ok()?;
        match self
            .deps
            .s3
            .presign_get(&location, Duration::from_secs(RESULT_URL_EXPIRY_SECS))
            .await
        {
            Ok(url) => Some(url),
            Err(e) => {
                tracing::warn!(%location, error = %e, "could not presign the output");
                None
            }
        }
    }
}

/// Time left in this invocation, when the runtime gives a real deadline (epoch milliseconds).
fn remaining_time(parts: &http::request::Parts) -> Option<Duration> {
    let deadline_ms = parts.extensions.lambda_context_ref()?.deadline;
    // Local emulators pass a duration here, not an epoch time: ignore it.
    if deadline_ms < 1_000_000_000_000 {
        return None;
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    Some(Duration::from_millis(deadline_ms.saturating_sub(now_ms)))
}

#[tool_handler(router = self.router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Long-running ML work. submit_job returns an inference_id at once; poll check_job_status (wait_secs up to \
                 20) until it is completed or failed. trigger_training starts a pipeline run for a session; follow it with \
                 check_training_status, and list a session's finished runs with check_training_result.",
            )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[
            ProtocolVersion::V_2025_03_26,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ])
    }
}

// ------------------------------------------------------------------ HTTP

pub type HttpResponse = http::Response<BoxBody<Bytes, Infallible>>;

fn refusal(
    status: http::StatusCode,
    challenge: Option<&'static str>,
    text: &'static str,
) -> HttpResponse {
    let mut builder = http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain");
    if let Some(challenge) = challenge {
        builder = builder.header(http::header::WWW_AUTHENTICATE, challenge);
    }
    builder
        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed())
        .expect("static response is valid")
}

/// What is refused before MCP sees the request: a path other than `/` and `/mcp`, a `Host`
/// not served, and (bearer mode) a missing or wrong token.
pub fn refuse(
    config: &McpToolsConfig,
    path: &str,
    headers: &http::HeaderMap,
) -> Option<HttpResponse> {
    use http::StatusCode;
    if !matches!(path.trim_end_matches('/'), "" | "/mcp") {
        return Some(refusal(
            StatusCode::NOT_FOUND,
            None,
            "Not Found: MCP is served at /mcp",
        ));
    }
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok());
    if !shared::http_guard::host_allowed(host, &config.allowed_hosts) {
        return Some(refusal(
            StatusCode::FORBIDDEN,
            None,
            "Forbidden: Host header is not allowed",
        ));
    }
    if let AuthMode::Bearer { token_sha256 } = &config.auth {
        let authorization = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if !shared::http_guard::bearer_ok(authorization, token_sha256) {
            let challenge = if authorization.is_some() {
                r#"Bearer realm="mcp-tools", error="invalid_token""#
            } else {
                r#"Bearer realm="mcp-tools""#
            };
            return Some(refusal(
                StatusCode::UNAUTHORIZED,
                Some(challenge),
                "Unauthorized: a valid bearer token is required",
            ));
        }
    }
    None
}

/// rmcp's defaults are for a local server: set each for Lambda. Hosts are checked by
/// [`refuse`] (it understands `*.lambda-url.<region>.on.aws`); Origin by rmcp, 403 for any
/// present Origin not listed.
pub fn mcp_service(deps: Arc<Deps>) -> StreamableHttpService<Tools, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .with_allowed_origins(deps.config.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES);
    let tools = Tools::new(deps);
    StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

pub async fn handle(
    config: &McpToolsConfig,
    mcp: &StreamableHttpService<Tools, NeverSessionManager>,
    request: lambda_http::Request,
) -> HttpResponse {
    if let Some(refusal) = refuse(config, request.raw_http_path(), request.headers()) {
        return refusal;
    }
    mcp.handle(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::config::Env;

    fn config(auth: &str) -> McpToolsConfig {
        let vars = [
            ("RESULTS_TABLE", "r"),
            ("PIPELINE_RESULTS_TABLE", "p"),
            ("IO_BUCKET", "b"),
            ("ASYNC_ENDPOINT_NAME", "e"),
            ("PIPELINE_NAME", "pl"),
            ("AWS_REGION", "us-east-1"),
            ("AUTH_MODE", auth),
            // sha256("secret")
            (
                "MCP_BEARER_TOKEN_SHA256",
                "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b",
            ),
        ];
        McpToolsConfig::from_env(&Env::from_lookup(move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }))
        .unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()))
            .collect()
    }

    #[test]
    fn paths_hosts_and_tokens_are_checked_before_mcp() {
        let iam = config("iam");
        let ok_host = [("host", "abc.lambda-url.us-east-1.on.aws")];
        assert!(refuse(&iam, "/mcp", &headers(&ok_host)).is_none());
        assert!(refuse(&iam, "/", &headers(&ok_host)).is_none());
        assert_eq!(
            refuse(&iam, "/admin", &headers(&ok_host)).unwrap().status(),
            404
        );
        assert_eq!(
            refuse(&iam, "/mcp", &headers(&[("host", "evil.example")]))
                .unwrap()
                .status(),
            403
        );

        let bearer = config("bearer");
        let no_token = refuse(&bearer, "/mcp", &headers(&ok_host)).unwrap();
        assert_eq!(no_token.status(), 401);
        assert_eq!(
            no_token.headers()["www-authenticate"],
            r#"Bearer realm="mcp-tools""#
        );
        let wrong = refuse(
            &bearer,
            "/mcp",
            &headers(&[ok_host[0], ("authorization", "Bearer nope")]),
        )
        .unwrap();
        assert_eq!(wrong.status(), 401);
        assert!(wrong.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token"));
        assert!(refuse(
            &bearer,
            "/mcp",
            &headers(&[ok_host[0], ("authorization", "Bearer secret")])
        )
        .is_none());
    }
}
