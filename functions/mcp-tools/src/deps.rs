//! What a tool call needs, built once at cold start: the settings, the ports, the clock. The
//! ports are a type parameter, so the tools run on the AWS adapters in production and on the
//! in-memory fakes in unit tests.

use std::time::Duration;

use crate::catalog::{Catalog, CatalogError, Schemas};
use crate::config::ToolsConfig;
use domain::time::Clock;
use ports::{
    AsyncInvoker, CompletionEvents, EventLog, JobStore, LineageGraph, ModelRegistry, ObjectStore,
    PipelineControl, QuotaStore, RunStore, SubscriptionStore, Webhooks,
};
use usecases::answer::Answering;
use usecases::quota::ReadQuota;
use usecases::JobSettings;

/// The ports the tools call, as one bundle.
pub trait Backend: Send + Sync + 'static {
    type Jobs: JobStore + Send + 'static;
    /// Where the callers' quota counters and wait slots are kept.
    type Quotas: QuotaStore + Send + 'static;
    type Runs: RunStore + Send + 'static;
    type Objects: ObjectStore + Send + 'static;
    type Endpoint: AsyncInvoker + Send + 'static;
    type Pipeline: PipelineControl + Send + 'static;
    type Lineage: LineageGraph + ModelRegistry + Send + 'static;
    type Events: CompletionEvents + Send + 'static;
    type EventLog: EventLog + Send + 'static;
    type Subscriptions: SubscriptionStore + Send + 'static;
    type Webhooks: Webhooks + Send + 'static;

    fn jobs(&self) -> &Self::Jobs;
    fn quotas(&self) -> &Self::Quotas;
    fn runs(&self) -> &Self::Runs;
    fn objects(&self) -> &Self::Objects;
    fn endpoint(&self) -> &Self::Endpoint;
    fn pipeline(&self) -> &Self::Pipeline;
    fn lineage(&self) -> &Self::Lineage;
    /// Where an outcome a status check records (from S3) is announced.
    fn events(&self) -> &Self::Events;
    /// MCP Events: each owner's event log (None: the extension is not offered), the webhook
    /// subscriptions (None: poll only), and where a new callback's challenge is sent.
    fn event_log(&self) -> Option<&Self::EventLog>;
    fn subscriptions(&self) -> Option<&Self::Subscriptions>;
    fn webhooks(&self) -> &Self::Webhooks;
}

/// One implementation of each port.
pub struct Ports<J, R, O, E, P, L, V, G, S, W> {
    pub jobs: J,
    pub runs: R,
    pub objects: O,
    pub endpoint: E,
    pub pipeline: P,
    pub lineage: L,
    pub events: V,
    pub event_log: Option<G>,
    pub subscriptions: Option<S>,
    pub webhooks: W,
}

impl<J, R, O, E, P, L, V, G, S, W> Backend for Ports<J, R, O, E, P, L, V, G, S, W>
where
    J: JobStore + Send + 'static,
    R: RunStore + Send + 'static,
    O: ObjectStore + Send + 'static,
    E: AsyncInvoker + Send + 'static,
    P: PipelineControl + Send + 'static,
    L: LineageGraph + ModelRegistry + Send + 'static,
    V: CompletionEvents + Send + 'static,
    G: EventLog + Send + 'static,
    S: SubscriptionStore + Send + 'static,
    W: Webhooks + Send + 'static,
{
    type Jobs = J;
    /// The results table holds them (see [`QuotaStore`]).
    type Quotas = J;
    type Runs = R;
    type Objects = O;
    type Endpoint = E;
    type Pipeline = P;
    type Lineage = L;
    type Events = V;
    type EventLog = G;
    type Subscriptions = S;
    type Webhooks = W;

    fn jobs(&self) -> &J {
        &self.jobs
    }
    fn quotas(&self) -> &J {
        &self.jobs
    }
    fn runs(&self) -> &R {
        &self.runs
    }
    fn objects(&self) -> &O {
        &self.objects
    }
    fn endpoint(&self) -> &E {
        &self.endpoint
    }
    fn pipeline(&self) -> &P {
        &self.pipeline
    }
    fn lineage(&self) -> &L {
        &self.lineage
    }
    fn events(&self) -> &V {
        &self.events
    }
    fn event_log(&self) -> Option<&G> {
        self.event_log.as_ref()
    }
    fn subscriptions(&self) -> Option<&S> {
        self.subscriptions.as_ref()
    }
    fn webhooks(&self) -> &W {
        &self.webhooks
    }
}

/// Settings, ports and clock; the use cases' settings derived from the configuration once;
/// the tool catalog, when the deployment has one; the reads quota, with the refusals this
/// process remembers.
pub struct Deps<B> {
    pub config: ToolsConfig,
    pub settings: JobSettings,
    pub ports: B,
    pub clock: Clock,
    pub catalog: Option<Catalog>,
    /// The pipelines whose runs the tools start and may show: the configured one, or the
    /// catalog's.
    pub pipelines: Vec<String>,
    /// Each caller's reads per minute (`CALLER_READS_PER_MINUTE`).
    pub reads: ReadQuota,
}

impl<B: Backend> Deps<B> {
    pub fn new(config: ToolsConfig, ports: B, clock: Clock) -> Self {
        Self {
            settings: config.job_settings(),
            pipelines: config
                .serves_training()
                .then(|| config.pipeline_name.clone())
                .into_iter()
                .collect(),
            reads: ReadQuota::new(config.quotas.reads_per_minute),
            config,
            ports,
            clock,
            catalog: None,
        }
    }

    /// The tools are `catalog`'s, in place of submit_job and trigger_training; the runs the
    /// tools start and show are its pipelines'.
    pub fn with_catalog(self, catalog: Catalog) -> Self {
        Self {
            pipelines: catalog.pipelines().into_iter().map(str::to_owned).collect(),
            catalog: Some(catalog),
            ..self
        }
    }

    /// Whether the training tools are served: the deployment starts some pipeline's runs.
    pub fn serves_training(&self) -> bool {
        !self.pipelines.is_empty()
    }

    /// SageMaker as a person's answers reach it: a CallbackStep's through the pipeline, a
    /// model's approval through the registry.
    pub fn answering(&self) -> Answering<'_, B::Pipeline, B::Lineage> {
        Answering {
            pipeline: self.ports.pipeline(),
            registry: self.ports.lineage(),
        }
    }

    /// The registry a run's model approval is read from, when the gate is on
    /// (`APPROVAL_GATE`); None: a run is done when its pipeline is.
    pub fn approval_gate(&self) -> Option<&B::Lineage> {
        self.config.approval_gate.then(|| self.ports.lineage())
    }
}

/// Why the ports could not be set up at cold start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("the webhook client did not start: {0}")]
    Webhooks(String),
}

/// How long a new callback has to answer its challenge (`events/subscribe` waits on it).
pub const CALLBACK_TIMEOUT: Duration = Duration::from_secs(5);

/// The production ports: DynamoDB, S3, SageMaker Runtime, SageMaker and EventBridge.
mod aws {
    use super::*;
    use adapters::aws::{dynamodb_client, load_sdk_config, s3_client};
    use adapters::dynamodb::{
        DynamoEventLog, DynamoJobs, DynamoRuns, DynamoSubscriptions, WARM_UP_WITHIN,
    };
    use adapters::eventbridge::{eventbridge_client, EventBridgeEvents};
    use adapters::s3::S3Objects;
    use adapters::sagemaker::{sagemaker_client, SageMakerLineage, SageMakerPipeline};
    use adapters::sagemaker_runtime::{sagemaker_runtime_client, SageMakerEndpoints};
    use adapters::webhook::HttpWebhooks;

    pub type AwsPorts = Ports<
        DynamoJobs,
        DynamoRuns,
        S3Objects,
        SageMakerEndpoints,
        SageMakerPipeline,
        SageMakerLineage,
        Option<EventBridgeEvents>,
        DynamoEventLog,
        DynamoSubscriptions,
        HttpWebhooks,
    >;

    impl Deps<AwsPorts> {
        /// The SDK clients, from the standard AWS configuration (region, credentials, endpoints),
        /// and the tool catalog when `TOOL_CATALOG` names one: a catalog that fails its check
        /// stops the cold start, naming each mistake (a tool whose schema does not compile is
        /// refused alone; `check-catalog` refuses the catalog for it before a deploy).
        pub async fn connect(config: ToolsConfig) -> Result<Self, StartError> {
            let catalog = config
                .tool_catalog
                .as_deref()
                .map(|path| Catalog::load_with(path, Schemas::EachAlone))
                .transpose()?;
            let sdk = load_sdk_config().await;
            let invoke_attempt_timeout = Duration::from_secs(config.invoke_attempt_timeout_secs);
            // Built here, in init (adapters::aws::SdkClient); one DynamoDB client for every table.
            let sagemaker = sagemaker_client(&sdk);
            let dynamodb = dynamodb_client(&sdk);
            let events = config.events.as_ref();
            let allow_local = events.is_some_and(|e| e.allow_local_callbacks);
            let ports = Ports {
                jobs: DynamoJobs::new(dynamodb.clone(), &config.jobs.results_table),
                runs: DynamoRuns::new(dynamodb.clone(), &config.pipeline_results_table),
                objects: S3Objects::new(s3_client(&sdk)),
                endpoint: SageMakerEndpoints::new(
                    sagemaker_runtime_client(&sdk, invoke_attempt_timeout),
                    sagemaker.clone(),
                ),
                pipeline: SageMakerPipeline::new(sagemaker.clone()),
                lineage: SageMakerLineage::new(sagemaker),
                events: config
                    .event_bus_name
                    .as_ref()
                    .map(|bus| EventBridgeEvents::new(eventbridge_client(&sdk), bus)),
                event_log: events.map(|e| DynamoEventLog::new(dynamodb.clone(), &e.events_table)),
                subscriptions: events
                    .and_then(|e| e.subscriptions_table.as_ref())
                    .map(|table| DynamoSubscriptions::new(dynamodb.clone(), table)),
                webhooks: HttpWebhooks::new(CALLBACK_TIMEOUT, allow_local)
                    .map_err(StartError::Webhooks)?,
            };
            // The SDK's one-time work, here in init rather than in the first call: every table
            // is read and written through this one client, and its connection.
            let warm_up = ports.jobs.warm_up(WARM_UP_WITHIN).await;
            tracing::debug!(?warm_up, "the DynamoDB connection's warm-up read");
            let deps = Deps::new(config, ports, Clock::system());
            Ok(match catalog {
                Some(catalog) => deps.with_catalog(catalog),
                None => deps,
            })
        }
    }
}
pub use aws::AwsPorts;
