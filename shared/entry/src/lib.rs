//! What the functions' entry points share: their configuration, read once from the environment
//! ([`config`]); their logs and metrics and the runtime loop around a handler ([`telemetry`]);
//! and the answers to an SQS batch ([`sqs_batch`]) and a DynamoDB stream batch
//! ([`stream_batch`]).

pub mod config;
pub mod sqs_batch;
pub mod stream_batch;
pub mod telemetry;
