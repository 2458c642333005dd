//! The answers to a run's questions, on the fakes.

use super::*;
use crate::callback::{record_question, Asked};
use crate::task::waiting_on;
use domain::caller::{Caller, Owner, Principal};
use domain::pipeline_event::execution_description;
use domain::question::{AnswerVia, QuestionState, Standing};
use domain::run::record_triggered;
use fakes::{FakePipeline, MemoryLineage, MemoryRuns};
use ports::{AwsFailure, ExecutionDescription, StartRequest};
use serde_json::json;

const TOKEN: &str = "AbCdEf1234";
const SECRET: &str = "0123456789abcdef0123456789abcdef";

fn owner() -> Owner {
    Principal::Local.caller().owner
}

/// A run of owner() whose CallbackStep asked "Deploy?" with a required choice.
async fn asking() -> (MemoryRuns, FakePipeline, String) {
    asking_for(&owner()).await
}

/// A run of `owner` whose CallbackStep asks: (runs, pipeline, question key).
async fn asking_for(owner: &Owner) -> (MemoryRuns, FakePipeline, String) {
    let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
    let arn = pipeline
        .start(&StartRequest {
            pipeline_name: "p".into(),
            client_request_token: "t".repeat(32),
            description: execution_description("s", owner, Utc::now()),
            parameters: vec![],
            max_parallel_steps: None,
        })
        .await
        .unwrap();
    let w = record_triggered(
        owner,
        "s",
        &arn,
        "2026-12-03T10:00:00Z",
        1 << 40,
        SECRET,
        None,
    );
    runs.write(&w).await.unwrap();
    pipeline.wait_on_callback(&arn, TOKEN);
    let fields = json!({"type": "object", "required": ["deploy_to"],
                        "properties": {"deploy_to": {"type": "string", "enum": ["staging", "production"]}}});
    let message = json!({"token": TOKEN, "pipelineExecutionArn": arn, "status": "Executing",
                         "arguments": {"prompt": "Deploy?", "fields": fields.to_string()}});
    let Asked::Recorded { key, .. } =
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
        AnswerVia::Tool,
        if may {
            Standing::Answers
        } else {
            Standing::Outsider
        },
        key,
        reply,
        Utc::now(),
    )
    .await
}

/// A run's task id as the door parses it.
fn run_task(task_id: &str) -> domain::task_id::RunTask {
    match domain::task_id::TaskId::parse(task_id) {
        Ok(domain::task_id::TaskId::Run(task)) => task,
        other => panic!("not a run's task id: {other:?}"),
    }
}

/// The run's task as its owner reads it, without the approval gate.
async fn task_view(
    runs: &MemoryRuns,
    pipeline: &FakePipeline,
    task_id: &str,
) -> crate::task::RunTaskView {
    let caller = Principal::Local.caller();
    let no_gate = None::<&MemoryLineage>;
    crate::task::get_run_task(
        runs,
        pipeline,
        no_gate,
        &caller,
        None,
        &run_task(task_id),
        Utc::now(),
    )
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
    // The record says who answered, how (a tool call here), and what was asked.
    let kept = &the_run(&runs).questions.by_key[&key];
    let QuestionState::Answered {
        action,
        by,
        via,
        question_digest,
        ..
    } = &kept.state
    else {
        panic!("answered: {:?}", kept.state)
    };
    assert_eq!((action.as_str(), by), ("accept", &owner().to_string()));
    assert_eq!(*via, Some(AnswerVia::Tool));
    assert_eq!(question_digest.as_deref(), Some(kept.digest().as_str()));
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
    use crate::task::RunTaskState;
    let (runs, pipeline, key) = asking().await;
    let run = the_run(&runs);
    let task_id = domain::run::task_id("s", run.execution_arn.as_str(), SECRET);
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
        &run_task(&task_id),
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
        &run_task(&task_id),
        vec![(key.clone(), Reply::Decline)],
        Utc::now(),
    )
    .await
    .unwrap();
    // The owner, where approvers answer: told it is theirs to answer, not its own.
    assert_eq!(
        ignored,
        vec![(key.clone(), Answered::Ignored(Ignored::OwnRun))]
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
        &run_task(&task_id),
        replies,
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(
        answered,
        vec![
            (key.clone(), Answered::Sent),
            ("q-x".into(), Answered::Ignored(Ignored::UnknownKey))
        ]
    );
    // Through tasks/update: the client's form, an elicitation.
    assert!(matches!(
        the_run(&runs).questions.by_key[&key].state,
        QuestionState::Answered {
            via: Some(AnswerVia::Elicitation),
            ..
        }
    ));
    let view = task_view(&runs, &pipeline, &task_id).await;
    assert!(
        matches!(view.state, RunTaskState::Working { ref unsent, .. } if unsent.is_empty()),
        "{view:?}"
    );
}

#[tokio::test]
async fn an_approver_holding_the_task_id_answers_through_the_form_and_the_owner_may_not() {
    use crate::task::{get_run_task, RunTaskState};
    let (runs, pipeline, key) = asking().await;
    let run = the_run(&runs);
    let task_id = domain::run::task_id("s", run.execution_arn.as_str(), SECRET);
    let no_gate = None::<&MemoryLineage>;
    // One person of a role every reviewer assumes: named by the session.
    let alice = Principal::iam("arn:aws:sts::123456789012:assumed-role/Reviewers/alice").unwrap();
    let bob = Principal::iam("arn:aws:sts::123456789012:assumed-role/Reviewers/bob").unwrap();
    let (alice, bob) = (alice.caller(), bob.caller());
    let approvers = [alice.person.clone()];
    let view = |caller: Caller| {
        let (runs, pipeline, task) = (&runs, &pipeline, run_task(&task_id));
        let approvers = &approvers;
        async move {
            get_run_task(
                runs,
                pipeline,
                no_gate,
                &caller,
                Some(approvers),
                &task,
                Utc::now(),
            )
            .await
        }
    };
    let seen = view(alice.clone()).await.unwrap();
    assert!(
        matches!(seen.state, RunTaskState::InputRequired { .. }),
        "{seen:?}"
    );
    assert_eq!(seen.standing, Standing::Answers);
    let owners = view(Principal::Local.caller()).await.unwrap();
    assert_eq!(owners.standing, Standing::OwnRun);
    // Bob shares alice's role but is not named: the task is unknown to him.
    assert!(matches!(view(bob.clone()).await, Err(TaskError::NotFound)));
    // A wrong secret is unknown to an approver too.
    let forged = task_id.replace(SECRET, &"0".repeat(SECRET.len()));
    let forged = get_run_task(
        &runs,
        &pipeline,
        no_gate,
        &alice,
        Some(&approvers),
        &run_task(&forged),
        Utc::now(),
    )
    .await;
    assert!(matches!(forged, Err(TaskError::NotFound)));

    let answered = answer_run_task(
        &runs,
        &sm(&pipeline),
        &alice,
        Some(&approvers),
        &run_task(&task_id),
        vec![(key.clone(), accept(json!({"deploy_to": "staging"})))],
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(answered, vec![(key.clone(), Answered::Sent)]);
    // Recorded as the form's answer, by alice herself (not the role).
    let QuestionState::Answered { via, by, .. } = &the_run(&runs).questions.by_key[&key].state
    else {
        panic!("not answered")
    };
    assert_eq!(*via, Some(AnswerVia::Elicitation));
    assert_eq!(by, alice.person.as_str());
    assert_ne!(by, alice.owner.as_str());
}

#[tokio::test]
async fn in_every_auth_mode_the_owner_is_told_approvers_answer_its_run() {
    let iam = |role_session: &str| {
        Principal::iam(&format!(
            "arn:aws:sts::123456789012:assumed-role/{role_session}"
        ))
        .unwrap()
    };
    let oauth = |subject: &str| Principal::OAuth {
        issuer: "https://issuer.example.com".into(),
        subject: subject.into(),
    };
    let bearer = |name: &str| Principal::Bearer { name: name.into() };
    for (owner, approver) in [
        (bearer("owner"), bearer("approver")),
        (oauth("owner"), oauth("approver")),
        // The approver a session of its own role: every session of a role owns its runs.
        (iam("Agent/run-1"), iam("Reviewers/alice")),
    ] {
        let (owner, approver) = (owner.caller(), approver.caller());
        let approvers = [approver.person.clone(), owner.person.clone()];
        let (runs, pipeline, key) = asking_for(&owner.owner).await;
        let run = the_run(&runs);
        let arn = run.execution_arn.to_string();
        let task_id = domain::run::task_id("s", &arn, SECRET);
        let by_form = answer_run_task(
            &runs,
            &sm(&pipeline),
            &owner,
            Some(&approvers),
            &run_task(&task_id),
            vec![(key.clone(), Reply::Decline)],
            Utc::now(),
        )
        .await
        .unwrap();
        assert_eq!(
            by_form,
            vec![(key.clone(), Answered::Ignored(Ignored::OwnRun))]
        );
        let by_tool = answer_execution(
            &runs,
            &sm(&pipeline),
            &owner,
            Some(&approvers),
            &arn,
            &key,
            Reply::Decline,
            Utc::now(),
        )
        .await
        .unwrap();
        assert_eq!(by_tool, Answered::Ignored(Ignored::OwnRun));
        assert!(pipeline.answers().is_empty());
        let sent = answer_execution(
            &runs,
            &sm(&pipeline),
            &approver,
            Some(&approvers),
            &arn,
            &key,
            Reply::Decline,
            Utc::now(),
        )
        .await
        .unwrap();
        assert_eq!(sent, Answered::Sent);
    }
    // Another session of the role that started the run owns it too, named approver or not.
    let (starter, colleague) = (iam("Agent/run-1").caller(), iam("Agent/alice").caller());
    let (runs, pipeline, key) = asking_for(&starter.owner).await;
    let arn = the_run(&runs).execution_arn.to_string();
    let approvers = [colleague.person.clone()];
    let refused = answer_execution(
        &runs,
        &sm(&pipeline),
        &colleague,
        Some(&approvers),
        &arn,
        &key,
        Reply::Decline,
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(refused, Answered::Ignored(Ignored::OwnRun));
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
    assert_eq!(owner_ignored, Answered::Ignored(Ignored::OwnRun));
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
    use crate::listen::record_marks;
    use fakes::MemoryJobs;
    let (runs, pipeline, key) = asking().await;
    let run = the_run(&runs);
    let task_id = domain::run::task_id("s", run.execution_arn.as_str(), SECRET);
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
        &run_task(&task_id),
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
