"""The template as CloudFormation deploys it (samtranslator, offline), with its conditions on and
off: the endpoint's config reaches the topics, the topics reach notification-handler (directly
or through the SQS buffer), SageMaker's S3 paths lie under what IAM grants, every variable the
code reads is set, callers get the policy they need, and cfn-lint passes on both condition sets."""

import fnmatch
import json
import re
from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, lint

from cloudformation import REQUIRED, Deployed, translated, with_defaults

ROOT = Path(__file__).resolve().parents[2]
CFN = translated()
ROLE = "arn:aws:iam::123456789012:role/endpoint-execution"
ENDPOINT = {"ModelName": "doc-classifier", "ModelExecutionRoleArn": ROLE}
EXISTING_TOPICS = {"SuccessTopicArn": "arn:aws:sns:us-east-1:123456789012:their-success",
                   "ErrorTopicArn": "arn:aws:sns:us-east-1:123456789012:their-error"}
ENDPOINT_RESOURCES = {"AsyncEndpointConfig", "AsyncEndpoint", "EndpointScalableTarget", "EndpointBacklogScalingPolicy",
                      "EndpointScaleOutFromZeroPolicy", "EndpointHasBacklogWithoutCapacityAlarm"}
SEED_PIPELINE_PARAMETERS = ("input_data_uri=InputDataUri,max_epochs=MaxEpochs,accuracy_threshold=AccuracyThreshold,"
                            "training_instance_type=TrainingInstanceType")

# Every combination of the conditions the wiring depends on.
CASES = {
    "today (no endpoint)": {},
    "existing endpoint, its role": {"ModelExecutionRoleArn": ROLE},
    "endpoint": ENDPOINT,
    "endpoint, SQS buffer": {**ENDPOINT, "UseSqsBuffer": "true"},
    "endpoint, existing topics": {**ENDPOINT, **EXISTING_TOPICS},
    "endpoint, existing topics, SQS buffer, KMS key": {**ENDPOINT, **EXISTING_TOPICS, "UseSqsBuffer": "true",
                                                       "EndpointKmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k"},
}


def deployed(case: str) -> Deployed:
    return Deployed(CFN, **CASES[case])


def topic(stack: Deployed, which: str):
    """What the stack's success or error topic resolves to: its own topic's Ref, or the ARN given."""
    given = stack.values[f"{which}TopicArn"]
    return given or {"Ref": f"{which}Topic"}


# ---------------------------------------------------------------- the endpoint option


@pytest.mark.parametrize("case", ["today (no endpoint)", "existing endpoint, its role"])
def test_without_a_model_nothing_of_the_endpoint_is_created(case):
    stack = deployed(case)
    assert not ENDPOINT_RESOURCES & set(stack.resources)
    assert not stack.of_type("AWS::SageMaker::Endpoint") and not stack.of_type("AWS::SageMaker::EndpointConfig")
    assert not stack.of_type("AWS::ApplicationAutoScaling::ScalableTarget")
    assert "AsyncEndpointConfigName" not in stack.outputs
    # Today's stack, resource for resource, plus only the topic policies when a role is given.
    today = set(deployed("today (no endpoint)").resources)
    assert set(stack.resources) - today <= {"SuccessTopicPolicy", "ErrorTopicPolicy"}


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("endpoint")])
def test_the_endpoint_config_notifies_the_stacks_topics(case):
    stack = deployed(case)
    assert ENDPOINT_RESOURCES <= set(stack.resources)
    notification = stack.props("AsyncEndpointConfig")["AsyncInferenceConfig"]["OutputConfig"]["NotificationConfig"]
    assert notification == {"SuccessTopic": topic(stack, "Success"), "ErrorTopic": topic(stack, "Error"),
                            "IncludeInferenceResponseIn": ["SUCCESS_NOTIFICATION_TOPIC"]}
    # The stack's outputs (what the doctor compares with) name the same topics.
    assert stack.outputs["SuccessTopic"]["Value"] == topic(stack, "Success")
    assert stack.outputs["ErrorTopic"]["Value"] == topic(stack, "Error")
    endpoint = stack.props("AsyncEndpoint")
    assert endpoint["EndpointName"] == REQUIRED["AsyncEndpointName"]
    assert endpoint["EndpointConfigName"] == {"Fn::GetAtt": ["AsyncEndpointConfig", "EndpointConfigName"]}
    # A fixed name would block the replacement every change of an immutable EndpointConfig needs.
    assert "EndpointConfigName" not in stack.props("AsyncEndpointConfig")


@pytest.mark.parametrize("case", list(CASES))
def test_each_topic_reaches_notification_handler(case):
    stack = deployed(case)
    subscriptions = stack.of_type("AWS::SNS::Subscription")
    for which in ("Success", "Error"):
        mine = [s["Properties"] for s in subscriptions.values() if s["Properties"]["TopicArn"] == topic(stack, which)]
        assert len(mine) == 1, (which, subscriptions)
        if stack.values["UseSqsBuffer"] == "true":
            assert mine[0]["Protocol"] == "sqs"
            assert mine[0]["Endpoint"] == {"Fn::GetAtt": ["NotificationBufferQueue", "Arn"]}
            source = stack.props("NotificationBufferEventSource")
            assert source["EventSourceArn"] == {"Fn::GetAtt": ["NotificationBufferQueue", "Arn"]}
            assert source["FunctionName"] == {"Ref": "NotificationHandlerFunction"}
            allowed = stack.props("NotificationBufferQueuePolicy")["PolicyDocument"]["Statement"][0]
            assert topic(stack, which) in allowed["Condition"]["ArnEquals"]["aws:SourceArn"]
        else:
            assert mine[0]["Protocol"] == "lambda"
            assert mine[0]["Endpoint"] == {"Fn::GetAtt": ["NotificationHandlerFunction", "Arn"]}
            permission = stack.props(f"{which}TopicInvokePermission")
            assert (permission["Principal"], permission["SourceArn"]) == ("sns.amazonaws.com", topic(stack, which))
            assert permission["FunctionName"] == {"Ref": "NotificationHandlerFunction"}
    assert stack.resources["NotificationHandlerFunction"]["Type"] == "AWS::Lambda::Function"


def granted_s3(stack: Deployed, role: str, action: str) -> list:
    return [r for s in stack.props(role)["Policies"][0]["PolicyDocument"]["Statement"]
            if action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
            for r in ([s["Resource"]] if not isinstance(s["Resource"], list) else s["Resource"])]


def covered(uri: str, arn_patterns: list) -> bool:
    """Whether an object SageMaker writes under `uri` has an ARN one of the patterns matches."""
    bucket_and_key = uri.removeprefix("s3://").rstrip("/") + "/some-object.out"
    return any(fnmatch.fnmatchcase(f"arn:aws:s3:::{bucket_and_key}", p) for p in arn_patterns if isinstance(p, str))


@pytest.mark.parametrize("prefixes", [{}, {"OutputPrefix": "async/out/", "FailurePrefix": "async/err/"}])
def test_sagemakers_s3_paths_lie_under_what_the_functions_may_read(prefixes):
    stack = Deployed(CFN, **ENDPOINT, **prefixes)
    output = stack.props("AsyncEndpointConfig")["AsyncInferenceConfig"]["OutputConfig"]
    for key in ("S3OutputPath", "S3FailurePath"):
        for role in ("NotificationHandlerRole", "McpToolsRole"):
            assert covered(output[key], granted_s3(stack, role, "s3:GetObject")), (key, role)
        # What the doctor and wire-endpoint check against is the same path.
        assert stack.outputs[key]["Value"] == output[key]
    assert not covered(f"s3://{REQUIRED['IoBucketName']}/elsewhere/", granted_s3(stack, "McpToolsRole", "s3:GetObject"))


def test_the_endpoint_scales_to_zero_and_back_out():
    stack = Deployed(CFN, **ENDPOINT)
    target = stack.props("EndpointScalableTarget")
    assert target == {"ServiceNamespace": "sagemaker", "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                      "ResourceId": f"endpoint/{REQUIRED['AsyncEndpointName']}/variant/AllTraffic",
                      "MinCapacity": "0", "MaxCapacity": "2"}
    assert stack.resources["EndpointScalableTarget"]["DependsOn"] == "AsyncEndpoint"
    variant = stack.props("AsyncEndpointConfig")["ProductionVariants"][0]
    assert variant["VariantName"] == "AllTraffic" and variant["ModelName"] == "doc-classifier"
    dimensions = [{"Name": "EndpointName", "Value": REQUIRED["AsyncEndpointName"]}]

    tracking = stack.props("EndpointBacklogScalingPolicy")
    assert tracking["PolicyType"] == "TargetTrackingScaling"
    assert tracking["ScalingTargetId"] == {"Ref": "EndpointScalableTarget"}
    metric = tracking["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]
    assert (metric["Namespace"], metric["MetricName"], metric["Dimensions"]) == (
        "AWS/SageMaker", "ApproximateBacklogSizePerInstance", dimensions)

    step = stack.props("EndpointScaleOutFromZeroPolicy")
    assert step["PolicyType"] == "StepScaling" and step["ScalingTargetId"] == {"Ref": "EndpointScalableTarget"}
    assert step["StepScalingPolicyConfiguration"]["StepAdjustments"] == [
        {"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]
    alarm = stack.props("EndpointHasBacklogWithoutCapacityAlarm")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Dimensions"]) == (
        "AWS/SageMaker", "HasBacklogWithoutCapacity", dimensions)
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
    assert alarm["AlarmActions"] == [{"Ref": "EndpointScaleOutFromZeroPolicy"}]


def test_endpoint_parameters_reach_the_config():
    stack = Deployed(CFN, **ENDPOINT, MaxConcurrentInvocationsPerInstance="16", EndpointInstanceType="ml.g5.xlarge",
                     EndpointInitialInstanceCount="2", VariantName="blue",
                     EndpointKmsKeyId="arn:aws:kms:us-east-1:123456789012:key/k")
    config = stack.props("AsyncEndpointConfig")
    assert config["AsyncInferenceConfig"]["ClientConfig"] == {"MaxConcurrentInvocationsPerInstance": "16"}
    variant = config["ProductionVariants"][0]
    assert (variant["InstanceType"], variant["InitialInstanceCount"], variant["VariantName"]) == ("ml.g5.xlarge", "2", "blue")
    assert config["KmsKeyId"] == config["AsyncInferenceConfig"]["OutputConfig"]["KmsKeyId"] == stack.values["EndpointKmsKeyId"]
    assert stack.props("EndpointScalableTarget")["ResourceId"].endswith("/variant/blue")
    limits = CFN["Parameters"]["MaxConcurrentInvocationsPerInstance"]
    assert (limits["MinValue"], limits["MaxValue"], limits["Default"]) == (1, 1000, 4)
    assert "KmsKeyId" not in Deployed(CFN, **ENDPOINT).props("AsyncEndpointConfig")


@pytest.mark.parametrize("case", list(CASES))
def test_the_execution_role_may_publish_to_the_topics_the_stack_creates(case):
    stack = deployed(case)
    policies = stack.of_type("AWS::SNS::TopicPolicy")
    if not stack.values["ModelExecutionRoleArn"]:
        assert not policies
        return
    for which in ("Success", "Error"):
        name = f"{which}TopicPolicy"
        if stack.values[f"{which}TopicArn"]:
            # Someone else's topic: a TopicPolicy would replace its owner's policy.
            assert name not in policies
            continue
        assert name in policies, case
        props = policies[name]["Properties"]
        assert props["Topics"] == [{"Ref": f"{which}Topic"}]
        (statement,) = props["PolicyDocument"]["Statement"]
        assert statement["Principal"] == {"AWS": ROLE}
        assert (statement["Action"], statement["Resource"]) == ("sns:Publish", {"Ref": f"{which}Topic"})
        if "AsyncEndpointConfig" in stack.resources:
            # The endpoint's test notification on creation needs the policy first.
            tags = {t["Key"]: t["Value"] for t in stack.props("AsyncEndpointConfig")["Tags"]}
            assert tags[f"{which.lower()}-topic-policy"] == {"Ref": name}


def test_a_model_without_its_execution_role_is_refused():
    (rule,) = [r for n, r in CFN["Rules"].items() if n == "ExecutionRoleForEndpoint"]
    assert Deployed(CFN, ModelName="m").evaluate(rule["RuleCondition"], CFN["Conditions"])
    assert not Deployed(CFN, ModelName="m").evaluate(rule["Assertions"][0]["Assert"], CFN["Conditions"])
    assert Deployed(CFN, **ENDPOINT).evaluate(rule["Assertions"][0]["Assert"], CFN["Conditions"])


# ---------------------------------------------------------------- callers and pipelines


def test_iam_callers_get_a_managed_policy_for_mcp_tools_only():
    stack = deployed("today (no endpoint)")
    statements = stack.props("McpToolsCallerPolicy")["PolicyDocument"]["Statement"]
    function = {"Fn::GetAtt": ["McpToolsFunction", "Arn"]}
    assert [(s["Action"], s["Resource"]) for s in statements] == [
        ("lambda:InvokeFunctionUrl", function), ("lambda:InvokeFunction", function)]
    assert "Condition" not in statements[0]
    assert statements[1]["Condition"] == {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}
    assert stack.outputs["McpToolsCallerPolicyArn"]["Value"] == {"Ref": "McpToolsCallerPolicy"}
    assert stack.props("McpToolsFunctionUrl")["AuthType"] == "AWS_IAM"


@pytest.mark.parametrize("function", ["McpToolsFunction", "GatewayTargetFunction"])
def test_the_tools_get_the_pipeline_parameter_map(function):
    assert CFN["Parameters"]["PipelineParameters"]["Default"] == SEED_PIPELINE_PARAMETERS
    stack = Deployed(CFN, AgentCoreGatewayId="gw-1234567890", AgentCoreGatewayRoleArn=ROLE,
                     PipelineParameters="input_data_uri=TrainingData,max_epochs=Epochs")
    variables = stack.props(function)["Environment"]["Variables"]
    assert variables["PIPELINE_PARAMETERS"] == "input_data_uri=TrainingData,max_epochs=Epochs"
    pattern = re.compile(CFN["Parameters"]["PipelineParameters"]["AllowedPattern"])
    assert pattern.fullmatch(SEED_PIPELINE_PARAMETERS) and pattern.fullmatch("input_data_uri=TrainingData")
    assert not pattern.fullmatch("input_data_uri") and not pattern.fullmatch("input_data_uri=Data,")


@pytest.mark.parametrize("function", ["McpToolsFunction", "GatewayTargetFunction"])
def test_the_tools_are_told_how_runs_questions_may_be_answered(function):
    spec = CFN["Parameters"]["ApprovalsVia"]
    assert (spec["Default"], spec["AllowedValues"]) == ("any", ["any", "elicitation"])
    for via in ("any", "elicitation"):
        stack = Deployed(CFN, AgentCoreGatewayId="gw-1234567890", AgentCoreGatewayRoleArn=ROLE, ApprovalsVia=via)
        variables = stack.props(function)["Environment"]["Variables"]
        assert variables["APPROVALS_VIA"] == via


# ---------------------------------------------------------------- the environment the code reads

# Each function's configuration lists the variables it reads (`VARIABLES`) and those without
# which it does not start (`REQUIRED`), beside the code that reads them; a Rust test in each
# crate holds the reading code to its list. Here the lists are held to the template.
CONFIG_FILES = {
    "notification-handler": ["functions/notification-handler/src/config.rs"],
    "pipeline-router": ["functions/pipeline-router/src/config.rs"],
    "mcp-tools": ["functions/mcp-tools/src/config/mod.rs", "functions/mcp-tools/src/config/auth.rs",
                  "functions/mcp-tools/src/config/tools.rs"],
    "gateway-target": ["functions/mcp-tools/src/config/tools.rs"],
    "event-delivery": ["functions/event-delivery/src/config.rs"],
}
FUNCTIONS = {"NotificationHandlerFunction": "notification-handler", "PipelineRouterFunction": "pipeline-router",
             "McpToolsFunction": "mcp-tools", "GatewayTargetFunction": "gateway-target",
             "EventDeliveryFunction": "event-delivery"}


def listed(path: str, const: str) -> set:
    """The names in `pub const <const>: &[&str] = &[...]` of a Rust file (empty when absent)."""
    text = (ROOT / path).read_text().split("#[cfg(test)]")[0]
    found = re.search(rf"pub const {const}: &\[&str\] = &\[(.*?)\];", text, re.S)
    return set(re.findall(r'"([A-Z0-9_]+)"', found.group(1))) if found else set()


def function_variables(binary: str) -> tuple:
    """(read, required) variable names of a function, from its configuration's lists."""
    read, required = set(), set()
    for path in CONFIG_FILES[binary]:
        read |= listed(path, "VARIABLES")
        required |= listed(path, "REQUIRED")
    assert read, f"found no variables listed for {binary}"
    return read, required


AUTH_RS = "functions/mcp-tools/src/config/auth.rs"
# Required only in one AUTH_MODE; the template sets them in that mode. Bearer mode needs at least
# one of BEARER_TOKENS instead.
MODE_ONLY = {name: "oauth" for name in listed(AUTH_RS, "OAUTH_REQUIRED")}
BEARER_TOKENS = listed(AUTH_RS, "BEARER_ONE_OF")


def test_the_lists_hold_what_the_code_reads():
    read, required = function_variables("mcp-tools")
    assert {"RESULTS_TABLE", "IO_BUCKET", "AUTH_MODE", "FUNCTION_TIMEOUT_SECS", "METRICS_NAMESPACE"} <= read
    assert {"RESULTS_TABLE", "ASYNC_ENDPOINT_NAME", "AUTH_MODE"} <= required
    assert {"OAUTH_JWKS_URI", "OAUTH_READ_SCOPE", "OAUTH_WRITE_SCOPE", "OAUTH_APPROVE_SCOPE", "OAUTH_AUDIENCE",
            "OAUTH_CLIENT_IDS", "APPROVALS_VIA"} | BEARER_TOKENS <= read
    assert "OAUTH_AUDIENCE" not in required, "optional: the resource defaults to the request's own URL"
    assert "RESULT_TTL_SECS" in function_variables("pipeline-router")[0]
    assert MODE_ONLY == {"OAUTH_ISSUER": "oauth"}
    assert BEARER_TOKENS == {"MCP_BEARER_TOKENS", "MCP_BEARER_TOKEN_SHA256"}
    assert not BEARER_TOKENS & required


URL_AUTH = {"FunctionUrlAuthType": "NONE"}
HASH_A, HASH_B = "a" * 64, "b" * 64
COGNITO = {**URL_AUTH, "CreateUserPool": "true", "UserPoolDomainPrefix": "acme-mcp-jobs"}
ISSUER = "https://login.example.com/realms/ml"
# The Function URL's auth modes: the parameters, and the AUTH_MODE they give mcp-tools.
AUTH_CASES = {
    "iam": ({}, "iam"),
    "bearer, one token": ({**URL_AUTH, "BearerTokenSha256": HASH_A}, "bearer"),
    "bearer, named tokens": ({**URL_AUTH, "BearerTokens": f"agent-a:{HASH_A},agent-b:{HASH_B}"}, "bearer"),
    "bearer, both": ({**URL_AUTH, "BearerTokenSha256": HASH_A, "BearerTokens": f"agent-b:{HASH_B}"}, "bearer"),
    "oauth, issuer": ({**URL_AUTH, "OAuthIssuer": ISSUER}, "oauth"),
    "oauth, issuer, every setting": ({**URL_AUTH, "OAuthIssuer": ISSUER, "OAuthAudience": "https://mcp.example.com/mcp",
                                      "OAuthJwksUri": f"{ISSUER}/certs", "OAuthReadScope": "ml.read",
                                      "OAuthWriteScope": "ml.write", "OAuthApproveScope": "ml.approve",
                                      "OAuthClientIds": "cli-1,cli-2"}, "oauth"),
    "oauth, Cognito": (COGNITO, "oauth"),
}


@pytest.mark.parametrize("case", list(AUTH_CASES))
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_each_function_gets_every_variable_its_code_requires_and_nothing_it_does_not_read(function, case):
    parameters, mode = AUTH_CASES[case]
    stack = Deployed(CFN, **parameters, AgentCoreGatewayId="gw-1234567890", AgentCoreGatewayRoleArn=ROLE)
    read, required = function_variables(FUNCTIONS[function])
    variables = stack.props(function)["Environment"]["Variables"]
    if function == "McpToolsFunction":
        assert variables["AUTH_MODE"] == mode
        if mode == "bearer":
            assert BEARER_TOKENS & set(variables)
    needed = (required - set(MODE_ONLY)) | {v for v in required if MODE_ONLY.get(v) == mode}
    assert needed <= set(variables), f"required but not set: {needed - set(variables)}"
    unread = set(variables) - read
    assert not unread, f"set but never read by {FUNCTIONS[function]}: {unread}"


AUTH_VARIABLES = {"AUTH_MODE", "MCP_BEARER_TOKEN_SHA256", "MCP_BEARER_TOKENS", "OAUTH_ISSUER", "OAUTH_AUDIENCE",
                  "OAUTH_JWKS_URI", "OAUTH_READ_SCOPE", "OAUTH_WRITE_SCOPE", "OAUTH_APPROVE_SCOPE",
                  "OAUTH_CLIENT_IDS", "OAUTH_JWKS_MIN_REFRESH_SECS"}
COGNITO_ISSUER = {"Fn::Sub": "https://cognito-idp.us-east-1.amazonaws.com/${UserPool}"}
# The agents' app client and the approvers'.
COGNITO_CLIENT_IDS = {"Fn::Join": [",", [{"Ref": "UserPoolClient"}, {"Ref": "ApproverUserPoolClient"}]]}
# What each mode sets of the authentication variables, and nothing else of them.
EXPECTED_AUTH = {
    "iam": {"AUTH_MODE": "iam"},
    "bearer, one token": {"AUTH_MODE": "bearer", "MCP_BEARER_TOKEN_SHA256": HASH_A},
    "bearer, named tokens": {"AUTH_MODE": "bearer", "MCP_BEARER_TOKENS": f"agent-a:{HASH_A},agent-b:{HASH_B}"},
    "bearer, both": {"AUTH_MODE": "bearer", "MCP_BEARER_TOKEN_SHA256": HASH_A, "MCP_BEARER_TOKENS": f"agent-b:{HASH_B}"},
    "oauth, issuer": {"AUTH_MODE": "oauth", "OAUTH_ISSUER": ISSUER},
    "oauth, issuer, every setting": {"AUTH_MODE": "oauth", "OAUTH_ISSUER": ISSUER,
                                     "OAUTH_AUDIENCE": "https://mcp.example.com/mcp", "OAUTH_JWKS_URI": f"{ISSUER}/certs",
                                     "OAUTH_READ_SCOPE": "ml.read", "OAUTH_WRITE_SCOPE": "ml.write",
                                     "OAUTH_APPROVE_SCOPE": "ml.approve", "OAUTH_CLIENT_IDS": "cli-1,cli-2"},
    "oauth, Cognito": {"AUTH_MODE": "oauth", "OAUTH_ISSUER": COGNITO_ISSUER, "OAUTH_READ_SCOPE": "mcp-tools/jobs.read",
                       "OAUTH_WRITE_SCOPE": "mcp-tools/jobs.write", "OAUTH_APPROVE_SCOPE": "mcp-tools/jobs.approve",
                       "OAUTH_CLIENT_IDS": COGNITO_CLIENT_IDS},
}


@pytest.mark.parametrize("case", list(AUTH_CASES))
def test_mcp_tools_gets_only_the_variables_of_its_auth_mode(case):
    parameters, _ = AUTH_CASES[case]
    stack = Deployed(CFN, **parameters)
    variables = stack.props("McpToolsFunction")["Environment"]["Variables"]
    assert {k: v for k, v in variables.items() if k in AUTH_VARIABLES} == EXPECTED_AUTH[case]
    # OAuth and bearer tokens are checked by the function: the URL lets everyone through to it.
    assert stack.props("McpToolsFunctionUrl")["AuthType"] == ("AWS_IAM" if case == "iam" else "NONE")
    oauth = EXPECTED_AUTH[case]["AUTH_MODE"] == "oauth"
    assert ("OAuthIssuerUrl" in stack.outputs) == ("ProtectedResourceMetadataUrl" in stack.outputs) == oauth
    if oauth:
        assert stack.outputs["OAuthIssuerUrl"]["Value"] == variables["OAUTH_ISSUER"]
        # The Function URL ends with a slash.
        assert stack.outputs["ProtectedResourceMetadataUrl"]["Value"] == {
            "Fn::Sub": "${McpToolsFunctionUrl.FunctionUrl}.well-known/oauth-protected-resource/mcp"}
    # The Gateway authenticates its callers itself; its target reads none of this.
    gateway = Deployed(CFN, **parameters, AgentCoreGatewayId="gw-1234567890", AgentCoreGatewayRoleArn=ROLE)
    assert not AUTH_VARIABLES & set(gateway.props("GatewayTargetFunction")["Environment"]["Variables"])


def refusals(**parameters) -> list:
    """The rules whose assertions fail for these parameter values (what CloudFormation refuses)."""
    stack = Deployed(CFN, **parameters)
    return sorted(name for name, rule in CFN["Rules"].items()
                  if stack.evaluate(rule.get("RuleCondition", {"Fn::Equals": ["", ""]}), CFN["Conditions"])
                  and not all(stack.evaluate(a["Assert"], CFN["Conditions"]) for a in rule["Assertions"]))


@pytest.mark.parametrize("case", list(AUTH_CASES))
def test_every_auth_mode_passes_the_rules(case):
    assert refusals(**AUTH_CASES[case][0]) == []


@pytest.mark.parametrize("parameters, refused_by", [
    ({"OAuthIssuer": ISSUER}, "UrlAuthNoneForOAuth"),
    ({"CreateUserPool": "true", "UserPoolDomainPrefix": "acme"}, "UrlAuthNoneForOAuth"),
    ({**URL_AUTH, "CreateUserPool": "true"}, "DomainPrefixForUserPool"),
    ({**COGNITO, "OAuthIssuer": ISSUER}, "DomainPrefixForUserPool"),
    ({**COGNITO, "OAuthReadScope": "jobs:read"}, "DomainPrefixForUserPool"),
    ({**COGNITO, "OAuthApproveScope": "jobs:approve"}, "DomainPrefixForUserPool"),
    ({**COGNITO, "OAuthClientIds": "cli-1"}, "DomainPrefixForUserPool"),
    (URL_AUTH, "BearerTokenForUrlAuthNone"),
])
def test_the_rules_refuse_what_would_not_work(parameters, refused_by):
    assert refusals(**parameters) == [refused_by]


def allowed(parameter: str, value: str) -> bool:
    spec = CFN["Parameters"][parameter]
    return re.fullmatch(spec["AllowedPattern"], value) is not None


def test_parameter_patterns_refuse_what_the_code_would():
    for parameter in ("OAuthIssuer", "OAuthAudience", "OAuthJwksUri"):
        assert allowed(parameter, "") and allowed(parameter, ISSUER)
        for bad in ("http://login.example.com", "login.example.com", "https://", "https://a b"):
            assert not allowed(parameter, bad), (parameter, bad)
    for parameter in ("OAuthReadScope", "OAuthWriteScope", "OAuthApproveScope"):
        assert allowed(parameter, "") and allowed(parameter, "mcp-tools/jobs.read") and allowed(parameter, "jobs:read")
        assert not allowed(parameter, "jobs read") and not allowed(parameter, 'jobs"read')
    assert allowed("BearerTokens", "") and allowed("BearerTokens", f"agent-a:{HASH_A},agent.b_2:{HASH_B}")
    for bad in (HASH_A, f"agent-a:{HASH_A},", f"agent a:{HASH_A}", "agent-a:abc", f"agent-a:{HASH_A.upper()}"):
        assert not allowed("BearerTokens", bad), bad
    # No parameter is NoEcho: SAM's guided deploy asks one, hidden, again on every Enter.
    assert not [name for name, p in CFN["Parameters"].items() if p.get("NoEcho")]
    assert allowed("OAuthClientIds", "") and allowed("OAuthClientIds", "1example23456789,2example")
    assert not allowed("OAuthClientIds", "a,,b") and not allowed("OAuthClientIds", "a, b")
    assert allowed("UserPoolDomainPrefix", "acme-mcp-jobs") and not allowed("UserPoolDomainPrefix", "Acme")
    assert not allowed("UserPoolDomainPrefix", "-acme") and not allowed("UserPoolDomainPrefix", "a" * 64)


COGNITO_RESOURCES = {"UserPool", "UserPoolDomain", "UserPoolResourceServer", "UserPoolClient",
                     "UserPoolManagedLoginBranding", "ApproverUserPoolClient", "ApproverUserPoolManagedLoginBranding"}
COGNITO_OUTPUTS = {"UserPoolId", "UserPoolClientId", "ApproverUserPoolClientId", "UserPoolDomainUrl"}


@pytest.mark.parametrize("case", [c for c in AUTH_CASES if c != "oauth, Cognito"])
def test_the_user_pool_is_created_only_when_asked(case):
    stack = Deployed(CFN, **AUTH_CASES[case][0])
    assert not COGNITO_RESOURCES & set(stack.resources)
    assert not [n for n, r in stack.resources.items() if r["Type"].startswith("AWS::Cognito::")]
    assert not COGNITO_OUTPUTS & set(stack.outputs)


def test_the_user_pool_is_wired_to_mcp_tools():
    stack = Deployed(CFN, **COGNITO, OAuthCallbackUrls="http://localhost:3030/callback,http://localhost:8765/callback")
    assert COGNITO_RESOURCES <= set(stack.resources)
    pool = {"Ref": "UserPool"}
    pool_props = stack.props("UserPool")
    assert pool_props["UsernameAttributes"] == ["email"]
    # No self sign-up: only an administrator adds users.
    assert pool_props["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}
    assert pool_props["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    domain = stack.props("UserPoolDomain")
    assert (domain["UserPoolId"], domain["Domain"], domain["ManagedLoginVersion"]) == (pool, "acme-mcp-jobs", 2)

    server = stack.props("UserPoolResourceServer")
    assert server["UserPoolId"] == pool
    identifier = server["Identifier"]
    scopes = {s["ScopeName"] for s in server["Scopes"]}
    assert scopes == {"jobs.read", "jobs.write", "jobs.approve"}
    variables = stack.props("McpToolsFunction")["Environment"]["Variables"]
    assert variables["OAUTH_READ_SCOPE"] == f"{identifier}/jobs.read"
    assert variables["OAUTH_WRITE_SCOPE"] == f"{identifier}/jobs.write"
    assert variables["OAUTH_APPROVE_SCOPE"] == f"{identifier}/jobs.approve"
    assert variables["OAUTH_ISSUER"] == COGNITO_ISSUER
    # Both clients' tokens are accepted: the agents' and the approvers'.
    assert variables["OAUTH_CLIENT_IDS"] == COGNITO_CLIENT_IDS

    # The agents' client starts and stops work; only the approvers' answers runs and decides models.
    client_scopes = {"UserPoolClient": ["openid", variables["OAUTH_READ_SCOPE"], variables["OAUTH_WRITE_SCOPE"]],
                     "ApproverUserPoolClient": ["openid", variables["OAUTH_READ_SCOPE"],
                                                variables["OAUTH_APPROVE_SCOPE"]]}
    for name, expected_scopes in client_scopes.items():
        client = stack.props(name)
        assert client["UserPoolId"] == pool
        # A public client (MCP clients keep no secret), the code flow only, the pool's own sign-in.
        assert client["GenerateSecret"] is False and client["AllowedOAuthFlowsUserPoolClient"] is True
        assert client["AllowedOAuthFlows"] == ["code"]
        assert sorted(client["AllowedOAuthScopes"]) == sorted(expected_scopes), name
        assert client["SupportedIdentityProviders"] == ["COGNITO"]
        assert client["CallbackURLs"] == ["http://localhost:3030/callback", "http://localhost:8765/callback"]
        # Its scopes exist only once the resource server does.
        assert stack.resources[name]["DependsOn"] == "UserPoolResourceServer"
    agents, approvers = stack.props("UserPoolClient"), stack.props("ApproverUserPoolClient")
    assert variables["OAUTH_APPROVE_SCOPE"] not in agents["AllowedOAuthScopes"]
    assert variables["OAUTH_WRITE_SCOPE"] not in approvers["AllowedOAuthScopes"]
    # The approvers' client is the agents' in all but its name and scopes.
    assert {k for k in agents.keys() | approvers.keys() if agents.get(k) != approvers.get(k)} == {
        "ClientName", "AllowedOAuthScopes"}
    # Managed login shows its pages only for a client with a style: each has its own.
    for branding_name, client_name in (("UserPoolManagedLoginBranding", "UserPoolClient"),
                                       ("ApproverUserPoolManagedLoginBranding", "ApproverUserPoolClient")):
        branding = stack.props(branding_name)
        assert (branding["UserPoolId"], branding["ClientId"]) == (pool, {"Ref": client_name})

    assert stack.outputs["UserPoolId"]["Value"] == pool
    assert stack.outputs["UserPoolClientId"]["Value"] == {"Ref": "UserPoolClient"}
    assert stack.outputs["ApproverUserPoolClientId"]["Value"] == {"Ref": "ApproverUserPoolClient"}
    assert stack.outputs["UserPoolDomainUrl"]["Value"] == "https://acme-mcp-jobs.auth.us-east-1.amazoncognito.com"
    assert stack.outputs["OAuthIssuerUrl"]["Value"] == COGNITO_ISSUER
    assert CFN["Parameters"]["OAuthCallbackUrls"]["Default"] == "http://localhost:3030/callback"


# ---------------------------------------------------------------- cfn-lint, per condition set


@pytest.mark.parametrize("case", ["today (no endpoint)", "endpoint, existing topics, SQS buffer, KMS key",
                                  "endpoint"])
def test_cfn_lint_passes_on_the_translated_template(case):
    matches = lint(with_defaults(CFN, **CASES[case]), config=ManualArgs(regions=["us-east-1"]))
    assert not matches, "\n".join(str(m) for m in matches)


@pytest.mark.parametrize("case", ["bearer, named tokens", "oauth, issuer, every setting", "oauth, Cognito"])
def test_cfn_lint_passes_on_each_auth_mode(case):
    matches = lint(with_defaults(CFN, **AUTH_CASES[case][0]), config=ManualArgs(regions=["us-east-1"]))
    assert not matches, "\n".join(str(m) for m in matches)


def test_the_translated_template_is_json_cloudformation():
    assert "Transform" not in CFN
    assert not [n for n, r in CFN["Resources"].items() if r["Type"].startswith("AWS::Serverless::")]
    json.dumps(CFN)


@pytest.mark.parametrize("case", list(AUTH_CASES))
def test_a_url_without_iam_auth_lets_everyone_in_and_one_with_it_nobody(case):
    """With auth type NONE the URL's resource policy must let anyone invoke it (through the URL
    only): the function checks the token itself. SAM writes nothing for an AuthType parameter."""
    parameters, mode = AUTH_CASES[case]
    stack = Deployed(CFN, **parameters)
    public = {name: r["Properties"] for name, r in stack.resources.items()
              if r["Type"] == "AWS::Lambda::Permission" and r["Properties"].get("Principal") == "*"}
    if mode == "iam":
        assert public == {}, public
        return
    function = {"Ref": "McpToolsFunction"}
    assert public == {
        "McpToolsUrlPublicInvoke": {"Action": "lambda:InvokeFunctionUrl", "FunctionName": function,
                                    "Principal": "*", "FunctionUrlAuthType": "NONE"},
        "McpToolsUrlPublicInvokeViaUrl": {"Action": "lambda:InvokeFunction", "FunctionName": function,
                                          "Principal": "*", "InvokedViaFunctionUrl": True},
    }
    assert stack.props("McpToolsFunctionUrl")["AuthType"] == "NONE"


# ---------------------------------------------------------------- completion events

EVENT_FUNCTIONS = ["NotificationHandlerFunction", "McpToolsFunction", "GatewayTargetFunction"]
WEBHOOK = {"CompletionEvents": "stack-bus", "CompletionWebhookUrl": "https://hooks.example.com/jobs",
           "CompletionWebhookApiKeySecret": "mcp/webhook-key", "AgentCoreGatewayId": "gw-1234567890",
           "AgentCoreGatewayRoleArn": "arn:aws:iam::123456789012:role/gateway"}


def put_events_statements(stack: Deployed, role: str) -> list:
    return [s for policy in stack.props(role)["Policies"] for s in policy["PolicyDocument"]["Statement"]
            if "events:PutEvents" in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])]


def test_without_completion_events_nothing_is_put_anywhere():
    stack = Deployed(CFN, AgentCoreGatewayId=WEBHOOK["AgentCoreGatewayId"],
                     AgentCoreGatewayRoleArn=WEBHOOK["AgentCoreGatewayRoleArn"])
    for function in EVENT_FUNCTIONS:
        assert "EVENT_BUS_NAME" not in stack.props(function)["Environment"]["Variables"], function
    for role in ("NotificationHandlerRole", "McpToolsRole"):
        assert put_events_statements(stack, role) == [], role
    assert not [n for n in stack.resources if n.startswith("Completion")]


@pytest.mark.parametrize("bus, name, arn", [
    ("default-bus", "default", "arn:aws:events:us-east-1:123456789012:event-bus/default"),
    ("stack-bus", {"Ref": "CompletionEventBus"}, {"Fn::GetAtt": ["CompletionEventBus", "Arn"]}),
])
def test_each_function_that_records_outcomes_may_put_on_the_bus_it_is_told_and_only_there(bus, name, arn):
    stack = Deployed(CFN, CompletionEvents=bus, AgentCoreGatewayId=WEBHOOK["AgentCoreGatewayId"],
                     AgentCoreGatewayRoleArn=WEBHOOK["AgentCoreGatewayRoleArn"])
    for function in EVENT_FUNCTIONS:
        assert stack.props(function)["Environment"]["Variables"]["EVENT_BUS_NAME"] == name, function
    for role in ("NotificationHandlerRole", "McpToolsRole"):
        assert [(s["Action"], s["Resource"]) for s in put_events_statements(stack, role)] == [
            ("events:PutEvents", arn)], role
    assert ("CompletionEventBus" in stack.resources) == (bus == "stack-bus")
    assert stack.outputs["CompletionEventBusName"]["Value"] == name
    assert "CompletionWebhookRule" not in stack.resources


def test_a_webhook_is_an_api_destination_with_retries_a_dlq_and_an_alarm():
    stack = Deployed(CFN, **WEBHOOK)
    connection = stack.props("CompletionWebhookConnection")
    assert connection["AuthorizationType"] == "API_KEY"
    assert connection["AuthParameters"]["ApiKeyAuthParameters"] == {"ApiKeyName": "x-api-key", "ApiKeyValue": "{{resolve:secretsmanager:mcp/webhook-key:SecretString}}"}
    destination = stack.props("CompletionWebhookDestination")
    assert destination["InvocationEndpoint"] == WEBHOOK["CompletionWebhookUrl"]
    assert destination["HttpMethod"] == "POST"
    assert destination["ConnectionArn"] == {"Fn::GetAtt": ["CompletionWebhookConnection", "Arn"]}
    rule = stack.props("CompletionWebhookRule")
    assert rule["EventBusName"] == {"Ref": "CompletionEventBus"}
    assert rule["EventPattern"] == {"source": ["mcp.async-jobs"],
                                    "detail-type": ["Async Job Completed", "Async Job Failed"]}
    [target] = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["CompletionWebhookDestination", "Arn"]}
    assert target["RoleArn"] == {"Fn::GetAtt": ["CompletionWebhookRole", "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 86400}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["CompletionWebhookDLQ", "Arn"]}}
    [statement] = stack.props("CompletionWebhookRole")["Policies"][0]["PolicyDocument"]["Statement"]
    assert (statement["Action"], statement["Resource"]) == (
        "events:InvokeApiDestination", {"Fn::GetAtt": ["CompletionWebhookDestination", "Arn"]})
    [allowed] = stack.props("CompletionWebhookDLQPolicy")["PolicyDocument"]["Statement"]
    assert allowed["Principal"] == {"Service": "events.amazonaws.com"}
    assert allowed["Condition"] == {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["CompletionWebhookRule", "Arn"]}}}
    alarm = stack.props("CompletionWebhookDLQDepthAlarm")
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["CompletionWebhookDLQ", "QueueName"]}}]
    assert stack.outputs["CompletionWebhookDLQUrl"]["Value"] == {"Ref": "CompletionWebhookDLQ"}
    assert refusals(**WEBHOOK) == []
    matches = lint(with_defaults(CFN, **WEBHOOK), config=ManualArgs(regions=["us-east-1"]))
    assert not matches, "\n".join(str(m) for m in matches)


@pytest.mark.parametrize("parameters", [
    {"CompletionWebhookUrl": "https://hooks.example.com/jobs", "CompletionWebhookApiKeySecret": "k"},
    {"CompletionEvents": "default-bus", "CompletionWebhookUrl": "https://hooks.example.com/jobs"},
])
def test_a_webhook_without_events_or_a_key_is_refused(parameters):
    assert refusals(**parameters) == ["WebhookNeedsEventsAndKey"]
    assert not allowed("CompletionWebhookUrl", "http://hooks.example.com/jobs")
