//! Job outputs as resources: the link a status carries, `resources/read` for the owner only,
//! the size past which it points at result_url, and the listings' caching hints.

use super::*;

use rmcp::model::ErrorCode;

const V2026: &str = "2026-07-28";

fn bob() -> Principal {
    Principal::Bearer { name: "bob".into() }
}

impl World {
    /// A request as a client of protocol `version` sends it.
    async fn versioned(
        &self,
        method: &str,
        mut params: Value,
        version: &str,
    ) -> Result<Value, rmcp::ErrorData> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        request(
            self.tools.clone(),
            self.principal.clone(),
            method,
            params,
            None,
        )
        .await
    }

    async fn check(&self, inference_id: &str, version: &str) -> Value {
        let params =
            json!({"name": names::CHECK_JOB_STATUS, "arguments": {"inference_id": inference_id}});
        self.versioned("tools/call", params, version).await.unwrap()
    }

    async fn read(&self, uri: &str) -> Result<Value, rmcp::ErrorData> {
        self.versioned("resources/read", json!({"uri": uri}), V2026)
            .await
    }

    /// A job submitted and completed with an output of `bytes` bytes (a JSON string).
    async fn completed_with(&self, bytes: usize) -> String {
        let out = self.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
        let id = out["inference_id"].as_str().unwrap().to_owned();
        // A JSON string of `bytes` bytes: two quotes around the rest.
        self.notify(&id, "Completed", Some(json!("x".repeat(bytes - 2))))
            .await;
        id
    }
}

fn links(result: &Value) -> Vec<Value> {
    let content = result["content"].as_array().unwrap();
    content
        .iter()
        .filter(|block| block["type"] == "resource_link")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_large_output_is_linked_and_read_back_by_its_owner_only() {
    let w = world(&[]);
    let id = w.completed_with(10_000).await;
    let status = w.check(&id, V2026).await;
    assert_eq!(status["structuredContent"]["status"], "completed");
    assert!(status["structuredContent"]["result_url"].is_string());
    let linked = links(&status);
    assert_eq!(linked.len(), 1, "{status}");
    let uri = format!("job://{id}/output");
    assert_eq!(linked[0]["uri"], uri.as_str());
    assert_eq!(linked[0]["size"], 10_000);
    assert_eq!(linked[0]["mimeType"], "application/json");
    // The structured result is unchanged; the text is the same JSON.
    assert_eq!(
        serde_json::from_str::<Value>(status["content"][0]["text"].as_str().unwrap()).unwrap(),
        status["structuredContent"]
    );

    let read = w.read(&uri).await.unwrap();
    let contents = &read["contents"][0];
    assert_eq!(contents["uri"], uri.as_str());
    assert_eq!(contents["mimeType"], "application/json");
    assert_eq!(contents["text"].as_str().unwrap().len(), 10_000);
    assert_eq!(
        (read["ttlMs"].clone(), read["cacheScope"].clone()),
        (json!(300_000), json!("private"))
    );

    // Another caller's, an unknown id's and a URI not made here: one answer, nothing read.
    let reads_before = w.ports().objects.reads();
    let theirs = w.as_caller(bob()).read(&uri).await.unwrap_err();
    let unknown = w.read("job://no-such-job/output").await.unwrap_err();
    let foreign = w.read("file:///etc/passwd").await.unwrap_err();
    for refused in [&theirs, &unknown, &foreign] {
        // rmcp says resource-not-found as -32602 to a 2026-07-28 client (SEP-2164).
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS, "{refused:?}");
        assert!(refused.message.starts_with("no resource \""), "{refused:?}");
    }
    assert_eq!(
        theirs.message.replace(&id, "ID"),
        w.read("job://ID/output").await.unwrap_err().message
    );
    assert_eq!(w.ports().objects.reads(), reads_before);
    // A client of an earlier revision hears -32002.
    let old = w
        .as_caller(bob())
        .versioned("resources/read", json!({"uri": uri}), "2025-11-25")
        .await
        .unwrap_err();
    assert_eq!(old.code, ErrorCode::RESOURCE_NOT_FOUND);
}

#[tokio::test]
async fn an_output_past_the_read_limit_points_at_result_url() {
    let w = world(&[]);
    let id = w.completed_with(1024 * 1024 + 1).await;
    let status = w.check(&id, V2026).await;
    assert_eq!(links(&status)[0]["size"], 1024 * 1024 + 1);
    let refused = w.read(&format!("job://{id}/output")).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    assert!(refused.message.contains("1048577 bytes"), "{refused:?}");
    assert!(refused.message.contains("result_url"), "{refused:?}");
    // Exactly the limit is read.
    let id = w.completed_with(1024 * 1024).await;
    let read = w.read(&format!("job://{id}/output")).await.unwrap();
    assert_eq!(
        read["contents"][0]["text"].as_str().unwrap().len(),
        1024 * 1024
    );
}

#[tokio::test]
async fn only_outputs_not_in_the_status_are_linked_and_only_for_clients_that_read_links() {
    let w = world(&[]);
    let small = w.completed_with(20).await;
    assert!(links(&w.check(&small, V2026).await).is_empty(), "inline");
    // Still readable through its URI: the inline result.
    let read = w.read(&format!("job://{small}/output")).await.unwrap();
    assert_eq!(read["contents"][0]["text"].as_str().unwrap().len(), 20);

    let large = w.completed_with(10_000).await;
    assert!(
        links(&w.check(&large, "2025-03-26").await).is_empty(),
        "a 2025-03-26 client"
    );
    assert_eq!(links(&w.check(&large, "2025-06-18").await).len(), 1);
    // The Gateway's door has no version: its clients cannot read resources here.
    let gateway = w
        .call(names::CHECK_JOB_STATUS, json!({"inference_id": large}))
        .await;
    assert_eq!(gateway.content.len(), 1);

    let pending = w.ok(names::SUBMIT_JOB, json!({"document": "b"})).await;
    let pending = pending["inference_id"].as_str().unwrap();
    assert!(links(&w.check(pending, V2026).await).is_empty());
    let not_yet = w
        .read(&format!("job://{pending}/output"))
        .await
        .unwrap_err();
    assert_eq!(not_yet.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn a_failed_job_links_its_failure_detail() {
    let w = world(&[]);
    let out = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = out["inference_id"].as_str().unwrap().to_owned();
    let failure_location = out["failure_location"].as_str().unwrap().to_owned();
    w.ports()
        .objects
        .put_json(
            &failure_location.parse().unwrap(),
            b"Traceback: the model raised an error".to_vec(),
        )
        .await
        .unwrap();
    w.notify(&id, "Failed", None).await;
    let status = w.check(&id, V2026).await;
    assert_eq!(status["structuredContent"]["status"], "failed", "{status}");
    let linked = links(&status);
    assert_eq!(linked[0]["uri"], format!("job://{id}/failure"), "{status}");
    let read = w.read(&format!("job://{id}/failure")).await.unwrap();
    assert!(read["contents"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Traceback"));
    // A failed job has no output.
    assert!(w.read(&format!("job://{id}/output")).await.is_err());
}

#[tokio::test]
async fn a_job_tasks_result_carries_the_link() {
    let w = world(&[]);
    let created = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = created["taskId"].as_str().unwrap();
    let id = task_id.rsplit_once('.').unwrap().0;
    w.notify(id, "Completed", Some(json!("y".repeat(9_998))))
        .await;
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        links(&done["result"])[0]["uri"],
        format!("job://{id}/output")
    );
}

#[tokio::test]
async fn the_listings_say_how_long_they_keep() {
    let w = world(&[]);
    let listed = w
        .versioned("resources/list", json!({}), V2026)
        .await
        .unwrap();
    assert_eq!(listed["resources"], json!([]));
    assert_eq!(
        (listed["ttlMs"].clone(), listed["cacheScope"].clone()),
        (json!(300_000), json!("public"))
    );
    let templates = w
        .versioned("resources/templates/list", json!({}), V2026)
        .await
        .unwrap();
    let uris: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "job://{inference_id}/output",
            "job://{inference_id}/failure"
        ]
    );
    assert_eq!(templates["cacheScope"], "public");
    let tools = w.versioned("tools/list", json!({}), V2026).await.unwrap();
    assert_eq!(
        (tools["ttlMs"].clone(), tools["cacheScope"].clone()),
        (json!(300_000), json!("public"))
    );
    let old = w
        .versioned("resources/list", json!({}), "2025-11-25")
        .await
        .unwrap();
    assert!(old.get("ttlMs").is_none(), "{old}");
}
