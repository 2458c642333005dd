//! What the functions have in common: configuration, the SageMaker notification format,
//! the rules for recording job outcomes, and thin adapters over the AWS SDK.
//!
//! Everything here that decides something (parsing, state rules, what is stored inline) is a
//! plain function or works through the [`store::ResultsStore`] and [`objects::ObjectReader`]
//! traits, so it can be tested without AWS.

pub mod aws;
pub mod config;
pub mod http_guard;
pub mod jobs;
pub mod notification;
pub mod objects;
pub mod pipeline;
/// Needs the `pipeline` feature (SQS).
#[cfg(feature = "pipeline")]
pub mod pipeline_runs;
pub mod s3_location;
/// Needs the `sagemaker` feature (the SageMaker SDKs, large to build).
#[cfg(feature = "sagemaker")]
pub mod sagemaker;
pub mod store;
pub mod time;
pub mod tools;
