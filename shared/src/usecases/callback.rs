//! A CallbackStep's question, recorded on its run: the message read, the run found through its
//! execution's description (the session and owner trigger_training set), the question written
//! under its key. A duplicate delivery asks nothing new; a run not recorded yet, or a write that
//! lost a race, is an error, so the queue delivers the message again.

use chrono::{DateTime, Utc};

use crate::domain::callback::{parse_callback, CallbackError};
use crate::domain::item::Applied;
use crate::domain::question::{ask, question_key, Ask, MAX_QUESTIONS};
use crate::domain::time::rfc3339;
use crate::ports::{AwsFailure, PipelineControl, RunStore, StoreError};
use crate::usecases::training::{stored_run, stored_run_key};

/// A write that lost a race is read and tried again this many times before the message is
/// left to the queue's next delivery.
const WRITE_ATTEMPTS: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// Recorded, open, under `key`.
    Recorded { key: String },
    /// Already recorded under `key` (the message came again).
    Known { key: String },
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
            CallbackFailure::Describe { failure, .. } => failure.retryable,
            CallbackFailure::NotRecorded(_)
            | CallbackFailure::Contended(_)
            | CallbackFailure::Store(_) => true,
            CallbackFailure::BadMessage(_)
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
            Ask::Known => return Ok(Asked::Known { key }),
            Ask::Full => return Err(CallbackFailure::Full(arn.to_owned())),
            Ask::Write(write) => write,
        };
        match runs.write(&write).await? {
            Applied::Written { .. } => return Ok(Asked::Recorded { key }),
            // Known meanwhile (a duplicate raced this one) or another change: read again.
            Applied::Refused(_) => continue,
        }
    }
    Err(CallbackFailure::Contended(arn.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::caller::{Owner, Principal};
    use crate::domain::pipeline_event::execution_description;
    use crate::domain::run::record_triggered;
    use crate::fakes::{FakePipeline, MemoryRuns};
    use crate::ports::StartRequest;
    use serde_json::json;

    fn owner() -> Owner {
        Principal::Local.caller().owner
    }

    async fn triggered(runs: &MemoryRuns, pipeline: &FakePipeline, owner: &Owner) -> String {
        let arn = pipeline
            .start(&StartRequest {
                pipeline_name: "p".into(),
                client_request_token: "t".repeat(32),
                description: execution_description("sess-1", owner, Utc::now()),
                parameters: vec![],
                max_parallel_steps: None,
            })
            .await
            .unwrap();
        let w = record_triggered(
            owner,
            "sess-1",
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
        let now = Utc::now();
        let Asked::Recorded { key } =
            record_question(&runs, &pipeline, &message(&arn, "AbCdEf1234"), now)
                .await
                .unwrap()
        else {
            panic!("recorded")
        };
        assert_eq!(
            record_question(&runs, &pipeline, &message(&arn, "AbCdEf1234"), now)
                .await
                .unwrap(),
            Asked::Known { key: key.clone() }
        );
        let run = runs.all().pop().unwrap();
        let open = crate::usecases::task::open_questions(&run);
        assert_eq!(open.len(), 1);
        assert_eq!(
            (open[0].key.as_str(), open[0].prompt.as_str()),
            (key.as_str(), "Register the model?")
        );
        // A second step's question is a second key.
        let Asked::Recorded { key: second } =
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
}
