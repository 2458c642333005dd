"""The server through the official MCP Inspector's CLI (pinned in tests/inspector/), which sends
every --tool-arg value as a string: numbers given that way are taken as numbers, and a bad
one is refused naming the argument."""

import json
import subprocess
from pathlib import Path

import pytest

INSPECTOR = Path(__file__).resolve().parents[1] / "inspector" / "node_modules" / ".bin" / "mcp-inspector"


def inspector(servers, tool, **args):
    """One tools/call through the Inspector's CLI: its JSON output (the CallToolResult)."""
    if not INSPECTOR.exists():
        pytest.fail(f"{INSPECTOR} is missing: `make test` installs it (npm ci --prefix tests/inspector)")
    command = [str(INSPECTOR), "--cli", servers["url"], "--transport", "http",
               "--method", "tools/call", "--tool-name", tool]
    for name, value in args.items():
        command += ["--tool-arg", f"{name}={value}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{' '.join(command)}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return json.loads(done.stdout)


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


def test_a_bad_number_is_refused_naming_the_argument(servers):
    refused = inspector(servers, "check_job_status", inference_id="x", wait_secs="five")
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == '`wait_secs` must be a whole number from 0 to 20; got "five"'
