// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_http::{service_fn, Error, Request};

use mcp_tools::config::McpToolsConfig;
use mcp_tools::{Deps, FrontDoor};
use shared::config::Env;
use shared::telemetry;

// One thread: Lambda hands a process one event at a time and the work waits on AWS, so worker
// threads only add start-up time and cross-thread wake-ups (BENCHMARKS.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    telemetry::init_logging();
    let config = McpToolsConfig::from_env(&Env::process())?;
    let metrics = telemetry::init_metrics("mcp-tools", &config.tools.metrics_namespace)?;
    let deps = Arc::new(Deps::connect(config.tools.clone()).await?);
    let front_door = Arc::new(FrontDoor::new(config, deps));
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
