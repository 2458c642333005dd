//! Logs and metrics as CloudWatch reads them.
//!
//! Logs: `tracing`, as JSON lines when the function's `LoggingConfig` says JSON (Lambda sets
//! `AWS_LAMBDA_LOG_FORMAT`), with every open span's fields on each line, so the request id and
//! the job's own ids (set once on a span) are on every line below it. This project's crates log
//! at `AWS_LAMBDA_LOG_LEVEL` (default INFO), dependencies at WARN; `RUST_LOG`, when set, decides
//! everything instead. Whatever either says, no dependency logs below INFO, and lambda_runtime
//! not below DEBUG: at those levels they write raw events, requests and replies (bearer tokens,
//! whole documents), which must never reach CloudWatch. Every line, whoever logs it, is cut to
//! 8 KB ([`line_cut`]).
//!
//! Metrics: CloudWatch Embedded Metric Format documents on stdout (`metrics_cloudwatch_embedded`),
//! flushed after each invocation, in one namespace with the function as the only fixed
//! dimension. Entry points count what the use cases report; the domain knows nothing of this.

pub mod line_cut;

use metrics::{counter, describe_counter, describe_histogram, histogram, Unit};
use tracing_subscriber::filter::Targets;

use domain::job::JobStatus;
use usecases::outcome::Recorded;

pub use metrics_cloudwatch_embedded::lambda::service::{run, run_http};
pub use metrics_cloudwatch_embedded::Collector;

/// A function's start, as each `main` makes it: logging first, then its configuration read
/// from the process's environment and its metrics in the configuration's namespace, each
/// ending the process with its words ([`or_exit`]) when it cannot be had.
pub fn start<C, E: std::fmt::Display>(
    function: &'static str,
    config: impl FnOnce(&crate::config::ProcessEnv) -> Result<C, E>,
    namespace: impl FnOnce(&C) -> &str,
) -> (C, &'static Collector) {
    init_logging();
    let config = or_exit(function, config(&crate::config::Env::process()));
    let metrics = or_exit(function, init_metrics(function, namespace(&config)));
    (config, metrics)
}

/// What a function needs before it can serve (its configuration, its metrics, a tool catalog),
/// or the process ends: the reason in words on stderr, one line per mistake under
/// `<function> cannot start:`, never an error's `Debug` dump. Lambda then answers the
/// invocation with its init error (`Runtime.ExitError`) and the function's log holds the lines
/// (docs/troubleshooting.md); `make serve` finds them in its log and stops with them.
pub fn or_exit<T, E: std::fmt::Display>(function: &str, result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => {
            eprintln!("{}", cannot_start(function, &e));
            std::process::exit(1)
        }
    }
}

/// The words [`or_exit`] prints: the first line names the function, each line after it (an
/// error may hold several, one per mistake) is indented under it.
pub fn cannot_start(function: &str, error: &dyn std::fmt::Display) -> String {
    let text = error.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("an unknown error");
    let mut said = format!("{function} cannot start: {first}");
    for line in lines {
        said.push_str("\n  ");
        said.push_str(line);
    }
    said
}

/// Runs a Lambda runtime (one made for streamed responses: `lambda_http::streaming_runtime`)
/// with the layers [`run`] adds: the invocation's tracing span, then the metrics flush.
pub async fn run_runtime<S>(
    metrics: &'static Collector,
    runtime: lambda_runtime::Runtime<S>,
) -> Result<(), lambda_runtime::Error>
where
    S: lambda_runtime::Service<
        lambda_runtime::LambdaInvocation,
        Response = (),
        Error = lambda_runtime::Error,
    >,
{
    runtime
        .layer(lambda_runtime::layers::TracingLayer::new())
        .layer(metrics_cloudwatch_embedded::lambda::MetricsLayer::new(
            metrics,
        ))
        .run()
        .await
}

/// Runs the runtime `make` builds, and a new one when it stops on an error after serving a
/// while: lambda_runtime ends its loop when it cannot post a reply (a streamed reply whose
/// client went away mid-stream, which a local emulator passes on as a broken post), and a
/// process that has ended leaves every later invocation waiting. That failure ends the one
/// reply, not the function. Three failures in a row within a second each (no Runtime API to
/// reach) end the process as before.
pub async fn run_runtime_again<S, F>(
    metrics: &'static Collector,
    make: F,
) -> Result<(), lambda_runtime::Error>
where
    F: Fn() -> lambda_runtime::Runtime<S>,
    S: lambda_runtime::Service<
        lambda_runtime::LambdaInvocation,
        Response = (),
        Error = lambda_runtime::Error,
    >,
{
    const QUICK: std::time::Duration = std::time::Duration::from_secs(1);
    let mut quick_failures = 0;
    loop {
        let started = std::time::Instant::now();
        let error = match run_runtime(metrics, make()).await {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        quick_failures = match started.elapsed() < QUICK {
            true => quick_failures + 1,
            false => 1,
        };
        if quick_failures >= 3 {
            return Err(error);
        }
        tracing::warn!(error = %error, "the runtime stopped; serving the next invocation");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Runs a function that takes JSON events (SNS, SQS, EventBridge): each invocation's payload
/// goes to `handle`, under the layers [`run`] adds. The event functions' mains only wire.
pub async fn run_events<H, F, R, E>(
    metrics: &'static Collector,
    handle: H,
) -> Result<(), lambda_runtime::Error>
where
    H: Fn(serde_json::Value) -> F,
    F: std::future::Future<Output = Result<R, E>>,
    R: serde::Serialize,
    E: Into<lambda_runtime::Diagnostic> + std::fmt::Debug,
{
    let service = lambda_runtime::service_fn(
        move |event: lambda_runtime::LambdaEvent<serde_json::Value>| handle(event.payload),
    );
    run(metrics, service).await
}

/// The crates whose INFO lines are ours to keep: the layers under shared/ and the functions.
/// lambda_runtime's invocation span carries the request id, so it stays at INFO too. A crate
/// of ours missing here logs nothing below WARN: the test below holds the list to the
/// workspace's members.
const OUR_CRATES: [&str; 12] = [
    "domain",
    "ports",
    "usecases",
    "adapters",
    "fakes",
    "entry",
    "notification_handler",
    "pipeline_router",
    "event_delivery",
    "mcp_tools",
    "gateway_target",
    "lambda_runtime",
];

/// Metric names, in one place.
pub mod metric {
    pub const JOBS_SUBMITTED: &str = "JobsSubmitted";
    pub const JOBS_COMPLETED: &str = "JobsCompleted";
    pub const JOBS_FAILED: &str = "JobsFailed";
    pub const JOBS_CANCELLED: &str = "JobsCancelled";
    pub const JOB_DURATION: &str = "JobDuration";
    pub const JOBS_PROBABLY_LOST: &str = "JobsProbablyLost";
    pub const DUPLICATE_NOTIFICATIONS: &str = "DuplicateNotifications";
    pub const NOTIFICATIONS_FOR_UNKNOWN_JOBS: &str = "NotificationsForUnknownJobs";
    pub const OUTCOMES_RECONCILED: &str = "OutcomesReconciled";
    pub const RUNS_ROUTED: &str = "RunsRouted";
    pub const COMPLETION_MESSAGES_SENT: &str = "CompletionMessagesSent";
    pub const TOOL_CALLS: &str = "ToolCalls";
    pub const TOOL_ERRORS: &str = "ToolErrors";
    pub const COLD_START: &str = "ColdStart";
}

/// The only fixed dimension's name; its value is the function (`mcp-tools`, ...).
pub const FUNCTION_DIMENSION: &str = "Function";

#[derive(Debug, thiserror::Error)]
#[error("metrics: {0}")]
pub struct TelemetryError(String);

/// The `tracing` filter: `RUST_LOG` when set, else this project's crates at the Lambda level
/// (or INFO) and the rest at WARN.
pub fn log_filter(rust_log: Option<&str>, lambda_level: Option<&str>) -> String {
    if let Some(asked) = rust_log.filter(|s| !s.trim().is_empty()) {
        return asked.to_owned();
    }
    default_filter(lambda_level)
}

fn default_filter(lambda_level: Option<&str>) -> String {
    let level = match lambda_level
        .map(|l| l.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some(l @ ("trace" | "debug" | "info" | "warn" | "error")) => l.to_owned(),
        Some("fatal") => "error".to_owned(),
        _ => "info".to_owned(),
    };
    let mut filter = String::from("warn");
    for krate in OUR_CRATES {
        let krate_level = if krate == "lambda_runtime" && level != "trace" && level != "debug" {
            "info"
        } else {
            &level
        };
        filter.push_str(&format!(",{krate}={krate_level}"));
    }
    filter
}

/// The filter's directives parsed: levels and `target=level` pairs, as `RUST_LOG` takes them
/// (`tracing_subscriber`'s `Targets`: no span or field directives, so no regex engine in every
/// function). A `RUST_LOG` that does not parse yields the default filter and its error.
pub fn log_targets(
    rust_log: Option<&str>,
    lambda_level: Option<&str>,
) -> (Targets, Option<String>) {
    let fallback = || {
        default_filter(lambda_level)
            .parse::<Targets>()
            .expect("the default filter parses")
    };
    match log_filter(rust_log, lambda_level).parse::<Targets>() {
        Ok(targets) => (targets, None),
        Err(e) => (
            fallback(),
            Some(format!(
                "RUST_LOG is not a list of levels and target=level directives ({e}); logging at the defaults"
            )),
        ),
    }
}

/// Whether a line may be written at all, whatever the filter asks: below INFO only this
/// project's crates, and lambda_runtime down to DEBUG (its TRACE lines hold the raw event).
/// rmcp's DEBUG lines hold every request and reply, the SDK's TRACE lines every HTTP exchange.
pub fn may_log(target: &str, level: &tracing::Level) -> bool {
    let krate = target.split("::").next().unwrap_or(target);
    if *level <= tracing::Level::INFO {
        return true;
    }
    match krate {
        "lambda_runtime" => *level <= tracing::Level::DEBUG,
        other => OUR_CRATES.contains(&other),
    }
}

/// Logging for a function, from the environment Lambda sets.
pub fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let var = |name| std::env::var(name).ok();
    let (targets, refused) = log_targets(
        var("RUST_LOG").as_deref(),
        var("AWS_LAMBDA_LOG_LEVEL").as_deref(),
    );
    let json = var("AWS_LAMBDA_LOG_FORMAT").is_some_and(|f| f.eq_ignore_ascii_case("json"));
    let never = tracing_subscriber::filter::filter_fn(|m| may_log(m.target(), m.level()));
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_target(false)
        .with_writer(line_cut::CutLines::new(std::io::stdout));
    // `try_init`: a second call (tests) keeps the first subscriber.
    let _ = if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .finish()
            .with(targets)
            .with(never)
            .try_init()
    } else {
        builder
            .without_time()
            .finish()
            .with(targets)
            .with(never)
            .try_init()
    };
    if let Some(refused) = refused {
        tracing::warn!("{refused}");
    }
}

/// The EMF collector for `function`, in `namespace`; cold starts are counted once.
pub fn init_metrics(
    function: &'static str,
    namespace: &str,
) -> Result<&'static Collector, TelemetryError> {
    let collector = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(namespace.to_owned())
        .with_dimension(FUNCTION_DIMENSION, function)
        .lambda_cold_start_metric(metric::COLD_START)
        .with_lambda_request_id("RequestId")
        .init()
        .map_err(|e| TelemetryError(e.to_string()))?;
    describe();
    Ok(collector)
}

fn describe() {
    use metric::*;
    for name in [
        JOBS_SUBMITTED,
        JOBS_COMPLETED,
        JOBS_FAILED,
        JOBS_CANCELLED,
        JOBS_PROBABLY_LOST,
        DUPLICATE_NOTIFICATIONS,
        NOTIFICATIONS_FOR_UNKNOWN_JOBS,
        OUTCOMES_RECONCILED,
        RUNS_ROUTED,
        COMPLETION_MESSAGES_SENT,
        TOOL_CALLS,
        TOOL_ERRORS,
    ] {
        describe_counter!(name, Unit::Count, "");
    }
    describe_histogram!(JOB_DURATION, Unit::Milliseconds, "");
}

/// How an outcome reached the results table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeSource {
    Notification,
    Reconciliation,
}

/// Counts a recorded (or ignored) outcome: by status, its duration, duplicates, unknown jobs.
pub fn outcome(recorded: &Recorded, source: OutcomeSource) {
    match recorded {
        Recorded::Written {
            status,
            known_job,
            took_ms,
            ..
        } => {
            if let Some(name) = terminal_metric(*status) {
                counter!(name).increment(1);
            }
            if let Some(ms) = took_ms {
                histogram!(metric::JOB_DURATION).record(*ms as f64);
            }
            if !known_job {
                counter!(metric::NOTIFICATIONS_FOR_UNKNOWN_JOBS).increment(1);
            }
            if source == OutcomeSource::Reconciliation {
                counter!(metric::OUTCOMES_RECONCILED).increment(1);
            }
        }
        Recorded::AlreadyFinal { .. } => {
            if source == OutcomeSource::Notification {
                counter!(metric::DUPLICATE_NOTIFICATIONS).increment(1);
            }
        }
    }
}

fn terminal_metric(status: JobStatus) -> Option<&'static str> {
    match status {
        JobStatus::Completed => Some(metric::JOBS_COMPLETED),
        JobStatus::Failed => Some(metric::JOBS_FAILED),
        JobStatus::Cancelled => Some(metric::JOBS_CANCELLED),
        JobStatus::Pending => None,
    }
}

/// A new job reached SageMaker (or may have: an uncertain invoke counts too); replays do not.
pub fn job_submitted() {
    counter!(metric::JOBS_SUBMITTED).increment(1);
}

/// A submission SageMaker refused: the job ended `failed` without an outcome notification.
pub fn job_refused() {
    counter!(metric::JOBS_FAILED).increment(1);
}

/// A client cancelled a pending job (`tasks/cancel`).
pub fn job_cancelled() {
    counter!(metric::JOBS_CANCELLED).increment(1);
}

/// A status check found a job pending past its deadline: its outcome is not arriving.
pub fn job_probably_lost() {
    counter!(metric::JOBS_PROBABLY_LOST).increment(1);
}

/// A pipeline status change recorded for a session (`status` is SageMaker's word).
pub fn run_routed(status: &'static str, completion_sent: bool) {
    counter!(metric::RUNS_ROUTED, "Status" => status).increment(1);
    if completion_sent {
        counter!(metric::COMPLETION_MESSAGES_SENT).increment(1);
    }
}

/// One tool call, and whether it ended as a tool error.
pub fn tool_call(tool: &str, is_error: bool) {
    counter!(metric::TOOL_CALLS, "Tool" => tool.to_owned()).increment(1);
    if is_error {
        counter!(metric::TOOL_ERRORS, "Tool" => tool.to_owned()).increment(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_log_at_warn_unless_asked() {
        let filter = log_filter(None, None);
        assert!(filter.starts_with("warn,"), "{filter}");
        assert!(filter.contains("mcp_tools=info") && filter.contains("usecases=info"));
        assert!(!filter.contains("rmcp"));
        let filter = log_filter(None, Some("DEBUG"));
        assert!(filter.contains("mcp_tools=debug") && filter.contains("lambda_runtime=debug"));
        let filter = log_filter(None, Some("WARN"));
        // The invocation span (and so the request id) stays.
        assert!(filter.contains("usecases=warn") && filter.contains("lambda_runtime=info"));
        assert_eq!(log_filter(Some("rmcp=debug"), Some("WARN")), "rmcp=debug");
        // Whatever the filter says, these are never written.
        use tracing::Level;
        assert!(!may_log(
            "lambda_runtime::layers::api_response",
            &Level::TRACE
        ));
        assert!(may_log("lambda_runtime::runtime", &Level::DEBUG));
        assert!(!may_log("rmcp::service", &Level::DEBUG));
        assert!(!may_log(
            "aws_smithy_runtime::client::orchestrator",
            &Level::TRACE
        ));
        assert!(!may_log("hyper", &Level::DEBUG));
        assert!(may_log("rmcp::service", &Level::INFO));
        assert!(may_log("mcp_tools::tools", &Level::TRACE));
        assert!(may_log("usecases::submit", &Level::DEBUG));
        assert!(log_filter(Some(" "), None).starts_with("warn,"));
    }

    #[test]
    fn rust_log_parses_into_targets_or_falls_back_to_the_defaults_with_why() {
        use tracing::Level;
        let (targets, refused) = log_targets(None, Some("DEBUG"));
        assert!(refused.is_none());
        assert!(targets.would_enable("mcp_tools::tools", &Level::DEBUG));
        assert!(!targets.would_enable("aws_smithy_runtime", &Level::INFO));
        assert!(targets.would_enable("aws_smithy_runtime", &Level::WARN));
        let (targets, refused) = log_targets(Some("info,aws_smithy_runtime=debug"), None);
        assert!(refused.is_none());
        assert!(targets.would_enable("aws_smithy_runtime::client", &Level::DEBUG));
        assert!(targets.would_enable("hyper", &Level::INFO));
        assert!(!targets.would_enable("hyper", &Level::DEBUG));
        // A level that is none: the defaults, and why, without the value.
        let (targets, refused) = log_targets(Some("mcp_tools=loudest"), Some("WARN"));
        let refused = refused.expect("an unknown level is refused");
        assert!(
            refused.starts_with("RUST_LOG is not a list of levels"),
            "{refused}"
        );
        assert!(!refused.contains("loudest"), "{refused}");
        assert!(targets.would_enable("usecases::submit", &Level::WARN));
        assert!(!targets.would_enable("usecases::submit", &Level::INFO));
    }

    #[test]
    fn every_crate_of_the_workspace_that_logs_keeps_its_info_lines() {
        // The workspace's members, as Cargo.toml lists them, each by its crate name.
        let manifest = include_str!("../../../Cargo.toml");
        let members = manifest
            .split("members = [")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .expect("the workspace lists its members");
        let ours: Vec<String> = members
            .split(',')
            .map(|m| m.trim().trim_matches('"'))
            .filter(|m| m.starts_with("shared/") || m.starts_with("functions/"))
            .map(|m| m.rsplit('/').next().unwrap().replace('-', "_"))
            .collect();
        assert!(ours.len() >= 10, "{ours:?}");
        for krate in &ours {
            assert!(
                OUR_CRATES.contains(&krate.as_str()),
                "{krate} is not in OUR_CRATES"
            );
        }
    }

    #[test]
    fn a_function_that_cannot_start_says_why_one_line_per_mistake() {
        let error = "the tool catalog t.json is refused:\n  a: endpoint: bad\n  b: name: bad";
        assert_eq!(
            cannot_start("mcp-tools", &error),
            "mcp-tools cannot start: the tool catalog t.json is refused:\n  a: endpoint: bad\n  b: name: bad"
        );
        let missing = crate::config::ConfigError::Missing {
            name: "RESULTS_TABLE",
            expected: "a table name",
        };
        assert_eq!(
            cannot_start("notification-handler", &missing),
            "notification-handler cannot start: environment variable RESULTS_TABLE is not set (expected a table name)"
        );
    }
}
