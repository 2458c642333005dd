"""Starting the functions under `cargo lambda watch` for the demo, `make serve` and the MCP
tests, with the local stack's environment (see local_stack.py)."""

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ROOT / ".local"
STACK_ENV = (
    "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SAGEMAKER", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", "AWS_REGION",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED", "RESULTS_TABLE",
    "PIPELINE_RESULTS_TABLE", "EVENTS_TABLE", "SUBSCRIPTIONS_TABLE", "DELIVERY_QUEUE_URL",
    "PIPELINE_RESULTS_QUEUE_URL", "IO_BUCKET",
)
# What the functions are configured with locally (a deployment sets these in the template).
# Logging is left to the functions' defaults (this project at INFO, dependencies at WARN).
FUNCTION_ENV = {
    "ASYNC_ENDPOINT_NAME": "mcp-doc-processor-async",
    "PIPELINE_NAME": "mcp-intent-classifier-pipeline",
    # Locally every unauthenticated call is one caller, the demo's and the tests' alike: the
    # per-caller quotas are off here (tests/mcp/test_sharing.py and test_read_quota.py run their
    # own servers with them on).
    "CALLER_SUBMITS_PER_MINUTE": "0",
    "CALLER_RUNS_PER_HOUR": "0",
    "CALLER_WAITS_MAX": "0",
    "CALLER_READS_PER_MINUTE": "0",
    # MCP Events webhooks go to receivers on this machine, over http; a failed delivery is
    # retried after a second (doubling), not ten.
    "EVENTS_ALLOW_LOCAL_CALLBACKS": "true",
    "RETRY_FIRST_SECS": "1",
}
# `make serve` is local and unauthenticated: a browser tool on this machine may call it (any
# port of localhost), no other origin may (DNS-rebinding protection).
LOCAL_ORIGINS = "http://localhost:*,http://127.0.0.1:*"


class WatchError(RuntimeError):
    pass


def host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def relay_runner_env() -> dict:
    """cargo's runner for the watched functions: runtime_relay.py, which passes the client
    context to them as JSON, as Lambda does (cargo lambda watch base64-encodes it)."""
    var = "CARGO_TARGET_" + host_triple().upper().replace("-", "_") + "_RUNNER"
    return {var: f"{sys.executable} {ROOT / 'scripts' / 'runtime_relay.py'}"}


def start_watch(port: int, extra_env: dict, name: str, timeout: float = 300,
                concurrency: int = 1) -> subprocess.Popen:
    """Runs `cargo lambda watch` on 127.0.0.1:port (log and env file in .local/NAME.*) and
    returns once it listens. The functions are built on their first invocation. Each function
    serves `concurrency` invocations at once (cargo lambda's default is one at a time)."""
    env = {k: os.environ[k] for k in STACK_ENV if k in os.environ}
    env.update(FUNCTION_ENV)
    env.update(extra_env)
    LOCAL.mkdir(exist_ok=True)
    env_file = LOCAL / f"{name}.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    # cargo-lambda lives in the venv beside this interpreter.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with open(LOCAL / f"{name}.log", "w") as log:
        proc = subprocess.Popen(
            ["cargo", "lambda", "watch", "--invoke-address", "127.0.0.1", "--invoke-port", str(port),
             "--ignore-changes", "--disable-cors", "--env-file", str(env_file),
             "--concurrency", str(concurrency)],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PATH": path, **relay_runner_env()},
        )
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise WatchError(f"cargo lambda watch exited with {proc.returncode}; see .local/{name}.log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.3)
    stop(proc)
    raise WatchError(f"cargo lambda watch did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def target_dir() -> Path:
    """Where cargo builds: CARGO_TARGET_DIR when set (relative to the workspace, as cargo reads
    it), else target/."""
    configured = os.environ.get("CARGO_TARGET_DIR")
    return ROOT / configured if configured else ROOT / "target"


# What a function prints when it cannot start (entry::telemetry::or_exit): this line, then
# one indented line per mistake.
CANNOT_START = " cannot start: "


def start_failure(log: Path, function: str) -> Optional[str]:
    """The words `function` printed when it could not start, as its log holds them, or None."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    marker = function + CANNOT_START
    for i, line in enumerate(lines):
        at = line.find(marker)
        if at < 0:
            continue
        said = [line[at:]]
        said += [following for following in lines[i + 1:i + 1 + MAX_MISTAKE_LINES]
                 if following.startswith("  ")]
        return "\n".join(said)
    return None


MAX_MISTAKE_LINES = 60


def wait_started(proc: subprocess.Popen, port: int, name: str, function: str = "mcp-tools",
                 timeout: float = 900) -> None:
    """Calls `function` once under the watch started as `name` and returns when it answers
    anything. cargo lambda watch leaves an invocation waiting forever when the function exits
    at its cold start, so the watch's log is read meanwhile: a function that cannot start is a
    WatchError with its own words (a bad catalog, a missing variable), at once. The watch
    builds the function on this first call when it is not built yet: hence the long timeout."""
    log = LOCAL / f"{name}.log"
    answered: list = []

    def call() -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/lambda-url/{function}/mcp", method="GET")
        try:
            urllib.request.urlopen(request, timeout=timeout).close()
        except urllib.error.HTTPError:
            pass  # any status is an answer: the function is up
        except OSError:
            return
        answered.append(True)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    deadline = time.time() + timeout
    while time.time() < deadline:
        if answered:
            return
        said = start_failure(log, function)
        if said is not None:
            raise WatchError(said)
        if proc.poll() is not None:
            raise WatchError(f"cargo lambda watch exited with {proc.returncode}; see .local/{name}.log")
        if not caller.is_alive():
            raise WatchError(f"{function} did not answer; see .local/{name}.log")
        time.sleep(0.2)
    raise WatchError(f"{function} did not answer within {timeout:.0f} s; see .local/{name}.log")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
