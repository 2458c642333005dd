//! Endpoint configurations and endpoints: CreateEndpointConfig, DescribeEndpointConfig,
//! CreateEndpoint, DescribeEndpoint, UpdateEndpoint. What the wiring command and the doctor
//! read and write; the checks are the ones SageMaker makes that a caller could get wrong (an
//! existing name, an unknown config, an update while one is in progress, a malformed
//! AsyncInferenceConfig). An endpoint is `Creating` or `Updating` for one pipeline step's time,
//! then `InService` (with the new config, after an update).

use chrono::Utc;
use serde_json::{json, Value};

use crate::answer::{epoch, str_field, validation, AwsError};
use crate::state::endpoints::{Endpoint, EndpointConfig, EndpointStatus};
use crate::state::{AppState, ACCOUNT};

/// The CreateEndpointConfig fields DescribeEndpointConfig gives back (Tags are not).
const CONFIG_FIELDS: [&str; 10] = [
    "ProductionVariants",
    "DataCaptureConfig",
    "KmsKeyId",
    "AsyncInferenceConfig",
    "ExplainerConfig",
    "ShadowProductionVariants",
    "ExecutionRoleArn",
    "VpcConfig",
    "EnableNetworkIsolation",
    "MetricsConfig",
];
const TOPIC_TYPES: [&str; 2] = ["SUCCESS_NOTIFICATION_TOPIC", "ERROR_NOTIFICATION_TOPIC"];

fn arn(state: &AppState, kind: &str, name: &str) -> String {
    format!(
        "arn:aws:sagemaker:{}:{ACCOUNT}:{kind}/{}",
        state.settings.region,
        name.to_lowercase()
    )
}

/// SageMaker's name rule for endpoints, configs and variants: `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`.
fn check_name(field: &str, name: &str) -> Result<(), AwsError> {
    let ok = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if ok {
        return Ok(());
    }
    Err(validation(format!(
        "1 validation error detected: Value '{name}' at '{field}' failed to satisfy constraint: \
         Member must satisfy regular expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){{0,62}}"
    )))
}

fn not_found(what: &str, name: &str) -> AwsError {
    validation(format!("Could not find {what} \"{name}\"."))
}

fn check_variants(input: &Value) -> Result<(), AwsError> {
    let variants = input
        .get("ProductionVariants")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            validation("1 validation error detected: ProductionVariants must not be null")
        })?;
    for variant in variants {
        let name = variant
            .get("VariantName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        check_name("ProductionVariants.member.VariantName", name)?;
    }
    Ok(())
}

fn check_s3_uri(field: &str, value: Option<&Value>) -> Result<(), AwsError> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if s.starts_with("s3://") && s.len() > "s3://".len() => Ok(()),
        Some(other) => Err(validation(format!(
            "1 validation error detected: Value {other} at '{field}' failed to satisfy \
             constraint: Member must satisfy regular expression pattern: (https|s3)://([^/])/?(.*)"
        ))),
    }
}

fn check_async_config(input: &Value) -> Result<(), AwsError> {
    let Some(config) = input.get("AsyncInferenceConfig").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let output = config
        .get("OutputConfig")
        .filter(|v| v.is_object())
        .ok_or_else(|| {
            validation(
                "1 validation error detected: AsyncInferenceConfig.OutputConfig must not be null",
            )
        })?;
    check_s3_uri(
        "AsyncInferenceConfig.OutputConfig.S3OutputPath",
        output.get("S3OutputPath"),
    )?;
    check_s3_uri(
        "AsyncInferenceConfig.OutputConfig.S3FailurePath",
        output.get("S3FailurePath"),
    )?;
    let notification = output.get("NotificationConfig");
    for topic in ["SuccessTopic", "ErrorTopic"] {
        if let Some(t) = notification
            .and_then(|n| n.get(topic))
            .filter(|v| !v.is_null())
        {
            if !t
                .as_str()
                .is_some_and(|s| s.starts_with("arn:aws") && s.contains(":sns:"))
            {
                return Err(validation(format!(
                    "1 validation error detected: Value {t} at \
                     'AsyncInferenceConfig.OutputConfig.NotificationConfig.{topic}' failed to \
                     satisfy constraint: Member must be an SNS topic ARN"
                )));
            }
        }
    }
    let include = notification
        .and_then(|n| n.get("IncludeInferenceResponseIn"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for value in include {
        if !value.as_str().is_some_and(|v| TOPIC_TYPES.contains(&v)) {
            return Err(validation(format!(
                "1 validation error detected: Value {value} at \
                 'AsyncInferenceConfig.OutputConfig.NotificationConfig.IncludeInferenceResponseIn' \
                 failed to satisfy constraint: Member must satisfy enum value set: [{}]",
                TOPIC_TYPES.join(", ")
            )));
        }
    }
    Ok(())
}

pub fn create_config(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let name = str_field(input, "EndpointConfigName")?;
    check_name("EndpointConfigName", name)?;
    check_variants(input)?;
    check_async_config(input)?;
    let arn = arn(state, "endpoint-config", name);
    let mut catalog = state.catalog.lock().unwrap();
    if catalog.endpoint_configs.contains_key(name) {
        return Err(validation(format!(
            "Cannot create already existing endpoint configuration \"{arn}\"."
        )));
    }
    let fields = CONFIG_FIELDS
        .iter()
        .filter_map(|f| {
            Some((
                f.to_string(),
                input.get(*f).filter(|v| !v.is_null())?.clone(),
            ))
        })
        .collect();
    catalog.endpoint_configs.insert(
        name.to_owned(),
        EndpointConfig {
            name: name.to_owned(),
            arn: arn.clone(),
            fields,
            created: Utc::now(),
        },
    );
    Ok(json!({ "EndpointConfigArn": arn }))
}

fn find_config(state: &AppState, name: &str) -> Result<EndpointConfig, AwsError> {
    state
        .catalog
        .lock()
        .unwrap()
        .endpoint_configs
        .get(name)
        .cloned()
        .ok_or_else(|| not_found("endpoint configuration", name))
}

pub fn describe_config(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let config = find_config(state, str_field(input, "EndpointConfigName")?)?;
    let mut out = Value::Object(config.fields);
    out["EndpointConfigName"] = json!(config.name);
    out["EndpointConfigArn"] = json!(config.arn);
    out["CreationTime"] = json!(epoch(config.created));
    Ok(out)
}

pub fn create_endpoint(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let name = str_field(input, "EndpointName")?;
    check_name("EndpointName", name)?;
    let config_name = str_field(input, "EndpointConfigName")?;
    find_config(state, config_name)?;
    let arn = arn(state, "endpoint", name);
    {
        let mut catalog = state.catalog.lock().unwrap();
        if catalog.endpoints.contains_key(name) {
            return Err(validation(format!(
                "Cannot create already existing endpoint \"{arn}\"."
            )));
        }
        let now = Utc::now();
        catalog.endpoints.insert(
            name.to_owned(),
            Endpoint {
                name: name.to_owned(),
                arn: arn.clone(),
                config_name: config_name.to_owned(),
                status: EndpointStatus::Creating,
                created: now,
                modified: now,
            },
        );
    }
    tokio::spawn(settle(
        state.clone(),
        name.to_owned(),
        config_name.to_owned(),
        state.step_duration(),
    ));
    Ok(json!({ "EndpointArn": arn }))
}

pub fn update_endpoint(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let name = str_field(input, "EndpointName")?;
    let config_name = str_field(input, "EndpointConfigName")?;
    find_config(state, config_name)?;
    let arn = {
        let mut catalog = state.catalog.lock().unwrap();
        let endpoint = catalog
            .endpoints
            .get_mut(name)
            .ok_or_else(|| not_found("endpoint", name))?;
        if endpoint.status != EndpointStatus::InService {
            return Err(validation(format!(
                "Cannot update in-progress endpoint \"{}\".",
                endpoint.arn
            )));
        }
        endpoint.status = EndpointStatus::Updating;
        endpoint.modified = Utc::now();
        endpoint.arn.clone()
    };
    tokio::spawn(settle(
        state.clone(),
        name.to_owned(),
        config_name.to_owned(),
        state.step_duration(),
    ));
    Ok(json!({ "EndpointArn": arn }))
}

/// A create or update finishing: after `step` (the step's time when the call came, not when this
/// task first runs, which may be after a test restored the default) the endpoint serves
/// `config_name`.
async fn settle(state: AppState, name: String, config_name: String, step: std::time::Duration) {
    tokio::time::sleep(step).await;
    let mut catalog = state.catalog.lock().unwrap();
    if let Some(endpoint) = catalog.endpoints.get_mut(&name) {
        endpoint.config_name = config_name;
        endpoint.status = EndpointStatus::InService;
        endpoint.modified = Utc::now();
    }
}

pub fn describe_endpoint(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let name = str_field(input, "EndpointName")?;
    let endpoint = state
        .catalog
        .lock()
        .unwrap()
        .endpoints
        .get(name)
        .cloned()
        .ok_or_else(|| not_found("endpoint", name))?;
    let config = find_config(state, &endpoint.config_name)?;
    let in_service = endpoint.status == EndpointStatus::InService;
    let variants: Vec<Value> = config
        .fields
        .get("ProductionVariants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            let count = v.get("InitialInstanceCount").cloned().unwrap_or(json!(1));
            let weight = v.get("InitialVariantWeight").cloned().unwrap_or(json!(1.0));
            json!({
                "VariantName": v.get("VariantName"),
                "CurrentWeight": weight, "DesiredWeight": weight,
                "CurrentInstanceCount": if in_service { count.clone() } else { json!(0) },
                "DesiredInstanceCount": count,
            })
        })
        .collect();
    let mut out = json!({
        "EndpointName": endpoint.name,
        "EndpointArn": endpoint.arn,
        "EndpointConfigName": endpoint.config_name,
        "ProductionVariants": variants,
        "EndpointStatus": endpoint.status,
        "CreationTime": epoch(endpoint.created),
        "LastModifiedTime": epoch(endpoint.modified),
    });
    if let Some(async_config) = config.fields.get("AsyncInferenceConfig") {
        out["AsyncInferenceConfig"] = async_config.clone();
    }
    Ok(out)
}

/// The AsyncInferenceConfig an existing endpoint currently serves, for the runtime.
pub fn serving_async_config(state: &AppState, endpoint: &str) -> Option<Value> {
    let catalog = state.catalog.lock().unwrap();
    let endpoint = catalog.endpoints.get(endpoint)?;
    catalog
        .endpoint_configs
        .get(&endpoint.config_name)?
        .fields
        .get("AsyncInferenceConfig")
        .cloned()
}
