//! get_model_provenance: its arguments, results and errors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::ToolsConfig;

use super::common::*;
use crate::wording;
use domain::caller::Caller;
use domain::lineage::{Direction, EntityKind};
use usecases::lineage::{Described, Found, Provenance, ProvenanceError, ProvenanceRequest};

pub const MAX_DEPTH: Bounds<u32> = Bounds {
    name: "max_depth",
    min: 1,
    max: 3,
    default: Some(2),
};

/// Which way to walk from the model package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum ProvenanceDirection {
    #[default]
    Upstream,
    Downstream,
}

impl From<ProvenanceDirection> for Direction {
    fn from(d: ProvenanceDirection) -> Self {
        match d {
            ProvenanceDirection::Upstream => Direction::Upstream,
            ProvenanceDirection::Downstream => Direction::Downstream,
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetModelProvenanceArgs {
    /// The model package's ARN, as `check_training_status` reports it in `model_package_arn`:
    /// `arn:aws:sagemaker:<region>:<account>:model-package/<group>/<version>`.
    pub model_package_arn: String,
    /// `upstream` (the default): what built the model, such as its training job, data and image.
    /// `downstream`: what it went on to feed, such as its model group and deployments.
    pub direction: Option<ProvenanceDirection>,
    #[schemars(
        range(min = MAX_DEPTH.min, max = MAX_DEPTH.max),
        description = MAX_DEPTH.describe(
            "How many associations away from the model package to walk ({range})."
        )
    )]
    pub max_depth: Option<u32>,
}

impl ToolArgs for GetModelProvenanceArgs {
    type Valid = ProvenanceRequest;

    fn validate(
        self,
        _config: &ToolsConfig,
        _caller: &Caller,
    ) -> Result<ProvenanceRequest, ToolError> {
        Ok(ProvenanceRequest {
            model_package_arn: model_package_arn_argument(&self.model_package_arn)?,
            direction: self.direction.unwrap_or_default().into(),
            max_depth: MAX_DEPTH.value(self.max_depth)?,
        })
    }

    fn trace(valid: &ProvenanceRequest, span: &tracing::Span) {
        span.record("model_package_arn", valid.model_package_arn.as_str());
    }

    fn place(valid: &ProvenanceRequest) -> Option<Place<'_>> {
        let unknown = |arn: &str| ToolError::invalid(wording::model_package_not_found(arn));
        Some(Place {
            arn: &valid.model_package_arn,
            is_run: false,
            unknown,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelProvenanceOutput {
    /// The model package asked about, as DescribeModelPackage says it.
    pub root: ProvenanceRoot,
    /// `upstream` or `downstream`, as walked.
    pub direction: String,
    pub max_depth: u32,
    /// The lineage entities found, nearest first, each once.
    pub nodes: Vec<ProvenanceNode>,
    /// The associations found, each from its source to its destination.
    /// They join the nodes to each other and to the package's lineage artifact (`root.lineage_arns`).
    pub edges: Vec<ProvenanceEdge>,
    /// True when the walk stopped at its limits (50 entities, 25 pages of associations).
    /// There was more left to read: ask again with a smaller `max_depth`.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceRoot {
    pub arn: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// Pending, InProgress, Completed, Failed or Deleting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Approved, Rejected or PendingManualApproval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// What made the package, as it says itself (`MetadataProperties.GeneratedBy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_by: Option<String>,
    /// The pipeline run that made it, when `generated_by` is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_execution: Option<ExecutionView>,
    /// The lineage artifacts that stand for the package (their source URI is its ARN).
    /// The walk starts from them.
    pub lineage_arns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionView {
    pub execution_arn: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The session that triggered the run, shown only to the caller who triggered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why the run could not be described.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_described: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceNode {
    pub arn: String,
    /// `artifact`, `action`, `context`, `trial_component`, `experiment`, `model_package`, `pipeline_execution`.
    /// Or another SageMaker resource type, as its ARN spells it.
    pub kind: String,
    /// Associations away from the model package.
    pub depth: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The entity's type as its association gives it: `Model`, `SageMakerTrainingJob`, `ModelGroup`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineage_type: Option<String>,
    /// An artifact's type (DescribeArtifact): `DataSet`, `Model`, `Image`, `ModelPackage`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// What an artifact stands for: an S3 URI, an image, a model package's ARN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_uri: Option<String>,
    /// A pipeline execution's pipeline (DescribePipelineExecution).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_name: Option<String>,
    /// A pipeline execution's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The session that triggered a pipeline execution, shown only to the caller who triggered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why the entity could not be described; it is shown with what its association said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_described: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceEdge {
    pub source_arn: String,
    pub destination_arn: String,
    /// ContributedTo, AssociatedWith, DerivedFrom, Produced or SameAs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub association_type: Option<String>,
}

impl ExecutionView {
    fn new(execution_arn: String, described: Described) -> Self {
        let mut view = ExecutionView {
            execution_arn,
            pipeline_name: None,
            status: None,
            failure_reason: None,
            session_id: None,
            not_described: None,
        };
        match described {
            Described::PipelineExecution(run) => {
                view.pipeline_name = run.pipeline_name;
                view.status = Some(run.status);
                view.failure_reason = run.failure_reason;
                view.session_id = run.session_id;
            }
            Described::Failed { operation, failure } => {
                view.not_described = Some(wording::not_described(operation, &failure));
            }
            Described::Artifact(_) | Described::FromAssociation => {}
        }
        view
    }
}

impl From<Found> for ProvenanceNode {
    fn from(found: Found) -> Self {
        let Found { entity, described } = found;
        let mut node = ProvenanceNode {
            arn: entity.arn,
            kind: entity
                .kind
                .as_ref()
                .map_or("other", EntityKind::as_str)
                .to_owned(),
            depth: entity.depth,
            name: entity.name,
            lineage_type: entity.lineage_type,
            artifact_type: None,
            source_uri: None,
            pipeline_name: None,
            status: None,
            session_id: None,
            not_described: None,
        };
        match described {
            Described::Artifact(artifact) => {
                node.name = artifact.name.or(node.name);
                node.artifact_type = artifact.artifact_type;
                node.source_uri = artifact.source_uri;
            }
            Described::PipelineExecution(run) => {
                node.pipeline_name = run.pipeline_name;
                node.status = Some(run.status);
                node.session_id = run.session_id;
            }
            Described::Failed { operation, failure } => {
                node.not_described = Some(wording::not_described(operation, &failure));
            }
            Described::FromAssociation => {}
        }
        node
    }
}

impl ModelProvenanceOutput {
    pub fn new(found: Provenance, request: &ProvenanceRequest) -> Self {
        let message = wording::provenance_note(
            request.direction,
            !found.lineage_arns.is_empty(),
            found.found.len(),
            found.truncated,
        );
        let package = found.model_package;
        ModelProvenanceOutput {
            root: ProvenanceRoot {
                arn: package.arn,
                group_name: package.group_name,
                version: package.version,
                status: package.status,
                approval_status: package.approval_status,
                created_at: package.created_at,
                generated_by: package.generated_by,
                pipeline_execution: found
                    .generated_by
                    .map(|(arn, described)| ExecutionView::new(arn, described)),
                lineage_arns: found.lineage_arns,
            },
            direction: request.direction.as_str().to_owned(),
            max_depth: request.max_depth,
            nodes: found.found.into_iter().map(ProvenanceNode::from).collect(),
            edges: found
                .edges
                .into_iter()
                .map(|e| ProvenanceEdge {
                    source_arn: e.source_arn,
                    destination_arn: e.destination_arn,
                    association_type: e.association_type,
                })
                .collect(),
            truncated: found.truncated,
            message,
        }
    }
}

impl From<ProvenanceError> for ToolError {
    fn from(e: ProvenanceError) -> Self {
        match e {
            ProvenanceError::NotFound { arn } => {
                ToolError::invalid(wording::model_package_not_found(&arn))
            }
            ProvenanceError::Aws { operation, failure } => {
                ToolError::aws(&format!("SageMaker {operation}"), &failure)
            }
        }
    }
}
