"""SQS batches of 100 notifications through notification-handler, sequential against concurrent
(BATCH_CONCURRENCY 1 and 16), against moto and against a backend with a fixed delay per call."""

from __future__ import annotations

import statistics
from pathlib import Path

from builds import RELEASE
from emulator import Emulator, FixedLatencyAws
from lambda_events import OUTPUT_BODY, sqs_batch
from processes import Function, answer_of, stop
from runtime_api import RuntimeApi


def batch_run(fn: Function, endpoint: str, count, output: str, fresh, batches: int = 3) -> dict:
    """Median time of `batches` SQS batches of 100 new jobs, after one small batch to warm up."""
    runtime = RuntimeApi(fn.name)
    proc, _ = fn.spawn(runtime, endpoint)
    times, calls = [], []
    try:
        runtime.invoke(sqs_batch([fresh("batch") for _ in range(10)], output))
        for _ in range(batches):
            before = count()
            inv = runtime.invoke(sqs_batch([fresh("batch") for _ in range(100)], output), timeout=300)
            answer = answer_of(inv, "batch")
            if answer.get("batchItemFailures"):
                raise SystemExit(f"batch: {len(answer['batchItemFailures'])} messages failed (see {fn.logs})")
            times.append(inv.duration_ms)
            calls.append(count() - before)
    finally:
        stop(proc, runtime)
    return {"ms": statistics.median(times), "calls": statistics.median(calls)}


def sqs_batches(emulator: Emulator, handler_env: dict, delay_ms: float, work: Path, output: str, fresh) -> dict:
    """batch_run's figures by (backend, concurrency). `delay_ms`: the fixed backend's delay,
    for the network round trip moto does not have."""
    batch = {}
    fixed = FixedLatencyAws(OUTPUT_BODY, delay_ms / 1000)
    backends = {"moto": (emulator.http_endpoint, emulator.recorder.mark),
                f"fixed {delay_ms:g} ms per call": (fixed.endpoint, lambda: fixed.calls)}
    for backend, (endpoint, count) in backends.items():
        for concurrency in (1, 16):
            fn = Function("notification-handler", [str(RELEASE / "notification-handler")],
                          {**handler_env, "BATCH_CONCURRENCY": str(concurrency)}, work / "batch.log")
            batch[(backend, concurrency)] = batch_run(fn, endpoint, count, output, fresh)
    fixed.stop()
    return batch
