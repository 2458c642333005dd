"""What a job costs, priced: the cost table, its headline and the defaults it weighs, from the
parts cost_scenarios.py measured, as a results.Cost."""

from __future__ import annotations

import json

import cost
import results
from cost_scenarios import COST_OUTPUTS, LONG_POLL_DONE_S, LONG_POLL_WAIT_S
from events_summary import events_headline, summarize_events
from functions import S3_INPUT_SETTING
from lambda_events import OUTPUT_BODY
from listen_cost import HELD_S, POLL_EVERY_S

OUTPUT_LABELS = {"small": f"small ({len(OUTPUT_BODY)} B)", "medium": "medium (64 KiB)", "large": "large (1 MiB)"}
# The trickle the buffer's window is weighed at: a million jobs a month, evenly.
TRICKLE_PER_S = 1e6 / (30 * 24 * 3600)
BUFFER_WINDOW_S = {10: 0, 100: 1}
BUFFER_CHANGE = "SqsBatchSize 10, no window (kept) against 100 with a 1 s window"
S3_INPUT_SCENARIO = f"job, one check, input through S3 ({S3_INPUT_SETTING})"
RESPONSE_IN_S3_SCENARIO = "job, one check, the output not in the notification (no IncludeInferenceResponseIn)"
INPUT_CHANGE = f"{S3_INPUT_SETTING} → the default (inputs up to 128,000 bytes inline)"

NOTES = [
    "SageMaker's own charges (the endpoint's instances, the pipeline's jobs) are excluded; its requests here "
    "(InvokeEndpointAsync, StartPipelineExecution, DescribePipelineExecution) have no per-request fee. "
    "SageMaker's reading an input from S3 (only when submit_job stored it there), writing the output to S3 and "
    "publishing the notification are counted: the bench makes these calls as SageMaker would, and the bucket's "
    "and the topic's owner pays for them.",
    "Lambda: each invocation's measured duration on this machine against moto, billed per ms at 128 MB "
    "(arm64); a real service answers at its own speed, and moto answers a batch's calls one at a time. "
    "mcp-tools streams its replies (RESPONSE_STREAM) on a Runtime API connection with TCP_NODELAY "
    "(docs/performance.md): no reply waits for a delayed ACK. Warm invocations only: a cold start's init is "
    "billed too for a custom runtime, once per instance.",
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


def per_million(dollars: float) -> str:
    # Rounded first: a sum of scaled lines (a batch's share) carries float dust that would tip a half cent.
    return f"${round(dollars * 1e6, 9):.2f} per million"


def job(parts: dict) -> cost.Bill:
    """The bill of a scenario's parts together."""
    total = cost.Bill()
    for part in parts.values():
        total = total + part.bill()
    return total


def term(b: cost.Bill) -> str:
    d = b.dominant()
    return f"{d.what} ({d.quantity:g} {d.unit}, {per_million(d.dollars)})"


def units(b: cost.Bill) -> str:
    return f"{per_million(b.total)} ({b.units('write units'):g} write units, {b.units('read units'):g} read units)"


def saved(before: float, after: float) -> str:
    if after <= before:
        return f"{(before - after) / before:.0%} ({per_million(before - after)})"
    ratio = after / before
    return f"none: costs {ratio:.1f}x as much" if ratio >= 2 else f"none: costs {ratio - 1:.0%} more"


def s3_puts(b: cost.Bill) -> float:
    return sum(l.quantity for l in b.lines if l.what == "S3 PutObject")


def requests(b: cost.Bill) -> str:
    """What an input's path changes: S3 PUTs (and the units, which should not move)."""
    return (f"{per_million(b.total)} ({s3_puts(b):g} S3 PutObject, {b.units('write units'):g} write units, "
            f"{b.units('read units'):g} read units)")


def same_units(a: cost.Bill, b: cost.Bill) -> bool:
    """The same calls at the same units: only the Lambda durations differ, by noise."""
    return all(a.units(u) == b.units(u) for u in ("write units", "read units", "requests"))


def invocations(path: cost.Bill) -> float:
    return sum(l.quantity for l in path.lines if l.what == "notification-handler requests")


class Table:
    """The cost table's rows, in the order they are priced."""

    def __init__(self):
        self.rows: list[results.CostRow] = []

    def row(self, scenario: str, design: str, output: str, b: cost.Bill) -> cost.Bill:
        d = b.dominant()
        self.rows.append(results.CostRow(scenario, design, output, b.by_service(), b.total, b.total * 1e6,
                                         b.units("write units"), b.units("read units"),
                                         f"{d.what}, {d.quantity:g} {d.unit}: {per_million(d.dollars)}"))
        return b


def summarize_cost(c: dict) -> results.Cost:
    """The cost table, its headline, and the defaults it weighs, from bench_cost's parts."""
    table = Table()
    new, old, reference = list(dict.fromkeys(design for design, _ in c["jobs"]))
    jobs = {key: table.row("job, one check", key[0], OUTPUT_LABELS[key[1]], job(parts))
            for key, parts in c["jobs"].items()}
    in_s3 = (table.row(RESPONSE_IN_S3_SCENARIO, new, OUTPUT_LABELS["small"], job(c["response_in_s3"]))
             if c.get("response_in_s3") else None)
    poll_label = f"job, long-poll check (wait_secs={LONG_POLL_WAIT_S}, notified {LONG_POLL_DONE_S:g} s in)"
    polls = {key: table.row(poll_label, key[0], OUTPUT_LABELS[key[1]], job(parts))
             for key, parts in c["long_polls"].items()}
    through_s3 = {key: table.row(S3_INPUT_SCENARIO, key[0], OUTPUT_LABELS[key[1]], job(parts))
                  for key, parts in c.get("s3_input_jobs", {}).items()}
    buffered = buffer_rows(c, table, new)
    training = job(c["training"]).add(cost.Line("EventBridge", "EventBridge status change event", 1, "events",
                                                cost.PRICES["eventbridge_aws_event"]))
    table.row("training run: trigger_training, the Succeeded event routed, one check_training_status", "Rust", "n/a",
              training)

    held = listen_rows(c, table)
    events, events_sentence = events_rows(c, table, held)

    changes = (inline_changes(jobs, polls, old, new) + input_changes(jobs, through_s3) + buffer_changes(buffered)
               + backoff_changes(c, new))
    return results.Cost(region=cost.PRICES_REGION, checked=cost.PRICES_CHECKED, prices=dict(cost.PRICES),
                        sources=list(cost.SOURCES), rows=table.rows,
                        headline=headline(jobs, polls, new, old, reference, c["jobs"][(new, "small")])
                        + response_headline(jobs[(new, "small")], in_s3) + input_headline(jobs, through_s3, new)
                        + reads_headline(c["jobs"][(new, "small")]) + listen_headline(held) + events_sentence,
                        changes=changes, notes=list(NOTES), events=events)


def listen_rows(c: dict, table: Table) -> tuple[cost.Bill, cost.Bill, dict] | None:
    """One task kept in view for a minute: a listen held, against polling tasks/get, and one task
    of many on one listen (the rows' "per million" is then per million task-minutes). Returns
    the listen's bill, polling's, and each shared listen's per task by its count of tasks."""
    held = c.get("held_minute")
    if not held:
        return None
    listen = cost.bill(held["listen"]["calls"], held["listen"]["invocations"])
    poll = cost.bill(held["poll"]["calls"], held["poll"]["invocations"])
    table.row(f"one working task for a minute: a subscriptions/listen held (LISTEN_MAX_SECS={HELD_S})", "Rust",
              "n/a", listen)
    table.row(f"one working task for a minute: tasks/get every {POLL_EVERY_S} s ({len(held['poll']['invocations'])} "
              f"calls)", "Rust", "n/a", poll)
    per_task = {}
    for count, shared in sorted(held.get("shared", {}).items()):
        per_task[count] = cost.bill(shared["calls"], shared["invocations"]).scaled(1 / count)
        table.row(f"one working task for a minute, one of {count} on one subscriptions/listen held (the listen's "
                  f"price over its {count} tasks)", "Rust", "n/a", per_task[count])
    return listen, poll, per_task


def events_rows(c: dict, table: Table, held: tuple[cost.Bill, cost.Bill] | None
                ) -> tuple[results.EventsDelivery | None, str]:
    """MCP Events: one event delivered to a webhook, alone and in a batch (the rows' "per
    million" is then per million events), the figures of its part of the section, and its
    sentence beside the listen's."""
    if not c.get("events"):
        return None, ""
    events, single, batched = summarize_events(c["events"])
    backlog = c["events"]["backlogs"][0].events
    table.row("one job.ended event to a webhook (MCP Events: logged, handed on by the events table's stream, POSTed "
              "by event-delivery), delivered alone (a batch of 1)", "Rust", "n/a", single)
    table.row(f"the same, {backlog} logged and delivered as one batch (BatchSize {backlog})", "Rust", "n/a", batched)
    listen, poll = held[:2] if held else (None, None)
    return events, events_headline(single, batched, backlog, events.timings[0].p50_ms, listen, poll)


def listen_headline(held: tuple[cost.Bill, cost.Bill] | None) -> str:
    if held is None:
        return ""
    listen, poll, per_task = held
    reads = sum(l.quantity for l in listen.lines if l.what == "DynamoDB BatchGetItem")
    shared = "; ".join(
        f"one of {count} tasks on one listen, {per_million(bill.total)} task-minutes "
        f"({bill.total / poll.total:.2g}x polling; its reads {per_million(bill.by_service().get('DynamoDB', 0))})"
        for count, bill in sorted(per_task.items()))
    return (f" Keeping one task in view for a minute costs {per_million(listen.total)} minutes held on a "
            f"`subscriptions/listen` ({per_million(listen.by_service()['Lambda'])} of it Lambda's wall time, "
            f"{reads:g} read units of batched reads) against {per_million(poll.total)} polling `tasks/get` every "
            f"{POLL_EVERY_S} s: a listen is {listen.total / poll.total:.0f}x the price, for an outcome pushed within "
            f"a second instead of found {POLL_EVERY_S / 2:g} s late on average."
            + (f" A listen naming many tasks shares its one held invocation: {shared}." if shared else ""))


def buffer_rows(c: dict, table: Table, new: str) -> dict:
    """A job through the SQS buffer at each batch size: by batch size, (the notification path
    per notification, the whole job)."""
    base = c["jobs"][(new, "small")]
    buffered = {}
    for batch_size, measured in c["buffer"].items():
        path = measured["path"].bill().scaled(1 / measured["notifications"])
        # SNS's delivery into the queue is a SendMessage the emulator does not see (moto delivers in-process).
        path.add(cost.Line("SQS", "SQS SendMessage (SNS delivering)", 1, "requests", cost.PRICES["sqs_request"]))
        window = BUFFER_WINDOW_S[batch_size]
        buffered[batch_size] = (path, table.row(
            f"job, one check; SQS buffer, SqsBatchSize {batch_size}, SqsBatchingWindowSecs {window} (a backlog)",
            new, OUTPUT_LABELS["small"],
            base["submit"].bill() + base["sagemaker"].bill() + path + base["check"].bill()))
    return buffered


def stored_by(parts: dict) -> str:
    """Whose S3 PUTs a job's are, from where the emulator counted them."""
    submit, sagemaker = s3_puts(parts["submit"].bill()), s3_puts(parts["sagemaker"].bill())
    who = (["the input that submit_job stores"] if submit else []) + (["the output SageMaker writes"] if sagemaker
                                                                       else [])
    return " and ".join(who) or "no S3 PUT"


def headline(jobs: dict, polls: dict, new: str, old: str, reference: str, small_parts: dict) -> str:
    small, medium = jobs[(new, "small")], jobs[(new, "medium")]
    ref_small, ref_medium, old_medium = jobs[(reference, "small")], jobs[(reference, "medium")], jobs[(old, "medium")]
    poll = polls[(new, "small")]
    return (
        f"A job (submit_job, SageMaker's output and notification, the notification recorded, one check_job_status; "
        f"SNS direct) costs **{per_million(small.total)} jobs** with a small output and {per_million(medium.total)} "
        f"with a 64 KiB one ({cost.PRICES_REGION} on-demand; SageMaker's instances excluded). The dominant term is "
        f"{term(small)}: {stored_by(small_parts)}. Lambda is "
        f"{per_million(small.by_service()['Lambda'])} of it; a long-poll check instead of a plain one makes it "
        f"{per_million(poll.total)}, the wait billed as duration. The Python reference's design (whole result "
        f"inline, one Lambda per notification) costs {per_million(ref_small.total)} with a small output "
        f"({ref_small.total / small.total:.2f}x) and {per_million(ref_medium.total)} with a 64 KiB one "
        f"({ref_medium.total / medium.total:.1f}x), its dominant term then {term(ref_medium)}; the Rust handler at "
        f"the old 64 KiB limit costs the same {per_million(old_medium.total)}: the difference is where the result "
        f"is stored, not the language.")


def response_headline(small: cost.Bill, in_s3: cost.Bill | None) -> str:
    """The notification with the response in it (the stack's wiring) against one without."""
    if in_s3 is None:
        return ""
    return (f" Every notification above carries its response as SageMaker publishes it to an endpoint the stack "
            f"wires (IncludeInferenceResponseIn, outputs up to 128 KB): the small job's handler reads nothing from "
            f"S3. From an endpoint wired without it (`make doctor` warns of one) the handler reads the output "
            f"from S3 and the same job costs {per_million(in_s3.total)}, "
            f"{per_million(in_s3.total - small.total)} more.")


def input_headline(jobs: dict, through_s3: dict, new: str) -> str:
    """The input's two paths, small output: both totals and the difference (nothing when the
    run had no input-through-S3 scenario)."""
    if (new, "small") not in through_s3:
        return ""
    inline, s3 = jobs[(new, "small")], through_s3[(new, "small")]
    s3_more = s3.by_service().get("S3", 0.0) - inline.by_service().get("S3", 0.0)
    return (f" Those jobs send their input inline in InvokeEndpointAsync's Body (the default, up to 128,000 bytes): "
            f"with every input through S3 ({S3_INPUT_SETTING}) the same job costs {per_million(s3.total)} "
            f"({s3_puts(s3):g} S3 PutObject) against {per_million(inline.total)} ({s3_puts(inline):g}), "
            f"**{per_million(s3.total - inline.total)} jobs** more, {per_million(s3_more)} of it S3.")


# Reads one counter write takes at the bench's CALLER_READS_PER_MINUTE (bench/functions.py).
READ_BATCH = 10


def read_counter(check) -> object | None:
    """The write that counted a check against CALLER_READS_PER_MINUTE (its key
    `quota#<owner>#reads#<minute>`), among the check's calls; None when the quota was off."""
    for call in check.calls:
        if call.operation == "DynamoDB UpdateItem":
            key = json.loads(call.body or b"{}").get("Key", {}).get("inference_id", {}).get("S", "")
            if key.startswith("quota#") and "#reads#" in key:
                return call
    return None


def reads_headline(small_parts: dict) -> str:
    """What counting a read costs, per million reads, from the measured check's counter write
    (nothing when the run counted no reads). One write takes a batch of reads for the instance
    (shared/usecases/src/quota.rs: a sixtieth of the limit, 1 to 10; the bench's limit gives
    10), so a read costs a tenth of that write."""
    call = read_counter(small_parts["check"])
    if call is None:
        return ""
    line = cost.price_call(call)
    batch = READ_BATCH
    return (f" Every read (a status check, a provenance walk, resources/read, tasks/get) is first counted against "
            f"CALLER_READS_PER_MINUTE: one conditional UpdateItem of a {call.new_size}-byte counter, "
            f"{line.quantity:g} write unit, takes {batch} reads at once for the function instance, "
            f"**${line.dollars * 1e6 / batch:.3g} per million reads** (the check above carries its batch's whole "
            f"write). A read over the quota is refused before anything else is read; the first refusal of a "
            f"caller's minute is one refused write, billed the same, and the instance then refuses the rest of "
            f"that minute without writing.")


def input_changes(jobs: dict, through_s3: dict) -> list[results.CostChange]:
    """The input inline by default against every input through S3, at each output size."""
    return [results.CostChange(INPUT_CHANGE, f"{OUTPUT_LABELS[key[1]]} output, one check", requests(before),
                               requests(jobs[key]), saved(before.total, jobs[key].total))
            for key, before in through_s3.items()]


def inline_changes(jobs: dict, polls: dict, old: str, new: str) -> list[results.CostChange]:
    """The inline limit's new default against the old, at each output size and check."""
    changes = []
    for size in COST_OUTPUTS:
        for label, table in (("one check", jobs), ("long-poll check", polls)):
            before, after = table[(old, size)], table[(new, size)]
            changes.append(results.CostChange(
                "INLINE_RESULT_MAX_BYTES 65536 → 4096", f"{OUTPUT_LABELS[size]} output, {label}", units(before),
                units(after), "none (the same calls and units)" if same_units(before, after)
                else saved(before.total, after.total)))
    return changes


def buffer_changes(buffered: dict) -> list[results.CostChange]:
    """The buffer's batch size and window: on a backlog (measured) and on a trickle (model)."""
    (path10, _), (path100, _) = buffered[10], buffered[100]
    trickle = cost.messages_per_invocation(100, 1, TRICKLE_PER_S)
    request = cost.PRICES["lambda_request"]
    waiting = 1 * cost.lambda_second(128)
    return [
        results.CostChange(
            BUFFER_CHANGE, "a backlog of 100 notifications (measured)",
            f"{per_million(path10.total)} notifications ({invocations(path10):.2f} invocations each)",
            f"{per_million(path100.total)} notifications ({invocations(path100):.2f} invocations each)",
            saved(path10.total, path100.total)),
        results.CostChange(
            BUFFER_CHANGE, "a trickle, a million jobs a month (model)",
            f"1 invocation a notification: {per_million(request)} in requests",
            f"{trickle:.2f} notifications an invocation: {per_million(request / trickle)} in requests, and each "
            f"notification recorded up to 1 s later: {per_million(waiting)} of a waiting check's duration",
            saved(request, request / trickle + waiting)),
    ]


def backoff_changes(c: dict, new: str) -> list[results.CostChange]:
    """The long poll's backoff against the other schedules: a wait of 20 s (a plain call's
    longest) on a job that completes at a random moment in it."""
    polled = c["long_polls"][(new, "small")]["check"]
    reads = [call for call in polled.calls if call.operation == "DynamoDB GetItem"]
    pending_units = cost.read_units(reads[0].read_sizes, reads[0].consistent)
    done_units = cost.read_units(reads[-1].read_sizes, reads[-1].consistent)
    schedules = {name: cost.expected_long_poll(delays, 20, pending_units, done_units)
                 for name, delays in cost.POLL_SCHEDULES.items()}
    built_name, built = next(iter(schedules.items()))
    return [results.CostChange(
        f"long-poll backoff {built_name} (kept) against {name}",
        "wait_secs=20 on a job that completes at a random moment in it (model; read sizes measured)",
        f"{per_million(built['dollars'])} ({built['reads']:.1f} reads, {built['seconds']:.2f} s waited)",
        f"{per_million(other['dollars'])} ({other['reads']:.1f} reads, {other['seconds']:.2f} s waited)",
        saved(built["dollars"], other["dollars"])) for name, other in list(schedules.items())[1:]]
