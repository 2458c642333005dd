#!/usr/bin/env python3
"""`make bench`: the functions' release builds against the Python reference, on one local stack.

    .venv/bin/python bench/run.py [--events 100] [--cold 5] [--delay-ms 10] [--out BENCHMARKS.md]

Every function runs as Lambda runs it: its own process, fed by a Lambda Runtime API
(runtime_api.py), with the environment Lambda gives it. AWS is moto in this process
(emulator.py), over HTTP, or over HTTPS for the TLS columns. It expects the release builds
(`make bench` makes them) and prints the table it writes to --out.

This file measures: it collects the samples, then `summarize` reduces them to the figures of a
results.Results (plain data). render.py turns that into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "scripts"))

import boto3  # noqa: E402
from emulator import SYSTEM_ROOTS, Call, Emulator, FixedLatencyAws  # noqa: E402
from function_url import FunctionUrl  # noqa: E402
from local_stack import IO_BUCKET, REGION, RESULTS_TABLE, create_resources  # noqa: E402
from render import render, splice_cost  # noqa: E402
from runtime_api import RuntimeApi, read_message  # noqa: E402

import cost  # noqa: E402
import results  # noqa: E402

RELEASE = ROOT / "target" / "release"
LAMBDA_ZIPS = ROOT / "target" / "lambda"
FUNCTIONS = ["notification-handler", "pipeline-router", "mcp-tools", "gateway-target"]
EVENTS = ROOT / "events"
MEMORY_MB = 128
OUTPUT_BODY = json.dumps({"label": "invoice", "confidence": 0.97, "spans": [[0, 7], [12, 18]]}).encode()


def json_of_length(n: int) -> bytes:
    """A JSON object of exactly n bytes, one string inside."""
    return json.dumps({"text": "a" * (n - 12)}).encode()


# The outputs a job's cost is priced for: small JSON, 64 KiB (inline at the old default, the
# most it allowed), 1 MiB (a pointer at any setting).
COST_OUTPUTS = {"small": OUTPUT_BODY, "medium": json_of_length(64 * 1024), "large": json_of_length(1024 * 1024)}
# The long poll priced: wait_secs=5 on a job whose notification arrives 2 s in.
LONG_POLL_WAIT_S, LONG_POLL_DONE_S = 5, 2.0
COST_REPEATS = 5


# ------------------------------------------------------------------ processes


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
        env = {
            "PATH": os.environ["PATH"], "LANG": "en_US.UTF-8", "TZ": ":UTC", "HOME": str(self.logs.parent),
            "AWS_LAMBDA_RUNTIME_API": runtime.address,
            "AWS_LAMBDA_FUNCTION_NAME": self.name, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(MEMORY_MB),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.name}", "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
            "AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_LOG_LEVEL": "INFO",
            "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
            "AWS_ENDPOINT_URL": endpoint,
            **self.env,
        }
        if roots:
            env["SSL_CERT_FILE"] = roots
            if endpoint.startswith("https:"):
                env["AWS_CA_BUNDLE"] = roots
        log = open(self.logs, "ab")
        started = time.perf_counter_ns()
        proc = subprocess.Popen(self.command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.logs.parent)
        log.close()
        return proc, started


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


# ------------------------------------------------------------------ events


def sns_event(inference_id: str, output_location: str, response_body: bool = False) -> bytes:
    event = json.loads((EVENTS / "sns-success.json").read_text())
    message = json.loads(event["Records"][0]["Sns"]["Message"])
    message["inferenceId"] = inference_id
    message["responseParameters"]["outputLocation"] = output_location
    if response_body:
        import base64
        message["responseBody"] = {"content": base64.b64encode(OUTPUT_BODY).decode(), "message": "", "encoding": "BASE64"}
    event["Records"][0]["Sns"]["Message"] = json.dumps(message)
    event["Records"][0]["Sns"]["MessageId"] = str(uuid.uuid4())
    return json.dumps(event).encode()


def sqs_batch(ids: list[str], output_location: str) -> bytes:
    template = json.loads((EVENTS / "sqs-batch.json").read_text())["Records"][0]
    records = []
    for inference_id in ids:
        sns = json.loads(sns_event(inference_id, output_location))["Records"][0]["Sns"]
        record = copy.deepcopy(template)
        record["messageId"] = str(uuid.uuid4())
        record["body"] = json.dumps({**sns, "Type": "Notification"})
        records.append(record)
    return json.dumps({"Records": records}).encode()


def router_event(execution_id: str, session_id: str) -> bytes:
    event = json.loads((EVENTS / "pipeline-succeeded.json").read_text())
    arn = event["detail"]["pipelineArn"] + "/execution/" + execution_id
    event["id"] = str(uuid.uuid4())
    event["resources"][1] = arn
    event["detail"]["pipelineExecutionArn"] = arn
    event["detail"]["pipelineExecutionDescription"] = f"session_id={session_id}; triggered by the benchmark"
    return json.dumps(event).encode()


def gateway_event(inference_id: str) -> tuple[bytes, str]:
    context = {"custom": {"bedrockAgentCoreToolName": "mcp-tools___check_job_status"}}
    return json.dumps({"inference_id": inference_id}).encode(), json.dumps(context)


# ------------------------------------------------------------------ measuring


class Floor:
    """The emulator's own time for a list of calls: a minimal client (a socket, the request
    bytes prepared beforehand, one kept-alive connection) replays them, with the event's unique
    ids swapped so writes stay fresh."""

    def __init__(self, endpoint: str):
        url = urllib.parse.urlparse(endpoint)
        self.sock = socket.create_connection((url.hostname, url.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        self.host = url.netloc

    def replay(self, calls: list[Call], subs: dict[str, str]) -> float:
        prepared = []
        for call in calls:
            body, target = call.body, call.target
            for old, new in subs.items():
                body, target = body.replace(old.encode(), new.encode()), target.replace(old, new)
            head = [f"{call.method} {target} HTTP/1.1", f"Host: {self.host}", f"Content-Length: {len(body)}"]
            head += [f"{k}: {v}" for k, v in call.headers
                     if k.lower() not in ("host", "content-length", "transfer-encoding", "connection", "expect")]
            prepared.append(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        started = time.perf_counter()
        for request in prepared:
            self.sock.sendall(request)
            if read_message(self.reader) is None:
                raise SystemExit("the emulator closed the floor client's connection")
        return (time.perf_counter() - started) * 1000


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
        return statistics.median(d - f for d, f in zip(self.durations, self.floors)) - self.runtime_ms


def cold_runs(fn: Function, emulator: Emulator, n: int, first_event, tls: bool, scan_cert_dir: bool = False) -> list[dict]:
    """n fresh processes; each is handed its first event as soon as it asks."""
    runs = []
    for i in range(n):
        event, context = first_event(i)
        runtime = RuntimeApi(fn.name)
        inv = runtime.submit(event, context)
        roots = emulator.ca_bundle if tls else None if scan_cert_dir else SYSTEM_ROOTS
        proc, started = fn.spawn(runtime, emulator.https_endpoint if tls else emulator.http_endpoint, roots)
        if not inv.done.wait(60):
            stop(proc, runtime)
            raise SystemExit(f"{fn.name}: no answer to its first event within 60 s (see {fn.logs})")
        answer_of(inv, f"{fn.name} cold start")
        runs.append({"init_ms": (runtime.first_next_ns - started) / 1e6,
                     "first_response_ms": (inv.done_ns - started) / 1e6,
                     "first_event_ms": inv.duration_ms})
        stop(proc, runtime)
    return runs


def warm_runs(emulator: Emulator, runs: list[tuple[Function, list]], runtime_ms: float, warmup: int = 5) -> list[WarmSamples]:
    """One process per function, all alive at once and fed in turn (so drift in the emulator's
    speed hits them alike): `warmup` events each, then every event timed, its calls recorded
    and replayed by the floor client straight after. `runtime_ms`: the Runtime API's share."""
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
                if i < warmup:
                    continue
                out.add(inv.duration_ms, calls, floor.replay(calls, subs))
        for (runtime, proc), out in zip(started, outs):
            out.rss_mb = peak_rss_mb(proc)
            out.cpu_ms = (cpu_ns(proc) - cpu_at[proc.pid]) / 1e6 / len(out.durations)
        return outs
    finally:
        gc.enable()
        for runtime, proc in started:
            stop(proc, runtime)


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


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def typical_calls(calls: list[list[str]]) -> list[str]:
    """The calls of a typical event: the most common list."""
    lists = [tuple(c) for c in calls]
    return list(max(set(lists), key=lists.count))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100, help="warm events per measurement (median)")
    parser.add_argument("--cold", type=int, default=5, help="cold starts per function (median)")
    parser.add_argument("--delay-ms", type=float, default=10.0,
                        help="added to every AWS call in the batch comparison, for the network round trip")
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    parser.add_argument("--cost-only", action="store_true",
                        help="price a job only (about a minute), and replace that section of --out")
    args = parser.parse_args()

    missing = [f for f in FUNCTIONS if not (RELEASE / f).exists()]
    if missing:
        sys.exit(f"missing release builds: {', '.join(missing)} (run `make bench`, which builds them)")
    try:
        import awslambdaric  # noqa: F401
    except ImportError:
        sys.exit("awslambdaric is not installed in this Python (run `make bench`, which installs bench/requirements.txt)")

    started_at = time.time()
    work = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    emulator = Emulator(work / "tls")
    stack = create_resources(emulator.http_endpoint)
    output = f"s3://{IO_BUCKET}/outputs/bench.out"
    prewarm(emulator, stack, output)
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
                 "ASYNC_ENDPOINT_NAME": "mcp-doc-processor-async", "PIPELINE_NAME": "mcp-intent-classifier-pipeline"}
    rust["mcp-tools"] = Function("mcp-tools", [str(RELEASE / "mcp-tools")], {**tools_env, "AUTH_MODE": "none"},
                                 work / "mcp-tools.log")
    rust["gateway-target"] = Function("gateway-target", [str(RELEASE / "gateway-target")], tools_env,
                                      work / "gateway-target.log")
    python_ref = Function("python-reference", [sys.executable, "-m", "awslambdaric", "handler.lambda_handler"],
                          {**handler_env, "PYTHONPATH": str(HERE / "reference")}, work / "python-reference.log")

    report: dict = {"cold": {}, "warm": {}, "batch": {}}
    ids = iter(range(10**9))

    def fresh(prefix: str) -> str:
        return f"{prefix}-{next(ids):08d}"

    if args.cost_only:
        priced = summarize_cost(bench_cost(emulator, stack, rust, python_ref, handler_env, tools_env, work, fresh))
        env = environment(args, time.time() - started_at)
        priced.provenance = (f"This section alone is from `bench/run.py --cost-only` ({env.date}, {env.cores} cores, "
                             f"{env.took_s:.0f} s); the rest of the file is from the run its header names.")
        out = Path(args.out)
        out.write_text(splice_cost(out.read_text() if out.exists() else "# Benchmarks\n", priced))
        emulator.stop()
        print(f"the cost section of {args.out} rewritten; function logs in {work}", file=sys.stderr)
        return 0

    def notification(i, body=False):
        return sns_event(fresh("cold"), output, body), None

    runtime_ms = report["runtime_ms"] = runtime_exchange(args.events, work)

    print("cold starts ...", file=sys.stderr, flush=True)
    for tls in (False, True):
        for fn in (rust["notification-handler"], python_ref):
            report["cold"][(fn.name, tls)] = cold_runs(fn, emulator, args.cold, notification, tls)
    report["cold"][("notification-handler", "scan")] = cold_runs(
        rust["notification-handler"], emulator, args.cold, notification, False, scan_cert_dir=True)
    report["cold"][("pipeline-router", False)] = cold_runs(
        rust["pipeline-router"], emulator, args.cold, lambda i: (router_event(fresh("cold"), "sess-cold"), None), False)
    report["cold"][("gateway-target", False)] = cold_runs(
        rust["gateway-target"], emulator, args.cold, lambda i: gateway_event(fresh("cold")), False)

    print("warm events ...", file=sys.stderr, flush=True)
    n = args.events + 5

    def notifications(body: bool):
        out = []
        for _ in range(n):
            inference_id = fresh("warm")
            out.append((sns_event(inference_id, output, body), None, {inference_id: inference_id.replace("warm", "flor")}))
        return out

    for body in (False, True):
        label = "responseBody" if body else "output in S3"
        ours, ref = warm_runs(emulator, [(rust["notification-handler"], notifications(body)),
                                         (python_ref, notifications(body))], runtime_ms)
        report["warm"][("notification-handler", label)] = ours
        report["warm"][("python-reference", label)] = ref
    router_events = []
    for _ in range(n):
        execution = fresh("exec")
        router_events.append((router_event(execution, "sess-warm"), None, {execution: execution.replace("exec", "flor")}))
    known = fresh("known")
    aws(emulator, "dynamodb").put_item(
        TableName=RESULTS_TABLE, Item={"inference_id": {"S": known}, "status": {"S": "completed"},
                                       "result": {"S": OUTPUT_BODY.decode()}, "ttl": {"N": str(int(time.time()) + 3600)}})
    gateway_events = [(*gateway_event(known), {}) for _ in range(n)]
    router, gateway = warm_runs(emulator, [(rust["pipeline-router"], router_events),
                                           (rust["gateway-target"], gateway_events)], runtime_ms)
    report["warm"][("pipeline-router", "Succeeded event")] = router
    report["warm"][("gateway-target", "check_job_status")] = gateway

    print("mcp-tools through an MCP client ...", file=sys.stderr, flush=True)
    report["mcp"] = bench_mcp(rust["mcp-tools"], emulator, args, known, fresh, runtime_ms)

    print("SQS batches of 100, sequential and concurrent ...", file=sys.stderr, flush=True)
    fixed = FixedLatencyAws(OUTPUT_BODY, args.delay_ms / 1000)
    backends = {"moto": (emulator.http_endpoint, emulator.recorder.mark),
                f"fixed {args.delay_ms:g} ms per call": (fixed.endpoint, lambda: fixed.calls)}
    for backend, (endpoint, count) in backends.items():
        for concurrency in (1, 16):
            fn = Function("notification-handler", [str(RELEASE / "notification-handler")],
                          {**handler_env, "BATCH_CONCURRENCY": str(concurrency)}, work / "batch.log")
            report["batch"][(backend, concurrency)] = batch_run(fn, endpoint, count, output, fresh)
    fixed.stop()

    print("what a job costs (each call's billed size) ...", file=sys.stderr, flush=True)
    report["cost"] = bench_cost(emulator, stack, rust, python_ref, handler_env, tools_env, work, fresh)

    report["criterion"] = criterion()
    report["sizes"] = sizes()
    report["entropy"] = entropy()
    emulator.stop()
    text = render(summarize(report, environment(args, time.time() - started_at)))
    Path(args.out).write_text(text)
    print(text)
    print(f"written to {args.out}; function logs in {work}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------ what a job costs


def notification_message(inference_id: str, output_location: str) -> str:
    """The SNS message SageMaker publishes for a completed job."""
    return json.loads(sns_event(inference_id, output_location))["Records"][0]["Sns"]["Message"]


def sns_delivery(message: str, topic_arn: str) -> bytes:
    """The event SNS invokes a subscribed function with."""
    event = json.loads((EVENTS / "sns-success.json").read_text())
    event["Records"][0]["Sns"].update({"Message": message, "MessageId": str(uuid.uuid4()), "TopicArn": topic_arn})
    return json.dumps(event).encode()


def sqs_delivery(messages: list[dict], queue_arn: str) -> bytes:
    """The event Lambda's poller invokes a function with, from ReceiveMessage's messages."""
    template = json.loads((EVENTS / "sqs-batch.json").read_text())["Records"][0]
    records = [{**copy.deepcopy(template), "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"], "md5OfBody": m["MD5OfBody"], "eventSourceARN": queue_arn} for m in messages]
    return json.dumps({"Records": records}).encode()


@dataclass
class Part:
    """What one step of a job cost: the AWS calls counted and the Lambda invocations."""
    calls: list = field(default_factory=list)
    invocations: list = field(default_factory=list)

    def bill(self) -> cost.Bill:
        return cost.bill(self.calls, self.invocations)


def bench_cost(emulator: Emulator, stack: dict, rust: dict, python_ref: Function, handler_env: dict,
               tools_env: dict, work: Path, fresh) -> dict:
    """Each priced scenario once, every call's billed size recorded: a job end to end (submit,
    SageMaker's output and notification, the notification recorded, one check) for each output
    size and design; the same job with a long-poll check; the SQS buffer's notification path at
    two batch sizes; a training run. Returns the parts of each, unpriced."""
    from mcp import Client

    recorder = emulator.recorder
    recorder.sizing = True
    s3, sns, sqs = aws(emulator, "s3"), aws(emulator, "sns"), aws(emulator, "sqs")
    direct_topic = sns.create_topic(Name="bench-cost-direct")["TopicArn"]
    buffered_topic = sns.create_topic(Name="bench-cost-buffered")["TopicArn"]
    queue_url = sqs.create_queue(QueueName="bench-cost-buffer", Attributes={"VisibilityTimeout": "180"})["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=buffered_topic, Protocol="sqs", Endpoint=queue_arn)
    aws(emulator, "sagemaker").create_pipeline(
        PipelineName=tools_env["PIPELINE_NAME"], RoleArn="arn:aws:iam::123456789012:role/bench",
        PipelineDefinition=json.dumps({"Version": "2020-12-01", "Steps": [], "Parameters": [
            {"Name": n, "Type": "String"} for n in ("InputDataUri", "MaxEpochs", "AccuracyThreshold",
                                                    "TrainingInstanceType")]}))

    designs = {
        "Rust, inline up to 4 KiB (new default)": Function(
            "notification-handler", [str(RELEASE / "notification-handler")],
            {**handler_env, "INLINE_RESULT_MAX_BYTES": "4096"}, work / "cost-handler-4k.log"),
        "Rust, inline up to 64 KiB (old default)": Function(
            "notification-handler", [str(RELEASE / "notification-handler")],
            {**handler_env, "INLINE_RESULT_MAX_BYTES": "65536"}, work / "cost-handler-64k.log"),
        "Python reference (whole result inline up to 64 KiB)": Function(
            python_ref.name, python_ref.command, {**python_ref.env, "INLINE_RESULT_MAX_BYTES": "65536"},
            work / "cost-reference.log"),
    }
    procs = {}
    for label, fn in designs.items():
        runtime = RuntimeApi(fn.name)
        procs[label] = (runtime, fn.spawn(runtime, emulator.http_endpoint)[0])
    router_runtime = RuntimeApi("pipeline-router")
    router_proc, _ = rust["pipeline-router"].spawn(router_runtime, emulator.http_endpoint)
    tools = rust["mcp-tools"]
    tools_runtime = RuntimeApi(tools.name)
    front = FunctionUrl(tools_runtime)
    tools_proc, _ = tools.spawn(tools_runtime, emulator.http_endpoint)
    out: dict = {"jobs": {}, "long_polls": {}, "buffer": {}, "training": None}

    def notify(label: str, inference_id: str, body: bytes, topic: str) -> tuple[Part, Part]:
        """SageMaker's part (the output written, the notification published), then the
        notification recorded by the design's handler, as SNS delivers it to a function. A long
        poll's reads may come in between: they are the check's."""
        def since(mark: int) -> list:
            return [c for c in recorder.since(mark) if c.operation != "DynamoDB GetItem"]

        location = f"s3://{IO_BUCKET}/outputs/{inference_id}.out"
        mark = recorder.mark()
        s3.put_object(Bucket=IO_BUCKET, Key=f"outputs/{inference_id}.out", Body=body)
        message = notification_message(inference_id, location)
        sns.publish(TopicArn=topic, Message=message)
        sagemaker = Part(since(mark))
        mark = recorder.mark()
        inv = procs[label][0].invoke(sns_delivery(message, topic))
        answer_of(inv, label)
        return sagemaker, Part(since(mark), [cost.Invocation(designs[label].name, inv.duration_ms)])

    async def measure():
        async with Client(front.url) as client:
            async def tool(name: str, arguments: dict) -> tuple[dict, Part]:
                mark, before = recorder.mark(), len(front.invocations)
                result = await client.call_tool(name, arguments)
                if getattr(result, "is_error", False):
                    raise SystemExit(f"mcp-tools {name}: {result.content}")
                part = Part(recorder.since(mark), [cost.Invocation("mcp-tools", i.duration_ms)
                                                   for i in front.invocations[before:]])
                return result.structured_content, part

            def fetch(reply: dict, part: Part) -> None:
                """A pointer's output, fetched by the client from its presigned URL."""
                if reply.get("result_url"):
                    mark = recorder.mark()
                    with urllib.request.urlopen(reply["result_url"], timeout=30) as resp:
                        resp.read()
                    part.calls += recorder.since(mark)

            async def submit() -> tuple[str, Part]:
                reply, part = await tool("submit_job", {"document": "Invoice 7: total 12.50 EUR",
                                                        "idempotency_key": fresh("cost")})
                return reply["inference_id"], part

            async def one_check_job(label: str, body: bytes) -> dict:
                inference_id, submitted = await submit()
                sagemaker, notified = notify(label, inference_id, body, direct_topic)
                reply, checked = await tool("check_job_status", {"inference_id": inference_id})
                fetch(reply, checked)
                return {"submit": submitted, "sagemaker": sagemaker, "notification": notified, "check": checked}

            # Each process's first calls open its connections: not what a warm job costs.
            for label in designs:
                await one_check_job(label, OUTPUT_BODY)
            await tool("trigger_training", {"input_data_uri": f"s3://{IO_BUCKET}/train/", "session_id": "sess-warm"})
            for label in designs:
                for size, body in COST_OUTPUTS.items():
                    # The calls are the same each time; the median job by price evens out the durations.
                    runs = sorted([await one_check_job(label, body) for _ in range(COST_REPEATS)],
                                  key=lambda parts: sum(p.bill().total for p in parts.values()))
                    out["jobs"][(label, size)] = runs[len(runs) // 2]
                for size, body in COST_OUTPUTS.items():
                    # The same job, checked by a long poll that the notification ends.
                    inference_id, submitted = await submit()
                    waiting = asyncio.create_task(tool("check_job_status", {"inference_id": inference_id,
                                                                            "wait_secs": LONG_POLL_WAIT_S}))
                    await asyncio.sleep(LONG_POLL_DONE_S)
                    sagemaker, notified = await asyncio.to_thread(notify, label, inference_id, body, direct_topic)
                    reply, polled = await waiting
                    # The notification's own calls happened during the wait: they are its part.
                    theirs = {id(c) for c in notified.calls + sagemaker.calls}
                    polled.calls = [c for c in polled.calls if id(c) not in theirs]
                    fetch(reply, polled)
                    out["long_polls"][(label, size)] = {"submit": submitted, "sagemaker": sagemaker,
                                                        "notification": notified, "check": polled}
            # The SQS buffer: 100 notifications (a backlog) through the queue, taken in batches
            # the way Lambda's poller takes them: ReceiveMessage (10 at most a call) until the
            # batch is full or the queue empty, one invocation, DeleteMessageBatch (10 a call).
            label = next(iter(designs))
            for batch_size in (10, 100):
                ids = [(await submit())[0] for _ in range(100)]
                for inference_id in ids:
                    s3.put_object(Bucket=IO_BUCKET, Key=f"outputs/{inference_id}.out", Body=OUTPUT_BODY)
                    sns.publish(TopicArn=buffered_topic,
                                Message=notification_message(inference_id, f"s3://{IO_BUCKET}/outputs/{inference_id}.out"))
                mark, part = recorder.mark(), Part()
                while True:
                    batch = []
                    while len(batch) < batch_size:
                        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=min(10, batch_size - len(batch)),
                                                  WaitTimeSeconds=0).get("Messages", [])
                        if not got:
                            break
                        batch += got
                    if not batch:
                        break
                    inv = procs[label][0].invoke(sqs_delivery(batch, queue_arn), timeout=300)
                    failed = {f["itemIdentifier"] for f in answer_of(inv, "buffer batch").get("batchItemFailures", [])}
                    if failed:
                        raise SystemExit(f"SQS buffer: {len(failed)} notifications failed")
                    part.invocations.append(cost.Invocation("notification-handler", inv.duration_ms))
                    for i in range(0, len(batch), 10):
                        sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch[i:i + 10])])
                part.calls = recorder.since(mark)
                out["buffer"][batch_size] = {"notifications": len(ids), "path": part}
            # A training run: triggered, its Succeeded event routed, its status checked.
            reply, triggered = await tool("trigger_training", {"input_data_uri": f"s3://{IO_BUCKET}/train/",
                                                               "session_id": "sess-cost"})
            arn = reply["execution_arn"]
            described = aws(emulator, "sagemaker").describe_pipeline_execution(PipelineExecutionArn=arn)
            event = json.loads(router_event(arn.rsplit("/", 1)[1], "sess-cost"))
            event["resources"] = [arn.split("/execution/")[0], arn]
            event["detail"].update({"pipelineArn": arn.split("/execution/")[0], "pipelineExecutionArn": arn,
                                    "pipelineExecutionDescription": described["PipelineExecutionDescription"]})
            mark = recorder.mark()
            inv = router_runtime.invoke(json.dumps(event).encode())
            answer_of(inv, "pipeline-router")
            routed = Part(recorder.since(mark), [cost.Invocation("pipeline-router", inv.duration_ms)])
            _, checked = await tool("check_training_status", {"execution_arn": arn})
            out["training"] = {"trigger": triggered, "event": routed, "check": checked}

    gc.disable()
    try:
        asyncio.run(measure())
    finally:
        gc.enable()
        recorder.sizing = False
        for runtime, proc in procs.values():
            stop(proc, runtime)
        stop(router_proc, router_runtime)
        stop(tools_proc, tools_runtime)
        front.close()
    return out


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


def aws(emulator: Emulator, service: str):
    return boto3.client(service, endpoint_url=emulator.http_endpoint, region_name=REGION,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def prewarm(emulator: Emulator, stack: dict, output: str) -> None:
    """The output object, and one call of each kind the functions make: moto loads a service's
    code on its first call, which would otherwise land in the first cold start measured."""
    s3, ddb = aws(emulator, "s3"), aws(emulator, "dynamodb")
    s3.put_object(Bucket=IO_BUCKET, Key="outputs/bench.out", Body=OUTPUT_BODY)
    s3.get_object(Bucket=IO_BUCKET, Key="outputs/bench.out", Range="bytes=0-10")
    for table, key in ((RESULTS_TABLE, {"inference_id": {"S": "prewarm"}}),
                       (stack["PIPELINE_RESULTS_TABLE"], {"session_id": {"S": "prewarm"}, "execution_arn": {"S": "x"}})):
        ddb.update_item(TableName=table, Key=key, UpdateExpression="SET #s = :s",
                        ConditionExpression="attribute_not_exists(#s) OR #s = :p",
                        ExpressionAttributeNames={"#s": "status"},
                        ExpressionAttributeValues={":s": {"S": "x"}, ":p": {"S": "pending"}}, ReturnValues="ALL_OLD")
        ddb.get_item(TableName=table, Key=key, ConsistentRead=True)
    aws(emulator, "sqs").send_message(QueueUrl=stack["PIPELINE_RESULTS_QUEUE_URL"], MessageBody="{}")
    aws(emulator, "sagemaker-runtime").invoke_endpoint_async(
        EndpointName="mcp-doc-processor-async", InputLocation=f"s3://{IO_BUCKET}/inputs/prewarm.json")
    # and the TLS listener's first handshake
    boto3.client("dynamodb", endpoint_url=emulator.https_endpoint, region_name=REGION, verify=emulator.ca_bundle,
                 aws_access_key_id="testing", aws_secret_access_key="testing").list_tables()


def bench_mcp(fn: Function, emulator: Emulator, args, known: str, fresh, runtime_ms: float) -> dict:
    """Cold start to the first answer, then each operation warm, through the official Python
    MCP client over Streamable HTTP, through a Function URL, to the function."""
    from mcp import Client

    out: dict = {"cold": [], "ops": {}}

    async def first_answer(url):
        async with Client(url) as client:
            await client.list_tools()

    for _ in range(args.cold):
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
        out["cold"].append({"init_ms": (runtime.first_next_ns - started) / 1e6,
                            "first_response_ms": (first.done_ns - started) / 1e6,
                            "first_event_ms": first.duration_ms})
        stop(proc, runtime)
        front.close()

    runtime = RuntimeApi(fn.name)
    front = FunctionUrl(runtime)
    proc, _ = fn.spawn(runtime, emulator.http_endpoint)
    floor = Floor(emulator.http_endpoint)
    pending = fresh("pending")

    async def measure():
        async with Client(front.url) as client:
            # A job that stays pending, for the long poll.
            submitted = await client.call_tool("submit_job", {"document": "never answered", "idempotency_key": pending})
            pending_id = submitted.structured_content["inference_id"]
            ops = {
                "tools/list": lambda i: client.list_tools(),
                "check_job_status": lambda i: client.call_tool("check_job_status", {"inference_id": known}),
                "submit_job": lambda i: client.call_tool(
                    "submit_job", {"document": f"Invoice {i}: total 12.50 EUR", "idempotency_key": fresh("key")}),
            }
            for name, op in ops.items():
                warm = WarmSamples(runtime_ms=runtime_ms)
                client_ms = []
                for i in range(args.events + 5):
                    mark, before = emulator.recorder.mark(), len(front.invocations)
                    t = time.perf_counter()
                    result = await op(i)
                    elapsed = (time.perf_counter() - t) * 1000
                    if getattr(result, "is_error", False):
                        raise SystemExit(f"mcp-tools {name}: {result.content}")
                    calls = emulator.recorder.since(mark)
                    invocations = front.invocations[before:]
                    if i < 5:
                        continue
                    subs = {}
                    if name == "submit_job":
                        inference_id = result.structured_content["inference_id"]
                        subs = {inference_id: inference_id[::-1]}
                    client_ms.append(elapsed)
                    warm.add(sum(inv.duration_ms for inv in invocations), calls,
                             floor.replay(calls, subs) if calls else 0.0)
                out["ops"][name] = (warm, statistics.median(client_ms))
            # With wait_secs: on a finished job it answers at once; on a pending one it polls.
            for label, job, wait in (("check_job_status wait_secs=5, finished job", known, 5),
                                     ("check_job_status wait_secs=3, job stays pending", pending_id, 3)):
                mark = emulator.recorder.mark()
                await client.call_tool("check_job_status", {"inference_id": job, "wait_secs": wait})
                out["ops"][label] = [c.operation for c in emulator.recorder.since(mark)]

    gc.disable()
    try:
        asyncio.run(measure())
        out["rss_mb"] = peak_rss_mb(proc)
    finally:
        gc.enable()
        stop(proc, runtime)
        front.close()
    return out


def criterion() -> dict:
    """Handler CPU per notification, no I/O: the criterion benchmark in shared/benches."""
    subprocess.run(["cargo", "bench", "--locked", "-p", "shared", "--bench", "notification", "--",
                    "--warm-up-time", "1", "--measurement-time", "3"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    out = {}
    for estimates in (ROOT / "target" / "criterion").glob("*/new/estimates.json"):
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


# ------------------------------------------------------------------ from samples to figures


def environment(args, took_s: float) -> results.Environment:
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    return results.Environment(
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), took_s=took_s, cpu=cpu, cores=os.cpu_count(),
        system=f"{platform.system()} {platform.release()}", machine=platform.machine(),
        python=platform.python_version(), boto3=boto3.__version__,
        events=args.events, cold=args.cold, delay_ms=args.delay_ms)


OUTPUT_LABELS = {"small": f"small ({len(OUTPUT_BODY)} B)", "medium": "medium (64 KiB)", "large": "large (1 MiB)"}
# The trickle the buffer's window is weighed at: a million jobs a month, evenly.
TRICKLE_PER_S = 1e6 / (30 * 24 * 3600)
BUFFER_WINDOW_S = {10: 0, 100: 1}


def per_million(dollars: float) -> str:
    return f"${dollars * 1e6:.2f} per million"


def summarize_cost(c: dict) -> results.Cost:
    """The cost table, its headline, and the defaults it weighs, from bench_cost's parts."""
    def job(parts: dict) -> cost.Bill:
        total = cost.Bill()
        for part in parts.values():
            total = total + part.bill()
        return total

    rows = []

    def row(scenario: str, design: str, output: str, b: cost.Bill) -> cost.Bill:
        d = b.dominant()
        rows.append(results.CostRow(scenario, design, output, b.by_service(), b.total, b.total * 1e6,
                                    b.units("write units"), b.units("read units"),
                                    f"{d.what}, {d.quantity:g} {d.unit}: {per_million(d.dollars)}"))
        return b

    designs = list(dict.fromkeys(design for design, _ in c["jobs"]))
    new, old, reference = designs
    jobs = {key: row("job, one check", key[0], OUTPUT_LABELS[key[1]], job(parts)) for key, parts in c["jobs"].items()}
    poll_label = f"job, long-poll check (wait_secs={LONG_POLL_WAIT_S}, notified {LONG_POLL_DONE_S:g} s in)"
    polls = {key: row(poll_label, key[0], OUTPUT_LABELS[key[1]], job(parts)) for key, parts in c["long_polls"].items()}
    base = c["jobs"][(new, "small")]
    buffered = {}
    for batch_size, measured in c["buffer"].items():
        path = measured["path"].bill().scaled(1 / measured["notifications"])
        # SNS's delivery into the queue is a SendMessage the emulator does not see (moto delivers in-process).
        path.add(cost.Line("SQS", "SQS SendMessage (SNS delivering)", 1, "requests", cost.PRICES["sqs_request"]))
        window = BUFFER_WINDOW_S[batch_size]
        buffered[batch_size] = (path, row(
            f"job, one check; SQS buffer, SqsBatchSize {batch_size}, SqsBatchingWindowSecs {window} (a backlog)",
            new, OUTPUT_LABELS["small"], base["submit"].bill() + base["sagemaker"].bill() + path + base["check"].bill()))
    training = job(c["training"]).add(cost.Line("EventBridge", "EventBridge status change event", 1, "events",
                                                cost.PRICES["eventbridge_aws_event"]))
    row("training run: trigger_training, the Succeeded event routed, one check_training_status", "Rust", "n/a",
        training)

    small, medium = jobs[(new, "small")], jobs[(new, "medium")]
    ref_small, ref_medium, old_medium = jobs[(reference, "small")], jobs[(reference, "medium")], jobs[(old, "medium")]
    poll = polls[(new, "small")]

    def term(b: cost.Bill) -> str:
        d = b.dominant()
        return f"{d.what} ({d.quantity:g} {d.unit}, {per_million(d.dollars)})"

    headline = (
        f"A job (submit_job, SageMaker's output and notification, the notification recorded, one check_job_status; "
        f"SNS direct) costs **{per_million(small.total)} jobs** with a small output and {per_million(medium.total)} "
        f"with a 64 KiB one ({cost.PRICES_REGION} on-demand; SageMaker's instances excluded). The dominant term is "
        f"{term(small)}: the input that submit_job stores and the output SageMaker writes. Lambda is "
        f"{per_million(small.by_service()['Lambda'])} of it; a long-poll check instead of a plain one makes it "
        f"{per_million(poll.total)}, the wait billed as duration. The Python reference's design (whole result "
        f"inline, one Lambda per notification) costs {per_million(ref_small.total)} with a small output "
        f"({ref_small.total / small.total:.2f}x) and {per_million(ref_medium.total)} with a 64 KiB one "
        f"({ref_medium.total / medium.total:.1f}x), its dominant term then {term(ref_medium)}; the Rust handler at "
        f"the old 64 KiB limit costs the same {per_million(old_medium.total)}: the difference is where the result "
        f"is stored, not the language.")

    def units(b: cost.Bill) -> str:
        return f"{per_million(b.total)} ({b.units('write units'):g} write units, {b.units('read units'):g} read units)"

    def saved(before: float, after: float) -> str:
        if after <= before:
            return f"{(before - after) / before:.0%} ({per_million(before - after)})"
        ratio = after / before
        return f"none: costs {ratio:.1f}x as much" if ratio >= 2 else f"none: costs {ratio - 1:.0%} more"

    def same_units(a: cost.Bill, b: cost.Bill) -> bool:
        """The same calls at the same units: only the Lambda durations differ, by noise."""
        return all(a.units(u) == b.units(u) for u in ("write units", "read units", "requests"))

    changes = []
    for size in COST_OUTPUTS:
        for label, table in (("one check", jobs), ("long-poll check", polls)):
            before, after = table[(old, size)], table[(new, size)]
            changes.append(results.CostChange(
                "INLINE_RESULT_MAX_BYTES 65536 → 4096", f"{OUTPUT_LABELS[size]} output, {label}", units(before),
                units(after), "none (the same calls and units)" if same_units(before, after)
                else saved(before.total, after.total)))
    (path10, _), (path100, _) = buffered[10], buffered[100]

    def invocations(path: cost.Bill) -> float:
        return sum(l.quantity for l in path.lines if l.what == "notification-handler requests")

    changes.append(results.CostChange(
        "SqsBatchSize 10, no window (kept) against 100 with a 1 s window", "a backlog of 100 notifications (measured)",
        f"{per_million(path10.total)} notifications ({invocations(path10):.2f} invocations each)",
        f"{per_million(path100.total)} notifications ({invocations(path100):.2f} invocations each)",
        saved(path10.total, path100.total)))
    trickle = cost.messages_per_invocation(100, 1, TRICKLE_PER_S)
    request = cost.PRICES["lambda_request"]
    waiting = 1 * cost.lambda_second(128)
    changes.append(results.CostChange(
        "SqsBatchSize 10, no window (kept) against 100 with a 1 s window",
        "a trickle, a million jobs a month (model)",
        f"1 invocation a notification: {per_million(request)} in requests",
        f"{trickle:.2f} notifications an invocation: {per_million(request / trickle)} in requests, and each "
        f"notification recorded up to 1 s later: {per_million(waiting)} of a waiting check's duration",
        saved(request, request / trickle + waiting)))
    # The backoff: a wait of 20 s (a plain call's longest) on a job that completes at a random moment in it.
    polled = c["long_polls"][(new, "small")]["check"]
    reads = [call for call in polled.calls if call.operation == "DynamoDB GetItem"]
    pending_units = cost.read_units(reads[0].read_sizes, reads[0].consistent)
    done_units = cost.read_units(reads[-1].read_sizes, reads[-1].consistent)
    schedules = {name: cost.expected_long_poll(delays, 20, pending_units, done_units)
                 for name, delays in cost.POLL_SCHEDULES.items()}
    built_name, built = next(iter(schedules.items()))
    for name, other in list(schedules.items())[1:]:
        changes.append(results.CostChange(
            f"long-poll backoff {built_name} (kept) against {name}",
            "wait_secs=20 on a job that completes at a random moment in it (model; read sizes measured)",
            f"{per_million(built['dollars'])} ({built['reads']:.1f} reads, {built['seconds']:.2f} s waited)",
            f"{per_million(other['dollars'])} ({other['reads']:.1f} reads, {other['seconds']:.2f} s waited)",
            saved(built["dollars"], other["dollars"])))

    notes = [
        "SageMaker's own charges (the endpoint's instances, the pipeline's jobs) are excluded; its requests here "
        "(InvokeEndpointAsync, StartPipelineExecution, DescribePipelineExecution) have no per-request fee. "
        "SageMaker's writing the output to S3 and publishing the notification are counted: the bench makes both "
        "calls as SageMaker would, and the bucket's and the topic's owner pays for them.",
        "Lambda: each invocation's measured duration on this machine against moto, billed per ms at 128 MB "
        "(arm64); a real service answers at its own speed, and moto answers a batch's calls one at a time. "
        "mcp-tools streams its replies (RESPONSE_STREAM), and through this bench's Runtime API each of its "
        "invocations takes about 40 ms longer than a buffered reply did: these durations include that. Warm "
        "invocations only: a cold start's init is billed too for a custom runtime, once per instance.",
        "DynamoDB units are from the item sizes the emulator saw, by DynamoDB's published rules: a write the "
        "larger of the item before and after per 1 KB, a strongly consistent read per 4 KB (every read here is "
        "one). Every conditional write here succeeds; a refused one is billed too.",
        "The SQS buffer's rows: the notification path per notification of a backlog of 100, taken as Lambda's "
        "poller takes it (ReceiveMessage 10 at most a call until the batch is full, one invocation, "
        "DeleteMessageBatch 10 a call), plus one SendMessage for SNS's delivery into the queue (assumed billed "
        "to the queue's owner; not confirmed). SNS's deliveries to Lambda and to SQS are free. The pollers' "
        "empty ReceiveMessage calls on an idle queue are a cost per month, not per job, and are left out.",
        "The Python reference has a notification handler only: its design's submit and check are ours.",
        "Left out: storage (S3 objects, DynamoDB items until their TTL), data transfer out of AWS (an output "
        "leaves once, inline or by URL), CloudWatch Logs ingestion of each invocation's log lines and the custom "
        "metrics, KMS requests for the topics' AWS managed key, free tiers, and the client's side (an inline "
        "result also lands in an agent's context).",
    ]
    return results.Cost(region=cost.PRICES_REGION, checked=cost.PRICES_CHECKED, prices=dict(cost.PRICES),
                        sources=list(cost.SOURCES), rows=rows, headline=headline, changes=changes, notes=notes)


def summarize(r: dict, env: results.Environment) -> results.Results:
    """The figures of one run (medians, ratios, the targets) from what main() collected."""
    over = {False: "HTTP", True: "HTTPS", "scan": "HTTP, roots read from /etc/ssl/certs"}
    cold = r["cold"]

    def cold_start(function: str, over_: str, runs: list[dict]) -> results.ColdStart:
        return results.ColdStart(function, over_, median_of(runs, "init_ms"), median_of(runs, "first_event_ms"),
                                 median_of(runs, "first_response_ms"))

    colds = [cold_start(name, over[tls], runs) for (name, tls), runs in cold.items()]
    colds.append(cold_start("mcp-tools (MCP client, tools/list)", "HTTP", r["mcp"]["cold"]))
    ratio = {}
    for tls in (False, True):
        ours, ref = cold[("notification-handler", tls)], cold[("python-reference", tls)]
        ratio[over[tls]] = results.ColdRatio(*(median_of(ref, k) / median_of(ours, k)
                                               for k in ("init_ms", "first_response_ms")))
    tls_cost = {name: median_of(cold[(name, True)], "first_event_ms") - median_of(cold[(name, False)], "first_event_ms")
                for name in ("notification-handler", "python-reference")}

    def warm(name: str, label: str, w: WarmSamples) -> results.Warm:
        return results.Warm(name, label, typical_calls(w.calls), w.median, w.floor, statistics.median(w.server),
                            w.overhead, w.cpu_ms, w.rss_mb)

    warms = [warm(name, label, w) for (name, label), w in r["warm"].items()]
    comparisons = []
    for label in ("output in S3", "responseBody"):
        ours, ref = r["warm"][("notification-handler", label)], r["warm"][("python-reference", label)]
        comparisons.append(results.WarmComparison(
            label, ours.overhead, ref.overhead,
            ref.overhead / ours.overhead if ours.overhead > 0 and ref.overhead > 0 else None, ours.median, ref.median))
    ops = {name: v for name, v in r["mcp"]["ops"].items() if isinstance(v, tuple)}
    mcp = [results.McpOperation(name, typical_calls(w.calls), w.median, w.floor, w.overhead, client_ms)
           for name, (w, client_ms) in ops.items()]
    polls = {name: v for name, v in r["mcp"]["ops"].items() if not isinstance(v, tuple)}
    b = r["batch"]
    batches = []
    for backend in dict.fromkeys(k for k, _ in b):
        seq, conc = b[(backend, 1)]["ms"], b[(backend, 16)]["ms"]
        batches.append(results.Batch(backend, seq, conc, seq / conc, conc / 100))

    # The targets, each against what this run measured.
    ours_warm = [w for (name, _), w in r["warm"].items() if name != "python-reference"]
    init = max(median_of(cold[("notification-handler", tls)], "init_ms") for tls in (False, True))
    worst_overhead = max([w.overhead for w in ours_warm] + [w.overhead for w, _ in ops.values()])
    cpu = max(r["criterion"].values(), default=float("nan"))
    zips = max((z for z, _ in r["sizes"].values()), default=float("nan"))
    rss = max([w.rss_mb for w in ours_warm] + [r["mcp"]["rss_mb"]])
    fixed = next(k for k, _ in b if k != "moto")
    speedup = b[(fixed, 1)]["ms"] / b[(fixed, 16)]["ms"]
    init_ratio = min(x.init for x in ratio.values())
    targets = [
        results.Target("notification-handler init ≥ 40x shorter than the reference", init_ratio, "{:.0f}x",
                       init_ratio >= 40),
        results.Target("notification-handler init < 10 ms (HTTP and HTTPS)", init, "ms", init < 10),
        results.Target("warm overhead above the floor ≤ 1 ms per event (worst of our rows)", worst_overhead, "ms",
                       worst_overhead <= 1),
        results.Target("handler CPU per notification < 20 µs", cpu, "{:.1f} µs", cpu < 20),
        results.Target("each zip ≤ 5 MB", zips, "{:.2f} MB", zips <= 5),
        results.Target("peak RSS ≤ 32 MB (worst function)", rss, "{:.1f} MB", rss <= 32),
        results.Target(f"SQS batch of 100 ≥ 5x faster concurrent ({fixed})", speedup, "{:.1f}x", speedup >= 5),
    ]
    return results.Results(
        environment=env, targets=targets, cold=colds, cold_ratio=ratio, tls_cost_ms=tls_cost,
        runtime_ms=r["runtime_ms"], warm=warms, warm_comparisons=comparisons, mcp=mcp, mcp_rss_mb=r["mcp"]["rss_mb"],
        polls=polls, batch_calls=b[("moto", 16)]["calls"], batches=batches, criterion_us=r["criterion"],
        entropy=[results.Entropy(label, first, second) for label, (first, second) in r["entropy"].items()],
        sizes_mb=r["sizes"], cost=summarize_cost(r["cost"]) if r.get("cost") else None)


if __name__ == "__main__":
    sys.exit(main())
