"""A function as Lambda runs it: its own process, with the environment Lambda gives it, fed by a
Runtime API (runtime_api.py); and what /proc tells of that process."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from emulator import SYSTEM_ROOTS
from runtime_api import RuntimeApi
from local_aws import REGION

MEMORY_MB = 128


@dataclass
class Function:
    name: str
    command: list[str]
    env: dict  # the function's own configuration, on top of what Lambda sets
    logs: Path

    def spawn(self, runtime: RuntimeApi, endpoint: str, roots: str | None = SYSTEM_ROOTS) -> tuple[subprocess.Popen, int]:
        """Starts the process. `roots`: the CA bundle the SDKs trust (SSL_CERT_FILE for the Rust
        SDK's rustls-native-certs, AWS_CA_BUNDLE for botocore). A Lambda image has one bundle
        file; without SSL_CERT_FILE rustls-native-certs would also read every file of this
        machine's /etc/ssl/certs, one by one, which the cold start table shows apart."""
        env = {**lambda_environment(self.name, self.logs.parent, endpoint, roots),
               "AWS_LAMBDA_RUNTIME_API": runtime.address, **self.env}
        log = open(self.logs, "ab")
        started = time.perf_counter_ns()
        proc = subprocess.Popen(self.command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.logs.parent)
        log.close()
        return proc, started


def initialized(runtime, proc: subprocess.Popen, name: str, within_s: float = 30.0) -> None:
    """Waits for the process's first `next` (its init done): a scenario that counts the AWS calls
    of warm invocations must not count a cold start's own (mcp-tools' warm-up read)."""
    deadline = time.monotonic() + within_s
    while runtime.first_next_ns is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{name}: no first `next` within {within_s:.0f} s (its init failed; see its log)")
        time.sleep(0.005)


def lambda_environment(name: str, home: Path, endpoint: str, roots: str | None = SYSTEM_ROOTS) -> dict:
    """The environment Lambda gives a function named `name` (less its Runtime API's address),
    with AWS at `endpoint`."""
    env = {
        "PATH": os.environ["PATH"], "LANG": "en_US.UTF-8", "TZ": ":UTC", "HOME": str(home),
        "AWS_LAMBDA_FUNCTION_NAME": name, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(MEMORY_MB),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}", "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
        "AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_LOG_LEVEL": "INFO",
        "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
        "AWS_ENDPOINT_URL": endpoint,
    }
    if roots:
        env["SSL_CERT_FILE"] = roots
        if endpoint.startswith("https:"):
            env["AWS_CA_BUNDLE"] = roots
    return env


def cpu_ns(proc: subprocess.Popen) -> int:
    """CPU time the process has run, all threads (the scheduler's own count, in ns)."""
    task = Path(f"/proc/{proc.pid}/task")
    return sum(int((t / "schedstat").read_text().split()[0]) for t in task.iterdir())


def peak_rss_mb(proc: subprocess.Popen) -> float:
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stop(proc: subprocess.Popen, runtime: RuntimeApi) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    runtime.close()


def answer_of(inv, what: str) -> dict:
    if inv.response is None:
        raise SystemExit(f"{what}: the function reported an error: {inv.error!r}")
    return json.loads(inv.response)
