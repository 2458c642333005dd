//! Model provenance: what built a registered model and what it went on to feed, as SageMaker's
//! lineage associations record it. Pure: what kind of entity an ARN names, which entities
//! ListAssociations takes, what describes each kind, and the walk's bookkeeping (breadth first,
//! each entity once, bounded work).
//!
//! A model package is not itself a lineage entity: ListAssociations takes only experiment,
//! trial component, artifact, action and context ARNs. SageMaker tracks a model package as the
//! artifact whose source URI is the package's ARN, so a walk starts there.

use std::collections::{HashSet, VecDeque};

pub use crate::arn::pipeline_of_execution;
use crate::arn::{execution_parts, sagemaker_resource};

/// Which way a walk goes from the model package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// What built it: the associations whose destination is the entity.
    #[default]
    Upstream,
    /// What it went on to feed: the associations whose source is the entity.
    Downstream,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Upstream => "upstream",
            Direction::Downstream => "downstream",
        }
    }
}

/// One association, as ListAssociations summarizes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Association {
    pub source_arn: String,
    pub source_name: Option<String>,
    pub source_type: Option<String>,
    pub destination_arn: String,
    pub destination_name: Option<String>,
    pub destination_type: Option<String>,
    /// ContributedTo, AssociatedWith, DerivedFrom, Produced or SameAs, as SageMaker wrote it.
    pub association_type: Option<String>,
}

impl Association {
    /// The end a walk in `direction` moves to: its ARN, name and type.
    pub fn far_end(&self, direction: Direction) -> (&str, Option<&str>, Option<&str>) {
        match direction {
            Direction::Upstream => (
                &self.source_arn,
                self.source_name.as_deref(),
                self.source_type.as_deref(),
            ),
            Direction::Downstream => (
                &self.destination_arn,
                self.destination_name.as_deref(),
                self.destination_type.as_deref(),
            ),
        }
    }

    /// The end a walk in `direction` comes from.
    pub fn near_end(&self, direction: Direction) -> &str {
        match direction {
            Direction::Upstream => &self.destination_arn,
            Direction::Downstream => &self.source_arn,
        }
    }
}

/// What kind of SageMaker entity an ARN names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityKind {
    Artifact,
    Action,
    Context,
    TrialComponent,
    Experiment,
    ModelPackage,
    ModelPackageGroup,
    PipelineExecution,
    /// Another SageMaker resource type, as the ARN spells it (`training-job`, `endpoint`, ...).
    Other(String),
}

/// How an entity is described beyond what its association says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Describe {
    /// DescribeArtifact: its type, source URI and name.
    Artifact,
    /// DescribePipelineExecution: its pipeline, status and session.
    PipelineExecution,
    /// By the name and type its association gave, and its ARN's kind.
    FromAssociation,
}

impl EntityKind {
    /// The kind of a SageMaker ARN; None for anything else.
    pub fn of_arn(arn: &str) -> Option<EntityKind> {
        let resource = sagemaker_resource(arn)?;
        let (resource_type, rest) = resource.split_once('/')?;
        if rest.is_empty() {
            return None;
        }
        Some(match resource_type {
            "artifact" => EntityKind::Artifact,
            "action" => EntityKind::Action,
            "context" => EntityKind::Context,
            "experiment-trial-component" => EntityKind::TrialComponent,
            "experiment" => EntityKind::Experiment,
            "model-package" => EntityKind::ModelPackage,
            "model-package-group" => EntityKind::ModelPackageGroup,
            "pipeline" if execution_parts(rest).is_some() => EntityKind::PipelineExecution,
            other => EntityKind::Other(other.to_owned()),
        })
    }

    /// The kind in the tool's words.
    pub fn as_str(&self) -> &str {
        match self {
            EntityKind::Artifact => "artifact",
            EntityKind::Action => "action",
            EntityKind::Context => "context",
            EntityKind::TrialComponent => "trial_component",
            EntityKind::Experiment => "experiment",
            EntityKind::ModelPackage => "model_package",
            EntityKind::ModelPackageGroup => "model_package_group",
            EntityKind::PipelineExecution => "pipeline_execution",
            EntityKind::Other(kind) => kind,
        }
    }

    /// Whether ListAssociations takes an ARN of this kind: its SourceArn and DestinationArn
    /// patterns allow only these, and refuse anything else with a ValidationException.
    pub fn has_associations(&self) -> bool {
        matches!(
            self,
            EntityKind::Artifact
                | EntityKind::Action
                | EntityKind::Context
                | EntityKind::TrialComponent
                | EntityKind::Experiment
        )
    }

    pub fn describe(&self) -> Describe {
        match self {
            EntityKind::Artifact => Describe::Artifact,
            EntityKind::PipelineExecution => Describe::PipelineExecution,
            _ => Describe::FromAssociation,
        }
    }
}

/// Whether `arn` names a model package (a version in a group, or an unversioned package), not
/// a group or anything else.
pub fn is_model_package_arn(arn: &str) -> bool {
    EntityKind::of_arn(arn) == Some(EntityKind::ModelPackage)
}

/// How much one walk may do: it stops there, and says it was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Associations away from the model package: entities at this depth are not listed further.
    pub max_depth: u32,
    /// Entities found, the model package's own lineage artifacts not counted.
    pub max_entities: usize,
    /// ListAssociations pages read.
    pub max_pages: usize,
}

impl Limits {
    pub const MAX_ENTITIES: usize = 50;
    pub const MAX_PAGES: usize = 25;

    pub fn to_depth(max_depth: u32) -> Self {
        Self {
            max_depth,
            max_entities: Self::MAX_ENTITIES,
            max_pages: Self::MAX_PAGES,
        }
    }
}

/// An entity the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    pub arn: String,
    /// None for an ARN that is not SageMaker's.
    pub kind: Option<EntityKind>,
    /// Associations away from the model package (its lineage artifact is 0).
    pub depth: u32,
    /// The name and type the association that found it gave.
    pub name: Option<String>,
    pub lineage_type: Option<String>,
}

/// An association between two entities the walk holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Edge {
    pub source_arn: String,
    pub destination_arn: String,
    pub association_type: Option<String>,
}

/// An entity whose associations are to be listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub arn: String,
    pub depth: u32,
}

/// A walk's bookkeeping, breadth first from the model package's lineage artifacts: each
/// entity is kept once (a diamond or a cycle adds an edge, not a second entity), entities at
/// `max_depth` are not listed further, and the walk stops at its limits, marking itself
/// truncated when anything was left unread.
#[derive(Debug)]
pub struct Walk {
    direction: Direction,
    limits: Limits,
    queue: VecDeque<Listing>,
    seen: HashSet<String>,
    entities: Vec<Entity>,
    edges: Vec<Edge>,
    edge_set: HashSet<Edge>,
    pages: usize,
    truncated: bool,
}

/// What a walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// In the order found: nearer entities first.
    pub entities: Vec<Entity>,
    pub edges: Vec<Edge>,
    pub pages: usize,
    pub truncated: bool,
}

impl Walk {
    pub fn new(starts: &[String], direction: Direction, limits: Limits) -> Self {
        let mut walk = Walk {
            direction,
            limits,
            queue: VecDeque::new(),
            seen: HashSet::new(),
            entities: Vec::new(),
            edges: Vec::new(),
            edge_set: HashSet::new(),
            pages: 0,
            truncated: false,
        };
        for arn in starts {
            if walk.seen.insert(arn.clone()) {
                walk.enqueue(arn, 0);
            }
        }
        walk
    }

    fn enqueue(&mut self, arn: &str, depth: u32) {
        let listable = EntityKind::of_arn(arn).is_some_and(|k| k.has_associations());
        if listable && depth < self.limits.max_depth {
            self.queue.push_back(Listing {
                arn: arn.to_owned(),
                depth,
            });
        }
    }

    pub fn is_full(&self) -> bool {
        self.entities.len() >= self.limits.max_entities
    }

    /// The next entity to list, or None when the walk is over (cut short when full with
    /// entities still to list).
    pub fn next_listing(&mut self) -> Option<Listing> {
        if self.is_full() && !self.queue.is_empty() {
            self.truncated = true;
            self.queue.clear();
        }
        self.queue.pop_front()
    }

    /// Whether one more page may be read; counts it. Past the page limit the walk is cut short.
    pub fn take_page(&mut self) -> bool {
        if self.pages >= self.limits.max_pages {
            self.truncated = true;
            self.queue.clear();
            return false;
        }
        self.pages += 1;
        true
    }

    /// Whether to read the page after one that gave `next_token`: not once the walk is full
    /// (it is then cut short, since that page may hold entities not yet found).
    pub fn wants_next_page(&mut self, next_token: Option<&str>) -> bool {
        match next_token {
            None => false,
            Some(_) if self.is_full() => {
                self.truncated = true;
                false
            }
            Some(_) => true,
        }
    }

    /// One page of `from`'s associations: each far end not yet seen becomes an entity one
    /// deeper (while there is room), and each association between entities held is an edge.
    pub fn record(&mut self, from: &Listing, associations: &[Association]) {
        for association in associations {
            if association.near_end(self.direction) != from.arn {
                // Not an answer to the question asked; an edge elsewhere is not this walk's.
                continue;
            }
            let (arn, name, lineage_type) = association.far_end(self.direction);
            if !self.seen.contains(arn) {
                if self.is_full() {
                    self.truncated = true;
                    continue;
                }
                self.seen.insert(arn.to_owned());
                let depth = from.depth + 1;
                self.entities.push(Entity {
                    arn: arn.to_owned(),
                    kind: EntityKind::of_arn(arn),
                    depth,
                    name: name.map(str::to_owned),
                    lineage_type: lineage_type.map(str::to_owned),
                });
                self.enqueue(arn, depth);
            }
            let edge = Edge {
                source_arn: association.source_arn.clone(),
                destination_arn: association.destination_arn.clone(),
                association_type: association.association_type.clone(),
            };
            if self.edge_set.insert(edge.clone()) {
                self.edges.push(edge);
            }
        }
    }

    pub fn finish(self) -> Graph {
        Graph {
            entities: self.entities,
            edges: self.edges,
            pages: self.pages,
            truncated: self.truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "arn:aws:sagemaker:us-east-1:123456789012:";

    fn arn(resource: &str) -> String {
        format!("{P}{resource}")
    }

    fn assoc(source: &str, destination: &str, kind: &str) -> Association {
        Association {
            source_arn: source.to_owned(),
            source_name: None,
            source_type: Some("S".into()),
            destination_arn: destination.to_owned(),
            destination_name: None,
            destination_type: Some("D".into()),
            association_type: Some(kind.to_owned()),
        }
    }

    /// Runs a walk over a fixed graph, one association per page.
    fn walk(
        starts: &[String],
        graph: &[Association],
        direction: Direction,
        limits: Limits,
    ) -> Graph {
        let mut walk = Walk::new(starts, direction, limits);
        while let Some(listing) = walk.next_listing() {
            let answers: Vec<&Association> = graph
                .iter()
                .filter(|a| a.near_end(direction) == listing.arn)
                .collect();
            let mut page = 0;
            loop {
                if !walk.take_page() {
                    break;
                }
                let chunk: Vec<Association> = answers
                    .iter()
                    .skip(page)
                    .take(1)
                    .map(|a| (*a).clone())
                    .collect();
                walk.record(&listing, &chunk);
                page += 1;
                let token = (page < answers.len()).then_some("more");
                if !walk.wants_next_page(token) {
                    break;
                }
            }
        }
        walk.finish()
    }

    #[test]
    fn arns_are_told_apart_by_their_resource_type() {
        let cases = [
            ("artifact/0a1b", Some(EntityKind::Artifact)),
            ("action/approve-1", Some(EntityKind::Action)),
            ("context/group-ctx", Some(EntityKind::Context)),
            (
                "experiment-trial-component/pipelines-x-train-aws-training-job",
                Some(EntityKind::TrialComponent),
            ),
            ("experiment/exp", Some(EntityKind::Experiment)),
            (
                "model-package/churn-models/3",
                Some(EntityKind::ModelPackage),
            ),
            ("model-package/standalone", Some(EntityKind::ModelPackage)),
            (
                "model-package-group/churn-models",
                Some(EntityKind::ModelPackageGroup),
            ),
            (
                "pipeline/p/execution/abc",
                Some(EntityKind::PipelineExecution),
            ),
            ("pipeline/p", Some(EntityKind::Other("pipeline".into()))),
            (
                "training-job/t",
                Some(EntityKind::Other("training-job".into())),
            ),
            ("artifact/", None),
        ];
        for (resource, kind) in cases {
            assert_eq!(EntityKind::of_arn(&arn(resource)), kind, "{resource}");
        }
        for not_sagemaker in [
            "arn:aws:s3:::bucket/key",
            "s3://bucket/key",
            "arn:aws:sagemaker:us-east-1:1234:artifact/x",
            "arn:aws:sagemaker::123456789012:artifact/x",
            "",
        ] {
            assert_eq!(EntityKind::of_arn(not_sagemaker), None, "{not_sagemaker}");
        }
        assert_eq!(
            EntityKind::of_arn("arn:aws-cn:sagemaker:cn-north-1:123456789012:artifact/x"),
            Some(EntityKind::Artifact)
        );
    }

    #[test]
    fn only_lineage_entities_have_associations_and_each_kind_has_its_description() {
        assert!(EntityKind::Artifact.has_associations());
        assert!(EntityKind::TrialComponent.has_associations());
        assert!(!EntityKind::ModelPackage.has_associations());
        assert!(!EntityKind::PipelineExecution.has_associations());
        assert_eq!(EntityKind::Artifact.describe(), Describe::Artifact);
        assert_eq!(
            EntityKind::PipelineExecution.describe(),
            Describe::PipelineExecution
        );
        assert_eq!(EntityKind::Context.describe(), Describe::FromAssociation);
        assert_eq!(
            EntityKind::ModelPackage.describe(),
            Describe::FromAssociation
        );
    }

    #[test]
    fn a_pipeline_execution_names_its_pipeline() {
        assert_eq!(
            pipeline_of_execution(&arn("pipeline/churn/execution/0a1b2c")),
            Some("churn")
        );
        assert_eq!(pipeline_of_execution(&arn("pipeline/churn")), None);
        assert_eq!(pipeline_of_execution(&arn("artifact/x")), None);
        assert!(is_model_package_arn(&arn("model-package/g/1")));
        assert!(!is_model_package_arn(&arn("model-package-group/g")));
    }

    #[test]
    fn the_walk_is_breadth_first_and_stops_at_max_depth() {
        let (pkg, model, train, data) = (
            arn("artifact/pkg"),
            arn("artifact/model"),
            arn("experiment-trial-component/train"),
            arn("artifact/data"),
        );
        let graph = [
            assoc(&model, &pkg, "ContributedTo"),
            assoc(&train, &model, "Produced"),
            assoc(&data, &train, "ContributedTo"),
        ];
        let starts = [pkg.clone()];
        let two = walk(&starts, &graph, Direction::Upstream, Limits::to_depth(2));
        let found: Vec<(&str, u32)> = two
            .entities
            .iter()
            .map(|e| (e.arn.as_str(), e.depth))
            .collect();
        assert_eq!(found, [(model.as_str(), 1), (train.as_str(), 2)]);
        assert_eq!(two.edges.len(), 2);
        assert!(!two.truncated, "a depth asked for is not a cut");
        let three = walk(&starts, &graph, Direction::Upstream, Limits::to_depth(3));
        assert_eq!(three.entities.len(), 3);
        assert_eq!(three.entities[2].kind, Some(EntityKind::Artifact));
        let down = walk(
            std::slice::from_ref(&data),
            &graph,
            Direction::Downstream,
            Limits::to_depth(3),
        );
        let found: Vec<&str> = down.entities.iter().map(|e| e.arn.as_str()).collect();
        assert_eq!(found, [train.as_str(), model.as_str(), pkg.as_str()]);
        assert_eq!(
            down.edges[0],
            Edge {
                source_arn: data.clone(),
                destination_arn: train.clone(),
                association_type: Some("ContributedTo".into()),
            }
        );
    }

    #[test]
    fn a_diamond_or_a_cycle_visits_each_entity_once_and_keeps_every_edge() {
        let (a, b, c, d) = (
            arn("artifact/a"),
            arn("artifact/b"),
            arn("action/c"),
            arn("context/d"),
        );
        // b and c both come from d; d comes from a, and a from b: a cycle.
        let graph = [
            assoc(&b, &a, "ContributedTo"),
            assoc(&c, &a, "DerivedFrom"),
            assoc(&d, &b, "Produced"),
            assoc(&d, &c, "Produced"),
            assoc(&a, &d, "AssociatedWith"),
        ];
        let found = walk(
            std::slice::from_ref(&a),
            &graph,
            Direction::Upstream,
            Limits::to_depth(3),
        );
        let arns: Vec<&str> = found.entities.iter().map(|e| e.arn.as_str()).collect();
        assert_eq!(arns, [b.as_str(), c.as_str(), d.as_str()]);
        assert_eq!(found.edges.len(), 5, "{:?}", found.edges);
        assert!(!found.truncated);
    }

    #[test]
    fn a_model_package_or_execution_found_is_kept_but_not_listed() {
        let (start, pkg, exec) = (
            arn("artifact/start"),
            arn("model-package/g/1"),
            arn("pipeline/p/execution/e"),
        );
        let graph = [
            assoc(&pkg, &start, "SameAs"),
            assoc(&exec, &start, "Produced"),
        ];
        let mut w = Walk::new(
            std::slice::from_ref(&start),
            Direction::Upstream,
            Limits::to_depth(3),
        );
        let first = w.next_listing().unwrap();
        assert!(w.take_page());
        w.record(&first, &graph);
        assert_eq!(w.next_listing(), None, "neither takes ListAssociations");
        assert_eq!(w.finish().entities.len(), 2);
    }

    #[test]
    fn the_walk_stops_at_its_entity_limit_and_says_so() {
        let start = arn("artifact/start");
        let graph: Vec<Association> = (0..8)
            .map(|i| assoc(&arn(&format!("artifact/in-{i}")), &start, "ContributedTo"))
            .collect();
        let limits = Limits {
            max_depth: 2,
            max_entities: 5,
            max_pages: 100,
        };
        let found = walk(
            std::slice::from_ref(&start),
            &graph,
            Direction::Upstream,
            limits,
        );
        assert_eq!(found.entities.len(), 5);
        assert_eq!(found.edges.len(), 5, "no edge to an entity left out");
        assert!(found.truncated);
        // Full with nothing left to read: entities at max_depth are not listed.
        let exact = Limits {
            max_depth: 1,
            max_entities: 8,
            ..limits
        };
        let all = walk(&[start], &graph, Direction::Upstream, exact);
        assert_eq!(all.entities.len(), 8);
        assert!(!all.truncated, "full, but nothing was left unread");
    }

    #[test]
    fn the_walk_stops_at_its_page_limit_and_says_so() {
        let start = arn("artifact/start");
        let graph: Vec<Association> = (0..4)
            .map(|i| assoc(&arn(&format!("artifact/in-{i}")), &start, "ContributedTo"))
            .collect();
        let limits = Limits {
            max_depth: 1,
            max_entities: 50,
            max_pages: 3,
        };
        let found = walk(&[start], &graph, Direction::Upstream, limits);
        assert_eq!((found.entities.len(), found.pages), (3, 3));
        assert!(found.truncated);
    }

    #[test]
    fn an_association_for_another_entity_is_ignored() {
        let (a, b, c) = (arn("artifact/a"), arn("artifact/b"), arn("artifact/c"));
        let mut w = Walk::new(
            std::slice::from_ref(&a),
            Direction::Upstream,
            Limits::to_depth(2),
        );
        let listing = w.next_listing().unwrap();
        w.record(
            &listing,
            &[assoc(&b, &a, "Produced"), assoc(&c, &b, "Produced")],
        );
        let graph = w.finish();
        assert_eq!(graph.entities.len(), 1);
        assert_eq!(graph.edges.len(), 1);
    }
}
