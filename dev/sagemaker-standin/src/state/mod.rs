//! What the stand-in keeps between requests, shared by every handler through axum's state: the
//! settings from the command line, the pipeline runs, the control API's faults and call record,
//! and what the control plane created. The records are plain data in the submodules, which
//! import nothing of the stand-in; the operations on them live with the handlers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod control;
pub mod endpoints;
pub mod lineage;
pub mod pipelines;

use control::Control;
use pipelines::Run;

/// The account in every ARN and event the stand-in makes.
pub const ACCOUNT: &str = "123456789012";

#[derive(Clone)]
pub struct Settings {
    pub region: String,
    pub step: Duration,
    pub inference: Duration,
    pub hang: Duration,
    pub lambda_invoke_url: Option<String>,
}

#[derive(Clone)]
pub struct AppState {
    pub settings: Settings,
    pub runs: Arc<Mutex<HashMap<String, Run>>>,
    /// ClientRequestToken → execution ARN: a retried start returns the first run.
    pub tokens: Arc<Mutex<HashMap<String, String>>>,
    pub http: reqwest::Client,
    pub s3: aws_sdk_s3::Client,
    /// Faults waiting for the next InvokeEndpointAsync calls, and every call received. One
    /// lock for both, so the recorded order is the order in which faults were consumed.
    pub control: Arc<Mutex<Control>>,
    /// Endpoint configs, endpoints and pipelines the control plane created.
    pub catalog: Arc<Mutex<Catalog>>,
}

impl AppState {
    /// Changes the run `arn` (which exists) and marks it modified now.
    pub fn update_run(&self, arn: &str, change: impl FnOnce(&mut Run)) {
        let mut runs = self.runs.lock().unwrap();
        let run = runs.get_mut(arn).expect("run exists");
        change(run);
        run.modified = chrono::Utc::now();
    }

    /// How long a pipeline step (and an endpoint's create or update) takes: `--step-millis`,
    /// or what the control API set.
    pub fn step_duration(&self) -> Duration {
        self.control
            .lock()
            .unwrap()
            .step_millis
            .map_or(self.settings.step, Duration::from_millis)
    }
}

/// What the control plane has created: endpoint configs and endpoints by name, pipelines by
/// lowercase name (SageMaker's names are case-insensitive in ARNs), and the lineage and model
/// packages the runs recorded.
#[derive(Default)]
pub struct Catalog {
    pub endpoint_configs: HashMap<String, endpoints::EndpointConfig>,
    pub endpoints: HashMap<String, endpoints::Endpoint>,
    pub pipelines: HashMap<String, pipelines::Pipeline>,
    pub lineage: lineage::Lineage,
}
