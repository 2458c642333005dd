"""The release builds: where they are, and what is measured of them without the stack: each
zip's size, the criterion benchmark of the handler's CPU, the entropy probe (bench/entropy)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where cargo (and cargo lambda) build: CARGO_TARGET_DIR when set, relative to the workspace.
TARGET = ROOT / os.environ.get("CARGO_TARGET_DIR", "target")
RELEASE = TARGET / "release"
LAMBDA_ZIPS = TARGET / "lambda"
FUNCTIONS = ["notification-handler", "pipeline-router", "mcp-tools", "gateway-target", "event-delivery"]
# The empty Rust Lambdas (bench/empty-function): the floors of init.
FLOOR_BINS = ["empty-buffered", "empty-streaming"]


def criterion() -> dict:
    """Handler CPU per notification, no I/O: the criterion benchmark in shared/usecases/benches."""
    subprocess.run(["cargo", "bench", "--locked", "-p", "usecases", "--bench", "notification", "--",
                    "--warm-up-time", "1", "--measurement-time", "3"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    out = {}
    for estimates in (TARGET / "criterion").glob("*/new/estimates.json"):
        name = json.loads((estimates.parent / "benchmark.json").read_text())["title"]
        out[name] = json.loads(estimates.read_text())["median"]["point_estimate"] / 1000
    return out


def entropy(runs: int = 5) -> dict:
    """The first random bytes of a process from aws-lc (bench/entropy), built with and without
    CPU jitter entropy: median microseconds of the first and the second request."""
    out = {}
    for label, build in (("with jitter entropy", "entropy-jitter"), ("without (as built here)", "entropy-no-jitter")):
        binary = ROOT / "target" / build / "release" / "entropy-probe"
        if not binary.exists():
            continue
        samples = [tuple(map(int, subprocess.run([str(binary)], capture_output=True, text=True, check=True)
                             .stdout.split())) for _ in range(runs)]
        out[label] = (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))
    return out


def sizes() -> dict:
    out = {}
    for fn in FUNCTIONS:
        path = LAMBDA_ZIPS / fn / "bootstrap.zip"
        if path.exists():
            with zipfile.ZipFile(path) as z:
                unzipped = sum(i.file_size for i in z.infolist())
            out[fn] = (path.stat().st_size / 1e6, unzipped / 1e6)
    return out
