"""The functions benched, each configured against the local stack: the four release builds and
the Python reference (bench/reference), which records notifications as notification-handler does."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from builds import RELEASE
from processes import Function
from results import REFERENCE
from local_aws import RESULTS_TABLE

HERE = Path(__file__).resolve().parent
# mcp-tools configured for the input's other path: every input through S3, as before inputs went
# inline, or as a deployment that keeps its inputs runs it.
S3_INPUT_ENV = {"INLINE_INPUT_MAX_BYTES": "0"}
S3_INPUT_SETTING = ", ".join(f"{k}={v}" for k, v in S3_INPUT_ENV.items())



@dataclass
class Functions:
    rust: dict  # by name
    python_ref: Function
    handler_env: dict  # notification-handler's configuration, for its variants
    tools_env: dict  # mcp-tools' and gateway-target's


def functions(stack: dict, work: Path) -> Functions:
    """Each function's logs go to `work`."""
    common = {"METRICS_NAMESPACE": "McpAsyncJobs/bench"}
    handler_env = {**common, "RESULTS_TABLE": RESULTS_TABLE}
    rust = {
        "notification-handler": Function("notification-handler", [str(RELEASE / "notification-handler")],
                                         handler_env, work / "notification-handler.log"),
        "pipeline-router": Function("pipeline-router", [str(RELEASE / "pipeline-router")],
                                    {**common, **{k: stack[k] for k in ("PIPELINE_RESULTS_TABLE", "PIPELINE_RESULTS_QUEUE_URL")}},
                                    work / "pipeline-router.log"),
    }
    tools_env = {**common, **{k: stack[k] for k in ("RESULTS_TABLE", "PIPELINE_RESULTS_TABLE", "IO_BUCKET")},
                 "ASYNC_ENDPOINT_NAME": "mcp-doc-processor-async", "PIPELINE_NAME": "mcp-intent-classifier-pipeline",
                 # The bench is one caller making thousands of calls: the quotas stay on (their
                 # writes are part of what a job costs) with limits it never reaches.
                 "CALLER_SUBMITS_PER_MINUTE": "100000", "CALLER_RUNS_PER_HOUR": "10000", "CALLER_WAITS_MAX": "1000",
                 "CALLER_READS_PER_MINUTE": "100000"}
    rust["mcp-tools"] = Function("mcp-tools", [str(RELEASE / "mcp-tools")], {**tools_env, "AUTH_MODE": "none"},
                                 work / "mcp-tools.log")
    rust["gateway-target"] = Function("gateway-target", [str(RELEASE / "gateway-target")], tools_env,
                                      work / "gateway-target.log")
    python_ref = Function(REFERENCE, [sys.executable, "-m", "awslambdaric", "handler.lambda_handler"],
                          {**handler_env, "PYTHONPATH": str(HERE / "reference")}, work / "python-reference.log")
    return Functions(rust, python_ref, handler_env, tools_env)


def variant(fn: Function, env: dict, log_name: str) -> Function:
    """The same function with `env` on top of its configuration, logging to a file of its own."""
    return Function(fn.name, fn.command, {**fn.env, **env}, fn.logs.with_name(log_name))
