//! The MCP tools' contract: typed arguments (their JSON Schema is derived), typed results
//! (the `outputSchema`), validation, and the translation of use-case answers and errors into
//! tool results. Nothing here touches AWS. One room per tool family ([`jobs`], [`training`],
//! [`questions`], [`approval`], [`provenance`]), one for how long a call may wait ([`waits`]),
//! one for what a call does around its work ([`policy`]); what every tool shares (names,
//! bounds, the argument trait, the tool error) is here.

mod approval;
mod common;
mod dialect;
pub mod events;
pub mod events_wire;
mod jobs;
pub mod policy;
mod provenance;
mod questions;
pub mod resources;
mod training;
mod waits;

pub use approval::*;
pub use common::*;
pub use dialect::only_2020_12_formats;
pub use jobs::*;
pub use policy::{Access, Policy};
pub use provenance::*;
pub use questions::*;
pub use training::*;
pub use waits::*;

#[cfg(test)]
mod tests;
