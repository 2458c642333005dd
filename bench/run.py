#!/usr/bin/env python3
"""`make bench`: the functions' release builds against the Python reference, on one local stack.

    .venv/bin/python bench/run.py [--events 100] [--cold 5] [--delay-ms 10] [--out BENCHMARKS.md]
                                  [--cost-only | --mcp-only | --cold-only | --warm-only | --init-only]

Every function runs as Lambda runs it: its own process, fed by a Lambda Runtime API
(runtime_api.py), with the environment Lambda gives it. AWS is moto in this process
(emulator.py), over HTTP, or over HTTPS for the TLS columns. It expects the release builds
(`make bench` makes them) and prints the table it writes to --out.

This file runs the measurements in order (cold.py, first_work.py, init_floor.py, warm.py, mcp_latency.py, sqs_batches.py,
cost_scenarios.py, builds.py), then summary.py reduces the samples to the figures of a
results.Results (plain data) and render.py turns that into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

from builds import FLOOR_BINS, FUNCTIONS, RELEASE, ROOT, criterion, entropy, sizes, zip_parts
from cold import cold_starts
from first_work import first_work, missing_tools
from cost_scenarios import bench_cost
from cost_summary import summarize_cost
from emulator import Emulator
from functions import Functions, functions
from mcp_latency import bench_mcp
from hostile import bench_hostile
from init_floor import catalog_first_calls, init_rounds
from render import render, splice_cost, splice_hostile, splice_mcp
from sqs_batches import sqs_batches
from local_aws import OUTPUT, set_up
from summary import (environment, first_answer_figures, first_answer_targets, first_work_figures, first_work_targets,
                     init_figures, mcp_figures, summarize, warm_figures)
from warm import known_job, runtime_exchange, warm_events


# Cold starts of each function under callgrind: its counts move by a few percent at most from run to
# run, with the data (gateway-target's first invocation 1.44 to 1.50 million instructions).
FIRST_WORK_RUNS = 3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100, help="warm events per measurement (median)")
    parser.add_argument("--cold", type=int, default=5, help="cold starts per function (median)")
    parser.add_argument("--delay-ms", type=float, default=10.0,
                        help="added to every AWS call in the batch comparison, for the network round trip")
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--cost-only", action="store_true",
                      help="price a job only (about a minute), and replace that section of --out")
    only.add_argument("--hostile-only", action="store_true",
                      help="what hostile requests cost mcp-tools beside cheap ones of the same size (a minute, no "
                           "AWS stand-in), and replace that section of --out")
    only.add_argument("--cold-only", action="store_true",
                      help="only the cold starts and the first answer at 128 MB, printed (nothing written)")
    only.add_argument("--warm-only", action="store_true",
                      help="only the warm events against their two floors, printed (nothing written)")
    only.add_argument("--init-only", action="store_true",
                      help="init against its floor only (a minute), printed; BENCHMARKS.md is not written")
    parser.add_argument("--init-rounds", type=int, default=15, help="rounds of fresh processes for init against its floor")
    only.add_argument("--mcp-only", action="store_true",
                      help="mcp-tools through an MCP client only (submit_job's input inline and through S3 among "
                           "its operations), and replace that section of --out and its rows of the calls table")
    return parser.parse_args()


def check_prerequisites(hostile_only: bool, cost_only: bool = False, callgrind: bool = False) -> None:
    # The hostile-input section runs mcp-tools alone, with no Python reference; the cost section
    # runs the functions (`make bench-cost` builds those alone), not the empty ones.
    needed = ["mcp-tools"] if hostile_only else FUNCTIONS if cost_only else FUNCTIONS + FLOOR_BINS
    missing = [f for f in needed if not (RELEASE / f).exists()]
    if missing:
        sys.exit(f"missing release builds: {', '.join(missing)} (run `make bench`, which builds them)")
    if hostile_only:
        return
    if callgrind and (missing := missing_tools()):
        sys.exit(f"{' and '.join(missing)} not found: a first invocation's work is counted under callgrind"
                 " (Debian: apt-get install valgrind)")
    try:
        importlib.import_module("awslambdaric")
    except ImportError:
        sys.exit("awslambdaric is not installed in this Python (run `make bench`, which installs bench/requirements.txt)")


def fresh_ids():
    """A new id for each call, under a prefix: every event the run sends is a new job."""
    ids = iter(range(10**9))

    def fresh(prefix: str) -> str:
        return f"{prefix}-{next(ids):08d}"
    return fresh


def main() -> int:
    args = parse_args()
    check_prerequisites(args.hostile_only, args.cost_only,
                        callgrind=not (args.cost_only or args.mcp_only or args.warm_only or args.init_only))
    started_at = time.time()
    work = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    if args.hostile_only:
        return hostile_only(args, work, started_at)
    emulator = Emulator(work / "tls")
    stack = set_up(emulator)
    fns = functions(stack, work)
    fresh = fresh_ids()
    if args.cost_only:
        return cost_only(args, emulator, fns, work, fresh, started_at)
    if args.mcp_only:
        return mcp_only(args, emulator, fns, work, fresh, started_at)
    if args.cold_only:
        cold = cold_starts(emulator, fns, args.cold, OUTPUT, fresh)
        rows = first_answer_figures(cold)
        print("\n".join(f"{a.function}: first response {a.first_response_ms:.2f} ms, init CPU {a.init_cpu_ms:.2f} ms, "
                        f"first invocation CPU {a.first_event_cpu_ms:.2f} ms, next {a.next_event_cpu_ms:.2f} ms "
                        f"({a.first_over_next:.1f}x), at 128 MB {a.modelled_128_ms:.1f} ms" for a in rows))
        work = first_work_figures(first_work(emulator, fns, FIRST_WORK_RUNS, fresh, OUTPUT))
        emulator.stop()
        print("\n".join(f"{w.function}: first invocation {w.first_instructions / 1e6:.2f} M instructions, next"
                        f" {w.next_instructions / 1e6:.2f} M ({w.first_over_next:.2f}x)" for w in work))
        print("\n".join(f"{t.name}: {t.value:.2f} ({'met' if t.met else 'not met'})"
                        for t in first_answer_targets(rows) + first_work_targets(work)))
        return 0
    if args.warm_only:
        warm, _ = warm_events(emulator, fns, args.events + 5, runtime_exchange(args.events, work), OUTPUT, fresh)
        emulator.stop()
        rows, _ = warm_figures(warm)
        print("\n".join(f"{w.function}, {w.event}: {w.latency_ms:.2f} ms, above the raw floor {w.overhead_ms:.2f} ms,"
                        f" the SDK alone's floor {w.sdk_floor_ms:.2f} ms, own time {w.own_ms:.2f} ms,"
                        f" CPU {w.cpu_ms:.2f} ms (the SDK alone's {w.sdk_cpu_ms:.2f} ms)" for w in rows))
        return 0
    if args.init_only:
        rows = init_figures(init_rounds(emulator, fns, args.init_rounds, work, fresh))
        print("\n".join(f"{i.function}: {i.init_ms:.2f} ms, {i.floor}: {i.floor_ms:.2f} ms, {i.ratio:.2f}x;"
                        f" with the SDK's one-time work {i.sdk_floor_ms:.2f} ms, {i.sdk_ratio:.2f}x" for i in rows))
        calls = catalog_first_calls(emulator, fns, args.cold, work)
        print(f"a catalog tool's first call {calls['first_ms']:.2f} ms, the next {calls['next_ms']:.2f} ms"
              f" ({calls['first_ms'] / calls['next_ms']:.2f}x)")
        emulator.stop()
        return 0
    report = measure(args, emulator, fns, work, fresh)
    emulator.stop()
    text = render(summarize(report, environment(args, time.time() - started_at)))
    text = splice_hostile(text, report["hostile"], "")
    Path(args.out).write_text(text)
    print(text)
    print(f"written to {args.out}; function logs in {work}", file=sys.stderr)
    return 0


def cost_only(args, emulator: Emulator, fns: Functions, work: Path, fresh, started_at: float) -> int:
    """Prices a job and replaces the cost section of --out, the rest of it kept."""
    priced = summarize_cost(bench_cost(emulator, fns, work, fresh))
    env = environment(args, time.time() - started_at)
    priced.provenance = (f"This section alone is from `bench/run.py --cost-only` ({env.date}, {env.cores} cores, "
                         f"{env.took_s:.0f} s); the rest of the file is from the run its header names.")
    out = Path(args.out)
    out.write_text(splice_cost(out.read_text() if out.exists() else "# Benchmarks\n", priced))
    emulator.stop()
    print(f"the cost section of {args.out} rewritten; function logs in {work}", file=sys.stderr)
    return 0


def hostile_only(args, work: Path, started_at: float) -> int:
    """Measures hostile requests against mcp-tools and replaces that section of --out."""
    rows = bench_hostile(RELEASE / "mcp-tools", work)
    env = environment(args, time.time() - started_at)
    provenance = (f"This section alone is from `bench/run.py --hostile-only` ({env.date}, {env.cores} cores, "
                  f"{env.took_s:.0f} s); the rest of the file is from the run its header names.")
    out = Path(args.out)
    text = splice_hostile(out.read_text() if out.exists() else "# Benchmarks\n", rows, provenance)
    out.write_text(text)
    print("\n".join(line for line in text.split("\n") if line.startswith("| ")), file=sys.stderr)
    print(f"the hostile-input section of {args.out} rewritten; function log in {work}", file=sys.stderr)
    return 0


def mcp_only(args, emulator: Emulator, fns: Functions, work: Path, fresh, started_at: float) -> int:
    """Measures mcp-tools through an MCP client and replaces its section of --out (and its rows
    of the calls table), the rest of it kept."""
    runtime_ms = runtime_exchange(args.events, work)
    measured = bench_mcp(fns.rust["mcp-tools"], emulator, args, known_job(emulator, fresh), fresh, runtime_ms)
    _, ops, polls, paths = mcp_figures(measured)
    env = environment(args, time.time() - started_at)
    provenance = (f"This section alone, with the mcp-tools rows of the calls table below, is from `bench/run.py "
                  f"--mcp-only --events {env.events} --cold {env.cold}` ({env.date}, {env.cores} cores, "
                  f"{env.took_s:.0f} s); the rest of the file is from the run its header names.")
    out = Path(args.out)
    out.write_text(splice_mcp(out.read_text() if out.exists() else "# Benchmarks\n", env.events, ops,
                              measured["rss_mb"], polls, paths, provenance))
    emulator.stop()
    print(f"the mcp-tools section of {args.out} rewritten; function logs in {work}", file=sys.stderr)
    return 0


def measure(args, emulator: Emulator, fns: Functions, work: Path, fresh) -> dict:
    """Every measurement, in turn, into the report summary.summarize reads."""
    report: dict = {}
    runtime_ms = report["runtime_ms"] = runtime_exchange(args.events, work)

    print("cold starts ...", file=sys.stderr, flush=True)
    report["cold"] = cold_starts(emulator, fns, args.cold, OUTPUT, fresh)

    print("a first invocation's work, under callgrind ...", file=sys.stderr, flush=True)
    report["first_work"] = first_work(emulator, fns, FIRST_WORK_RUNS, fresh, OUTPUT)

    print("init against its floor ...", file=sys.stderr, flush=True)
    report["init"] = init_rounds(emulator, fns, args.init_rounds, work, fresh)
    report["catalog_first_calls"] = catalog_first_calls(emulator, fns, args.cold, work)

    print("warm events ...", file=sys.stderr, flush=True)
    report["warm"], known = warm_events(emulator, fns, args.events + 5, runtime_ms, OUTPUT, fresh)

    print("mcp-tools through an MCP client ...", file=sys.stderr, flush=True)
    report["mcp"] = bench_mcp(fns.rust["mcp-tools"], emulator, args, known, fresh, runtime_ms)

    print("SQS batches of 100, sequential and concurrent ...", file=sys.stderr, flush=True)
    report["batch"] = sqs_batches(emulator, fns.handler_env, args.delay_ms, work, OUTPUT, fresh)

    print("what a job costs (each call's billed size) ...", file=sys.stderr, flush=True)
    report["cost"] = bench_cost(emulator, fns, work, fresh)

    print("hostile requests beside cheap ones ...", file=sys.stderr, flush=True)
    report["hostile"] = bench_hostile(RELEASE / "mcp-tools", work)

    report["criterion"] = criterion()
    report["sizes"] = sizes()
    report["zip_parts"] = zip_parts()
    report["entropy"] = entropy()
    return report


if __name__ == "__main__":
    sys.exit(main())
