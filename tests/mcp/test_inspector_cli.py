"""The server through the official MCP Inspector's CLI (pinned in tests/inspector/): the calls a
new user types (`--tool-arg wait_secs=5`), and arguments passed verbatim as the strings some
clients and LLMs send (`--tool-args-json '{"wait_secs": "5"}'`): numbers in strings are taken
as numbers, and a bad one is refused naming the argument."""

import json
import subprocess
from pathlib import Path

import pytest

INSPECTOR = Path(__file__).resolve().parents[1] / "inspector" / "node_modules" / ".bin" / "mcp-inspector"


# The CLI's exit status for a tool result with isError: true (it prints the result all the same).
TOOL_IS_ERROR = 5


def inspector(servers, tool, verbatim=None, **args):
    """One tools/call through the Inspector's CLI: its JSON output (the CallToolResult). `args`
    go as --tool-arg pairs, `verbatim` (a dict) as --tool-args-json."""
    if not INSPECTOR.exists():
        pytest.fail(f"{INSPECTOR} is missing: `make test` installs it (npm ci --prefix tests/inspector)")
    command = [str(INSPECTOR), "--cli", servers["url"], "--transport", "http",
               "--method", "tools/call", "--tool-name", tool]
    for name, value in args.items():
        command += ["--tool-arg", f"{name}={value}"]
    if verbatim is not None:
        command += ["--tool-args-json", json.dumps(verbatim)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode in (0, TOOL_IS_ERROR), \
        f"{' '.join(command)}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    result = json.loads(done.stdout)
    assert (done.returncode == TOOL_IS_ERROR) == (result.get("isError") is True), result
    return result


def test_wait_secs_given_as_the_cli_gives_it(servers):
    submitted = inspector(servers, "submit_job", document="from the inspector")
    assert submitted.get("isError") is not True, submitted
    inference_id = submitted["structuredContent"]["inference_id"]
    status = inspector(servers, "check_job_status", inference_id=inference_id, wait_secs=5)
    assert status.get("isError") is not True, status
    assert status["structuredContent"]["inference_id"] == inference_id


def test_training_numbers_given_as_the_cli_gives_them(servers):
    triggered = inspector(servers, "trigger_training", input_data_uri="s3://training-data/intents/",
                          session_id="inspector-cli", max_epochs=15, accuracy_threshold=0.9)
    assert triggered.get("isError") is not True, triggered
    assert triggered["structuredContent"]["status"] == "Executing"
    assert triggered["structuredContent"]["execution_arn"].startswith("arn:aws:sagemaker:")


def test_numbers_sent_as_strings_are_taken_as_numbers(servers):
    submitted = inspector(servers, "submit_job", verbatim={"document": "d", "invocation_timeout_secs": "120"})
    assert submitted.get("isError") is not True, submitted
    inference_id = submitted["structuredContent"]["inference_id"]
    status = inspector(servers, "check_job_status", verbatim={"inference_id": inference_id, "wait_secs": "1"})
    assert status["structuredContent"]["inference_id"] == inference_id
    triggered = inspector(servers, "trigger_training", verbatim={
        "input_data_uri": "s3://training-data/intents/", "session_id": "inspector-strings",
        "max_epochs": "15", "accuracy_threshold": "0.9"})
    assert triggered["structuredContent"]["status"] == "Executing", triggered


@pytest.mark.parametrize("arguments, expected", [
    ({"inference_id": "x", "wait_secs": "five"}, '`wait_secs` must be a whole number from 0 to 20; got "five"'),
    ({"inference_id": "x", "wait_secs": "1e999"}, '`wait_secs` must be a whole number from 0 to 20; got "1e999"'),
    ({"inference_id": "x", "wait_secs": " 5"}, '`wait_secs` must be a whole number from 0 to 20; got " 5"'),
    ({"inference_id": "x", "wait_secs": "21"}, "`wait_secs` is 21; it must be from 0 to 20"),
])
def test_a_bad_number_is_refused_naming_the_argument(servers, arguments, expected):
    refused = inspector(servers, "check_job_status", verbatim=arguments)
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == expected
