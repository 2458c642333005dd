//! Get_model_provenance.

use super::*;

#[tokio::test]
async fn get_model_provenance_walks_upstream_by_default_and_names_the_run() {
    let w = world(&[]);
    let (execution, package) = registered_model(&w).await;
    let out = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package}),
        )
        .await;
    assert_eq!(
        (out["direction"].as_str(), out["max_depth"].as_u64()),
        (Some("upstream"), Some(2))
    );
    let root = &out["root"];
    assert_eq!(root["arn"], package.as_str());
    assert_eq!(root["status"], "Completed");
    assert_eq!(root["approval_status"], "PendingManualApproval");
    assert_eq!(root["group_name"], "p-models");
    assert_eq!(root["generated_by"], execution.as_str());
    assert_eq!(
        root["pipeline_execution"],
        json!({"execution_arn": execution, "pipeline_name": "p", "status": "Succeeded", "session_id": "s-1"})
    );
    let nodes = out["nodes"].as_array().unwrap();
    let mut seen: Vec<(String, u64)> = nodes
        .iter()
        .map(|n| {
            let what = n.get("artifact_type").or(n.get("lineage_type")).unwrap();
            (
                format!("{}:{}", n["kind"].as_str().unwrap(), what.as_str().unwrap()),
                n["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("artifact:Image".to_owned(), 1),
            ("artifact:Model".to_owned(), 1),
            ("trial_component:SageMakerTrainingJob".to_owned(), 2),
        ]
    );
    let model = nodes
        .iter()
        .find(|n| n["artifact_type"] == "Model")
        .unwrap();
    assert!(model["source_uri"]
        .as_str()
        .unwrap()
        .ends_with("model.tar.gz"));
    let edges = out["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 3);
    assert!(edges
        .iter()
        .any(|e| e["association_type"] == "Produced" && e["destination_arn"] == model["arn"]));
    assert_eq!(out["truncated"], false);
    assert!(out.get("message").is_none(), "{out}");
    let text = out.to_string();
    assert!(
        !text.contains("mcp_owner") && !text.contains(Principal::Local.caller().owner.as_str())
    );

    let deep = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package, "max_depth": 3}),
        )
        .await;
    let data = deep["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["artifact_type"] == "DataSet")
        .expect("the training data at depth 3");
    assert_eq!(
        (data["source_uri"].as_str(), data["depth"].as_u64()),
        (Some("s3://b/train/"), Some(3))
    );
    assert_eq!(deep["nodes"].as_array().unwrap().len(), 4, "the image once");
}

#[tokio::test]
async fn get_model_provenance_downstream_is_what_the_model_fed() {
    let w = world(&[]);
    let (_, package) = registered_model(&w).await;
    let out = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package, "direction": "downstream", "max_depth": "1"}),
        )
        .await;
    assert_eq!(out["direction"], "downstream");
    let nodes = out["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(
        (nodes[0]["kind"].as_str(), nodes[0]["lineage_type"].as_str()),
        (Some("context"), Some("ModelGroup"))
    );
    assert_eq!(
        out["edges"][0]["source_arn"],
        out["root"]["lineage_arns"][0]
    );
}

#[tokio::test]
async fn get_model_provenance_stops_at_fifty_entities_and_says_so() {
    let w = world(&[]);
    let (_, package) = registered_model(&w).await;
    let lineage = &w.ports().lineage;
    let start = lineage.artifacts_with_source(&package).await.unwrap()[0].clone();
    for i in 0..60 {
        let input = lineage.add_artifact("DataSet", &format!("s3://b/extra/{i}"));
        lineage.associate(&input, &start, "ContributedTo");
    }
    let out = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package, "max_depth": 1}),
        )
        .await;
    assert_eq!(out["nodes"].as_array().unwrap().len(), 50);
    assert_eq!(out["edges"].as_array().unwrap().len(), 50);
    assert_eq!(out["truncated"], true);
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("smaller max_depth"),
        "{out}"
    );
    assert!(lineage.calls("ListAssociations") <= 25);
}

#[tokio::test]
async fn get_model_provenance_refuses_what_it_cannot_answer() {
    let w = world(&[]);
    let missing = "arn:aws:sagemaker:us-east-1:123456789012:model-package/none/1";
    assert_eq!(
        w.tool_error(names::GET_MODEL_PROVENANCE, json!({"model_package_arn": missing})).await,
        format!("no model package \"{missing}\" was found: check the model_package_arn (check_training_status reports the one a run registered)")
    );
    let group = "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/none";
    let message = w
        .tool_error(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": group}),
        )
        .await;
    assert!(
        message.contains("is not a model package ARN") && message.contains("model package group"),
        "{message}"
    );
    for (args, expected) in [
        (
            json!({"model_package_arn": missing, "max_depth": 4}),
            "`max_depth`",
        ),
        (
            json!({"model_package_arn": missing, "max_depth": 0}),
            "`max_depth`",
        ),
        (
            json!({"model_package_arn": missing, "direction": "sideways"}),
            "`direction` must be one of \"upstream\", \"downstream\"; got \"sideways\"",
        ),
        (
            json!({"model_package_arn": "model-1"}),
            "is not a model package ARN",
        ),
        (
            json!({"model_package_arn": missing, "depth": 1}),
            "unknown argument \"depth\"",
        ),
    ] {
        let message = w
            .tool_error(names::GET_MODEL_PROVENANCE, args.clone())
            .await;
        assert!(message.contains(expected), "{args}: {message}");
    }
    assert_eq!(
        w.ports().lineage.calls("DescribeModelPackage"),
        1,
        "bad arguments reach nothing"
    );

    let (_, package) = registered_model(&w).await;
    w.ports().lineage.fail(
        "ListAssociations",
        ports::AwsFailure {
            code: Some("AccessDeniedException".into()),
            message: "not authorized to perform: sagemaker:ListAssociations".into(),
            retryable: false,
            ambiguous: false,
        },
    );
    let message = w
        .tool_error(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package}),
        )
        .await;
    assert_eq!(
        message,
        "SageMaker ListAssociations failed (AccessDeniedException). Retrying the same call will \
         not help.",
        "AWS's own text (which names the role) stays in the log"
    );
}
