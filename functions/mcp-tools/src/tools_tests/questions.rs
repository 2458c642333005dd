//! A run that asks a person: its task goes `input_required` with the question as a form
//! elicitation, and `tasks/update` answers it (sent to the CallbackStep once, by key).

use domain::caller::Principal;
use domain::question::StepAnswer;
use serde_json::{json, Value};
use usecases::callback::record_question;

use super::*;

const TOKEN: &str = "Q1w2E3r4T5";

/// A run started as a task whose CallbackStep asked which stage to deploy to, recorded as
/// pipeline-router records it: the task id and the question's key.
async fn asking(w: &World) -> (String, String) {
    let args = json!({"input_data_uri": "s3://b/train/t", "session_id": "s"});
    let created = w.call_as_task(names::TRIGGER_TRAINING, args).await;
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    let n = w.ports().pipeline.started().len();
    let arn = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}");
    let fields = json!({"type": "object", "required": ["deploy_to"], "properties": {
        "deploy_to": {"type": "string", "enum": ["staging", "production"], "title": "Deploy to"}}});
    let message = json!({"token": TOKEN, "pipelineExecutionArn": arn, "status": "Executing",
                         "arguments": {"prompt": "Accuracy 0.95. Deploy?", "fields": fields.to_string()}});
    let ports = w.ports();
    ports.pipeline.wait_on_callback(&arn, TOKEN);
    let asked = record_question(&ports.runs, &ports.pipeline, &message.to_string(), w.now())
        .await
        .unwrap();
    let usecases::callback::Asked::Recorded { key, .. } = asked else {
        panic!("{asked:?}")
    };
    (task_id, key)
}

fn response(key: &str, answer: Value) -> Value {
    json!({key: answer})
}

#[tokio::test]
async fn a_run_task_asks_its_question_and_an_accepted_answer_goes_to_the_step_once() {
    let w = world(&[]);
    let (task_id, key) = asking(&w).await;
    let task = w.get_task(&task_id).await.unwrap();
    assert_eq!(task["status"], "input_required", "{task}");
    let asked = &task["inputRequests"][&key];
    assert_eq!(asked["method"], "elicitation/create", "{task}");
    assert_eq!(asked["params"]["mode"], "form");
    assert_eq!(asked["params"]["message"], "Accuracy 0.95. Deploy?");
    assert_eq!(
        asked["params"]["requestedSchema"]["properties"]["deploy_to"]["enum"],
        json!(["staging", "production"])
    );
    assert!(
        !task.to_string().contains(TOKEN),
        "the token never leaves: {task}"
    );

    // Content that does not fit the form is refused by name, and the key stays open.
    let bad = w
        .update_task(
            &task_id,
            response(
                &key,
                json!({"action": "accept", "content": {"deploy_to": "moon"}}),
            ),
        )
        .await
        .unwrap_err();
    assert!(
        bad.message.contains("`deploy_to` must be one of"),
        "{bad:?}"
    );
    let answer = json!({"action": "accept", "content": {"deploy_to": "production"}});
    w.update_task(&task_id, response(&key, answer.clone()))
        .await
        .unwrap();
    assert_eq!(
        w.ports().pipeline.answers(),
        vec![(
            TOKEN.to_owned(),
            StepAnswer::Success(vec![("deploy_to".into(), "production".into())])
        )]
    );
    let task = w.get_task(&task_id).await.unwrap();
    assert_eq!(task["status"], "working", "{task}");
    // The same key again, an unknown one: acknowledged, nothing more sent.
    w.update_task(&task_id, response(&key, json!({"action": "decline"})))
        .await
        .unwrap();
    w.update_task(&task_id, response("q-nope", json!({"action": "decline"})))
        .await
        .unwrap();
    assert_eq!(w.ports().pipeline.answers().len(), 1);
}

#[tokio::test]
async fn only_approvers_answer_and_another_caller_learns_nothing() {
    let w = world(&[]);
    let (task_id, key) = asking(&w).await;
    let decline = response(&key, json!({"action": "decline"}));
    let other = w.as_caller(Principal::Bearer { name: "b".into() });
    let unknown = other
        .update_task(&task_id, decline.clone())
        .await
        .unwrap_err();
    assert_eq!(unknown.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(other.get_task(&task_id).await.is_err());
    assert!(w.ports().pipeline.answers().is_empty());
    let bad = w
        .update_task(&task_id, response(&key, json!({"action": "maybe"})))
        .await
        .unwrap_err();
    assert!(
        bad.message
            .contains("`action` must be accept, decline or cancel"),
        "{bad:?}"
    );
    w.update_task(&task_id, decline).await.unwrap();
    let (token, StepAnswer::Failure(reason)) = &w.ports().pipeline.answers()[0] else {
        panic!()
    };
    assert_eq!(token, TOKEN);
    assert!(reason.starts_with("declined by caller "), "{reason}");
}

#[tokio::test]
async fn without_tasks_check_training_status_shows_the_question_and_answer_training_input_answers_it(
) {
    let w = world(&[]);
    let (_, key) = asking(&w).await;
    let n = w.ports().pipeline.started().len();
    let arn = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}");
    let status = w
        .ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    let waiting = &status["waiting_for_input"];
    assert_eq!(waiting[0]["key"], key.as_str(), "{status}");
    assert_eq!(waiting[0]["prompt"], "Accuracy 0.95. Deploy?");
    assert_eq!(waiting[0]["fields"]["required"], json!(["deploy_to"]));
    assert!(!status.to_string().contains(TOKEN));

    let args = |action: &str, content: Value| json!({"execution_arn": arn, "key": key, "action": action, "content": content});
    let refused = w
        .tool_error(
            names::ANSWER_TRAINING_INPUT,
            args("accept", json!({"deploy_to": 3})),
        )
        .await;
    assert!(
        refused.contains("`deploy_to` must be a string"),
        "{refused}"
    );
    let declined_with_content = w
        .tool_error(names::ANSWER_TRAINING_INPUT, args("decline", json!({})))
        .await;
    assert!(declined_with_content.contains("`content` goes only with `action` accept"));
    let sent = w
        .ok(
            names::ANSWER_TRAINING_INPUT,
            args("accept", json!({"deploy_to": "staging"})),
        )
        .await;
    assert_eq!(sent["outcome"], "sent", "{sent}");
    let again = w
        .ok(
            names::ANSWER_TRAINING_INPUT,
            json!({"execution_arn": arn, "key": key, "action": "cancel"}),
        )
        .await;
    assert_eq!(
        (again["outcome"].as_str(), again["detail"].as_str()),
        (Some("ignored"), Some(crate::wording::ANSWERED_ALREADY))
    );
    assert_eq!(w.ports().pipeline.answers().len(), 1);
    let status = w
        .ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    assert!(status.get("waiting_for_input").is_none(), "{status}");

    // Another caller: the run is unknown to it.
    let other = w.as_caller(Principal::Bearer { name: "b".into() });
    let unknown = other
        .tool_error(
            names::ANSWER_TRAINING_INPUT,
            json!({"execution_arn": arn, "key": key, "action": "decline"}),
        )
        .await;
    assert!(unknown.contains("no training run"), "{unknown}");
}
