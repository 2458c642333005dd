//! The small traits the use cases need, with their errors. Adapters implement them over the
//! AWS SDK; `fakes` implements them in memory; `port_contract` holds both to the same behaviour.

use std::future::Future;

use domain::approval::ModelDecision;
use domain::callback::CallbackToken;
use domain::caller::Owner;
use domain::completion::JobCompletion;
use domain::delivery::{Answer, Delivery};
use domain::events::{Cursor, Event};
use domain::ids::InferenceId;
use domain::item::{Applied, Write};
use domain::job::{Job, Locations};
use domain::lineage::{Association, Direction};
use domain::pipeline_status::{ExecutionStatus, StepState};
use domain::progress::Progress;
use domain::question::StepAnswer;
use domain::quota::{WaitSlot, WindowCounter};
use domain::run::{CompletionMessage, Run};
use domain::s3_location::S3Location;
use domain::subscription::Subscription;

/// What an AWS call's failure means to a caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsFailure {
    pub code: Option<String>,
    pub message: String,
    /// The same call may succeed if retried (throttling, 5xx, timeouts, network failures).
    pub retryable: bool,
    /// The request may have taken effect although the call failed (a 5xx answer, a timeout, a
    /// connection lost after sending): the caller cannot tell.
    pub ambiguous: bool,
}

impl AwsFailure {
    /// The failure without AWS's message (which can name a role, an account, a table or a
    /// bucket): what may be stored on a caller's item and shown to that caller.
    pub fn summary(&self) -> String {
        let code = self.code.as_deref().unwrap_or("no error code");
        let retry = if self.retryable {
            "transient; retrying may succeed"
        } else {
            "retrying will not help"
        };
        format!("{code} ({retry})")
    }
}

impl std::fmt::Display for AwsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(code) = &self.code {
            write!(f, "{code}: ")?;
        }
        write!(f, "{}", self.message)?;
        f.write_str(if self.retryable {
            " (transient; retrying may succeed)"
        } else {
            " (retrying will not help)"
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// DynamoDB refused the item itself (ValidationException): retrying the same write cannot help.
    #[error("DynamoDB {operation} on table {table} rejected the item: {message}")]
    Rejected {
        operation: &'static str,
        table: String,
        message: String,
    },
    #[error("DynamoDB {operation} on table {table} failed: {failure}")]
    Aws {
        operation: &'static str,
        table: String,
        failure: AwsFailure,
    },
    #[error("table {table} holds an item this code cannot read: {message}")]
    Corrupt { table: String, message: String },
}

/// The results table. Every change is one conditional write built by `domain::job`.
pub trait JobStore: Sync {
    /// One strongly consistent read; an item past its `ttl` is absent.
    fn get(
        &self,
        inference_id: &InferenceId,
        now: chrono::DateTime<chrono::Utc>,
    ) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send;

    fn write(&self, write: &Write) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Several jobs in one eventually consistent read (at most [`MAX_BATCH_READ`] ids): what a
    /// listen's round looks at. One answer per id, in order; None for an absent or expired one.
    /// No ids: no read.
    fn get_many(
        &self,
        inference_ids: &[String],
        now: chrono::DateTime<chrono::Utc>,
    ) -> impl Future<Output = Result<Vec<Option<Job>>, StoreError>> + Send;

    /// Whether the table can hold `value` inline (as a native attribute of at most `max_bytes`);
    /// the store's own rules decide, so an output it cannot take is stored as a pointer.
    fn fits_inline(&self, value: &serde_json::Value, max_bytes: u64) -> bool;
}

/// Each caller's quota counters and wait slots (see [`domain::quota`]), each change one
/// conditional write. A port of its own, though its items share the results table: a use case
/// that counts or waits says so in its bounds, and what it writes is said in the quota's words.
pub trait QuotaStore: Sync {
    /// Takes `n` from `counter`'s window: refused, with what is stored, when that would pass
    /// its limit.
    fn take(
        &self,
        counter: &WindowCounter,
        n: u32,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Gives one back to `counter`'s window (never below zero: refused then).
    fn give_back(
        &self,
        counter: &WindowCounter,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Holds `slot` until `until` (epoch seconds) when it is free at `now_secs`: refused, with
    /// the holder's lease, when another wait holds it.
    fn claim(
        &self,
        slot: &WaitSlot,
        until: i64,
        now_secs: i64,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Frees `slot` if its lease is still this wait's (refused otherwise: nothing changes).
    fn free(&self, slot: &WaitSlot) -> impl Future<Output = Result<Applied, StoreError>> + Send;
}

/// The results table holds the quota's items, under keys no job has: every job store is a
/// quota store.
impl<S: JobStore> QuotaStore for S {
    async fn take(&self, counter: &WindowCounter, n: u32) -> Result<Applied, StoreError> {
        self.write(&counter.take_many(n)).await
    }

    async fn give_back(&self, counter: &WindowCounter) -> Result<Applied, StoreError> {
        self.write(&counter.give_back()).await
    }

    async fn claim(&self, slot: &WaitSlot, until: i64, now: i64) -> Result<Applied, StoreError> {
        self.write(&slot.claim(until, now)).await
    }

    async fn free(&self, slot: &WaitSlot) -> Result<Applied, StoreError> {
        self.write(&slot.free()).await
    }
}

/// Each owner's events, in the order they happened, for MCP Events subscribers to read from a
/// cursor; each kept for a while (its `ttl`), then gone.
pub trait EventLog: Sync {
    /// Logs `event` once, until `ttl` (epoch seconds), naming the webhook subscriptions it is
    /// to be sent to (`Event::append`): refused when it is logged already.
    fn append(
        &self,
        event: &Event,
        deliver_to: &[String],
        ttl: i64,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// `owner`'s events after `after` (from the oldest kept, when None), oldest first, at most
    /// `limit`, by one strongly consistent read; an event past its `ttl` is absent.
    fn read(
        &self,
        owner: &Owner,
        after: Option<&Cursor>,
        limit: u32,
        now: chrono::DateTime<chrono::Utc>,
    ) -> impl Future<Output = Result<Vec<Event>, StoreError>> + Send;
}

/// The MCP Events webhook subscriptions: one partition per owner. Every change is one
/// conditional write built by `domain::subscription`.
pub trait SubscriptionStore: Sync {
    fn write(&self, write: &Write) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// One subscription by its owner and id, eventually consistent (a delivery's read);
    /// None when absent or not readable.
    fn get(
        &self,
        owner: &Owner,
        id: &str,
    ) -> impl Future<Output = Result<Option<Subscription>, StoreError>> + Send;

    /// Every subscription of `owner` (lapsed ones too: the domain tells), by strongly
    /// consistent reads of at most [`MAX_SUBSCRIPTION_ITEMS`] items.
    fn of_owner(
        &self,
        owner: &Owner,
    ) -> impl Future<Output = Result<Vec<Subscription>, StoreError>> + Send;

    /// Deletes one; whether there was one.
    fn delete(
        &self,
        owner: &Owner,
        id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// The most items one owner's read of subscriptions takes (live ones are bounded by
/// `domain::subscription::MAX_PER_CALLER`; lapsed ones wait for their TTL).
pub const MAX_SUBSCRIPTION_ITEMS: usize = 200;

/// A delivery queue call that failed.
#[derive(Debug, thiserror::Error)]
#[error("SQS {operation} on {queue_url} failed: {failure}")]
pub struct DeliveryQueueError {
    pub operation: &'static str,
    pub queue_url: String,
    pub failure: AwsFailure,
}

/// Where deliveries wait for another try (a first try failed, or the subscription's earlier
/// ones wait): one ordered group per subscription.
pub trait DeliveryQueue: Sync {
    /// Queues each delivery (at most 10 per call to SQS; more are sent in several).
    fn enqueue(
        &self,
        deliveries: &[Delivery],
    ) -> impl Future<Output = Result<(), DeliveryQueueError>> + Send;

    /// Puts a received message back for `after` (its receipt handle names it): the next
    /// attempt waits that long (zero: it is visible again at once).
    fn retry_in(
        &self,
        receipt_handle: &str,
        after: std::time::Duration,
    ) -> impl Future<Output = Result<(), DeliveryQueueError>> + Send;
}

/// One signed POST to a subscriber's callback.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookPost {
    pub url: String,
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature`, `X-MCP-Subscription-Id`.
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A receiver's answer: its status, and the start of its body (a verification's echo).
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookReply {
    pub answer: Answer,
    /// At most [`MAX_REPLY_BYTES`]; never logged or shown.
    pub body: Vec<u8>,
}

/// The most of a receiver's body read: a challenge's echo is small.
pub const MAX_REPLY_BYTES: usize = 4096;

/// Where webhooks are sent: https only (or a local address where the deployment allows it),
/// the address resolved and checked at connect time, no redirects, a short timeout.
pub trait Webhooks: Sync {
    /// The receiver's reply; a URL that may not be called is a `Failed` answer before any
    /// connection.
    fn post(&self, post: &WebhookPost) -> impl Future<Output = WebhookReply> + Send;
}

/// The pipeline results table.
pub trait RunStore: Sync {
    fn write(&self, write: &Write) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Every stored run of a session (expired ones too: the domain filters), all pages.
    fn query_session(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Result<Vec<Run>, StoreError>> + Send;

    /// Several runs in one eventually consistent read (at most [`MAX_BATCH_READ`] keys), by
    /// their session key ([`domain::run::session_key`]) and execution ARN. One answer
    /// per key, in order (expired ones too: the domain filters); None for an absent one. No
    /// keys: no read.
    fn get_many(
        &self,
        keys: &[(String, String)],
    ) -> impl Future<Output = Result<Vec<Option<Run>>, StoreError>> + Send;
}

/// The most items one batch read takes (DynamoDB's BatchGetItem limit).
pub const MAX_BATCH_READ: usize = 100;

/// The first bytes of an object, and how long the whole object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPrefix {
    pub bytes: Vec<u8>,
    pub total_len: u64,
    /// The object's `Content-Type`, as stored with it.
    pub content_type: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("S3 object {location} does not exist")]
    NotFound { location: S3Location },
    #[error("S3 {operation} of {location} failed: {failure}")]
    Aws {
        operation: &'static str,
        location: S3Location,
        failure: AwsFailure,
    },
    #[error("reading the body of {location} failed: {message}")]
    Body {
        location: S3Location,
        message: String,
    },
    #[error("presigning a GET of {location} failed: {message}")]
    Presign {
        location: S3Location,
        message: String,
    },
}

/// Job inputs, outputs and failure objects in S3.
pub trait ObjectStore: Sync {
    /// At most `max + 1` bytes from the start of the object, so callers can tell "exactly
    /// `max`" from "larger", and the object's full length. A huge output is never downloaded.
    fn read_prefix(
        &self,
        location: &S3Location,
        max: u64,
    ) -> impl Future<Output = Result<ObjectPrefix, ObjectError>> + Send;

    fn put_json(
        &self,
        location: &S3Location,
        body: Vec<u8>,
    ) -> impl Future<Output = Result<(), ObjectError>> + Send;

    /// A GET URL signed locally (no call to S3), valid for `expires_in`.
    fn presign_get(
        &self,
        location: &S3Location,
        expires_in: std::time::Duration,
    ) -> impl Future<Output = Result<String, ObjectError>> + Send;
}

/// Where an asynchronous inference request's input is: in S3, or in the request itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvokeInput {
    /// `InputLocation`: an `s3://` URI.
    S3(String),
    /// `Body`: at most 128,000 bytes.
    Inline(Vec<u8>),
}

/// One asynchronous inference request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvokeRequest {
    pub endpoint_name: String,
    pub inference_id: InferenceId,
    pub input: InvokeInput,
    pub content_type: String,
    pub accept: Option<String>,
    pub invocation_timeout_secs: u32,
    pub request_ttl_secs: u32,
}

/// SageMaker's async endpoints (InvokeEndpointAsync). The endpoints a deployment may invoke are
/// its catalog's; IAM grants exactly those.
pub trait AsyncInvoker: Sync {
    fn invoke(
        &self,
        request: &InvokeRequest,
    ) -> impl Future<Output = Result<Locations, AwsFailure>> + Send;

    /// How many instances the endpoint runs now (its variants' current counts); None when
    /// SageMaker does not say. An endpoint scaled to zero queues requests until one starts.
    fn current_instances(
        &self,
        endpoint_name: &str,
    ) -> impl Future<Output = Result<Option<u32>, AwsFailure>> + Send;
}

/// What DescribePipelineExecution says of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionDescription {
    pub status: ExecutionStatus,
    pub failure_reason: Option<String>,
    /// `PipelineExecutionDescription`: the session and owner tag trigger_training set.
    pub description: Option<String>,
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepStatus {
    pub name: String,
    pub status: StepState,
    pub failure_reason: Option<String>,
    /// The model package a RegisterModel step registered (its `Metadata.RegisterModel.Arn`).
    pub model_package_arn: Option<String>,
    /// The token a CallbackStep waits on (its `Metadata.Callback.CallbackToken`): what makes a
    /// callback message this run's.
    pub callback_token: Option<CallbackToken>,
}

/// A StartPipelineExecution request.
#[derive(Debug, Clone, PartialEq)]
pub struct StartRequest {
    /// The pipeline to run (one the deployment's IAM grants).
    pub pipeline_name: String,
    pub description: String,
    /// (pipeline parameter name, value), only those the caller gave.
    pub parameters: Vec<(String, String)>,
    pub client_request_token: String,
    /// Passed only when the caller or configuration asks: otherwise the pipeline's own setting.
    pub max_parallel_steps: Option<u32>,
}

/// SageMaker pipeline runs: starts of the pipeline a request names; describes of any run.
pub trait PipelineControl: Sync {
    fn start(
        &self,
        request: &StartRequest,
    ) -> impl Future<Output = Result<String, AwsFailure>> + Send;

    fn describe(
        &self,
        execution_arn: &str,
    ) -> impl Future<Output = Result<ExecutionDescription, AwsFailure>> + Send;

    /// Every step, in the order they started (all pages).
    fn steps(
        &self,
        execution_arn: &str,
    ) -> impl Future<Output = Result<Vec<StepStatus>, AwsFailure>> + Send;

    /// Asks SageMaker to stop a run (it goes Stopping, then Stopped).
    fn stop(&self, execution_arn: &str) -> impl Future<Output = Result<(), AwsFailure>> + Send;

    /// The pipeline definition the run executes (DescribePipelineDefinitionForExecution), as
    /// the JSON text SageMaker keeps.
    fn definition(
        &self,
        execution_arn: &str,
    ) -> impl Future<Output = Result<String, AwsFailure>> + Send;

    /// Answers the CallbackStep waiting on `token` (SendPipelineExecutionStepSuccess or
    /// …StepFailure), idempotently: the same answer sent again is the same request.
    fn answer_step(
        &self,
        token: &CallbackToken,
        answer: &StepAnswer,
    ) -> impl Future<Output = Result<(), AwsFailure>> + Send;
}

#[derive(Debug, thiserror::Error)]
#[error("SQS SendMessage to {queue_url} failed: {failure}")]
pub struct QueueError {
    pub queue_url: String,
    pub failure: AwsFailure,
}

/// Where a waiting use case reports how the work moves: an MCP client that asked for progress.
/// Sending is best effort; a client gone away is the transport's concern, not the use case's.
pub trait ProgressSink<E>: Send {
    fn send(&mut self, update: Progress<E>) -> impl Future<Output = ()> + Send;
}

/// No one asked for progress: nothing is sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl<E: Send> ProgressSink<E> for NoProgress {
    async fn send(&mut self, _update: Progress<E>) {}
}

/// A sink when someone asked for progress, nothing otherwise.
impl<E: Send, S: ProgressSink<E>> ProgressSink<E> for Option<S> {
    async fn send(&mut self, update: Progress<E>) {
        if let Some(sink) = self {
            sink.send(update).await;
        }
    }
}

/// Where recorded job outcomes are announced (an EventBridge bus).
pub trait CompletionEvents: Sync {
    fn put(
        &self,
        completion: &JobCompletion,
    ) -> impl Future<Output = Result<(), EventError>> + Send;
}

/// No bus configured: nothing is announced.
impl<E: CompletionEvents> CompletionEvents for Option<E> {
    async fn put(&self, completion: &JobCompletion) -> Result<(), EventError> {
        match self {
            Some(events) => events.put(completion).await,
            None => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("EventBridge PutEvents to bus {bus} failed: {failure}")]
pub struct EventError {
    pub bus: String,
    pub failure: AwsFailure,
}

/// Where completed runs are announced.
pub trait CompletionQueue: Sync {
    fn send(
        &self,
        message: &CompletionMessage,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}

/// One page of ListAssociations.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AssociationPage {
    pub associations: Vec<Association>,
    /// Where the next page starts; None on the last.
    pub next_token: Option<String>,
}

/// What DescribeArtifact says of a lineage artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactDescription {
    pub arn: String,
    pub name: Option<String>,
    /// `DataSet`, `Model`, `Image`, ... as SageMaker or its creator typed it.
    pub artifact_type: Option<String>,
    /// What it stands for: an S3 URI, an image URI, a model package's ARN.
    pub source_uri: Option<String>,
}

/// What DescribeModelPackage says of a model package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPackageDescription {
    pub arn: String,
    pub group_name: Option<String>,
    pub version: Option<i32>,
    /// Pending, InProgress, Completed, Failed or Deleting.
    pub status: Option<String>,
    /// Approved, Rejected or PendingManualApproval.
    pub approval_status: Option<String>,
    /// `MetadataProperties.GeneratedBy`: what made it, such as a pipeline execution's ARN.
    pub generated_by: Option<String>,
    /// RFC 3339.
    pub created_at: Option<String>,
}

/// SageMaker's lineage: associations between lineage entities, the artifacts that stand for
/// a resource, and the descriptions of artifacts and model packages. Nothing in it is per
/// caller: IAM scopes it to the account and region.
pub trait LineageGraph: Sync {
    /// One page of the associations that end at `arn` (upstream) or start from it
    /// (downstream), of every association type. `arn` must be a lineage entity's (see
    /// [`domain::lineage::EntityKind::has_associations`]): SageMaker refuses others.
    fn associations(
        &self,
        arn: &str,
        direction: Direction,
        next_token: Option<&str>,
    ) -> impl Future<Output = Result<AssociationPage, AwsFailure>> + Send;

    /// The ARNs of the artifacts whose source URI is `source_uri` (all pages).
    fn artifacts_with_source(
        &self,
        source_uri: &str,
    ) -> impl Future<Output = Result<Vec<String>, AwsFailure>> + Send;

    fn describe_artifact(
        &self,
        arn: &str,
    ) -> impl Future<Output = Result<ArtifactDescription, AwsFailure>> + Send;

    fn describe_model_package(
        &self,
        arn: &str,
    ) -> impl Future<Output = Result<ModelPackageDescription, AwsFailure>> + Send;
}

/// SageMaker's model registry: a person's decision on a model package a run registered.
pub trait ModelRegistry: Sync {
    /// UpdateModelPackage: `ModelApprovalStatus` Approved or Rejected, with its
    /// `ApprovalDescription`.
    fn decide(
        &self,
        model_package_arn: &str,
        decision: &ModelDecision,
    ) -> impl Future<Output = Result<(), AwsFailure>> + Send;
}
