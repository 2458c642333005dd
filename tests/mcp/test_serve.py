"""`make serve` with a tool catalog, as a user runs it: a refused catalog ends it at once with
each mistake in words (nothing started, no client left waiting); a sound one is checked, its
tools printed, and served (submit_job on it names the tools that are served instead); a
function that cannot start at its cold start ends it with the function's own words, not a hang.
CARGO_TARGET_DIR, when set, is where make finds the stand-in."""

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import need
from lambda_watch import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "infra" / "catalog.example.json"
PY = sys.executable


def bad_catalog(tmp_path: Path) -> Path:
    tools = json.loads(EXAMPLE.read_text())
    tools["async_tools"][0]["endpoint"] = "Doc-Processor"
    tools["pipeline_tools"][0]["parameters"]["epochs"]["schema"] = {"type": "array"}
    # A built-in tool's name: served, the catalog's tool would have replaced it.
    tools["async_tools"][1]["name"] = "approve_model_package"
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    return path


def serve(extra_env: dict, *args: str) -> subprocess.Popen:
    """scripts/serve.py on the session's local stack, on a port of its own."""
    need("AWS_ENDPOINT_URL")
    port = free_port()
    env = {**os.environ, "LAMBDA_PORT": str(port), **extra_env}
    proc = subprocess.Popen([PY, str(ROOT / "scripts" / "serve.py"), *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.port = port
    return proc


def listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_make_serve_with_a_refused_catalog_ends_naming_each_mistake(tmp_path):
    path = bad_catalog(tmp_path)
    started = time.monotonic()
    # make itself, with the target directory the tests were built in (make test's default).
    done = subprocess.run(["make", "--no-print-directory", "serve", f"CATALOG={path}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CARGO_TARGET_DIR": os.environ.get("CARGO_TARGET_DIR", "target")})
    assert done.returncode != 0, done.stdout
    assert f"error: the tool catalog {path} is refused:\n" in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert "  summarize_document: endpoint: must be a SageMaker endpoint name as its ARN spells it: 1 to 63 " \
           "lowercase letters, digits or hyphens, starting and ending with a letter or digit" in lines, lines
    assert any(line.startswith("  retrain_intent_classifier: parameters.epochs.schema.type: must be ")
               for line in lines), lines
    assert "  approve_model_package: name: approve_model_package is a built-in tool's or a protocol " \
           "method's name; choose another" in lines, lines
    assert "MCP server" not in done.stdout
    # The cargo build is a no-op here: what is left is moto's start and the check.
    assert time.monotonic() - started < 300


def test_a_sound_catalog_is_checked_its_tools_printed_and_served():
    proc = serve({}, "--catalog", str(EXAMPLE.relative_to(ROOT)))
    try:
        printed = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, f"serve.py ended: {proc.wait()} {proc.stderr.read()}"
            printed.append(line.rstrip("\n"))
            if line.startswith("MCP server"):
                break
        assert printed[:4] == [
            "the tool catalog infra/catalog.example.json serves:",
            "  summarize_document: async tool on endpoint mcp-doc-processor-async",
            "  score_churn_risk: async tool on endpoint mcp-churn-scorer-async",
            "  retrain_intent_classifier: pipeline tool on mcp-intent-classifier-pipeline",
        ], printed
        url = printed[-1].split(": ", 1)[1]

        async def go():
            async with Client(streamable_http_client(url), mode="2026-07-28") as client:
                tools = sorted(t.name for t in (await client.list_tools()).tools)
                try:
                    await client.call_tool("submit_job", {"document": "x"})
                except Exception as e:  # the SDK raises the JSON-RPC error
                    return tools, str(e)
                return tools, None

        tools, refused = asyncio.run(go())
        assert {"summarize_document", "score_churn_risk", "retrain_intent_classifier"} <= set(tools)
        assert "submit_job" not in tools
        assert refused is not None and 'no tool is called "submit_job"' in refused, refused
        assert "summarize_document" in refused and "retrain_intent_classifier" in refused, refused
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # Stopped as a `kill` stops it, serve.py stops the watch it started: nothing left serving.
    deadline = time.monotonic() + 30
    while listens(proc.port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listens(proc.port), "cargo lambda watch outlived serve.py"


def test_a_function_that_cannot_start_ends_serve_with_its_words():
    # A variable mcp-tools refuses at its cold start, which no check before it reads.
    proc = serve({"RESULT_TTL_SECS": "soon"})
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert ('error: mcp-tools cannot start: environment variable RESULT_TTL_SECS="soon" is invalid: '
            "expected a number of seconds") in err, err
    assert "Debug" not in err and "ConfigError" not in err, err
