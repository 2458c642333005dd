"""MCP Events, measured: what one `job.ended` event costs from its outcome recorded to a webhook's
2xx, and how long that takes, on the local stack.

One webhook subscription (made through mcp-tools' `events/subscribe`, its challenge answered by
bench/webhook_sink.py), then each event's path as a deployment runs it: notification-handler
records a job's outcome and publishes its event (the owner's subscriptions read, the event
logged once on the events table, naming them), the table's stream hands the new item to
event-delivery through Lambda's event source mapping (GetRecords; its filter passes only new
items that name webhooks), and event-delivery reads the subscription and POSTs the signed event.
The mapping is scripts/event_source_mappings.py's StreamToFunction, invoking through the bench's Runtime
API. Every AWS call is counted at the emulator with its billed size, and each call is put with
the step that made it (`step_of`). The FIFO queue is event-delivery's retry queue: no event here
fails its first try, so none reaches it.

- Price, one at a time: COST_REPEATS events, each published and then delivered alone (a batch
  of 1: a trickle, as the template sets no batching window); beside each, the same handler
  without events records another job's outcome, so that what publishing adds to its duration
  is a difference of two invocations measured side by side.
- Price, a backlog: BACKLOG events published, then taken as one batch of 10 (the mapping's
  BatchSize): one GetRecords, one invocation for ten events.
- Time: LATENCY_EVENTS events one after another, each at a random moment of the mapping's
  cycle of reads, the stream read as the local stack reads it (every STREAM_POLL_SECS when it
  has nothing); from the event handed to notification-handler to the moment the receiver's 2xx
  was written. Each event is followed by its floors: an empty function's invocation through the
  same Runtime API with the same events, and the receiver's answer to the same POST sent
  straight to it.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import cost
from builds import RELEASE
from emulator import Emulator
from functions import Functions, variant
from lambda_events import OUTPUT_BODY, notification_message, sns_delivery
from listen_cost import call, result_of
from local_aws import IO_BUCKET, aws
from event_source_mappings import STREAM_POLL_SECS, FunctionError, StreamToFunction
from local_stack import EVENTS_TABLE, SUBSCRIPTIONS_TABLE
from processes import Function, answer_of, initialized, stop
from events_summary import Steps, step_of
from runtime_api import RuntimeApi
from webhook_sink import WebhookSink

HERE = Path(__file__).resolve().parent
EVENT = "job.ended"
COST_REPEATS = 15
BACKLOG = 10
BACKLOGS = 3
LATENCY_WARMUP = 3
LATENCY_EVENTS = 40
# The FIFO retry queue as the template declares it (its visibility six times the function's timeout).
QUEUE = "bench-event-delivery.fifo"
QUEUE_ATTRIBUTES = {"FifoQueue": "true", "ContentBasedDeduplication": "false", "VisibilityTimeout": "360"}
TOPIC = "arn:aws:sns:us-east-1:123456789012:bench-events-success"
# A request without the tasks extension: tools/call answers with the tool's own result.
PLAIN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {}}


@dataclass
class Batch:
    """One batch the mapping handed on: when the GetRecords that brought it came back, its
    invocation, its records and the event they made."""
    received_ns: int
    invocation: object
    records: int
    event: bytes


class Mapping(StreamToFunction):
    """The events table's stream mapping of the local stack, invoking event-delivery through the
    bench's Runtime API and noting each batch. Its shards get their LATEST iterators as it is
    made: make it before the events it is to take."""

    def __init__(self, emulator: Emulator):
        super().__init__(emulator.http_endpoint, EVENTS_TABLE)
        self.runtime: RuntimeApi | None = None  # event-delivery's, set once it runs
        self.batches: list[Batch] = []
        self.failed = 0
        self.done = threading.Condition()

    def invoke(self, event: bytes):
        received = self.read_ns
        inv = self.runtime.invoke(event)
        answer = json.loads(inv.response) if inv.response is not None else None
        reported = answer.get("batchItemFailures") if isinstance(answer, dict) else None
        with self.done:
            self.failed += 1 if inv.response is None else len(reported or [])
            self.batches.append(Batch(received, inv, len(json.loads(event)["Records"]), event))
            self.done.notify_all()
        if inv.response is None:
            raise FunctionError(repr(inv.error))
        return answer

    def wait_for(self, count: int, timeout: float) -> list[Batch]:
        with self.done:
            self.done.wait_for(lambda: len(self.batches) >= count, timeout)
            return list(self.batches)


class EventsRun:
    """The processes and resources of the scenario, and what it measured."""

    def __init__(self, emulator: Emulator, fns: Functions, work: Path, fresh):
        self.emulator, self.recorder, self.fresh = emulator, emulator.recorder, fresh
        self.tables = (EVENTS_TABLE, SUBSCRIPTIONS_TABLE)
        self.sqs = aws(emulator, "sqs")
        self.queue_url = self.sqs.create_queue(QueueName=QUEUE, Attributes=QUEUE_ATTRIBUTES)["QueueUrl"]
        # Reading from LATEST before the first event is written; it invokes event-delivery once
        # that is started, below.
        self.mapping = Mapping(emulator)
        self.phases = random.Random(0)
        self.sink = WebhookSink()
        handler = fns.rust["notification-handler"]
        tools = variant(fns.rust["mcp-tools"], {"EVENTS_TABLE": EVENTS_TABLE, "SUBSCRIPTIONS_TABLE": SUBSCRIPTIONS_TABLE,
                                                "EVENTS_ALLOW_LOCAL_CALLBACKS": "true"}, "cost-tools-events.log")
        delivery = Function("event-delivery", [str(RELEASE / "event-delivery")],
                            {**{k: v for k, v in handler.env.items() if k == "METRICS_NAMESPACE"},
                             "SUBSCRIPTIONS_TABLE": SUBSCRIPTIONS_TABLE, "DELIVERY_QUEUE_URL": self.queue_url,
                             "EVENTS_ALLOW_LOCAL_CALLBACKS": "true"}, work / "event-delivery.log")
        null = Function("null", [sys.executable, str(HERE / "null_function.py")], {"PYTHONPATH": str(HERE)},
                        work / "cost-null.log")
        self.procs = {}
        for key, fn in {"tools": tools, "plain": variant(handler, {}, "cost-handler-plain.log"),
                        "events": variant(handler, {"EVENTS_TABLE": EVENTS_TABLE,
                                                    "SUBSCRIPTIONS_TABLE": SUBSCRIPTIONS_TABLE},
                                          "cost-handler-events.log"),
                        "delivery": delivery, "null": null}.items():
            runtime = RuntimeApi(fn.name)
            self.procs[key] = (runtime, fn.spawn(runtime, emulator.http_endpoint)[0])
            initialized(runtime, self.procs[key][1], key)
        self.mapping.runtime = self.runtime("delivery")

    def runtime(self, key: str) -> RuntimeApi:
        return self.procs[key][0]

    def close(self) -> None:
        for runtime, proc in self.procs.values():
            stop(proc, runtime)
        self.sink.stop()

    # ---------------------------------------------------------------- the steps

    def subscribe(self) -> str:
        """One webhook subscription to every job.ended of the bench's caller."""
        import base64
        import secrets
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        got, _ = call(self.runtime("tools"), "events/subscribe", {
            "name": EVENT, "arguments": {}, "ttlMs": 24 * 3600 * 1000,
            "delivery": {"mode": "webhook", "url": self.sink.url("/hook"), "secret": secret}}, meta=PLAIN_META)
        made = result_of(got, "events/subscribe")
        if not self.sink.challenges:
            raise SystemExit(f"events/subscribe: the receiver was not challenged ({made!r})")
        return made["id"]

    def submit(self) -> str:
        got, _ = call(self.runtime("tools"), "tools/call", {
            "name": "submit_job", "arguments": {"document": "Invoice 7: total 12.50 EUR",
                                                "idempotency_key": self.fresh("events")}},
                      "submit_job", meta=PLAIN_META)
        return result_of(got, "submit_job")["structuredContent"]["inference_id"]

    def outcome(self, key: str, inference_id: str):
        """SageMaker's success notification (its response in it, as the stack wires endpoints),
        handed to a notification-handler as SNS delivers it: the invocation."""
        message = notification_message(inference_id, f"s3://{IO_BUCKET}/outputs/{inference_id}.out", OUTPUT_BODY)
        inv = self.runtime(key).invoke(sns_delivery(message, TOPIC))
        answer_of(inv, f"notification-handler ({key})")
        return inv

    def deliver(self, events: int) -> tuple[list, object]:
        """The mapping's part, one step by hand, for pricing: the stream's new records taken by
        one GetRecords, handed to event-delivery in one invocation. Returns the calls and the
        invocation."""
        mark = self.recorder.mark()
        before, batches = self.sink.count(), len(self.mapping.batches)
        self.mapping.poll()
        taken = self.mapping.batches[batches:]
        if [b.records for b in taken] != [events]:
            raise SystemExit(f"the stream's mapping handed on {[b.records for b in taken]} records, not {events} "
                             "in one invocation")
        if self.mapping.failed:
            raise SystemExit(f"event-delivery: {self.mapping.failed} deliveries failed (see its log)")
        if len(self.sink.wait_for(before + events, 10)) < before + events:
            raise SystemExit("event-delivery answered, but the receiver did not get every event")
        return self.recorder.since(mark), taken[0].invocation

    def published(self, key: str, inference_id: str) -> tuple[list, object]:
        mark = self.recorder.mark()
        inv = self.outcome(key, inference_id)
        return self.recorder.since(mark), inv

    # ---------------------------------------------------------------- the measures

    def one_at_a_time(self, first: bool = False) -> tuple[Steps, float]:
        """One event published and delivered alone, and beside it another job recorded by the
        handler without events (in turn first or second): the event's steps and what publishing
        added to the handler's invocation (ms)."""
        plain_job, events_job = self.submit(), self.submit()
        if first:
            calls, with_events = self.published("events", events_job)
            plain = self.outcome("plain", plain_job)
        else:
            plain = self.outcome("plain", plain_job)
            calls, with_events = self.published("events", events_job)
        steps = Steps()
        steps.add(calls, self.tables)
        delivered, inv = self.deliver(1)
        steps.add(delivered, self.tables)
        steps.deliveries.append(cost.Invocation("event-delivery", inv.duration_ms))
        return steps, with_events.duration_ms - plain.duration_ms

    def backlog(self) -> Steps:
        """BACKLOG events published, then delivered as one batch."""
        steps = Steps(events=BACKLOG)
        for _ in range(BACKLOG):
            steps.add(self.published("events", self.submit())[0], self.tables)
        delivered, inv = self.deliver(BACKLOG)
        steps.add(delivered, self.tables)
        steps.deliveries.append(cost.Invocation("event-delivery", inv.duration_ms))
        return steps

    def latency(self) -> list[dict]:
        """Events one after another through the mapping, reading the stream on its own: each
        one's times (ms) and its floors, measured right after it."""
        mapping = self.mapping
        mapping.start()
        samples = []
        try:
            for _ in range(LATENCY_WARMUP + LATENCY_EVENTS):
                samples.append(self.timed_event(mapping))
        finally:
            mapping.stopping.set()
            mapping.join(timeout=10)
        if mapping.failed:
            raise SystemExit(f"event-delivery reported {mapping.failed} failed deliveries")
        return samples[LATENCY_WARMUP:]

    def timed_event(self, mapping: Mapping) -> dict:
        job = self.submit()
        # Events come at any moment of the mapping's cycle of reads; one after another they would
        # each come at the same moment of it (the cycle restarts with each delivery).
        time.sleep(self.phases.uniform(0, STREAM_POLL_SECS))
        arrived, batches = self.sink.count(), len(mapping.batches)
        mark = self.recorder.mark()
        message = notification_message(job, f"s3://{IO_BUCKET}/outputs/{job}.out", OUTPUT_BODY)
        handler_event = sns_delivery(message, TOPIC)
        inv = self.runtime("events").invoke(handler_event)
        answer_of(inv, "notification-handler (events)")
        arrival = self.sink.wait_for(arrived + 1, 30)[arrived:][:1]
        batch = mapping.wait_for(batches + 1, 30)[batches:][:1]
        if not arrival or not batch:
            raise SystemExit(f"the event of {job} did not reach the receiver within 30 s")
        arrival, batch = arrival[0], batch[0]
        delivered = json.loads(arrival.body)
        if delivered.get("data", {}).get("inference_id") != job:
            raise SystemExit(f"the receiver got {delivered!r}, not the event of {job}")
        calls = self.recorder.since(mark)
        steps = {s: [c for c in calls if step_of(c, *self.tables) == s] for s in ("record", "publish", "mapping",
                                                                                  "delivery")}
        # The mapping's reads of the idle stream bring nothing (and its look for new shards is no
        # event's): the read that brought the event is the event's.
        steps["mapping"] = [c for c in steps["mapping"] if c.records]
        logged = next((c for c in steps["publish"] if c.operation == "DynamoDB PutItem"), None)
        if logged is None or not steps["mapping"]:
            raise SystemExit(f"the event of {job}: no PutItem on the events table, or no GetRecords that brought it")
        # The floors, right after: empty invocations with the same two events, the receiver's own answer.
        null_handler = self.runtime("null").invoke(handler_event).duration_ms
        null_delivery = self.runtime("null").invoke(batch.event).duration_ms
        receiver = self.sink.answer_time(arrival)
        handler_calls = steps["record"] + steps["publish"]
        before_post = [c for c in steps["delivery"] if c.done_ns <= arrival.answered_ns]
        moto_handler = sum(c.server_ms for c in handler_calls)
        moto_read = sum(c.server_ms for c in steps["mapping"])
        moto_delivery = sum(c.server_ms for c in before_post)
        return {
            "end_to_end_ms": (arrival.answered_ns - inv.sent_ns) / 1e6,
            "handler_ms": inv.duration_ms,
            "stream_ms": (batch.received_ns - logged.done_ns) / 1e6,
            "delivery_ms": (arrival.answered_ns - batch.invocation.sent_ns) / 1e6,
            # The event is on the stream once the handler's last call, its PutItem, is answered.
            "floor_end_to_end_ms": null_handler + moto_handler + moto_read + null_delivery + moto_delivery + receiver,
            "floor_handler_ms": null_handler + moto_handler,
            "floor_delivery_ms": null_delivery + moto_delivery + receiver,
            "null_ms": null_delivery, "receiver_ms": receiver,
            "calls": {s: [c.operation for c in cs] for s, cs in steps.items()},
            "batch_records": batch.records,
        }


def events_delivery(emulator: Emulator, fns: Functions, work: Path, fresh) -> dict:
    """The scenario, with every call's billed size recorded (the caller turns sizing on)."""
    run = EventsRun(emulator, fns, work, fresh)
    try:
        subscription = run.subscribe()
        # The processes' first calls open their connections; the subscription's first delivery
        # records lastDeliveryAt (an UpdateItem, then at most one an hour): kept apart.
        first, _ = run.one_at_a_time()
        run.one_at_a_time(first=True)
        singles, added = [], []
        for n in range(COST_REPEATS):
            steps, added_ms = run.one_at_a_time(first=n % 2 == 0)
            singles.append(steps)
            added.append(added_ms)
        backlogs = [run.backlog() for _ in range(BACKLOGS)]
        latency = run.latency()
        return {"subscription": subscription, "first": first, "singles": singles, "added_ms": added,
                "backlogs": backlogs, "latency": latency, "tables": run.tables, "poll_ms": STREAM_POLL_SECS * 1000}
    finally:
        run.close()
