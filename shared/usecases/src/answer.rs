//! A person's answer to a run's question: checked against the question's form, the key claimed
//! (one conditional write, so a key is used once however many answers race), then sent to the
//! waiting CallbackStep. A send SageMaker refuses (an expired token, say) is recorded on the
//! question, and the task says so; the key stays used.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::approval::decide_package;
use crate::task::{answerable_run, TaskError};
use crate::training::{describe_known, reread, stored_run, stored_run_key};
use domain::approval::ModelDecision;
use domain::callback::CallbackToken;
use domain::caller::{Caller, Owner};
use domain::item::Applied;
use domain::pipeline_event::owner_from_description;
use domain::question::{
    output_parameters, send_failed, settle, standing, AnswerVia, Standing, StepAnswer,
};
use domain::run::Run;
use domain::task_id::RunTask;
use domain::time::rfc3339;
use ports::{AwsFailure, LineageGraph, ModelRegistry, PipelineControl, RunStore, StoreError};

/// Attempts at claiming a key when another change of the run's questions wins the race.
const CLAIM_ATTEMPTS: usize = 3;

/// What a person answered (`tasks/update`'s `action`, with an accepted form's `content`).
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Reply {
    pub fn action(&self) -> &'static str {
        match self {
            Reply::Accept(_) => "accept",
            Reply::Decline => "decline",
            Reply::Cancel => "cancel",
        }
    }
}

/// Why an answer changed nothing (it is acknowledged all the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// The caller is not among those who may answer this run's questions.
    NotApprover,
    /// The caller owns the run, and the deployment names approvers: they answer it.
    OwnRun,
    /// No question of this run has the key.
    UnknownKey,
    /// The key was answered already.
    AlreadyAnswered,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// SageMaker took the answer: the run goes on.
    Sent,
    Ignored(Ignored),
    /// The key is used, but SageMaker did not take the answer: why.
    SendFailed(String),
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The accepted content does not fit the question's form (the key stays open).
    #[error("the answer's content: {0}")]
    Content(String),
    #[error("the run's questions changed under every attempt to answer; try again")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where an answer goes: the CallbackStep waiting on its token, or the model package a model's
/// approval decides.
enum Delivery {
    Step(Option<CallbackToken>, StepAnswer),
    Model(String, ModelDecision),
}

/// SageMaker, as the answers reach it: the pipeline (a CallbackStep's answer) and the model
/// registry (a model's approval).
pub struct Answering<'a, P, L> {
    pub pipeline: &'a P,
    pub registry: &'a L,
}

/// Answers `key` of `run` as `who` (the caller's person tag), come `via`, when `standing` lets it; the
/// answer's record keeps who, when, how and a digest of the question. `run` is kept
/// as this call wrote it, so a next answer goes on from it rather than from a read that may not
/// show the write yet (the batch read is eventually consistent).
#[allow(clippy::too_many_arguments)]
pub async fn answer_question<R, P, L>(
    runs: &R,
    sagemaker: &Answering<'_, P, L>,
    run: &mut Run,
    who: &Owner,
    via: AnswerVia,
    standing: Standing,
    key: &str,
    reply: Reply,
    now: DateTime<Utc>,
) -> Result<Answered, AnswerError>
where
    R: RunStore,
    P: PipelineControl,
    L: LineageGraph + ModelRegistry,
{
    match standing {
        Standing::Answers => {}
        Standing::OwnRun => {
            tracing::info!("answer from the run's owner where approvers answer; ignored");
            return Ok(Answered::Ignored(Ignored::OwnRun));
        }
        Standing::Outsider => {
            tracing::info!("answer from a caller who may not answer; ignored");
            return Ok(Answered::Ignored(Ignored::NotApprover));
        }
    }
    let at = rfc3339(now);
    for _ in 0..CLAIM_ATTEMPTS {
        let Some(question) = run.questions.by_key.get(key) else {
            return Ok(Answered::Ignored(Ignored::UnknownKey));
        };
        if !question.is_open() {
            return Ok(Answered::Ignored(Ignored::AlreadyAnswered));
        }
        // The content is checked against the form before the key is used.
        let accepted = match &reply {
            Reply::Accept(content) => {
                Some(output_parameters(&question.schema, content).map_err(AnswerError::Content)?)
            }
            Reply::Decline | Reply::Cancel => None,
        };
        let send = match (&question.model_package_arn, accepted) {
            (Some(arn), outputs) => {
                let comment = outputs
                    .as_ref()
                    .and_then(|o| o.iter().find(|(name, _)| name == "comment"))
                    .map(|(_, text)| text.as_str());
                let decision = ModelDecision::new(outputs.is_some(), comment, who);
                Delivery::Model(arn.clone(), decision)
            }
            (None, Some(outputs)) => Delivery::Step(question.token(), StepAnswer::Success(outputs)),
            (None, None) => {
                let verb = match reply {
                    Reply::Cancel => "cancelled",
                    _ => "declined",
                };
                let reason = format!("{verb} by caller {who} through MCP");
                Delivery::Step(question.token(), StepAnswer::Failure(reason))
            }
        };
        let claimed = question.answered(reply.action(), who, &at, via);
        let record_key = run.record_key();
        let claim = settle(&run.questions, &record_key, key, claimed)
            .expect("the question was open in what was read");
        match runs.write(&claim.write).await? {
            Applied::Written { .. } => run.questions = claim.after,
            Applied::Refused(_) => {
                *run = reread(runs, run).await?.ok_or(AnswerError::Contended)?;
                continue;
            }
        }
        let sent = match send {
            // SageMaker's message may quote the token: it is cut out before it is kept or shown.
            Delivery::Step(Some(token), answer) => sagemaker
                .pipeline
                .answer_step(&token, &answer)
                .await
                .map_err(|f| f.to_string().replace(token.expose(), "<token>")),
            Delivery::Step(None, _) => Err("the step's token as stored is unreadable".to_owned()),
            Delivery::Model(arn, decision) => decide_package(sagemaker.registry, &arn, &decision)
                .await
                .map(|_| ()),
        };
        return Ok(match sent {
            Ok(()) => {
                tracing::info!(action = reply.action(), "question answered");
                Answered::Sent
            }
            Err(reason) => {
                tracing::warn!(error = %reason, "answer not taken by SageMaker");
                let failed = send_failed(&run.questions, &record_key, key, reason.clone(), &at)
                    .expect("the question was answered by this call");
                // Refused only if the record moved on meanwhile: the answer is still ours.
                if let Applied::Written { .. } = runs.write(&failed.write).await? {
                    run.questions = failed.after;
                }
                Answered::SendFailed(reason)
            }
        });
    }
    Err(AnswerError::Contended)
}

/// `tasks/update` on a run's task, by its owner or an approver holding its id: each response
/// answers its key (see [`answer_question`]); a caller who may not answer is acknowledged and
/// changes nothing.
pub async fn answer_run_task<R, P, L>(
    runs: &R,
    sagemaker: &Answering<'_, P, L>,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    task: &RunTask,
    responses: Vec<(String, Reply)>,
    now: DateTime<Utc>,
) -> Result<Vec<(String, Answered)>, RunAnswerError>
where
    R: RunStore,
    P: PipelineControl,
    L: LineageGraph + ModelRegistry,
{
    let (mut run, standing) =
        answerable_run(runs, sagemaker.pipeline, caller, approvers, task, now).await?;
    let mut answered = Vec::new();
    for (key, reply) in responses {
        // Each answer goes on from the run as the one before it left it.
        let outcome = answer_question(
            runs,
            sagemaker,
            &mut run,
            &caller.person,
            AnswerVia::Elicitation,
            standing,
            &key,
            reply,
            now,
        )
        .await?;
        answered.push((key, outcome));
    }
    Ok(answered)
}

#[derive(Debug, thiserror::Error)]
pub enum ExecutionAnswerError {
    /// Unknown, another caller's (who may not answer it), or not started through the tools:
    /// one answer for all.
    #[error("no training run {execution_arn} that this caller may answer")]
    NotFound { execution_arn: String },
    #[error("SageMaker DescribePipelineExecution failed: {0}")]
    Describe(AwsFailure),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

/// `answer_training_input`: answers `key` of the run `execution_arn`, found through its
/// description, by those [`standing`] lets answer it.
#[allow(clippy::too_many_arguments)]
pub async fn answer_execution<R, P, L>(
    runs: &R,
    sagemaker: &Answering<'_, P, L>,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    execution_arn: &str,
    key: &str,
    reply: Reply,
    now: DateTime<Utc>,
) -> Result<Answered, ExecutionAnswerError>
where
    R: RunStore,
    P: PipelineControl,
    L: LineageGraph + ModelRegistry,
{
    let not_found = || ExecutionAnswerError::NotFound {
        execution_arn: execution_arn.to_owned(),
    };
    let described = describe_known(sagemaker.pipeline, execution_arn)
        .await
        .map_err(ExecutionAnswerError::Describe)?
        .ok_or_else(not_found)?;
    let description = described.description.unwrap_or_default();
    let owner = owner_from_description(&description);
    let standing = standing(approvers, caller, owner.as_ref());
    if standing == Standing::Outsider && !caller.owns(owner.as_ref()) {
        return Err(not_found());
    }
    let key_of_run = stored_run_key(&description, execution_arn).ok_or_else(not_found)?;
    let mut run = stored_run(runs, key_of_run).await?.ok_or_else(not_found)?;
    Ok(answer_question(
        runs,
        sagemaker,
        &mut run,
        &caller.person,
        AnswerVia::Tool,
        standing,
        key,
        reply,
        now,
    )
    .await?)
}

#[derive(Debug, thiserror::Error)]
pub enum RunAnswerError {
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
