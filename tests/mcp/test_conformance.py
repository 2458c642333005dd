"""The official MCP conformance suite (tests/conformance) against mcp-tools as `make serve` serves
it (no auth, local browser origins allowed), through scripts/conformance.py: every server scenario
of the suite, the 2026-07-28 requirements at that revision and the rest by name; every check that
applies to this server passes (make conformance prints the table; docs/conformance.md lists the scenarios
that cannot apply)."""

import subprocess
import sys
from pathlib import Path

import pytest

from lambda_watch import LOCAL_ORIGINS, WatchError, free_port, start_watch, stop

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def served(servers):
    port = free_port()
    try:
        proc = start_watch(port, {"AUTH_MODE": "none", "MCP_ALLOWED_ORIGINS": LOCAL_ORIGINS}, "watch-conformance")
    except WatchError as e:
        pytest.exit(str(e), 2)
    yield f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    stop(proc)


def test_the_conformance_suite_passes_what_applies(served):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance.py"), "--url", served],
                          capture_output=True, text=True, timeout=1200)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line[:1].isalpha()}
    for scenario in ("server-stateless", "tools-list", "dns-rebinding-protection", "http-header-validation",
                     "caching", "resources-list", "sep-2164-resource-not-found", "server-initialize", "ping"):
        assert " passed" in lines[scenario], lines[scenario]
    # Every server scenario of the suite has its line, those outside the requirements too.
    for scenario in ("server-session-lifecycle", "logging-set-level", "sep-2640-skills-manifest", "tasks-lifecycle"):
        assert scenario in lines, proc.stdout
