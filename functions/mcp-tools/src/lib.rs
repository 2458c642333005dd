//! mcp-tools: the MCP server an agent reaches at the Function URL. Stateless: every request
//! may land on a fresh instance, so nothing but the SDK clients lives in the process.
//! `contract` holds the tools' argument and result types, `tools` the tools themselves (each
//! one use case of `shared`), `registry` every tool served as one entry (built in or from the
//! catalog), `dispatch` the one dispatch of a call on its tool's kind, `catalog` a team's tool catalog (its file, its
//! checks, its tools' definitions and arguments), `server` what every method's handler shares,
//! `task_form` a tool call answered as a task, `tasks` the task methods, `listen` a listen
//! naming tasks, `resources` a job's output as an MCP resource, `listing` the list results and their caching hints, `handler` the MCP server over
//! all of them, `trace_context` a call's W3C trace, `deps` what they run on (settings, ports,
//! clock, catalog), `direct` a tool call without HTTP (for other front doors, such as an
//! AgentCore Gateway target), and `front_door` the HTTP front door (paths, hosts, the one parse
//! of the body) and `auth` who the caller is, by auth mode.

pub mod arguments;
pub mod auth;
pub mod catalog;
pub mod config;
pub mod contract;
mod deadline;
pub mod deps;
pub mod direct;
mod dispatch;
mod events;
mod events_stream;
pub mod front_door;
mod handler;
pub mod http_guard;
pub mod listen;
mod listing;
pub mod progress;
mod registry;
pub mod request_body;
mod resources;
mod server;
mod task_form;
pub mod tasks;
pub mod tools;
#[cfg(test)]
mod tools_tests;
pub mod trace_context;
pub mod wording;

pub use deps::{AwsPorts, Backend, Deps, Ports};
pub use front_door::{mcp_service, FrontDoor, HttpResponse, McpService, MAX_REQUEST_BODY_BYTES};
pub use tools::Tools;

/// Every tool as `tools/list` declares it, whatever ports the tools run on.
pub fn tool_definitions() -> Vec<rmcp::model::Tool> {
    Tools::<AwsPorts>::definitions()
}

/// Every tool a deployment with `catalog` serves, as `tools/list` declares it.
pub fn catalog_tool_definitions(catalog: &catalog::Catalog) -> Vec<rmcp::model::Tool> {
    Tools::<AwsPorts>::definitions_with(catalog)
}
