//! Pipelines and their runs as the control plane keeps them (`control_plane::pipelines` starts,
//! moves and describes them).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// A run's or a step's status, as SageMaker spells it (`PipelineExecutionStatus`,
/// `StepStatus`): what may follow what is `control_plane::pipelines`' to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, strum::Display)]
pub enum ExecutionStatus {
    Executing,
    Stopping,
    Stopped,
    Failed,
    Succeeded,
}

#[derive(Clone)]
pub struct Step {
    pub name: String,
    pub status: ExecutionStatus,
    pub started: DateTime<Utc>,
    pub ended: Option<DateTime<Utc>>,
    pub failure_reason: Option<String>,
    /// ListPipelineExecutionSteps' `Metadata`, once the step has something to name.
    pub metadata: Option<Value>,
}

#[derive(Clone)]
pub struct Run {
    pub pipeline_arn: String,
    pub arn: String,
    pub display_name: String,
    pub description: Option<String>,
    pub parameters: HashMap<String, String>,
    /// `ParallelismConfiguration.MaxParallelExecutionSteps`, when the start gave it.
    pub max_parallel_steps: Option<u64>,
    pub status: ExecutionStatus,
    pub failure_reason: Option<String>,
    pub started: DateTime<Utc>,
    pub modified: DateTime<Utc>,
    pub steps: Vec<Step>,
    /// The CallbackStep the run waits on, while it waits.
    pub callback: Option<Callback>,
}

/// A CallbackStep waiting for SendPipelineExecutionStepSuccess or …StepFailure by its token.
#[derive(Clone)]
pub struct Callback {
    pub token: String,
    /// Set by the first answer; with the ClientRequestToken it came with.
    pub answer: Option<(CallbackAnswer, Option<String>)>,
}

#[derive(Clone, PartialEq)]
pub enum CallbackAnswer {
    /// OutputParameters: (name, value).
    Success(Vec<(String, String)>),
    Failure(String),
}

/// A pipeline as CreatePipeline made it.
#[derive(Clone)]
pub struct Pipeline {
    pub name: String,
    pub arn: String,
    pub display_name: String,
    pub definition: String,
    pub description: Option<String>,
    pub role_arn: String,
    pub created: DateTime<Utc>,
}
