//! Lineage and the model registry as the runs record them (`control_plane::lineage` records
//! and lists them).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

pub struct Artifact {
    pub arn: String,
    pub artifact_type: &'static str,
    pub source_uri: String,
    pub created: DateTime<Utc>,
}

/// A context or trial component: what its associations say of it.
pub struct Entity {
    pub name: String,
    pub lineage_type: &'static str,
}

pub struct Association {
    pub source: String,
    pub destination: String,
    pub association_type: &'static str,
    pub created: DateTime<Utc>,
}

pub struct ModelPackage {
    pub arn: String,
    pub group: String,
    pub version: u32,
    pub generated_by: String,
    pub image: String,
    pub model_data_url: String,
    pub created: DateTime<Utc>,
    /// `PendingManualApproval` as registered, until UpdateModelPackage decides it.
    pub approval_status: String,
    pub approval_description: Option<String>,
    pub modified: DateTime<Utc>,
}

#[derive(Default)]
pub struct Lineage {
    pub artifacts: Vec<Artifact>,
    pub entities: HashMap<String, Entity>,
    /// Oldest first.
    pub associations: Vec<Association>,
    pub model_packages: Vec<ModelPackage>,
    pub group_versions: HashMap<String, u32>,
    /// `POST /_standin/lineage`: no page holds more.
    pub page_size_cap: Option<usize>,
    /// ListAssociations calls answered, and how many of them carried a NextToken.
    pub list_calls: u64,
    pub continued_calls: u64,
}

impl Lineage {
    pub fn associate(&mut self, source: &str, destination: &str, association_type: &'static str) {
        self.associations.push(Association {
            source: source.to_owned(),
            destination: destination.to_owned(),
            association_type,
            created: Utc::now(),
        });
    }

    pub fn name_and_type(&self, arn: &str) -> (Option<String>, Option<&'static str>) {
        if let Some(a) = self.artifacts.iter().find(|a| a.arn == arn) {
            return (None, Some(a.artifact_type));
        }
        match self.entities.get(arn) {
            Some(e) => (Some(e.name.clone()), Some(e.lineage_type)),
            None => (None, None),
        }
    }
}
