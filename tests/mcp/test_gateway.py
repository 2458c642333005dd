"""gateway-target as AgentCore Gateway invokes it (the tool's arguments as the event, the
qualified tool name in the client context), under `cargo lambda watch` against moto and the
SageMaker stand-in; each answer is compared with what an MCP client of the Function URL server
gets for the same call."""

import json
import time
import uuid

import pytest

from conftest import ok
from test_mcp_tools import call, put_output, success_message

SCHEMA = json.loads((__import__("pathlib").Path(__file__).resolve().parents[2]
                     / "infra" / "gateway-tool-schema.json").read_text())


def as_gateway_answer(result) -> dict:
    """A Function URL tool result in the shape gateway-target answers."""
    answer = {"content": [{"type": "text", "text": c.text} for c in result.content],
              "isError": bool(result.is_error)}
    if result.structured_content is not None:
        answer["structuredContent"] = result.structured_content
    return answer


def through_both(servers, gateway, tool, args):
    """The same call through both front doors: (Function URL answer, Gateway answer)."""
    status, answer = gateway(tool, args)
    assert status == 200, answer
    return as_gateway_answer(call(servers, tool, args)), answer


def structured(answer) -> dict:
    assert answer["isError"] is False, answer
    assert json.loads(answer["content"][0]["text"]) == answer["structuredContent"]
    return answer["structuredContent"]


def test_the_gateway_is_one_caller_whose_jobs_the_url_callers_do_not_see(servers, gateway, aws, notify):
    key = f"gw-{uuid.uuid4().hex}"
    args = {"document": "Invoice 7: total 3.10 EUR", "idempotency_key": key}
    status, first = gateway("submit_job", args)
    assert status == 200
    job = structured(first)
    assert job["status"] == "pending" and not job.get("idempotent_replay")
    item = aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": job["inference_id"]}})["Item"]
    assert item["status"]["S"] == "pending" and len(item["owner"]["S"]) == 32

    # The same key through the Gateway replays its job; through the URL (another caller) it is
    # another job, and the Gateway's job reads as an unknown id there.
    over_url, again = through_both(servers, gateway, "submit_job", args)
    assert structured(again) == {**job, "idempotent_replay": True}
    assert structured(over_url)["inference_id"] != job["inference_id"]
    assert not structured(over_url).get("idempotent_replay")

    check = {"inference_id": job["inference_id"]}
    over_url, answer = through_both(servers, gateway, "check_job_status", check)
    assert structured(answer)["status"] == "pending"
    unknown = as_gateway_answer(call(servers, "check_job_status", {"inference_id": "00000000-0000-4000-8000-000000000000"}))
    assert over_url["isError"] is True
    assert over_url["content"][0]["text"].replace(job["inference_id"], "<id>") == \
        unknown["content"][0]["text"].replace("00000000-0000-4000-8000-000000000000", "<id>")

    notify(success_message(job["inference_id"], put_output(aws, b'{"label": "invoice"}')))
    status, answer = gateway("check_job_status", check)
    assert structured(answer)["status"] == "completed" and structured(answer)["result"] == {"label": "invoice"}


def test_a_training_run_through_the_gateway(servers, gateway):
    session = f"gw-{uuid.uuid4().hex[:12]}"
    args = {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": session,
            "idempotency_key": "first"}
    status, started = gateway("trigger_training", args)
    arn = structured(started)["execution_arn"]
    assert status == 200 and structured(started)["session_id"] == session
    status, again = gateway("trigger_training", args)
    assert structured(again)["execution_arn"] == arn, "the same key through the Gateway is the same run"

    deadline = time.time() + 120
    while True:
        status, answer = gateway("check_training_status", {"execution_arn": arn})
        if structured(answer)["status"] != "Executing" or time.time() > deadline:
            break
        time.sleep(0.3)
    assert structured(answer)["status"] == "Succeeded"
    over_url = as_gateway_answer(call(servers, "check_training_status", {"execution_arn": arn}))
    assert over_url["isError"] is True and "no training run" in over_url["content"][0]["text"]

    while True:
        over_url, answer = through_both(servers, gateway, "check_training_result", {"session_id": session})
        if structured(answer)["runs"][0]["status"] == "Succeeded" or time.time() > deadline:
            break
        time.sleep(0.3)
    assert structured(answer)["runs"][0]["execution_arn"] == arn
    assert structured(over_url)["runs"] == [], "another caller's session of the same name is empty"


def test_a_model_package_is_its_makers_and_unknown_through_the_other_door(servers, gateway):
    """Provenance follows ownership: the package a run of the URL's caller registered is that
    caller's; the Gateway (another caller) gets exactly the answer an unknown package gets."""
    session = f"gw-prov-{uuid.uuid4().hex[:12]}"
    arn = ok(call(servers, "trigger_training", {"input_data_uri": "s3://mcp-sagemaker-async-io/train/",
                                                "session_id": session}))["execution_arn"]
    deadline = time.time() + 120
    while True:
        status = ok(call(servers, "check_training_status", {"execution_arn": arn}))
        if status["status"] != "Executing" or time.time() > deadline:
            break
        time.sleep(0.3)
    package = status["model_package_arn"]
    over_url, answer = through_both(servers, gateway, "get_model_provenance",
                                    {"model_package_arn": package, "max_depth": 3})
    assert structured(over_url)["root"]["pipeline_execution"]["session_id"] == session
    unknown = package.rsplit("/", 1)[0] + "/999999"
    _, never = through_both(servers, gateway, "get_model_provenance", {"model_package_arn": unknown})
    assert answer["isError"] is True
    assert answer["content"][0]["text"].replace(package, unknown) == never["content"][0]["text"]


@pytest.mark.parametrize("tool, args, expected", [
    ("submit_job", {"document": "x", "payload": {"a": 1}}, "not both"),
    ("check_job_status", {"inference_id": "never-submitted"}, "never-submitted"),
    ("check_job_status", {"inference_id": "x", "wait": 3}, 'unknown argument "wait"'),
    ("check_training_result", {"session_id": "a; b"}, "`session_id`"),
    ("trigger_training", {"session_id": "s"}, "input_data_uri"),
    ("check_job_status", {"inference_id": "x", "wait_secs": "five"},
     '`wait_secs` must be a whole number from 0 to 900; got "five"'),
    ("trigger_training", {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": "s",
                          "accuracy_threshold": "2"},
     "`accuracy_threshold` is 2; it must be from 0 to 1"),
    # An AWS failure: the stand-in has no such run.
    ("check_training_status",
     {"execution_arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/mcp-intent-classifier-pipeline/execution/nope"},
     'no training run "arn:aws:sagemaker:us-east-1:123456789012:pipeline/mcp-intent-classifier-pipeline/execution/nope"'
     " was found"),
    # Another pipeline's run: the same answer, decided before any AWS call.
    ("check_training_status", {"execution_arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/nope"},
     'no training run "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/nope" was found'),
])
def test_tool_errors_are_the_same_through_both_doors(servers, gateway, tool, args, expected):
    over_url, answer = through_both(servers, gateway, tool, args)
    assert answer == over_url
    assert answer["isError"] is True and expected in answer["content"][0]["text"], answer


def test_an_aws_refusal_on_submit_is_the_same_tool_error(faulty, gateway):
    port = int(faulty.url.split(":")[2].split("/")[0])
    faulty.arm("refuse-400")
    status, answer = gateway("submit_job", {"document": "refused"}, port=port)
    assert status == 200 and answer["isError"] is True
    text = answer["content"][0]["text"]
    assert "InvokeEndpointAsync" in text and "ValidationError" in text, text

    faulty.arm("refuse-400")
    over_url = as_gateway_answer(call({"url": faulty.url}, "submit_job", {"document": "refused"}))
    # The same message but for the job's own id.
    job_id = lambda t: next(w for w in t.replace("`", " ").split() if len(w) >= 32)
    assert over_url["content"][0]["text"].replace(job_id(over_url["content"][0]["text"]), "ID") == \
        text.replace(job_id(text), "ID")


def test_requests_that_are_not_tool_calls_are_function_errors_that_say_why(gateway):
    status, answer = gateway("delete_everything", {})
    assert status == 500 and answer["errorType"] == "McpError"
    assert "delete_everything" in answer["errorMessage"]

    status, answer = gateway("submit_job", {"document": "x"},
                             context={"custom": {"bedrockAgentCoreToolName": "submit_job"}})
    assert status == 500 and answer["errorType"] == "NoTargetPrefix"
    assert '"submit_job"' in answer["errorMessage"] and "<target>___<tool>" in answer["errorMessage"]

    status, answer = gateway("submit_job", {"document": "x"}, context={})
    assert status == 500 and answer["errorType"] == "NoToolName"
    assert "bedrockAgentCoreToolName" in answer["errorMessage"]

    status, answer = gateway("submit_job", ["not", "an", "object"])
    assert status == 500 and answer["errorType"] == "InvalidArguments"


def test_the_exported_schema_is_json_schema_in_the_gateway_dialect(servers):
    from jsonschema import Draft202012Validator

    listed = {t["name"] for t in SCHEMA}
    assert listed == {"submit_job", "check_job_status", "trigger_training", "check_training_status",
                      "check_training_result", "answer_training_input", "approve_model_package", "get_model_provenance"}
    for tool in SCHEMA:
        assert set(tool) <= {"name", "description", "inputSchema", "outputSchema"} and tool["description"]
        for key in ("inputSchema", "outputSchema"):
            Draft202012Validator.check_schema(tool[key])
    text = json.dumps(SCHEMA)
    for rejected in ('"anyOf"', '"null"', '"default"', '"items": {}', '"$ref"'):
        assert rejected not in text
    # What the Function URL server answers validates against the exported output schema.
    submit = next(t for t in SCHEMA if t["name"] == "submit_job")
    answer = ok(call(servers, "submit_job", {"document": "schema check"}))
    Draft202012Validator(submit["outputSchema"]).validate(answer)


@pytest.mark.parametrize("tool", ["submit_job", "check_job_status", "trigger_training", "check_training_status",
                                  "check_training_result", "get_model_provenance"])
def test_the_sample_events_work_with_cargo_lambda_invoke(servers, tool):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cargo_lambda = Path(sys.executable).parent / "cargo-lambda"
    done = subprocess.run(
        [str(cargo_lambda), "lambda", "invoke", "gateway-target", "--invoke-address", "127.0.0.1",
         "--invoke-port", str(servers["port"]), "--output-format", "json",
         "--data-file", f"events/gateway-{tool}.json", "--client-context-file", f"events/gateway-{tool}.context.json"],
        cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["content"][0]["type"] == "text"
    if tool in ("check_job_status", "check_training_status", "get_model_provenance"):
        # Their samples hold placeholders for the ids a real run returns.
        assert answer["isError"] is True, answer
    else:
        structured(answer)
