//! The AWS side of the ports: each adapter turns one port into SDK calls and SDK errors into
//! the ports' errors, so no SDK type reaches the domain or the use cases. Each SDK but
//! DynamoDB's sits behind a feature, so a function links only the SDKs it calls.

pub mod aws;
pub mod dynamodb;
#[cfg(feature = "eventbridge")]
pub mod eventbridge;
/// Outbound HTTP to what callers name: public addresses only (OAuth fetches, webhooks).
#[cfg(feature = "http")]
pub mod public_dns;
#[cfg(feature = "s3")]
pub mod s3;
#[cfg(feature = "sagemaker")]
pub mod sagemaker;
#[cfg(feature = "sagemaker-runtime")]
pub mod sagemaker_runtime;
#[cfg(feature = "sqs")]
pub mod sqs;
#[cfg(feature = "http")]
pub mod webhook;
