#!/usr/bin/env python3
"""`make conformance`: the official MCP conformance suite (tests/conformance, pinned) against
mcp-tools under `cargo lambda watch` on the local stack, every server scenario it has: first
with `--requirements 2026-07-28` (exactly the scenarios that revision requires, at its wire,
plus those it runs and never scores: the tasks extension's among them), then each of the rest by
name at the suite's own revision for it (2025-11-25 for the scenarios of earlier revisions, which
the server still answers; 2026-07-28 for extensions). Prints one line per scenario and writes the
suite's own results to .local/conformance/. Expects the environment of scripts/local_stack.py.

Many scenarios drive fixtures of the suite's reference server (tools named test_*, greet;
prompts, completions; tools that ask for elicitation or sampling; the skills extension). The
tasks extension's `slow_compute` and `failing_job` are served here, as catalog tools on the
SageMaker stand-in's fixture models (tests/conformance/fixtures.catalog.json), so those checks
run against the real task machinery. For the rest, such a scenario, and any check that says its
fixture is missing, is reported as not applicable and does not fail the run. Any other failed
check does.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from lambda_watch import LOCAL_ORIGINS, start_watch, stop

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "conformance"
CLI = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
OUT = ROOT / ".local" / "conformance"
FIXTURES = SUITE / "fixtures.catalog.json"
REQUIREMENTS = "2026-07-28"

# Scenarios made of the reference server's fixtures, by name or name prefix (the first that
# matches): why they cannot apply. docs/conformance.md lists them.
NOT_APPLICABLE = {
    "completion-complete": "completes an argument of the reference server's test_prompt_with_arguments; "
                           "no completions capability",
    "resources-read-": "reads the reference server's test:// resources; this server's are job:// outputs, per caller",
    "resources-templates-read": "reads the reference server's test://template/{id}/data",
    "resources-subscribe": "subscribes to a reference test:// resource; resources here have no subscribe",
    "resources-unsubscribe": "subscribes to a reference test:// resource; resources here have no subscribe",
    "prompts-": "no prompts",
    "tools-call-": "calls the reference server's test_* tools",
    "elicitation-sep": "calls the reference server's test_* elicitation tools",
    "logging-set-level": "no logging capability: the server sends no log messages",
    "server-session-lifecycle": "sessions: the server is stateless and issues no MCP-Session-Id; the suite skips it",
    "server-sse-polling": "calls the reference server's test_reconnection tool",
    "input-required-result-": "calls reference tools that ask for elicitation, sampling or roots",
    "json-schema-2020-12": "calls the reference server's json_schema_2020_12_tool",
    "http-custom-header-server-validation": "needs a tool with x-mcp-header parameters",
    "tasks-status-notifications": "skipped by the suite, pending its subscriptions/listen rewrite",
    "tasks-required-task-error": "calls failing_job declared as requiring a task: a tool here never requires "
                                 "the client to declare tasks",
    "tasks-mrtr-": "calls reference tools whose task asks its client for input (input_required); not served yet",
    "sep-2640-skills-": "the skills extension: the server serves no skills; the suite skips its checks",
}
# A failed check that says what it needed is not here. A method the server does not have is a
# missing fixture only for prompts and completions: a missing tools or resources list fails.
MISSING_FIXTURE = re.compile(
    r"Not testable|tool not found|no tool is called|not found\. Available tools|fixture"
    r"|(prompts|completion)/\S+ returned JSON-RPC error -32601",
    re.IGNORECASE)
# Every scenario ends with this check of the messages' wire schema: it exercises nothing else.
WIRE_CHECK = "wire-schema-valid"


def not_applicable(scenario: str):
    return next((why for prefix, why in NOT_APPLICABLE.items() if scenario.startswith(prefix)), None)


def node() -> list:
    if shutil.which("node") is None:
        sys.exit("error: node is missing (Node.js 20 or newer): the conformance suite needs it")
    # Node 20 has no fs.globSync, which the suite imports; register.mjs supplies it from glob.
    return ["node", "--import", str(SUITE / "register.mjs"), str(CLI)]


def results() -> dict:
    """Each scenario's checks, from the directories the suite wrote (server-<name>-<time>)."""
    found = {}
    for checks in sorted(OUT.glob("server-*/checks.json")):
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", checks.parent.name)[len("server-"):]
        found[name] = json.loads(checks.read_text())
    return found


def server_scenarios(*options) -> list:
    """The server scenarios `list --server` names (with --requirements: those it runs)."""
    out = subprocess.run(node() + ["list", "--server", *options], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    names, section = [], None
    for line in out.splitlines():
        if line.strip().endswith("scenarios (test against a server):"):
            section = "server"
        elif line.strip().endswith(":"):
            section = None
        listed = re.match(r"^\s+- (\S+)(?: \[(.*)\])?$", line)
        if listed and (section == "server" or listed.group(2) == "server"):
            names.append(listed.group(1))
    return names


def served_env() -> dict:
    """mcp-tools as the suite needs it: no auth, local browser origins, and the suite's
    `slow_compute` and `failing_job` as catalog tools on the SageMaker stand-in's fixture models
    (which run and notify as its other endpoints do)."""
    return {"AUTH_MODE": "none", "MCP_ALLOWED_ORIGINS": LOCAL_ORIGINS, "TOOL_CATALOG": str(FIXTURES),
            "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": os.environ["AWS_ENDPOINT_URL_SAGEMAKER"]}


def main() -> int:
    parser = argparse.ArgumentParser(description="The MCP conformance suite against mcp-tools.")
    parser.add_argument("--url", help="an mcp-tools already served (without auth); by default one is "
                                      "started under cargo lambda watch on $LAMBDA_PORT")
    args = parser.parse_args()
    if not CLI.exists():
        sys.exit(f"error: the conformance suite is not installed; run: npm ci --prefix {SUITE.relative_to(ROOT)}")
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    every = server_scenarios()
    required = set(server_scenarios("--requirements", REQUIREMENTS))
    extra = [name for name in every if name not in required]
    watch = None
    url = args.url
    if url is None:
        port = int(os.environ["LAMBDA_PORT"])
        url = f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
        watch = start_watch(port, served_env(), "conformance")
    try:
        proc = subprocess.run(node() + ["server", "--url", url, "--requirements", REQUIREMENTS, "-o", str(OUT)],
                              capture_output=True, text=True, timeout=1200)
        output = proc.stdout + proc.stderr
        # The rest one by name: the suite runs each at its own revision.
        for name in extra:
            one = subprocess.run(node() + ["server", "--url", url, "--scenario", name, "-o", str(OUT)],
                                 capture_output=True, text=True, timeout=300)
            output += one.stdout + one.stderr
    finally:
        if watch is not None:
            stop(watch)
    (OUT / "output.txt").write_text(output)
    found = results()
    if not found:
        print(output, file=sys.stderr)
        sys.exit("error: the conformance suite wrote no results")
    for name in every:
        if name not in found:
            found[name] = [{"id": name, "status": "FAILURE", "errorMessage": "the suite wrote no results for it"}]
    unscored = set(re.findall(r"^\s+[✓✗] (\S+) \(", proc.stdout, re.MULTILINE))
    failed = []
    for name, checks in sorted(found.items()):
        counts = {}
        for check in checks:
            counts[check["status"]] = counts.get(check["status"], 0) + 1
        why = not_applicable(name)
        real = [c for c in checks if c["status"] == "FAILURE"
                and not why and not MISSING_FIXTURE.search(c.get("errorMessage") or "")]
        exercised = any(c["status"] == "SUCCESS" and c["id"] != WIRE_CHECK for c in checks)
        if real:
            verdict = "FAILED"
            failed.append(name)
        elif why and (not exercised or any(c["status"] == "FAILURE" for c in checks)):
            verdict = "n/a"
        elif any(c["status"] == "FAILURE" for c in checks):
            verdict = "passed*"
        else:
            verdict = "passed"
        scored = "extra" if name not in required else "not scored" if name in unscored else "required"
        tally = ", ".join(f"{n} {status.lower()}" for status, n in sorted(counts.items()))
        print(f"{name:48} {verdict:8} {scored:10} [{tally}]{f' ({why})' if why and verdict == 'n/a' else ''}")
        for check in real:
            print(f"    {check['id']}: {check.get('errorMessage') or check.get('description')}")
    print("passed*: passed every check that applies; the rest need a fixture this server does not have")
    print(f"extra: not in the {REQUIREMENTS} requirements; run by name at the suite's revision for it")
    print(f"results: {OUT.relative_to(ROOT)}/")
    if failed:
        print(f"{len(failed)} scenario(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
