//! Model provenance: a model package, what made it, and its lineage in one direction, walked
//! breadth first to a depth with bounded work (see [`domain::lineage`]).
//!
//! Provenance follows ownership: a model package made by a run of these tools (its
//! `GeneratedBy`, or any pipeline execution in the lineage walked, carries an owner tag) is
//! its owner's alone; to anyone else it is exactly an unknown ARN. A package made outside the
//! tools (no owner tag anywhere) answers to any caller. The owner tag itself is never shown.

use domain::caller::Caller;
use domain::lineage::{self, Describe, Direction, Edge, Entity, EntityKind, Limits, Walk};
use domain::pipeline_event::{owner_from_description, session_id_from_description};
use ports::{
    ArtifactDescription, AwsFailure, LineageGraph, ModelPackageDescription, PipelineControl,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenanceRequest {
    pub model_package_arn: String,
    pub direction: Direction,
    /// 1 to 3.
    pub max_depth: u32,
}

/// A pipeline execution, as DescribePipelineExecution says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionSummary {
    pub pipeline_name: Option<String>,
    pub status: String,
    pub failure_reason: Option<String>,
    /// The session that triggered it, when the run is the caller's.
    pub session_id: Option<String>,
}

/// What describes an entity beyond its association.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Described {
    Artifact(ArtifactDescription),
    PipelineExecution(ExecutionSummary),
    /// Its ARN's kind and its association's name and type say what it is.
    FromAssociation,
    /// The describing call failed; the entity stays in the answer without it.
    Failed {
        operation: &'static str,
        failure: AwsFailure,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub entity: Entity,
    pub described: Described,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    pub model_package: ModelPackageDescription,
    /// The pipeline execution the package's `GeneratedBy` names, described.
    pub generated_by: Option<(String, Described)>,
    /// The artifacts that stand for the package in lineage: where the walk starts.
    pub lineage_arns: Vec<String>,
    pub found: Vec<Found>,
    pub edges: Vec<Edge>,
    /// The walk stopped at its limits with more left to read.
    pub truncated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    /// DescribeModelPackage knows no such package.
    #[error(
        "no model package {} (unknown, or not the caller's to see)",
        domain::util::quote(arn)
    )]
    NotFound { arn: String },
    #[error("SageMaker {operation} failed: {failure}")]
    Aws {
        operation: &'static str,
        failure: AwsFailure,
    },
}

fn aws(operation: &'static str) -> impl FnOnce(AwsFailure) -> ProvenanceError {
    move |failure| ProvenanceError::Aws { operation, failure }
}

/// SageMaker answers an unknown model package with a ValidationException (and some
/// describes with ResourceNotFound). A package the tools' role may not read is answered as
/// unknown too: AWS's refusal would name the role and the account.
pub(crate) fn is_unknown(failure: &AwsFailure) -> bool {
    matches!(
        failure.code.as_deref(),
        Some("ValidationException" | "ResourceNotFound" | "AccessDeniedException" | "AccessDenied")
    )
}

/// Whose a pipeline execution is, by the owner tag in its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Maker {
    /// No owner tag: not started by these tools.
    Untagged,
    TheCaller,
    Another,
    /// It could not be described, so whose it is cannot be told.
    Unknown,
}

/// The model package, its maker, and its lineage `request.direction` to `request.max_depth`.
/// A refused lineage call is an error; a refused describe of one entity is noted on it.
pub async fn model_provenance<L, P>(
    lineage: &L,
    pipeline: &P,
    caller: &Caller,
    request: &ProvenanceRequest,
) -> Result<Provenance, ProvenanceError>
where
    L: LineageGraph,
    P: PipelineControl,
{
    let arn = &request.model_package_arn;
    let not_found = || ProvenanceError::NotFound { arn: arn.clone() };
    let model_package = match lineage.describe_model_package(arn).await {
        Ok(described) => described,
        Err(failure) if is_unknown(&failure) => {
            tracing::info!(%failure, "model package answered as unknown");
            return Err(not_found());
        }
        Err(failure) => return Err(aws("DescribeModelPackage")(failure)),
    };
    let generated_by = match model_package.generated_by.as_deref() {
        Some(maker) if EntityKind::of_arn(maker) == Some(EntityKind::PipelineExecution) => {
            let (described, whose) = describe_execution(pipeline, caller, maker).await;
            if !matches!(whose, Maker::Untagged | Maker::TheCaller) {
                // Another caller's run made it, or whose run it is cannot be told.
                return Err(not_found());
            }
            Some((maker.to_owned(), described))
        }
        _ => None,
    };
    let lineage_arns = lineage
        .artifacts_with_source(&model_package.arn)
        .await
        .map_err(aws("ListArtifacts"))?;
    let mut walk = Walk::new(
        &lineage_arns,
        request.direction,
        Limits::to_depth(request.max_depth),
    );
    while let Some(listing) = walk.next_listing() {
        let mut next_token: Option<String> = None;
        while walk.take_page() {
            let page = lineage
                .associations(&listing.arn, request.direction, next_token.as_deref())
                .await
                .map_err(aws("ListAssociations"))?;
            walk.record(&listing, &page.associations);
            if !walk.wants_next_page(page.next_token.as_deref()) {
                break;
            }
            next_token = page.next_token;
        }
    }
    let graph = walk.finish();
    let mut found = Vec::with_capacity(graph.entities.len());
    for entity in graph.entities {
        let (described, whose) = describe(lineage, pipeline, caller, &entity).await;
        if matches!(whose, Maker::Another | Maker::Unknown) {
            // A run in its lineage is another caller's (or cannot be told): the package, and
            // all it leads to, is not this caller's to see.
            return Err(not_found());
        }
        found.push(Found { entity, described });
    }
    Ok(Provenance {
        model_package,
        generated_by,
        lineage_arns,
        found,
        edges: graph.edges,
        truncated: graph.truncated,
    })
}

async fn describe<L: LineageGraph, P: PipelineControl>(
    lineage: &L,
    pipeline: &P,
    caller: &Caller,
    entity: &Entity,
) -> (Described, Maker) {
    match entity.kind.as_ref().map(EntityKind::describe) {
        Some(Describe::Artifact) => match lineage.describe_artifact(&entity.arn).await {
            Ok(artifact) => (Described::Artifact(artifact), Maker::Untagged),
            Err(failure) => (
                Described::Failed {
                    operation: "DescribeArtifact",
                    failure,
                },
                Maker::Untagged,
            ),
        },
        Some(Describe::PipelineExecution) => {
            describe_execution(pipeline, caller, &entity.arn).await
        }
        Some(Describe::FromAssociation) | None => (Described::FromAssociation, Maker::Untagged),
    }
}

async fn describe_execution<P: PipelineControl>(
    pipeline: &P,
    caller: &Caller,
    execution_arn: &str,
) -> (Described, Maker) {
    match pipeline.describe(execution_arn).await {
        Ok(described) => {
            let description = described.description.as_deref().unwrap_or_default();
            let whose = match owner_from_description(description) {
                None => Maker::Untagged,
                Some(owner) if caller.owns(Some(&owner)) => Maker::TheCaller,
                Some(_) => Maker::Another,
            };
            let session_id = (whose == Maker::TheCaller)
                .then(|| session_id_from_description(description))
                .flatten();
            let summary = ExecutionSummary {
                pipeline_name: lineage::pipeline_of_execution(execution_arn).map(str::to_owned),
                status: described.status.as_str().to_owned(),
                failure_reason: described.failure_reason,
                session_id,
            };
            (Described::PipelineExecution(summary), whose)
        }
        Err(failure) => {
            tracing::warn!(%failure, "a pipeline execution in the lineage could not be described");
            let failed = Described::Failed {
                operation: "DescribePipelineExecution",
                failure,
            };
            (failed, Maker::Unknown)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::caller::Principal;
    use domain::pipeline_event::execution_description;
    use fakes::{FakePipeline, MemoryLineage};
    use ports::StartRequest;

    fn local() -> Caller {
        Principal::Local.caller()
    }

    /// `caller`'s walk from the package `arn` in `direction`, to `max_depth`.
    async fn walk<L: LineageGraph, P: PipelineControl>(
        lineage: &L,
        pipeline: &P,
        caller: &Caller,
        arn: &str,
        direction: Direction,
        max_depth: u32,
    ) -> Result<Provenance, ProvenanceError> {
        model_provenance(
            lineage,
            pipeline,
            caller,
            &request(arn, direction, max_depth),
        )
        .await
    }

    /// The local caller's walk upstream from `arn`, to `max_depth`.
    async fn upstream<L: LineageGraph, P: PipelineControl>(
        lineage: &L,
        pipeline: &P,
        arn: &str,
        max_depth: u32,
    ) -> Result<Provenance, ProvenanceError> {
        walk(
            lineage,
            pipeline,
            &local(),
            arn,
            Direction::Upstream,
            max_depth,
        )
        .await
    }

    fn request(arn: &str, direction: Direction, max_depth: u32) -> ProvenanceRequest {
        ProvenanceRequest {
            model_package_arn: arn.to_owned(),
            direction,
            max_depth,
        }
    }

    /// A run started as trigger_training starts one (session `s-1`, the local caller's), that
    /// registered a model: its execution ARN and model package ARN.
    async fn registered(pipeline: &FakePipeline, lineage: &MemoryLineage) -> (String, String) {
        let description = execution_description("s-1", &local().owner, chrono::Utc::now());
        let parameters = vec![("InputDataUri".into(), "s3://b/train/".into())];
        registered_by(pipeline, lineage, description, parameters).await
    }

    /// A run started with `description` and `parameters`, that registered a model.
    async fn registered_by(
        pipeline: &FakePipeline,
        lineage: &MemoryLineage,
        description: String,
        parameters: Vec<(String, String)>,
    ) -> (String, String) {
        let execution = pipeline
            .start(&StartRequest {
                pipeline_name: "p".into(),
                description,
                parameters,
                client_request_token: uuid::Uuid::new_v4().simple().to_string(),
                max_parallel_steps: None,
            })
            .await
            .unwrap();
        let package = lineage.register_model(&execution, "s3://b/train/");
        pipeline.succeed_with_model(&execution, &package);
        (execution, package)
    }

    fn kinds(p: &Provenance) -> Vec<(String, u32)> {
        p.found
            .iter()
            .map(|f| {
                let kind = f.entity.kind.as_ref().map_or("?", EntityKind::as_str);
                let what = match &f.described {
                    Described::Artifact(a) => a.artifact_type.clone().unwrap_or_default(),
                    _ => f.entity.lineage_type.clone().unwrap_or_default(),
                };
                (format!("{kind}:{what}"), f.entity.depth)
            })
            .collect()
    }

    #[tokio::test]
    async fn upstream_is_what_built_the_model_to_the_depth_asked() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        let (execution, package) = registered(&pipeline, &lineage).await;
        let two = upstream(&lineage, &pipeline, &package, 2).await.unwrap();
        assert_eq!(two.model_package.group_name.as_deref(), Some("p-models"));
        assert_eq!(two.lineage_arns.len(), 1);
        let mut found = kinds(&two);
        found.sort();
        assert_eq!(
            found,
            [
                ("artifact:Image".to_owned(), 1),
                ("artifact:Model".to_owned(), 1),
                ("trial_component:SageMakerTrainingJob".to_owned(), 2)
            ]
        );
        assert_eq!(two.edges.len(), 3);
        assert!(!two.truncated);
        let Some((maker, Described::PipelineExecution(run))) = &two.generated_by else {
            panic!("{:?}", two.generated_by);
        };
        assert_eq!(maker, &execution);
        assert_eq!(run.pipeline_name.as_deref(), Some("p"));
        assert_eq!(run.status, "Succeeded");
        assert_eq!(run.session_id.as_deref(), Some("s-1"));

        let three = upstream(&lineage, &pipeline, &package, 3).await.unwrap();
        let data = three
            .found
            .iter()
            .find(|f| matches!(&f.described, Described::Artifact(a) if a.artifact_type.as_deref() == Some("DataSet")))
            .expect("the training data, three steps up");
        assert_eq!(data.entity.depth, 3);
        assert_eq!(
            three.found.len(),
            4,
            "the image is reached twice, kept once"
        );
        assert_eq!(three.edges.len(), 5, "both of the image's edges");
        let one = upstream(&lineage, &pipeline, &package, 1).await.unwrap();
        assert_eq!(one.found.len(), 2);
    }

    #[tokio::test]
    async fn downstream_is_what_the_model_went_on_to_feed() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        let (_, package) = registered(&pipeline, &lineage).await;
        let down = walk(
            &lineage,
            &pipeline,
            &local(),
            &package,
            Direction::Downstream,
            2,
        )
        .await
        .unwrap();
        assert_eq!(kinds(&down), [("context:ModelGroup".to_owned(), 1)]);
        assert_eq!(
            down.edges[0].association_type.as_deref(),
            Some("AssociatedWith")
        );
        assert_eq!(down.edges[0].source_arn, down.lineage_arns[0]);
    }

    #[tokio::test]
    async fn every_page_is_followed() {
        let (pipeline, lineage) = (
            FakePipeline::default(),
            MemoryLineage::default().with_page_size(1),
        );
        let (_, package) = registered(&pipeline, &lineage).await;
        let paged = upstream(&lineage, &pipeline, &package, 3).await.unwrap();
        assert_eq!(paged.found.len(), 4);
        // The package's artifact (2 pages), the model (1), the image (1, empty), the job (2).
        assert_eq!(lineage.calls("ListAssociations"), 6);
    }

    #[tokio::test]
    async fn another_callers_model_is_exactly_an_unknown_one() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        let (_, package) = registered(&pipeline, &lineage).await;
        let someone = Principal::Bearer {
            name: "someone".into(),
        }
        .caller();
        let missing = "arn:aws:sagemaker:us-east-1:123456789012:model-package/none/1";
        for direction in [Direction::Upstream, Direction::Downstream] {
            let theirs = walk(&lineage, &pipeline, &someone, &package, direction, 3)
                .await
                .unwrap_err();
            let unknown = walk(&lineage, &pipeline, &someone, missing, direction, 3)
                .await
                .unwrap_err();
            assert_eq!(
                theirs.to_string().replace(&package, missing),
                unknown.to_string(),
                "the same words as an unknown ARN"
            );
        }
        assert_eq!(
            lineage.calls("ListAssociations"),
            0,
            "nothing of its lineage was read for them"
        );
        // The owner still sees it whole.
        assert!(upstream(&lineage, &pipeline, &package, 3).await.is_ok());
    }

    #[tokio::test]
    async fn a_package_made_outside_the_tools_answers_to_anyone() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        // A run started outside the tools: its description carries no owner tag.
        let console = "a run started from the console".to_owned();
        let (_, package) = registered_by(&pipeline, &lineage, console, vec![]).await;
        let someone = Principal::Bearer {
            name: "someone".into(),
        }
        .caller();
        let found = walk(
            &lineage,
            &pipeline,
            &someone,
            &package,
            Direction::Upstream,
            1,
        )
        .await
        .unwrap();
        let Some((_, Described::PipelineExecution(run))) = &found.generated_by else {
            panic!("{:?}", found.generated_by);
        };
        assert_eq!(run.session_id, None);
    }

    #[tokio::test]
    async fn a_package_whose_maker_cannot_be_described_is_unknown() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        let (_, package) = registered(&pipeline, &lineage).await;
        pipeline.fail_describe(AwsFailure {
            code: Some("AccessDeniedException".into()),
            message: "User: arn:aws:sts::123456789012:assumed-role/tools is not authorized".into(),
            retryable: false,
            ambiguous: false,
        });
        let e = upstream(&lineage, &pipeline, &package, 1)
            .await
            .unwrap_err();
        assert!(matches!(e, ProvenanceError::NotFound { .. }), "{e}");
    }

    #[tokio::test]
    async fn an_unknown_package_is_not_found_and_a_refused_call_names_itself() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        let missing = "arn:aws:sagemaker:us-east-1:123456789012:model-package/none/1";
        let e = upstream(&lineage, &pipeline, missing, 2).await.unwrap_err();
        assert!(
            matches!(&e, ProvenanceError::NotFound { arn } if arn == missing),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!("no model package \"{missing}\" (unknown, or not the caller's to see)")
        );

        let (_, package) = registered(&pipeline, &lineage).await;
        let denied = AwsFailure {
            code: Some("AccessDeniedException".into()),
            message: "not authorized to perform: sagemaker:ListAssociations".into(),
            retryable: false,
            ambiguous: false,
        };
        lineage.fail("ListAssociations", denied.clone());
        let e = upstream(&lineage, &pipeline, &package, 2)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, ProvenanceError::Aws { operation: "ListAssociations", failure } if *failure == denied),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_refused_describe_is_noted_on_its_entity_only() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        let (_, package) = registered(&pipeline, &lineage).await;
        let denied = AwsFailure {
            code: Some("AccessDeniedException".into()),
            message: "no".into(),
            retryable: false,
            ambiguous: false,
        };
        lineage.fail("DescribeArtifact", denied);
        let p = upstream(&lineage, &pipeline, &package, 1).await.unwrap();
        assert_eq!(p.found.len(), 2);
        assert!(p.found.iter().all(|f| matches!(
            f.described,
            Described::Failed {
                operation: "DescribeArtifact",
                ..
            }
        )));
    }

    #[tokio::test]
    async fn a_package_without_lineage_has_an_empty_graph() {
        let (pipeline, lineage) = (FakePipeline::default(), MemoryLineage::default());
        let arn = "arn:aws:sagemaker:us-east-1:123456789012:model-package/handmade/1";
        lineage.add_model_package(ModelPackageDescription {
            arn: arn.into(),
            group_name: Some("handmade".into()),
            version: Some(1),
            status: Some("Completed".into()),
            approval_status: Some("Approved".into()),
            generated_by: None,
            created_at: None,
        });
        let p = walk(&lineage, &pipeline, &local(), arn, Direction::Upstream, 3)
            .await
            .unwrap();
        assert!(p.lineage_arns.is_empty() && p.found.is_empty() && p.generated_by.is_none());
        assert_eq!(lineage.calls("ListAssociations"), 0);
    }
}
