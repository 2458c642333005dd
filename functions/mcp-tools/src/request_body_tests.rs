//! The front door's one read of a JSON-RPC body: what it picks out, what it counts and bounds.

use super::*;

fn parse(body: &str) -> RpcBody {
    RpcBody::parse(body.as_bytes()).unwrap()
}

#[test]
fn a_request_reads_as_its_method_tool_and_task() {
    let body = parse(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"submit_job","arguments":{"payload":{"a":[1,2,{"b":null}]}},"_meta":{"progressToken":7}}}"#,
    );
    assert_eq!(
        body.messages,
        [RpcMessage {
            method: Some("tools/call".into()),
            tool: Some("submit_job".into()),
            id: Some(serde_json::json!(1)),
            too_long: None,
            input_responses: None,
        }]
    );
    assert_eq!(body.task_id, None);
    let task =
        parse(r#"{"jsonrpc":"2.0","id":"x","method":"tasks/get","params":{"taskId":"abc.123"}}"#);
    assert_eq!(task.task_id.as_deref(), Some("abc.123"));
    assert_eq!(task.messages[0].method.as_deref(), Some("tasks/get"));
    assert_eq!(task.messages[0].id, Some(serde_json::json!("x")));
}

#[test]
fn a_batch_reads_as_each_message_and_no_task() {
    let body = parse(
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"check_job_status","taskId":"t"}},7]"#,
    );
    let methods: Vec<_> = body.messages.iter().map(|m| m.method.as_deref()).collect();
    assert_eq!(methods, [Some("tools/list"), Some("tools/call"), None]);
    assert_eq!(body.messages[1].tool.as_deref(), Some("check_job_status"));
    assert_eq!(body.task_id, None);
}

#[test]
fn members_that_are_not_text_read_as_absent_and_invalid_json_as_nothing() {
    let body = parse(r#"{"method":["tools/call"],"params":{"name":{"x":1},"taskId":3}}"#);
    assert_eq!(body.messages[0].method, None);
    assert_eq!(body.messages[0].tool, None);
    // A number is how some clients write ids; a task id that is a number is read as text.
    assert_eq!(body.task_id.as_deref(), Some("3"));
    for invalid in [
        "not json",
        "{\"method\":\"tools/list\"",
        "",
        "{} {}",
        "[1,]",
    ] {
        assert_eq!(parse(invalid), RpcBody::default(), "{invalid}");
    }
    assert_eq!(parse("12").messages, Vec::<RpcMessage>::new());
}

#[test]
fn an_updates_input_responses_read_as_their_kind() {
    let kind = |responses: &str| {
        parse(&format!(
            r#"{{"method":"tasks/update","params":{{"taskId":"t","inputResponses":{responses}}}}}"#
        ))
        .messages[0]
            .input_responses
    };
    assert_eq!(
        kind(r#"{"q-1":{"action":"accept","content":{"a":[1]}}}"#),
        Some(JsonKind::Object)
    );
    assert_eq!(kind(r#"[{"action":"accept"}]"#), Some(JsonKind::Array));
    assert_eq!(kind(r#""accept""#), Some(JsonKind::Text));
    assert_eq!(kind("7"), Some(JsonKind::Number));
    assert_eq!(kind("true"), Some(JsonKind::Boolean));
    assert_eq!(kind("null"), Some(JsonKind::Null));
    assert_eq!(
        parse(r#"{"method":"tasks/update","params":{"taskId":"t"}}"#).messages[0].input_responses,
        None
    );
}

#[test]
fn a_later_duplicate_member_wins_as_in_a_json_object() {
    let body = parse(
        r#"{"method":"tools/call","params":{"name":"check_job_status","name":"submit_job"}}"#,
    );
    assert_eq!(body.messages[0].tool.as_deref(), Some("submit_job"));
}

#[test]
fn long_values_are_noted_by_their_start_and_length() {
    let method = "m".repeat(300_000);
    let body = parse(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#
    ));
    let too_long = body.messages[0].too_long.clone().unwrap();
    assert_eq!(too_long.what, Member::Method);
    assert_eq!(too_long.bytes, 300_000);
    assert_eq!(too_long.start.len(), KEPT_BYTES);
    assert_eq!(body.messages[0].method, None);

    let token = "t".repeat(MAX_PROGRESS_TOKEN_BYTES + 1);
    let body = parse(&format!(
        r#"{{"method":"tools/call","params":{{"name":"x","_meta":{{"progressToken":"{token}"}}}}}}"#
    ));
    assert_eq!(
        body.messages[0].too_long.as_ref().unwrap().what,
        Member::ProgressToken
    );
    let token = "t".repeat(MAX_PROGRESS_TOKEN_BYTES);
    let body = parse(&format!(
        r#"{{"method":"tools/call","params":{{"name":"x","_meta":{{"progressToken":"{token}"}}}}}}"#
    ));
    assert_eq!(body.messages[0].too_long, None);

    let version = "2".repeat(MAX_VERSION_BYTES + 1);
    for body in [
        format!(r#"{{"method":"initialize","params":{{"protocolVersion":"{version}"}}}}"#),
        format!(
            r#"{{"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}"}}}}}}"#
        ),
    ] {
        let too_long = parse(&body).messages[0].too_long.clone().unwrap();
        assert_eq!(too_long.what, Member::ProtocolVersion);
    }
    let id = "i".repeat(MAX_ID_BYTES + 1);
    let body = parse(&format!(r#"{{"method":"tools/list","id":"{id}"}}"#));
    assert_eq!(body.messages[0].too_long.as_ref().unwrap().what, Member::Id);
    // Multibyte text is cut at a character boundary.
    let method = "é".repeat(200);
    let body = parse(&format!(r#"{{"method":"{method}"}}"#));
    let start = body.messages[0].too_long.clone().unwrap().start;
    assert!(start.len() <= KEPT_BYTES && start.chars().all(|c| c == 'é'));
}

#[test]
fn a_body_past_its_values_is_refused_and_one_within_is_read() {
    let zeros = |n: usize| format!("[{}0]", "0,".repeat(n - 1));
    let arguments = |n: usize| {
        format!(
            r#"{{"method":"tools/call","params":{{"name":"submit_job","arguments":{{"payload":{}}}}}}}"#,
            zeros(n)
        )
    };
    // The message, its members' names and values, and the array: 11 values besides the
    // array's items.
    assert!(RpcBody::parse_within(arguments(89).as_bytes(), 100).is_ok());
    assert_eq!(
        RpcBody::parse_within(arguments(90).as_bytes(), 100),
        Err(BodyRefusal::TooManyValues)
    );
    assert_eq!(
        RpcBody::parse(zeros(MAX_BODY_VALUES + 1).as_bytes()),
        Err(BodyRefusal::TooManyValues)
    );
    // Empty objects count too.
    let objects = format!("[{}{{}}]", "{},".repeat(MAX_BODY_VALUES));
    assert_eq!(
        RpcBody::parse(objects.as_bytes()),
        Err(BodyRefusal::TooManyValues)
    );
    assert_eq!(
        check_values(zeros(MAX_BODY_VALUES + 1).as_bytes()),
        Err(BodyRefusal::TooManyValues)
    );
    assert_eq!(check_values(zeros(MAX_BODY_VALUES - 1).as_bytes()), Ok(()));
    // A document of several MB is one value.
    let document = format!(
        r#"{{"method":"tools/call","params":{{"name":"submit_job","arguments":{{"document":"{}"}}}}}}"#,
        "x".repeat(4 << 20)
    );
    assert_eq!(
        RpcBody::parse(document.as_bytes()).unwrap().messages[0]
            .tool
            .as_deref(),
        Some("submit_job")
    );
}
