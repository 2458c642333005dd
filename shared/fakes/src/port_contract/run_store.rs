//! The pipeline results table: a trigger writes once, a terminal status is kept.

use domain::caller::{Owner, Principal};
use domain::ids::SessionId;
use domain::item::Applied;
use domain::pipeline_status::{PipelineStatus, RunStatus};
use domain::run::{self, session_key, Run, RunRecord};
use domain::time::{parse_rfc3339, rfc3339};
use domain::trace::TraceContext;
use ports::RunStore;

use super::{refused, written};

fn session() -> String {
    format!("s-{}", uuid::Uuid::new_v4().simple())
}

/// The caller the runs belong to, and where its session is stored.
fn owner() -> Owner {
    Principal::Local.caller().owner
}

fn key(session: &str) -> String {
    session_key(Some(&owner()), session)
}

fn arn(n: u32) -> String {
    format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}")
}

fn started() -> String {
    rfc3339(parse_rfc3339("2026-11-20T10:00:00Z").unwrap())
}

fn record(session: &str, n: u32, status: PipelineStatus) -> RunRecord {
    RunRecord {
        session_id: SessionId::parse(session).expect("a session id"),
        owner: Some(owner()),
        execution_arn: arn(n).into(),
        pipeline_arn: "arn:p".into(),
        status,
        started_at: Some(started()),
        ended_at: None,
        failure_reason: None,
        updated_at: started(),
        ttl: 9_999_999_999,
    }
}

async fn change<S: RunStore>(store: &S, session: &str, n: u32, status: PipelineStatus) -> Applied {
    store
        .write(&run::record_status_change(&record(session, n, status)))
        .await
        .unwrap()
}

async fn stored<S: RunStore>(store: &S, session: &str, n: u32) -> Run {
    let runs = store.query_session(&key(session)).await.unwrap();
    let run = runs
        .into_iter()
        .find(|r| r.execution_arn == arn(n))
        .expect("the run is stored");
    assert_eq!(
        run.session_id, session,
        "the session, without the owner tag"
    );
    assert_eq!(run.owner.as_ref(), Some(&owner()));
    run
}

/// A triggering call's trace, with a vendor's state (always the same one).
fn trace() -> TraceContext {
    TraceContext::parse(
        Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
    )
    .expect("a valid traceparent")
}

pub async fn a_trigger_is_written_once<S: RunStore>(store: &S) {
    let s = session();
    let trace = trace();
    let trigger = run::record_triggered(
        &owner(),
        &s,
        &arn(1),
        &started(),
        9_999_999_999,
        "secret",
        Some(&trace),
    );
    written(store.write(&trigger).await.unwrap(), "triggered");
    refused(&store.write(&trigger).await.unwrap(), "triggered twice");
    let run = stored(store, &s, 1).await;
    assert_eq!(run.status, RunStatus::Pending);
    assert_eq!(run.started_at, Some(started()));
    assert_eq!(run.task_secret.as_deref(), Some("secret"));
    assert_eq!(run.trace, Some(trace.clone()), "traceparent and tracestate");
    // A status change keeps the trigger's trace, and answers with it.
    match change(store, &s, 1, PipelineStatus::Succeeded).await {
        Applied::Written {
            previous: Some(item),
        } => assert_eq!(Run::from_item(&item).trace, Some(trace.clone())),
        other => panic!("a status change: expected the stored item back, got {other:?}"),
    }
    assert_eq!(stored(store, &s, 1).await.trace, Some(trace));
}

pub async fn a_terminal_status_is_kept_against_a_late_executing<S: RunStore>(store: &S) {
    let s = session();
    written(
        change(store, &s, 1, PipelineStatus::Executing).await,
        "Executing",
    );
    written(change(store, &s, 1, PipelineStatus::Failed).await, "Failed");
    match change(store, &s, 1, PipelineStatus::Executing).await {
        Applied::Refused(Some(item)) => {
            assert_eq!(Run::from_item(&item).status, PipelineStatus::Failed.into())
        }
        other => {
            panic!("a late Executing: expected a refusal with the stored item, got {other:?}")
        }
    }
    assert_eq!(
        stored(store, &s, 1).await.status,
        PipelineStatus::Failed.into()
    );
}

pub async fn a_run_heard_of_at_its_end_refuses_a_later_trigger<S: RunStore>(store: &S) {
    let s = session();
    written(
        change(store, &s, 2, PipelineStatus::Succeeded).await,
        "first heard of at its end",
    );
    refused(
        &store
            .write(&run::record_triggered(
                &owner(),
                &s,
                &arn(2),
                &started(),
                1,
                "secret",
                Some(&trace()),
            ))
            .await
            .unwrap(),
        "triggered after the router recorded it",
    );
    for (secret, trace, what) in [
        ("secret", trace(), "the secret attached"),
        (
            "other",
            TraceContext::start(),
            "a second secret (kept out by if_not_exists)",
        ),
    ] {
        let attach = run::attach_task_secret(&owner(), &s, &arn(2), secret, Some(&trace));
        written(store.write(&attach).await.unwrap(), what);
    }
    let run = stored(store, &s, 2).await;
    assert_eq!(run.status, PipelineStatus::Succeeded.into());
    assert_eq!(
        run.task_secret.as_deref(),
        Some("secret"),
        "the first secret is kept"
    );
    assert_eq!(run.trace, Some(trace()), "and the first trace attached");
}

pub async fn a_session_query_returns_its_runs_only<S: RunStore>(store: &S) {
    let (s, other) = (session(), session());
    written(change(store, &s, 1, PipelineStatus::Failed).await, "run 1");
    written(
        change(store, &s, 2, PipelineStatus::Succeeded).await,
        "run 2",
    );
    written(
        change(store, &other, 3, PipelineStatus::Executing).await,
        "another session's",
    );
    let mut runs = store.query_session(&key(&s)).await.unwrap();
    runs.sort_by(|a, b| a.execution_arn.cmp(&b.execution_arn));
    let statuses: Vec<_> = runs
        .iter()
        .map(|r| (r.execution_arn.to_string(), r.status.clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            (arn(1), PipelineStatus::Failed.into()),
            (arn(2), PipelineStatus::Succeeded.into())
        ]
    );
    assert!(store
        .query_session(&key(&session()))
        .await
        .unwrap()
        .is_empty());
    assert!(
        store.query_session(&s).await.unwrap().is_empty(),
        "an owner's runs are not under the bare session id"
    );
}

pub async fn a_batch_read_answers_each_key_in_order<S: RunStore>(store: &S) {
    let (s, other) = (session(), session());
    change(store, &s, 1, PipelineStatus::Executing).await;
    change(store, &s, 2, PipelineStatus::Succeeded).await;
    let keys = [
        (key(&s), arn(2)),
        (key(&other), arn(1)),
        (key(&s), arn(1)),
        (s.clone(), arn(1)),
    ];
    let read = store.get_many(&keys).await.unwrap();
    let found: Vec<Option<(String, String)>> = read
        .iter()
        .map(|r| {
            r.as_ref()
                .map(|r| (r.execution_arn.to_string(), r.status.as_str().to_owned()))
        })
        .collect();
    assert_eq!(
        found,
        [
            Some((arn(2), "Succeeded".into())),
            None,
            Some((arn(1), "Executing".into())),
            None
        ],
        "another session's, and the session without its owner tag, are no runs"
    );
    assert_eq!(read[2].as_ref(), Some(&stored(store, &s, 1).await));
    assert!(store.get_many(&[]).await.unwrap().is_empty());
}

/// One `#[tokio::test]` per pipeline-results-table behaviour, on the `RunStore` `$make.await` gives.
#[macro_export]
macro_rules! run_store_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            run_store,
            $make,
            [
                a_trigger_is_written_once,
                a_terminal_status_is_kept_against_a_late_executing,
                a_run_heard_of_at_its_end_refuses_a_later_trigger,
                a_session_query_returns_its_runs_only,
                a_batch_read_answers_each_key_in_order,
            ]
        );
    };
}
