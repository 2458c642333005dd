"""Cold starts: a fresh process per run, handed its first event as soon as it asks; from the
spawn to its first request for an event (init) and to its first answer."""

from __future__ import annotations

from emulator import SYSTEM_ROOTS, Emulator
from functions import Functions
from lambda_events import gateway_event, router_event, sns_event
from processes import Function, answer_of, stop
from runtime_api import RuntimeApi


def cold_run(fn: Function, emulator: Emulator, event, context, tls: bool, scan_cert_dir: bool = False) -> dict:
    """One fresh process, handed its first event as soon as it asks."""
    runtime = RuntimeApi(fn.name)
    inv = runtime.submit(event, context)
    roots = emulator.ca_bundle if tls else None if scan_cert_dir else SYSTEM_ROOTS
    proc, started = fn.spawn(runtime, emulator.https_endpoint if tls else emulator.http_endpoint, roots)
    if not inv.done.wait(60):
        stop(proc, runtime)
        raise SystemExit(f"{fn.name}: no answer to its first event within 60 s (see {fn.logs})")
    answer_of(inv, f"{fn.name} cold start")
    stop(proc, runtime)
    return {"init_ms": (runtime.first_next_ns - started) / 1e6,
            "first_response_ms": (inv.done_ns - started) / 1e6,
            "first_event_ms": inv.duration_ms}


def cold_runs(fn: Function, emulator: Emulator, n: int, first_event, tls: bool, scan_cert_dir: bool = False) -> list[dict]:
    """n fresh processes; each is handed its first event as soon as it asks."""
    return [cold_run(fn, emulator, *first_event(i), tls, scan_cert_dir) for i in range(n)]


def cold_starts(emulator: Emulator, fns: Functions, n: int, output: str, fresh) -> dict:
    """n cold starts of each: notification-handler and the reference over HTTP and HTTPS (the
    i-th HTTPS run right after the i-th HTTP one), and with the roots read from /etc/ssl/certs;
    pipeline-router and gateway-target over HTTP. By (function, over)."""
    def notification(i, body=False):
        return sns_event(fresh("cold"), output, body), None

    handler = fns.rust["notification-handler"]
    cold = {(fn.name, tls): [] for tls in (False, True) for fn in (handler, fns.python_ref)}
    # Over HTTP, then at once over HTTPS, run by run: what TLS adds is taken pair by pair, so a
    # slow moment of the machine or the emulator falls on both runs of a pair.
    for i in range(n):
        for fn in (handler, fns.python_ref):
            for tls in (False, True):
                cold[(fn.name, tls)].append(cold_run(fn, emulator, *notification(i), tls))
    cold[("notification-handler", "scan")] = cold_runs(handler, emulator, n, notification, False, scan_cert_dir=True)
    cold[("pipeline-router", False)] = cold_runs(
        fns.rust["pipeline-router"], emulator, n, lambda i: (router_event(fresh("cold"), "sess-cold"), None), False)
    cold[("gateway-target", False)] = cold_runs(
        fns.rust["gateway-target"], emulator, n, lambda i: gateway_event(fresh("cold")), False)
    return cold
