"""Every quick start in the docs (README.md and docs/*.md, each section headed "Quick start"),
run as a reader would: each command of its shell blocks and each Python block, in order, unless it
cannot run offline, for a reason stated here. A command or block this file does not know fails
the test, so a quick start cannot change without being run or its skip explained."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HEADING = re.compile(r"^(#+) +quick start\b", re.IGNORECASE)
FENCE = re.compile(r"^```(\w*)\s*$")

# Commands that need what no offline run has, by how they start.
NEEDS_AN_ACCOUNT = "deploys to, or reads from, an AWS account: none is reachable offline"
SKIPPED = {
    "make test": "it is the run this test is part of",
    "export AWS_REGION": "only sets the region the account's commands after it use",
    "make deploy": NEEDS_AN_ACCOUNT,
    "make destroy": NEEDS_AN_ACCOUNT,
    "make doctor": NEEDS_AN_ACCOUNT,
    "make wire-endpoint": NEEDS_AN_ACCOUNT,
    "make redrive": NEEDS_AN_ACCOUNT,
    "make cdk-deploy": NEEDS_AN_ACCOUNT,
    "make cdk-bootstrap": NEEDS_AN_ACCOUNT,
    "make cdk-destroy": NEEDS_AN_ACCOUNT,
    "sam ": NEEDS_AN_ACCOUNT,
    "aws ": NEEDS_AN_ACCOUNT,
    "claude mcp add": "registers a server with Claude Code, which is not installed here",
    "make catalog": "fills the deploys' catalog layer (target/tool-catalog-layer), which a test must not change; "
                    "tests/infra/test_catalog.py runs what it runs",
    "make build-sam": "the release build for Lambda (about 22 minutes on 2 cores); make test runs it in debug",
    "make build": "the release build for Lambda; make test builds the same code in debug",
}
# Blocks that are not commands: what to paste into a file, or what a command prints.
NOT_RUN = {
    "toml": "settings to paste into samconfig.toml",
    "json": "a file's content",
    "yaml": "a file's content",
    "text": "what a command prints",
    "": "what a command prints",
}
SERVE_TIMEOUT = 600


@dataclass
class Block:
    doc: Path
    line: int
    lang: str
    text: str

    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def quick_start_blocks(doc: Path) -> list:
    """The fenced blocks under each "Quick start" heading, up to the next heading of its level."""
    blocks, level, fence, body = [], None, None, []
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        if fence is not None:
            if line.strip() == "```":
                blocks.append(Block(doc, fence[0], fence[1], "\n".join(body)))
                fence, body = None, []
            else:
                body.append(line)
            continue
        heading = re.match(r"^(#+) ", line)
        if heading:
            found = HEADING.match(line)
            if found:
                level = len(found.group(1))
            elif level is not None and len(heading.group(1)) <= level:
                level = None
            continue
        opened = FENCE.match(line.strip())
        if opened and level is not None:
            fence = (number, opened.group(1))
        elif opened:
            fence = (number, None)  # a block outside any quick start: read past, not kept
    return [b for b in blocks if b.lang is not None]


def commands(block: Block) -> list:
    """A shell block's commands: one per line (continued with `\\`), comments dropped."""
    found, pending = [], ""
    for line in block.text.splitlines():
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            found.append(line)
    return found


def skip_reason(command: str) -> Optional[str]:
    if "<" in command and ">" in command or "path/to/" in command:
        return "a placeholder for the reader's own value"
    return next((why for start, why in SKIPPED.items() if command.startswith(start)), None)


def runs(command: str) -> bool:
    return command == "make demo" or re.fullmatch(r"make serve( [A-Z_]+=\S+)*", command) is not None


def every_block() -> list:
    return [block for doc in DOCS for block in quick_start_blocks(doc)]


def test_the_readme_has_a_quick_start_that_runs_something():
    blocks = quick_start_blocks(ROOT / "README.md")
    ran = [c for b in blocks if b.lang == "sh" for c in commands(b) if runs(c)]
    assert "make demo" in ran and "make serve" in ran, ran
    assert any(b.lang == "python" for b in blocks)


def test_every_quick_start_block_is_run_or_its_skip_explained():
    unknown = []
    for block in every_block():
        if block.lang in ("sh", "bash"):
            unknown += [f"{block.where()}: {c}" for c in commands(block) if not runs(c) and skip_reason(c) is None]
        elif block.lang != "python" and block.lang not in NOT_RUN:
            unknown.append(f"{block.where()}: a ```{block.lang} block")
    assert not unknown, "quick-start lines this test neither runs nor skips with a reason: " + "; ".join(unknown)


class Served:
    """`make serve ...` running until stopped, with the URL it printed."""

    def __init__(self, command: str):
        self.command = command
        self.proc = subprocess.Popen(command.split(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.printed: list = []
        deadline = time.monotonic() + SERVE_TIMEOUT
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            assert line, f"{command} ended ({self.proc.wait()}):\n" + "".join(self.printed[-30:])
            self.printed.append(line)
            found = re.match(r"MCP server \([^)]*\): (http://127\.0\.0\.1:\d+/lambda-url/mcp-tools/mcp)$", line.strip())
            if found:
                self.url = found.group(1)
                return
        self.stop()
        pytest.fail(f"{command} printed no URL within {SERVE_TIMEOUT} s")

    def stop(self) -> None:
        # make, local_stack.py and serve.py are one process group of their own: Ctrl-C's reach.
        try:
            os.killpg(self.proc.pid, 2)
            self.proc.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def test_every_quick_start_runs_offline():
    """Each block in order: make demo must succeed; make serve must serve, and the Python blocks
    after it must run against the URL it printed (given as their first argument)."""
    served: Optional[Served] = None
    ran = []
    try:
        for block in every_block():
            if block.lang in ("sh", "bash"):
                for command in commands(block):
                    if not runs(command):
                        continue
                    if command == "make demo":
                        done = subprocess.run(command.split(), cwd=ROOT, capture_output=True, text=True, timeout=1800)
                        assert done.returncode == 0, f"{block.where()}: {command}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
                    else:
                        if served is not None:
                            served.stop()
                        served = Served(command)
                        if "CATALOG=" in command:
                            assert any(line.startswith("the tool catalog ") and line.endswith(" serves:\n")
                                       for line in served.printed), served.printed
                    ran.append(command)
            elif block.lang == "python":
                assert served is not None, f"{block.where()}: a Python block with nothing serving before it"
                done = subprocess.run([sys.executable, "-c", block.text, served.url], cwd=ROOT, capture_output=True,
                                      text=True, timeout=300)
                assert done.returncode == 0, f"{block.where()} against {served.command}:\n{done.stderr[-3000:]}"
                # The README's client submits a job and waits for it: the stand-in completes it.
                assert done.stdout.startswith("completed "), done.stdout
                ran.append(f"python block at {block.where()}")
    finally:
        if served is not None:
            served.stop()
    assert "make demo" in ran and any(r.startswith("python block") for r in ran), ran
