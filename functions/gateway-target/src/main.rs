// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::value::RawValue;

use entry::telemetry;
use gateway_target::handle;
use mcp_tools::config::ToolsConfig;
use mcp_tools::{Deps, Tools};

// One thread: Lambda hands a process one event at a time and the work waits on AWS, so worker
// threads only add start-up time and cross-thread wake-ups (BENCHMARKS.md).
const FUNCTION: &str = "gateway-target";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, metrics) =
        telemetry::start(FUNCTION, ToolsConfig::from_env, |c| &c.metrics_namespace);
    let max_body_bytes = config.max_body_bytes;
    let tools = Tools::new(Arc::new(telemetry::or_exit(
        FUNCTION,
        Deps::connect(config).await,
    )))
    .built_now();
    telemetry::run(
        metrics,
        service_fn(move |event: LambdaEvent<Box<RawValue>>| {
            handle(tools.clone(), max_body_bytes, event)
        }),
    )
    .await
}
