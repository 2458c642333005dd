"""The doctor's checks of MCP Events' webhook deliveries (scripts/doctor.py). A delivery's first
try comes from the events table's stream: the table (EventsTable) streams NEW_IMAGE (or
NEW_AND_OLD_IMAGES), event-delivery has an enabled event source mapping on that stream
(EventDeliveryStreamEventSource) with the stack's filter (new events marked for webhooks) and an
on-failure destination, and that destination (EventStreamFailureQueue) is empty. Retries go
through the delivery queue (EventDeliveryQueue, the stack output EventDeliveryQueueUrl), which
feeds event-delivery through an enabled event source mapping, and its dead-letter queue
(EventDeliveryDLQ) is empty.

A record in the stream failure queue is a warning, not a FAIL: it names a batch of the stream
(shard, sequence numbers) whose webhooks event-delivery gave up on after 10 retries or 6 hours;
the events themselves stay in the owner's log, where events/poll reads them. Nothing moves those
records back (they are not deliveries): once their cause is found, the queue is purged.

A delivery in the DLQ is a warning, not a FAIL: its event stays in the owner's log, where
events/poll still finds it; only its push is late. (A receiver that stays down pauses its
subscription, PAUSE_AFTER_SECS, well before 20 receives: what reaches the DLQ is a message
event-delivery could not read, a subscription it could not read or record, or the function
failing.) Once the cause is fixed, SQS moves them back to the delivery queue
(make redrive ... ARGS=--event-deliveries)."""

from __future__ import annotations

import json
from typing import Optional

from botocore.exceptions import BotoCoreError, ClientError

from doctor_callback import dead_letter_url, message
from doctor_iam import queue_arn_of_url
from doctor_result import Result, fail, ok, skip, warn
from doctor_targets import Targets

CHECK = "delivery queue"
STREAM = "events stream"
STREAM_MAPPING = "stream mapping"
STREAM_FAILURES = "stream failure queue"
# An event source mapping on its way to Enabled: nothing is wrong yet.
SETTLING = ("Creating", "Enabling", "Updating")
# The stream views that carry the event as logged (event-delivery reads the new image).
NEW_IMAGES = ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")
# The stack's filter on the stream (EventDeliveryStreamEventSource): new events the recorders
# marked for webhooks.
WEBHOOK_EVENTS = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"webhooks": {"BOOL": [True]}}}}


def function_name(name_or_arn: str) -> str:
    return name_or_arn.split(":function:", 1)[1].split(":", 1)[0] if ":function:" in name_or_arn else name_or_arn


def mappings_from(lambda_client, source_arn: str, handler: Optional[str]) -> tuple:
    """The event source mappings of `source_arn`: all of them, and those to `handler` (every one
    when it is not known). Raises ClientError or BotoCoreError when they cannot be listed."""
    mappings = [m for page in lambda_client.get_paginator("list_event_source_mappings").paginate(
        EventSourceArn=source_arn) for m in page["EventSourceMappings"]]
    mine = [m for m in mappings if handler is None or function_name(m.get("FunctionArn", "")) == handler]
    return mappings, mine


def check_mapping(lambda_client, t: Targets, queue_arn: str) -> Result:
    """The queue's event source mapping to event-delivery is Enabled."""
    name = queue_arn.rsplit(":", 1)[-1]
    handler = function_name(t.event_delivery) if t.event_delivery else None
    try:
        mappings, mine = mappings_from(lambda_client, queue_arn, handler)
    except (ClientError, BotoCoreError) as e:
        return fail(CHECK, f"the event source mappings of {name} cannot be listed ({message(e)})",
                    "allow whoever runs the doctor lambda:ListEventSourceMappings")
    if not mine:
        found = ", ".join(function_name(m.get("FunctionArn", "?")) for m in mappings) or "none"
        return fail(CHECK, f"{name} feeds no {'function' if handler is None else handler} (event source mappings: "
                           f"{found}): webhook deliveries wait in it, and expire after 4 days",
                    "redeploy the stack (it creates the event source mapping EventDeliveryEventSource)")
    mapping = mine[0]
    uuid, state = mapping["UUID"], mapping.get("State", "?")
    target = function_name(mapping.get("FunctionArn", "?"))
    if state == "Enabled":
        return ok(CHECK, f"{name} feeds {target} (event source mapping {uuid}, Enabled)")
    reason = f" ({mapping['StateTransitionReason']})" if mapping.get("StateTransitionReason") else ""
    if state in SETTLING:
        return warn(CHECK, f"the event source mapping {uuid} from {name} to {target} is {state}{reason}",
                    "wait a minute (Lambda is changing it), then run the doctor again")
    return fail(CHECK, f"the event source mapping {uuid} from {name} to {target} is {state}{reason}: webhook "
                       "deliveries wait in the queue, and expire after 4 days",
                f"aws lambda update-event-source-mapping --uuid {uuid} --enabled")


def check_delivery_dlq(sqs, t: Targets, url: str) -> Result:
    name = url.rstrip("/").rsplit("/", 1)[-1]
    try:
        attributes = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
    except (ClientError, BotoCoreError) as e:
        return fail(f"DLQ {name}", f"{url} cannot be read ({message(e)})",
                    "give the stack output EventDeliveryDLQUrl; redeploy the stack if the queue is gone")
    waiting = sum(int(attributes.get(a, 0)) for a in ("ApproximateNumberOfMessages",
                                                       "ApproximateNumberOfMessagesNotVisible"))
    if not waiting:
        return ok(f"DLQ {name}", "empty")
    redrive = (f"make redrive STACK={t.stack} ARGS=--event-deliveries" if t.stack
               else f"make redrive QUEUE_URL={url} ARGS=--event-deliveries")
    deliveries = "1 webhook delivery" if waiting == 1 else f"{waiting} webhook deliveries"
    return warn(f"DLQ {name}", f"{deliveries} event-delivery did not finish in 20 receives wait here (late, not "
                               "lost: events/poll still has each event)",
                f"find why in event-delivery's log, by their SQS message ids (a message it could not read, the "
                f"subscriptions table not answering, the function failing), fix that, then {redrive} moves them "
                "back to the delivery queue (docs/operations.md)")


def check_delivery(session, t: Targets) -> list:
    """The delivery queue's line and its DLQ's; learns the DLQ (t.delivery_dlq_url) from the
    queue's RedrivePolicy when the stack did not name it."""
    if not t.delivery_queue_url:
        return [skip(CHECK, "the delivery queue is not known (give --delivery-queue-url)")]
    sqs = session.client("sqs")
    try:
        attributes = sqs.get_queue_attributes(QueueUrl=t.delivery_queue_url,
                                              AttributeNames=["QueueArn", "RedrivePolicy"])["Attributes"]
    except (ClientError, BotoCoreError) as e:
        return [fail(CHECK, f"{t.delivery_queue_url} cannot be read ({message(e)})",
                     "give the stack output EventDeliveryQueueUrl; redeploy the stack if the queue is gone")]
    t.delivery_dlq_url = t.delivery_dlq_url or dead_letter_url(sqs, attributes)
    lines = [check_mapping(session.client("lambda"), t, attributes["QueueArn"])]
    dlq: Optional[str] = t.delivery_dlq_url
    if not dlq:
        return lines + [fail("delivery DLQ", f"{t.delivery_queue_url} has no dead-letter queue: a delivery that "
                                             "keeps failing stays in it until it expires",
                             "redeploy the stack (its RedrivePolicy names EventDeliveryDLQ)")]
    return lines + [check_delivery_dlq(sqs, t, dlq)]


def check_events_stream(dynamodb, t: Targets) -> tuple:
    """The events table's stream line, and the stream's ARN (None when there is no stream)."""
    table = t.events_table
    try:
        described = dynamodb.describe_table(TableName=table)["Table"]
    except (ClientError, BotoCoreError) as e:
        return fail(STREAM, f"the events table {table} cannot be described ({message(e)})",
                    "give the stack output EventsTableName, and allow whoever runs the doctor "
                    "dynamodb:DescribeTable"), None
    spec, arn = described.get("StreamSpecification") or {}, described.get("LatestStreamArn")
    if not spec.get("StreamEnabled") or not arn:
        return fail(STREAM, f"{table} has no stream: no new event reaches event-delivery, so no webhook is pushed "
                            "(events/poll still has every event)",
                    "redeploy the stack (its EventsTable streams NEW_IMAGE to EventDeliveryStreamEventSource); a "
                    f"stream turned off by hand: aws dynamodb update-table --table-name {table} --stream-specification "
                    "StreamEnabled=true,StreamViewType=NEW_IMAGE, then map event-delivery to the new stream"), None
    view = spec.get("StreamViewType", "?")
    if view not in NEW_IMAGES:
        return fail(STREAM, f"{table} streams {view}, without the new image event-delivery reads: no webhook is "
                            "pushed (events/poll still has every event)",
                    "redeploy the stack (its EventsTable streams NEW_IMAGE)"), arn
    return ok(STREAM, f"{table} streams {view} (stream {arn.rsplit('/', 1)[-1]})"), arn


def filter_patterns(mapping: dict) -> list:
    """The mapping's filter patterns, parsed (a pattern that is not JSON as its text)."""
    patterns = []
    for f in (mapping.get("FilterCriteria") or {}).get("Filters") or []:
        try:
            patterns.append(json.loads(f.get("Pattern", "")))
        except ValueError:
            patterns.append(f.get("Pattern"))
    return patterns


def failure_destination(mapping: dict) -> Optional[str]:
    return ((mapping.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination") or None


def check_stream_mapping(lambda_client, t: Targets, stream_arn: str) -> tuple:
    """event-delivery's mapping on the stream: Enabled, with the stack's filter and an on-failure
    destination. The line, and the destination (None when there is none)."""
    handler = function_name(t.event_delivery) if t.event_delivery else None
    try:
        mappings, mine = mappings_from(lambda_client, stream_arn, handler)
    except (ClientError, BotoCoreError) as e:
        return fail(STREAM_MAPPING, f"the event source mappings of the events stream cannot be listed ({message(e)})",
                    "allow whoever runs the doctor lambda:ListEventSourceMappings"), None
    if not mine:
        found = ", ".join(function_name(m.get("FunctionArn", "?")) for m in mappings) or "none"
        return fail(STREAM_MAPPING, f"the events stream feeds no {'function' if handler is None else handler} (event "
                                    f"source mappings: {found}): no webhook is pushed (events/poll still has every "
                                    "event)",
                    "redeploy the stack (it creates the event source mapping EventDeliveryStreamEventSource)"), None
    mapping = mine[0]
    uuid, state = mapping["UUID"], mapping.get("State", "?")
    target = function_name(mapping.get("FunctionArn", "?"))
    what = f"the event source mapping {uuid} from the events stream to {target}"
    destination = failure_destination(mapping)
    reason = f" ({mapping['StateTransitionReason']})" if mapping.get("StateTransitionReason") else ""
    # What is wrong with it, each with the option of update-event-source-mapping that puts it right.
    wrong = []
    if state != "Enabled" and state not in SETTLING:
        wrong.append((f"it is {state}{reason}: no webhook is pushed (events/poll still has every event)", "--enabled"))
    patterns = filter_patterns(mapping)
    if patterns != [WEBHOOK_EVENTS]:
        criteria = {"Filters": [{"Pattern": json.dumps(WEBHOOK_EVENTS, separators=(",", ":"))}]}
        problem = (f"its filter is {json.dumps(patterns)}, not the stack's {json.dumps(WEBHOOK_EVENTS)}: events "
                   "marked for webhooks may go undelivered") if patterns else (
            "it has no filter: every change to the events table invokes event-delivery, not only new events marked "
            "for webhooks")
        wrong.append((problem, f"--filter-criteria '{json.dumps(criteria)}'"))
    if not destination:
        queue = (queue_arn_of_url(t.stream_failure_queue_url, t.partition, t.region)
                 if t.stream_failure_queue_url else None) or "<EventStreamFailureQueue's ARN>"
        wrong.append(("it has no on-failure destination: a batch given up after its retries leaves no record",
                      f"--destination-config '{json.dumps({'OnFailure': {'Destination': queue}})}'"))
    if wrong:
        return fail(STREAM_MAPPING, f"{what}: " + "; ".join(problem for problem, _ in wrong),
                    f"aws lambda update-event-source-mapping --uuid {uuid} {' '.join(fix for _, fix in wrong)} "
                    "(as the stack's EventDeliveryStreamEventSource has it)"), destination
    if state in SETTLING:
        return warn(STREAM_MAPPING, f"{what} is {state}{reason}",
                    "wait a minute (Lambda is changing it), then run the doctor again"), destination
    last = mapping.get("LastProcessingResult") or ""
    if last.startswith("PROBLEM"):
        line = warn(STREAM_MAPPING, f"{what} is Enabled, but Lambda says {last}",
                    "read event-delivery's log, and what its role lets Lambda do on its behalf (dynamodb:GetRecords "
                    "on the stream, sqs:SendMessage on the failure queue); records 6 hours old are given up on")
        return line, destination
    line = ok(STREAM_MAPPING, f"the events stream feeds {target} (event source mapping {uuid}, Enabled, new events "
                              f"marked for webhooks, batches given up on to {destination.rsplit(':', 1)[-1]})")
    return line, destination


def queue_url_of_arn(sqs, arn: str) -> Optional[str]:
    """The URL of an SQS queue's ARN (an on-failure destination), or None (not SQS, or gone)."""
    parts = arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        return None
    try:
        return sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"]
    except (ClientError, BotoCoreError):
        return None


def check_stream_failures(sqs, url: str) -> Result:
    """The stream failure queue is empty; records in it are a warning saying what they mean."""
    try:
        attributes = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
    except (ClientError, BotoCoreError) as e:
        return fail(STREAM_FAILURES, f"{url} cannot be read ({message(e)})",
                    "give the stack output EventStreamFailureQueueUrl; redeploy the stack if the queue is gone")
    name = url.rstrip("/").rsplit("/", 1)[-1]
    waiting = sum(int(attributes.get(a, 0)) for a in ("ApproximateNumberOfMessages",
                                                       "ApproximateNumberOfMessagesNotVisible"))
    if not waiting:
        return ok(STREAM_FAILURES, f"{name} is empty")
    records = "1 record" if waiting == 1 else f"{waiting} records"
    return warn(STREAM_FAILURES, f"{records} in {name} of events-stream batches event-delivery gave up on (10 retries "
                                 "or 6 hours): those events' webhooks were not pushed (not lost: each event stays in "
                                 "its owner's log, where events/poll reads it, for 24 hours)",
                f"read them (aws sqs receive-message --queue-url {url}: each names its shard and sequence numbers and "
                "when), find why in event-delivery's log at those times and fix that, then aws sqs purge-queue "
                f"--queue-url {url}: they are not deliveries, and nothing redrives them (docs/events.md)")


def check_stream(session, t: Targets) -> list:
    """The events stream's line, its mapping's and its failure queue's; the failure queue is
    learned from the mapping's on-failure destination when the stack did not name it."""
    lines, destination = [], None
    if not t.events_table:
        lines.append(skip(STREAM, "the events table is not known (give --events-table)"))
    else:
        line, stream_arn = check_events_stream(session.client("dynamodb"), t)
        lines.append(line)
        if stream_arn:
            line, destination = check_stream_mapping(session.client("lambda"), t, stream_arn)
            lines.append(line)
        else:
            lines.append(skip(STREAM_MAPPING, "the events table has no stream to map"))
    if not (t.stream_failure_queue_url or destination):
        return lines + [skip(STREAM_FAILURES, "the stream failure queue is not known "
                                              "(give --stream-failure-queue-url)")]
    sqs = session.client("sqs")
    url = t.stream_failure_queue_url or queue_url_of_arn(sqs, destination)
    if not url:
        return lines + [skip(STREAM_FAILURES, f"the stream mapping's on-failure destination {destination} is not a "
                                              "queue this account can read (give --stream-failure-queue-url)")]
    return lines + [check_stream_failures(sqs, url)]
