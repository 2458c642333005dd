"""The doctor's checks of the callback queue (scripts/doctor.py): where the pipelines'
CallbackSteps send what they ask a person (the stack output PipelineCallbackQueueUrl;
docs/approvals.md). SageMaker sends a CallbackStep's message as the pipeline's execution role
(DescribePipeline's RoleArn), so that role must be allowed sqs:SendMessage on the queue (its own
policy, and no denial in the queue policy) and, when the queue is encrypted with a customer
managed key, kms:GenerateDataKey and kms:Decrypt on that key. Each pipeline the stack starts is
checked (PipelineName, CatalogPipelineNames). A pipeline without a CallbackStep sends nothing, so
a denial there is a warning; a CallbackStep that names another queue is one too (nobody here is
asked)."""

from __future__ import annotations

import json
from typing import Optional

from botocore.exceptions import BotoCoreError, ClientError

from doctor_iam import ResourcePolicies, check_role
from doctor_result import Result, fail, ok, skip, warn
from doctor_targets import Targets

CHECK = "callback queue"


def message(e: Exception) -> str:
    return e.response["Error"].get("Message", str(e)) if isinstance(e, ClientError) else str(e)


def same_queue(url: str, other: str) -> bool:
    """Whether two queue URLs name one queue: by account and name, whatever the host's form
    (sqs.<region>.amazonaws.com, the legacy queue.amazonaws.com, an emulator's)."""
    return url.rstrip("/").split("/")[-2:] == other.rstrip("/").split("/")[-2:]


def callback_steps(steps: list) -> list:
    """The definition's Callback steps, those inside a Condition step's branches too."""
    found = []
    for step in steps or []:
        if step.get("Type") == "Callback":
            found.append(step)
        arguments = step.get("Arguments") if isinstance(step.get("Arguments"), dict) else {}
        found += callback_steps(arguments.get("IfSteps", []) + arguments.get("ElseSteps", []))
    return found


def encryption(kms, attributes: dict, t: Targets) -> tuple:
    """The queue's encryption line, and the customer managed key senders must be allowed (or None)."""
    key_id = attributes.get("KmsMasterKeyId")
    if not key_id:
        if attributes.get("SqsManagedSseEnabled") == "true":
            return ok(CHECK, f"{t.callback_queue_url} is encrypted with SSE-SQS (senders need no KMS permission)"), None
        return warn(CHECK, f"{t.callback_queue_url} is not encrypted at rest: each question and its token are "
                           "kept as sent", f"aws sqs set-queue-attributes --queue-url {t.callback_queue_url} "
                                       "--attributes SqsManagedSseEnabled=true (the stack's queue has it)"), None
    if key_id == "alias/aws/sqs":
        return ok(CHECK, f"{t.callback_queue_url} is encrypted with the AWS managed key alias/aws/sqs (it allows "
                         "this account's senders)"), None
    try:
        key = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    except (ClientError, BotoCoreError) as e:
        return fail(CHECK, f"its key {key_id} cannot be described ({message(e)})",
                    "allow whoever runs the doctor kms:DescribeKey on it; if the key is gone, set the queue's "
                    "KmsMasterKeyId to one that exists (nothing can be sent to the queue meanwhile)"), None
    if key.get("KeyManager") == "AWS":
        return ok(CHECK, f"{t.callback_queue_url} is encrypted with the AWS managed key {key['Arn']}"), None
    if key.get("KeyState") != "Enabled":
        return fail(CHECK, f"its key {key['Arn']} is {key.get('KeyState')}: no CallbackStep can send to the queue",
                    f"aws kms enable-key --key-id {key['Arn']} (aws kms cancel-key-deletion first if it is "
                    "PendingDeletion), or set the queue's KmsMasterKeyId to an enabled key"), None
    return ok(CHECK, f"{t.callback_queue_url} is encrypted with the customer managed key {key['Arn']} (senders "
                     "need kms:GenerateDataKey and kms:Decrypt on it)"), key["Arn"]


def check_sender(sm, iam, policies: ResourcePolicies, t: Targets, pipeline: str, queue: str,
                 key: Optional[str]) -> list:
    """The lines for one pipeline: its role may send its CallbackSteps' messages to the queue."""
    check = f"pipeline {pipeline} role"
    try:
        described = sm.describe_pipeline(PipelineName=pipeline)
        definition = json.loads(described.get("PipelineDefinition") or "{}")
    except (ClientError, BotoCoreError, ValueError) as e:
        return [skip(check, f"{pipeline} cannot be read ({message(e)}): see its pipeline line")]
    steps = callback_steps(definition.get("Steps", []))
    needed = [("callback queue", "sqs:SendMessage", queue, queue)]
    if key:
        needed += [("callback queue's key", action, key, key) for action in ("kms:GenerateDataKey", "kms:Decrypt")]
    lines = check_role(iam, policies, f"pipeline {pipeline}", described["RoleArn"], needed,
                       "send its CallbackSteps' questions to the callback queue")
    if not steps:
        # Nothing is sent yet: a missing grant matters only once a CallbackStep is added.
        for line in lines:
            line.detail += f" ({pipeline} has no CallbackStep yet)"
            line.status = "warn" if line.status == "FAIL" else line.status
    return lines + [elsewhere(t, pipeline, step) for step in steps
                    if isinstance(step.get("SqsQueueUrl"), str) and not same_queue(step["SqsQueueUrl"],
                                                                                   t.callback_queue_url)]


def elsewhere(t: Targets, pipeline: str, step: dict) -> Result:
    return warn(f"pipeline {pipeline} CallbackStep {step.get('Name')}",
                f"it sends to {step['SqsQueueUrl']}, not the stack's callback queue: its question reaches nobody "
                "through MCP", f"set its SqsQueueUrl to {t.callback_queue_url} (the stack output "
                               "PipelineCallbackQueueUrl), if it should ask through MCP")


def dead_letter_url(sqs, attributes: dict) -> Optional[str]:
    """The URL of the queue's dead-letter queue (its RedrivePolicy), or None."""
    try:
        target = json.loads(attributes.get("RedrivePolicy") or "{}").get("deadLetterTargetArn", "")
        account, name = target.split(":")[4:6]
        return sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
    except (ValueError, ClientError, BotoCoreError):
        return None


def check_callback(session, sm, iam, policies: ResourcePolicies, t: Targets) -> list:
    """The queue's line and each pipeline's; learns the queue's DLQ (t.callback_dlq_url) when the
    stack did not name it, for the DLQ checks."""
    if not t.callback_queue_url:
        if t.inference_only:
            return [ok(CHECK, "none: an inference-only stack runs no pipeline that could ask")]
        return [skip(CHECK, "the callback queue is not known (give --callback-queue-url)")]
    sqs = session.client("sqs")
    try:
        attributes = sqs.get_queue_attributes(QueueUrl=t.callback_queue_url, AttributeNames=["All"])["Attributes"]
    except (ClientError, BotoCoreError) as e:
        return [fail(CHECK, f"{t.callback_queue_url} cannot be read ({message(e)})",
                     "give the stack output PipelineCallbackQueueUrl; redeploy the stack if the queue is gone")]
    t.callback_dlq_url = t.callback_dlq_url or dead_letter_url(sqs, attributes)
    line, key = encryption(session.client("kms"), attributes, t)
    pipelines = list(dict.fromkeys(p for p in [t.pipeline, *t.catalog_pipelines] if p))
    return [line] + [found for pipeline in pipelines
                     for found in check_sender(sm, iam, policies, t, pipeline, attributes["QueueArn"], key)]
