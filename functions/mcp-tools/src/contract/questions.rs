//! What a run asks a person, for a client without tasks: the questions check_training_status
//! reports (`waiting_for_input`), and `answer_training_input`, which answers one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::*;
use crate::config::ToolsConfig;
use crate::wording;
use domain::caller::Caller;
use domain::ids::ExecutionArn;
use usecases::answer::{AnswerError, Answered, ExecutionAnswerError, Ignored, Reply};
use usecases::task::{GivenAnswer, OpenQuestion};

/// A question a run waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionView {
    /// What `answer_training_input` names the question by.
    pub key: String,
    /// What the run asks, for a person to read.
    pub prompt: String,
    /// The form to answer with: a flat JSON Schema object (`properties`, `required`) of strings,
    /// numbers, integers, booleans and choices.
    pub fields: Value,
}

impl From<OpenQuestion> for QuestionView {
    fn from(q: OpenQuestion) -> Self {
        Self {
            key: q.key,
            prompt: q.prompt,
            fields: q.schema,
        }
    }
}

/// An answer a run's question was given, as the run's record keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AnswerView {
    /// The question's key.
    pub key: String,
    /// accept, decline or cancel.
    pub action: String,
    /// Who answered: the caller's owner tag (32 hex digits, a digest of its identity).
    pub by: String,
    /// When (RFC 3339).
    pub at: String,
    /// How the answer came: `elicitation` (the client showed the task's form and sent what the
    /// person filled in) or `tool` (a call of answer_training_input or approve_model_package,
    /// which a model can make by itself). Absent for an answer recorded before this was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// A digest of what was asked (the prompt, the form and the model package), as the answer
    /// recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_digest: Option<String>,
    /// The model package the answer approved or rejected (a model's approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_package_arn: Option<String>,
}

impl From<GivenAnswer> for AnswerView {
    fn from(a: GivenAnswer) -> Self {
        Self {
            key: a.key,
            action: a.action,
            by: a.by,
            at: a.at,
            via: a.via.map(str::to_owned),
            question_digest: a.question_digest,
            model_package_arn: a.model_package_arn,
        }
    }
}

/// How a person answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnswerAction {
    /// Agree, with the form's `content`: the run goes on.
    Accept,
    /// Refuse: the step fails, and so does the run.
    Decline,
    /// Not answer: the step fails, and so does the run.
    Cancel,
}

/// A key is what a run's question was recorded under (`q-` and 32 hex digits).
const MAX_KEY_CHARS: usize = 64;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerTrainingInputArgs {
    /// The run's `execution_arn`.
    pub execution_arn: String,
    /// The question's `key`, as check_training_status reports it in `waiting_for_input`.
    pub key: String,
    /// accept (with `content`), decline or cancel.
    pub action: AnswerAction,
    /// For accept: the answer, one value per field of the question's `fields`.
    pub content: Option<Map<String, Value>>,
}

/// An answer, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRequest {
    pub execution_arn: ExecutionArn,
    pub key: String,
    pub reply: Reply,
}

impl ToolArgs for AnswerTrainingInputArgs {
    type Valid = AnswerRequest;

    fn validate(self, _config: &ToolsConfig, _caller: &Caller) -> Result<AnswerRequest, ToolError> {
        let execution_arn = execution_arn_argument(self.execution_arn)?;
        let key = self.key;
        if key.is_empty()
            || key.chars().count() > MAX_KEY_CHARS
            || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(ToolError::invalid(wording::BAD_QUESTION_KEY));
        }
        let reply = match (self.action, self.content) {
            (AnswerAction::Accept, content) => Reply::Accept(content.unwrap_or_default()),
            (_, Some(_)) => return Err(ToolError::invalid(wording::CONTENT_ONLY_TO_ACCEPT)),
            (AnswerAction::Decline, None) => Reply::Decline,
            (AnswerAction::Cancel, None) => Reply::Cancel,
        };
        Ok(AnswerRequest {
            execution_arn,
            key,
            reply,
        })
    }

    fn trace(valid: &AnswerRequest, span: &tracing::Span) {
        span.record("execution_arn", valid.execution_arn.as_str());
    }

    fn place(valid: &AnswerRequest) -> Option<Place<'_>> {
        let unknown = |arn: &str| ToolError::invalid(wording::run_not_found(arn));
        Some(Place {
            arn: valid.execution_arn.as_str(),
            is_run: true,
            unknown,
        })
    }
}

/// How an answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerOutcome {
    /// SageMaker has the answer: the run goes on (or, declined, fails at the step).
    Sent,
    /// Changed nothing: the question was answered already, the run never asked it, or the
    /// caller may not answer it (`detail` says which).
    Ignored,
    /// The key is used, but SageMaker did not take the answer (`detail` says why).
    SendFailed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AnswerTrainingInputOutput {
    pub execution_arn: String,
    pub key: String,
    pub outcome: AnswerOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl AnswerTrainingInputOutput {
    pub fn new(request: &AnswerRequest, answered: Answered) -> Self {
        let (outcome, detail) = match answered {
            Answered::Sent => (AnswerOutcome::Sent, None),
            Answered::SendFailed(reason) => (AnswerOutcome::SendFailed, Some(reason)),
            Answered::Ignored(why) => (
                AnswerOutcome::Ignored,
                Some(
                    match why {
                        Ignored::NotApprover => wording::NOT_AN_APPROVER,
                        Ignored::OwnRun => wording::OWN_RUN,
                        Ignored::UnknownKey => wording::UNKNOWN_QUESTION,
                        Ignored::AlreadyAnswered => wording::ANSWERED_ALREADY,
                    }
                    .to_owned(),
                ),
            ),
        };
        Self {
            execution_arn: request.execution_arn.to_string(),
            key: request.key.clone(),
            outcome,
            detail,
        }
    }
}

impl From<ExecutionAnswerError> for ToolError {
    fn from(e: ExecutionAnswerError) -> Self {
        match e {
            ExecutionAnswerError::NotFound { execution_arn } => {
                ToolError::invalid(wording::run_not_found(&execution_arn))
            }
            ExecutionAnswerError::Describe(f) => {
                ToolError::aws("SageMaker DescribePipelineExecution", &f)
            }
            ExecutionAnswerError::Store(e) => e.into(),
            ExecutionAnswerError::Answer(e @ AnswerError::Content(_)) => {
                ToolError::invalid(e.to_string())
            }
            ExecutionAnswerError::Answer(AnswerError::Store(e)) => e.into(),
            ExecutionAnswerError::Answer(e @ AnswerError::Contended) => {
                ToolError::invalid(e.to_string())
            }
        }
    }
}
