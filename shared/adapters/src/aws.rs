//! SDK configuration. Clients come from the standard AWS configuration chain, so region,
//! credentials and `AWS_ENDPOINT_URL[_<SERVICE>]` behave as in every AWS SDK.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use ports::AwsFailure;

/// The standard chain, less what a cold start on Lambda does not need. Lambda puts the
/// function's credentials and region in the environment, so with credentials there the chain's
/// other providers are not built (its web-identity provider builds an STS client at load, and
/// with it an HTTPS connector that parses every TLS root); on Lambda no profile file is read.
pub async fn load_sdk_config() -> SdkConfig {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    config_loader(set).load().await
}

/// The loader for an environment in which `set(name)` says whether a variable is set.
fn config_loader(set: impl Fn(&str) -> bool) -> aws_config::ConfigLoader {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY") {
        loader = loader.credentials_provider(EnvironmentVariableCredentialsProvider::new());
    }
    if set("AWS_LAMBDA_FUNCTION_NAME") {
        let none = EnvConfigFiles::builder()
            .include_default_config_file(false)
            .include_default_credentials_file(false)
            .with_contents(EnvConfigFileKind::Config, "")
            .build();
        loader = loader.profile_files(none);
    }
    loader
}

/// An SDK client, built at cold start. Building one validates its configuration, which builds
/// the HTTPS connector and parses the TLS roots: Lambda runs init with a whole CPU, while a
/// 128 MB invocation gets 128/1769 of one, so that one-time work costs the first caller about
/// 14 times as long in the first invocation as in init (BENCHMARKS.md, the first answer at
/// 128 MB). Clones share the one client.
pub struct SdkClient<C>(Arc<C>);

impl<C> SdkClient<C> {
    pub fn new(client: C) -> Self {
        Self(Arc::new(client))
    }
}

impl<C> Clone for SdkClient<C> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<C> Deref for SdkClient<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.0
    }
}

impl<C> fmt::Debug for SdkClient<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SdkClient").finish_non_exhaustive()
    }
}

/// `build` applied to the configuration, now.
pub fn sdk_client<C>(sdk: &SdkConfig, build: impl FnOnce(&SdkConfig) -> C) -> SdkClient<C> {
    SdkClient::new(build(sdk))
}

/// An S3 client. With an endpoint override (an emulator), path-style addressing is used,
/// since emulators on 127.0.0.1 cannot serve virtual-hosted bucket names.
#[cfg(feature = "s3")]
pub fn s3_client(sdk: &SdkConfig) -> SdkClient<aws_sdk_s3::Client> {
    sdk_client(sdk, |sdk| {
        let overridden =
            sdk.endpoint_url().is_some() || std::env::var_os("AWS_ENDPOINT_URL_S3").is_some();
        let conf = aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(overridden)
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    })
}

pub fn dynamodb_client(sdk: &SdkConfig) -> SdkClient<aws_sdk_dynamodb::Client> {
    sdk_client(sdk, aws_sdk_dynamodb::Client::new)
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

/// The code a missing resource is read as, however the service answered.
pub const NOT_FOUND: &str = "ResourceNotFound";

/// SageMaker answers a missing resource as `ResourceNotFound`, or as a `ValidationException`
/// whose message says so ("Could not find ...", "... does not exist"; moto: "... not found"):
/// both read as `ResourceNotFound` (AWS's message kept, for the log), so a missing run or model
/// package has one answer whatever the service's shape.
pub fn not_found_either_way(failure: AwsFailure) -> AwsFailure {
    let says_missing = || {
        let message = failure.message.to_ascii_lowercase();
        ["could not find", "does not exist", "not found"]
            .iter()
            .any(|words| message.contains(words))
    };
    let missing = match failure.code.as_deref() {
        Some(NOT_FOUND) => return failure,
        Some("ValidationException" | "ValidationError") => says_missing(),
        _ => false,
    };
    match missing {
        true => AwsFailure {
            code: Some(NOT_FOUND.to_owned()),
            retryable: false,
            ambiguous: false,
            ..failure
        },
        false => failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_runtime_api::client::result::ConnectorError;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;
    use aws_smithy_types::error::ErrorMetadata;

    type Err = SdkError<ErrorMetadata, HttpResponse>;

    #[test]
    fn a_client_is_built_once_now_and_shared_by_its_clones() {
        let mut built = 0;
        let client = sdk_client(&SdkConfig::builder().build(), |_| {
            built += 1;
            String::from("client")
        });
        let clone = client.clone();
        assert_eq!(built, 1);
        assert!(std::ptr::eq(&*client, &*clone));
    }

    #[tokio::test]
    async fn on_lambda_credentials_come_from_the_environment_alone() {
        let lambda = |name: &str| {
            [
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_LAMBDA_FUNCTION_NAME",
            ]
            .contains(&name)
        };
        let sdk = config_loader(lambda)
            .region(aws_config::Region::from_static("us-east-1"))
            .load()
            .await;
        let provider = format!("{:?}", sdk.credentials_provider().expect("a provider"));
        assert!(
            provider.contains("EnvironmentVariableCredentialsProvider"),
            "{provider}"
        );
        // Elsewhere (no credentials in the environment) the whole standard chain.
        let sdk = config_loader(|_| false)
            .region(aws_config::Region::from_static("us-east-1"))
            .load()
            .await;
        let provider = format!("{:?}", sdk.credentials_provider().expect("a provider"));
        assert!(
            !provider.contains("EnvironmentVariableCredentialsProvider"),
            "{provider}"
        );
    }

    fn response(status: u16) -> HttpResponse {
        HttpResponse::new(StatusCode::try_from(status).unwrap(), SdkBody::empty())
    }

    fn service(status: u16, code: Option<&str>, message: Option<&str>) -> AwsFailure {
        let mut meta = ErrorMetadata::builder();
        if let Some(code) = code {
            meta = meta.code(code);
        }
        if let Some(message) = message {
            meta = meta.message(message);
        }
        classify(&Err::service_error(meta.build(), response(status)))
    }

    /// (code, retryable, ambiguous) of a failure.
    fn kind(f: &AwsFailure) -> (Option<&str>, bool, bool) {
        (f.code.as_deref(), f.retryable, f.ambiguous)
    }

    #[test]
    fn a_4xx_refusal_is_final_and_certain() {
        let f = service(400, Some("ValidationError"), Some("Endpoint ep not found."));
        assert_eq!(kind(&f), (Some("ValidationError"), false, false));
        assert_eq!(f.message, "Endpoint ep not found.");
        let f = service(403, Some("AccessDeniedException"), None);
        assert_eq!(kind(&f), (Some("AccessDeniedException"), false, false));
        assert_eq!(f.message, "HTTP 403", "without a message, the status");
    }

    #[test]
    fn a_429_is_retryable_but_certain() {
        let f = service(429, Some("TooManyRequests"), Some("slow down"));
        assert_eq!(kind(&f), (Some("TooManyRequests"), true, false));
    }

    #[test]
    fn a_5xx_is_retryable_and_ambiguous_whatever_its_code() {
        for (status, code) in [
            (500, Some("InternalFailure")),
            (503, Some("ServiceUnavailable")),
            (502, None),
            (500, Some("SomethingNew")),
        ] {
            let f = service(status, code, Some("boom"));
            assert_eq!(kind(&f), (code, true, true), "{status} {code:?}");
        }
    }

    #[test]
    fn throttling_codes_on_a_4xx_are_retryable_and_certain() {
        for code in RETRYABLE_CODES {
            let f = service(400, Some(code), Some("x"));
            assert_eq!(kind(&f), (Some(*code), true, false), "{code}");
        }
        let f = service(400, Some("ThrottlingExceptionX"), None);
        assert!(!f.retryable, "codes match exactly");
    }

    #[test]
    fn a_timeout_is_retryable_and_ambiguous() {
        let f = classify(&Err::timeout_error("read timed out after 3s"));
        assert_eq!(kind(&f), (None, true, true));
        assert!(
            f.message.contains("read timed out after 3s"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_dispatch_failure_is_retryable_and_ambiguous() {
        for connector in [
            ConnectorError::io("connection reset by peer".into()),
            ConnectorError::timeout("connect timed out".into()),
            ConnectorError::other("tls handshake".into(), None),
        ] {
            let f = classify(&Err::dispatch_failure(connector));
            assert_eq!(kind(&f), (None, true, true), "{}", f.message);
        }
    }

    #[test]
    fn an_unreadable_response_is_retryable_and_ambiguous() {
        let f = classify(&Err::response_error("truncated body", response(200)));
        assert_eq!(kind(&f), (None, true, true));
        assert!(f.message.contains("truncated body"), "{}", f.message);
    }

    #[test]
    fn a_request_never_built_is_final_and_certain() {
        let f = classify(&Err::construction_failure(
            "missing required field: InferenceId",
        ));
        assert_eq!(kind(&f), (None, false, false));
        assert!(f.message.contains("InferenceId"), "{}", f.message);
    }

    #[test]
    fn a_missing_resource_reads_as_not_found_in_either_shape() {
        let failure = |code: &str, message: &str| AwsFailure {
            code: Some(code.into()),
            message: message.into(),
            retryable: false,
            ambiguous: false,
        };
        for (code, message) in [
            (
                "ResourceNotFound",
                "Pipeline execution arn:x does not exist",
            ),
            (
                "ValidationException",
                "Could not find pipeline execution with PipelineExecutionArn arn:x.",
            ),
            (
                "ValidationException",
                "Could not find pipeline with PipelineName p.",
            ),
            ("ValidationException", "ModelPackage arn:x does not exist."),
            ("ValidationException", "Model package arn:x not found"),
            ("ValidationException", "could NOT FIND it"),
        ] {
            let read = not_found_either_way(failure(code, message));
            assert_eq!(read.code.as_deref(), Some(NOT_FOUND), "{code}: {message}");
            assert_eq!(read.message, message, "AWS's words kept for the log");
            assert!(!read.retryable && !read.ambiguous);
        }
        for (code, message) in [
            (
                "ValidationException",
                "1 validation error detected: Value at 'pipelineExecutionArn' failed to satisfy constraint",
            ),
            ("AccessDeniedException", "User x is not authorized; resource does not exist"),
            ("ThrottlingException", "Rate exceeded"),
        ] {
            let read = not_found_either_way(failure(code, message));
            assert_eq!(read.code.as_deref(), Some(code), "{message}: left as it was");
        }
    }
}
