// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_http::{service_fn, Error, Request};

use entry::telemetry;
use mcp_tools::config::McpToolsConfig;
use mcp_tools::{Deps, FrontDoor};

// One thread: Lambda hands a process one event at a time and the work waits on AWS, so worker
// threads only add start-up time and cross-thread wake-ups (BENCHMARKS.md).
const FUNCTION: &str = "mcp-tools";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, metrics) = telemetry::start(FUNCTION, McpToolsConfig::from_env, |c| {
        &c.tools.metrics_namespace
    });
    // A catalog that fails its check stops here, each mistake on a line of its own.
    let deps = Arc::new(telemetry::or_exit(
        FUNCTION,
        Deps::connect(config.tools.clone()).await,
    ));
    let front_door = Arc::new(FrontDoor::new(config, deps).built_now());
    // Streamed (the Function URL's InvokeMode is RESPONSE_STREAM): progress notifications reach
    // the client while a tool waits, not all at once when it returns. A client that leaves
    // mid-stream ends its reply, not the function.
    let handler = service_fn(move |request: Request| {
        let front_door = front_door.clone();
        async move { Ok::<_, std::convert::Infallible>(front_door.handle(request).await) }
    });
    let runtime = || lambda_http::streaming_runtime(handler.clone());
    telemetry::run_runtime_again(metrics, runtime).await
}
