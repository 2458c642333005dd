#!/usr/bin/env python3
"""The async loop on the local stack (run by `make demo`).

Runs the functions under `cargo lambda watch`, then
1. inference outcomes: puts model outputs where SageMaker would, feeds the sample SNS/SQS
   events of events/ to notification-handler through `cargo lambda invoke`, and prints what
   the results table holds;
2. pipeline runs: starts two runs on the SageMaker stand-in (one passes, one fails its
   evaluation); the stand-in delivers their EventBridge events to pipeline-router, and the
   demo prints the pipeline results table and the completion messages on the queue.
Expects the environment of `scripts/local_stack.py --sagemaker ... --lambda`.
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"
FUNCTION = "notification-handler"
PASSED_ENV = (
    "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SAGEMAKER", "AWS_REGION", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED", "RESULTS_TABLE", "PIPELINE_RESULTS_TABLE",
    "PIPELINE_RESULTS_QUEUE_URL",
)


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"cargo lambda watch exited early with {proc.returncode}; see .local/watch.log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"cargo lambda watch did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def put_outputs(s3, bucket: str) -> None:
    """What SageMaker would have written for the sample events."""
    objects = {
        "outputs/5b0e4c9d-demo-0001.out": json.dumps({"label": "invoice", "confidence": 0.97,
                                                       "fields": {"total": "1,250.00", "currency": "EUR"}}),
        "outputs/7d2a6e1f-demo-0003.out": json.dumps({"pages": ["lorem ipsum " * 100] * 500}),
        "outputs/demo-seed-0005/output": json.dumps({"summary": "Quarterly report, 12 pages"}),
        "failures/9e8d7c6b-demo-0004-error.out": "Traceback (most recent call last):\n"
                                                 "  File \"inference.py\", line 42, in predict\n"
                                                 "ValueError: document is empty\n",
        "outputs/demo-0008.out": json.dumps({"label": "receipt", "confidence": 0.88}),
    }
    for key, body in objects.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body.encode())


def invoke(port: int, event: str) -> tuple[bool, str]:
    proc = subprocess.run(
        ["cargo", "lambda", "invoke", FUNCTION, "--invoke-address", "127.0.0.1",
         "--invoke-port", str(port), "--data-file", str(EVENTS / event), "--output-format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    if proc.returncode == 0:
        return True, json.dumps(json.loads(proc.stdout))
    # cargo lambda prints the function error as "× <message>" continued on "│" lines.
    lines = [l.strip() for l in proc.stderr.splitlines()]
    start = next((i for i, l in enumerate(lines) if l.startswith("×")), None)
    if start is None:
        return False, proc.stderr.strip()[-300:]
    message = [lines[start].lstrip("× ")]
    message += [l.lstrip("│ ") for l in lines[start + 1:] if l.startswith("│")]
    return False, " ".join(message)


def describe(item: dict) -> str:
    status = item["status"]["S"]
    if "result" in item:
        detail = "result inline: " + json.dumps(plain(item["result"]))[:80]
    elif status == "completed":
        detail = "result by pointer: " + item["output_location"]["S"]
    else:
        detail = "reason: " + item.get("failure_reason", {}).get("S", "")[:70]
    return f"{item['inference_id']['S']:<26} {status:<10} {detail}"


def plain(value: dict):
    (kind, v), = value.items()
    if kind == "M":
        return {k: plain(x) for k, x in v.items()}
    if kind == "L":
        return [plain(x) for x in v]
    if kind == "N":
        return float(v) if "." in v else int(v)
    if kind == "NULL":
        return None
    return v


def pipeline_runs(ddb, sqs) -> bool:
    sagemaker = boto3.client("sagemaker", endpoint_url=os.environ["AWS_ENDPOINT_URL_SAGEMAKER"],
                             region_name=os.environ["AWS_REGION"])
    table, queue_url = os.environ["PIPELINE_RESULTS_TABLE"], os.environ["PIPELINE_RESULTS_QUEUE_URL"]
    runs = {"sess-demo-1": "0.90", "sess-demo-2": "0.99"}
    print("\nStarting two pipeline runs on the SageMaker stand-in (AccuracyThreshold 0.90 and 0.99):")
    for session_id, threshold in runs.items():
        arn = sagemaker.start_pipeline_execution(
            PipelineName="mcp-intent-classifier-pipeline",
            PipelineExecutionDescription=f"session_id={session_id}; triggered at "
                                         f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
            PipelineParameters=[{"Name": "InputDataUri", "Value": "s3://mcp-sagemaker-async-io/train/"},
                                {"Name": "AccuracyThreshold", "Value": threshold}],
        )["PipelineExecutionArn"]
        print(f"  {session_id}: {arn}")
    deadline = time.time() + 300  # the first event also compiles pipeline-router
    items = []
    while time.time() < deadline:
        items = ddb.scan(TableName=table)["Items"]
        if len(items) == len(runs) and all(i["status"]["S"] != "Executing" for i in items):
            break
        time.sleep(1)
    print(f"\nItems in {table} (written by pipeline-router from the stand-in's EventBridge events):")
    for item in sorted(items, key=lambda i: i["session_id"]["S"]):
        reason = item.get("failure_reason", {}).get("S", "")
        print(f"  {item['session_id']['S']:<12} {item['status']['S']:<10} {reason}")
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
    print(f"\nCompletion messages on {queue_url.rsplit('/', 1)[-1]}:")
    for m in messages:
        body = json.loads(m["Body"])
        print(f"  {body['session_id']:<12} {body['status']:<10} event {body['event_id']}")
    statuses = sorted(i["status"]["S"] for i in items)
    return statuses == ["Failed", "Succeeded"] and len(messages) == 2


def main() -> int:
    region, endpoint = os.environ["AWS_REGION"], os.environ["AWS_ENDPOINT_URL"]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region)
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name=region)
    table, bucket = os.environ["RESULTS_TABLE"], os.environ["IO_BUCKET"]

    put_outputs(s3, bucket)
    # submit_job writes a pending item before it invokes the endpoint.
    ddb.put_item(TableName=table, Item={
        "inference_id": {"S": "demo-success-0001"}, "status": {"S": "pending"},
        "submitted_at": {"S": "2026-11-20T10:14:10.000Z"}, "endpoint_name": {"S": "mcp-doc-processor-async"},
    })

    local = ROOT / ".local"
    local.mkdir(exist_ok=True)
    env_file = local / "watch.env"
    env_file.write_text("".join(f"{k}={os.environ[k]}\n" for k in PASSED_ENV if k in os.environ))
    port = int(os.environ["LAMBDA_PORT"])
    print(f"Starting the functions under cargo lambda watch on 127.0.0.1:{port} (log: .local/watch.log)")
    with open(local / "watch.log", "w") as log:
        watch = subprocess.Popen(
            ["cargo", "lambda", "watch", "--invoke-address", "127.0.0.1", "--invoke-port", str(port),
             "--ignore-changes", "--env-file", str(env_file)],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, watch, 300)
        print("\nDelivering the sample notifications:")
        unexpected = 0
        for event in sorted(p.name for p in EVENTS.glob("sns-*.json")) + ["sqs-batch.json"]:
            ok, reply = invoke(port, event)
            expected_ok = "-bad-" not in event
            unexpected += ok != expected_ok
            mark = "ok   " if ok else "error"
            print(f"  {event:<32} {mark} {reply[:160]}")
        print(f"\nItems in {table}:")
        for item in sorted(ddb.scan(TableName=table)["Items"], key=lambda i: i["inference_id"]["S"]):
            print("  " + describe(item))
        print("\nBad events were refused with the reason (Lambda would retry them, then send them to the\n"
              "failure destination); the SQS batch reported only its bad message.")
        if not pipeline_runs(ddb, boto3.client("sqs", endpoint_url=endpoint, region_name=region)):
            unexpected += 1
        if unexpected:
            print(f"\n{unexpected} step(s) did not behave as expected", file=sys.stderr)
            return 1
        return 0
    finally:
        watch.terminate()
        try:
            watch.wait(timeout=10)
        except subprocess.TimeoutExpired:
            watch.kill()


if __name__ == "__main__":
    sys.exit(main())
