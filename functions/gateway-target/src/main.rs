// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};
use serde_json::Value;

use gateway_target::handle;
use mcp_tools::{Deps, Tools};
use shared::config::{Env, ToolsConfig};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing::init_default_subscriber();
    let config = ToolsConfig::from_env(&Env::process())?;
    let tools = Tools::new(Arc::new(Deps::connect(config).await));
    run(service_fn(move |event: LambdaEvent<Value>| {
        handle(tools.clone(), event)
    }))
    .await
}
