"""MCP Events' webhook delivery, priced and timed, from what events_cost.py measured: each event's
bill, the two rows of the cost table, the sentence beside the listen's, and the figures of its
own part of the cost section (results.EventsDelivery). No I/O: tests/bench/test_cost.py checks it
on hand-made parts."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field

import cost
import results

# The targets this path is held to.
PRICE_TARGET = 2.00  # dollars per million delivered events
P50_TARGET_MS = 1000.0  # locally
MEMORY_MB = 128  # event-delivery's and notification-handler's, as the template sets them
# The calls each step of an event's way should make when its first try succeeds, as
# shared/usecases/src/events.rs and functions/event-delivery make them (a subscription's first
# delivery of the hour adds an UpdateItem): no SQS request, the FIFO queue being for retries.
EXPECTED = {"publish": ["DynamoDB Query", "DynamoDB PutItem"],
            "mapping": ["DynamoDB Streams GetRecords"],
            "delivery": ["DynamoDB GetItem"]}
STEP_NAMES = {"publish": "notification-handler's publish", "mapping": "the stream's event source mapping",
              "delivery": "event-delivery"}
# Who makes a step's calls, in the name of each charge.
MADE_BY = {"publish": "notification-handler", "mapping": "event source mapping", "delivery": "event-delivery"}


def timing_rows(poll_ms: float) -> list[tuple[str, str, str, str | None]]:
    """Each stretch timed: what it is, its sample's key, what its floor is and the floor's key."""
    return [
        ("the outcome's notification handed to notification-handler → the receiver's 2xx written", "end_to_end_ms",
         "two empty invocations (the same two events), moto's own time for the calls before the POST (the "
         "GetRecords that brought the event among them), the receiver's own answer; not the wait for the "
         "mapping's next read", "floor_end_to_end_ms"),
        ("notification-handler's invocation (the outcome recorded, its event published)", "handler_ms",
         "an empty invocation with the same event, moto's own time for its calls", "floor_handler_ms"),
        ("on the stream: the event's PutItem answered → the mapping's GetRecords back with it", "stream_ms",
         f"none (the mapping reads every {poll_ms:g} ms while it has nothing: half that on average)", None),
        ("event-delivery's invocation start → the receiver's 2xx written", "delivery_ms",
         "an empty invocation with the same batch, moto's own time for the subscription's GetItem, the receiver's "
         "own answer to the same POST", "floor_delivery_ms"),
    ]


# What Lambda's pollers make (the stream's mapping; the retry queue's, which no event here
# reaches), and the bench's mapping looking for new shards; what event-delivery makes; the rest
# of the handler's calls record the job's outcome (a job's own cost, priced in the job rows).
MAPPING = ("DynamoDB Streams GetRecords", "DynamoDB Streams DescribeStream", "DynamoDB Streams GetShardIterator",
           "DynamoDB DescribeTable", "SQS ReceiveMessage", "SQS DeleteMessageBatch", "SQS DeleteMessage")


def step_of(call, events_table: str, subscriptions_table: str) -> str:
    """Which step of an event's path made a call: "publish" (notification-handler's events
    work), "mapping" (the event source mapping), "delivery" (event-delivery) or "record" (the
    outcome's own recording)."""
    op = call.operation
    if op in MAPPING:
        return "mapping"
    table = ""
    if op.startswith("DynamoDB ") and call.body:
        table = json.loads(call.body).get("TableName", "")
    # event-delivery's: the subscription read and its status recorded, and the retry queue
    # (a first try that failed queued there, a retry's backoff).
    if op in ("SQS ChangeMessageVisibility", "SQS SendMessageBatch") or (
            table == subscriptions_table and op in ("DynamoDB GetItem", "DynamoDB UpdateItem")):
        return "delivery"
    if table in (events_table, subscriptions_table):
        return "publish"
    return "record"


@dataclass
class Steps:
    """One event's (or one backlog's) calls by step, and the invocations of event-delivery."""
    calls: dict = field(default_factory=lambda: {"publish": [], "mapping": [], "delivery": [], "record": []})
    deliveries: list = field(default_factory=list)  # cost.Invocation of event-delivery
    events: int = 1

    def add(self, calls: list, tables: tuple[str, str]) -> None:
        for c in calls:
            self.calls[step_of(c, *tables)].append(c)


def per_million(dollars: float) -> str:
    # Rounded first: a sum of scaled lines (a batch's share) carries float dust that would tip a half cent.
    return f"${round(dollars * 1e6, 9):.2f} per million"


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0 to 100), linear between the closest ranks."""
    ordered = sorted(samples)
    at = (len(ordered) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def added_duration(added_ms: float, memory_mb: int = MEMORY_MB) -> cost.Line:
    """What publishing adds to notification-handler's billed duration: a difference of two
    measured invocations (never below nothing), not rounded up as a whole invocation is."""
    gb_s = max(0.0, added_ms) / 1000 * memory_mb / 1024
    return cost.Line("Lambda", "notification-handler duration (publishing)", gb_s, "GB-s",
                     gb_s * cost.PRICES["lambda_arm64_gb_second"])


def event_bill(steps, added_ms: float) -> cost.Bill:
    """One event's bill: publishing's calls, the mapping's, event-delivery's calls and invocations
    (a batch's shared by its events), and what publishing adds to the handler's duration. The
    outcome's own recording is the job's, priced in the job rows."""
    b = cost.bill(invocations=steps.deliveries)
    for step, who in MADE_BY.items():
        b.add(*[cost.Line(l.service, f"{l.what} ({who})", l.quantity, l.unit, l.dollars)
                for l in cost.bill(steps.calls[step]).lines])
    return b.scaled(1 / steps.events).add(added_duration(added_ms))


def median_bill(bills: list[cost.Bill]) -> cost.Bill:
    """The median by price: the calls are the same each time, the durations vary."""
    return sorted(bills, key=lambda b: b.total)[len(bills) // 2]


def merged(b: cost.Bill) -> dict[tuple[str, str], cost.Line]:
    out: dict[tuple[str, str], cost.Line] = {}
    for l in b.lines:
        m = out.setdefault((l.what, l.unit), cost.Line(l.service, l.what, 0.0, l.unit, 0.0))
        m.quantity += l.quantity
        m.dollars += l.dollars
    return out


def terms(single: cost.Bill, batched: cost.Bill) -> list[results.EventsTerm]:
    """Each kind of charge per event, alone and ten to a batch, the largest first."""
    a, b = merged(single), merged(batched)
    keys = sorted(dict.fromkeys([*a, *b]), key=lambda k: -(a[k].dollars if k in a else 0.0))
    none = cost.Line("", "", 0.0, "", 0.0)
    return [results.EventsTerm(k[0], k[1], a.get(k, none).quantity, a.get(k, none).dollars,
                               b.get(k, none).quantity, b.get(k, none).dollars) for k in keys]


def timings(latency: list[dict], poll_ms: float) -> list[results.EventsTiming]:
    rows = []
    for what, key, floor, floor_key in timing_rows(poll_ms):
        values = [s[key] for s in latency]
        floors = [s[floor_key] for s in latency] if floor_key else [math.nan]
        rows.append(results.EventsTiming(what, statistics.median(values), percentile(values, 95), floor,
                                         statistics.median(floors), percentile(floors, 95)))
    return rows


def typical(lists: list[list[str]]) -> list[str]:
    """The most common list of calls."""
    tuples = [tuple(l) for l in lists]
    return list(max(set(tuples), key=tuples.count)) if tuples else []


def ops(calls) -> list[str]:
    return [c.operation for c in calls]


def steps_calls(e: dict) -> dict[str, list[str]]:
    """The calls each step made for a typical event delivered alone."""
    return {step: typical([ops(s.calls[step]) for s in e["singles"]]) for step in EXPECTED}


def calls_finding(e: dict) -> str:
    """The calls counted per event, step by step, and whether they are the ones the code makes."""
    seen = steps_calls(e)
    latency = {step: typical([s["calls"][step] for s in e["latency"]]) for step in EXPECTED}
    parts = [f"{STEP_NAMES[step]}: {', '.join(seen[step]) or 'none'}" for step in EXPECTED]
    unexpected = [step for step in EXPECTED if sorted(seen[step]) != sorted(EXPECTED[step])
                  or sorted(latency[step]) != sorted(EXPECTED[step])]
    verdict = ("the calls the code makes, no more (the same in the timed events)" if not unexpected else
               "**not** what the code should make for " + ", ".join(STEP_NAMES[s] for s in unexpected)
               + f" (expected {'; '.join(', '.join(EXPECTED[s]) for s in unexpected)}; the timed events made "
               + "; ".join(', '.join(latency[s]) for s in unexpected) + ")")
    consistency = []
    for step in ("publish", "delivery"):
        for c in next((s.calls[step] for s in e["singles"]), []):
            if c.operation in ("DynamoDB GetItem", "DynamoDB Query"):
                consistency.append(f"{c.operation} ({STEP_NAMES[step]}) "
                                   f"{'strongly' if c.consistent else 'eventually'} consistent")
    return (f"Calls per event delivered alone, as counted at the emulator: {'; '.join(parts)}: {verdict}. "
            f"Reads: {', '.join(consistency)}.")


def first_delivery_finding(e: dict) -> str:
    """What a subscription's first delivery (and then one an hour at most) adds: the UpdateItem
    recording lastDeliveryAt, from the run's first delivery."""
    writes = [c for c in e["first"].calls["delivery"] if c.operation == "DynamoDB UpdateItem"]
    if not writes:
        return ("The subscription's first delivery wrote nothing to it (lastDeliveryAt should be recorded then, "
                "and at most once an hour after).")
    line = cost.price_call(writes[0])
    return (f"A subscription's first delivery, and then at most one an hour (lastDeliveryAt), adds an UpdateItem of its "
            f"{writes[0].new_size}-byte item: {line.quantity:g} write unit, {per_million(line.dollars)} such "
            f"deliveries (left out of the rows above, which are a subscription's later events of the hour).")


def dominant_finding(single: cost.Bill, batched: cost.Bill, logged: list) -> str:
    """`logged`: the PutItem calls that logged events (their item sizes)."""
    ddb, ddb_b = single.by_service().get("DynamoDB", 0.0), batched.by_service().get("DynamoDB", 0.0)
    log = sum(l.dollars for l in single.lines if l.what.startswith("DynamoDB PutItem"))
    log_units = sum(l.quantity for l in single.lines if l.what.startswith("DynamoDB PutItem"))
    log_bytes = max((c.new_size or 0 for c in logged), default=0)
    reads = sum(l.quantity for l in single.lines if l.what.startswith("DynamoDB Streams GetRecords"))
    sqs = single.by_service().get("SQS", 0.0)
    return (f"What dominates: DynamoDB, {ddb / single.total:.0%} of an event delivered alone ({per_million(ddb)}; "
            f"{per_million(ddb_b)} ten to a batch), most of it the event's own log write (PutItem of a "
            f"{log_bytes}-byte item on the events table, naming its subscriptions, {log_units:g} write unit, "
            f"{per_million(log)}), which events/poll reads and which every outcome pays whether anyone subscribes "
            f"or not: without it an event delivered alone would cost {per_million(single.total - log)}. The one "
            f"write is also the delivery's hand-off: the stream carries it to event-delivery, and the mapping's "
            f"GetRecords ({reads:g} a batch here) are free, as DynamoDB bills no Lambda trigger's reads. "
            + ("No SQS request is made for an event delivered at its first try."
               if sqs == 0 else f"SQS: **{per_million(sqs)}**, though no first try failed: see its calls below."))


def retry_finding() -> str:
    """What a delivery whose first try fails adds: the retry queue's requests, as event-delivery
    and the queue's mapping make them (not measured here)."""
    fifo = cost.PRICES["sqs_fifo_request"]
    return (f"SQS is paid only when a first try fails (not measured here): event-delivery puts the delivery on the "
            f"FIFO retry queue (SendMessageBatch); the queue's mapping takes it (ReceiveMessage) and event-delivery "
            f"holds it for its backoff (ChangeMessageVisibility); taken again when due (ReceiveMessage) and sent, it "
            f"is deleted (DeleteMessageBatch); each further failure adds a ChangeMessageVisibility and a "
            f"ReceiveMessage. At {per_million(fifo)} requests each, a delivery sent at its first retry adds five, "
            f"{per_million(5 * fifo)} such deliveries, beside event-delivery's invocations for it.")


def lambda_finding(single: cost.Bill, e: dict) -> str:
    durations = [inv.duration_ms for s in e["singles"] for inv in s.deliveries]
    receiver = statistics.median(s["receiver_ms"] for s in e["latency"])
    per_100ms = cost.lambda_second(MEMORY_MB) * 0.1
    return (f"Lambda is {per_million(single.by_service().get('Lambda', 0.0))} of an event delivered alone: "
            f"event-delivery's request fee (one a batch) and its duration (median {statistics.median(durations):.1f} "
            f"ms here, where the receiver answers in {receiver:.2f} ms; at {MEMORY_MB} MB every 100 ms a remote "
            f"receiver takes to answer adds {per_million(per_100ms)} events), and what publishing adds to "
            f"notification-handler's invocation (median {statistics.median(e['added_ms']):.2f} ms, the same handler "
            f"without events measured beside it).")


def latency_finding(timing: list[results.EventsTiming], poll_ms: float) -> str:
    end, handler, streamed, delivery = timing
    return (f"Locally the way takes {end.p50_ms:.1f} ms at the median ({end.p95_ms:.1f} ms p95) against a floor of "
            f"{end.floor_p50_ms:.1f} ms: the handler's invocation {handler.p50_ms:.1f} ms (floor "
            f"{handler.floor_p50_ms:.1f} ms), on the stream {streamed.p50_ms:.1f} ms, event-delivery to the 2xx "
            f"{delivery.p50_ms:.1f} ms (floor {delivery.floor_p50_ms:.1f} ms). Most of the gap to the floor is the "
            f"wait for the mapping's next read: it reads every {poll_ms:g} ms while it has nothing (Lambda reads a "
            f"shard four times a second), so an event waits half that on average. The event is on the stream once "
            f"the handler's PutItem, its last call, is answered, so the delivery may start just before the handler "
            f"returns. Deployed, each AWS call and the POST are network round trips, and the stream and Lambda's "
            f"poller take their own time; none of that is measured here.")


def summarize_events(e: dict) -> tuple[results.EventsDelivery, cost.Bill, cost.Bill]:
    """The figures of the events part, and the bills of an event delivered alone and in a batch
    (the median of each by price)."""
    added = statistics.median(e["added_ms"])
    single = median_bill([event_bill(s, added) for s in e["singles"]])
    batched = median_bill([event_bill(s, added) for s in e["backlogs"]])
    poll_ms = e["poll_ms"]
    timing = timings(e["latency"], poll_ms)
    backlog = e["backlogs"][0].events
    targets = [
        results.Target(f"a delivered event ≤ ${PRICE_TARGET:.2f} per million, delivered alone (a trickle)",
                       single.total * 1e6, "${:.2f} per million", single.total * 1e6 <= PRICE_TARGET),
        results.Target(f"a delivered event ≤ ${PRICE_TARGET:.2f} per million, {backlog} to a batch (a backlog)",
                       batched.total * 1e6, "${:.2f} per million", batched.total * 1e6 <= PRICE_TARGET),
        results.Target(f"p50 from the outcome's invocation to the receiver's 2xx ≤ {P50_TARGET_MS / 1000:g} s "
                       "(local stack)", timing[0].p50_ms, "ms", timing[0].p50_ms <= P50_TARGET_MS),
    ]
    intro = (
        f"One webhook subscription to `job.ended` (made through mcp-tools' `events/subscribe`, its challenge answered "
        f"by bench/webhook_sink.py, a receiver on 127.0.0.1 with keep-alive), then each event's whole way: "
        f"notification-handler records a job's outcome and publishes its event (shared/usecases/src/events.rs: the "
        f"owner's subscriptions read, the event logged once on the events table, naming them), the table's stream "
        f"hands the new item to event-delivery through Lambda's event source mapping (its filter passes only new "
        f"items that name webhooks), event-delivery reads the subscription and POSTs the event signed. Price: "
        f"{len(e['singles'])} events each published and delivered alone, the median by price; and "
        f"{len(e['backlogs'])} backlogs of {backlog} taken as one batch (the mapping's BatchSize), the median. The "
        f"template sets no batching window, so a trickle is a batch of 1 (a window would gather a trickle into fewer "
        f"invocations, each event waiting up to the window). The mapping's calls are counted as it makes them, one GetRecords a batch, and priced as "
        f"DynamoDB prices a Lambda trigger's: free, as are its reads of an idle stream. The FIFO queue is "
        f"event-delivery's retry queue: an event delivered at its first try makes no SQS request. The outcome's own "
        f"recording is the job's (the rows above). Time: {len(e['latency'])} events one after another, after "
        f"warm-up, the stream read by the local stack's mapping (scripts/event_source_mappings.py) (every {poll_ms:g} ms while it has nothing), "
        f"each event at a random moment of its cycle of reads; percentiles over those events, each floor measured right after its event. This part is made by the cost "
        f"run (`make bench-cost`), not by the latency sections above it.")
    logged = [c for s in e["singles"] for c in s.calls["publish"] if c.operation == "DynamoDB PutItem"]
    findings = [dominant_finding(single, batched, logged), retry_finding(), lambda_finding(single, e),
                first_delivery_finding(e), calls_finding(e), latency_finding(timing, poll_ms)]
    return (results.EventsDelivery(intro, backlog, terms(single, batched), single.total, batched.total, timing, targets,
                                   findings), single, batched)


def events_headline(single: cost.Bill, batched: cost.Bill, backlog: int, p50_ms: float, listen: cost.Bill | None,
                    poll: cost.Bill | None) -> str:
    """The sentence beside the listen's: a pushed event's price against a minute of each."""
    against = ""
    if listen is not None and poll is not None:
        against = (f", against {per_million(listen.total)} minutes held on a listen and {per_million(poll.total)} "
                   f"minutes of polling: one outcome pushed costs {single.total / poll.total:.0%} of one minute's "
                   f"polling and {single.total / listen.total:.1%} of one minute's listen")
    return (f" Pushed to a webhook instead (MCP Events), a `job.ended` event costs **{per_million(single.total)} "
            f"events** delivered alone and {per_million(batched.total)} {backlog} to a batch{against}, and reaches the "
            f"receiver {p50_ms:.0f} ms after its outcome's notification on the local stack (median; below).")
