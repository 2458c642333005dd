#!/usr/bin/env python3
"""The async loop on the local stack (run by `make demo`).

Everything runs for real on 127.0.0.1: moto (S3, DynamoDB, SQS), the SageMaker stand-in (an
async endpoint with a small model, a training pipeline), and the four functions under
`cargo lambda watch`. The demo is an MCP client, like an agent:
1. submit_job / check_job_status: the stand-in endpoint reads the input, runs the model, writes
   the output and notifies notification-handler, which records it and announces it on an
   EventBridge bus (a rule delivers the events to an SQS queue here); check_job_status waits
   for it, streaming progress notifications, and returns it; a large output comes back as a
   resource_link, read with resources/read over the same connection; a job started as a task has
   its completion pushed on a `subscriptions/listen`, with no poll;
2. trigger_training / check_training_result: the stand-in pipeline runs, its EventBridge events
   reach pipeline-router, which records the outcome and sends it to SQS;
3. provenance: check_training_status names the model package the run registered, and
   get_model_provenance walks the lineage the stand-in recorded (what built it, what it fed);
4. a run that asks a person: a pipeline whose CallbackStep asks before the model is
   registered (dev/pipelines/approval.json); its task goes input_required with the question as
   a form, the client's elicitation handler answers it (tasks/update), and the run goes on to
   register the model;
5. the sample events of events/ through `cargo lambda invoke`: every notification case,
   including the bad ones;
6. your models as tools: a second mcp-tools with the example tool catalog
   (infra/catalog.example.json): two models and a pipeline, each a tool with its own schema, an
   argument the schema refuses, and a run under the pipeline's own parameter names;
7. MCP Events: a webhook subscribed (its callback verified by a signed challenge), then, with
   no client connected, a job's outcome POSTed to the local receiver, signed; events/poll
   from a cursor returns it too.
Expects the environment of `scripts/local_stack.py --sagemaker ... --standin-runtime --lambda`.
"""

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
from fastmcp import Client as TaskClient
from fastmcp_tasks import call_tool_task
from mcp import Client

from catalog import CatalogError, check, served
from lambda_watch import ROOT, WatchError, free_port, start_watch, stop, wait_started
from listen_client import Listen
from pydantic import TypeAdapter
from webhook_receiver import EventsRequest, Receiver, new_secret, signed_by

EVENTS = ROOT / "events"


def section(title: str) -> None:
    print(f"\n== {title}")


async def jobs(url: str) -> bool:
    documents = [
        {"document": "Invoice 2026-118 from Example GmbH, total 1,250.00 EUR, due 2026-12-15"},
        {"payload": {"text": "Quarterly report on sales", "pages": 12}, "options": {"language": "en"}},
        {"document": "Please FAIL this one"},
    ]
    async with Client(url, mode="auto") as client:
        print(f"connected: {client.server_info.name} {client.server_info.version}, protocol {client.protocol_version}")
        ids = []
        for args in documents:
            job = (await client.call_tool("submit_job", args)).structured_content
            ids.append(job["inference_id"])
            print(f"submit_job {json.dumps(args)[:60]:<62} -> {job['inference_id']} {job['status']}")
        outcomes = []
        for inference_id in ids:
            started = time.monotonic()

            async def progress(value, total, message):
                print(f"  progress at {time.monotonic() - started:4.1f} s: {message}")

            status = await client.call_tool("check_job_status", {"inference_id": inference_id, "wait_secs": 20},
                                            progress_callback=progress)
            s = status.structured_content
            detail = json.dumps(s.get("result")) if s.get("result") else s.get("failure_reason", "")
            print(f"check_job_status {inference_id} -> {s['status']:<9} {detail[:90]}")
            outcomes.append(s["status"])
    return outcomes == ["completed", "completed", "failed"]


def pushed(url: str) -> bool:
    """A job started as a task, its completion pushed on a listen: nothing asks for it."""
    async def started() -> str:
        async with TaskClient(url) as client:
            task = await call_tool_task(client, "submit_job", {"document": "Receipt 7: total 3.20 EUR"})
            return task.task_id

    task_id = asyncio.run(started())
    print(f"submit_job as a task -> {task_id[:36]}... working; subscriptions/listen naming it")
    opened = time.monotonic()
    listen = Listen(url, [task_id])
    messages = listen.ended(60)
    statuses = []
    for at, message in listen.messages:
        params = message.get("params", {})
        if message.get("method") == "notifications/subscriptions/acknowledged":
            print(f"  {at - opened:4.1f} s acknowledged: {len(params['notifications']['taskIds'])} task")
        elif message.get("method") == "notifications/tasks":
            statuses.append(params["status"])
            said = params.get("statusMessage") or json.dumps(params["result"]["structuredContent"].get("result"))
            print(f"  {at - opened:4.1f} s notifications/tasks: {params['status']:<9} {said[:70]}")
        elif "result" in message:
            print(f"  {at - opened:4.1f} s final result: the listen ends, its task done")
    return listen.status == 200 and statuses[-1:] == ["completed"] and "result" in messages[-1]


async def large_output(url: str) -> bool:
    """A job whose output is too large to inline: a resource_link, read back over MCP."""
    words = " ".join(f"line-{i} of the annual report" for i in range(120))
    async with Client(url, mode="auto") as client:
        job = (await client.call_tool("submit_job", {"document": words, "options": {"tokens": True}})).structured_content
        status = await client.call_tool("check_job_status", {"inference_id": job["inference_id"], "wait_secs": 20})
        s = status.structured_content
        links = [block for block in status.content if block.type == "resource_link"]
        print(f"check_job_status {job['inference_id']} -> {s['status']}, no inline result; result_url (presigned, "
              f"15 min) and {len(links)} resource_link")
        if s["status"] != "completed" or len(links) != 1:
            return False
        link = links[0]
        print(f"  resource_link {link.uri} ({link.mime_type}, {link.size} bytes)")
        read = await client.read_resource(link.uri)
        contents = read.contents[0]
        body = contents.text.encode() if hasattr(contents, "text") else base64.b64decode(contents.blob)
        output = json.loads(body)
        print(f"  resources/read -> {len(body)} bytes over MCP: label {output['label']}, {len(output['tokens'])} tokens")
        return len(body) == link.size


def completion_bus(events, sqs, name: str = "demo-completions") -> tuple[str, str]:
    """A bus for the jobs' completion events, and a rule that delivers them to a queue, as a
    consumer of the events would set it up: the bus name and the queue's URL."""
    events.create_event_bus(Name=name)
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="jobs-to-queue", EventBusName=name, EventPattern=json.dumps(
        {"source": ["mcp.async-jobs"], "detail-type": ["Async Job Completed", "Async Job Failed"]}))
    events.put_targets(Rule="jobs-to-queue", EventBusName=name, Targets=[{"Id": "queue", "Arn": queue_arn}])
    return name, queue_url


def completion_events(sqs, queue_url: str) -> bool:
    found = []
    while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        found.extend(json.loads(m["Body"]) for m in messages)
    print(f"completion events delivered by the rule to {queue_url.rsplit('/', 1)[-1]}:")
    for event in found:
        print(f"  {event['detail-type']:<20} {json.dumps(event['detail'])[:150]}")
    return sorted(e["detail-type"] for e in found) == ["Async Job Completed", "Async Job Completed", "Async Job Failed"]


async def training(url: str, sqs, queue_url: str) -> tuple[bool, str | None]:
    """Runs two sessions' training; whether they ended as expected, and the run that succeeded."""
    async with Client(url, mode="legacy") as client:
        for session_id, threshold in (("sess-demo-1", 0.90), ("sess-demo-2", 0.99)):
            run = (await client.call_tool("trigger_training", {
                "input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": session_id,
                "max_epochs": 10, "accuracy_threshold": threshold})).structured_content
            print(f"trigger_training {session_id} (AccuracyThreshold {threshold}) -> {run['execution_arn'].rsplit('/', 1)[-1]}")
        finished = {}
        deadline = time.time() + 300  # the first event also builds pipeline-router
        while time.time() < deadline and len(finished) < 2:
            for session_id in ("sess-demo-1", "sess-demo-2"):
                runs = (await client.call_tool("check_training_result", {"session_id": session_id})).structured_content["runs"]
                if runs and runs[0]["status"] not in ("pending", "Executing"):
                    finished[session_id] = runs[0]
            await asyncio.sleep(0.5)
        for session_id, run in sorted(finished.items()):
            print(f"check_training_result {session_id} -> {run['status']:<9} {run.get('failure_reason', '')}")
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    print(f"completion messages on {queue_url.rsplit('/', 1)[-1]}:")
    for m in messages:
        body = json.loads(m["Body"])
        print(f"  {body['session_id']:<12} {body['status']:<10} event {body['event_id']}")
    expected = sorted(r["status"] for r in finished.values()) == ["Failed", "Succeeded"] and len(messages) == 2
    succeeded = next((r["execution_arn"] for r in finished.values() if r["status"] == "Succeeded"), None)
    return expected, succeeded


APPROVAL_PIPELINE = "mcp-approval-pipeline"


def approval_pipeline() -> None:
    """The stand-in's copy of a pipeline whose CallbackStep asks before it registers the model
    (dev/pipelines/approval.json; docs/approvals.md is the author's side)."""
    sagemaker = boto3.client("sagemaker", endpoint_url=os.environ["AWS_ENDPOINT_URL_SAGEMAKER"],
                             region_name=os.environ["AWS_REGION"])
    definition = (ROOT / "dev" / "pipelines" / "approval.json").read_text()
    sagemaker.create_pipeline(PipelineName=APPROVAL_PIPELINE, RoleArn="arn:aws:iam::123456789012:role/demo",
                              ClientRequestToken="demo-approval-pipeline-0000000000001",
                              PipelineDefinition=definition)


async def asks_a_person(url: str) -> bool:
    """A run that stops for a person's approval: its task goes input_required with the question,
    the client's elicitation handler answers it through tasks/update, and the run goes on. Behind
    the approval gate it then asks for the model it registered to be approved."""
    async def approve(message, response_type, params, context):
        print(f"  the run asks: {message}")
        fields = params.requested_schema["properties"]
        if "deploy_to" in fields:
            print(f"  form fields: {', '.join(fields)}; the handler answers deploy_to=staging")
            return {"deploy_to": "staging", "note": "approved in the demo"}
        print(f"  form fields: {', '.join(fields)}; the handler accepts: the model is approved")
        return {"comment": "evaluation reviewed in the demo"}

    async with TaskClient(url, elicitation_handler=approve) as client:
        task = await call_tool_task(client, "trigger_training", {
            "input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": "sess-demo-approval"})
        print(f"trigger_training as a task on {APPROVAL_PIPELINE} -> working")
        while (status := await task.status()).status == "working":
            await asyncio.sleep(0.3)
        print(f"tasks/get -> {status.status_message}")
        result = await task.result()
    s = result.structured_content
    steps = ", ".join(f"{step['name']} {step['status']}" for step in s["steps"])
    print(f"tasks/get -> completed: {s['status']} ({steps})")
    print(f"registered {short(s.get('model_package_arn') or '-')}: {s.get('model_approval_status')}")
    return (status.status == "input_required" and s["status"] == "Succeeded"
            and s.get("model_approval_status") == "Approved"
            and any(step["name"] == "ApproveModel" and step["status"] == "Succeeded" for step in s["steps"]))


def short(arn: str) -> str:
    """An ARN without its account prefix."""
    return arn.split(":", 5)[-1] if arn.startswith("arn:") else arn


async def provenance(url: str, execution_arn) -> bool:
    if not execution_arn:
        print("no run succeeded, so no model was registered")
        return False
    async with Client(url, mode="auto") as client:
        status = (await client.call_tool("check_training_status", {"execution_arn": execution_arn})).structured_content
        package = status.get("model_package_arn")
        print(f"check_training_status {execution_arn.rsplit('/', 1)[-1]} -> {status['status']}, registered {short(package or '-')}")
        if not package:
            return False
        ok = True
        for direction, depth in (("upstream", 3), ("downstream", 2)):
            result = await client.call_tool("get_model_provenance", {
                "model_package_arn": package, "direction": direction, "max_depth": depth})
            answer = result.structured_content
            if result.is_error or not answer:
                print(f"get_model_provenance {direction}: {result.content[0].text}")
                ok = False
                continue
            root = answer["root"]
            run = root.get("pipeline_execution") or {}
            print(f"get_model_provenance {direction} (max_depth {depth}): {short(root['arn'])} {root.get('status')}, "
                  f"{root.get('approval_status')}; made by {run.get('pipeline_name')} run "
                  f"{run.get('execution_arn', '?').rsplit('/', 1)[-1]} ({run.get('status')}, session {run.get('session_id')})")
            for node in answer["nodes"]:
                what = node.get("artifact_type") or node.get("lineage_type") or ""
                where = node.get("source_uri") or node.get("name") or ""
                print(f"  depth {node['depth']} {node['kind']:<16} {what:<21} {where[:120]}")
            kinds = sorted({e.get("association_type", "?") for e in answer["edges"]})
            print(f"  {len(answer['edges'])} edges ({', '.join(kinds)}), truncated {answer['truncated']}")
            ok = ok and bool(answer["nodes"])
    return ok


def invoke(port: int, event: str) -> tuple[bool, str]:
    proc = subprocess.run(
        ["cargo", "lambda", "invoke", "notification-handler", "--invoke-address", "127.0.0.1",
         "--invoke-port", str(port), "--data-file", str(EVENTS / event), "--output-format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"},
    )
    if proc.returncode == 0:
        return True, json.dumps(json.loads(proc.stdout))
    # cargo lambda prints the function error as "× <message>" continued on "│" lines.
    lines = [line.strip() for line in proc.stderr.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith("×")), None)
    if start is None:
        return False, proc.stderr.strip()[-300:]
    message = [lines[start].lstrip("× ")] + [line.lstrip("│ ") for line in lines[start + 1:] if line.startswith("│")]
    return False, " ".join(message)


def sample_events(port: int, s3, ddb, table: str, bucket: str) -> bool:
    objects = {  # what SageMaker would have written for the sample events
        "outputs/5b0e4c9d-demo-0001.out": json.dumps({"label": "invoice", "confidence": 0.97}),
        "outputs/7d2a6e1f-demo-0003.out": json.dumps({"pages": ["lorem ipsum " * 100] * 500}),
        "outputs/demo-seed-0005/output": json.dumps({"summary": "Quarterly report, 12 pages"}),
        "failures/9e8d7c6b-demo-0004-error.out": "Traceback (most recent call last):\nValueError: document is empty\n",
        "outputs/demo-0008.out": json.dumps({"label": "receipt", "confidence": 0.88}),
    }
    for key, body in objects.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body.encode())
    unexpected = 0
    for event in sorted(p.name for p in EVENTS.glob("sns-*.json")) + ["sqs-batch.json"]:
        ok, reply = invoke(port, event)
        unexpected += ok != ("-bad-" not in event)
        print(f"  {event:<32} {'ok   ' if ok else 'error'} {reply[:150]}")
    print(f"items of {table} written from them:")
    for item in sorted(ddb.scan(TableName=table)["Items"], key=lambda i: i["inference_id"]["S"]):
        if not item["inference_id"]["S"].startswith("demo-"):
            continue
        status = item["status"]["S"]
        if "result" in item:
            detail = "result inline"
        elif status == "completed":
            detail = "result by pointer: " + item["output_location"]["S"]
        else:
            detail = "reason: " + item.get("failure_reason", {}).get("S", "")[:60]
        print(f"  {item['inference_id']['S']:<26} {status:<10} {detail}")
    return unexpected == 0


async def catalog_tools(url: str) -> bool:
    async with Client(url, mode="auto") as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            required = tool.input_schema.get("required", [])
            print(f"  {tool.name:<28} {(tool.title or ''):<32} required: {', '.join(required) or '-'}")
        calls = [
            ("summarize_document", {"document": "Q3 report: revenue rose 12%, churn fell to 3%.", "max_sentences": 2}),
            ("score_churn_risk", {"customers": [{"customer_id": "C0012345", "plan": "team", "tenure_months": 14,
                                                 "monthly_spend_usd": 420.5}]}),
        ]
        outcomes = []
        for name, args in calls:
            job = (await client.call_tool(name, args)).structured_content
            done = (await client.call_tool("check_job_status", {"inference_id": job["inference_id"], "wait_secs": 20}
                                           )).structured_content
            print(f"{name} -> {job['inference_id']} -> {done['status']} {json.dumps(done.get('result'))[:60]}")
            outcomes.append(done["status"])
        refused = await client.call_tool("score_churn_risk", {"customers": [{"customer_id": "42", "plan": "gold"}]})
        print(f"score_churn_risk with a bad argument -> refused: {refused.content[0].text[:110]}")
        # No session_id: a catalog pipeline tool's run then gets a session of its own, in the answer.
        run = (await client.call_tool("retrain_intent_classifier", {
            "training_data": "s3://mcp-sagemaker-async-io/train/", "epochs": 12, "min_accuracy": 0.9})
               ).structured_content
        print(f"retrain_intent_classifier -> {short(run['execution_arn'])} (MaxEpochs 12, AccuracyThreshold 0.9), "
              f"session {run['session_id']}")
        deadline = time.time() + 120
        while True:
            status = (await client.call_tool("check_training_status", {"execution_arn": run["execution_arn"],
                                                                        "wait_secs": 20})).structured_content
            if status["status"] not in ("Executing", "Stopping") or time.time() > deadline:
                break
        print(f"check_training_status -> {status['status']}, steps: "
              f"{', '.join(s['name'] + ' ' + s['status'] for s in status['steps'])}")
    return outcomes == ["completed", "completed"] and refused.is_error and status["status"] == "Succeeded"


def on_its_own_watch(env: dict, name: str, step) -> bool:
    """`step(url)` against mcp-tools configured with `env` (no auth), under a watch of its own
    that is stopped after it."""
    port = free_port()
    watch = start_watch(port, {"AUTH_MODE": "none", **env}, name)
    try:
        wait_started(watch, port, name)
        return asyncio.run(step(f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"))
    finally:
        stop(watch)


async def events_request(url: str, method: str, params: dict) -> dict:
    async with Client(url, mode="2026-07-28") as client:
        return await client.session.send_request(EventsRequest(method=method, params=params), TypeAdapter(dict))


def webhook(url: str) -> bool:
    receiver = Receiver()
    try:
        secret, key = new_secret()
        hook = receiver.url("/hooks/demo")
        made = asyncio.run(events_request(url, "events/subscribe", {
            "name": "job.ended", "ttlMs": 600_000,
            "delivery": {"mode": "webhook", "url": hook, "secret": secret}}))
        print(f"events/subscribe job.ended -> {made['id']}, refresh before {made['refreshBefore']} "
              f"(the receiver echoed the signed challenge)")
        start = asyncio.run(events_request(url, "events/poll", {"name": "job.ended", "cursor": None}))

        async def submit() -> str:
            async with Client(url, mode="2026-07-28") as client:
                result = await client.call_tool("submit_job", {"document": "webhooks need no connection"})
                return result.structured_content["inference_id"]
        inference_id = asyncio.run(submit())
        submitted = time.monotonic()
        print(f"submit_job -> {inference_id}; the client disconnects")
        got = receiver.wait_for("/hooks/demo", 1, timeout=60)
        if not got:
            print("no event reached the receiver", file=sys.stderr)
            return False
        event, headers = got[0]["event"], got[0]["headers"]
        signed = signed_by(key, headers, got[0]["body"], time.time())
        print(f"  {time.monotonic() - submitted:4.1f} s POST {hook}: {event['name']} {event['data']['status']}, "
              f"output {event['data']['output']}")
        print(f"  webhook-id {headers['webhook-id']} (= eventId), X-MCP-Subscription-Id "
              f"{headers['x-mcp-subscription-id']}, signature {'checks' if signed else 'DOES NOT check'}")
        # Pollers get an event once it has settled (a few seconds after it happened).
        deadline, cursor, ids = time.monotonic() + 20, start["cursor"], []
        while inference_id not in ids and time.monotonic() < deadline:
            polled = asyncio.run(events_request(url, "events/poll", {"name": "job.ended", "cursor": cursor}))
            ids += [e["data"]["inference_id"] for e in polled["events"]]
            cursor = polled["cursor"]
            if not polled["hasMore"]:
                time.sleep(1)
        print(f"events/poll from a cursor taken before the job -> {len(ids)} event(s), this job's among them: "
              f"{inference_id in ids}")
        return signed and event["data"]["inference_id"] == inference_id and inference_id in ids
    finally:
        receiver.stop()


def main() -> int:
    region, endpoint = os.environ["AWS_REGION"], os.environ["AWS_ENDPOINT_URL"]
    clients = {name: boto3.client(name, endpoint_url=endpoint, region_name=region)
               for name in ("s3", "dynamodb", "sqs", "events")}
    bus, events_queue = completion_bus(clients["events"], clients["sqs"])
    port = int(os.environ["LAMBDA_PORT"])
    url = f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    print(f"functions under cargo lambda watch on 127.0.0.1:{port} (log: .local/demo.log); MCP at {url}")
    watch = start_watch(port, {"AUTH_MODE": "none", "EVENT_BUS_NAME": bus}, "demo")
    try:
        wait_started(watch, port, "demo")
        section("1. jobs through MCP: submit_job, then check_job_status (the stand-in endpoint runs the model)")
        results = [asyncio.run(jobs(url)) and completion_events(clients["sqs"], events_queue)
                   and pushed(url) and asyncio.run(large_output(url))]
        section("2. training through MCP: trigger_training, then check_training_result")
        trained, succeeded = asyncio.run(training(url, clients["sqs"], os.environ["PIPELINE_RESULTS_QUEUE_URL"]))
        results.append(trained)
        section("3. provenance through MCP: the registered model package, then what built it and what it fed")
        results.append(asyncio.run(provenance(url, succeeded)))
        section("4. a run that asks a person: its CallbackStep's question, then its model's approval, "
                "answered through MCP (tasks)")
        approval_pipeline()
        results.append(on_its_own_watch({"EVENT_BUS_NAME": bus, "PIPELINE_NAME": APPROVAL_PIPELINE,
                                         "APPROVAL_GATE": "true"}, "demo-approval", asks_a_person))
        section("5. the sample events of events/ through cargo lambda invoke")
        results.append(sample_events(port, clients["s3"], clients["dynamodb"], os.environ["RESULTS_TABLE"],
                                     os.environ["IO_BUCKET"]))
        print("\nBad events were refused with the reason (Lambda retries them, then sends them to the failure\n"
              "destination); the SQS batch reported only its bad message.")
        section("6. your models as tools: mcp-tools with infra/catalog.example.json")
        catalog = ROOT / "infra" / "catalog.example.json"
        # Checked first, as make serve CATALOG=... checks yours: what it serves, or each mistake.
        print(served(catalog.relative_to(ROOT), check(catalog)))
        results.append(on_its_own_watch({"EVENT_BUS_NAME": bus, "TOOL_CATALOG": str(catalog)}, "demo-catalog",
                                        catalog_tools))
        section("7. MCP Events: a webhook gets a job's outcome, signed, with no client connected")
        results.append(webhook(url))
        if not all(results):
            print(f"\nsteps that did not go as expected: {[i + 1 for i, r in enumerate(results) if not r]}", file=sys.stderr)
            return 1
        return 0
    finally:
        stop(watch)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (WatchError, CatalogError) as e:
        sys.exit(f"error: {e}")
