//! The completion queue: what is sent arrives, whole, as JSON, once per send.

use std::future::Future;

use serde_json::Value;

use domain::caller::Principal;
use domain::ids::ExecutionArn;
use domain::pipeline_status::PipelineStatus;
use domain::run::CompletionMessage;
use ports::CompletionQueue;

/// A queue under test that can also tell what it received (every message body since it
/// was created, as JSON): the fake from memory, SQS by ReceiveMessage.
pub trait Inbox: CompletionQueue {
    fn received(&self) -> impl Future<Output = Vec<Value>> + Send;
}

fn message(status: PipelineStatus) -> CompletionMessage {
    CompletionMessage {
        session_id: format!("s-{}", uuid::Uuid::new_v4().simple()).into(),
        owner: Some(Principal::Local.caller().owner.as_str().to_owned()),
        execution_arn: ExecutionArn::parse(
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/1",
        )
        .expect("an execution ARN"),
        pipeline_arn: "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p".into(),
        status,
        previous_status: Some(PipelineStatus::Executing.into()),
        started_at: Some("2026-11-20T10:00:00.000Z".into()),
        ended_at: Some("2026-11-20T10:20:00.000Z".into()),
        failure_reason: (status == PipelineStatus::Failed).then(|| "Step failure: Evaluate".into()),
        event_id: uuid::Uuid::new_v4().to_string(),
        event_time: "2026-11-20T10:20:01.000Z".into(),
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
    }
}

pub async fn a_sent_message_arrives_whole_as_json<Q: Inbox>(queue: &Q) {
    let sent = message(PipelineStatus::Failed);
    queue.send(&sent).await.unwrap();
    let received = queue.received().await;
    assert_eq!(received, [serde_json::to_value(&sent).unwrap()]);
    assert_eq!(received[0]["status"], "Failed");
    assert_eq!(received[0]["previous_status"], "Executing");
    assert_eq!(
        received[0]["traceparent"],
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    );
}

pub async fn each_send_is_one_message<Q: Inbox>(queue: &Q) {
    let (a, b) = (
        message(PipelineStatus::Succeeded),
        message(PipelineStatus::Stopped),
    );
    queue.send(&a).await.unwrap();
    queue.send(&b).await.unwrap();
    let mut ids: Vec<_> = queue
        .received()
        .await
        .iter()
        .map(|m| m["event_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let mut expected = vec![a.event_id, b.event_id];
    expected.sort();
    assert_eq!(ids, expected);
}

/// One `#[tokio::test]` per completion-queue behaviour, on the [`completion_queue::Inbox`] `$make.await` gives.
#[macro_export]
macro_rules! completion_queue_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            completion_queue,
            $make,
            [
                a_sent_message_arrives_whole_as_json,
                each_send_is_one_message,
            ]
        );
    };
}
