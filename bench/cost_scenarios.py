"""What a job costs, measured: each priced scenario run once against the emulator with every
call's billed size recorded. cost_summary.py prices the parts this returns."""

from __future__ import annotations

import asyncio
import gc
import json
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import cost
from builds import RELEASE
from emulator import Emulator
from function_url import FunctionUrl
from functions import S3_INPUT_ENV, Functions, variant
from events_cost import events_delivery
from listen_cost import LISTEN_ENV, held_minute
from lambda_events import (OUTPUT_BODY, json_of_length, notification_message, router_event, sns_delivery,
                           sqs_delivery)
from processes import Function, answer_of, initialized, stop
from runtime_api import RuntimeApi
from local_aws import IO_BUCKET, aws

# The outputs a job's cost is priced for: small JSON, 64 KiB (inline at the old default, the
# most it allowed), 1 MiB (a pointer at any setting).
COST_OUTPUTS = {"small": OUTPUT_BODY, "medium": json_of_length(64 * 1024), "large": json_of_length(1024 * 1024)}
# The long poll priced: wait_secs=5 on a job whose notification arrives 2 s in.
LONG_POLL_WAIT_S, LONG_POLL_DONE_S = 5, 2.0
COST_REPEATS = 5


@dataclass
class Part:
    """What one step of a job cost: the AWS calls counted and the Lambda invocations."""
    calls: list = field(default_factory=list)
    invocations: list = field(default_factory=list)

    def bill(self) -> cost.Bill:
        return cost.bill(self.calls, self.invocations)


def bench_cost(emulator: Emulator, fns: Functions, work: Path, fresh) -> dict:
    """Each priced scenario once, every call's billed size recorded: a job end to end (submit,
    SageMaker's output and notification, the notification recorded, one check) for each output
    size and design; the same job with a long-poll check; the same job with its input through S3
    (S3_INPUT_ENV); the SQS buffer's notification path at two batch sizes; a training run; a
    task kept in view for a minute (listen_cost.py); an MCP Events event delivered to a webhook,
    priced and timed (events_cost.py). Returns the parts of each, unpriced."""
    emulator.recorder.sizing = True
    run = CostRun(emulator, fns, work, fresh)
    gc.disable()
    try:
        asyncio.run(run.measure())
    finally:
        gc.enable()
        emulator.recorder.sizing = False
        run.close()
    return run.out


def designs(fns: Functions, work: Path) -> dict:
    """The notification handlers priced, by label: the new default and the old, and the reference."""
    handler_env, python_ref = fns.handler_env, fns.python_ref
    return {
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


def stored_inputs(submitted: Part | None) -> list[str]:
    """The keys of the inputs submit_job put in the bucket (none when it sent the input inline):
    SageMaker reads each one, a GET billed to the bucket's owner."""
    keys = []
    for call in submitted.calls if submitted else []:
        if call.operation == "S3 PutObject":
            bucket, _, key = urllib.parse.unquote(urllib.parse.urlparse(call.target).path).lstrip("/").partition("/")
            if bucket == IO_BUCKET:
                keys.append(key)
    return keys


class Tools:
    """One live mcp-tools behind its Function URL, and the MCP client session to it."""

    def __init__(self, fn: Function, endpoint: str):
        self.runtime = RuntimeApi(fn.name)
        self.front = FunctionUrl(self.runtime)
        self.proc, _ = fn.spawn(self.runtime, endpoint)
        initialized(self.runtime, self.proc, fn.name)
        self.client = None

    def close(self) -> None:
        stop(self.proc, self.runtime)
        self.front.close()


class CostRun:
    """The resources and live processes the scenarios share, and what they measured (`out`)."""

    def __init__(self, emulator: Emulator, fns: Functions, work: Path, fresh):
        self.emulator, self.recorder, self.fresh = emulator, emulator.recorder, fresh
        self.fns, self.work = fns, work
        self.s3, self.sns, self.sqs = aws(emulator, "s3"), aws(emulator, "sns"), aws(emulator, "sqs")
        self.create_resources(fns.tools_env["PIPELINE_NAME"])
        self.designs = designs(fns, work)
        self.procs = {}
        for label, fn in self.designs.items():
            runtime = RuntimeApi(fn.name)
            self.procs[label] = (runtime, fn.spawn(runtime, emulator.http_endpoint)[0])
            initialized(runtime, self.procs[label][1], label)
        self.router_runtime = RuntimeApi("pipeline-router")
        self.router_proc, _ = fns.rust["pipeline-router"].spawn(self.router_runtime, emulator.http_endpoint)
        initialized(self.router_runtime, self.router_proc, "pipeline-router")
        tools = fns.rust["mcp-tools"]
        self.tools = Tools(tools, emulator.http_endpoint)
        self.s3_input_tools = Tools(variant(tools, S3_INPUT_ENV, "cost-tools-s3-input.log"), emulator.http_endpoint)
        self.listen_runtime = RuntimeApi("mcp-tools")
        self.listen_proc, _ = variant(tools, LISTEN_ENV, "cost-tools-listen.log").spawn(self.listen_runtime,
                                                                                          emulator.http_endpoint)
        initialized(self.listen_runtime, self.listen_proc, "mcp-tools (listen)")
        self.out: dict = {"jobs": {}, "response_in_s3": None, "long_polls": {}, "s3_input_jobs": {}, "buffer": {},
                          "training": None, "held_minute": None, "events": None}

    def create_resources(self, pipeline_name: str) -> None:
        """The direct topic, the buffered one with its queue, and the pipeline."""
        self.direct_topic = self.sns.create_topic(Name="bench-cost-direct")["TopicArn"]
        self.buffered_topic = self.sns.create_topic(Name="bench-cost-buffered")["TopicArn"]
        self.queue_url = self.sqs.create_queue(QueueName="bench-cost-buffer",
                                               Attributes={"VisibilityTimeout": "180"})["QueueUrl"]
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url,
                                                       AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.sns.subscribe(TopicArn=self.buffered_topic, Protocol="sqs", Endpoint=self.queue_arn)
        aws(self.emulator, "sagemaker").create_pipeline(
            PipelineName=pipeline_name, RoleArn="arn:aws:iam::123456789012:role/bench",
            PipelineDefinition=json.dumps({"Version": "2020-12-01", "Steps": [], "Parameters": [
                {"Name": n, "Type": "String"} for n in ("InputDataUri", "MaxEpochs", "AccuracyThreshold",
                                                        "TrainingInstanceType")]}))

    def close(self) -> None:
        for runtime, proc in self.procs.values():
            stop(proc, runtime)
        stop(self.router_proc, self.router_runtime)
        stop(self.listen_proc, self.listen_runtime)
        self.tools.close()
        self.s3_input_tools.close()

    async def measure(self) -> None:
        from mcp import Client

        async with Client(self.tools.front.url) as client, Client(self.s3_input_tools.front.url) as s3_input:
            self.tools.client, self.s3_input_tools.client = client, s3_input
            label = next(iter(self.designs))
            # Each process's first calls open its connections: not what a warm job costs.
            for each in self.designs:
                await self.one_check_job(each, OUTPUT_BODY)
            await self.one_check_job(label, OUTPUT_BODY, self.s3_input_tools)
            await self.tool("trigger_training", {"input_data_uri": f"s3://{IO_BUCKET}/train/",
                                                 "session_id": "sess-warm"})
            for each in self.designs:
                await self.jobs(each)
            self.out["response_in_s3"] = await self.median_job(label, OUTPUT_BODY, response_in_message=False)
            for size, body in COST_OUTPUTS.items():
                self.out["s3_input_jobs"][(label, size)] = await self.median_job(label, body, self.s3_input_tools)
            for batch_size in (10, 100):
                self.out["buffer"][batch_size] = await self.buffer(label, batch_size)
            self.out["training"] = await self.training()
            self.out["held_minute"] = await asyncio.to_thread(held_minute, self.listen_runtime, self.recorder,
                                                              self.fresh)
            self.out["events"] = await asyncio.to_thread(events_delivery, self.emulator, self.fns, self.work,
                                                         self.fresh)

    def notify(self, label: str, inference_id: str, body: bytes, topic: str,
               submitted: Part | None = None, response_in_message: bool = True) -> tuple[Part, Part]:
        """SageMaker's part (the input read when submit_job stored it, the output written, the
        notification published), then the notification recorded by the design's handler, as SNS
        delivers it to a function. A long poll's reads may come in between: they are the check's.
        The notification carries the response as an endpoint the stack wires publishes it
        (IncludeInferenceResponseIn: up to 128 KB); without `response_in_message`, as one wired
        without it."""
        def since(mark: int) -> list:
            return [c for c in self.recorder.since(mark) if c.operation != "DynamoDB GetItem"]

        location = f"s3://{IO_BUCKET}/outputs/{inference_id}.out"
        mark = self.recorder.mark()
        for key in stored_inputs(submitted):
            self.s3.get_object(Bucket=IO_BUCKET, Key=key)
        self.s3.put_object(Bucket=IO_BUCKET, Key=f"outputs/{inference_id}.out", Body=body)
        message = notification_message(inference_id, location, body if response_in_message else None)
        self.sns.publish(TopicArn=topic, Message=message)
        sagemaker = Part(since(mark))
        mark = self.recorder.mark()
        inv = self.procs[label][0].invoke(sns_delivery(message, topic))
        answer_of(inv, label)
        return sagemaker, Part(since(mark), [cost.Invocation(self.designs[label].name, inv.duration_ms)])

    async def tool(self, name: str, arguments: dict, via: Tools | None = None) -> tuple[dict, Part]:
        via = via or self.tools
        mark, before = self.recorder.mark(), len(via.front.invocations)
        result = await via.client.call_tool(name, arguments)
        if getattr(result, "is_error", False):
            raise SystemExit(f"mcp-tools {name}: {result.content}")
        part = Part(self.recorder.since(mark), [cost.Invocation("mcp-tools", i.duration_ms)
                                                for i in via.front.invocations[before:]])
        return result.structured_content, part

    def fetch(self, reply: dict, part: Part) -> None:
        """A pointer's output, fetched by the client from its presigned URL."""
        if reply.get("result_url"):
            mark = self.recorder.mark()
            with urllib.request.urlopen(reply["result_url"], timeout=30) as resp:
                resp.read()
            part.calls += self.recorder.since(mark)

    async def submit(self, via: Tools | None = None) -> tuple[str, Part]:
        reply, part = await self.tool("submit_job", {"document": "Invoice 7: total 12.50 EUR",
                                                     "idempotency_key": self.fresh("cost")}, via)
        return reply["inference_id"], part

    async def one_check_job(self, label: str, body: bytes, via: Tools | None = None,
                            response_in_message: bool = True) -> dict:
        inference_id, submitted = await self.submit(via)
        sagemaker, notified = self.notify(label, inference_id, body, self.direct_topic, submitted, response_in_message)
        reply, checked = await self.tool("check_job_status", {"inference_id": inference_id}, via)
        self.fetch(reply, checked)
        return {"submit": submitted, "sagemaker": sagemaker, "notification": notified, "check": checked}

    async def median_job(self, label: str, body: bytes, via: Tools | None = None,
                         response_in_message: bool = True) -> dict:
        """The job with one check, COST_REPEATS times: the calls are the same each time, and the
        median job by price evens out the durations."""
        runs = sorted([await self.one_check_job(label, body, via, response_in_message) for _ in range(COST_REPEATS)],
                      key=lambda parts: sum(p.bill().total for p in parts.values()))
        return runs[len(runs) // 2]

    async def jobs(self, label: str) -> None:
        """One design's job at each output size, with one check and then with a long poll."""
        for size, body in COST_OUTPUTS.items():
            self.out["jobs"][(label, size)] = await self.median_job(label, body)
        for size, body in COST_OUTPUTS.items():
            self.out["long_polls"][(label, size)] = await self.long_poll_job(label, body)

    async def long_poll_job(self, label: str, body: bytes) -> dict:
        """The same job, checked by a long poll that the notification ends."""
        inference_id, submitted = await self.submit()
        waiting = asyncio.create_task(self.tool("check_job_status", {"inference_id": inference_id,
                                                                     "wait_secs": LONG_POLL_WAIT_S}))
        await asyncio.sleep(LONG_POLL_DONE_S)
        sagemaker, notified = await asyncio.to_thread(self.notify, label, inference_id, body, self.direct_topic,
                                                      submitted)
        reply, polled = await waiting
        # The notification's own calls happened during the wait: they are its part.
        theirs = {id(c) for c in notified.calls + sagemaker.calls}
        polled.calls = [c for c in polled.calls if id(c) not in theirs]
        self.fetch(reply, polled)
        return {"submit": submitted, "sagemaker": sagemaker, "notification": notified, "check": polled}

    async def buffer(self, label: str, batch_size: int) -> dict:
        """The SQS buffer: 100 notifications (a backlog) through the queue, taken in batches."""
        ids = [(await self.submit())[0] for _ in range(100)]
        for inference_id in ids:
            self.s3.put_object(Bucket=IO_BUCKET, Key=f"outputs/{inference_id}.out", Body=OUTPUT_BODY)
            # With its response, as an endpoint the stack wires publishes it (as the direct rows).
            location = f"s3://{IO_BUCKET}/outputs/{inference_id}.out"
            self.sns.publish(TopicArn=self.buffered_topic,
                             Message=notification_message(inference_id, location, OUTPUT_BODY))
        return {"notifications": len(ids), "path": self.drain(label, batch_size)}

    def drain(self, label: str, batch_size: int) -> Part:
        """The queue emptied the way Lambda's poller empties it: ReceiveMessage (10 at most a
        call) until the batch is full or the queue empty, one invocation, DeleteMessageBatch (10
        a call)."""
        mark, part = self.recorder.mark(), Part()
        while True:
            batch = []
            while len(batch) < batch_size:
                got = self.sqs.receive_message(QueueUrl=self.queue_url,
                                               MaxNumberOfMessages=min(10, batch_size - len(batch)),
                                               WaitTimeSeconds=0).get("Messages", [])
                if not got:
                    break
                batch += got
            if not batch:
                break
            inv = self.procs[label][0].invoke(sqs_delivery(batch, self.queue_arn), timeout=300)
            failed = {f["itemIdentifier"] for f in answer_of(inv, "buffer batch").get("batchItemFailures", [])}
            if failed:
                raise SystemExit(f"SQS buffer: {len(failed)} notifications failed")
            part.invocations.append(cost.Invocation("notification-handler", inv.duration_ms))
            for i in range(0, len(batch), 10):
                self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=[
                    {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch[i:i + 10])])
        part.calls = self.recorder.since(mark)
        return part

    async def training(self) -> dict:
        """A training run: triggered, its Succeeded event routed, its status checked."""
        reply, triggered = await self.tool("trigger_training", {"input_data_uri": f"s3://{IO_BUCKET}/train/",
                                                                "session_id": "sess-cost"})
        arn = reply["execution_arn"]
        described = aws(self.emulator, "sagemaker").describe_pipeline_execution(PipelineExecutionArn=arn)
        event = json.loads(router_event(arn.rsplit("/", 1)[1], "sess-cost"))
        event["resources"] = [arn.split("/execution/")[0], arn]
        event["detail"].update({"pipelineArn": arn.split("/execution/")[0], "pipelineExecutionArn": arn,
                                "pipelineExecutionDescription": described["PipelineExecutionDescription"]})
        mark = self.recorder.mark()
        inv = self.router_runtime.invoke(json.dumps(event).encode())
        answer_of(inv, "pipeline-router")
        routed = Part(self.recorder.since(mark), [cost.Invocation("pipeline-router", inv.duration_ms)])
        _, checked = await self.tool("check_training_status", {"execution_arn": arn})
        return {"trigger": triggered, "event": routed, "check": checked}
