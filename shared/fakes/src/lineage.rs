//! SageMaker's lineage and model registry in memory: associations, artifacts and model
//! packages as a run records them, and a package's approval.

use std::collections::HashMap;
use std::sync::Mutex;

use domain::approval::ModelDecision;
use domain::lineage::{Association, Direction};
use ports::*;

const ACCOUNT_ARN: &str = "arn:aws:sagemaker:us-east-1:123456789012";

fn lineage_failure(code: &str, message: String) -> AwsFailure {
    AwsFailure {
        code: Some(code.into()),
        message,
        retryable: false,
        ambiguous: false,
    }
}

#[derive(Default)]
struct LineageState {
    artifacts: Vec<ArtifactDescription>,
    /// Contexts, actions and trial components: (name, type).
    entities: HashMap<String, (Option<String>, Option<String>)>,
    /// Oldest first; listed newest first, as SageMaker sorts by default.
    associations: Vec<Association>,
    model_packages: Vec<ModelPackageDescription>,
    group_versions: HashMap<String, i32>,
    page_size: Option<usize>,
    faults: HashMap<&'static str, AwsFailure>,
    calls: HashMap<&'static str, usize>,
}

/// SageMaker's lineage in memory, with its rules: ListAssociations takes lineage entities
/// only, pages by MaxResults (10 unless set), and an unknown model package or artifact is
/// ResourceNotFound (SageMaker's ValidationException for a package, as the adapter reads it).
#[derive(Default)]
pub struct MemoryLineage {
    state: Mutex<LineageState>,
}

impl MemoryLineage {
    /// Pages of `page_size` associations.
    pub fn with_page_size(self, page_size: usize) -> Self {
        self.state.lock().unwrap().page_size = Some(page_size.max(1));
        self
    }

    /// An artifact (one per source URI, as SageMaker keeps them); its ARN.
    pub fn add_artifact(&self, artifact_type: &str, source_uri: &str) -> String {
        let mut state = self.state.lock().unwrap();
        if let Some(a) = state
            .artifacts
            .iter()
            .find(|a| a.source_uri.as_deref() == Some(source_uri))
        {
            return a.arn.clone();
        }
        let arn = format!("{ACCOUNT_ARN}:artifact/{}", uuid::Uuid::new_v4().simple());
        state.artifacts.push(ArtifactDescription {
            arn: arn.clone(),
            name: None,
            artifact_type: Some(artifact_type.into()),
            source_uri: Some(source_uri.into()),
        });
        arn
    }

    /// A context, action or trial component, by its ARN, with the name and type its
    /// associations report.
    pub fn add_entity(&self, arn: &str, name: &str, lineage_type: &str) {
        self.state
            .lock()
            .unwrap()
            .entities
            .insert(arn.into(), (Some(name.into()), Some(lineage_type.into())));
    }

    pub fn associate(&self, source: &str, destination: &str, association_type: &str) {
        let mut state = self.state.lock().unwrap();
        let (source_name, source_type) = state.name_and_type(source);
        let (destination_name, destination_type) = state.name_and_type(destination);
        state.associations.push(Association {
            source_arn: source.into(),
            source_name,
            source_type,
            destination_arn: destination.into(),
            destination_name,
            destination_type,
            association_type: Some(association_type.into()),
        });
    }

    pub fn add_model_package(&self, description: ModelPackageDescription) {
        self.state.lock().unwrap().model_packages.push(description);
    }

    /// Every call of `operation` (`ListAssociations`, `ListArtifacts`, `DescribeArtifact`,
    /// `DescribeModelPackage`, `UpdateModelPackage`) fails with `failure` from now on.
    pub fn fail(&self, operation: &'static str, failure: AwsFailure) {
        self.state.lock().unwrap().faults.insert(operation, failure);
    }

    /// How many times `operation` was called.
    pub fn calls(&self, operation: &'static str) -> usize {
        *self
            .state
            .lock()
            .unwrap()
            .calls
            .get(operation)
            .unwrap_or(&0)
    }

    /// What SageMaker records when a run of `pipeline` registers a model trained on
    /// `input_data_uri`, in the shape the SageMaker stand-in records it: the data and the
    /// training image contribute to the training job's trial component, which produced the
    /// model; the model and the image contribute to the model package's artifact, which is
    /// associated with its group's context. The model package's ARN.
    pub fn register_model(&self, execution_arn: &str, input_data_uri: &str) -> String {
        let pipeline = domain::lineage::pipeline_of_execution(execution_arn)
            .unwrap_or("pipeline")
            .to_owned();
        let execution_id = execution_arn.rsplit('/').next().unwrap_or_default();
        let group = format!("{pipeline}-models");
        let version = {
            let mut state = self.state.lock().unwrap();
            let version = state.group_versions.entry(group.clone()).or_insert(0);
            *version += 1;
            *version
        };
        let package = format!("{ACCOUNT_ARN}:model-package/{group}/{version}");
        let data = self.add_artifact("DataSet", input_data_uri);
        let image = self.add_artifact(
            "Image",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/standin-training:1.0",
        );
        let job = format!("pipelines-{execution_id}-trainmodel-aws-training-job");
        let training = format!("{ACCOUNT_ARN}:experiment-trial-component/{job}");
        self.add_entity(&training, &job, "SageMakerTrainingJob");
        let model = self.add_artifact(
            "Model",
            &format!("s3://standin-models/{pipeline}/{execution_id}/model.tar.gz"),
        );
        let package_artifact = self.add_artifact("ModelPackage", &package);
        let context_name = format!("{group}-aws-model-package-group");
        let context = format!("{ACCOUNT_ARN}:context/{context_name}");
        self.add_entity(&context, &context_name, "ModelGroup");
        self.associate(&data, &training, "ContributedTo");
        self.associate(&image, &training, "ContributedTo");
        self.associate(&training, &model, "Produced");
        self.associate(&model, &package_artifact, "ContributedTo");
        self.associate(&image, &package_artifact, "ContributedTo");
        self.associate(&package_artifact, &context, "AssociatedWith");
        self.add_model_package(ModelPackageDescription {
            arn: package.clone(),
            group_name: Some(group),
            version: Some(version),
            status: Some("Completed".into()),
            approval_status: Some("PendingManualApproval".into()),
            generated_by: Some(execution_arn.into()),
            created_at: Some("2026-11-20T10:00:00Z".into()),
        });
        package
    }

    /// Counts a call of `operation`; its armed fault, if any.
    fn call(&self, operation: &'static str) -> Result<(), AwsFailure> {
        let mut state = self.state.lock().unwrap();
        *state.calls.entry(operation).or_default() += 1;
        match state.faults.get(operation) {
            Some(failure) => Err(failure.clone()),
            None => Ok(()),
        }
    }
}

impl LineageState {
    fn name_and_type(&self, arn: &str) -> (Option<String>, Option<String>) {
        if let Some(a) = self.artifacts.iter().find(|a| a.arn == arn) {
            return (a.name.clone(), a.artifact_type.clone());
        }
        self.entities.get(arn).cloned().unwrap_or_default()
    }
}

impl LineageGraph for MemoryLineage {
    async fn associations(
        &self,
        arn: &str,
        direction: Direction,
        next_token: Option<&str>,
    ) -> Result<AssociationPage, AwsFailure> {
        tokio::task::yield_now().await;
        self.call("ListAssociations")?;
        let listable =
            domain::lineage::EntityKind::of_arn(arn).is_some_and(|kind| kind.has_associations());
        let field = match direction {
            Direction::Upstream => "destinationArn",
            Direction::Downstream => "sourceArn",
        };
        if !listable {
            return Err(lineage_failure(
                "ValidationException",
                format!("1 validation error detected: Value '{arn}' at '{field}' failed to satisfy constraint: Member must satisfy regular expression pattern"),
            ));
        }
        let state = self.state.lock().unwrap();
        let matching: Vec<&Association> = state
            .associations
            .iter()
            .rev()
            .filter(|a| a.near_end(direction) == arn)
            .collect();
        let offset = match next_token {
            None => 0,
            Some(token) => token.parse::<usize>().map_err(|_| {
                lineage_failure(
                    "ValidationException",
                    format!("invalid NextToken {token:?}"),
                )
            })?,
        };
        let size = state.page_size.unwrap_or(10);
        Ok(AssociationPage {
            associations: matching
                .iter()
                .skip(offset)
                .take(size)
                .map(|a| (*a).clone())
                .collect(),
            next_token: (offset + size < matching.len()).then(|| (offset + size).to_string()),
        })
    }

    async fn artifacts_with_source(&self, source_uri: &str) -> Result<Vec<String>, AwsFailure> {
        self.call("ListArtifacts")?;
        let state = self.state.lock().unwrap();
        Ok(state
            .artifacts
            .iter()
            .filter(|a| a.source_uri.as_deref() == Some(source_uri))
            .map(|a| a.arn.clone())
            .collect())
    }

    async fn describe_artifact(&self, arn: &str) -> Result<ArtifactDescription, AwsFailure> {
        self.call("DescribeArtifact")?;
        let state = self.state.lock().unwrap();
        state
            .artifacts
            .iter()
            .find(|a| a.arn == arn)
            .cloned()
            .ok_or_else(|| {
                lineage_failure(
                    "ResourceNotFound",
                    format!("Artifact {arn} does not exist."),
                )
            })
    }

    async fn describe_model_package(
        &self,
        arn: &str,
    ) -> Result<ModelPackageDescription, AwsFailure> {
        self.call("DescribeModelPackage")?;
        let state = self.state.lock().unwrap();
        state
            .model_packages
            .iter()
            .find(|p| p.arn == arn)
            .cloned()
            .ok_or_else(|| {
                // SageMaker's ValidationException, as the adapter reads it.
                lineage_failure(
                    "ResourceNotFound",
                    format!("ModelPackage {arn} does not exist."),
                )
            })
    }
}

/// UpdateModelPackage as SageMaker takes it: the package's approval status set, an unknown
/// package refused.
impl ModelRegistry for MemoryLineage {
    async fn decide(
        &self,
        model_package_arn: &str,
        decision: &ModelDecision,
    ) -> Result<(), AwsFailure> {
        self.call("UpdateModelPackage")?;
        let mut state = self.state.lock().unwrap();
        let package = state
            .model_packages
            .iter_mut()
            .find(|p| p.arn == model_package_arn)
            .ok_or_else(|| {
                lineage_failure(
                    "ResourceNotFound",
                    format!("ModelPackage {model_package_arn} does not exist."),
                )
            })?;
        package.approval_status = Some(decision.status().to_owned());
        Ok(())
    }
}
