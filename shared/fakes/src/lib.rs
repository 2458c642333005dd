//! In-memory implementations of the ports, for fast tests of the use cases. The stores apply
//! the very same [`Write`](domain::item::Write)s the DynamoDB adapter sends, through
//! [`Write::apply_to`](domain::item::Write::apply_to), so they cannot drift from the
//! conditions; `port_contract` checks both against the same expectations.

mod events;
mod invoker;
mod jobs;
mod lineage;
mod objects;
mod outbox;
mod pipeline;
mod runs;
mod subscriptions;
mod table;

pub use events::MemoryEventLog;
pub use invoker::{FakeInvoker, InvokeFault};
pub use jobs::MemoryJobs;
pub use lineage::MemoryLineage;
pub use objects::MemoryObjects;
pub use outbox::{MemoryEvents, MemoryQueue};
pub use pipeline::FakePipeline;
pub use runs::MemoryRuns;
pub use subscriptions::{FakeWebhooks, MemoryDeliveryQueue, MemorySubscriptions};

pub mod port_contract;
