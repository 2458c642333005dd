"""mcp-tools through the official Python MCP client over Streamable HTTP, through a Function URL
(function_url.py): cold start to the first answer, then each operation warm against its floor
(submit_job with its input inline, the default, and through S3, two processes in turn), and the
calls of a check that waits."""

from __future__ import annotations

import asyncio
import gc
import statistics
import threading
import time
from dataclasses import dataclass

from emulator import Emulator
from floor import Floor, SdkFloor
from function_url import FunctionUrl
from builds import RELEASE
from functions import S3_INPUT_ENV, S3_INPUT_SETTING, variant
from processes import Function, cpu_ns, peak_rss_mb, stop
from runtime_api import RuntimeApi
from warm import WarmSamples

S3_INPUT_SUBMIT = f"submit_job, {S3_INPUT_SETTING} (input through S3)"


def bench_mcp(fn: Function, emulator: Emulator, args, known: str, fresh, runtime_ms: float) -> dict:
    """Cold start to the first answer, then each operation warm, through the official Python
    MCP client over Streamable HTTP, through a Function URL, to the function."""
    out: dict = {"cold": mcp_cold_starts(fn, emulator, args.cold), "ops": {}}
    runtime, s3_input_runtime = RuntimeApi(fn.name), RuntimeApi(fn.name)
    front, s3_input_front = FunctionUrl(runtime), FunctionUrl(s3_input_runtime)
    proc, _ = fn.spawn(runtime, emulator.http_endpoint)
    s3_input_proc, _ = variant(fn, S3_INPUT_ENV, "mcp-tools-s3-input.log").spawn(s3_input_runtime,
                                                                                  emulator.http_endpoint)
    floor = Floor(emulator.http_endpoint)
    sdk_floor = SdkFloor(RELEASE / "examples" / "sdk_replay", emulator.http_endpoint, fn.logs.parent)
    pending = fresh("pending")
    gc.disable()
    try:
        cpu = CpuPerCall({front: proc, s3_input_front: s3_input_proc})
        operations = Operations(emulator, front, s3_input_front, floor, sdk_floor, cpu, runtime_ms, args.events,
                                out["ops"])
        asyncio.run(operations.measure(known, pending, fresh))
        out["rss_mb"] = peak_rss_mb(proc)
    finally:
        gc.enable()
        sdk_floor.close()
        stop(proc, runtime)
        stop(s3_input_proc, s3_input_runtime)
        front.close()
        s3_input_front.close()
    return out


def mcp_cold_starts(fn: Function, emulator: Emulator, n: int) -> list[dict]:
    from mcp import Client

    async def first_answer(url):
        async with Client(url) as client:
            await client.list_tools()

    runs = []
    for _ in range(n):
        runtime = RuntimeApi(fn.name)
        front = FunctionUrl(runtime)
        # The client is started first and its first request waits at the Function URL, as a
        # request that causes a cold start does; the process is spawned once it is there.
        client = threading.Thread(target=lambda: asyncio.run(first_answer(front.url)))
        client.start()
        if not front.first_request.wait(60):
            raise SystemExit("the MCP client sent no request")
        proc, started = fn.spawn(runtime, emulator.http_endpoint)
        client.join(60)
        first = front.invocations[0]
        runs.append({"init_ms": (runtime.first_next_ns - started) / 1e6,
                     "first_response_ms": (first.done_ns - started) / 1e6,
                     "first_event_ms": first.duration_ms})
        stop(proc, runtime)
        front.close()
    return runs


class CpuPerCall:
    """Each call's CPU time in the function's process, from the call's start to the next call's
    start on the same process (or the end), so what the function does after its reply (its
    metrics, the next `next`) counts to the call that caused it. `procs`: each front's process."""

    def __init__(self, procs: dict):
        self.procs = procs
        self.open: dict = {}  # front -> (where its sample goes, or None; CPU ns at its start)

    def start(self, front, samples: list[float] | None) -> None:
        now = cpu_ns(self.procs[front])
        self.close(front, now)
        self.open[front] = (samples, now)

    def close(self, front, now: int) -> None:
        if front in self.open:
            samples, then = self.open.pop(front)
            if samples is not None:
                samples.append((now - then) / 1e6)

    def finish(self) -> None:
        for front in list(self.open):
            self.close(front, cpu_ns(self.procs[front]))


@dataclass
class Operations:
    """The warm operations of one live mcp-tools, into `ops`: by name, (samples, the client's
    median ms) or, for a check that waits, the list of its AWS calls. `s3_input_front`: a second
    mcp-tools, with every input through S3, for submit_job's other path."""
    emulator: Emulator
    front: FunctionUrl
    s3_input_front: FunctionUrl
    floor: Floor
    sdk_floor: SdkFloor
    cpu: CpuPerCall
    runtime_ms: float
    events: int
    ops: dict

    async def measure(self, known: str, pending: str, fresh) -> None:
        from mcp import Client

        async with Client(self.front.url) as client, Client(self.s3_input_front.url) as s3_input:
            # A job that stays pending, for the long poll.
            submitted = await client.call_tool("submit_job", {"document": "never answered", "idempotency_key": pending})
            pending_id = submitted.structured_content["inference_id"]

            def submit(via):
                return lambda i: via.call_tool(
                    "submit_job", {"document": f"Invoice {i}: total 12.50 EUR", "idempotency_key": fresh("key")})

            # The server's tools/list carries a 5-minute ttlMs and the SDK's client caches it: only
            # a call past the cache reaches the function.
            self.ops.update(await self.timed({"tools/list": (
                lambda i: client.list_tools(cache_mode="bypass"), self.front)}))
            self.ops.update(await self.timed({"check_job_status": (
                lambda i: client.call_tool("check_job_status", {"inference_id": known}), self.front)}))
            # The input's two paths side by side, so drift in the emulator's speed hits both alike.
            self.ops.update(await self.timed({"submit_job": (submit(client), self.front),
                                              S3_INPUT_SUBMIT: (submit(s3_input), self.s3_input_front)}))
            # With wait_secs: on a finished job it answers at once; on a pending one it polls.
            for label, job, wait in (("check_job_status wait_secs=5, finished job", known, 5),
                                     ("check_job_status wait_secs=3, job stays pending", pending_id, 3)):
                mark = self.emulator.recorder.mark()
                await client.call_tool("check_job_status", {"inference_id": job, "wait_secs": wait})
                self.ops[label] = [c.operation for c in self.emulator.recorder.since(mark)]

    async def timed(self, ops: dict) -> dict:
        """`events` rounds, the first 5 unmeasured, each a call of every op (by name: the call
        and the front it goes through) in turn, the order reversed every other round: each op's
        time against the floor, and the client's own median."""
        samples = {name: (WarmSamples(runtime_ms=self.runtime_ms), []) for name in ops}
        cpu_samples: dict[str, list[float]] = {name: [] for name in ops}
        for i in range(self.events + 5):
            for name, (op, front) in (list(ops.items()) if i % 2 == 0 else list(ops.items())[::-1]):
                mark, before = self.emulator.recorder.mark(), len(front.invocations)
                self.cpu.start(front, cpu_samples[name] if i >= 5 else None)
                t = time.perf_counter()
                result = await op(i)
                elapsed = (time.perf_counter() - t) * 1000
                if getattr(result, "is_error", False):
                    raise SystemExit(f"mcp-tools {name}: {result.content}")
                calls = self.emulator.recorder.since(mark)
                invocations = front.invocations[before:]
                subs, sdk_subs = {}, {}
                if name.startswith("submit_job"):
                    # Each floor writes jobs of its own, as fresh as the function's.
                    inference_id = result.structured_content["inference_id"]
                    subs = {inference_id: inference_id[::-1]}
                    sdk_subs = {inference_id: inference_id[1:] + inference_id[0]}
                # The SDK's floor warms up with the function: its clients, its connections.
                sdk_ms, sdk_cpu_ms = self.sdk_floor.replay(calls, sdk_subs) if calls else (0.0, 0.0)
                if i < 5:
                    continue
                warm, client_ms = samples[name]
                client_ms.append(elapsed)
                warm.add(sum(inv.duration_ms for inv in invocations), calls,
                         self.floor.replay(calls, subs) if calls else 0.0)
                warm.sdk_floors.append(sdk_ms)
                warm.sdk_cpu.append(sdk_cpu_ms)
        self.cpu.finish()
        for name, (warm, _) in samples.items():
            warm.cpu_ms = statistics.fmean(cpu_samples[name])
        return {name: (warm, statistics.median(client_ms)) for name, (warm, client_ms) in samples.items()}
