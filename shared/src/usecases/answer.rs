//! A person's answer to a run's question: checked against the question's form, the key claimed
//! (one conditional write, so a key is used once however many answers race), then sent to the
//! waiting CallbackStep. A send SageMaker refuses (an expired token, say) is recorded on the
//! question, and the task says so; the key stays used.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::domain::approval::{ModelDecision, PENDING};
use crate::domain::callback::CallbackToken;
use crate::domain::caller::{Caller, Owner};
use crate::domain::item::Applied;
use crate::domain::pipeline_event::owner_from_description;
use crate::domain::pipeline_status::PipelineStatus;
use crate::domain::question::{
    may_answer, output_parameters, send_failed, settle, QuestionState, StepAnswer,
};
use crate::domain::run::Run;
use crate::domain::time::rfc3339;
use crate::ports::{
    AwsFailure, ExecutionDescription, LineageGraph, ModelRegistry, PipelineControl, RunStore,
    StepStatus, StoreError,
};
use crate::usecases::approval::{decide_package, gate, Gate, GateError};
use crate::usecases::task::{authorized_run, open_questions, OpenQuestion, TaskError};
use crate::usecases::training::{describe_known, reread, stored_run, stored_run_key};

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

/// Answers `key` of `run` as `who` (the caller's owner tag), when `may_answer`. `run` is kept
/// as this call wrote it, so a next answer goes on from it rather than from a read that may not
/// show the write yet (the batch read is eventually consistent).
#[allow(clippy::too_many_arguments)]
pub async fn answer_question<R, P, L>(
    runs: &R,
    sagemaker: &Answering<'_, P, L>,
    run: &mut Run,
    who: &Owner,
    may_answer: bool,
    key: &str,
    reply: Reply,
    now: DateTime<Utc>,
) -> Result<Answered, AnswerError>
where
    R: RunStore,
    P: PipelineControl,
    L: LineageGraph + ModelRegistry,
{
    if !may_answer {
        tracing::info!("answer from a caller who may not answer; ignored");
        return Ok(Answered::Ignored(Ignored::NotApprover));
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
        let claimed = QuestionState::Answered {
            action: reply.action().to_owned(),
            by: who.to_string(),
            at: at.clone(),
        };
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

/// `tasks/update` on a run's task, by a caller who can read it: each response answers its key
/// (see [`answer_question`]); a caller who may not answer is acknowledged and changes nothing.
pub async fn answer_run_task<R, P, L>(
    runs: &R,
    sagemaker: &Answering<'_, P, L>,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    task_id: &str,
    responses: Vec<(String, Reply)>,
    now: DateTime<Utc>,
) -> Result<Vec<(String, Answered)>, RunAnswerError>
where
    R: RunStore,
    P: PipelineControl,
    L: LineageGraph + ModelRegistry,
{
    let mut run = authorized_run(runs, caller, task_id, now).await?;
    let may = may_answer(approvers, caller, run.owner.as_ref());
    let mut answered = Vec::new();
    for (key, reply) in responses {
        // Each answer goes on from the run as the one before it left it.
        let outcome = answer_question(
            runs,
            sagemaker,
            &mut run,
            &caller.owner,
            may,
            &key,
            reply,
            now,
        )
        .await?;
        answered.push((key, outcome));
    }
    Ok(answered)
}

/// What a run waits on people for, as a status check reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Waiting {
    pub questions: Vec<OpenQuestion>,
    /// Behind the approval gate: where the registered model's approval stands.
    pub model_approval: Option<String>,
}

/// The open questions of the run `execution_arn`, found through its description (the session
/// and owner trigger_training set): for a status check of a run that is executing, or (with
/// the approval gate: the registry its packages are read from) one that succeeded.
pub async fn waiting_on<R: RunStore, L: LineageGraph>(
    runs: &R,
    approval_gate: Option<&L>,
    described: &ExecutionDescription,
    steps: &[StepStatus],
    execution_arn: &str,
    now: DateTime<Utc>,
) -> Result<Waiting, GateError> {
    let gated = approval_gate.filter(|_| described.status.is(PipelineStatus::Succeeded));
    if gated.is_none() && !described.status.is(PipelineStatus::Executing) {
        return Ok(Waiting::default());
    }
    let description = described.description.as_deref();
    let Some(key) = description.and_then(|d| stored_run_key(d, execution_arn)) else {
        return Ok(Waiting::default());
    };
    let Some(mut run) = stored_run(runs, key).await? else {
        return Ok(Waiting::default());
    };
    let model_approval = match gated {
        Some(registry) => match gate(runs, registry, &mut run, steps, now).await? {
            Gate::Asking => Some(PENDING.to_owned()),
            Gate::Passed(status) => status,
        },
        None => None,
    };
    Ok(Waiting {
        questions: open_questions(&run),
        model_approval,
    })
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
/// description, by its owner or one of `approvers` (who need not own it).
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
    let may = may_answer(approvers, caller, owner.as_ref());
    if !may && !caller.owns(owner.as_ref()) {
        return Err(not_found());
    }
    let key_of_run = stored_run_key(&description, execution_arn).ok_or_else(not_found)?;
    let mut run = stored_run(runs, key_of_run).await?.ok_or_else(not_found)?;
    Ok(answer_question(
        runs,
        sagemaker,
        &mut run,
        &caller.owner,
        may,
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
mod tests {
    use super::*;
    use crate::domain::caller::Principal;
    use crate::domain::pipeline_event::execution_description;
    use crate::domain::question::QuestionState;
    use crate::domain::run::record_triggered;
    use crate::fakes::{FakePipeline, MemoryLineage, MemoryRuns};
    use crate::ports::{AwsFailure, StartRequest};
    use crate::usecases::callback::{record_question, Asked};
    use serde_json::json;

    const TOKEN: &str = "AbCdEf1234";
    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn owner() -> Owner {
        Principal::Local.caller().owner
    }

    /// A run of owner() whose CallbackStep asked "Deploy?" with a required choice.
    async fn asking() -> (MemoryRuns, FakePipeline, String) {
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let arn = pipeline
            .start(&StartRequest {
                pipeline_name: "p".into(),
                client_request_token: "t".repeat(32),
                description: execution_description("s", &owner(), Utc::now()),
                parameters: vec![],
                max_parallel_steps: None,
            })
            .await
            .unwrap();
        let w = record_triggered(
            &owner(),
            "s",
            &arn,
            "2026-12-03T10:00:00Z",
            1 << 40,
            SECRET,
            None,
        );
        runs.write(&w).await.unwrap();
        let fields = json!({"type": "object", "required": ["deploy_to"],
                            "properties": {"deploy_to": {"type": "string", "enum": ["staging", "production"]}}});
        let message = json!({"token": TOKEN, "pipelineExecutionArn": arn, "status": "Executing",
                             "arguments": {"prompt": "Deploy?", "fields": fields.to_string()}});
        let Asked::Recorded { key } =
            record_question(&runs, &pipeline, &message.to_string(), Utc::now())
                .await
                .unwrap()
        else {
            panic!()
        };
        (runs, pipeline, key)
    }

    /// SageMaker as answers reach it, with a registry no question here uses.
    fn sm(pipeline: &FakePipeline) -> Answering<'_, FakePipeline, MemoryLineage> {
        Answering {
            pipeline,
            registry: Box::leak(Box::new(MemoryLineage::default())),
        }
    }

    fn the_run(runs: &MemoryRuns) -> Run {
        runs.all().pop().unwrap()
    }

    async fn answer(
        runs: &MemoryRuns,
        pipeline: &FakePipeline,
        may: bool,
        key: &str,
        reply: Reply,
    ) -> Result<Answered, AnswerError> {
        answer_question(
            runs,
            &sm(pipeline),
            &mut the_run(runs),
            &owner(),
            may,
            key,
            reply,
            Utc::now(),
        )
        .await
    }

    /// The run's task as its owner reads it, without the approval gate.
    async fn task_view(
        runs: &MemoryRuns,
        pipeline: &FakePipeline,
        task_id: &str,
    ) -> crate::usecases::task::RunTaskView {
        let caller = Principal::Local.caller();
        let no_gate = None::<&MemoryLineage>;
        crate::usecases::task::get_run_task(runs, pipeline, no_gate, &caller, task_id, Utc::now())
            .await
            .unwrap()
    }

    fn accept(v: serde_json::Value) -> Reply {
        Reply::Accept(v.as_object().unwrap().clone())
    }

    #[tokio::test]
    async fn an_accepted_answer_is_sent_once_as_output_parameters_and_the_key_is_used() {
        let (runs, pipeline, key) = asking().await;
        let sent = answer(
            &runs,
            &pipeline,
            true,
            &key,
            accept(json!({"deploy_to": "staging"})),
        )
        .await;
        assert_eq!(sent.unwrap(), Answered::Sent);
        assert_eq!(
            pipeline.answers(),
            vec![(
                TOKEN.to_owned(),
                StepAnswer::Success(vec![("deploy_to".into(), "staging".into())])
            )]
        );
        assert!(matches!(
            the_run(&runs).questions.by_key[&key].state,
            QuestionState::Answered { .. }
        ));
        // The same key again, any action: acknowledged, nothing sent.
        let again = answer(&runs, &pipeline, true, &key, Reply::Decline)
            .await
            .unwrap();
        assert_eq!(again, Answered::Ignored(Ignored::AlreadyAnswered));
        assert_eq!(pipeline.answers().len(), 1);
    }

    #[tokio::test]
    async fn decline_and_cancel_fail_the_step_saying_who_and_others_change_nothing() {
        let (runs, pipeline, key) = asking().await;
        assert_eq!(
            answer(&runs, &pipeline, false, &key, Reply::Decline)
                .await
                .unwrap(),
            Answered::Ignored(Ignored::NotApprover)
        );
        assert_eq!(
            answer(&runs, &pipeline, true, "q-unknown", Reply::Decline)
                .await
                .unwrap(),
            Answered::Ignored(Ignored::UnknownKey)
        );
        assert!(pipeline.answers().is_empty() && the_run(&runs).questions.open().count() == 1);
        let refused = answer(
            &runs,
            &pipeline,
            true,
            &key,
            accept(json!({"deploy_to": "moon"})),
        )
        .await;
        assert!(
            matches!(refused, Err(AnswerError::Content(_))),
            "{refused:?}"
        );
        assert_eq!(
            the_run(&runs).questions.open().count(),
            1,
            "a refused form leaves the key open"
        );
        assert_eq!(
            answer(&runs, &pipeline, true, &key, Reply::Decline)
                .await
                .unwrap(),
            Answered::Sent
        );
        let (_, StepAnswer::Failure(reason)) = &pipeline.answers()[0] else {
            panic!()
        };
        assert_eq!(
            reason,
            &format!("declined by caller {} through MCP", owner())
        );
    }

    #[tokio::test]
    async fn a_send_sagemaker_refuses_is_stated_on_the_question_and_the_key_stays_used() {
        let (runs, pipeline, key) = asking().await;
        pipeline.fail_answers(AwsFailure {
            code: Some("ValidationException".into()),
            message: "The callback token has expired".into(),
            retryable: false,
            ambiguous: false,
        });
        let Answered::SendFailed(reason) = answer(&runs, &pipeline, true, &key, Reply::Cancel)
            .await
            .unwrap()
        else {
            panic!()
        };
        assert!(reason.contains("expired"), "{reason}");
        assert!(!reason.contains(TOKEN));
        let QuestionState::SendFailed { reason: stored, .. } =
            &the_run(&runs).questions.by_key[&key].state
        else {
            panic!()
        };
        assert_eq!(stored, &reason);
        assert_eq!(
            answer(&runs, &pipeline, true, &key, Reply::Cancel)
                .await
                .unwrap(),
            Answered::Ignored(Ignored::AlreadyAnswered)
        );
    }

    #[tokio::test]
    async fn a_run_task_asks_while_its_question_is_open_and_works_again_once_answered() {
        use crate::usecases::task::RunTaskState;
        let (runs, pipeline, key) = asking().await;
        let run = the_run(&runs);
        let task_id = crate::domain::run::task_id("s", &run.execution_arn, SECRET);
        let caller = Principal::Local.caller();
        let view = task_view(&runs, &pipeline, &task_id).await;
        let RunTaskState::InputRequired { questions, .. } = view.state else {
            panic!("{view:?}")
        };
        assert_eq!(
            (questions[0].key.as_str(), questions[0].prompt.as_str()),
            (key.as_str(), "Deploy?")
        );

        // Another caller holding the task id finds nothing; one not among APPROVERS is ignored.
        let other = Principal::Bearer { name: "b".into() }.caller();
        let refused = answer_run_task(
            &runs,
            &sm(&pipeline),
            &other,
            None,
            &task_id,
            vec![],
            Utc::now(),
        )
        .await;
        assert!(matches!(
            refused,
            Err(RunAnswerError::Task(TaskError::NotFound))
        ));
        let approvers = [other.owner.clone()];
        let ignored = answer_run_task(
            &runs,
            &sm(&pipeline),
            &caller,
            Some(&approvers),
            &task_id,
            vec![(key.clone(), Reply::Decline)],
            Utc::now(),
        )
        .await
        .unwrap();
        assert_eq!(
            ignored,
            vec![(key.clone(), Answered::Ignored(Ignored::NotApprover))]
        );

        let replies = vec![
            (key.clone(), accept(json!({"deploy_to": "production"}))),
            ("q-x".into(), Reply::Cancel),
        ];
        let answered = answer_run_task(
            &runs,
            &sm(&pipeline),
            &caller,
            None,
            &task_id,
            replies,
            Utc::now(),
        )
        .await
        .unwrap();
        assert_eq!(
            answered,
            vec![
                (key, Answered::Sent),
                ("q-x".into(), Answered::Ignored(Ignored::UnknownKey))
            ]
        );
        let view = task_view(&runs, &pipeline, &task_id).await;
        assert!(
            matches!(view.state, RunTaskState::Working { ref unsent, .. } if unsent.is_empty()),
            "{view:?}"
        );
    }

    #[tokio::test]
    async fn without_tasks_a_run_is_found_by_its_arn_and_answered_by_its_owner_or_an_approver() {
        let (runs, pipeline, key) = asking().await;
        let arn = the_run(&runs).execution_arn.to_string();
        let described = pipeline.describe(&arn).await.unwrap();
        let no_gate = None::<&MemoryLineage>;
        let now = Utc::now();
        let open = waiting_on(&runs, no_gate, &described, &[], &arn, now)
            .await
            .unwrap()
            .questions;
        assert_eq!((open.len(), open[0].key.as_str()), (1, key.as_str()));
        let not_ours = ExecutionDescription {
            description: Some("not ours".into()),
            ..described.clone()
        };
        let none = waiting_on(&runs, no_gate, &not_ours, &[], &arn, now)
            .await
            .unwrap();
        assert!(none.questions.is_empty());

        // Another caller learns nothing, unless among APPROVERS; then it answers.
        let other = Principal::Bearer { name: "b".into() }.caller();
        let hidden = answer_execution(
            &runs,
            &sm(&pipeline),
            &other,
            None,
            &arn,
            &key,
            Reply::Decline,
            Utc::now(),
        )
        .await;
        assert!(
            matches!(hidden, Err(ExecutionAnswerError::NotFound { .. })),
            "{hidden:?}"
        );
        let approvers = [other.owner.clone()];
        let owner_ignored = answer_execution(
            &runs,
            &sm(&pipeline),
            &Principal::Local.caller(),
            Some(&approvers),
            &arn,
            &key,
            Reply::Decline,
            Utc::now(),
        )
        .await
        .unwrap();
        assert_eq!(owner_ignored, Answered::Ignored(Ignored::NotApprover));
        let sent = answer_execution(
            &runs,
            &sm(&pipeline),
            &other,
            Some(&approvers),
            &arn,
            &key,
            accept(json!({"deploy_to": "staging"})),
            Utc::now(),
        )
        .await
        .unwrap();
        assert_eq!(sent, Answered::Sent);
        assert_eq!(pipeline.answers().len(), 1);
    }

    #[tokio::test]
    async fn a_listen_sees_a_run_task_change_when_its_question_is_answered() {
        use crate::fakes::MemoryJobs;
        use crate::usecases::listen::record_marks;
        let (runs, pipeline, key) = asking().await;
        let run = the_run(&runs);
        let task_id = crate::domain::run::task_id("s", &run.execution_arn, SECRET);
        let caller = Principal::Local.caller();
        let jobs = MemoryJobs::default();
        let ids = [task_id.clone()];
        let asked = record_marks(&jobs, &runs, &caller, &ids, Utc::now())
            .await
            .unwrap();
        answer_run_task(
            &runs,
            &sm(&pipeline),
            &caller,
            None,
            &task_id,
            vec![(key, Reply::Decline)],
            Utc::now(),
        )
        .await
        .unwrap();
        let answered = record_marks(&jobs, &runs, &caller, &ids, Utc::now())
            .await
            .unwrap();
        assert!(
            asked[0].is_some() && asked != answered,
            "{asked:?} {answered:?}"
        );
    }
}
