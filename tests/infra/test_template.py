"""The SAM template against the code: each function's role grants exactly the IAM actions listed
in infra/iam-actions.json, that list covers every AWS call the code makes, nothing is granted on
`*`. What each function's environment must hold (what its config reads) is checked on the
template as CloudFormation deploys it, in test_deployed.py."""

import json
import re
from pathlib import Path

import pytest
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE, MATCHES = decode(str(ROOT / "infra" / "template.yaml"))
ACTIONS = json.loads((ROOT / "infra" / "iam-actions.json").read_text())["functions"]
RESOURCES = TEMPLATE["Resources"]

# SDK operation (as called in Rust) -> IAM action.
OPERATIONS = {
    "update_item": "dynamodb:UpdateItem", "put_item": "dynamodb:PutItem", "get_item": "dynamodb:GetItem",
    "query": "dynamodb:Query", "get_object": "s3:GetObject", "put_object": "s3:PutObject",
    "send_message": "sqs:SendMessage", "describe_pipeline_execution": "sagemaker:DescribePipelineExecution",
    "start_pipeline_execution": "sagemaker:StartPipelineExecution",
    "list_pipeline_execution_steps": "sagemaker:ListPipelineExecutionSteps",
    "describe_pipeline_definition_for_execution": "sagemaker:DescribePipelineDefinitionForExecution",
    "put_events": "events:PutEvents",
    "invoke_endpoint_async": "sagemaker:InvokeEndpointAsync", "describe_endpoint": "sagemaker:DescribeEndpoint",
    "stop_pipeline_execution": "sagemaker:StopPipelineExecution",
    "describe_model_package": "sagemaker:DescribeModelPackage", "describe_artifact": "sagemaker:DescribeArtifact",
    "list_associations": "sagemaker:ListAssociations", "list_artifacts": "sagemaker:ListArtifacts",
    "batch_get_item": "dynamodb:BatchGetItem",
    "send_pipeline_execution_step_success": "sagemaker:SendPipelineExecutionStepSuccess",
    "send_pipeline_execution_step_failure": "sagemaker:SendPipelineExecutionStepFailure",
    "update_model_package": "sagemaker:UpdateModelPackage",
    "delete_item": "dynamodb:DeleteItem", "change_message_visibility": "sqs:ChangeMessageVisibility",
    "send_message_batch": "sqs:SendMessage",
}


def branches(node):
    """Every value a node can take: both branches of each Fn::If, without AWS::NoValue."""
    if isinstance(node, dict) and set(node) == {"Fn::If"}:
        _, yes, no = node["Fn::If"]
        return branches(yes) + branches(no)
    if isinstance(node, dict) and node == {"Ref": "AWS::NoValue"}:
        return []
    return [node]


def statements(role_name):
    for policy in RESOURCES[role_name]["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            yield from branches(statement)


def listify(value):
    return value if isinstance(value, list) else [value]


def role_of(function):
    return RESOURCES[function]["Properties"]["Role"]["Fn::GetAtt"][0]


def test_the_template_decodes():
    assert not MATCHES, MATCHES


@pytest.mark.parametrize("function", sorted(ACTIONS))
def test_each_role_grants_exactly_the_listed_actions(function):
    granted = {a for s in statements(role_of(function)) for a in listify(s["Action"])}
    expected = set(ACTIONS[function]["code"]) | set(ACTIONS[function]["platform"]) | set(ACTIONS[function]["keys"])
    assert granted == expected, f"extra: {granted - expected}, missing: {expected - granted}"


# X-Ray takes no resource-level permissions: its two actions are granted on "*", nothing else is.
XRAY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
# Nor do SageMaker's lineage lists (the IAM service authorization reference names no resource
# type for ListAssociations or ListArtifacts): "*" is all a policy can grant them on.
LINEAGE_LISTS = {"sagemaker:ListAssociations", "sagemaker:ListArtifacts"}
# Nor does DynamoDB's ListStreams, which Lambda calls for a stream event source.
LIST_STREAMS = {"dynamodb:ListStreams"}
UNSCOPED = (XRAY, LINEAGE_LISTS, LIST_STREAMS)


@pytest.mark.parametrize("function", sorted(ACTIONS))
def test_no_wildcard_actions_or_resources(function):
    for s in statements(role_of(function)):
        assert s["Effect"] == "Allow"
        for action in listify(s["Action"]):
            assert "*" not in action, action
        if any(set(listify(s["Action"])) <= unscoped for unscoped in UNSCOPED):
            continue
        for resource in listify(s["Resource"]):
            for value in branches(resource):
                assert value != "*", s


KEY_CONDITIONS = {"HasOutputKmsKey", "HasIoBucketKmsKey"}


@pytest.mark.parametrize("function", sorted(ACTIONS))
def test_kms_is_granted_only_with_a_customer_key(function):
    """kms:* only in a statement that exists when a key parameter is set, and only on that key."""
    for policy in RESOURCES[role_of(function)]["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            for granted in branches(statement):
                actions = set(listify(granted["Action"]))
                if any(a.startswith("kms:") for a in actions):
                    assert actions <= set(ACTIONS[function]["keys"]), granted
                    assert statement["Fn::If"][0] in KEY_CONDITIONS, statement
                    resources = [v for r in listify(granted["Resource"]) for v in branches(r)]
                    assert resources and all("KmsKey" in json.dumps(r) for r in resources), granted


@pytest.mark.parametrize("function", sorted(ACTIONS))
def test_xray_is_granted_only_with_active_tracing(function):
    for policy in RESOURCES[role_of(function)]["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            for granted in branches(statement):
                if set(listify(granted["Action"])) & XRAY:
                    assert set(granted["Action"]) == XRAY
                    assert statement["Fn::If"][0] == "ActiveTracing"


def test_the_list_covers_every_aws_call_in_the_code():
    called = set()
    for path in list((ROOT / "shared").glob("*/src/**/*.rs")) + list((ROOT / "functions").glob("*/src/**/*.rs")):
        code = path.read_text().split("#[cfg(test)]")[0]
        for op in re.findall(r"\.(\w+)\(\)\s*\n?\s*\.", code):
            if op in OPERATIONS:
                called.add(OPERATIONS[op])
        if ".presigned(" in code:
            called.add("s3:GetObject")
    listed = {a for f in ACTIONS.values() for a in f["code"]}
    assert called == listed, f"called but not listed: {called - listed}; listed but not called: {listed - called}"


@pytest.mark.parametrize("function", sorted(ACTIONS))
def test_functions_are_built_from_their_binaries(function):
    resource = RESOURCES[function]
    binary = ACTIONS[function]["binary"]
    assert resource["Metadata"]["BuildMethod"] == "rust-cargolambda"
    assert resource["Metadata"]["BuildProperties"]["Binary"] == binary
    assert (ROOT / "functions" / binary / "src" / "main.rs").exists()
    globals_ = TEMPLATE["Globals"]["Function"]
    assert globals_["Runtime"] == "provided.al2023" and globals_["Architectures"] == ["arm64"]


def least_timeout(timeout) -> int:
    """A function's timeout, or the least its parameter allows."""
    if isinstance(timeout, dict):
        return int(TEMPLATE["Parameters"][timeout["Ref"]]["MinValue"])
    return int(timeout)


@pytest.mark.parametrize("function", ["McpToolsFunction", "GatewayTargetFunction"])
def test_the_tools_timeout_outlasts_the_longest_plain_wait(function):
    assert least_timeout(RESOURCES[function]["Properties"]["Timeout"]) >= 20 + 10


def test_mcp_tools_streams_its_replies_and_its_timeout_is_a_parameter():
    """Progress notifications reach a client while a tool waits only on a streamed URL."""
    props = RESOURCES["McpToolsFunction"]["Properties"]
    assert props["FunctionUrlConfig"]["InvokeMode"] == "RESPONSE_STREAM"
    assert props["Timeout"] == {"Ref": "ToolsTimeoutSecs"}
    parameter = TEMPLATE["Parameters"]["ToolsTimeoutSecs"]
    assert (parameter["Default"], parameter["MinValue"], parameter["MaxValue"]) == (120, 30, 900)
    # The Gateway's target is invoked, not reached by URL: nothing to stream.
    assert "FunctionUrlConfig" not in RESOURCES["GatewayTargetFunction"]["Properties"]


def test_the_sqs_buffers_batch_and_window_are_parameters():
    """Lambda takes a batch above 10 from a standard queue only with a batching window of 1 s or
    more; the defaults (10, none) need none, and the queue's visibility timeout outlasts the
    longest window allowed plus the function's timeout."""
    props = RESOURCES["NotificationBufferEventSource"]["Properties"]
    assert props["BatchSize"] == {"Ref": "SqsBatchSize"}
    assert props["MaximumBatchingWindowInSeconds"] == {"Ref": "SqsBatchingWindowSecs"}
    size, window = TEMPLATE["Parameters"]["SqsBatchSize"], TEMPLATE["Parameters"]["SqsBatchingWindowSecs"]
    assert (size["Default"], size["MinValue"], size["MaxValue"]) == (10, 1, 1000)
    assert (window["Default"], window["MinValue"], window["MaxValue"]) == (0, 0, 60)
    assert "SqsBatchingWindowSecs of at least 1" in size["Description"]
    visibility = RESOURCES["NotificationBufferQueue"]["Properties"]["VisibilityTimeout"]
    assert visibility >= window["MaxValue"] + RESOURCES["NotificationHandlerFunction"]["Properties"]["Timeout"]


def test_async_invocations_retry_then_go_to_a_dlq():
    for name in ("NotificationHandlerInvokeConfig", "PipelineRouterInvokeConfig"):
        props = RESOURCES[name]["Properties"]
        assert props["MaximumRetryAttempts"] == 2
        assert props["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": ["AsyncFailureDLQ", "Arn"]}
    target = RESOURCES["PipelineStatusRule"]["Properties"]["Targets"][0]
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["AsyncFailureDLQ", "Arn"]}
    pattern = RESOURCES["PipelineStatusRule"]["Properties"]["EventPattern"]
    assert sorted(pattern["detail"]["currentPipelineExecutionStatus"]) == [
        "CompletedWithFailures", "Failed", "Stopped", "Succeeded"]


def test_tables_queues_and_topics_are_encrypted():
    for name, resource in RESOURCES.items():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::DynamoDB::Table":
            assert props["SSESpecification"]["SSEEnabled"] is True, name
            assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True, name
            assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}, name
        if resource["Type"] == "AWS::SQS::Queue":
            assert props["SqsManagedSseEnabled"] is True, name
        if resource["Type"] == "AWS::SNS::Topic" and name != "AlarmTopic":
            # CloudWatch cannot publish to a topic under alias/aws/sns (its key policy is AWS's and
            # names no CloudWatch), so the alarm topic, which carries only alarm states, is not.
            assert props["KmsMasterKeyId"], name


@pytest.mark.parametrize("function", ["McpToolsFunction", "GatewayTargetFunction"])
def test_the_tools_know_their_own_timeout(function):
    """A reservation older than the function's timeout belongs to a crashed submission."""
    function = RESOURCES[function]["Properties"]
    told, timeout = function["Environment"]["Variables"]["FUNCTION_TIMEOUT_SECS"], function["Timeout"]
    if isinstance(timeout, dict):
        assert told == timeout
    else:
        assert int(told) == timeout


def test_the_gateway_target_is_optional_and_carries_the_exported_schema():
    gateway_resources = [n for n, r in RESOURCES.items() if r.get("Condition") == "AgentCoreGateway"]
    assert sorted(gateway_resources) == ["GatewayTarget", "GatewayTargetFunction", "GatewayTargetInvokePermission",
                                         "GatewayTargetLogGroup"]
    assert TEMPLATE["Parameters"]["AgentCoreGatewayId"]["Default"] == ""
    target = RESOURCES["GatewayTarget"]["Properties"]
    lambda_target = target["TargetConfiguration"]["Mcp"]["Lambda"]
    assert lambda_target["LambdaArn"] == {"Fn::GetAtt": ["GatewayTargetFunction", "Arn"]}
    assert target["CredentialProviderConfigurations"] == [{"CredentialProviderType": "GATEWAY_IAM_ROLE"}]
    exported = json.loads((ROOT / "infra" / "gateway-tool-schema.json").read_text())
    inline = lambda_target["ToolSchema"]["InlinePayload"]
    assert [t["Name"] for t in inline] == [t["name"] for t in exported]
    for in_template, in_file in zip(inline, exported):
        assert in_template["Description"] == in_file["description"]
        assert set(in_template["InputSchema"]["Properties"]) == set(in_file["inputSchema"]["properties"])
    permission = RESOURCES["GatewayTargetInvokePermission"]["Properties"]
    assert permission["Principal"] == {"Ref": "AgentCoreGatewayRoleArn"}
    assert permission["FunctionName"] == {"Fn::GetAtt": ["GatewayTargetFunction", "Arn"]}


FUNCTIONS = ["NotificationHandlerFunction", "PipelineRouterFunction", "McpToolsFunction", "GatewayTargetFunction",
             "EventDeliveryFunction"]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_functions_log_json_at_the_levels_the_parameters_set(function):
    logging = RESOURCES[function]["Properties"]["LoggingConfig"]
    assert logging["LogFormat"] == "JSON"
    assert logging["ApplicationLogLevel"] == {"Ref": "ApplicationLogLevel"}
    assert logging["SystemLogLevel"] == {"Ref": "SystemLogLevel"}
    variables = RESOURCES[function]["Properties"]["Environment"]["Variables"]
    assert variables["METRICS_NAMESPACE"] == {"Fn::Sub": "McpAsyncJobs/${AWS::StackName}"}
    assert TEMPLATE["Globals"]["Function"]["Tracing"] == {"Ref": "TracingMode"}
    assert TEMPLATE["Parameters"]["TracingMode"]["Default"] == "PassThrough"


def metric_names(code):
    return set(re.findall(r'pub const \w+: &str = "(\w+)";', code))


def test_the_dashboard_shows_every_metric_the_code_emits():
    code = (ROOT / "shared" / "entry" / "src" / "telemetry.rs").read_text()
    emitted = metric_names(code.split("pub mod metric {")[1].split("}")[0])
    assert {"JobsSubmitted", "JobsCompleted", "JobsFailed", "JobsCancelled", "JobDuration", "ToolCalls",
            "ColdStart"} <= emitted
    body = RESOURCES["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    dashboard = json.loads(body[0])
    shown = {m[1] for w in dashboard["widgets"] for m in w["properties"]["metrics"] if m[0] == "${Ns}"}
    # Per tool: a search over the Tool dimension, so a catalog's tools are drawn as today's are.
    searches = [m[0]["expression"] for w in dashboard["widgets"] for m in w["properties"]["metrics"]
                if isinstance(m[0], dict)]
    assert searches == [f"SEARCH('{{\"${{Ns}}\",Function,Tool}} MetricName=\"{name}\"', 'Sum', 300)"
                        for name in ("ToolCalls", "ToolErrors")]
    shown |= {re.search(r'MetricName="(\w+)"', e).group(1) for e in searches}
    assert shown == emitted, f"not shown: {emitted - shown}; unknown: {shown - emitted}"
    assert body[1]["Ns"] == {"Fn::Sub": "McpAsyncJobs/${AWS::StackName}"}
    lambda_metrics = {m[1] for w in dashboard["widgets"] for m in w["properties"]["metrics"] if m[0] == "AWS/Lambda"}
    assert {"Errors", "Throttles", "Duration"} <= lambda_metrics


def alarm_metrics(name):
    return {(m["MetricStat"]["Metric"]["MetricName"], m["MetricStat"]["Metric"]["Dimensions"][0]["Value"])
            for m in RESOURCES[name]["Properties"]["Metrics"] if "MetricStat" in m}


def test_alarms_on_outcomes_not_arriving_and_on_the_failure_rate():
    assert alarm_metrics("OutcomesNotArrivingAlarm") == {
        ("JobsProbablyLost", "mcp-tools"), ("JobsProbablyLost", "gateway-target"),
        ("OutcomesReconciled", "mcp-tools"), ("OutcomesReconciled", "gateway-target")}
    assert alarm_metrics("JobFailureRateAlarm") == {
        ("JobsCompleted", "notification-handler"), ("JobsFailed", "notification-handler"),
        ("JobsFailed", "mcp-tools"), ("JobsFailed", "gateway-target")}
    assert RESOURCES["JobFailureRateAlarm"]["Properties"]["Threshold"] == {"Ref": "FailureRateThreshold"}
    for name in ("OutcomesNotArrivingAlarm", "JobFailureRateAlarm"):
        props = RESOURCES[name]["Properties"]
        assert props["AlarmActions"] == [{"Fn::If": ["HasAlarmTopic", {"Ref": "AlarmTopicArn"}, {"Ref": "AlarmTopic"}]}]
        assert sum(1 for m in props["Metrics"] if m.get("ReturnData")) == 1


def on_resource(function: str, arn: dict) -> list:
    """The statements of a function's role that name `arn` among their resources."""
    return [s for s in statements(role_of(function)) if arn in listify(s["Resource"])]


def test_the_events_table_is_appended_to_by_the_recorders_and_read_by_the_tools():
    """MCP Events' log: notification-handler and pipeline-router append each job's and run's end
    once (a conditional PutItem), mcp-tools reads an owner's events from a cursor (events/poll:
    Query), each on the events table alone; event-delivery reads none of it, only its stream.
    gateway-target serves no events: its role is mcp-tools', its environment names no events
    table."""
    props = RESOURCES["EventsTable"]["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "owner", "KeyType": "HASH"},
                                  {"AttributeName": "position", "KeyType": "RANGE"}]
    assert props["AttributeDefinitions"] == [{"AttributeName": "owner", "AttributeType": "S"},
                                             {"AttributeName": "position", "AttributeType": "S"}]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert TEMPLATE["Outputs"]["EventsTableName"]["Value"] == {"Ref": "EventsTable"}
    arn = {"Fn::GetAtt": ["EventsTable", "Arn"]}
    # A recorder only puts: the put's condition says whether the event is logged already.
    for function, actions in (("NotificationHandlerFunction", {"dynamodb:PutItem"}),
                              ("PipelineRouterFunction", {"dynamodb:PutItem"}),
                              ("McpToolsFunction", {"dynamodb:Query"}), ("EventDeliveryFunction", set())):
        variables = RESOURCES[function]["Properties"]["Environment"]["Variables"]
        on_events = on_resource(function, arn)
        assert {a for s in on_events for a in listify(s["Action"])} == actions, function
        assert all(listify(s["Resource"]) == [arn] for s in on_events), function
        assert ("EVENTS_TABLE" in variables) == bool(actions), function
        if actions:
            assert variables["EVENTS_TABLE"] == {"Ref": "EventsTable"}, function
    assert "EVENTS_TABLE" not in RESOURCES["GatewayTargetFunction"]["Properties"]["Environment"]["Variables"]


# What each function may do on the subscriptions table and the delivery queue (MCP Events'
# webhooks), and nothing more. The recorders queue nothing: event-delivery takes their events from
# the events table's stream and queues the retries itself.
SUBSCRIPTION_ACTIONS = {
    "NotificationHandlerFunction": {"dynamodb:Query"},
    "PipelineRouterFunction": {"dynamodb:Query"},
    "McpToolsFunction": {"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query"},
    "EventDeliveryFunction": {"dynamodb:GetItem", "dynamodb:UpdateItem"},
}
DELIVERY_QUEUE_ACTIONS = {
    "NotificationHandlerFunction": set(),
    "PipelineRouterFunction": set(),
    "McpToolsFunction": set(),
    "EventDeliveryFunction": {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
                              "sqs:SendMessage", "sqs:ChangeMessageVisibility"},
}


def test_the_subscriptions_table_keeps_each_owners_webhooks_encrypted_with_the_aws_managed_key():
    table = RESOURCES["SubscriptionsTable"]
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    props = table["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "owner", "KeyType": "HASH"},
                                  {"AttributeName": "id", "KeyType": "RANGE"}]
    assert props["AttributeDefinitions"] == [{"AttributeName": "owner", "AttributeType": "S"},
                                             {"AttributeName": "id", "AttributeType": "S"}]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    # The signing secrets live here: KMS with the AWS managed key (no KMSMasterKeyId).
    assert props["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
    assert TEMPLATE["Outputs"]["SubscriptionsTableName"]["Value"] == {"Ref": "SubscriptionsTable"}


@pytest.mark.parametrize("function", sorted(SUBSCRIPTION_ACTIONS))
def test_each_function_may_do_on_the_subscriptions_table_and_the_delivery_queue_only_what_its_code_does(function):
    for arn, expected in (({"Fn::GetAtt": ["SubscriptionsTable", "Arn"]}, SUBSCRIPTION_ACTIONS[function]),
                          ({"Fn::GetAtt": ["EventDeliveryQueue", "Arn"]}, DELIVERY_QUEUE_ACTIONS[function])):
        granted = {a for s in on_resource(function, arn) for a in listify(s["Action"])}
        assert granted == expected, (function, arn)
    variables = RESOURCES[function]["Properties"]["Environment"]["Variables"]
    assert variables["SUBSCRIPTIONS_TABLE"] == {"Ref": "SubscriptionsTable"}
    if DELIVERY_QUEUE_ACTIONS[function]:
        assert variables["DELIVERY_QUEUE_URL"] == {"Ref": "EventDeliveryQueue"}
    else:
        assert "DELIVERY_QUEUE_URL" not in variables
    assert not {"SUBSCRIPTIONS_TABLE", "DELIVERY_QUEUE_URL"} & set(
        RESOURCES["GatewayTargetFunction"]["Properties"]["Environment"]["Variables"])
    # Local development only: never deployed.
    assert "EVENTS_ALLOW_LOCAL_CALLBACKS" not in variables


def test_retries_go_through_a_fifo_queue_with_a_dlq_and_alarms():
    queue, dlq = RESOURCES["EventDeliveryQueue"]["Properties"], RESOURCES["EventDeliveryDLQ"]["Properties"]
    assert (queue["FifoQueue"], queue["ContentBasedDeduplication"], dlq["FifoQueue"]) == (True, False, True)
    assert queue["SqsManagedSseEnabled"] is True and dlq["SqsManagedSseEnabled"] is True
    assert (queue["MessageRetentionPeriod"], dlq["MessageRetentionPeriod"]) == (345600, 1209600)
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": ["EventDeliveryDLQ", "Arn"]},
                                      "maxReceiveCount": 20}
    function = RESOURCES["EventDeliveryFunction"]["Properties"]
    assert (function["Timeout"], function["MemorySize"]) == (60, 128)
    assert "VpcConfig" not in function  # it calls the subscribers' webhooks on the internet
    assert queue["VisibilityTimeout"] >= 6 * function["Timeout"]
    # Named from the stack's id: a FIFO name ends in .fifo and is at most 80 characters, whatever
    # the stack's name.
    for props in (queue, dlq):
        text, variables = props["QueueName"]["Fn::Sub"]
        assert text.endswith("-${Id}.fifo") and len(text.replace("${Id}", "x" * 36)) <= 80, text
        assert variables == {"Id": {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}}
    source = RESOURCES["EventDeliveryEventSource"]["Properties"]
    assert source == {"EventSourceArn": {"Fn::GetAtt": ["EventDeliveryQueue", "Arn"]},
                      "FunctionName": {"Ref": "EventDeliveryFunction"}, "BatchSize": 10,
                      "FunctionResponseTypes": ["ReportBatchItemFailures"]}
    topic = [{"Fn::If": ["HasAlarmTopic", {"Ref": "AlarmTopicArn"}, {"Ref": "AlarmTopic"}]}]
    depth = RESOURCES["EventDeliveryDLQDepthAlarm"]["Properties"]
    assert depth["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["EventDeliveryDLQ", "QueueName"]}}]
    assert (depth["MetricName"], depth["Threshold"], depth["AlarmActions"]) == (
        "ApproximateNumberOfMessagesVisible", 1, topic)
    errors = RESOURCES["EventDeliveryErrorsAlarm"]["Properties"]
    assert errors["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "EventDeliveryFunction"}}]
    assert (errors["MetricName"], errors["AlarmActions"]) == ("Errors", topic)
    for output, queue_name in (("EventDeliveryQueueUrl", "EventDeliveryQueue"), ("EventDeliveryDLQUrl", "EventDeliveryDLQ")):
        assert TEMPLATE["Outputs"][output]["Value"] == {"Ref": queue_name}
    body = RESOURCES["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"][0]
    assert '"ApproximateAgeOfOldestMessage", "QueueName", "${EventDeliveryQueue.QueueName}"' in body
    assert '"Errors", "FunctionName", "${EventDeliveryFunction}"' in body
    assert '"ApproximateNumberOfMessagesVisible", "QueueName", "${EventDeliveryDLQ.QueueName}"' in body


STREAM_ARN = {"Fn::GetAtt": ["EventsTable", "StreamArn"]}
STREAM_ACTIONS = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
# The new events a delivery's first try takes from the stream: those the recorders marked for
# webhooks (`webhooks`: true, `deliver_to`: the subscriptions); nothing else invokes event-delivery.
WEBHOOK_EVENTS = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"webhooks": {"BOOL": [True]}}}}


def test_new_events_with_webhooks_reach_event_delivery_through_the_events_tables_stream():
    assert RESOURCES["EventsTable"]["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    source = RESOURCES["EventDeliveryStreamEventSource"]["Properties"]
    (stream_filter,) = source["FilterCriteria"]["Filters"]
    assert json.loads(stream_filter["Pattern"]) == WEBHOOK_EVENTS
    assert {k: v for k, v in source.items() if k != "FilterCriteria"} == {
        "EventSourceArn": STREAM_ARN, "FunctionName": {"Ref": "EventDeliveryFunction"},
        "StartingPosition": "LATEST", "BatchSize": 10, "MaximumBatchingWindowInSeconds": 0,
        # A failing batch is split down to the event at fault; the events before it are not sent again.
        "FunctionResponseTypes": ["ReportBatchItemFailures"], "BisectBatchOnFunctionError": True,
        # Given up after 10 retries or 6 hours, and recorded: the shard does not wait forever.
        "MaximumRetryAttempts": 10, "MaximumRecordAgeInSeconds": 21600,
        "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": ["EventStreamFailureQueue", "Arn"]}}}}
    # Only event-delivery may read the stream.
    for function in ACTIONS:
        granted = {a for s in on_resource(function, STREAM_ARN) for a in listify(s["Action"])}
        assert granted == (STREAM_ACTIONS if function == "EventDeliveryFunction" else set()), function
    for s in statements(role_of("EventDeliveryFunction")):
        if set(listify(s["Action"])) & STREAM_ACTIONS:
            assert listify(s["Resource"]) == [STREAM_ARN], s
    # ListStreams on "*", alone in its statement, and only for event-delivery.
    for function in ACTIONS:
        listing = [s for s in statements(role_of(function)) if "dynamodb:ListStreams" in listify(s["Action"])]
        assert listing == ([{"Effect": "Allow", "Action": "dynamodb:ListStreams", "Resource": "*"}]
                           if function == "EventDeliveryFunction" else []), function
    # The recorders no longer tell event-delivery anything but through the log.
    for function in ("NotificationHandlerFunction", "PipelineRouterFunction"):
        variables = RESOURCES[function]["Properties"]["Environment"]["Variables"]
        assert {"EVENTS_TABLE", "SUBSCRIPTIONS_TABLE"} <= set(variables) and "DELIVERY_QUEUE_URL" not in variables


def test_stream_batches_given_up_are_recorded_in_an_encrypted_queue_with_an_alarm():
    queue = RESOURCES["EventStreamFailureQueue"]["Properties"]
    assert queue == {"SqsManagedSseEnabled": True, "MessageRetentionPeriod": 1209600}
    arn = {"Fn::GetAtt": ["EventStreamFailureQueue", "Arn"]}
    # Lambda sends a stream mapping's failure records with the function's role.
    for function in ACTIONS:
        granted = {a for s in on_resource(function, arn) for a in listify(s["Action"])}
        assert granted == ({"sqs:SendMessage"} if function == "EventDeliveryFunction" else set()), function
    topic = [{"Fn::If": ["HasAlarmTopic", {"Ref": "AlarmTopicArn"}, {"Ref": "AlarmTopic"}]}]
    depth = RESOURCES["EventStreamFailureQueueDepthAlarm"]["Properties"]
    assert depth["Dimensions"] == [{"Name": "QueueName",
                                    "Value": {"Fn::GetAtt": ["EventStreamFailureQueue", "QueueName"]}}]
    assert (depth["Namespace"], depth["MetricName"], depth["Statistic"], depth["Threshold"],
            depth["ComparisonOperator"], depth["AlarmActions"]) == (
        "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 1, "GreaterThanOrEqualToThreshold", topic)
    age = RESOURCES["EventDeliveryIteratorAgeAlarm"]["Properties"]
    assert age["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "EventDeliveryFunction"}}]
    assert (age["Namespace"], age["MetricName"], age["Statistic"], age["Period"], age["Threshold"],
            age["ComparisonOperator"], age["TreatMissingData"], age["AlarmActions"]) == (
        "AWS/Lambda", "IteratorAge", "Maximum", 300, 60000, "GreaterThanThreshold", "notBreaching", topic)
    assert TEMPLATE["Outputs"]["EventStreamFailureQueueUrl"]["Value"] == {"Ref": "EventStreamFailureQueue"}
    body = RESOURCES["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"][0]
    assert '"IteratorAge", "FunctionName", "${EventDeliveryFunction}"' in body
    assert '"ApproximateNumberOfMessagesVisible", "QueueName", "${EventStreamFailureQueue.QueueName}"' in body
