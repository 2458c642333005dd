//! approve_model_package: a registered model approved or rejected by the run's owner, once.

use domain::caller::Principal;
use ports::LineageGraph;

use super::*;

async fn approval_status(w: &World, package: &str) -> Option<String> {
    let lineage = &w.ports().lineage;
    lineage
        .describe_model_package(package)
        .await
        .unwrap()
        .approval_status
}

#[tokio::test]
async fn the_owner_approves_a_registered_model_and_a_retry_changes_nothing() {
    let w = world(&[]);
    let (execution, package) = registered_model(&w).await;
    let args = json!({"model_package_arn": package, "approve": true, "comment": "accuracy 0.95"});
    let out = w.ok(names::APPROVE_MODEL_PACKAGE, args.clone()).await;
    assert_eq!(
        out,
        json!({"model_package_arn": package, "execution_arn": execution,
               "approval_status": "Approved", "changed": true})
    );
    assert_eq!(
        approval_status(&w, &package).await.as_deref(),
        Some("Approved")
    );
    let again = w.ok(names::APPROVE_MODEL_PACKAGE, args).await;
    assert_eq!(again["changed"], false);
    assert_eq!(w.ports().lineage.calls("UpdateModelPackage"), 1);
    // Decided, it is not turned the other way through the tools.
    let turned = w
        .tool_error(
            names::APPROVE_MODEL_PACKAGE,
            json!({"model_package_arn": package, "approve": false}),
        )
        .await;
    assert!(turned.contains("is Approved"), "{turned}");
}

#[tokio::test]
async fn a_rejected_model_is_rejected_and_another_caller_cannot_tell_it_exists() {
    let w = world(&[]);
    let (_, package) = registered_model(&w).await;
    let bob = w.as_caller(Principal::Bearer { name: "bob".into() });
    let refused = bob
        .tool_error(
            names::APPROVE_MODEL_PACKAGE,
            json!({"model_package_arn": package, "approve": false}),
        )
        .await;
    let unknown = package.replace("/1", "/7");
    let missing = w
        .tool_error(
            names::APPROVE_MODEL_PACKAGE,
            json!({"model_package_arn": unknown, "approve": false}),
        )
        .await;
    assert_eq!(
        refused.replace(&package, "ARN"),
        missing.replace(&unknown, "ARN")
    );
    assert!(refused.contains("no model package"), "{refused}");
    assert_eq!(w.ports().lineage.calls("UpdateModelPackage"), 0);
    let out = w
        .ok(
            names::APPROVE_MODEL_PACKAGE,
            json!({"model_package_arn": package, "approve": false}),
        )
        .await;
    assert_eq!(out["approval_status"], "Rejected");
    assert_eq!(
        approval_status(&w, &package).await.as_deref(),
        Some("Rejected")
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_by_name_before_sagemaker_is_asked() {
    let w = world(&[]);
    let (_, package) = registered_model(&w).await;
    for (args, names_it) in [
        (
            json!({"model_package_arn": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/g", "approve": true}),
            "`model_package_arn`",
        ),
        (
            json!({"model_package_arn": package, "approve": true, "comment": "x".repeat(901)}),
            "`comment`",
        ),
    ] {
        let refused = w.tool_error(names::APPROVE_MODEL_PACKAGE, args).await;
        assert!(refused.contains(names_it), "{refused}");
    }
    assert_eq!(w.ports().lineage.calls("DescribeModelPackage"), 0);
}

/// A run started as a task that succeeded registering a model, behind the approval gate: the
/// task id and the package.
async fn gated_run(w: &World) -> (String, String) {
    let args = json!({"input_data_uri": "s3://b/train/", "session_id": "s-1"});
    let created = w.call_as_task(names::TRIGGER_TRAINING, args).await;
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    let n = w.ports().pipeline.started().len();
    let execution = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}");
    let package = w
        .ports()
        .lineage
        .register_model(&execution, "s3://b/train/");
    w.ports().pipeline.succeed_with_model(&execution, &package);
    (task_id, package)
}

#[tokio::test]
async fn behind_the_gate_a_runs_task_asks_its_models_approval_and_accept_approves_it() {
    let w = world(&[("APPROVAL_GATE", "true")]);
    let (task_id, package) = gated_run(&w).await;
    let task = w.get_task(&task_id).await.unwrap();
    assert_eq!(task["status"], "input_required", "{task}");
    let (key, asked) = task["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert!(key.starts_with("m-"), "{key}");
    assert!(
        asked["params"]["message"]
            .as_str()
            .unwrap()
            .contains("p-models version 1"),
        "{asked}"
    );
    // Asked again, the same question: one key.
    let again = w.get_task(&task_id).await.unwrap();
    assert_eq!(again["inputRequests"], task["inputRequests"]);
    let accept = json!({key: {"action": "accept", "content": {"comment": "looks right"}}});
    w.update_task(&task_id, accept).await.unwrap();
    assert_eq!(
        approval_status(&w, &package).await.as_deref(),
        Some("Approved")
    );
    let done = w.get_task(&task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["model_approval_status"], "Approved", "{done}");
    assert_eq!(result["model_package_arn"], package.as_str());
}

#[tokio::test]
async fn behind_the_gate_check_training_status_shows_the_model_waiting_until_the_tool_rejects_it() {
    let w = world(&[("APPROVAL_GATE", "true")]);
    let (_, package) = gated_run(&w).await;
    let n = w.ports().pipeline.started().len();
    let arn = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}");
    let status = w
        .ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    assert_eq!(
        status["model_approval_status"], "PendingManualApproval",
        "{status}"
    );
    assert!(status["waiting_for_input"][0]["key"]
        .as_str()
        .unwrap()
        .starts_with("m-"));
    w.ok(
        names::APPROVE_MODEL_PACKAGE,
        json!({"model_package_arn": package, "approve": false}),
    )
    .await;
    let after = w
        .ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    assert_eq!(after["model_approval_status"], "Rejected", "{after}");
    assert!(after.get("waiting_for_input").is_none(), "{after}");
    // Without the gate, nothing waits and nothing is said of the approval.
    let plain = world(&[]);
    let (task_id, _) = gated_run(&plain).await;
    let done = plain.get_task(&task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"]["structuredContent"]
        .get("model_approval_status")
        .is_none());
}
