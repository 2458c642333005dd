//! Endpoint configurations and endpoints as the control plane keeps them
//! (`control_plane::endpoints` creates, updates and describes them).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

/// An endpoint's `EndpointStatus`, of those the stand-in goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EndpointStatus {
    Creating,
    Updating,
    InService,
}

#[derive(Clone)]
pub struct EndpointConfig {
    pub name: String,
    pub arn: String,
    /// The fields DescribeEndpointConfig gives back, as the create request gave them.
    pub fields: Map<String, Value>,
    pub created: DateTime<Utc>,
}

#[derive(Clone)]
pub struct Endpoint {
    pub name: String,
    pub arn: String,
    pub config_name: String,
    pub status: EndpointStatus,
    pub created: DateTime<Utc>,
    pub modified: DateTime<Utc>,
}
