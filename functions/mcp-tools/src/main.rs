// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_http::{service_fn, tracing, Error, Request};

use mcp_tools::{handle, mcp_service, Deps};
use shared::config::{Env, McpToolsConfig};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing::init_default_subscriber();
    let config = Arc::new(McpToolsConfig::from_env(&Env::process())?);
    let deps = Arc::new(Deps::connect(config.tools.clone()).await);
    let mcp = Arc::new(mcp_service(deps, &config.allowed_origins));
    lambda_http::run(service_fn(move |request: Request| {
        let (config, mcp) = (config.clone(), mcp.clone());
        async move { Ok::<_, std::convert::Infallible>(handle(&config, &mcp, request).await) }
    }))
    .await
}
