//! `approve_model_package`: a person's decision on a model package a run registered, made by
//! one of those who may answer that run's questions (`APPROVERS`, else the run's owner). The
//! package leads to its run by `MetadataProperties.GeneratedBy`, the run to its owner by the
//! description trigger_training set; a package no run of these tools made, and another caller's,
//! are one answer: not found.
//!
//! With `APPROVAL_GATE` on, a run that succeeded having registered a model that waits is not
//! done for its task: it asks the approval as a question ([`gate`]), answered by `tasks/update`
//! or `answer_training_input` as a CallbackStep's is, or by this tool, which settles the
//! question too.

use chrono::{DateTime, Utc};

use crate::lineage::is_unknown;
use crate::training::{describe_known, reread, stored_run, stored_run_key};
use domain::approval::{decide, Decide, ModelDecision, APPROVED, PENDING, REJECTED};
use domain::caller::{Caller, Owner};
use domain::item::Applied;
use domain::lineage::EntityKind;
use domain::pipeline_event::owner_from_description;
use domain::question::{
    approval_key, approval_question, ask_approval, settle, standing, AnswerVia, Changed,
    QuestionState, Standing,
};
use domain::run::Run;
use domain::time::rfc3339;
use ports::{
    AwsFailure, LineageGraph, ModelPackageDescription, ModelRegistry, PipelineControl, RunStore,
    StepStatus, StoreError,
};

/// Attempts at a change of a run's questions when another change wins the race.
const WRITE_ATTEMPTS: usize = 3;

/// An approval asked for, its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub model_package_arn: String,
    pub approve: bool,
    pub comment: Option<String>,
}

/// The package's approval once decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub model_package_arn: String,
    /// The run that registered it.
    pub execution_arn: String,
    /// `Approved` or `Rejected`.
    pub approval_status: String,
    /// False when the package already stood as asked (a retried call).
    pub changed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// Unknown, not registered by a run of these tools, or a run this caller may not answer
    /// for: one answer for all.
    #[error(
        "no model package {} that this caller may approve (unknown, not registered by a training \
         run of these tools, or another caller's)",
        domain::util::quote(model_package_arn)
    )]
    NotFound { model_package_arn: String },
    /// The caller owns the run, and the deployment names approvers: they decide it.
    #[error(
        "the run's owner does not decide its own run's model where the deployment names \
         approvers (APPROVERS): one of them decides it"
    )]
    OwnRun,
    #[error(
        "model package {} is {status}: only one waiting in PendingManualApproval is decided here \
         (change a decided one in SageMaker itself)",
        domain::util::quote(model_package_arn)
    )]
    Decided {
        model_package_arn: String,
        status: String,
    },
    #[error("SageMaker {operation} failed: {failure}")]
    Aws {
        operation: &'static str,
        failure: AwsFailure,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the run's questions changed under every attempt to record the decision; try again")]
    Contended,
}

fn aws(operation: &'static str) -> impl FnOnce(AwsFailure) -> ApprovalError {
    move |failure| ApprovalError::Aws { operation, failure }
}

#[allow(clippy::too_many_arguments)]
pub async fn approve_model_package<R, L, P>(
    runs: &R,
    registry: &L,
    pipeline: &P,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    request: &ApprovalRequest,
    now: DateTime<Utc>,
) -> Result<Approval, ApprovalError>
where
    R: RunStore,
    L: LineageGraph + ModelRegistry,
    P: PipelineControl,
{
    let arn = &request.model_package_arn;
    let not_found = || ApprovalError::NotFound {
        model_package_arn: arn.clone(),
    };
    let package = match registry.describe_model_package(arn).await {
        Ok(package) => package,
        Err(failure) if is_unknown(&failure) => return Err(not_found()),
        Err(failure) => return Err(aws("DescribeModelPackage")(failure)),
    };
    let execution_arn = package
        .generated_by
        .clone()
        .filter(|maker| EntityKind::of_arn(maker) == Some(EntityKind::PipelineExecution))
        .ok_or_else(not_found)?;
    let run = describe_known(pipeline, &execution_arn)
        .await
        .map_err(aws("DescribePipelineExecution"))?
        .ok_or_else(not_found)?;
    // A run these tools did not start has no owner tag: nobody here answers for it.
    let description = run.description.unwrap_or_default();
    let owner = owner_from_description(&description).ok_or_else(not_found)?;
    match standing(approvers, caller, Some(&owner)) {
        Standing::Answers => {}
        Standing::OwnRun => return Err(ApprovalError::OwnRun),
        Standing::Outsider => return Err(not_found()),
    }
    let decision = ModelDecision::new(request.approve, request.comment.as_deref(), &caller.person);
    let changed = match write_decision(registry, &package, &decision).await {
        Ok(changed) => changed,
        Err(Unwritten::Decided(status)) => {
            return Err(ApprovalError::Decided {
                model_package_arn: package.arn,
                status,
            })
        }
        Err(Unwritten::Failed(failure)) => return Err(aws("UpdateModelPackage")(failure)),
    };
    // The run's task may ask this approval (APPROVAL_GATE): it is answered now. A retry of a
    // call whose settling failed settles it (the package then stands as asked).
    if let Some(key) = stored_run_key(&description, &execution_arn) {
        if let Some(mut run) = stored_run(runs, key).await? {
            let action = if request.approve { "accept" } else { "decline" };
            settle_approval(runs, &mut run, &package.arn, action, &caller.person, now).await?;
        }
    }
    Ok(Approval {
        model_package_arn: package.arn,
        execution_arn,
        approval_status: decision.status().to_owned(),
        changed,
    })
}

/// The run's open question about `model_package_arn`, if it asks one, settled as answered.
async fn settle_approval<R: RunStore>(
    runs: &R,
    run: &mut Run,
    model_package_arn: &str,
    action: &str,
    who: &Owner,
    now: DateTime<Utc>,
) -> Result<(), ApprovalError> {
    let at = rfc3339(now);
    let settled = change_questions(runs, run, |run| {
        let (key, question) = approval_question(&run.questions, model_package_arn)?;
        // approve_model_package is a tool: what a model can call by itself.
        let answered = question.answered(action, who, &at, AnswerVia::Tool);
        settle(&run.questions, &run.record_key(), key, answered)
    })
    .await?;
    match settled {
        Wrote::Contended => Err(ApprovalError::Contended),
        Wrote::Written | Wrote::Nothing | Wrote::Gone => Ok(()),
    }
}

/// How a change of a run's questions ended.
enum Wrote {
    Written,
    /// The run as read needs none (`change` gave nothing).
    Nothing,
    /// The run is no longer stored.
    Gone,
    /// Another change won the race every time.
    Contended,
}

/// Writes the change `change` makes of `run`'s questions, each write conditioned on the version
/// it read; when another change wins the race, reads the run again and asks `change` anew.
/// `run` is left as written, or as last read.
async fn change_questions<R: RunStore>(
    runs: &R,
    run: &mut Run,
    mut change: impl FnMut(&Run) -> Option<Changed>,
) -> Result<Wrote, StoreError> {
    for _ in 0..WRITE_ATTEMPTS {
        let Some(changed) = change(run) else {
            return Ok(Wrote::Nothing);
        };
        match runs.write(&changed.write).await? {
            Applied::Written { .. } => {
                run.questions = changed.after;
                return Ok(Wrote::Written);
            }
            Applied::Refused(_) => match reread(runs, run).await? {
                Some(now_stored) => *run = now_stored,
                None => return Ok(Wrote::Gone),
            },
        }
    }
    Ok(Wrote::Contended)
}

/// Why a decision was not written.
enum Unwritten {
    /// The package was decided the other way (or is in no approval flow): its status.
    Decided(String),
    /// UpdateModelPackage failed.
    Failed(AwsFailure),
}

/// `decision` on `package` as described: written only to a package that waits (true); one
/// that stands as asked already is left as it is (false).
async fn write_decision<L: ModelRegistry>(
    registry: &L,
    package: &ModelPackageDescription,
    decision: &ModelDecision,
) -> Result<bool, Unwritten> {
    match decide(package.approval_status.as_deref(), decision) {
        Decide::Update => {
            registry
                .decide(&package.arn, decision)
                .await
                .map_err(Unwritten::Failed)?;
            tracing::info!(status = decision.status(), "model package decided");
            Ok(true)
        }
        Decide::Unchanged => Ok(false),
        Decide::Refused(status) => Err(Unwritten::Decided(status)),
    }
}

/// A decision on a model package, as an answer to the run's question sends it (see
/// [`write_decision`]). The error is the reason the question states.
pub async fn decide_package<L: LineageGraph + ModelRegistry>(
    registry: &L,
    model_package_arn: &str,
    decision: &ModelDecision,
) -> Result<bool, String> {
    let package = registry
        .describe_model_package(model_package_arn)
        .await
        .map_err(|f| format!("SageMaker DescribeModelPackage failed: {f}"))?;
    write_decision(registry, &package, decision)
        .await
        .map_err(|unwritten| match unwritten {
            Unwritten::Decided(status) => {
                format!("the model package is {status} already (decided in SageMaker itself)")
            }
            Unwritten::Failed(f) => format!("SageMaker UpdateModelPackage failed: {f}"),
        })
}

/// Where a succeeded run stands at the approval gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Its registered model waits: the run asks its approval (the question is on `run`).
    Asking,
    /// Nothing waits: the model's approval status (`Approved`, `Rejected`), or None when the
    /// run registered no model or its package has no approval status.
    Passed(Option<String>),
}

/// The approval gate of a run that succeeded: the model package its steps registered (the last
/// RegisterModel's), asked as a question while it waits in PendingManualApproval. The question
/// is recorded once per package; its answer decides it.
pub async fn gate<R: RunStore, L: LineageGraph>(
    runs: &R,
    registry: &L,
    run: &mut Run,
    steps: &[StepStatus],
    now: DateTime<Utc>,
) -> Result<Gate, GateError> {
    let Some(arn) = steps.iter().rev().find_map(|s| s.model_package_arn.clone()) else {
        return Ok(Gate::Passed(None));
    };
    if let Some((_, question)) = approval_question(&run.questions, &arn) {
        match &question.state {
            QuestionState::Open => return Ok(Gate::Asking),
            QuestionState::Answered { action, .. } => {
                let status = if action == "accept" {
                    APPROVED
                } else {
                    REJECTED
                };
                return Ok(Gate::Passed(Some(status.to_owned())));
            }
            // SageMaker did not take the answer: the package says where it stands.
            QuestionState::SendFailed { .. } => {}
        }
    }
    let package = registry
        .describe_model_package(&arn)
        .await
        .map_err(GateError::Describe)?;
    let status = package.approval_status;
    if status.as_deref() != Some(PENDING) || approval_question(&run.questions, &arn).is_some() {
        return Ok(Gate::Passed(status));
    }
    let key = approval_key(run.task_secret.as_deref().unwrap_or_default(), &arn);
    let at = rfc3339(now);
    let asked = change_questions(runs, run, |run| {
        ask_approval(&run.questions, &run.record_key(), &key, &arn, &at)
    })
    .await?;
    match asked {
        Wrote::Written => {
            tracing::info!("the run asks its model's approval");
            Ok(Gate::Asking)
        }
        // Asked meanwhile (or the run holds all the questions it may).
        Wrote::Nothing if approval_question(&run.questions, &arn).is_some() => Ok(Gate::Asking),
        Wrote::Nothing | Wrote::Gone => Ok(Gate::Passed(status)),
        Wrote::Contended => Err(GateError::Contended),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("SageMaker DescribeModelPackage failed: {0}")]
    Describe(AwsFailure),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the run's questions changed under every attempt to ask the model's approval")]
    Contended,
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::caller::Principal;
    use domain::pipeline_event::execution_description;
    use domain::run::record_triggered;
    use fakes::{FakePipeline, MemoryLineage, MemoryRuns};
    use ports::StartRequest;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    /// The decision through the tool, for a run not recorded.
    async fn approve(
        lineage: &MemoryLineage,
        pipeline: &FakePipeline,
        caller: &Caller,
        approvers: Option<&[Owner]>,
        request: &ApprovalRequest,
    ) -> Result<Approval, ApprovalError> {
        let runs = MemoryRuns::default();
        approve_model_package(
            &runs,
            lineage,
            pipeline,
            caller,
            approvers,
            request,
            Utc::now(),
        )
        .await
    }

    fn local() -> Caller {
        Principal::Local.caller()
    }

    fn bearer(name: &str) -> Caller {
        Principal::Bearer { name: name.into() }.caller()
    }

    /// A run of `owner` that registered a model, pending approval: (lineage, pipeline, package).
    async fn registered(owner: &Owner) -> (MemoryLineage, FakePipeline, String) {
        let (lineage, pipeline) = (MemoryLineage::default(), FakePipeline::default());
        let execution_arn = pipeline
            .start(&StartRequest {
                pipeline_name: "p".into(),
                client_request_token: "t".repeat(32),
                description: execution_description("s", owner, Utc::now()),
                parameters: vec![],
                max_parallel_steps: None,
            })
            .await
            .unwrap();
        let package = lineage.register_model(&execution_arn, "s3://data/train/");
        (lineage, pipeline, package)
    }

    fn request(arn: &str, approve: bool) -> ApprovalRequest {
        ApprovalRequest {
            model_package_arn: arn.into(),
            approve,
            comment: Some("evaluation looks right".into()),
        }
    }

    async fn status(lineage: &MemoryLineage, arn: &str) -> Option<String> {
        lineage
            .describe_model_package(arn)
            .await
            .unwrap()
            .approval_status
    }

    #[tokio::test]
    async fn the_owner_approves_once_and_a_retry_changes_nothing() {
        let (lineage, pipeline, arn) = registered(&local().owner).await;
        let approved = approve(&lineage, &pipeline, &local(), None, &request(&arn, true))
            .await
            .unwrap();
        assert_eq!(
            (approved.approval_status.as_str(), approved.changed),
            ("Approved", true)
        );
        assert!(approved.execution_arn.contains(":pipeline/p/execution/"));
        assert_eq!(status(&lineage, &arn).await.as_deref(), Some("Approved"));
        let again = approve(&lineage, &pipeline, &local(), None, &request(&arn, true))
            .await
            .unwrap();
        assert!(!again.changed);
        assert_eq!(lineage.calls("UpdateModelPackage"), 1);
        // Decided one way, it is not turned the other way here.
        let turned = approve(&lineage, &pipeline, &local(), None, &request(&arn, false))
            .await
            .unwrap_err();
        assert!(
            matches!(turned, ApprovalError::Decided { ref status, .. } if status == "Approved")
        );
        assert_eq!(status(&lineage, &arn).await.as_deref(), Some("Approved"));
    }

    #[tokio::test]
    async fn a_rejection_is_recorded_as_rejected() {
        let (lineage, pipeline, arn) = registered(&local().owner).await;
        let rejected = approve(&lineage, &pipeline, &local(), None, &request(&arn, false))
            .await
            .unwrap();
        assert_eq!(rejected.approval_status, "Rejected");
        assert_eq!(status(&lineage, &arn).await.as_deref(), Some("Rejected"));
    }

    #[tokio::test]
    async fn another_caller_an_unknown_package_and_an_unlisted_owner_change_nothing() {
        let alice = bearer("alice");
        let (lineage, pipeline, arn) = registered(&alice.owner).await;
        let bob = bearer("bob");
        let by_bob = approve(&lineage, &pipeline, &bob, None, &request(&arn, true)).await;
        let unknown_arn = arn.replace("/1", "/9");
        let unknown = approve(
            &lineage,
            &pipeline,
            &alice,
            None,
            &request(&unknown_arn, true),
        )
        .await;
        // Bob and an unknown package read the same, but for the ARN each names.
        let (by_bob, unknown) = (
            by_bob.unwrap_err().to_string(),
            unknown.unwrap_err().to_string(),
        );
        assert_eq!(
            by_bob.replace(&arn, "ARN"),
            unknown.replace(&unknown_arn, "ARN")
        );
        // With approvers named, the owner outside them is told so; an approver decides.
        let approvers = [bob.owner.clone()];
        let owner = approve(
            &lineage,
            &pipeline,
            &alice,
            Some(&approvers),
            &request(&arn, true),
        )
        .await;
        assert!(matches!(owner, Err(ApprovalError::OwnRun)));
        assert_eq!(lineage.calls("UpdateModelPackage"), 0);
        let approver = approve(
            &lineage,
            &pipeline,
            &bob,
            Some(&approvers),
            &request(&arn, true),
        )
        .await
        .unwrap();
        assert!(approver.changed);
    }

    #[tokio::test]
    async fn a_package_no_run_of_these_tools_made_is_unknown() {
        let lineage = MemoryLineage::default();
        let pipeline = FakePipeline::default();
        // Registered by a run SageMaker does not know (another account's pipeline, say).
        let arn = lineage.register_model(
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/elsewhere",
            "s3://d/",
        );
        let refused = approve(&lineage, &pipeline, &local(), None, &request(&arn, true)).await;
        assert!(matches!(refused, Err(ApprovalError::NotFound { .. })));
    }

    /// A recorded run of local() that succeeded registering a model: (runs, lineage, pipeline,
    /// package, steps).
    async fn succeeded() -> (
        MemoryRuns,
        MemoryLineage,
        FakePipeline,
        String,
        Vec<StepStatus>,
    ) {
        let (lineage, pipeline, package) = registered(&local().owner).await;
        let described = lineage.describe_model_package(&package).await.unwrap();
        let execution_arn = described.generated_by.unwrap();
        let runs = MemoryRuns::default();
        let w = record_triggered(
            &local().owner,
            "s",
            &execution_arn,
            "2026-12-03T10:00:00Z",
            1 << 40,
            SECRET,
            None,
        );
        runs.write(&w).await.unwrap();
        pipeline.succeed_with_model(&execution_arn, &package);
        let steps = pipeline.steps(&execution_arn).await.unwrap();
        (runs, lineage, pipeline, package, steps)
    }

    fn the_run(runs: &MemoryRuns) -> Run {
        runs.all().pop().unwrap()
    }

    #[tokio::test]
    async fn the_gate_asks_a_waiting_models_approval_once_and_the_tool_answers_it() {
        let (runs, lineage, pipeline, package, steps) = succeeded().await;
        let now = Utc::now();
        let mut run = the_run(&runs);
        assert_eq!(
            gate(&runs, &lineage, &mut run, &steps, now).await.unwrap(),
            Gate::Asking
        );
        assert_eq!(run.questions.open().count(), 1);
        // Read again, it asks the same question: nothing more written.
        let mut again = the_run(&runs);
        assert_eq!(
            gate(&runs, &lineage, &mut again, &steps, now)
                .await
                .unwrap(),
            Gate::Asking
        );
        assert_eq!(again.questions.by_key.len(), 1);
        assert_eq!(again.questions.version, 1);
        let approved = approve_model_package(
            &runs,
            &lineage,
            &pipeline,
            &local(),
            None,
            &request(&package, true),
            now,
        )
        .await
        .unwrap();
        assert!(approved.changed);
        let mut decided = the_run(&runs);
        assert_eq!(decided.questions.open().count(), 0);
        assert_eq!(
            gate(&runs, &lineage, &mut decided, &steps, now)
                .await
                .unwrap(),
            Gate::Passed(Some("Approved".into()))
        );
    }

    #[tokio::test]
    async fn a_decided_model_or_none_passes_the_gate_without_a_question() {
        let (runs, lineage, pipeline, package, steps) = succeeded().await;
        let now = Utc::now();
        approve(
            &lineage,
            &pipeline,
            &local(),
            None,
            &request(&package, false),
        )
        .await
        .unwrap();
        let mut run = the_run(&runs);
        assert_eq!(
            gate(&runs, &lineage, &mut run, &steps, now).await.unwrap(),
            Gate::Passed(Some("Rejected".into()))
        );
        assert!(run.questions.by_key.is_empty());
        assert_eq!(
            gate(&runs, &lineage, &mut run, &[], now).await.unwrap(),
            Gate::Passed(None)
        );
    }
}
