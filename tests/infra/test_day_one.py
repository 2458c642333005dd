"""What lies outside the stack on day one, as CloudFormation deploys the template (samtranslator,
offline): the policy the stack attaches to the model's execution role, the grants on customer
managed keys, the tables' deletion policies, alarms that notify someone on a default deploy, a
stack name of any length, the inference-only stack, and the settings of a shared deployment
(quotas, allow-lists, reserved concurrency)."""

import json
import re

import pytest
from cfnlint.api import ManualArgs, lint

from cloudformation import REQUIRED, Deployed, with_defaults
from test_deployed import CFN, ENDPOINT, EXISTING_TOPICS, ROLE, refusals

GATEWAY = {"AgentCoreGatewayId": "gw-1234567890", "AgentCoreGatewayRoleArn": "arn:aws:iam::123456789012:role/gateway"}
ENDPOINT_KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
BUCKET_KEY = "arn:aws:kms:us-east-1:123456789012:key/mrk-0123456789abcdef0123456789abcdef"
TOOLS = ["McpToolsFunction", "GatewayTargetFunction"]
BUCKET = REQUIRED["IoBucketName"]


def listify(value):
    return value if isinstance(value, list) else [value]


def statements_of(stack: Deployed, role: str) -> list:
    return [s for policy in stack.props(role)["Policies"] for s in policy["PolicyDocument"]["Statement"]]


def granted(stack: Deployed, role: str, action: str) -> list:
    """The resources `role` is granted `action` on."""
    return [r for s in statements_of(stack, role) if action in listify(s["Action"]) for r in listify(s["Resource"])]


def model_role_policy(stack: Deployed) -> dict:
    return {s["Sid"]: s for s in stack.props("ModelExecutionRolePolicy")["PolicyDocument"]["Statement"]}


# ---------------------------------------------------------------- the model's execution role


@pytest.mark.parametrize("topics", [{}, EXISTING_TOPICS])
def test_the_stack_gives_the_execution_role_what_sagemaker_does_as_it(topics):
    stack = Deployed(CFN, **ENDPOINT, **topics)
    policy = stack.props("ModelExecutionRolePolicy")
    assert policy["Roles"] == ["endpoint-execution"]
    statements = model_role_policy(stack)
    assert set(statements) == {"PublishOutcomes", "WriteOutcomes", "ReadInputs"}
    success = topics.get("SuccessTopicArn", {"Ref": "SuccessTopic"})
    error = topics.get("ErrorTopicArn", {"Ref": "ErrorTopic"})
    assert (statements["PublishOutcomes"]["Action"], statements["PublishOutcomes"]["Resource"]) == (
        "sns:Publish", [success, error])
    # The very topics the endpoint config notifies, and the very paths it writes to.
    notification = stack.props("AsyncEndpointConfig")["AsyncInferenceConfig"]["OutputConfig"]
    assert [notification["NotificationConfig"]["SuccessTopic"], notification["NotificationConfig"]["ErrorTopic"]] == [
        success, error]
    assert (statements["WriteOutcomes"]["Action"], statements["WriteOutcomes"]["Resource"]) == (
        "s3:PutObject", [f"arn:aws:s3:::{BUCKET}/outputs/*", f"arn:aws:s3:::{BUCKET}/failures/*"])
    assert notification["S3OutputPath"] == f"s3://{BUCKET}/outputs/"
    assert notification["S3FailurePath"] == f"s3://{BUCKET}/failures/"
    # What mcp-tools writes (inputs/{inference_id}.json) the model reads.
    assert (statements["ReadInputs"]["Action"], statements["ReadInputs"]["Resource"]) == (
        "s3:GetObject", f"arn:aws:s3:::{BUCKET}/inputs/*")
    assert granted(stack, "McpToolsRole", "s3:PutObject") == [f"arn:aws:s3:::{BUCKET}/inputs/*"]
    # The endpoint waits for the policy (SageMaker publishes a test notification at creation).
    tags = {t["Key"]: t["Value"] for t in stack.props("AsyncEndpointConfig")["Tags"]}
    assert tags["model-role-policy"] == {"Ref": "ModelExecutionRolePolicy"}
    # Named after the stack's id: unique per stack on a shared role, and short whatever the name.
    assert stack.props("ModelExecutionRolePolicy")["PolicyName"] == "mcp-async-jobs-4f0c2a30-9d1e-11f0-8de9-0a1b2c3d4e5f"


@pytest.mark.parametrize("arn, name", [
    ("arn:aws:iam::123456789012:role/endpoint-execution", "endpoint-execution"),
    ("arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-20260101T000000",
     "AmazonSageMaker-ExecutionRole-20260101T000000"),
    ("arn:aws:iam::123456789012:role/ml/teams/a/model-role", "model-role"),
    ("arn:aws-cn:iam::123456789012:role/a/b/x", "x"),
])
def test_the_role_is_named_by_the_last_element_of_its_arn_whatever_its_path(arn, name):
    stack = Deployed(CFN, ModelName="doc-classifier", ModelExecutionRoleArn=arn)
    assert stack.props("ModelExecutionRolePolicy")["Roles"] == [name]


def test_a_role_path_deeper_than_the_name_can_be_found_is_refused_by_the_pattern():
    pattern = re.compile(CFN["Parameters"]["ModelExecutionRoleArn"]["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch("arn:aws:iam::123456789012:role/a/b/c/name")
    assert not pattern.fullmatch("arn:aws:iam::123456789012:role/a/b/c/d/name")
    assert not pattern.fullmatch("arn:aws:iam::123456789012:role/")


@pytest.mark.parametrize("parameters", [
    {"ModelExecutionRoleArn": ROLE},                              # an existing endpoint: make wire-endpoint
    {**ENDPOINT, "AttachModelRolePolicy": "false"},               # the role is managed elsewhere
    {},
])
def test_no_policy_is_attached_unless_the_stack_creates_the_endpoint_and_may(parameters):
    stack = Deployed(CFN, **parameters)
    assert "ModelExecutionRolePolicy" not in stack.resources
    assert not stack.of_type("AWS::IAM::Policy")
    if "AsyncEndpointConfig" in stack.resources:
        tags = {t["Key"]: t["Value"] for t in stack.props("AsyncEndpointConfig")["Tags"]}
        assert tags["model-role-policy"] == "not-attached"


# ---------------------------------------------------------------- customer managed keys

KEY_CASES = {
    "no key": ({}, [], []),
    "endpoint key ARN": ({"EndpointKmsKeyId": ENDPOINT_KEY}, [ENDPOINT_KEY], []),
    "endpoint key id": ({"EndpointKmsKeyId": "1234abcd-12ab-34cd-56ef-1234567890ab"}, [ENDPOINT_KEY], []),
    "bucket key": ({"IoBucketKmsKeyArn": BUCKET_KEY}, [], [BUCKET_KEY]),
    "both keys": ({"EndpointKmsKeyId": ENDPOINT_KEY, "IoBucketKmsKeyArn": BUCKET_KEY}, [ENDPOINT_KEY], [BUCKET_KEY]),
}


@pytest.mark.parametrize("case", list(KEY_CASES))
def test_every_role_that_reads_or_writes_under_a_customer_key_may_use_it(case):
    parameters, endpoint_keys, bucket_keys = KEY_CASES[case]
    stack = Deployed(CFN, **ENDPOINT, **GATEWAY, **parameters)
    readable = endpoint_keys + bucket_keys
    # Readers of outputs (records, reconciles, presigned result URLs): kms:Decrypt on every key in play.
    for role in ("NotificationHandlerRole", "McpToolsRole"):
        assert granted(stack, role, "kms:Decrypt") == readable, role
    # mcp-tools writes the inputs under the bucket's default key only.
    assert granted(stack, "McpToolsRole", "kms:GenerateDataKey") == bucket_keys
    assert granted(stack, "NotificationHandlerRole", "kms:GenerateDataKey") == []
    assert not [s for s in statements_of(stack, "PipelineRouterRole") if "kms" in json.dumps(s["Action"])]
    # gateway-target runs with mcp-tools' role.
    assert stack.props("GatewayTargetFunction")["Role"] == {"Fn::GetAtt": ["McpToolsRole", "Arn"]}
    # SageMaker writes outputs under the endpoint's key (else the bucket's) and reads inputs under the bucket's.
    statements = model_role_policy(stack)
    if readable:
        assert statements["UseKeys"]["Action"] == ["kms:GenerateDataKey", "kms:Decrypt"]
        assert statements["UseKeys"]["Resource"] == readable
    else:
        assert "UseKeys" not in statements
    if endpoint_keys:
        config = stack.props("AsyncEndpointConfig")
        assert config["AsyncInferenceConfig"]["OutputConfig"]["KmsKeyId"] == parameters["EndpointKmsKeyId"]


def test_key_parameters_take_keys_not_aliases():
    """An IAM grant names a key; an alias in it would authorize nothing."""
    endpoint = re.compile(CFN["Parameters"]["EndpointKmsKeyId"]["AllowedPattern"])
    bucket = re.compile(CFN["Parameters"]["IoBucketKmsKeyArn"]["AllowedPattern"])
    assert endpoint.fullmatch("") and endpoint.fullmatch(ENDPOINT_KEY) and endpoint.fullmatch("mrk-0123abcd")
    assert bucket.fullmatch("") and bucket.fullmatch(BUCKET_KEY) and not bucket.fullmatch("1234abcd")
    for alias in ("alias/ml-outputs", "arn:aws:kms:us-east-1:123456789012:alias/ml-outputs"):
        assert not endpoint.fullmatch(alias) and not bucket.fullmatch(alias)


@pytest.mark.parametrize("case", ["both keys", "endpoint key id"])
def test_cfn_lint_passes_with_keys(case):
    parameters = {**ENDPOINT, **KEY_CASES[case][0]}
    matches = lint(with_defaults(CFN, **parameters), config=ManualArgs(regions=["us-east-1"]))
    assert not matches, "\n".join(str(m) for m in matches)


# ---------------------------------------------------------------- deploys and deletes


def test_tables_are_kept_on_delete_but_not_after_a_failed_first_create():
    stack = Deployed(CFN)
    tables = stack.of_type("AWS::DynamoDB::Table")
    assert set(tables) == {"ResultsTable", "PipelineResultsTable", "EventsTable", "SubscriptionsTable"}
    for name, table in tables.items():
        assert table["DeletionPolicy"] == "RetainExceptOnCreate", name
        # RetainExceptOnCreate is a DeletionPolicy only; a replaced table is kept.
        assert table["UpdateReplacePolicy"] == "Retain", name


def alarms(stack: Deployed) -> dict:
    return stack.of_type("AWS::CloudWatch::Alarm")


def test_a_default_deploy_has_an_alarm_topic_and_every_alarm_notifies_it():
    stack = Deployed(CFN, **ENDPOINT)
    assert stack.resources["AlarmTopic"]["Type"] == "AWS::SNS::Topic"
    assert "AlarmEmailSubscriptionToTopic" not in stack.resources
    for name, alarm in alarms(stack).items():
        actions = alarm["Properties"].get("AlarmActions")
        expected = [{"Ref": "EndpointScaleOutFromZeroPolicy"}] if name == "EndpointHasBacklogWithoutCapacityAlarm" \
            else [{"Ref": "AlarmTopic"}]
        assert actions == expected, name
    assert stack.outputs["AlarmTopic"]["Value"] == {"Ref": "AlarmTopic"}


def test_an_e_mail_address_is_subscribed_to_the_alarm_topic():
    stack = Deployed(CFN, AlarmEmail="oncall@example.com")
    assert stack.props("AlarmEmailSubscriptionToTopic") == {
        "TopicArn": {"Ref": "AlarmTopic"}, "Protocol": "email", "Endpoint": "oncall@example.com"}
    pattern = re.compile(CFN["Parameters"]["AlarmEmail"]["AllowedPattern"])
    assert pattern.fullmatch("") and not pattern.fullmatch("oncall") and not pattern.fullmatch("a b@example.com")


def test_an_alarm_topic_given_is_used_and_none_is_created():
    topic = "arn:aws:sns:us-east-1:123456789012:ops-alarms"
    stack = Deployed(CFN, AlarmTopicArn=topic, AlarmEmail="ignored@example.com")
    assert "AlarmTopic" not in stack.resources and "AlarmEmailSubscriptionToTopic" not in stack.resources
    assert all(a["Properties"]["AlarmActions"] == [topic] for a in alarms(stack).values())
    assert stack.outputs["AlarmTopic"]["Value"] == topic


# The physical names derived from the stack's name, and the longest each may be.
NAME_LIMITS = {
    ("AWS::Lambda::Function", "FunctionName"): 64, ("AWS::Logs::LogGroup", "LogGroupName"): 512,
    ("AWS::CloudWatch::Dashboard", "DashboardName"): 255, ("AWS::Events::EventBus", "Name"): 256,
    ("AWS::ApplicationAutoScaling::ScalingPolicy", "PolicyName"): 256, ("AWS::IAM::Policy", "PolicyName"): 128,
    ("AWS::Cognito::UserPool", "UserPoolName"): 128, ("AWS::Cognito::UserPoolClient", "ClientName"): 128,
    ("AWS::Cognito::UserPoolResourceServer", "Name"): 256,
    # A FIFO queue's name, .fifo included.
    ("AWS::SQS::Queue", "QueueName"): 80,
}


def test_a_100_character_stack_name_deploys():
    name = ("ml-platform-" + "async-jobs-" * 9)[:99] + "z"
    assert len(name) == 100
    stack = Deployed(CFN, stack_name=name, **ENDPOINT, **GATEWAY, CompletionEvents="stack-bus",
                     FunctionUrlAuthType="NONE", CreateUserPool="true", UserPoolDomainPrefix="acme-mcp-jobs")
    functions = stack.of_type("AWS::Lambda::Function")
    assert len(functions) == 5
    for function in functions.values():
        # CloudFormation names them (stack-LogicalId-random, cut to 64).
        assert "FunctionName" not in function["Properties"]
    checked = 0
    for resource in stack.resources.values():
        for (kind, prop), limit in NAME_LIMITS.items():
            if resource["Type"] == kind and isinstance(resource["Properties"].get(prop), str):
                assert len(resource["Properties"][prop]) <= limit, (kind, prop, resource["Properties"][prop])
                checked += 1
    assert checked >= 12
    # The FIFO queues' names do not grow with the stack's: they are named from its id.
    assert all(len(stack.props(q)["QueueName"]) <= 80 and stack.props(q)["QueueName"].endswith(".fifo")
               for q in ("EventDeliveryQueue", "EventDeliveryDLQ"))


# ---------------------------------------------------------------- the inference-only stack

PIPELINE_RESOURCES = {"PipelineRouterLogGroup", "PipelineRouterRole", "PipelineRouterFunction",
                      "PipelineRouterInvokeConfig", "PipelineStatusRule", "PipelineStatusRulePermission",
                      "PipelineResultsQueue", "PipelineResultsDLQ", "AsyncFailureDLQPolicy",
                      "PipelineRouterErrorsAlarm", "PipelineResultsDLQDepthAlarm", "PipelineCallbackQueue",
                      "PipelineCallbackDLQ", "PipelineCallbackEventSource", "PipelineCallbackDLQDepthAlarm"}
TRAINING_ACTIONS = {"sagemaker:StartPipelineExecution", "sagemaker:DescribePipelineExecution",
                    "sagemaker:ListPipelineExecutionSteps", "sagemaker:DescribePipelineDefinitionForExecution",
                    "sagemaker:StopPipelineExecution", "sagemaker:SendPipelineExecutionStepSuccess",
                    "sagemaker:SendPipelineExecutionStepFailure"}


def test_an_empty_pipeline_name_deploys_an_inference_only_stack():
    assert CFN["Parameters"]["PipelineName"]["Default"] == ""
    full, stack = Deployed(CFN, **GATEWAY), Deployed(CFN, **GATEWAY, PipelineName="")
    assert PIPELINE_RESOURCES <= set(full.resources)
    assert set(full.resources) - set(stack.resources) == PIPELINE_RESOURCES
    assert set(stack.resources) <= set(full.resources)
    assert not stack.of_type("AWS::Events::Rule")
    # mcp-tools still reads the pipeline results table (check_training_result finds nothing).
    assert "PipelineResultsTable" in stack.resources
    for function in TOOLS:
        variables = stack.props(function)["Environment"]["Variables"]
        assert variables["PIPELINE_NAME"] == "" and variables["PIPELINE_RESULTS_TABLE"] == {"Ref": "PipelineResultsTable"}
    actions = {a for s in statements_of(stack, "McpToolsRole") for a in listify(s["Action"])}
    assert not actions & TRAINING_ACTIONS
    assert TRAINING_ACTIONS <= {a for s in statements_of(full, "McpToolsRole") for a in listify(s["Action"])}
    assert "PipelineResultsQueueUrl" not in stack.outputs and "PipelineCallbackQueueUrl" not in stack.outputs
    dashboard = stack.props("Dashboard")["DashboardBody"]["Fn::Sub"][1]
    assert dashboard["PipelineRouter"] == "none" and dashboard["PipelineResultsDLQName"] == "none"
    assert refusals(PipelineName="") == []
    matches = lint(with_defaults(CFN, PipelineName=""), config=ManualArgs(regions=["us-east-1"]))
    assert not matches, "\n".join(str(m) for m in matches)


# ---------------------------------------------------------------- PipelineParameters at deploy

PIPELINE_PARAMETERS_REFUSED = [
    "", "input_data_uri", "input_data_uri=", "input_data_uri=Has Space", "input_data_uri=A,input_data_uri=B",
    "input_data_uri=A,max_epochs=A", "input_data_uri=A,learning_rate=LR", "max_epochs=Epochs",
    "input_data_uri=Data,", "max_epochs=A,input_data_uri=B,accuracy_threshold=A", "input_data_uri=" + "a" * 257,
]


@pytest.mark.parametrize("value", PIPELINE_PARAMETERS_REFUSED)
def test_pipeline_parameters_the_tools_would_refuse_are_refused_at_deploy(value):
    """The tools' own checks (shared/entry/src/config.rs, PipelineParameters::parse): known arguments,
    input_data_uri mapped, no argument and no parameter name twice."""
    assert not re.fullmatch(CFN["Parameters"]["PipelineParameters"]["AllowedPattern"], value)


@pytest.mark.parametrize("value", [
    "input_data_uri=InputDataUri,max_epochs=MaxEpochs,accuracy_threshold=AccuracyThreshold,"
    "training_instance_type=TrainingInstanceType", "input_data_uri=TrainingData", "max_epochs=E,input_data_uri=Data",
    "input_data_uri=AB,max_epochs=B", "input_data_uri=x-1_Y",
])
def test_pipeline_parameters_the_tools_take_are_taken(value):
    assert re.fullmatch(CFN["Parameters"]["PipelineParameters"]["AllowedPattern"], value)


# ---------------------------------------------------------------- a shared deployment

SHARED_DEFAULTS = {"DEFAULT_REQUEST_TTL_SECS": "3600", "TRAINING_INPUT_PREFIXES": f"s3://{BUCKET}/train/",
                   "TRAINING_INSTANCE_TYPES": "ml.m5.xlarge", "CALLER_SUBMITS_PER_MINUTE": "60",
                   "CALLER_RUNS_PER_HOUR": "10", "CALLER_WAITS_MAX": "4", "CALLER_READS_PER_MINUTE": "600"}


@pytest.mark.parametrize("function", TOOLS)
def test_the_tools_get_quotas_allow_lists_and_the_request_ttl_by_default(function):
    variables = Deployed(CFN, **GATEWAY).props(function)["Environment"]["Variables"]
    assert {k: variables[k] for k in SHARED_DEFAULTS} == SHARED_DEFAULTS


@pytest.mark.parametrize("function", TOOLS)
def test_quotas_allow_lists_and_the_request_ttl_are_parameters(function):
    stack = Deployed(CFN, **GATEWAY, DefaultRequestTtlSecs=7200,
                     TrainingInputPrefixes="s3://datasets/curated/,s3://mcp-io-bucket/train/",
                     TrainingInstanceTypes="ml.m5.xlarge,ml.g5.2xlarge", CallerSubmitsPerMinute=0,
                     CallerRunsPerHour=2, CallerWaitsMax=0, CallerReadsPerMinute=120)
    variables = stack.props(function)["Environment"]["Variables"]
    assert {k: variables[k] for k in SHARED_DEFAULTS} == {
        "DEFAULT_REQUEST_TTL_SECS": "7200", "TRAINING_INPUT_PREFIXES": "s3://datasets/curated/,s3://mcp-io-bucket/train/",
        "TRAINING_INSTANCE_TYPES": "ml.m5.xlarge,ml.g5.2xlarge", "CALLER_SUBMITS_PER_MINUTE": "0",
        "CALLER_RUNS_PER_HOUR": "2", "CALLER_WAITS_MAX": "0", "CALLER_READS_PER_MINUTE": "120"}


def test_the_shared_deployment_parameters_have_the_documented_bounds():
    bounds = {name: (CFN["Parameters"][name].get("Default"), CFN["Parameters"][name].get("MinValue"),
                     CFN["Parameters"][name].get("MaxValue"))
              for name in ("DefaultRequestTtlSecs", "CallerSubmitsPerMinute", "CallerRunsPerHour", "CallerWaitsMax",
                           "CallerReadsPerMinute", "ToolsReservedConcurrency")}
    assert bounds["DefaultRequestTtlSecs"] == (3600, 60, 21600)
    assert [bounds[n][:2] for n in ("CallerSubmitsPerMinute", "CallerRunsPerHour", "CallerWaitsMax",
                                    "CallerReadsPerMinute")] == [(60, 0), (10, 0), (4, 0), (600, 0)]
    assert bounds["ToolsReservedConcurrency"][:2] == (0, 0)
    prefixes = re.compile(CFN["Parameters"]["TrainingInputPrefixes"]["AllowedPattern"])
    assert prefixes.fullmatch("") and prefixes.fullmatch("s3://a-bucket/train/,s3://other.bucket/")
    for bad in ("s3://a-bucket/train", "a-bucket/train/", "s3://a-bucket/a b/", "s3://A/train/", "s3://a-bucket/x/,"):
        assert not prefixes.fullmatch(bad), bad
    types = re.compile(CFN["Parameters"]["TrainingInstanceTypes"]["AllowedPattern"])
    assert types.fullmatch("ml.m5.xlarge,ml.g5.2xlarge") and not types.fullmatch("") and not types.fullmatch("m5.xlarge")


def test_concurrency_is_reserved_for_mcp_tools_only_when_asked():
    assert "ReservedConcurrentExecutions" not in Deployed(CFN).props("McpToolsFunction")
    stack = Deployed(CFN, **GATEWAY, ToolsReservedConcurrency=20)
    assert stack.props("McpToolsFunction")["ReservedConcurrentExecutions"] == "20"
    for other in ("NotificationHandlerFunction", "PipelineRouterFunction", "GatewayTargetFunction"):
        assert "ReservedConcurrentExecutions" not in stack.props(other), other


def test_mcp_tools_may_describe_its_endpoint_and_nothing_else():
    stack = Deployed(CFN)
    assert granted(stack, "McpToolsRole", "sagemaker:DescribeEndpoint") == [
        f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{REQUIRED['AsyncEndpointName']}"]


def test_cfn_lint_passes_on_every_new_option():
    parameters = {**ENDPOINT, **GATEWAY, "AlarmEmail": "oncall@example.com", "ToolsReservedConcurrency": "20",
                  "TrainingInputPrefixes": "s3://datasets/curated/", "CallerWaitsMax": "0",
                  "ModelExecutionRoleArn": "arn:aws:iam::123456789012:role/service-role/exec"}
    assert refusals(**parameters) == []
    matches = lint(with_defaults(CFN, **parameters), config=ManualArgs(regions=["us-east-1"]))
    assert not matches, "\n".join(str(m) for m in matches)
