//! A CallbackStep's question, recorded on its run: the message read, the run found through its
//! execution's description (the session and owner trigger_training set), the message's token
//! checked against the run's own waiting CallbackStep, the question written under its key. A
//! duplicate delivery asks nothing new; a run not recorded yet, a token not listed yet, or a
//! write that lost a race, is an error, so the queue delivers the message again.
//!
//! Why the token is checked: every pipeline role may send to the callback queue, and the
//! message's `pipelineExecutionArn` is only text. Only SageMaker's own listing of the run ties
//! a token to it, so a token is recorded on a run only while that run lists an Executing
//! CallbackStep holding it; another run's token never asks on this one.

use chrono::{DateTime, Utc};

use crate::training::{stored_run, stored_run_key};
use domain::callback::{parse_callback, CallbackError, CallbackToken};
use domain::item::Applied;
use domain::pipeline_status::StepState;
use domain::question::{ask, question_key, Ask, MAX_QUESTIONS};
use domain::run::Run;
use domain::time::rfc3339;
use ports::{AwsFailure, PipelineControl, RunStore, StepStatus, StoreError};

/// A write that lost a race is read and tried again this many times before the message is
/// left to the queue's next delivery.
const WRITE_ATTEMPTS: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// Recorded, open, under `key`, on `run` (as it was read before the question was added).
    Recorded { key: String, run: Box<Run> },
    /// Already recorded under `key` (the message came again), on `run` as stored.
    Known { key: String, run: Box<Run> },
}

#[derive(Debug, thiserror::Error)]
pub enum CallbackFailure {
    #[error("bad callback message: {0}")]
    BadMessage(#[from] CallbackError),
    #[error("SageMaker DescribePipelineExecution of {execution_arn} failed: {failure}")]
    Describe {
        execution_arn: String,
        failure: AwsFailure,
    },
    #[error("SageMaker ListPipelineExecutionSteps of {execution_arn} failed: {failure}")]
    Steps {
        execution_arn: String,
        failure: AwsFailure,
    },
    /// No CallbackStep of the run holds the token: not listed yet (SageMaker may send before it
    /// lists), or another run's token.
    #[error(
        "run {0} lists no CallbackStep holding the message's token (not yet, or not this run's)"
    )]
    TokenNotListed(String),
    /// The run's CallbackStep holding the token no longer waits.
    #[error(
        "run {execution_arn}'s CallbackStep holding the message's token is {status}, not Executing"
    )]
    TokenNotWaiting {
        execution_arn: String,
        status: String,
    },
    /// Not a run this project started: nobody here can be asked.
    #[error("run {0} was not started through the tools (its description names no session)")]
    NotOurs(String),
    #[error("run {0} is not recorded yet")]
    NotRecorded(String),
    #[error("run {0} already holds {MAX_QUESTIONS} questions")]
    Full(String),
    #[error("run {0}'s questions changed under every attempt to write")]
    Contended(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl CallbackFailure {
    /// Worth the queue's next delivery: the rest will fail the same way each time.
    pub fn is_retryable(&self) -> bool {
        match self {
            CallbackFailure::Describe { failure, .. } | CallbackFailure::Steps { failure, .. } => {
                failure.retryable
            }
            CallbackFailure::NotRecorded(_)
            | CallbackFailure::TokenNotListed(_)
            | CallbackFailure::Contended(_)
            | CallbackFailure::Store(_) => true,
            CallbackFailure::BadMessage(_)
            | CallbackFailure::TokenNotWaiting { .. }
            | CallbackFailure::NotOurs(_)
            | CallbackFailure::Full(_) => false,
        }
    }
}

/// Records the question one callback message asks.
pub async fn record_question<S: RunStore, P: PipelineControl>(
    runs: &S,
    pipeline: &P,
    body: &str,
    now: DateTime<Utc>,
) -> Result<Asked, CallbackFailure> {
    let request = parse_callback(body)?;
    let arn = request.execution_arn.as_str();
    let described = pipeline
        .describe(arn)
        .await
        .map_err(|failure| CallbackFailure::Describe {
            execution_arn: arn.to_owned(),
            failure,
        })?;
    let description = described.description.unwrap_or_default();
    let key_of_run = stored_run_key(&description, arn)
        .ok_or_else(|| CallbackFailure::NotOurs(arn.to_owned()))?;
    let mut held = false;
    for _ in 0..WRITE_ATTEMPTS {
        let run = stored_run(runs, key_of_run.clone())
            .await?
            .ok_or_else(|| CallbackFailure::NotRecorded(arn.to_owned()))?;
        let secret = run
            .task_secret
            .as_deref()
            .ok_or_else(|| CallbackFailure::NotRecorded(arn.to_owned()))?;
        let key = question_key(secret, &request.token);
        let write = match ask(
            &run.questions,
            &run.record_key(),
            &key,
            &request.question,
            &request.token,
            &rfc3339(now),
        ) {
            // Recorded before, so checked before: a redelivery after the answer is no failure.
            Ask::Known => {
                return Ok(Asked::Known {
                    key,
                    run: Box::new(run),
                })
            }
            Ask::Full => return Err(CallbackFailure::Full(arn.to_owned())),
            Ask::Write(write) => write,
        };
        if !held {
            let steps = pipeline
                .steps(arn)
                .await
                .map_err(|failure| CallbackFailure::Steps {
                    execution_arn: arn.to_owned(),
                    failure,
                })?;
            held_by(&steps, &request.token, arn)?;
            held = true;
        }
        match runs.write(&write).await? {
            Applied::Written { .. } => {
                return Ok(Asked::Recorded {
                    key,
                    run: Box::new(run),
                })
            }
            // Known meanwhile (a duplicate raced this one) or another change: read again.
            Applied::Refused(_) => continue,
        }
    }
    Err(CallbackFailure::Contended(arn.to_owned()))
}

/// Whether the run's steps hold `token` in an Executing CallbackStep, and if not, why not.
fn held_by(
    steps: &[StepStatus],
    token: &CallbackToken,
    execution_arn: &str,
) -> Result<(), CallbackFailure> {
    let mut holders = steps
        .iter()
        .filter(|s| s.callback_token.as_ref() == Some(token));
    if holders.clone().any(|s| s.status == StepState::Executing) {
        return Ok(());
    }
    match holders.next() {
        Some(step) => Err(CallbackFailure::TokenNotWaiting {
            execution_arn: execution_arn.to_owned(),
            status: step.status.as_str().to_owned(),
        }),
        None => Err(CallbackFailure::TokenNotListed(execution_arn.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::caller::{Owner, Principal};
    use domain::pipeline_event::execution_description;
    use domain::run::record_triggered;
    use fakes::{FakePipeline, MemoryRuns};
    use ports::StartRequest;
    use serde_json::json;

    fn owner() -> Owner {
        Principal::Local.caller().owner
    }

    async fn triggered(runs: &MemoryRuns, pipeline: &FakePipeline, owner: &Owner) -> String {
        triggered_as(runs, pipeline, owner, "sess-1").await
    }

    async fn triggered_as(
        runs: &MemoryRuns,
        pipeline: &FakePipeline,
        owner: &Owner,
        session_id: &str,
    ) -> String {
        let arn = pipeline
            .start(&StartRequest {
                pipeline_name: "p".into(),
                client_request_token: format!("{session_id:t<32}"),
                description: execution_description(session_id, owner, Utc::now()),
                parameters: vec![],
                max_parallel_steps: None,
            })
            .await
            .unwrap();
        let w = record_triggered(
            owner,
            session_id,
            &arn,
            "2026-12-03T10:00:00Z",
            1 << 40,
            "secret",
            None,
        );
        runs.write(&w).await.unwrap();
        arn
    }

    fn message(arn: &str, token: &str) -> String {
        json!({"token": token, "pipelineExecutionArn": arn, "status": "Executing",
               "arguments": {"prompt": "Register the model?", "fields": "{\"type\":\"object\",\"properties\":{}}"}})
        .to_string()
    }

    #[tokio::test]
    async fn a_question_is_recorded_once_under_its_key_on_the_run_that_asked() {
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let arn = triggered(&runs, &pipeline, &owner()).await;
        pipeline.wait_on_callback(&arn, "AbCdEf1234");
        pipeline.wait_on_callback(&arn, "ZyXwVu9876");
        let now = Utc::now();
        let Asked::Recorded { key, .. } =
            record_question(&runs, &pipeline, &message(&arn, "AbCdEf1234"), now)
                .await
                .unwrap()
        else {
            panic!("recorded")
        };
        assert!(matches!(
            record_question(&runs, &pipeline, &message(&arn, "AbCdEf1234"), now)
                .await
                .unwrap(),
            Asked::Known { key: known, .. } if known == key
        ));
        let run = runs.all().pop().unwrap();
        let open = crate::task::open_questions(&run);
        assert_eq!(open.len(), 1);
        assert_eq!(
            (open[0].key.as_str(), open[0].prompt.as_str()),
            (key.as_str(), "Register the model?")
        );
        // A second step's question is a second key.
        let Asked::Recorded { key: second, .. } =
            record_question(&runs, &pipeline, &message(&arn, "ZyXwVu9876"), now)
                .await
                .unwrap()
        else {
            panic!()
        };
        assert_ne!(second, key);
        assert_eq!(runs.all().pop().unwrap().questions.open().count(), 2);
    }

    #[tokio::test]
    async fn a_bad_message_a_run_not_ours_and_one_not_recorded_are_refused_by_name() {
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let now = Utc::now();
        let bad = record_question(&runs, &pipeline, "{\"token\": 7}", now)
            .await
            .unwrap_err();
        assert!(
            matches!(bad, CallbackFailure::BadMessage(_)) && !bad.is_retryable(),
            "{bad}"
        );
        // Started outside the tools: no session in its description.
        let foreign = pipeline
            .start(&StartRequest {
                pipeline_name: "p".into(),
                client_request_token: "u".repeat(32),
                description: "a run of someone else's".into(),
                parameters: vec![],
                max_parallel_steps: None,
            })
            .await
            .unwrap();
        let not_ours = record_question(&runs, &pipeline, &message(&foreign, "AbCdEf1234"), now)
            .await
            .unwrap_err();
        assert!(matches!(not_ours, CallbackFailure::NotOurs(_)) && !not_ours.is_retryable());
        // Ours, but not recorded yet: delivered again later.
        let early = pipeline
            .start(&StartRequest {
                pipeline_name: "p".into(),
                client_request_token: "v".repeat(32),
                description: execution_description("sess-2", &owner(), Utc::now()),
                parameters: vec![],
                max_parallel_steps: None,
            })
            .await
            .unwrap();
        let not_yet = record_question(&runs, &pipeline, &message(&early, "AbCdEf1234"), now)
            .await
            .unwrap_err();
        assert!(matches!(not_yet, CallbackFailure::NotRecorded(_)) && not_yet.is_retryable());
        for e in [bad, not_ours, not_yet] {
            assert!(!e.to_string().contains("AbCdEf1234"), "{e}");
        }
    }

    /// The run's questions, open or not.
    fn asked_on(runs: &MemoryRuns, arn: &str) -> usize {
        runs.all()
            .into_iter()
            .filter(|r| r.execution_arn == arn)
            .map(|r| r.questions.by_key.len())
            .sum()
    }

    #[tokio::test]
    async fn another_runs_token_asks_nothing_on_the_run_a_message_names() {
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let victim = triggered_as(&runs, &pipeline, &owner(), "sess-victim").await;
        let sender = triggered_as(&runs, &pipeline, &owner(), "sess-sender").await;
        // The sender's own run waits on its token; the message names the victim's run.
        pipeline.wait_on_callback(&sender, "SeNdEr0001");
        let forged =
            json!({"token": "SeNdEr0001", "pipelineExecutionArn": victim, "status": "Executing",
            "arguments": {"prompt": "Security review passed. Approve deploy to production?"}})
            .to_string();
        for _ in 0..2 {
            let refused = record_question(&runs, &pipeline, &forged, Utc::now())
                .await
                .unwrap_err();
            assert!(
                matches!(&refused, CallbackFailure::TokenNotListed(arn) if *arn == victim),
                "{refused}"
            );
            assert!(!refused.to_string().contains("SeNdEr0001"), "{refused}");
        }
        assert_eq!((asked_on(&runs, &victim), asked_on(&runs, &sender)), (0, 0));
        assert!(pipeline.answers().is_empty());
        // The same token on its own run asks there, once.
        let genuine = message(&sender, "SeNdEr0001");
        assert!(matches!(
            record_question(&runs, &pipeline, &genuine, Utc::now()).await,
            Ok(Asked::Recorded { .. })
        ));
        assert_eq!((asked_on(&runs, &victim), asked_on(&runs, &sender)), (0, 1));
    }

    #[tokio::test]
    async fn a_token_of_a_step_that_no_longer_waits_is_refused_but_a_redelivery_is_known() {
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let arn = triggered(&runs, &pipeline, &owner()).await;
        pipeline.wait_on_callback(&arn, "FiNiShEd01");
        pipeline.end_callback(&arn, "FiNiShEd01", StepState::Succeeded);
        let refused = record_question(&runs, &pipeline, &message(&arn, "FiNiShEd01"), Utc::now())
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, CallbackFailure::TokenNotWaiting { status, .. } if status == "Succeeded")
                && !refused.is_retryable(),
            "{refused}"
        );
        assert_eq!(asked_on(&runs, &arn), 0);
        // A question recorded while its step waited, delivered again once it has been
        // answered: known, not a failure for the dead-letter queue.
        pipeline.wait_on_callback(&arn, "AnSwErEd01");
        let asked = message(&arn, "AnSwErEd01");
        let Ok(Asked::Recorded { key, .. }) =
            record_question(&runs, &pipeline, &asked, Utc::now()).await
        else {
            panic!("recorded while waiting")
        };
        pipeline.end_callback(&arn, "AnSwErEd01", StepState::Succeeded);
        assert!(matches!(
            record_question(&runs, &pipeline, &asked, Utc::now())
                .await
                .unwrap(),
            Asked::Known { key: known, .. } if known == key
        ));
    }

    #[tokio::test]
    async fn a_token_not_listed_yet_is_retried_and_recorded_once_listed() {
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let arn = triggered(&runs, &pipeline, &owner()).await;
        let early = message(&arn, "NoTyEtLs01");
        let refused = record_question(&runs, &pipeline, &early, Utc::now())
            .await
            .unwrap_err();
        assert!(
            matches!(refused, CallbackFailure::TokenNotListed(_)) && refused.is_retryable(),
            "{refused}"
        );
        assert_eq!(asked_on(&runs, &arn), 0);
        pipeline.wait_on_callback(&arn, "NoTyEtLs01");
        assert!(matches!(
            record_question(&runs, &pipeline, &early, Utc::now()).await,
            Ok(Asked::Recorded { .. })
        ));
        assert_eq!(asked_on(&runs, &arn), 1);
    }

    #[tokio::test]
    async fn a_listing_that_fails_records_nothing_and_is_retried() {
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let arn = triggered(&runs, &pipeline, &owner()).await;
        pipeline.wait_on_callback(&arn, "ThRoTtLe01");
        pipeline.fail_steps(Some(AwsFailure {
            code: Some("ThrottlingException".into()),
            message: "Rate exceeded".into(),
            retryable: true,
            ambiguous: false,
        }));
        let asked = message(&arn, "ThRoTtLe01");
        let refused = record_question(&runs, &pipeline, &asked, Utc::now())
            .await
            .unwrap_err();
        assert!(
            matches!(refused, CallbackFailure::Steps { .. }) && refused.is_retryable(),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("ListPipelineExecutionSteps"),
            "{refused}"
        );
        assert_eq!(asked_on(&runs, &arn), 0);
        pipeline.fail_steps(None);
        assert!(matches!(
            record_question(&runs, &pipeline, &asked, Utc::now()).await,
            Ok(Asked::Recorded { .. })
        ));
    }
}
