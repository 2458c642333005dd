//! SDK configuration. Clients come from the standard AWS configuration chain, so region,
//! credentials and `AWS_ENDPOINT_URL[_<SERVICE>]` behave as in every AWS SDK.

use aws_config::SdkConfig;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::ports::AwsFailure;

pub async fn load_sdk_config() -> SdkConfig {
    aws_config::load_from_env().await
}

/// An S3 client. With an endpoint override (an emulator), path-style addressing is used,
/// since emulators on 127.0.0.1 cannot serve virtual-hosted bucket names.
#[cfg(feature = "s3")]
pub fn s3_client(sdk: &SdkConfig) -> aws_sdk_s3::Client {
    let overridden =
        sdk.endpoint_url().is_some() || std::env::var_os("AWS_ENDPOINT_URL_S3").is_some();
    let conf = aws_sdk_s3::config::Builder::from(sdk)
        .force_path_style(overridden)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

pub fn dynamodb_client(sdk: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(sdk)
}

const RETRYABLE_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionInProgressException",
    "SlowDown",
    "RequestTimeout",
    "RequestTimeoutException",
    "PriorRequestNotComplete",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
];

pub fn classify<E>(err: &SdkError<E, HttpResponse>) -> AwsFailure
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match err {
        SdkError::ServiceError(service) => {
            let e = service.err();
            let status = service.raw().status().as_u16();
            let code = e.code().map(str::to_owned);
            let retryable = status >= 500
                || status == 429
                || code
                    .as_deref()
                    .is_some_and(|c| RETRYABLE_CODES.contains(&c));
            AwsFailure {
                message: e
                    .message()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("HTTP {status}")),
                code,
                retryable,
                // A 5xx may come after the service acted on the request.
                ambiguous: status >= 500,
            }
        }
        // The request may have been sent and acted on before the answer was lost.
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            AwsFailure {
                code: None,
                message: aws_smithy_types::error::display::DisplayErrorContext(err).to_string(),
                retryable: true,
                ambiguous: true,
            }
        }
        _ => AwsFailure {
            code: None,
            message: aws_smithy_types::error::display::DisplayErrorContext(err).to_string(),
            retryable: false,
            ambiguous: false,
        },
    }
}
