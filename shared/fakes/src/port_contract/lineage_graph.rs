//! SageMaker's lineage around a registered model: the package is tracked by the one
//! artifact whose source URI is its ARN; associations are listed from either end, page by
//! page; a model package is not a lineage entity; unknown packages and artifacts are
//! refused, not retried. A registered model waits for approval until a decision sets it. The port under test pages by one association, so that every
//! behaviour follows NextToken.

use std::collections::HashSet;
use std::future::Future;

use domain::approval::ModelDecision;
use domain::lineage::{Association, Direction, EntityKind};
use ports::{LineageGraph, ModelRegistry};

/// A model a pipeline run registered.
#[derive(Debug, Clone)]
pub struct Registered {
    pub model_package_arn: String,
    pub execution_arn: String,
    pub input_data_uri: String,
}

/// A lineage under test and a way to get a registered model into it: the fake records one,
/// the stand-in runs a pipeline until its RegisterModel step is done. The lineage is lent,
/// not wrapped, so an adapter is tested as it is, with no forwarding impl of its ports.
pub trait Registrar: Sync {
    type Lineage: LineageGraph + ModelRegistry;
    fn lineage(&self) -> &Self::Lineage;
    fn register(&self, input_data_uri: &str) -> impl Future<Output = Registered> + Send;
}

fn input_data_uri() -> String {
    format!(
        "s3://contract-data/{}/train/",
        uuid::Uuid::new_v4().simple()
    )
}

/// Every association of `arn` in `direction`, all pages, and how many pages there were.
async fn all<L: LineageGraph>(
    lineage: &L,
    arn: &str,
    direction: Direction,
) -> (Vec<Association>, usize) {
    let (mut found, mut pages, mut token) = (Vec::new(), 0, None::<String>);
    loop {
        let page = lineage
            .associations(arn, direction, token.as_deref())
            .await
            .unwrap_or_else(|e| panic!("ListAssociations of {arn}: {e}"));
        pages += 1;
        found.extend(page.associations);
        match page.next_token {
            Some(next) if pages < 100 => token = Some(next),
            Some(_) => panic!("{arn}: pages without end"),
            None => return (found, pages),
        }
    }
}

async fn package_artifact<L: LineageGraph>(lineage: &L, registered: &Registered) -> String {
    let arns = lineage
        .artifacts_with_source(&registered.model_package_arn)
        .await
        .unwrap();
    assert_eq!(
        arns.len(),
        1,
        "one artifact stands for the package: {arns:?}"
    );
    arns[0].clone()
}

pub async fn a_registered_model_is_described_and_tracked_by_one_artifact<R: Registrar>(port: &R) {
    let lineage = port.lineage();
    let registered = port.register(&input_data_uri()).await;
    let package = lineage
        .describe_model_package(&registered.model_package_arn)
        .await
        .unwrap();
    assert_eq!(package.arn, registered.model_package_arn);
    assert_eq!(package.status.as_deref(), Some("Completed"));
    assert!(
        package.group_name.is_some() && package.version.is_some(),
        "{package:?}"
    );
    assert_eq!(
        package.generated_by.as_deref(),
        Some(registered.execution_arn.as_str()),
        "a pipeline's package names the run that made it"
    );
    let artifact = package_artifact(lineage, &registered).await;
    let described = lineage.describe_artifact(&artifact).await.unwrap();
    assert_eq!(described.arn, artifact);
    assert_eq!(
        described.source_uri.as_deref(),
        Some(registered.model_package_arn.as_str())
    );
}

pub async fn upstream_lists_what_ends_at_an_entity_and_reaches_the_data<R: Registrar>(port: &R) {
    let lineage = port.lineage();
    let uri = input_data_uri();
    let registered = port.register(&uri).await;
    let mut frontier = vec![package_artifact(lineage, &registered).await];
    let mut seen: HashSet<String> = frontier.iter().cloned().collect();
    let mut data = None;
    for _depth in 0..3 {
        let mut next = Vec::new();
        for arn in &frontier {
            let (found, _) = all(lineage, arn, Direction::Upstream).await;
            for a in found {
                assert_eq!(&a.destination_arn, arn, "upstream of {arn}: {a:?}");
                assert!(a.association_type.is_some(), "{a:?}");
                if seen.insert(a.source_arn.clone()) {
                    next.push(a.source_arn);
                }
            }
        }
        for arn in &next {
            if EntityKind::of_arn(arn) == Some(EntityKind::Artifact) {
                let artifact = lineage.describe_artifact(arn).await.unwrap();
                if artifact.source_uri.as_deref() == Some(uri.as_str()) {
                    data = Some(artifact);
                }
            }
        }
        frontier = next
            .into_iter()
            .filter(|a| EntityKind::of_arn(a).is_some_and(|k| k.has_associations()))
            .collect();
    }
    let data = data.expect("the run's input data, within three associations upstream");
    assert_eq!(data.artifact_type.as_deref(), Some("DataSet"));
}

pub async fn downstream_lists_what_starts_at_an_entity<R: Registrar>(port: &R) {
    let lineage = port.lineage();
    let registered = port.register(&input_data_uri()).await;
    let artifact = package_artifact(lineage, &registered).await;
    let (found, _) = all(lineage, &artifact, Direction::Downstream).await;
    assert!(!found.is_empty(), "the package feeds something (its group)");
    for a in &found {
        assert_eq!(a.source_arn, artifact, "{a:?}");
    }
    assert!(
        found
            .iter()
            .any(|a| EntityKind::of_arn(&a.destination_arn) == Some(EntityKind::Context)),
        "{found:?}"
    );
}

pub async fn pages_follow_on_to_every_association_once<R: Registrar>(port: &R) {
    let lineage = port.lineage();
    let registered = port.register(&input_data_uri()).await;
    let artifact = package_artifact(lineage, &registered).await;
    let (found, pages) = all(lineage, &artifact, Direction::Upstream).await;
    assert!(found.len() >= 2, "the model and its image: {found:?}");
    assert!(
        pages >= found.len(),
        "{pages} pages of one for {} associations",
        found.len()
    );
    let distinct: HashSet<&str> = found.iter().map(|a| a.source_arn.as_str()).collect();
    assert_eq!(
        distinct.len(),
        found.len(),
        "each association once: {found:?}"
    );
}

pub async fn a_model_package_is_not_a_lineage_entity<R: Registrar>(port: &R) {
    let lineage = port.lineage();
    let registered = port.register(&input_data_uri()).await;
    for direction in [Direction::Upstream, Direction::Downstream] {
        let failure = lineage
            .associations(&registered.model_package_arn, direction, None)
            .await
            .unwrap_err();
        assert_eq!(
            failure.code.as_deref(),
            Some("ValidationException"),
            "{failure}"
        );
        assert!(!failure.retryable && !failure.ambiguous, "{failure}");
    }
}

pub async fn unknown_packages_and_artifacts_are_refused_not_retried<R: Registrar>(port: &R) {
    let lineage = port.lineage();
    let id = uuid::Uuid::new_v4().simple();
    let package = format!("arn:aws:sagemaker:us-east-1:123456789012:model-package/none-{id}/1");
    let failure = lineage.describe_model_package(&package).await.unwrap_err();
    // SageMaker says ValidationException "... does not exist": read as not found.
    assert_eq!(
        failure.code.as_deref(),
        Some("ResourceNotFound"),
        "{failure}"
    );
    assert!(!failure.retryable && !failure.ambiguous, "{failure}");
    let artifact = format!("arn:aws:sagemaker:us-east-1:123456789012:artifact/{id}");
    let failure = lineage.describe_artifact(&artifact).await.unwrap_err();
    assert_eq!(
        failure.code.as_deref(),
        Some("ResourceNotFound"),
        "{failure}"
    );
    assert!(!failure.retryable && !failure.ambiguous, "{failure}");
    assert_eq!(
        lineage.artifacts_with_source(&package).await.unwrap(),
        Vec::<String>::new()
    );
}

pub async fn a_registered_model_waits_until_a_decision_sets_its_approval<R: Registrar>(port: &R) {
    let lineage = port.lineage();
    let registered = port.register(&input_data_uri()).await;
    let arn = &registered.model_package_arn;
    let status = |p: ports::ModelPackageDescription| p.approval_status;
    let waiting = lineage.describe_model_package(arn).await.unwrap();
    assert_eq!(status(waiting).as_deref(), Some("PendingManualApproval"));
    for (approve, expected) in [(true, "Approved"), (false, "Rejected")] {
        let decision = ModelDecision {
            approve,
            description: format!("contract: {expected}"),
        };
        lineage.decide(arn, &decision).await.unwrap();
        let decided = lineage.describe_model_package(arn).await.unwrap();
        assert_eq!(status(decided).as_deref(), Some(expected));
    }
    let unknown = format!("{}9999", arn.trim_end_matches(char::is_numeric));
    let decision = ModelDecision {
        approve: true,
        description: "contract".into(),
    };
    let failure = lineage.decide(&unknown, &decision).await.unwrap_err();
    assert_eq!(
        failure.code.as_deref(),
        Some("ResourceNotFound"),
        "{failure}"
    );
    assert!(!failure.retryable, "{failure}");
}

/// One `#[tokio::test]` per lineage behaviour, on the [`lineage_graph::Registrar`] `$make.await` gives.
#[macro_export]
macro_rules! lineage_graph_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            lineage_graph,
            $make,
            [
                a_registered_model_is_described_and_tracked_by_one_artifact,
                upstream_lists_what_ends_at_an_entity_and_reaches_the_data,
                downstream_lists_what_starts_at_an_entity,
                pages_follow_on_to_every_association_once,
                a_model_package_is_not_a_lineage_entity,
                unknown_packages_and_artifacts_are_refused_not_retried,
                a_registered_model_waits_until_a_decision_sets_its_approval,
            ]
        );
    };
}
