"""Warm latency: live processes fed event after event, each event's time set against its floor
(the same AWS calls replayed by floor.py) and against the Runtime API's own share."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from emulator import Call, Emulator
from builds import RELEASE
from floor import Floor, SdkFloor
from functions import REFERENCE, Functions
from lambda_events import OUTPUT_BODY, gateway_event, router_event, sns_event
from processes import Function, answer_of, cpu_ns, peak_rss_mb, stop
from runtime_api import RuntimeApi
from local_aws import RESULTS_TABLE, aws

HERE = Path(__file__).resolve().parent


@dataclass
class WarmSamples:
    """One function's warm events: each one's time, floor, emulator time and AWS calls."""
    durations: list[float] = field(default_factory=list)
    floors: list[float] = field(default_factory=list)
    server: list[float] = field(default_factory=list)
    calls: list[list[str]] = field(default_factory=list)
    rss_mb: float = float("nan")
    cpu_ms: float = float("nan")  # the process's CPU time per measured event
    runtime_ms: float = 0.0  # the Runtime API exchange alone (null_function.py)
    # The same calls through the SDK alone (floor.SdkFloor), each event's wall and CPU (the Rust
    # functions: the reference's SDK is another)
    sdk_floors: list[float] = field(default_factory=list)
    sdk_cpu: list[float] = field(default_factory=list)

    def add(self, duration_ms: float, calls: list[Call], floor_ms: float) -> None:
        self.durations.append(duration_ms)
        self.calls.append([c.operation for c in calls])
        self.server.append(sum(c.server_ms for c in calls))
        self.floors.append(floor_ms)

    @property
    def median(self) -> float:
        return statistics.median(self.durations)

    @property
    def floor(self) -> float:
        return statistics.median(self.floors) + self.runtime_ms

    @property
    def overhead(self) -> float:
        return self.above(self.floors)

    @property
    def sdk_floor(self) -> float:
        return statistics.median(self.sdk_floors) + self.runtime_ms

    @property
    def own(self) -> float:
        """Time above the same calls through the SDK alone: the function's own code's."""
        return self.above(self.sdk_floors)

    def above(self, floors: list[float]) -> float:
        """The median of each event's time above its floor, the Runtime API's exchange taken out."""
        return statistics.median(d - f for d, f in zip(self.durations, floors)) - self.runtime_ms


def runtime_exchange(events: int, work: Path) -> float:
    """Median invocation of a function that does nothing (null_function.py) with a notification
    as its event: what the harness adds to every invocation."""
    fn = Function("null", [sys.executable, str(HERE / "null_function.py")], {"PYTHONPATH": str(HERE)},
                  work / "null.log")
    runtime = RuntimeApi(fn.name)
    proc, _ = fn.spawn(runtime, "http://127.0.0.1:9")
    event = sns_event("null-event", "s3://bucket/key")
    gc.disable()
    try:
        durations = [runtime.invoke(event).duration_ms for _ in range(events + 5)][5:]
    finally:
        gc.enable()
        stop(proc, runtime)
    return statistics.median(durations)


def warm_runs(emulator: Emulator, runs: list[tuple[Function, list]], runtime_ms: float, warmup: int = 5,
              sdk_floor: SdkFloor | None = None) -> list[WarmSamples]:
    """One process per function, all alive at once and fed in turn (so drift in the emulator's
    speed hits them alike): `warmup` events each, then every event timed, its calls recorded
    and replayed by the floor client straight after, and by `sdk_floor` (the Rust functions'
    calls through the SDK alone) after that. `runtime_ms`: the Runtime API's share."""
    started = []
    gc.disable()  # moto's garbage, collected mid-call, would land on whichever call it hit
    try:
        for fn, _ in runs:
            runtime = RuntimeApi(fn.name)
            proc, _ = fn.spawn(runtime, emulator.http_endpoint)
            started.append((runtime, proc))
        floor = Floor(emulator.http_endpoint)
        outs = [WarmSamples(runtime_ms=runtime_ms) for _ in runs]
        cpu_at = {}
        for i in range(max(len(events) for _, events in runs)):
            for (fn, events), (runtime, proc), out in zip(runs, started, outs):
                if i >= len(events):
                    continue
                if i == warmup:
                    cpu_at[proc.pid] = cpu_ns(proc)
                event, context, subs = events[i]
                mark = emulator.recorder.mark()
                inv = runtime.invoke(event, context)
                answer_of(inv, fn.name)
                calls = emulator.recorder.since(mark)
                # The SDK's floor warms up with the function: its clients, its connections.
                sdk = (sdk_floor.replay(calls, {old: sdk_id(new) for old, new in subs.items()})
                       if sdk_floor and fn.name != REFERENCE else None)
                if i < warmup:
                    continue
                out.add(inv.duration_ms, calls, floor.replay(calls, subs))
                if sdk:
                    out.sdk_floors.append(sdk[0])
                    out.sdk_cpu.append(sdk[1])
        for (runtime, proc), out in zip(started, outs):
            out.rss_mb = peak_rss_mb(proc)
            out.cpu_ms = (cpu_ns(proc) - cpu_at[proc.pid]) / 1e6 / len(out.durations)
        return outs
    finally:
        gc.enable()
        for runtime, proc in started:
            stop(proc, runtime)


def sdk_id(floor_id: str) -> str:
    """The id the SDK's floor writes in place of the raw floor's (`flor` ids), as fresh."""
    return floor_id.replace("flor", "sdkf", 1)


def known_job(emulator: Emulator, fresh) -> str:
    """A completed job in the results table, for the checks to find."""
    known = fresh("known")
    aws(emulator, "dynamodb").put_item(
        TableName=RESULTS_TABLE, Item={"inference_id": {"S": known}, "status": {"S": "completed"},
                                       "result": {"S": OUTPUT_BODY.decode()}, "ttl": {"N": str(int(time.time()) + 3600)}})
    return known


def warm_events(emulator: Emulator, fns: Functions, n: int, runtime_ms: float, output: str, fresh) -> tuple[dict, str]:
    """n events each (the first 5 unmeasured): notification-handler against the reference, an
    output in S3 and then in responseBody; pipeline-router beside gateway-target. The samples by
    (function, event), and the known job gateway-target checked."""
    def notifications(body: bool):
        out = []
        for _ in range(n):
            inference_id = fresh("warm")
            out.append((sns_event(inference_id, output, body), None, {inference_id: inference_id.replace("warm", "flor")}))
        return out

    warm = {}
    # In a process of its own, beside the functions, from the first event on.
    sdk_floor = SdkFloor(RELEASE / "examples" / "sdk_replay", emulator.http_endpoint,
                         fns.rust["notification-handler"].logs.parent)
    try:
        for body in (False, True):
            label = "responseBody" if body else "output in S3"
            ours, ref = warm_runs(emulator, [(fns.rust["notification-handler"], notifications(body)),
                                             (fns.python_ref, notifications(body))], runtime_ms, sdk_floor=sdk_floor)
            warm[("notification-handler", label)] = ours
            warm[(REFERENCE, label)] = ref
        router_events = []
        for _ in range(n):
            execution = fresh("exec")
            router_events.append((router_event(execution, "sess-warm"), None,
                                  {execution: execution.replace("exec", "flor")}))
        known = known_job(emulator, fresh)
        gateway_events = [(*gateway_event(known), {}) for _ in range(n)]
        router, gateway = warm_runs(emulator, [(fns.rust["pipeline-router"], router_events),
                                               (fns.rust["gateway-target"], gateway_events)], runtime_ms,
                                    sdk_floor=sdk_floor)
    finally:
        sdk_floor.close()
    warm[("pipeline-router", "Succeeded event")] = router
    warm[("gateway-target", "check_job_status")] = gateway
    return warm, known
