//! Lineage, recorded as a run goes, and the model registry it feeds: ListAssociations,
//! ListArtifacts, DescribeArtifact, DescribeModelPackage, and UpdateModelPackage's approval.
//!
//! What a run records (the shape SageMaker's own tracking gives a pipeline's training and
//! registration, reduced to one training job):
//! - when TrainModel starts: a `DataSet` artifact for InputDataUri and an `Image` artifact for
//!   the training image (one artifact per source URI, shared by runs), the training job's
//!   trial component, and both artifacts `ContributedTo` it;
//! - when TrainModel succeeds: a `Model` artifact (the job's model.tar.gz) it `Produced`;
//! - when RegisterModel succeeds: model package `<pipeline>-models/<n>` (GeneratedBy the run),
//!   the `ModelPackage` artifact whose source URI is the package's ARN, which the model and the
//!   image `ContributedTo`, and which is `AssociatedWith` its group's `ModelGroup` context.
//!
//! As SageMaker does, ListAssociations takes only experiment, trial component, artifact,
//! action and context ARNs (a model package's ARN is a ValidationException), lists newest
//! first unless SortOrder is Ascending, and pages by MaxResults (1 to 100, default 10).
//! `POST /_standin/lineage {"page_size": N}` caps every page at N on top of that (SageMaker may
//! send fewer than MaxResults with a NextToken), so a caller's pagination shows.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{json, Value};

use crate::answer::{control_error, epoch, json_response, str_field, validation, AwsError};
use crate::state::lineage::{Artifact, Association, Entity, Lineage, ModelPackage};
use crate::state::pipelines::Run;
use crate::state::{AppState, ACCOUNT};

fn arn(state: &AppState, resource: &str) -> String {
    format!(
        "arn:aws:sagemaker:{}:{ACCOUNT}:{resource}",
        state.settings.region
    )
}

/// SageMaker's pattern for the ARNs ListAssociations takes.
fn is_lineage_entity(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [scheme, partition, service, _region, account, resource] = parts[..] else {
        return false;
    };
    let kind = resource.split_once('/').map(|(kind, _)| kind);
    scheme == "arn"
        && partition.starts_with("aws")
        && service == "sagemaker"
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && matches!(
            kind,
            Some("experiment" | "experiment-trial-component" | "artifact" | "action" | "context")
        )
}

/// The artifact for `source_uri`, made when there is none yet. Here, not on `Lineage`: its ARN
/// needs the settings' region, and the records know nothing of the settings.
fn artifact(
    lineage: &mut Lineage,
    state: &AppState,
    artifact_type: &'static str,
    source_uri: &str,
) -> String {
    if let Some(a) = lineage
        .artifacts
        .iter()
        .find(|a| a.source_uri == source_uri)
    {
        return a.arn.clone();
    }
    let arn = arn(
        state,
        &format!("artifact/{}", uuid::Uuid::new_v4().simple()),
    );
    lineage.artifacts.push(Artifact {
        arn: arn.clone(),
        artifact_type,
        source_uri: source_uri.to_owned(),
        created: Utc::now(),
    });
    arn
}

fn image_uri(state: &AppState) -> String {
    format!(
        "{ACCOUNT}.dkr.ecr.{}.amazonaws.com/standin-training:1.0",
        state.settings.region
    )
}

fn execution_id(execution_arn: &str) -> &str {
    execution_arn.rsplit('/').next().unwrap_or_default()
}

fn training_job_name(execution_arn: &str) -> String {
    format!(
        "pipelines-{}-trainmodel-aws-training-job",
        execution_id(execution_arn)
    )
}

/// The training job's ARN, as TrainModel's step metadata names it.
pub fn training_job_arn(state: &AppState, execution_arn: &str) -> String {
    arn(
        state,
        &format!("training-job/{}", training_job_name(execution_arn)),
    )
}

fn trial_component(state: &AppState, execution_arn: &str) -> String {
    arn(
        state,
        &format!(
            "experiment-trial-component/{}",
            training_job_name(execution_arn)
        ),
    )
}

/// Where the run's model goes: beside its input data, in the input's bucket.
fn model_data_url(input_data_uri: &str, pipeline: &str, execution_arn: &str) -> String {
    let bucket = input_data_uri
        .strip_prefix("s3://")
        .and_then(|rest| rest.split('/').next())
        .filter(|b| !b.is_empty())
        .unwrap_or("standin-models");
    format!(
        "s3://{bucket}/pipelines/{pipeline}/{}/TrainModel/output/model.tar.gz",
        execution_id(execution_arn)
    )
}

fn pipeline_name(pipeline_arn: &str) -> &str {
    pipeline_arn.rsplit('/').next().unwrap_or("pipeline")
}

/// TrainModel started: its inputs contribute to its job.
pub fn training_started(state: &AppState, execution_arn: &str, input_data_uri: &str) {
    let mut catalog = state.catalog.lock().unwrap();
    let lineage = &mut catalog.lineage;
    let data = artifact(lineage, state, "DataSet", input_data_uri);
    let image = artifact(lineage, state, "Image", &image_uri(state));
    let job = trial_component(state, execution_arn);
    lineage.entities.insert(
        job.clone(),
        Entity {
            name: training_job_name(execution_arn),
            lineage_type: "SageMakerTrainingJob",
        },
    );
    lineage.associate(&data, &job, "ContributedTo");
    lineage.associate(&image, &job, "ContributedTo");
}

/// TrainModel succeeded: its job produced the model.
pub fn training_succeeded(state: &AppState, run: &Run, input_data_uri: &str) {
    let url = model_data_url(input_data_uri, pipeline_name(&run.pipeline_arn), &run.arn);
    let mut catalog = state.catalog.lock().unwrap();
    let lineage = &mut catalog.lineage;
    let model = artifact(lineage, state, "Model", &url);
    lineage.associate(&trial_component(state, &run.arn), &model, "Produced");
}

/// RegisterModel succeeded: the new model package's ARN.
pub fn model_registered(state: &AppState, run: &Run, input_data_uri: &str) -> String {
    let pipeline = pipeline_name(&run.pipeline_arn);
    // Group names are at most 63 characters.
    let group = format!("{}-models", &pipeline[..pipeline.len().min(56)]);
    let url = model_data_url(input_data_uri, pipeline, &run.arn);
    let mut catalog = state.catalog.lock().unwrap();
    let lineage = &mut catalog.lineage;
    let version = {
        let v = lineage.group_versions.entry(group.clone()).or_insert(0);
        *v += 1;
        *v
    };
    let package = arn(state, &format!("model-package/{group}/{version}"));
    let model = artifact(lineage, state, "Model", &url);
    let image = artifact(lineage, state, "Image", &image_uri(state));
    let package_artifact = artifact(lineage, state, "ModelPackage", &package);
    let context_name = format!("{group}-aws-model-package-group");
    let context = arn(state, &format!("context/{context_name}"));
    lineage.entities.entry(context.clone()).or_insert(Entity {
        name: context_name,
        lineage_type: "ModelGroup",
    });
    lineage.associate(&model, &package_artifact, "ContributedTo");
    lineage.associate(&image, &package_artifact, "ContributedTo");
    lineage.associate(&package_artifact, &context, "AssociatedWith");
    lineage.model_packages.push(ModelPackage {
        arn: package.clone(),
        group,
        version,
        generated_by: run.arn.clone(),
        image: image_uri(state),
        model_data_url: url,
        created: Utc::now(),
        approval_status: "PendingManualApproval".into(),
        approval_description: None,
        modified: Utc::now(),
    });
    package
}

fn max_results(input: &Value) -> Result<usize, AwsError> {
    match input.get("MaxResults").filter(|v| !v.is_null()) {
        None => Ok(10),
        Some(v) => match v.as_u64() {
            Some(n @ 1..=100) => Ok(n as usize),
            _ => Err(validation(format!(
                "1 validation error detected: Value '{v}' at 'maxResults' failed to satisfy \
                 constraint: Member must have value less than or equal to 100"
            ))),
        },
    }
}

fn offset(input: &Value) -> Result<usize, AwsError> {
    match input.get("NextToken").and_then(Value::as_str) {
        None => Ok(0),
        Some(token) => token
            .parse::<usize>()
            .map_err(|_| validation(format!("Invalid pagination token {token:?}"))),
    }
}

/// A page of `items` from the request's NextToken, with the NextToken after it.
fn page<T>(
    items: Vec<T>,
    input: &Value,
    cap: Option<usize>,
) -> Result<(Vec<T>, Option<String>), AwsError> {
    let size = max_results(input)?.min(cap.unwrap_or(usize::MAX));
    let start = offset(input)?;
    let total = items.len();
    let taken = items.into_iter().skip(start).take(size).collect();
    let next = (start + size < total).then(|| (start + size).to_string());
    Ok((taken, next))
}

fn ascending(input: &Value) -> bool {
    input.get("SortOrder").and_then(Value::as_str) == Some("Ascending")
}

pub fn list_associations(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    for (field, name) in [
        ("SourceArn", "sourceArn"),
        ("DestinationArn", "destinationArn"),
    ] {
        if let Some(arn) = input.get(field).and_then(Value::as_str) {
            if !is_lineage_entity(arn) {
                return Err(validation(format!(
                    "1 validation error detected: Value '{arn}' at '{name}' failed to satisfy \
                     constraint: Member must satisfy regular expression pattern: \
                     arn:aws[a-z\\-]*:sagemaker:[a-z0-9\\-]*:[0-9]{{12}}:(experiment|experiment-trial-component|artifact|action|context)/.*"
                )));
            }
        }
    }
    let text = |field: &str| input.get(field).and_then(Value::as_str);
    let (source, destination, kind) = (
        text("SourceArn"),
        text("DestinationArn"),
        text("AssociationType"),
    );
    let mut catalog = state.catalog.lock().unwrap();
    let lineage = &mut catalog.lineage;
    lineage.list_calls += 1;
    if input.get("NextToken").and_then(Value::as_str).is_some() {
        lineage.continued_calls += 1;
    }
    let mut matching: Vec<&Association> = lineage
        .associations
        .iter()
        .filter(|a| source.is_none_or(|s| a.source == s))
        .filter(|a| destination.is_none_or(|d| a.destination == d))
        .filter(|a| kind.is_none_or(|k| a.association_type == k))
        .collect();
    if !ascending(input) {
        matching.reverse();
    }
    let (taken, next) = page(matching, input, lineage.page_size_cap)?;
    let summaries: Vec<Value> = taken
        .iter()
        .map(|a| {
            let mut v = json!({
                "SourceArn": a.source,
                "DestinationArn": a.destination,
                "AssociationType": a.association_type,
                "CreationTime": epoch(a.created),
                "CreatedBy": {},
            });
            for (end, prefix) in [(&a.source, "Source"), (&a.destination, "Destination")] {
                let (name, kind) = lineage.name_and_type(end);
                if let Some(name) = name {
                    v[format!("{prefix}Name")] = json!(name);
                }
                if let Some(kind) = kind {
                    v[format!("{prefix}Type")] = json!(kind);
                }
            }
            v
        })
        .collect();
    let mut out = json!({"AssociationSummaries": summaries});
    if let Some(next) = next {
        out["NextToken"] = json!(next);
    }
    Ok(out)
}

pub fn list_artifacts(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let text = |field: &str| input.get(field).and_then(Value::as_str);
    let (uri, kind) = (text("SourceUri"), text("ArtifactType"));
    let catalog = state.catalog.lock().unwrap();
    let mut matching: Vec<&Artifact> = catalog
        .lineage
        .artifacts
        .iter()
        .filter(|a| uri.is_none_or(|u| a.source_uri == u))
        .filter(|a| kind.is_none_or(|k| a.artifact_type == k))
        .collect();
    if !ascending(input) {
        matching.reverse();
    }
    let (taken, next) = page(matching, input, None)?;
    let summaries: Vec<Value> = taken
        .iter()
        .map(|a| {
            json!({
                "ArtifactArn": a.arn,
                "ArtifactType": a.artifact_type,
                "Source": {"SourceUri": a.source_uri, "SourceTypes": []},
                "CreationTime": epoch(a.created),
                "LastModifiedTime": epoch(a.created),
            })
        })
        .collect();
    let mut out = json!({"ArtifactSummaries": summaries});
    if let Some(next) = next {
        out["NextToken"] = json!(next);
    }
    Ok(out)
}

pub fn describe_artifact(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let wanted = str_field(input, "ArtifactArn")?;
    let catalog = state.catalog.lock().unwrap();
    let artifact = catalog
        .lineage
        .artifacts
        .iter()
        .find(|a| a.arn == wanted)
        .ok_or_else(|| {
            AwsError(
                StatusCode::BAD_REQUEST,
                "ResourceNotFound",
                format!("Artifact {wanted} does not exist."),
            )
        })?;
    Ok(json!({
        "ArtifactArn": artifact.arn,
        "ArtifactType": artifact.artifact_type,
        "Source": {"SourceUri": artifact.source_uri, "SourceTypes": []},
        "Properties": {},
        "CreationTime": epoch(artifact.created),
        "CreatedBy": {},
        "LastModifiedTime": epoch(artifact.created),
        "LastModifiedBy": {},
    }))
}

/// By ARN or by `<group>/<version>`; SageMaker answers an unknown package with a
/// ValidationException.
pub fn describe_model_package(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let wanted = str_field(input, "ModelPackageName")?;
    let catalog = state.catalog.lock().unwrap();
    let package = catalog
        .lineage
        .model_packages
        .iter()
        .find(|p| p.arn == wanted || format!("{}/{}", p.group, p.version) == wanted)
        .ok_or_else(|| validation(format!("ModelPackage {wanted} does not exist.")))?;
    let mut described = json!({
        "ModelPackageName": package.group,
        "ModelPackageGroupName": package.group,
        "ModelPackageVersion": package.version,
        "ModelPackageArn": package.arn,
        "ModelPackageDescription": "Registered by the pipeline's RegisterModel step",
        "CreationTime": epoch(package.created),
        "InferenceSpecification": {
            "Containers": [{"Image": package.image, "ModelDataUrl": package.model_data_url}],
            "SupportedContentTypes": ["application/json"],
            "SupportedResponseMIMETypes": ["application/json"],
        },
        "ModelPackageStatus": "Completed",
        "ModelPackageStatusDetails": {"ValidationStatuses": [], "ImageScanStatuses": []},
        "CertifyForMarketplace": false,
        "ModelApprovalStatus": package.approval_status,
        "CreatedBy": {},
        "MetadataProperties": {"GeneratedBy": package.generated_by},
        "LastModifiedTime": epoch(package.modified),
    });
    // As SageMaker does: no ApprovalDescription until someone gave one.
    if let Some(description) = &package.approval_description {
        described["ApprovalDescription"] = json!(description);
    }
    Ok(described)
}

/// UpdateModelPackage's approval: `ModelApprovalStatus` one of SageMaker's three words,
/// `ApprovalDescription` at most 1024 characters; an unknown package a ValidationException.
pub fn update_model_package(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let arn = str_field(input, "ModelPackageArn")?;
    let status = input.get("ModelApprovalStatus").and_then(Value::as_str);
    if let Some(status) = status {
        if !["Approved", "Rejected", "PendingManualApproval"].contains(&status) {
            return Err(validation(format!(
                "1 validation error detected: Value '{status}' at 'modelApprovalStatus' failed to \
                 satisfy constraint: Member must satisfy enum value set: [Approved, Rejected, \
                 PendingManualApproval]"
            )));
        }
    }
    let description = input.get("ApprovalDescription").and_then(Value::as_str);
    if description.is_some_and(|d| d.chars().count() > 1024) {
        return Err(validation(
            "1 validation error detected: Value at 'approvalDescription' failed to satisfy \
             constraint: Member must have length less than or equal to 1024",
        ));
    }
    let mut catalog = state.catalog.lock().unwrap();
    let package = catalog
        .lineage
        .model_packages
        .iter_mut()
        .find(|p| p.arn == arn)
        .ok_or_else(|| validation(format!("ModelPackage {arn} does not exist.")))?;
    if let Some(status) = status {
        package.approval_status = status.to_owned();
    }
    if let Some(description) = description {
        package.approval_description = Some(description.to_owned());
    }
    package.modified = Utc::now();
    Ok(json!({ "ModelPackageArn": package.arn }))
}

fn lineage_state(state: &AppState) -> Value {
    let catalog = state.catalog.lock().unwrap();
    let lineage = &catalog.lineage;
    json!({
        "page_size": lineage.page_size_cap,
        "list_associations_calls": lineage.list_calls,
        "continued_calls": lineage.continued_calls,
    })
}

/// `POST /_standin/lineage {"page_size": N}`: no ListAssociations page holds more than N from
/// now on; `DELETE` lifts the cap; `GET` says the cap and how many ListAssociations calls were
/// answered, and how many of them continued a listing with a NextToken.
pub async fn set_lineage(State(state): State<AppState>, body: String) -> Response {
    let size = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v.get("page_size").and_then(Value::as_u64))
        .filter(|n| (1..=100).contains(n));
    let Some(size) = size else {
        return control_error(r#"the body must be {"page_size": 1 to 100}"#.into());
    };
    state.catalog.lock().unwrap().lineage.page_size_cap = Some(size as usize);
    json_response(StatusCode::OK, lineage_state(&state))
}

pub async fn reset_lineage(State(state): State<AppState>) -> Response {
    state.catalog.lock().unwrap().lineage.page_size_cap = None;
    json_response(StatusCode::OK, lineage_state(&state))
}

pub async fn get_lineage(State(state): State<AppState>) -> Response {
    json_response(StatusCode::OK, lineage_state(&state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lineage_entities_take_list_associations() {
        let p = "arn:aws:sagemaker:us-east-1:123456789012";
        for ok in [
            "artifact/x",
            "context/g",
            "action/a",
            "experiment-trial-component/t",
            "experiment/e",
        ] {
            assert!(is_lineage_entity(&format!("{p}:{ok}")), "{ok}");
        }
        for refused in [
            "model-package/g/1",
            "pipeline/p/execution/e",
            "model-package-group/g",
            "artifact",
        ] {
            assert!(!is_lineage_entity(&format!("{p}:{refused}")), "{refused}");
        }
    }

    #[test]
    fn a_model_sits_in_its_inputs_bucket() {
        let exec = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/abc";
        assert_eq!(
            model_data_url("s3://data/train/", "p", exec),
            "s3://data/pipelines/p/abc/TrainModel/output/model.tar.gz"
        );
        assert!(model_data_url("file:///x", "p", exec).starts_with("s3://standin-models/"));
    }
}
