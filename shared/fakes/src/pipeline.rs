//! SageMaker pipeline runs in memory: started once per token, described, stopped, their
//! steps (callbacks waiting, a registered model) and the answers sent to them.

use std::collections::HashMap;
use std::sync::Mutex;

use domain::callback::CallbackToken;
use domain::pipeline_status::{PipelineStatus, StepState};
use domain::question::StepAnswer;
use ports::*;

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

    /// The run ends Succeeded, its four steps done and its RegisterModel step reporting
    /// `model_package_arn`, as the stand-in's runs end.
    pub fn succeed_with_model(&self, execution_arn: &str, model_package_arn: &str) {
        self.succeeded
            .lock()
            .unwrap()
            .insert(execution_arn.to_owned(), model_package_arn.to_owned());
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
