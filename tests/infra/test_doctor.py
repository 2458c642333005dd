"""The doctor end to end on the local stack: every check ok on a correct setup, and each check
FAILing (and only that one) on a setup with exactly that one thing wrong."""

import json
import sys

import pytest
from botocore.stub import Stubber

from wiring import (FUNCTION_ROLES, PIPELINE_ROLE, ROLE, ROOT, SCRIPTS, Setup, async_config, catalog_endpoint,
                    lines_by_check, run_script, standin)

sys.path.insert(0, str(SCRIPTS))
import doctor  # noqa: E402
import doctor_callback  # noqa: E402
from doctor_iam import function_calls, queue_arn_of_url  # noqa: E402
from iam_fixtures import fake_iam, iam  # noqa: F401 (fixtures)
from doctor_run import failed_lines, only_failure, printed_statement, run_doctor  # noqa: E402

CHECKS = {"endpoint", "topics", "output path", "failure path", "response in message", "success subscription",
          "error subscription", "pipeline", "rule", "alarms", "endpoint role", "notification-handler role",
          "pipeline-router role", "mcp-tools role", "event-delivery role", "delivery queue", "events stream",
          "stream mapping", "stream failure queue"}




def test_a_correct_setup_passes_every_check():
    setup = Setup().build()
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout + result.stderr
    dlqs = {f"DLQ {url.rsplit('/', 1)[-1]}" for url in (setup.dlq_url, setup.callback_dlq_url, setup.delivery_dlq_url)}
    # The callback queue's and the delivery queue's DLQs are found through the queues' RedrivePolicy:
    # no --dlq-url names them.
    assert set(lines) == CHECKS | dlqs | {"callback queue", f"pipeline {setup.pipeline} role"}, result.stdout
    assert all(status == "ok" for status, _ in lines.values()), result.stdout
    assert result.stdout.splitlines()[-1] == "all checks passed"


def test_a_missing_endpoint_fails():
    setup = Setup().build(skip=("endpoint",))
    result, lines = run_doctor(setup)
    assert lines["endpoint"][0] == "FAIL" and "cannot be described" in lines["endpoint"][1], result.stdout
    assert result.returncode == 1
    # What depends on the endpoint's config is skipped, not reported as a second fault.
    assert {c for c, (s, _) in lines.items() if s == "FAIL"} == {"endpoint"}


def test_an_endpoint_still_updating_fails():
    setup = Setup().build(skip=("endpoint",))
    standin("POST", "/_standin/pipeline", {"step_millis": 600_000})
    try:
        setup.create_endpoint(wait=False)
    finally:
        standin("DELETE", "/_standin/pipeline")
    line = only_failure(setup, "endpoint")
    assert "is Creating" in line and "wait until it is InService" in line


def test_topics_other_than_the_stacks_fail():
    setup = Setup().build(skip=("endpoint",))
    other = setup.aws["sns"].create_topic(Name=f"doctor-{setup.id}-someone-elses")["TopicArn"]
    setup.create_endpoint(async_config(setup, SuccessTopic=other))
    line = only_failure(setup, "topics")
    assert f"SuccessTopic is {other}" in line and "wire_endpoint.py" in line


def test_an_output_path_outside_the_granted_prefix_fails():
    setup = Setup().build(skip=("endpoint",))
    setup.create_endpoint(async_config(setup, S3OutputPath=f"s3://{setup.bucket}/elsewhere/"))
    line = only_failure(setup, "output path")
    assert f"elsewhere/ is not under s3://{setup.bucket}/outputs/" in line


def test_a_missing_failure_path_fails():
    setup = Setup().build(skip=("endpoint",))
    setup.create_endpoint(async_config(setup, S3FailurePath=None))
    line = only_failure(setup, "failure path")
    assert f"S3FailurePath is not set; it must lie under s3://{setup.bucket}/failures/" in line


def test_responses_not_in_the_message_are_a_warning_only():
    setup = Setup().build(skip=("endpoint",))
    setup.create_endpoint(async_config(setup, IncludeInferenceResponseIn=None))
    result, lines = run_doctor(setup)
    assert lines["response in message"][0] == "warn", result.stdout
    assert result.returncode == 0, result.stdout
    assert all(s == "ok" for c, (s, _) in lines.items() if c != "response in message")


def test_a_topic_without_a_subscription_to_the_handler_fails():
    setup = Setup().build(skip=("subscriptions",))
    setup.subscribe(setup.success_topic)
    setup.subscribe(setup.error_topic, endpoint=setup.handler_arn.replace("notification-handler", "other-function"))
    line = only_failure(setup, "error subscription")
    assert "has no subscription to notification-handler" in line and "other-function" in line


def test_the_buffer_queue_counts_as_reaching_the_handler():
    setup = Setup().build(skip=("subscriptions",))
    sqs = setup.aws["sqs"]
    url = sqs.create_queue(QueueName=f"doctor-{setup.id}-buffer")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for topic in (setup.success_topic, setup.error_topic):
        setup.aws["sns"].subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    result = run_script("doctor.py", setup.doctor_args() + ["--buffer-queue-url", url])
    assert result.returncode == 0, result.stdout
    assert f"delivers to the buffer queue {arn}, confirmed" in result.stdout


def test_a_pipeline_without_a_mapped_parameter_fails():
    setup = Setup().build(skip=("pipeline",))
    setup.create_pipeline(parameters=["InputDataUri", "Epochs", "AccuracyThreshold", "TrainingInstanceType"])
    line = only_failure(setup, "pipeline")
    assert "declares no parameter MaxEpochs (for max_epochs)" in line and "PipelineParameters" in line


def test_pipeline_parameters_mapped_to_the_pipelines_own_names_pass():
    setup = Setup().build(skip=("pipeline",))
    setup.create_pipeline(parameters=["TrainingData", "Epochs"])
    setup.pipeline_parameters = "input_data_uri=TrainingData,max_epochs=Epochs"
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout
    assert "declares TrainingData, Epochs" in lines["pipeline"][1]


def test_a_missing_pipeline_fails():
    setup = Setup().build(skip=("pipeline",))
    line = only_failure(setup, "pipeline")
    assert "cannot be described" in line and "does not exist" in line


def test_a_disabled_rule_fails():
    setup = Setup().build(skip=("rule",))
    setup.create_rule(state="DISABLED")
    line = only_failure(setup, "rule")
    assert f"aws events enable-rule --name {setup.rule}" in line


def test_a_dlq_with_messages_fails():
    setup = Setup().build()
    setup.aws["sqs"].send_message(QueueUrl=setup.dlq_url, MessageBody=json.dumps({"Records": []}))
    line = only_failure(setup, f"DLQ {setup.dlq_url.rsplit('/', 1)[-1]}")
    assert "1 message(s) waiting" in line and "make redrive" in line


def test_an_alarm_without_an_action_fails():
    setup = Setup().build(skip=("alarm",))
    setup.create_alarm(with_action=False)
    line = only_failure(setup, "alarms")
    assert f"no action: {setup.alarm}" in line and "AlarmTopicArn" in line


# ---------------------------------------------------------------- what moto cannot show


def test_a_subscription_pending_confirmation_fails():
    """moto confirms every subscription at once; SNS's own answers, stubbed."""
    import boto3
    sns = boto3.client("sns", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    topic = "arn:aws:sns:us-east-1:123456789012:success"
    with Stubber(sns) as stub:
        stub.add_response("list_subscriptions_by_topic", {"Subscriptions": [{
            "SubscriptionArn": "PendingConfirmation", "Owner": "123456789012", "Protocol": "lambda",
            "Endpoint": "arn:aws:lambda:us-east-1:123456789012:function:s-notification-handler",
            "TopicArn": topic}]}, {"TopicArn": topic})
        result = doctor.check_subscriptions(sns, None, doctor.Targets(notification_handler="s-notification-handler"),
                                            "success", topic)
    assert result.status == "FAIL" and "pending confirmation" in result.detail


def test_with_a_stack_name_every_name_comes_from_the_stack():
    import boto3
    session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    cloudformation = session.client("cloudformation")
    parameters = {"AsyncEndpointName": "docs-async", "IoBucketName": "io", "OutputPrefix": "out/",
                  "FailurePrefix": "fail/", "PipelineName": "train", "PipelineParameters": "input_data_uri=Data"}
    resources = {"PipelineStatusRule": ("AWS::Events::Rule", "s-PipelineStatusRule-1"),
                 "NotificationHandlerFunction": ("AWS::Lambda::Function", "s-notification-handler"),
                 "AsyncFailureDLQ": ("AWS::SQS::Queue", "https://sqs/1/s-AsyncFailureDLQ"),
                 "PipelineResultsDLQ": ("AWS::SQS::Queue", "https://sqs/1/s-PipelineResultsDLQ"),
                 "PipelineCallbackQueue": ("AWS::SQS::Queue", "https://sqs/1/s-PipelineCallbackQueue"),
                 "PipelineCallbackDLQ": ("AWS::SQS::Queue", "https://sqs/1/s-PipelineCallbackDLQ"),
                 "EventDeliveryQueue": ("AWS::SQS::Queue", "https://sqs/1/mcp-event-delivery-u.fifo"),
                 "EventDeliveryDLQ": ("AWS::SQS::Queue", "https://sqs/1/mcp-event-delivery-dlq-u.fifo"),
                 "EventDeliveryFunction": ("AWS::Lambda::Function", "s-EventDeliveryFunction-3"),
                 "SubscriptionsTable": ("AWS::DynamoDB::Table", "s-SubscriptionsTable-4"),
                 "EventsTable": ("AWS::DynamoDB::Table", "s-EventsTable-5"),
                 "EventStreamFailureQueue": ("AWS::SQS::Queue", "https://sqs/1/s-EventStreamFailureQueue-6"),
                 "JobFailureRateAlarm": ("AWS::CloudWatch::Alarm", "s-JobFailureRateAlarm-2"),
                 "OutcomesNotArrivingAlarm": ("AWS::CloudWatch::Alarm", "s-OutcomesNotArrivingAlarm-1")}
    with Stubber(cloudformation) as stub:
        stub.add_response("describe_stacks", {"Stacks": [{
            "StackName": "s", "CreationTime": "2026-01-01T00:00:00Z", "StackStatus": "CREATE_COMPLETE",
            "Parameters": [{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
            "Outputs": [{"OutputKey": "SuccessTopic", "OutputValue": "arn:s"},
                        {"OutputKey": "ErrorTopic", "OutputValue": "arn:e"}]}]}, {"StackName": "s"})
        stub.add_response("list_stack_resources", {"StackResourceSummaries": [
            {"LogicalResourceId": k, "ResourceType": t, "PhysicalResourceId": p, "ResourceStatus": "CREATE_COMPLETE",
             "LastUpdatedTimestamp": "2026-01-01T00:00:00Z"} for k, (t, p) in resources.items()]}, {"StackName": "s"})

        class OneClient:
            def client(self, name):
                assert name == "cloudformation"
                return cloudformation
        targets = doctor.targets_from_stack(OneClient(), "s")
    assert (targets.endpoint, targets.success_topic, targets.error_topic) == ("docs-async", "arn:s", "arn:e")
    assert (targets.bucket, targets.output_prefix, targets.failure_prefix) == ("io", "out/", "fail/")
    assert (targets.pipeline, targets.pipeline_parameters) == ("train", "input_data_uri=Data")
    assert targets.rule == "s-PipelineStatusRule-1" and targets.notification_handler == "s-notification-handler"
    assert targets.buffer_queue_url is None
    assert targets.dlq_urls == ["https://sqs/1/s-AsyncFailureDLQ", "https://sqs/1/s-PipelineResultsDLQ",
                                "https://sqs/1/s-PipelineCallbackDLQ"]
    assert targets.callback_queue_url == "https://sqs/1/s-PipelineCallbackQueue"
    assert targets.callback_dlq_url == "https://sqs/1/s-PipelineCallbackDLQ"
    # The delivery DLQ is checked beside its queue (a warning), not among the stack's failures.
    assert (targets.delivery_queue_url, targets.delivery_dlq_url) == (
        "https://sqs/1/mcp-event-delivery-u.fifo", "https://sqs/1/mcp-event-delivery-dlq-u.fifo")
    assert (targets.event_delivery, targets.subscriptions_table) == ("s-EventDeliveryFunction-3",
                                                                     "s-SubscriptionsTable-4")
    # The stream's failure queue is checked beside the stream, not among the DLQs: it holds records, not messages to
    # redrive.
    assert (targets.events_table, targets.stream_failure_queue_url) == (
        "s-EventsTable-5", "https://sqs/1/s-EventStreamFailureQueue-6")
    assert targets.alarms == ["s-JobFailureRateAlarm-2", "s-OutcomesNotArrivingAlarm-1"]


@pytest.mark.parametrize("text, error", [("input_data_uri", "is not tool_arg="), ("=X", "is not tool_arg=")])
def test_malformed_pipeline_parameters_are_named(text, error):
    with pytest.raises(ValueError, match=error):
        doctor.parse_pipeline_parameters(text)


# ---------------------------------------------------------------- permissions (IAM's simulator, played)


def test_every_role_may_do_what_it_must(iam):
    setup = Setup().build()
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "region us-east-1 (from AWS_REGION)"
    assert lines["endpoint role"][1].startswith(f"ok    endpoint role: {ROLE} may publish and write every outcome")
    for function, role in FUNCTION_ROLES.items():
        assert f"{role} may make every call its code makes" in lines[f"{function} role"][1], result.stdout
    simulated = {(r["role"], a, res) for r in iam.requests for a in r["actions"] for res in r["resources"]}
    bucket = setup.bucket
    assert {(ROLE, "sns:Publish", setup.success_topic), (ROLE, "sns:Publish", setup.error_topic),
            (ROLE, "s3:PutObject", f"arn:aws:s3:::{bucket}/outputs/doctor-check.out"),
            (ROLE, "s3:PutObject", f"arn:aws:s3:::{bucket}/failures/doctor-check.out"),
            (ROLE, "s3:GetObject", f"arn:aws:s3:::{bucket}/inputs/doctor-check.json")} <= simulated
    # No key in play, no KMS asked about.
    assert not [s for s in simulated if s[1].startswith("kms:")]
    # The topic's own policy (where a stack's topic grants the role) goes to the simulation too.
    assert all(r["resource_policy"] for r in iam.requests if r["actions"] == ["sns:Publish"])


def test_a_denied_publish_is_a_fail_with_the_statement_to_add(iam):
    setup = Setup().build()
    iam.deny(ROLE, "sns:Publish", setup.error_topic)
    result, lines = run_doctor(setup)
    assert result.returncode == 1, result.stdout
    (line,) = failed_lines(result.stdout)
    assert line.startswith(f"FAIL  endpoint role sns:Publish (error topic): {ROLE} may not sns:Publish on "
                           f"{setup.error_topic} (implicitDeny). Fix: add to the role's policy: ")
    assert printed_statement(line) == {"Effect": "Allow", "Action": "sns:Publish", "Resource": setup.error_topic}
    # Everything else, the function roles included, still passes.
    assert all(s == "ok" for c, (s, _) in lines.items() if c != "endpoint role sns:Publish (error topic)")


def test_each_denial_of_a_function_role_is_a_fail_line(iam):
    setup = Setup().build()
    tools = FUNCTION_ROLES["mcp-tools"]
    iam.deny(tools, "s3:PutObject", f"arn:aws:s3:::{setup.bucket}/inputs/*")
    iam.deny(tools, "sagemaker:DescribeEndpoint", "*", decision="explicitDeny")
    result, _ = run_doctor(setup)
    assert result.returncode == 1
    lines = failed_lines(result.stdout)
    assert len(lines) == 2, result.stdout
    put, describe = lines
    assert put.startswith(f"FAIL  mcp-tools role s3:PutObject (inputs): {tools} may not s3:PutObject on "
                          f"arn:aws:s3:::{setup.bucket}/inputs/doctor-check (implicitDeny)")
    # The statement grants the prefix, not the object the simulation asked about.
    assert printed_statement(put) == {"Effect": "Allow", "Action": "s3:PutObject",
                                      "Resource": f"arn:aws:s3:::{setup.bucket}/inputs/*"}
    endpoint = f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{setup.endpoint}"
    assert f"may not sagemaker:DescribeEndpoint on {endpoint} (explicitDeny)" in describe
    assert describe.endswith(" and remove the statement that denies it")
    assert "mcp-tools role" not in lines_by_check(result.stdout)


def test_a_customer_key_is_simulated_for_the_endpoint_and_the_readers(iam):
    setup = Setup().build()
    key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    iam.deny(ROLE, "kms:GenerateDataKey", key)
    iam.deny(FUNCTION_ROLES["notification-handler"], "kms:Decrypt", key)
    result = run_script("doctor.py", setup.doctor_args() + ["--bucket-kms-key-arn", key])
    checks = {line.split(": ", 1)[0] for line in failed_lines(result.stdout)}
    assert checks == {"FAIL  endpoint role kms:GenerateDataKey (key)", "FAIL  notification-handler role kms:Decrypt (key)"}
    simulated = {(r["role"], a) for r in iam.requests for a in r["actions"] if r["resources"] == [key]}
    assert (FUNCTION_ROLES["mcp-tools"], "kms:GenerateDataKey") in simulated
    assert (FUNCTION_ROLES["pipeline-router"], "kms:Decrypt") not in simulated


def test_the_checks_cover_every_call_the_code_makes():
    """infra/iam-actions.json's `code`, for each function the doctor checks, on a full stack."""
    actions = json.loads((ROOT / "infra" / "iam-actions.json").read_text())["functions"]
    t = doctor.Targets(endpoint="e", success_topic="s", error_topic="e", bucket="b", pipeline="p", region="us-east-1",
                       account="123456789012", results_table="r", pipeline_results_table="pr", events_table="ev",
                       pipeline_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q", event_bus="default",
                       bucket_key="arn:aws:kms:us-east-1:123456789012:key/k", subscriptions_table="subs",
                       delivery_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/d.fifo")
    calls = function_calls(t, [t.bucket_key])
    for function, spec in actions.items():
        if spec["binary"] == "gateway-target":
            continue  # mcp-tools' role
        checked = {action for _, action, _, _ in calls[spec["binary"]]}
        assert set(spec["code"]) <= checked, (function, set(spec["code"]) - checked)
        assert checked <= set(spec["code"]) | set(spec["keys"]), (function, checked - set(spec["code"]))
    assert queue_arn_of_url(t.pipeline_queue_url, "aws") == "arn:aws:sqs:us-east-1:123456789012:q"
    assert ("events table", "dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:123456789012:table/ev") in {
        c[:3] for c in calls["notification-handler"]}
    delivery = "arn:aws:sqs:us-east-1:123456789012:d.fifo"
    events = "arn:aws:dynamodb:us-east-1:123456789012:table/ev"
    # The recorders only log (a conditional put) and find the subscriptions: the stream takes the event on.
    for function in ("notification-handler", "pipeline-router"):
        found = {c[:3] for c in calls[function]}
        assert not {c for c in found if c[0] == "delivery queue"}, function
        assert {c for c in found if c[0] == "events table"} == {("events table", "dynamodb:PutItem", events)}, function
    assert {c[:3] for c in calls["event-delivery"]} == {
        ("subscriptions table", "dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/subs"),
        ("subscriptions table", "dynamodb:UpdateItem", "arn:aws:dynamodb:us-east-1:123456789012:table/subs"),
        ("delivery queue", "sqs:SendMessage", delivery), ("delivery queue", "sqs:ChangeMessageVisibility", delivery)}
    # An inference-only stack: no training calls to check.
    t.pipeline, t.pipeline_queue_url = None, None
    assert not {a for _, a, _, _ in function_calls(t, [])["mcp-tools"]} & {"sagemaker:StartPipelineExecution"}
    assert function_calls(t, [])["pipeline-router"] == [
        c for c in function_calls(t, [])["pipeline-router"]
        if c[0] in ("pipeline results table", "events table", "subscriptions table", "delivery queue")]


def test_with_a_stack_name_the_roles_come_from_the_stack():
    import boto3
    session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    cloudformation = session.client("cloudformation")
    resources = {"NotificationHandlerRole": "s-NotificationHandlerRole-A", "McpToolsRole": "s-McpToolsRole-B",
                 "EventDeliveryRole": "s-EventDeliveryRole-D", "ResultsTable": "s-ResultsTable-C"}
    with Stubber(cloudformation) as stub:
        stub.add_response("describe_stacks", {"Stacks": [{
            "StackName": "s", "StackId": "arn:aws:cloudformation:us-east-1:210987654321:stack/s/uuid",
            "CreationTime": "2026-01-01T00:00:00Z", "StackStatus": "CREATE_COMPLETE",
            "Parameters": [{"ParameterKey": "PipelineName", "ParameterValue": ""},
                           {"ParameterKey": "IoBucketKmsKeyArn", "ParameterValue": ""}]}]}, {"StackName": "s"})
        stub.add_response("list_stack_resources", {"StackResourceSummaries": [
            {"LogicalResourceId": k, "ResourceType": "AWS::IAM::Role", "PhysicalResourceId": p,
             "ResourceStatus": "CREATE_COMPLETE", "LastUpdatedTimestamp": "2026-01-01T00:00:00Z"}
            for k, p in resources.items()]}, {"StackName": "s"})

        class OneClient:
            def client(self, name):
                return cloudformation
        targets = doctor.targets_from_stack(OneClient(), "s")
    assert targets.function_roles == {
        "notification-handler": "arn:aws:iam::210987654321:role/s-NotificationHandlerRole-A",
        "mcp-tools": "arn:aws:iam::210987654321:role/s-McpToolsRole-B",
        "event-delivery": "arn:aws:iam::210987654321:role/s-EventDeliveryRole-D"}
    assert targets.inference_only and targets.account == "210987654321" and targets.results_table == "s-ResultsTable-C"
    assert targets.bucket_key is None
    assert doctor.check_pipeline(None, targets).line() == (
        "ok    pipeline: none: an inference-only stack (PipelineName empty), no training tools")
    assert targets.callback_queue_url is None
    assert [r.line() for r in doctor_callback.check_callback(None, None, None, None, targets)] == [
        "ok    callback queue: none: an inference-only stack runs no pipeline that could ask"]


# ---------------------------------------------------------------- the tool catalog's endpoints and pipelines


def test_each_catalog_endpoint_gets_the_endpoint_checks_naming_it():
    setup = Setup().build()
    churn = catalog_endpoint(setup)
    other = setup.aws["sns"].create_topic(Name=f"doctor-{setup.id}-someone-elses")["TopicArn"]
    misrouted = catalog_endpoint(setup, async_config(setup, ErrorTopic=other), name="vision")
    result = run_script("doctor.py", setup.doctor_args() + ["--catalog-endpoint-name", churn,
                                                            "--catalog-endpoint-name", misrouted])
    lines = lines_by_check(result.stdout)
    for check in ("endpoint", "topics", "output path", "failure path", "response in message"):
        assert lines[f"{check} ({churn})"][0] == "ok", result.stdout
        assert f"{check} ({misrouted})" in lines, result.stdout
    # Its execution role comes from its Model (the one given is the stack's endpoint's).
    assert lines[f"endpoint role ({churn})"][0] in ("ok", "skip"), result.stdout
    failed = {c for c, (s, _) in lines.items() if s == "FAIL"}
    assert failed == {f"topics ({misrouted})"}, result.stdout
    assert f"ErrorTopic is {other}" in lines[f"topics ({misrouted})"][1]
    assert result.returncode == 1


def test_a_catalog_endpoint_that_does_not_exist_fails_naming_it():
    setup = Setup().build()
    result = run_script("doctor.py", setup.doctor_args() + ["--catalog-endpoint-name", f"doctor-{setup.id}-gone"])
    lines = lines_by_check(result.stdout)
    assert {c for c, (s, _) in lines.items() if s == "FAIL"} == {f"endpoint (doctor-{setup.id}-gone)"}, result.stdout


def test_each_catalog_pipeline_must_exist():
    setup = Setup().build()
    gone = f"doctor-{setup.id}-retired-pipeline"
    result = run_script("doctor.py", setup.doctor_args() + ["--catalog-pipeline-name", setup.pipeline,
                                                            "--catalog-pipeline-name", gone])
    lines = lines_by_check(result.stdout)
    assert {c for c, (s, _) in lines.items() if s == "FAIL"} == {f"pipeline ({gone})"}, result.stdout
    assert "run make catalog again" in lines[f"pipeline ({gone})"][1]


def test_the_function_roles_are_simulated_on_the_catalogs_endpoints_and_pipelines():
    t = doctor.Targets(endpoint="docs", pipeline="train", catalog_endpoints=["docs", "churn"],
                       catalog_pipelines=["train", "retrain"], region="us-east-1", account="123456789012")
    calls = {(action, resource) for _, action, _, resource in function_calls(t, [])["mcp-tools"]}
    arn = "arn:aws:sagemaker:us-east-1:123456789012"
    for endpoint in ("docs", "churn"):
        assert ("sagemaker:InvokeEndpointAsync", f"{arn}:endpoint/{endpoint}") in calls
    assert ("sagemaker:StartPipelineExecution", f"{arn}:pipeline/retrain") in calls
    assert ("sagemaker:DescribePipelineExecution", f"{arn}:pipeline/retrain/execution/doctor-check") in calls
    assert len([c for c in calls if c[1] == f"{arn}:endpoint/docs"]) == 2


# ---------------------------------------------------------------- the callback queue


def queue_arn(setup: Setup, url: str) -> str:
    return setup.aws["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def test_a_pipeline_role_that_may_not_send_to_the_callback_queue_fails_naming_the_statement(iam):
    setup = Setup().build()
    queue = queue_arn(setup, setup.callback_queue_url)
    iam.deny(PIPELINE_ROLE, "sqs:SendMessage", queue)
    result, lines = run_doctor(setup)
    assert result.returncode == 1, result.stdout
    (line,) = failed_lines(result.stdout)
    assert line.startswith(f"FAIL  pipeline {setup.pipeline} role sqs:SendMessage (callback queue): {PIPELINE_ROLE} "
                           f"may not sqs:SendMessage on {queue} (implicitDeny). Fix: add to the role's policy: ")
    assert printed_statement(line) == {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue}
    assert lines["callback queue"][0] == "ok", result.stdout


def test_a_pipeline_role_that_may_send_passes_and_its_role_comes_from_describe_pipeline(iam):
    setup = Setup().build()
    policy = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": PIPELINE_ROLE}, "Action": "sqs:SendMessage",
        "Resource": queue_arn(setup, setup.callback_queue_url)}]})
    setup.aws["sqs"].set_queue_attributes(QueueUrl=setup.callback_queue_url, Attributes={"Policy": policy})
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout
    assert lines[f"pipeline {setup.pipeline} role"][1].startswith(
        f"ok    pipeline {setup.pipeline} role: {PIPELINE_ROLE} may send its CallbackSteps' questions")
    (asked,) = [r for r in iam.requests if r["role"] == PIPELINE_ROLE]
    assert asked["actions"] == ["sqs:SendMessage"] and asked["resources"] == [queue_arn(setup, setup.callback_queue_url)]
    # The queue policy, which could deny the role, is part of the simulation.
    assert asked["resource_policy"] == policy


def test_a_customer_key_on_the_callback_queue_is_simulated_for_the_pipeline_role(iam):
    import boto3
    setup = Setup().build()
    kms = boto3.client("kms", region_name="us-east-1")
    created = kms.create_key(Description=f"doctor-{setup.id}-callbacks")["KeyMetadata"]
    key = created["Arn"]
    setup.aws["sqs"].set_queue_attributes(QueueUrl=setup.callback_queue_url, Attributes={"KmsMasterKeyId": key})
    iam.deny(PIPELINE_ROLE, "kms:GenerateDataKey", key)
    result, lines = run_doctor(setup)
    assert {line.split(": ", 1)[0] for line in failed_lines(result.stdout)} == {
        f"FAIL  pipeline {setup.pipeline} role kms:GenerateDataKey (callback queue's key)"}, result.stdout
    assert f"customer managed key {key}" in lines["callback queue"][1]
    simulated = {a for r in iam.requests if r["role"] == PIPELINE_ROLE and r["resources"] == [key] for a in r["actions"]}
    assert simulated == {"kms:GenerateDataKey", "kms:Decrypt"}

    # A disabled key takes every question with it: the queue's own line fails.
    kms.disable_key(KeyId=created["KeyId"])
    iam.reset()
    line = only_failure(setup, "callback queue")
    assert f"its key {key} is Disabled" in line and f"aws kms enable-key --key-id {key}" in line


def test_a_pipeline_without_a_callback_step_is_warned_not_failed(iam):
    setup = Setup().build(skip=("pipeline",))
    setup.create_pipeline(asks=False)
    iam.deny(PIPELINE_ROLE, "sqs:SendMessage", "*")
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout
    check = f"pipeline {setup.pipeline} role sqs:SendMessage (callback queue)"
    assert lines[check][0] == "warn" and "has no CallbackStep yet" in lines[check][1], result.stdout


def test_a_callback_step_that_sends_to_another_queue_is_warned(iam):
    setup = Setup().build(skip=("pipeline",))
    elsewhere = "https://sqs.us-east-1.amazonaws.com/123456789012/someone-elses-queue"
    setup.create_pipeline(callback_queue_url=elsewhere)
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout
    status, line = lines[f"pipeline {setup.pipeline} CallbackStep ApproveModel"]
    assert status == "warn" and f"it sends to {elsewhere}" in line and setup.callback_queue_url in line


def test_questions_in_the_callback_dlq_fail_with_how_to_move_them_back():
    setup = Setup().build()
    setup.aws["sqs"].send_message(QueueUrl=setup.callback_dlq_url, MessageBody=json.dumps(
        {"token": "Ab3dEf7hIj", "pipelineExecutionArn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/"
         "execution/e1", "status": "Executing", "arguments": {"prompt": "Deploy?"}}))
    line = only_failure(setup, f"DLQ {setup.callback_dlq_url.rsplit('/', 1)[-1]}")
    assert "1 question(s) pipeline-router did not record" in line
    assert f"aws sqs start-message-move-task --source-arn {queue_arn(setup, setup.callback_dlq_url)}" in line
    assert "make redrive" not in line


def test_a_callback_queue_that_cannot_be_read_fails():
    setup = Setup().build()
    setup.aws["sqs"].delete_queue(QueueUrl=setup.callback_queue_url)
    line = only_failure(setup, "callback queue")
    assert "cannot be read" in line and "PipelineCallbackQueueUrl" in line
