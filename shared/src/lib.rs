//! What the functions have in common, in layers:
//! - [`domain`]: pure. Statuses, records, the state transitions as conditional writes, and the
//!   parsing of SageMaker's notifications and EventBridge's events.
//! - [`ports`]: the small traits the use cases need, with their errors.
//! - [`usecases`]: record an outcome, route a run, submit, check, trigger and read runs;
//!   generic over the ports.
//! - [`adapters`]: the ports over the AWS SDK (DynamoDB, S3; SageMaker and SQS behind features,
//!   so each function links only the SDKs it calls).
//! - `fakes` and `port_contract` (feature `testing`, and in this crate's tests): in-memory
//!   ports, and the one behaviour both they and the adapters must show.
//!
//! Imports go one way: adapters and use cases → ports → domain.

pub mod adapters;
pub mod config;
pub mod domain;
#[cfg(any(test, feature = "testing"))]
pub mod fakes;
#[cfg(any(test, feature = "testing"))]
pub mod port_contract;
pub mod ports;
pub mod sqs_batch;
pub mod telemetry;
pub mod usecases;
pub mod util;
