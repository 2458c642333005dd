"""The doctor end to end on the local stack: every check ok on a correct setup, and each check
FAILing (and only that one) on a setup with exactly that one thing wrong."""

import json
import sys

import pytest
from botocore.stub import Stubber

from wiring import SCRIPTS, Setup, async_config, lines_by_check, run_script, standin

sys.path.insert(0, str(SCRIPTS))
import doctor  # noqa: E402

CHECKS = {"endpoint", "topics", "output path", "failure path", "response in message", "success subscription",
          "error subscription", "pipeline", "rule", "alarms"}


def run_doctor(setup: Setup):
    result = run_script("doctor.py", setup.doctor_args())
    return result, lines_by_check(result.stdout)


def only_failure(setup: Setup, check: str) -> str:
    """Runs the doctor, asserts `check` is the one FAIL (exit 1) and returns its line."""
    result, lines = run_doctor(setup)
    failed = {c for c, (status, _) in lines.items() if status == "FAIL"}
    assert failed == {check}, result.stdout + result.stderr
    assert result.returncode == 1, result.stdout
    assert "Fix: " in lines[check][1]
    return lines[check][1]


def test_a_correct_setup_passes_every_check():
    setup = Setup().build()
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout + result.stderr
    dlq = f"DLQ {setup.dlq_url.rsplit('/', 1)[-1]}"
    assert set(lines) == CHECKS | {dlq}, result.stdout
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
    assert targets.dlq_urls == ["https://sqs/1/s-AsyncFailureDLQ", "https://sqs/1/s-PipelineResultsDLQ"]
    assert targets.alarms == ["s-JobFailureRateAlarm-2", "s-OutcomesNotArrivingAlarm-1"]


@pytest.mark.parametrize("text, error", [("input_data_uri", "is not tool_arg="), ("=X", "is not tool_arg=")])
def test_malformed_pipeline_parameters_are_named(text, error):
    with pytest.raises(ValueError, match=error):
        doctor.parse_pipeline_parameters(text)
