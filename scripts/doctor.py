#!/usr/bin/env python3
"""Checks that a deployed stack is wired so that jobs and runs finish, one line per check.

    doctor.py --stack-name STACK
    doctor.py --endpoint-name E --success-topic-arn T --error-topic-arn T --bucket B ... (see --help)

Each line is `ok`, `warn` or `FAIL` with what was found; a FAIL says how to fix it. The exit
status is 1 when any check FAILs (warnings do not count), 2 when the stack cannot be read.
The checks:
- endpoint: the async endpoint exists and is InService; it and the checks below that read its
  config (topics, paths, response in message, endpoint role) are run for each endpoint of the
  tool catalog too (CatalogEndpointNames), each line naming the endpoint;
- topics: its EndpointConfig's NotificationConfig names the stack's success and error topics;
- output path / failure path: S3OutputPath and S3FailurePath lie under the prefixes the
  functions may read (s3://IoBucketName/OutputPrefix, .../FailurePrefix);
- response in message (warn only): IncludeInferenceResponseIn has SUCCESS_NOTIFICATION_TOPIC.
  Without it jobs still complete, notification-handler reading each output from S3;
- subscriptions: each topic has a confirmed subscription to notification-handler (or, with the
  SQS buffer, to the buffer queue);
- pipeline: the pipeline exists and its definition declares every parameter PIPELINE_PARAMETERS
  maps a tool argument to; each of the catalog's pipelines (CatalogPipelineNames) exists;
- rule: the EventBridge rule routing pipeline runs to pipeline-router is enabled;
- callback queue: the queue the pipelines' CallbackSteps send their questions to
  (PipelineCallbackQueueUrl) can be read, and how it is encrypted (a disabled or missing key is
  a FAIL, no encryption a warning); for each pipeline (the stack's and the catalog's), its
  execution role (DescribePipeline's RoleArn) may sqs:SendMessage to it, with the queue policy
  given to the simulation, and kms:GenerateDataKey and kms:Decrypt on a customer managed key; a
  pipeline without a CallbackStep gets warnings instead of FAILs, and a CallbackStep whose
  SqsQueueUrl is another queue a warning;
- DLQs: the dead-letter queues are empty (the callback queue's DLQ among them);
- delivery queue: MCP Events' webhook deliveries waiting for a retry (EventDeliveryQueueUrl) feed
  event-delivery through an enabled event source mapping; deliveries waiting in its DLQ are a
  warning with their count and the redrive that moves them back (make redrive ...
  ARGS=--event-deliveries);
- events stream: the events table (EventsTableName) streams NEW_IMAGE (or NEW_AND_OLD_IMAGES);
- stream mapping: event-delivery has an enabled event source mapping on that stream, with the
  stack's filter (new events marked for webhooks) and an on-failure destination;
- stream failure queue: that destination (EventStreamFailureQueueUrl) is empty; records in it are
  a warning: batches whose webhooks were given up on (the events are still in the log for
  events/poll), purged once their cause is found, never redriven;
- alarms: every alarm has an action;
- endpoint role: iam:SimulatePrincipalPolicy says the endpoint's execution role (DescribeEndpoint,
  DescribeEndpointConfig, DescribeModel) may sns:Publish to both topics, s3:PutObject under the
  output and failure prefixes, s3:GetObject under inputs/, and kms:GenerateDataKey and kms:Decrypt
  on the outputs' key (the endpoint config's, and --bucket-kms-key-arn); the topics', bucket's
  and key's own policies are given to the simulation when they can be read;
- function roles: the same for each function's role, on each call its code makes
  (infra/iam-actions.json) on this stack's resources, and kms:Decrypt (and for mcp-tools
  kms:GenerateDataKey) on the keys in play.
Each denial is a FAIL line that prints the IAM statement to add.
With --stack-name every name comes from the stack (its parameters, outputs and resources); an
explicit option overrides one. A check whose names are not known is skipped, and says so.
AWS access is boto3's standard chain (AWS_PROFILE, AWS_ENDPOINT_URL[_<SERVICE>]) in the region
scripts/aws_region.py picks (AWS_REGION, AWS_DEFAULT_REGION, the profile's), which it prints first.
IAM (read only): cloudformation:DescribeStacks, cloudformation:ListStackResources,
sagemaker:DescribeEndpoint, sagemaker:DescribeEndpointConfig, sagemaker:DescribeModel,
sagemaker:DescribePipeline, sns:ListSubscriptionsByTopic, sns:GetSubscriptionAttributes,
sns:GetTopicAttributes, s3:GetBucketPolicy, kms:GetKeyPolicy, kms:DescribeKey, events:DescribeRule,
dynamodb:DescribeTable on the events table,
sqs:GetQueueAttributes, sqs:GetQueueUrl, lambda:ListEventSourceMappings, cloudwatch:DescribeAlarms,
iam:SimulatePrincipalPolicy on the roles.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Callable, Optional

from botocore.exceptions import BotoCoreError, ClientError

import aws_region
from doctor_callback import check_callback
from doctor_delivery import check_delivery, check_stream
from doctor_iam import check_endpoint_role, check_permissions, simulated
from doctor_result import Result, fail, ok, skip, warn
from doctor_targets import SEED_PIPELINE_PARAMETERS, Targets
from stack import StackError, error_status, names, read_stack, under_prefix, wiring_parser

# The DLQs whose messages are failures of the stack (EventDeliveryDLQ, of a subscriber's
# receiver more often, is checked beside its queue: scripts/doctor_delivery.py).
DLQS = ("AsyncFailureDLQ", "PipelineResultsDLQ", "NotificationBufferDLQ", "PipelineCallbackDLQ")
# The functions whose roles are checked, and the template's role each runs with.
FUNCTION_ROLES = {"notification-handler": "NotificationHandlerRole", "pipeline-router": "PipelineRouterRole",
                  "mcp-tools": "McpToolsRole", "event-delivery": "EventDeliveryRole"}


# ------------------------------------------------------------------------------ what to check

def targets_from_stack(session, name: str) -> Targets:
    stack = read_stack(session, name)
    account, partition = stack.account(), stack.partition()
    roles = {fn: f"arn:{partition}:iam::{account}:role/{stack.physical_id(role)}"
             for fn, role in FUNCTION_ROLES.items() if stack.physical_id(role) and account}
    bus = stack.outputs.get("CompletionEventBusName")
    return Targets(
        inference_only=not stack.parameter("PipelineName"),
        function_roles=roles,
        account=account,
        partition=partition,
        results_table=stack.physical_id("ResultsTable"),
        pipeline_results_table=stack.physical_id("PipelineResultsTable"),
        events_table=stack.physical_id("EventsTable"),
        subscriptions_table=stack.physical_id("SubscriptionsTable"),
        delivery_queue_url=stack.physical_id("EventDeliveryQueue"),
        delivery_dlq_url=stack.physical_id("EventDeliveryDLQ"),
        event_delivery=stack.physical_id("EventDeliveryFunction"),
        stream_failure_queue_url=stack.physical_id("EventStreamFailureQueue"),
        pipeline_queue_url=stack.physical_id("PipelineResultsQueue"),
        event_bus=bus,
        bucket_key=stack.parameter("IoBucketKmsKeyArn") or None,
        stack=name,
        endpoint=stack.parameter("AsyncEndpointName"),
        catalog_endpoints=names(stack.parameter("CatalogEndpointNames")),
        catalog_pipelines=names(stack.parameter("CatalogPipelineNames")),
        success_topic=stack.outputs.get("SuccessTopic"),
        error_topic=stack.outputs.get("ErrorTopic"),
        bucket=stack.parameter("IoBucketName"),
        output_prefix=stack.parameter("OutputPrefix", "outputs/"),
        failure_prefix=stack.parameter("FailurePrefix", "failures/"),
        pipeline=stack.parameter("PipelineName"),
        pipeline_parameters=stack.parameter("PipelineParameters", SEED_PIPELINE_PARAMETERS),
        rule=stack.physical_id("PipelineStatusRule"),
        notification_handler=stack.physical_id("NotificationHandlerFunction"),
        buffer_queue_url=stack.physical_id("NotificationBufferQueue"),
        dlq_urls=[u for u in (stack.physical_id(q) for q in DLQS) if u],
        callback_queue_url=stack.physical_id("PipelineCallbackQueue"),
        callback_dlq_url=stack.physical_id("PipelineCallbackDLQ"),
        alarms=stack.of_type("AWS::CloudWatch::Alarm"),
    )


# The options that name a field of Targets (their dest is the field's name): one given replaces
# what the stack says.
OVERRIDES = ("endpoint", "success_topic", "error_topic", "bucket", "output_prefix", "failure_prefix", "pipeline",
             "pipeline_parameters", "rule", "notification_handler", "buffer_queue_url", "catalog_endpoints",
             "catalog_pipelines", "dlq_urls", "alarms", "model_role", "bucket_key", "results_table",
             "pipeline_results_table", "events_table", "pipeline_queue_url", "event_bus", "callback_queue_url",
             "subscriptions_table", "delivery_queue_url", "event_delivery", "stream_failure_queue_url")


def apply_overrides(targets: Targets, args: argparse.Namespace) -> Targets:
    for name in OVERRIDES:
        if getattr(args, name) is not None:
            setattr(targets, name, getattr(args, name))
    for given in args.function_role or []:
        function, sep, arn = given.partition("=")
        if not sep or function not in FUNCTION_ROLES:
            raise ValueError(f"--function-role {given!r}: give FUNCTION=ROLE_ARN, FUNCTION one of "
                             f"{', '.join(FUNCTION_ROLES)}")
        targets.function_roles[function] = arn
    return targets


def parse_pipeline_parameters(text: str) -> dict:
    """`tool_arg=PipelineParam,...` -> {tool_arg: PipelineParam}; ValueError names a bad entry."""
    mapping = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        argument, sep, parameter = entry.partition("=")
        if not sep or not argument.strip() or not parameter.strip():
            raise ValueError(f"PIPELINE_PARAMETERS entry {entry!r} is not tool_arg=PipelineParameterName")
        mapping[argument.strip()] = parameter.strip()
    return mapping


# ------------------------------------------------------------------------------ the checks

def check_endpoint(sm, t: Targets) -> tuple:
    """The endpoint line, and its current EndpointConfig (None when it cannot be read)."""
    if not t.endpoint:
        return skip("endpoint", "no endpoint name (give --endpoint-name)"), None
    try:
        endpoint = sm.describe_endpoint(EndpointName=t.endpoint)
    except ClientError as e:
        return fail("endpoint", f"{t.endpoint} cannot be described ({e.response['Error'].get('Message', e)})",
                    "create it (deploy with ModelName) or set AsyncEndpointName to an existing async endpoint "
                    "in this account and region"), None
    config = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    status = endpoint["EndpointStatus"]
    if status != "InService":
        reason = f" ({endpoint['FailureReason']})" if endpoint.get("FailureReason") else ""
        fix = ("wait until it is InService (creating or updating takes minutes), then run the doctor again"
               if status in ("Creating", "Updating", "SystemUpdating") else
               "read the FailureReason, fix the Model or EndpointConfig, and create or update the endpoint again")
        return fail("endpoint", f"{t.endpoint} is {status}{reason}", fix), config
    return ok("endpoint", f"{t.endpoint} is InService (config {config['EndpointConfigName']})"), config


def wire_fix(t: Targets) -> str:
    command = f"make wire-endpoint STACK={t.stack}" if t.stack else "scripts/wire_endpoint.py with the same names"
    return f"{command} (a new EndpointConfig with the stack's wiring, then UpdateEndpoint)"


def notification_config(config: Optional[dict]) -> dict:
    return ((config or {}).get("AsyncInferenceConfig") or {}).get("OutputConfig", {}).get("NotificationConfig") or {}


def check_topics(config: Optional[dict], t: Targets) -> Result:
    if config is None:
        return skip("topics", "no endpoint config to read")
    if "AsyncInferenceConfig" not in config:
        return fail("topics", f"config {config['EndpointConfigName']} has no AsyncInferenceConfig: not an async endpoint",
                    "point AsyncEndpointName at an asynchronous endpoint, or deploy with ModelName")
    if not (t.success_topic and t.error_topic):
        return skip("topics", "the stack's topics are not known (give --success-topic-arn, --error-topic-arn)")
    n = notification_config(config)
    wrong = [f"{key} is {n.get(key) or 'not set'} (expected {want})"
             for key, want in (("SuccessTopic", t.success_topic), ("ErrorTopic", t.error_topic)) if n.get(key) != want]
    if wrong:
        return fail("topics", "; ".join(wrong), wire_fix(t))
    return ok("topics", "NotificationConfig names the stack's success and error topics")


def check_path(config: Optional[dict], t: Targets, key: str, prefix: str) -> Result:
    check = "output path" if key == "S3OutputPath" else "failure path"
    if config is None or "AsyncInferenceConfig" not in config:
        return skip(check, "no async endpoint config to read")
    if not t.bucket:
        return skip(check, "the IO bucket is not known (give --bucket)")
    granted = f"s3://{t.bucket}/{prefix}"
    path = config["AsyncInferenceConfig"].get("OutputConfig", {}).get(key)
    if not under_prefix(path, granted):
        found = f"{key} {path} is not under" if path else f"{key} is not set; it must lie under"
        return fail(check, f"{found} {granted}, where the functions may read", wire_fix(t))
    return ok(check, f"{key} {path} is under {granted}")


def check_response_included(config: Optional[dict], t: Targets) -> Result:
    if config is None or "AsyncInferenceConfig" not in config:
        return skip("response in message", "no async endpoint config to read")
    included = notification_config(config).get("IncludeInferenceResponseIn") or []
    if "SUCCESS_NOTIFICATION_TOPIC" in included:
        return ok("response in message", "IncludeInferenceResponseIn has SUCCESS_NOTIFICATION_TOPIC")
    return warn("response in message",
                "IncludeInferenceResponseIn lacks SUCCESS_NOTIFICATION_TOPIC: jobs complete, but every output "
                "is read from S3 instead of arriving in the message", wire_fix(t))


def function_name(name_or_arn: str) -> str:
    return name_or_arn.split(":function:", 1)[1].split(":", 1)[0] if ":function:" in name_or_arn else name_or_arn


def queue_arn(sqs, url: str) -> str:
    return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def check_subscriptions(sns, sqs, t: Targets, which: str, topic: Optional[str]) -> Result:
    check = f"{which} subscription"
    if not topic:
        return skip(check, f"the {which} topic is not known")
    if not (t.notification_handler or t.buffer_queue_url):
        return skip(check, "neither notification-handler nor the buffer queue is known "
                           "(give --notification-handler or --buffer-queue-url)")
    buffer_arn = queue_arn(sqs, t.buffer_queue_url) if t.buffer_queue_url else None
    handler = function_name(t.notification_handler) if t.notification_handler else None
    subscriptions = [s for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic)
                     for s in page["Subscriptions"]]
    reaching = [s for s in subscriptions
                if (s["Protocol"] == "lambda" and handler and function_name(s["Endpoint"]) == handler)
                or (s["Protocol"] == "sqs" and buffer_arn and s["Endpoint"] == buffer_arn)]
    target = f"the buffer queue {buffer_arn}" if buffer_arn else f"notification-handler {handler}"
    if not reaching:
        found = ", ".join(f"{s['Protocol']}:{s['Endpoint']}" for s in subscriptions) or "none"
        return fail(check, f"{topic} has no subscription to {target} (subscriptions: {found})",
                    "redeploy the stack (it subscribes the handler), or subscribe it to this topic")
    for s in reaching:
        if s["SubscriptionArn"] == "PendingConfirmation":
            return fail(check, f"the subscription of {topic} to {target} is pending confirmation",
                        "confirm it (an SQS or Lambda subscription in the topic's account confirms itself; "
                        "across accounts the endpoint's owner must confirm)")
        attributes = sns.get_subscription_attributes(SubscriptionArn=s["SubscriptionArn"])["Attributes"]
        if attributes.get("PendingConfirmation", "false") != "false":
            return fail(check, f"the subscription {s['SubscriptionArn']} is pending confirmation",
                        "confirm it from the endpoint's account")
    return ok(check, f"{topic} delivers to {target}, confirmed")


def declared_parameters(definition: str) -> set:
    return {p.get("Name") for p in json.loads(definition).get("Parameters", [])}


def check_pipeline(sm, t: Targets) -> Result:
    if not t.pipeline:
        if t.inference_only:
            return ok("pipeline", "none: an inference-only stack (PipelineName empty), no training tools")
        return skip("pipeline", "no pipeline name (give --pipeline-name)")
    try:
        mapping = parse_pipeline_parameters(t.pipeline_parameters)
    except ValueError as e:
        return fail("pipeline", str(e), "set PipelineParameters to tool_arg=PipelineParameterName,... and redeploy")
    try:
        pipeline = sm.describe_pipeline(PipelineName=t.pipeline)
    except ClientError as e:
        return fail("pipeline", f"{t.pipeline} cannot be described ({e.response['Error'].get('Message', e)})",
                    "create the pipeline, or set PipelineName to an existing one in this account and region")
    try:
        declared = declared_parameters(pipeline.get("PipelineDefinition") or "{}")
    except (ValueError, AttributeError) as e:
        return fail("pipeline", f"the definition of {t.pipeline} is not JSON ({e})", "recreate the pipeline's definition")
    missing = [f"{parameter} (for {argument})" for argument, parameter in mapping.items() if parameter not in declared]
    if missing:
        return fail("pipeline", f"{t.pipeline} declares no parameter {', '.join(missing)}; it declares "
                                f"{', '.join(sorted(filter(None, declared))) or 'none'}",
                    "map each tool argument to the pipeline's own parameter name in PipelineParameters "
                    "(tool_arg=ParameterName,...; leave out an argument the pipeline has no parameter for), "
                    "then redeploy")
    return ok("pipeline", f"{t.pipeline} declares {', '.join(mapping.values())}")


def check_rule(events, t: Targets) -> Result:
    if not t.rule:
        if t.inference_only:
            return ok("rule", "none: an inference-only stack routes no pipeline runs")
        return skip("rule", "no EventBridge rule name (give --rule-name)")
    try:
        rule = events.describe_rule(Name=t.rule)
    except ClientError as e:
        return fail("rule", f"{t.rule} cannot be described ({e.response['Error'].get('Message', e)})",
                    "redeploy the stack (it creates the rule)")
    if rule.get("State") != "ENABLED":
        return fail("rule", f"{t.rule} is {rule.get('State')}: pipeline runs are not routed",
                    f"aws events enable-rule --name {t.rule}")
    return ok("rule", f"{t.rule} is ENABLED")


def check_dlq(sqs, t: Targets, url: str) -> Result:
    name = url.rstrip("/").rsplit("/", 1)[-1]
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "QueueArn"]
    )["Attributes"]
    waiting = sum(int(attributes.get(a, 0)) for a in ("ApproximateNumberOfMessages",
                                                       "ApproximateNumberOfMessagesNotVisible"))
    if not waiting:
        return ok(f"DLQ {name}", "empty")
    if url == t.callback_dlq_url:
        # make redrive replays functions' events; these are CallbackStep messages, moved back by SQS itself.
        return fail(f"DLQ {name}", f"{waiting} question(s) pipeline-router did not record",
                    "read why in pipeline-router's log (a line per message id), fix that, then move them back to "
                    f"the callback queue: aws sqs start-message-move-task --source-arn {attributes['QueueArn']} "
                    "(docs/operations.md)")
    redrive = f"make redrive STACK={t.stack}" if t.stack and "AsyncFailure" in name else f"make redrive QUEUE_URL={url} ..."
    return fail(f"DLQ {name}", f"{waiting} message(s) waiting", f"find why they failed (the functions' logs), then {redrive}")


def check_alarms(cloudwatch, t: Targets) -> Result:
    if not t.alarms:
        return skip("alarms", "no alarm names (give --alarm-name)")
    found = {}
    for start in range(0, len(t.alarms), 100):
        for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNames=t.alarms[start:start + 100]):
            for alarm in page["MetricAlarms"] + page.get("CompositeAlarms", []):
                found[alarm["AlarmName"]] = alarm
    missing = [a for a in t.alarms if a not in found]
    silent = [a for a in t.alarms if a in found and not found[a].get("AlarmActions")]
    if missing or silent:
        detail = "; ".join(filter(None, [missing and f"not found: {', '.join(missing)}",
                                        silent and f"no action: {', '.join(silent)}"]))
        return fail("alarms", detail, "redeploy with AlarmTopicArn empty (the stack then creates a topic; "
                                      "AlarmEmail subscribes an address) or set to an SNS topic someone reads")
    return ok("alarms", f"{len(t.alarms)} alarm(s), each with an action")


def endpoint_checks(sm, t: Targets) -> tuple:
    """The checks of one endpoint (t.endpoint) and its config, and the config."""
    endpoint, config = check_endpoint(sm, t)
    return [endpoint, check_topics(config, t), check_path(config, t, "S3OutputPath", t.output_prefix),
            check_path(config, t, "S3FailurePath", t.failure_prefix), check_response_included(config, t)], config


def catalog_endpoint_checks(session, sm, t: Targets) -> list:
    """The same checks, and the endpoint role's, for each of the catalog's other endpoints: every
    one publishes to the stack's topics and writes under its prefixes. Each line names its endpoint."""
    results = []
    for name in (e for e in t.catalog_endpoints if e != t.endpoint):
        one = replace(t, endpoint=name, model_role=None)
        lines, config = endpoint_checks(sm, one)
        lines += simulated(session, lambda iam, policies: check_endpoint_role(sm, iam, policies, config, one))
        for line in lines:
            line.check = f"{line.check} ({name})"
        results += lines
    return results


def check_catalog_pipeline(sm, name: str) -> Result:
    try:
        sm.describe_pipeline(PipelineName=name)
    except ClientError as e:
        return fail(f"pipeline ({name})", f"{name} cannot be described ({e.response['Error'].get('Message', e)})",
                    "create the pipeline, or correct its name in the tool catalog and run make catalog again")
    return ok(f"pipeline ({name})", f"{name} exists (the tool catalog maps its parameters)")


def run_checks(session, t: Targets) -> list:
    sm = session.client("sagemaker")
    sns, sqs = session.client("sns"), session.client("sqs")
    results, config = endpoint_checks(sm, t)
    results += [check_subscriptions(sns, sqs, t, "success", t.success_topic),
                check_subscriptions(sns, sqs, t, "error", t.error_topic),
                check_pipeline(sm, t), check_rule(session.client("events"), t)]
    results += [check_catalog_pipeline(sm, name) for name in t.catalog_pipelines if name != t.pipeline]
    # Before the DLQs: reading the callback queue finds its DLQ when no stack named it.
    results += simulated(session, lambda iam, policies: check_callback(session, sm, iam, policies, t))
    dlqs = list(dict.fromkeys(t.dlq_urls + ([t.callback_dlq_url] if t.callback_dlq_url else [])))
    results += [check_dlq(sqs, t, url) for url in dlqs] or [skip("DLQs", "no queue URLs (give --dlq-url)")]
    results += check_delivery(session, t) + check_stream(session, t)
    results.append(check_alarms(session.client("cloudwatch"), t))
    results += check_permissions(session, sm, config, t)
    return results + catalog_endpoint_checks(session, sm, t)


def guarded(check: Callable[[], list]) -> list:
    """AWS refusing a read (access denied, throttling) is a FAIL line, not a traceback."""
    try:
        return check()
    except (ClientError, BotoCoreError) as e:
        return [fail("AWS", f"a read failed: {e}", "check the credentials and the IAM rights listed in --help")]


def main(argv: Optional[list] = None) -> int:
    parser = wiring_parser(__doc__, "the deployed stack: every name below comes from it")
    parser.add_argument("--pipeline-name", dest="pipeline")
    parser.add_argument("--catalog-endpoint-name", action="append", dest="catalog_endpoints", metavar="NAME",
                        help="an endpoint of the tool catalog (CatalogEndpointNames; repeatable)")
    parser.add_argument("--catalog-pipeline-name", action="append", dest="catalog_pipelines", metavar="NAME",
                        help="a pipeline of the tool catalog (CatalogPipelineNames; repeatable)")
    parser.add_argument("--pipeline-parameters", help="PIPELINE_PARAMETERS (default the seed's names)")
    parser.add_argument("--rule-name", dest="rule", help="the EventBridge rule to pipeline-router")
    parser.add_argument("--notification-handler", metavar="NAME_OR_ARN")
    parser.add_argument("--buffer-queue-url", help="the SQS buffer queue, when notifications go through it")
    parser.add_argument("--dlq-url", action="append", dest="dlq_urls", metavar="URL", help="a dead-letter queue (repeatable)")
    parser.add_argument("--alarm-name", action="append", dest="alarms", metavar="NAME", help="an alarm (repeatable)")
    parser.add_argument("--model-execution-role-arn", dest="model_role", metavar="ARN",
                        help="the endpoint's execution role (default: its Model's)")
    parser.add_argument("--function-role", action="append", metavar="FUNCTION=ROLE_ARN",
                        help=f"a function's role ({', '.join(FUNCTION_ROLES)}; repeatable)")
    parser.add_argument("--bucket-kms-key-arn", dest="bucket_key", metavar="ARN",
                        help="the bucket's default encryption key (IoBucketKmsKeyArn)")
    parser.add_argument("--results-table", help="the results table's name (for the function roles' checks)")
    parser.add_argument("--pipeline-results-table", help="the pipeline results table's name")
    parser.add_argument("--events-table", help="the events table's name (MCP Events' log, and its stream)")
    parser.add_argument("--pipeline-queue-url", help="the pipeline results (completion) queue")
    parser.add_argument("--event-bus", help="the completion events' bus (name or ARN), if any")
    parser.add_argument("--callback-queue-url",
                        help="the queue the pipelines' CallbackSteps send to (PipelineCallbackQueueUrl)")
    parser.add_argument("--subscriptions-table", help="MCP Events' webhook subscriptions table's name")
    parser.add_argument("--delivery-queue-url", help="MCP Events' webhook delivery queue (EventDeliveryQueueUrl)")
    parser.add_argument("--event-delivery", metavar="NAME_OR_ARN", help="the event-delivery function")
    parser.add_argument("--stream-failure-queue-url",
                        help="where Lambda records the events stream's batches event-delivery gave up on "
                             "(EventStreamFailureQueueUrl; default: the stream mapping's on-failure destination)")
    args = parser.parse_args(argv)

    try:
        session = aws_region.session(out=sys.stdout)
        targets = targets_from_stack(session, args.stack_name) if args.stack_name else Targets()
        targets = apply_overrides(targets, args)
    except (StackError, aws_region.NoRegion, ValueError) as e:
        return error_status(e, 2)
    targets.region = session.region_name
    results = guarded(lambda: run_checks(session, targets))
    for result in results:
        print(result.line())
    failed = sum(r.status == "FAIL" for r in results)
    print(f"{failed} check(s) failed" if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
