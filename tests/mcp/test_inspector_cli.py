"""The server through the official MCP Inspector's CLI (pinned in tests/inspector/): the calls a
new user types (`--tool-arg wait_secs=5`). This version of the CLI converts each value by the
tool's input schema before it sends it (a value that is no number goes as null), so it never
sends a number as a string; that path (LLMs, older CLIs) is tested with the Python SDK in
test_mcp_tools.py and through the Gateway door in test_gateway.py."""

import json
import subprocess
from pathlib import Path

import pytest

INSPECTOR = Path(__file__).resolve().parents[1] / "inspector" / "node_modules" / ".bin" / "mcp-inspector"


# The CLI's exit status for a tool result with isError: true (it prints the result all the same).
TOOL_IS_ERROR = 5


def inspector(servers, tool, **args):
    """One tools/call through the Inspector's CLI, `args` as --tool-arg pairs: its JSON output
    (the CallToolResult)."""
    if not INSPECTOR.exists():
        pytest.fail(f"{INSPECTOR} is missing: `make test` installs it (npm ci --prefix tests/inspector)")
    command = [str(INSPECTOR), "--cli", servers["url"], "--transport", "http",
               "--method", "tools/call", "--tool-name", tool]
    for name, value in args.items():
        command += ["--tool-arg", f"{name}={value}"]
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
    triggered = inspector(servers, "trigger_training", input_data_uri="s3://mcp-sagemaker-async-io/train/intents/",
                          session_id="inspector-cli", max_epochs=15, accuracy_threshold=0.9)
    assert triggered.get("isError") is not True, triggered
    assert triggered["structuredContent"]["status"] == "Executing"
    assert triggered["structuredContent"]["execution_arn"].startswith("arn:aws:sagemaker:")
