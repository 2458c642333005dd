"""The doctor's checks of MCP Events' webhook deliveries (scripts/doctor.py): the delivery queue
(EventDeliveryQueue, the stack output EventDeliveryQueueUrl) feeds event-delivery through an
enabled event source mapping, and its dead-letter queue (EventDeliveryDLQ) is empty.

A delivery in the DLQ is a warning, not a FAIL: its event stays in the owner's log, where
events/poll still finds it; only its push is late. (A receiver that stays down pauses its
subscription, PAUSE_AFTER_SECS, well before 20 receives: what reaches the DLQ is a message
event-delivery could not read, a subscription it could not read or record, or the function
failing.) Once the cause is fixed, SQS moves them back to the delivery queue
(make redrive ... ARGS=--event-deliveries)."""

from __future__ import annotations

from typing import Optional

from botocore.exceptions import BotoCoreError, ClientError

from doctor_callback import dead_letter_url, message
from doctor_result import Result, fail, ok, skip, warn
from doctor_targets import Targets

CHECK = "delivery queue"
# An event source mapping on its way to Enabled: nothing is wrong yet.
SETTLING = ("Creating", "Enabling", "Updating")


def function_name(name_or_arn: str) -> str:
    return name_or_arn.split(":function:", 1)[1].split(":", 1)[0] if ":function:" in name_or_arn else name_or_arn


def check_mapping(lambda_client, t: Targets, queue_arn: str) -> Result:
    """The queue's event source mapping to event-delivery is Enabled."""
    name = queue_arn.rsplit(":", 1)[-1]
    handler = function_name(t.event_delivery) if t.event_delivery else None
    try:
        mappings = [m for page in lambda_client.get_paginator("list_event_source_mappings").paginate(
            EventSourceArn=queue_arn) for m in page["EventSourceMappings"]]
    except (ClientError, BotoCoreError) as e:
        return fail(CHECK, f"the event source mappings of {name} cannot be listed ({message(e)})",
                    "allow whoever runs the doctor lambda:ListEventSourceMappings")
    mine = [m for m in mappings if handler is None or function_name(m.get("FunctionArn", "")) == handler]
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
