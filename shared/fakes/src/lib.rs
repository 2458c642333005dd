//! In-memory implementations of the ports, for fast tests of the use cases. The stores apply
//! the very same [`Write`]s the DynamoDB adapter sends, through [`Write::apply_to`], so they
//! cannot drift from the conditions; `port_contract` checks both against the same expectations.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use domain::callback::CallbackToken;
use domain::completion::JobCompletion;
use domain::item::{Applied, Attr, Change, Item, Write, WriteOp};
use domain::job::{attr, Job, Locations};
use domain::pipeline_status::{PipelineStatus, StepState};
use domain::question::StepAnswer;
use domain::run::{self, CompletionMessage, Run};
use domain::s3_location::S3Location;
use ports::*;

fn key_of(write: &Write, name: &str) -> String {
    write
        .key
        .get(name)
        .and_then(Attr::as_s)
        .unwrap_or_default()
        .to_owned()
}

/// Applies `write` to the item under `key` as DynamoDB would, returning the stored item on refusal.
fn apply<K: std::hash::Hash + Eq>(
    items: &Mutex<HashMap<K, Item>>,
    key: K,
    write: &Write,
) -> Applied {
    let mut items = items.lock().unwrap();
    let stored = items.get(&key);
    match write.apply_to(stored) {
        Some(item) => {
            let previous = items.insert(key, item);
            Applied::Written { previous }
        }
        None => Applied::Refused(stored.cloned()),
    }
}

#[derive(Default)]
pub struct MemoryJobs {
    items: Mutex<HashMap<String, Item>>,
    reject_inline: Mutex<bool>,
    unavailable: Mutex<bool>,
    calls: Mutex<(usize, usize)>,
}

impl MemoryJobs {
    /// How many reads and writes were made, as DynamoDB would count GetItem and the
    /// conditional writes.
    pub fn calls(&self) -> (usize, usize) {
        *self.calls.lock().unwrap()
    }

    /// The job as stored, expired or not.
    pub fn job(&self, inference_id: &str) -> Option<Job> {
        let items = self.items.lock().unwrap();
        items.get(inference_id).map(|i| Job::from_item(i).unwrap())
    }

    /// A `pending` item as submit_job writes it, with its submit time.
    pub fn insert_pending(&self, inference_id: &str, submitted_at: &str) {
        self.insert(
            inference_id,
            &[
                (attr::STATUS, Attr::s("pending")),
                (attr::STAGE, Attr::s("invoked")),
                (attr::SUBMITTED_AT, Attr::s(submitted_at)),
            ],
        );
    }

    /// A completed job whose output is stored as a pointer only.
    pub fn insert_completed_pointer(&self, inference_id: &str, output_location: &str) {
        self.insert(
            inference_id,
            &[
                (attr::STATUS, Attr::s("completed")),
                (attr::OUTPUT_LOCATION, Attr::s(output_location)),
            ],
        );
    }

    fn insert(&self, inference_id: &str, attrs: &[(&str, Attr)]) {
        let mut item: Item = attrs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        item.insert(attr::INFERENCE_ID.into(), Attr::s(inference_id));
        self.items.lock().unwrap().insert(inference_id.into(), item);
    }

    /// Every write with an inline result fails from now on, as DynamoDB's ValidationException would.
    pub fn reject_inline_results(&self) {
        *self.reject_inline.lock().unwrap() = true;
    }

    /// Every write fails from now on, as an unreachable table's would.
    pub fn fail_writes(&self) {
        *self.unavailable.lock().unwrap() = true;
    }
}

impl JobStore for MemoryJobs {
    async fn get(&self, inference_id: &str, now: DateTime<Utc>) -> Result<Option<Job>, StoreError> {
        tokio::task::yield_now().await;
        self.calls.lock().unwrap().0 += 1;
        let item = self.items.lock().unwrap().get(inference_id).cloned();
        let job =
            item.map(|i| Job::from_item(&i))
                .transpose()
                .map_err(|e| StoreError::Corrupt {
                    table: "memory".into(),
                    message: e.to_string(),
                })?;
        Ok(job.filter(|j| !j.is_expired(now)))
    }

    async fn get_many(
        &self,
        inference_ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<Job>>, StoreError> {
        let mut jobs = Vec::with_capacity(inference_ids.len());
        for id in inference_ids {
            jobs.push(self.get(id, now).await?);
        }
        Ok(jobs)
    }

    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        tokio::task::yield_now().await;
        self.calls.lock().unwrap().1 += 1;
        let has_result = matches!(&write.op, WriteOp::Update(changes)
            if changes.iter().any(|c| matches!(c, Change::Set(attr::RESULT, _))));
        if *self.unavailable.lock().unwrap() {
            return Err(StoreError::Aws {
                operation: "UpdateItem",
                table: "memory".into(),
                failure: AwsFailure {
                    code: Some("ServiceUnavailable".into()),
                    message: "down".into(),
                    retryable: true,
                    ambiguous: true,
                },
            });
        }
        if has_result && *self.reject_inline.lock().unwrap() {
            return Err(StoreError::Rejected {
                operation: "UpdateItem",
                table: "memory".into(),
                message: "inline result rejected".into(),
            });
        }
        Ok(apply(&self.items, key_of(write, attr::INFERENCE_ID), write))
    }

    /// DynamoDB's rules: the fake stands in for the results table.
    fn fits_inline(&self, value: &serde_json::Value, max_bytes: u64) -> bool {
        domain::item_limits::fits_inline(value, max_bytes)
    }
}

#[derive(Default)]
pub struct MemoryRuns {
    items: Mutex<HashMap<(String, String), Item>>,
}

impl MemoryRuns {
    pub fn all(&self) -> Vec<Run> {
        self.items
            .lock()
            .unwrap()
            .values()
            .map(Run::from_item)
            .collect()
    }
}

impl RunStore for MemoryRuns {
    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        tokio::task::yield_now().await;
        let key = (
            key_of(write, run::attr::SESSION_ID),
            key_of(write, run::attr::EXECUTION_ARN),
        );
        Ok(apply(&self.items, key, write))
    }

    async fn query_session(&self, session_id: &str) -> Result<Vec<Run>, StoreError> {
        let items = self.items.lock().unwrap();
        Ok(items
            .iter()
            .filter(|((s, _), _)| s == session_id)
            .map(|(_, i)| Run::from_item(i))
            .collect())
    }

    async fn get_many(&self, keys: &[(String, String)]) -> Result<Vec<Option<Run>>, StoreError> {
        tokio::task::yield_now().await;
        let items = self.items.lock().unwrap();
        Ok(keys
            .iter()
            .map(|key| items.get(key).map(Run::from_item))
            .collect())
    }
}

#[derive(Default)]
pub struct MemoryObjects {
    objects: Mutex<HashMap<String, Vec<u8>>>,
    /// Content types of objects that have one (every object `put_json` writes).
    content_types: Mutex<HashMap<String, String>>,
    reads: Mutex<usize>,
}

impl MemoryObjects {
    pub fn with(self, location: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.objects
            .lock()
            .unwrap()
            .insert(location.to_owned(), bytes.into());
        self
    }

    /// An object stored with its content type, as SageMaker writes an output.
    pub fn with_typed(self, location: &str, bytes: impl Into<Vec<u8>>, content_type: &str) -> Self {
        self.content_types
            .lock()
            .unwrap()
            .insert(location.to_owned(), content_type.to_owned());
        self.with(location, bytes)
    }

    pub fn has(&self, location: &str) -> bool {
        self.objects.lock().unwrap().contains_key(location)
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.objects.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many reads were made (S3 probes and output reads).
    pub fn reads(&self) -> usize {
        *self.reads.lock().unwrap()
    }
}

impl ObjectStore for MemoryObjects {
    async fn read_prefix(
        &self,
        location: &S3Location,
        max: u64,
    ) -> Result<ObjectPrefix, ObjectError> {
        *self.reads.lock().unwrap() += 1;
        let objects = self.objects.lock().unwrap();
        let bytes = objects
            .get(&location.to_string())
            .ok_or_else(|| ObjectError::NotFound {
                location: location.clone(),
            })?;
        let take = bytes
            .len()
            .min(usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX));
        let content_type = self.content_types.lock().unwrap();
        Ok(ObjectPrefix {
            bytes: bytes[..take].to_vec(),
            total_len: bytes.len() as u64,
            content_type: content_type.get(&location.to_string()).cloned(),
        })
    }

    async fn put_json(&self, location: &S3Location, body: Vec<u8>) -> Result<(), ObjectError> {
        self.content_types
            .lock()
            .unwrap()
            .insert(location.to_string(), "application/json".to_owned());
        self.objects
            .lock()
            .unwrap()
            .insert(location.to_string(), body);
        Ok(())
    }

    async fn presign_get(
        &self,
        location: &S3Location,
        _expires_in: std::time::Duration,
    ) -> Result<String, ObjectError> {
        Ok(format!(
            "https://presigned.example/{}/{}",
            location.bucket, location.key
        ))
    }
}

/// How the fake endpoint fails the next invoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvokeFault {
    /// A 500 after the request may have been queued.
    Ambiguous,
    /// A 400: the endpoint does not exist.
    Refused,
}

pub struct FakeInvoker {
    /// The endpoints that exist; any other is refused as SageMaker refuses it.
    endpoints: Vec<String>,
    faults: Mutex<VecDeque<InvokeFault>>,
    calls: Mutex<Vec<InvokeRequest>>,
    /// What DescribeEndpoint would say of the instances (one, unless set).
    instances: Mutex<Option<u32>>,
}

impl FakeInvoker {
    pub fn new(endpoint_name: &str) -> Self {
        Self::serving(&[endpoint_name])
    }

    /// Async endpoints named `endpoint_names`.
    pub fn serving(endpoint_names: &[&str]) -> Self {
        Self {
            endpoints: endpoint_names.iter().map(|e| (*e).to_owned()).collect(),
            faults: Mutex::default(),
            calls: Mutex::default(),
            instances: Mutex::new(Some(1)),
        }
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<InvokeRequest> {
        self.calls.lock().unwrap().clone()
    }

    pub fn fail_next(&self, fault: InvokeFault) {
        self.faults.lock().unwrap().push_back(fault);
    }

    /// The endpoint now runs this many instances (0: scaled to zero).
    pub fn set_instances(&self, count: Option<u32>) {
        *self.instances.lock().unwrap() = count;
    }

    /// How many invokes were made, of any id.
    pub fn invocations(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// How many times this inference id was invoked.
    pub fn calls(&self, inference_id: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.inference_id == inference_id)
            .count()
    }
}

impl AsyncInvoker for FakeInvoker {
    async fn invoke(&self, request: &InvokeRequest) -> Result<Locations, AwsFailure> {
        tokio::task::yield_now().await;
        self.calls.lock().unwrap().push(request.clone());
        let refused = |message: String| AwsFailure {
            code: Some("ValidationError".into()),
            message,
            retryable: false,
            ambiguous: false,
        };
        if !self.endpoints.contains(&request.endpoint_name) {
            return Err(refused(format!(
                "Endpoint {} not found.",
                request.endpoint_name
            )));
        }
        if matches!(&request.input, InvokeInput::Inline(body) if body.len() > 128_000) {
            return Err(refused("Body is limited to 128000 bytes.".into()));
        }
        let fault = self.faults.lock().unwrap().pop_front();
        match fault {
            None => Ok(Locations {
                output_location: Some(format!("s3://b/outputs/{}.out", request.inference_id)),
                failure_location: Some(format!("s3://b/failures/{}.out", request.inference_id)),
            }),
            Some(InvokeFault::Ambiguous) => Err(AwsFailure {
                code: Some("InternalFailure".into()),
                message: "An internal error occurred".into(),
                retryable: true,
                ambiguous: true,
            }),
            Some(InvokeFault::Refused) => Err(refused(format!(
                "Endpoint {} not found.",
                request.endpoint_name
            ))),
        }
    }

    async fn current_instances(&self, _endpoint_name: &str) -> Result<Option<u32>, AwsFailure> {
        tokio::task::yield_now().await;
        Ok(*self.instances.lock().unwrap())
    }
}

/// SageMaker pipeline runs as the contract tests expect them: a token returns its first run.
#[derive(Default)]
pub struct FakePipeline {
    tokens: Mutex<HashMap<String, String>>,
    started: Mutex<Vec<StartRequest>>,
    failure_reasons: Mutex<HashMap<String, String>>,
    describe_fault: Mutex<Option<AwsFailure>>,
    stopped: Mutex<Vec<String>>,
    descriptions: Mutex<HashMap<String, String>>,
    /// Runs that ended Succeeded, with the model package each registered.
    succeeded: Mutex<HashMap<String, String>>,
    /// Each step answered (its token, as SageMaker would see it) and how.
    answers: Mutex<Vec<(String, StepAnswer)>>,
    answer_fault: Mutex<Option<AwsFailure>>,
    /// Each run's CallbackSteps as ListPipelineExecutionSteps lists them.
    callbacks: Mutex<HashMap<String, Vec<StepStatus>>>,
    steps_fault: Mutex<Option<AwsFailure>>,
}

impl FakePipeline {
    /// The run lists a CallbackStep waiting (Executing) on `token`, as SageMaker lists one once
    /// it has sent its message.
    pub fn wait_on_callback(&self, execution_arn: &str, token: &str) {
        let step = StepStatus {
            name: "ApproveModel".into(),
            status: StepState::Executing,
            failure_reason: None,
            model_package_arn: None,
            callback_token: Some(
                CallbackToken::parse(token).expect("a token of 10 letters and digits"),
            ),
        };
        self.callbacks
            .lock()
            .unwrap()
            .entry(execution_arn.to_owned())
            .or_default()
            .push(step);
    }

    /// The CallbackStep waiting on `token` moves to `status` (answered, failed, stopped).
    pub fn end_callback(&self, execution_arn: &str, token: &str, status: StepState) {
        let token = CallbackToken::parse(token);
        let mut callbacks = self.callbacks.lock().unwrap();
        for step in callbacks.get_mut(execution_arn).into_iter().flatten() {
            if step.callback_token == token {
                step.status = status.clone();
            }
        }
    }

    /// Every ListPipelineExecutionSteps from now on fails so (None: answers again).
    pub fn fail_steps(&self, failure: Option<AwsFailure>) {
        *self.steps_fault.lock().unwrap() = failure;
    }

    pub fn started(&self) -> Vec<StartRequest> {
        self.started.lock().unwrap().clone()
    }

    pub fn set_failure_reason(&self, execution_arn: &str, reason: &str) {
        self.failure_reasons
            .lock()
            .unwrap()
            .insert(execution_arn.into(), reason.into());
    }

    /// The runs asked to stop, in order.
    pub fn stopped(&self) -> Vec<String> {
        self.stopped.lock().unwrap().clone()
    }

    /// The steps answered, in order: (token, answer).
    pub fn answers(&self) -> Vec<(String, StepAnswer)> {
        self.answers.lock().unwrap().clone()
    }

    /// Every answer from now on fails so.
    pub fn fail_answers(&self, failure: AwsFailure) {
        *self.answer_fault.lock().unwrap() = Some(failure);
    }

    pub fn fail_describe(&self, failure: AwsFailure) {
        *self.describe_fault.lock().unwrap() = Some(failure);
    }

    fn known(&self, execution_arn: &str) -> bool {
        self.tokens
            .lock()
            .unwrap()
            .values()
            .any(|a| a == execution_arn)
            || self
                .failure_reasons
                .lock()
                .unwrap()
                .contains_key(execution_arn)
            || self.succeeded.lock().unwrap().contains_key(execution_arn)
    }
}

fn not_found(execution_arn: &str) -> AwsFailure {
    AwsFailure {
        code: Some("ResourceNotFound".into()),
        message: format!("Pipeline execution {execution_arn} does not exist"),
        retryable: false,
        ambiguous: false,
    }
}

impl PipelineControl for FakePipeline {
    async fn answer_step(
        &self,
        token: &CallbackToken,
        answer: &StepAnswer,
    ) -> Result<(), AwsFailure> {
        if let Some(failure) = self.answer_fault.lock().unwrap().clone() {
            return Err(failure);
        }
        self.answers
            .lock()
            .unwrap()
            .push((token.expose().to_owned(), answer.clone()));
        Ok(())
    }

    async fn start(&self, request: &StartRequest) -> Result<String, AwsFailure> {
        let mut tokens = self.tokens.lock().unwrap();
        if let Some(arn) = tokens.get(&request.client_request_token) {
            return Ok(arn.clone());
        }
        // SageMaker writes the pipeline's name in lowercase in its runs' ARNs.
        let arn = format!(
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/{}/execution/{}",
            request.pipeline_name.to_ascii_lowercase(),
            tokens.len() + 1
        );
        tokens.insert(request.client_request_token.clone(), arn.clone());
        self.descriptions
            .lock()
            .unwrap()
            .insert(arn.clone(), request.description.clone());
        self.started.lock().unwrap().push(request.clone());
        Ok(arn)
    }

    async fn describe(&self, execution_arn: &str) -> Result<ExecutionDescription, AwsFailure> {
        if let Some(failure) = self.describe_fault.lock().unwrap().clone() {
            return Err(failure);
        }
        let reason = self
            .failure_reasons
            .lock()
            .unwrap()
            .get(execution_arn)
            .cloned();
        if !self.known(execution_arn) {
            return Err(not_found(execution_arn));
        }
        let stopped = self
            .stopped
            .lock()
            .unwrap()
            .iter()
            .any(|a| a == execution_arn);
        Ok(ExecutionDescription {
            status: if stopped {
                PipelineStatus::Stopped
            } else if self.succeeded.lock().unwrap().contains_key(execution_arn) {
                PipelineStatus::Succeeded
            } else if reason.is_some() {
                PipelineStatus::Failed
            } else {
                PipelineStatus::Executing
            }
            .into(),
            failure_reason: reason,
            description: self
                .descriptions
                .lock()
                .unwrap()
                .get(execution_arn)
                .cloned(),
        })
    }

    async fn steps(&self, execution_arn: &str) -> Result<Vec<StepStatus>, AwsFailure> {
        if let Some(failure) = self.steps_fault.lock().unwrap().clone() {
            return Err(failure);
        }
        if !self.known(execution_arn) {
            return Err(not_found(execution_arn));
        }
        let mut steps = self
            .callbacks
            .lock()
            .unwrap()
            .get(execution_arn)
            .cloned()
            .unwrap_or_default();
        let registered = self.succeeded.lock().unwrap().get(execution_arn).cloned();
        if let Some(model_package_arn) = registered {
            let done = [
                "PreprocessData",
                "TrainModel",
                "EvaluateModel",
                "RegisterModel",
            ];
            steps.extend(done.into_iter().map(|name| StepStatus {
                name: name.into(),
                status: StepState::Succeeded,
                failure_reason: None,
                model_package_arn: (name == "RegisterModel").then(|| model_package_arn.clone()),
                callback_token: None,
            }));
        }
        Ok(steps)
    }

    async fn stop(&self, execution_arn: &str) -> Result<(), AwsFailure> {
        if !self.known(execution_arn) {
            return Err(not_found(execution_arn));
        }
        self.stopped.lock().unwrap().push(execution_arn.to_owned());
        Ok(())
    }

    async fn definition(&self, execution_arn: &str) -> Result<String, AwsFailure> {
        if !self.known(execution_arn) {
            return Err(not_found(execution_arn));
        }
        Ok(r#"{"Version": "2020-12-01", "Steps": [{"Name": "Train", "Type": "Training"}]}"#.into())
    }
}

/// What a fake sink took, in order, and whether it fails now (as an unreachable service would:
/// a transient, ambiguous failure with `code`).
struct Outbox<T> {
    taken: Mutex<Vec<T>>,
    failing: Mutex<bool>,
    code: &'static str,
}

impl<T: Clone> Outbox<T> {
    fn new(code: &'static str) -> Self {
        Self {
            taken: Mutex::default(),
            failing: Mutex::default(),
            code,
        }
    }

    fn take(&self, item: &T) -> Result<(), AwsFailure> {
        if *self.failing.lock().unwrap() {
            return Err(AwsFailure {
                code: Some(self.code.into()),
                message: "down".into(),
                retryable: true,
                ambiguous: true,
            });
        }
        self.taken.lock().unwrap().push(item.clone());
        Ok(())
    }

    fn taken(&self) -> Vec<T> {
        self.taken.lock().unwrap().clone()
    }

    fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap() = failing;
    }
}

/// The completion events put, in order; puts fail while `set_failing` is on.
pub struct MemoryEvents(Outbox<JobCompletion>);

impl Default for MemoryEvents {
    fn default() -> Self {
        Self(Outbox::new("InternalException"))
    }
}

impl MemoryEvents {
    pub fn put(&self) -> Vec<JobCompletion> {
        self.0.taken()
    }

    pub fn set_failing(&self, failing: bool) {
        self.0.set_failing(failing);
    }
}

impl CompletionEvents for MemoryEvents {
    async fn put(&self, completion: &JobCompletion) -> Result<(), EventError> {
        self.0.take(completion).map_err(|failure| EventError {
            bus: "memory".into(),
            failure,
        })
    }
}

/// The completion messages sent, in order; sends fail while `set_failing` is on.
pub struct MemoryQueue(Outbox<CompletionMessage>);

impl Default for MemoryQueue {
    fn default() -> Self {
        Self(Outbox::new("ServiceUnavailable"))
    }
}

impl MemoryQueue {
    pub fn sent(&self) -> Vec<CompletionMessage> {
        self.0.taken()
    }

    /// Sends fail while this is set, as an unreachable queue would.
    pub fn set_failing(&self, failing: bool) {
        self.0.set_failing(failing);
    }
}

impl CompletionQueue for MemoryQueue {
    async fn send(&self, message: &CompletionMessage) -> Result<(), QueueError> {
        self.0.take(message).map_err(|failure| QueueError {
            queue_url: "memory".into(),
            failure,
        })
    }
}

impl FakePipeline {
    /// The run ends Succeeded, its four steps done and its RegisterModel step reporting
    /// `model_package_arn`, as the stand-in's runs end.
    pub fn succeed_with_model(&self, execution_arn: &str, model_package_arn: &str) {
        self.succeeded
            .lock()
            .unwrap()
            .insert(execution_arn.to_owned(), model_package_arn.to_owned());
    }
}

mod lineage;
pub use lineage::MemoryLineage;

pub mod port_contract;
