"""Cold starts: a fresh process per run, handed its first event as soon as it asks; from the
spawn to its first request for an event (init) and to its first answer."""

from __future__ import annotations

from emulator import SYSTEM_ROOTS, Emulator
from functions import Functions
import json
import uuid

from function_url import function_url_event
from lambda_events import gateway_event, router_event, sns_event
from processes import Function, answer_of, cpu_ns, stop
from runtime_api import RuntimeApi


# Events after the first in each cold process: what an average event costs the same process.
# Ten, the read quota's batch (usecases::quota::READ_BATCH_MAX): a process's first status
# check takes ten reads with one DynamoDB write and the next nine spend them without one, so
# five next events held no write and made a first event look costlier than it is; ten hold one,
# as every ten reads do.
NEXT_EVENTS = 10


def cold_run(fn: Function, emulator: Emulator, event, context, tls: bool, scan_cert_dir: bool = False,
             then: list = (), read_cpu_ns=cpu_ns) -> dict:
    """One fresh process, handed its first event as soon as it asks, then the events `then`
    ((event, context) pairs) one after another; the process's CPU (all threads) read at its first
    `next` and at each answer (`read_cpu_ns(proc)`)."""
    runtime = RuntimeApi(fn.name, cpu_watched=True)
    inv = runtime.submit(event, context)
    roots = emulator.ca_bundle if tls else None if scan_cert_dir else SYSTEM_ROOTS
    proc, started = fn.spawn(runtime, emulator.https_endpoint if tls else emulator.http_endpoint, roots)
    runtime.watch_cpu(lambda: read_cpu_ns(proc))
    if not inv.done.wait(60):
        stop(proc, runtime)
        raise SystemExit(f"{fn.name}: no answer to its first event within 60 s (see {fn.logs})")
    answered(inv, f"{fn.name} cold start")
    last_cpu_ns = inv.cpu_done_ns
    next_cpu = []
    for later_event, later_context in then:
        later = runtime.invoke(later_event, later_context)
        answered(later, f"{fn.name} event after its cold start")
        next_cpu.append((later.cpu_done_ns - last_cpu_ns) / 1e6)
        last_cpu_ns = later.cpu_done_ns
    stop(proc, runtime)
    return {"init_ms": (runtime.first_next_ns - started) / 1e6,
            "first_response_ms": (inv.done_ns - started) / 1e6,
            "first_event_ms": inv.duration_ms,
            "init_cpu_ms": runtime.first_next_cpu_ns / 1e6,
            "first_event_cpu_ms": (inv.cpu_done_ns - runtime.first_next_cpu_ns) / 1e6,
            "next_event_cpu_ms": sum(next_cpu) / len(next_cpu) if next_cpu else float("nan")}


def answered(inv, what: str) -> None:
    """The invocation's answer read, as a buffered reply or a streamed one (mcp-tools': its JSON
    prelude, eight NULs, then the body)."""
    if inv.response is not None and b"\0" * 8 in inv.response:
        prelude, _, body = inv.response.partition(b"\0" * 8)
        if json.loads(prelude).get("statusCode") != 200 or b'"result"' not in body:
            raise SystemExit(f"{what}: not answered: {inv.response[:300]!r}")
        return
    answer_of(inv, what)


def cold_runs(fn: Function, emulator: Emulator, n: int, first_event, tls: bool, scan_cert_dir: bool = False) -> list[dict]:
    """n fresh processes; each is handed its first event as soon as it asks, then NEXT_EVENTS
    more of the same kind."""
    def then(i: int) -> list:
        return [first_event(i * 100 + k) for k in range(1, NEXT_EVENTS + 1)]
    return [cold_run(fn, emulator, *first_event(i), tls, scan_cert_dir, then(i)) for i in range(n)]


def cold_starts(emulator: Emulator, fns: Functions, n: int, output: str, fresh) -> dict:
    """n cold starts of each: notification-handler and the reference over HTTP and HTTPS (the
    i-th HTTPS run right after the i-th HTTP one), and with the roots read from /etc/ssl/certs;
    pipeline-router, gateway-target and mcp-tools (a Function URL status check) over HTTP. By
    (function, over)."""
    def notification(i, body=False):
        return sns_event(fresh("cold"), output, body), None

    handler = fns.rust["notification-handler"]
    cold = {(fn.name, tls): [] for tls in (False, True) for fn in (handler, fns.python_ref)}
    # Over HTTP, then at once over HTTPS, run by run: what TLS adds is taken pair by pair, so a
    # slow moment of the machine or the emulator falls on both runs of a pair.
    for i in range(n):
        for fn in (handler, fns.python_ref):
            for tls in (False, True):
                later = [notification(i) for _ in range(NEXT_EVENTS)]
                cold[(fn.name, tls)].append(cold_run(fn, emulator, *notification(i), tls, then=later))
    cold[("notification-handler", "scan")] = cold_runs(handler, emulator, n, notification, False, scan_cert_dir=True)
    for name, event in first_events(fresh, output).items():
        if name != "notification-handler":
            cold[(name, False)] = cold_runs(fns.rust[name], emulator, n, event, False)
    return cold


def first_events(fresh, output: str) -> dict:
    """Each function's event of a cold start, by function: `event(i)` gives an (event, context)
    pair, a new job each time."""
    return {
        "notification-handler": lambda i: (sns_event(fresh("cold"), output, False), None),
        "pipeline-router": lambda i: (router_event(fresh("cold"), "sess-cold"), None),
        "gateway-target": lambda i: gateway_event(fresh("cold")),
        # A Function URL status check.
        "mcp-tools": lambda i: (status_check(), None),
    }


def status_check() -> bytes:
    """A Function URL request of check_job_status for a job nobody started: one DynamoDB read."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "check_job_status", "arguments": {"inference_id": str(uuid.uuid4())}}}).encode()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}
    return function_url_event("POST", "/mcp", "", headers, body)
