"""A stack's wiring built on the local stack (moto for SNS, SQS, EventBridge, CloudWatch, DynamoDB
and Lambda's event source mappings; the SageMaker stand-in for the endpoint and the pipeline),
correct or with one thing wrong, for the doctor's and wire-endpoint's tests. Every setup has its own names, so tests never share state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
ACCOUNT = "123456789012"
SEED_PARAMETERS = ["InputDataUri", "MaxEpochs", "AccuracyThreshold", "TrainingInstanceType"]
ROLE = f"arn:aws:iam::{ACCOUNT}:role/endpoint-execution"
# The pipeline's execution role: SageMaker sends its CallbackSteps' messages as this role.
PIPELINE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/pipeline-execution"
# The roles the doctor's permission checks simulate (tests/infra/fake_iam.py plays the simulator).
FUNCTION_ROLES = {"notification-handler": f"arn:aws:iam::{ACCOUNT}:role/doctor-NotificationHandlerRole",
                  "pipeline-router": f"arn:aws:iam::{ACCOUNT}:role/doctor-PipelineRouterRole",
                  "mcp-tools": f"arn:aws:iam::{ACCOUNT}:role/doctor-McpToolsRole",
                  "event-delivery": f"arn:aws:iam::{ACCOUNT}:role/doctor-EventDeliveryRole"}


def local_stack() -> dict:
    """The local stack's endpoints; the tests need both moto and the SageMaker stand-in."""
    missing = [v for v in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SAGEMAKER", "IO_BUCKET") if not os.environ.get(v)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not set: run under scripts/local_stack.py --sagemaker "
                    "<target dir>/debug/sagemaker-standin (make test does)")
    return dict(os.environ)


def clients() -> dict:
    env = local_stack()
    session = boto3.session.Session(region_name=env.get("AWS_REGION", "us-east-1"))
    return {name: session.client(name) for name in ("sns", "sqs", "events", "cloudwatch", "sagemaker", "lambda",
                                                    "dynamodb")}


def standin(method: str, path: str, body: dict | None = None) -> None:
    """The stand-in's control API (to slow endpoint changes down)."""
    import urllib.request
    request = urllib.request.Request(os.environ["AWS_ENDPOINT_URL_SAGEMAKER"] + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
    urllib.request.urlopen(request, timeout=10).read()


def async_config(setup: "Setup", **changes) -> dict:
    """The AsyncInferenceConfig the stack wants, with `changes` (None removes a key)."""
    output = {
        "S3OutputPath": f"s3://{setup.bucket}/outputs/",
        "S3FailurePath": f"s3://{setup.bucket}/failures/",
        "NotificationConfig": {"SuccessTopic": setup.success_topic, "ErrorTopic": setup.error_topic,
                               "IncludeInferenceResponseIn": ["SUCCESS_NOTIFICATION_TOPIC"]},
    }
    for key, value in changes.items():
        target = output["NotificationConfig"] if key in ("SuccessTopic", "ErrorTopic",
                                                          "IncludeInferenceResponseIn") else output
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    return {"ClientConfig": {"MaxConcurrentInvocationsPerInstance": 4}, "OutputConfig": output}


class Setup:
    """One stack's worth of wiring: topics subscribed to the handler, the endpoint, the pipeline
    (whose CallbackStep asks through the callback queue), the rule, a DLQ, an alarm, and MCP
    Events' webhooks: the events table's stream (`events_stream`, its view type; None: no stream)
    and the delivery queue (FIFO, with its DLQ) feeding event-delivery, the stream's failures to
    their queue."""

    def __init__(self, events_stream: str | None = "NEW_IMAGE"):
        self.aws = clients()
        self.id = uuid.uuid4().hex[:8]
        self.bucket = os.environ["IO_BUCKET"]
        self.handler = f"doctor-{self.id}-notification-handler"
        self.handler_arn = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{self.handler}"
        sns = self.aws["sns"]
        self.success_topic = sns.create_topic(Name=f"doctor-{self.id}-success")["TopicArn"]
        self.error_topic = sns.create_topic(Name=f"doctor-{self.id}-error")["TopicArn"]
        self.endpoint = f"doctor-{self.id}-async"
        self.pipeline = f"doctor-{self.id}-pipeline"
        self.rule = f"doctor-{self.id}-pipeline-status"
        self.dlq_url = self.aws["sqs"].create_queue(QueueName=f"doctor-{self.id}-dlq")["QueueUrl"]
        self.callback_dlq_url = self.aws["sqs"].create_queue(QueueName=f"doctor-{self.id}-callback-dlq")["QueueUrl"]
        self.callback_queue_url = self.create_callback_queue()
        self.alarm = f"doctor-{self.id}-outcomes-not-arriving"
        self.pipeline_parameters = None
        self.delivery_dlq_url = self.aws["sqs"].create_queue(
            QueueName=f"doctor-{self.id}-delivery-dlq.fifo",
            Attributes={"FifoQueue": "true", "SqsManagedSseEnabled": "true"})["QueueUrl"]
        self.delivery_queue_url = self.create_delivery_queue()
        self.event_delivery = f"doctor-{self.id}-event-delivery"
        self.event_delivery_created = False
        self.events_table = f"doctor-{self.id}-events"
        self.stream_arn = self.create_events_table(events_stream)
        self.stream_failure_queue_url = self.aws["sqs"].create_queue(
            QueueName=f"doctor-{self.id}-stream-failures", Attributes={"SqsManagedSseEnabled": "true"})["QueueUrl"]

    # -- each part, correct unless told otherwise

    def subscribe(self, topic: str, endpoint: str | None = None) -> None:
        self.aws["sns"].subscribe(TopicArn=topic, Protocol="lambda", Endpoint=endpoint or self.handler_arn)

    def create_endpoint(self, config: dict | None = None, wait: bool = True) -> None:
        sm = self.aws["sagemaker"]
        name = f"{self.endpoint}-config-1"
        sm.create_endpoint_config(
            EndpointConfigName=name,
            ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": "doc-classifier",
                                 "InstanceType": "ml.m5.large", "InitialInstanceCount": 1}],
            AsyncInferenceConfig=config if config is not None else async_config(self),
        )
        sm.create_endpoint(EndpointName=self.endpoint, EndpointConfigName=name)
        if wait:
            self.wait_in_service()

    def wait_in_service(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while self.aws["sagemaker"].describe_endpoint(EndpointName=self.endpoint)["EndpointStatus"] != "InService":
            assert time.monotonic() < deadline, f"endpoint {self.endpoint} never became InService"
            time.sleep(0.05)

    def create_callback_queue(self) -> str:
        """The callback queue as the stack makes it (SSE-SQS, its DLQ after 5 receives); its URL."""
        sqs = self.aws["sqs"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=self.callback_dlq_url,
                                           AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5})
        return sqs.create_queue(QueueName=f"doctor-{self.id}-callbacks", Attributes={
            "SqsManagedSseEnabled": "true", "RedrivePolicy": redrive})["QueueUrl"]

    def create_delivery_queue(self) -> str:
        """The delivery queue as the stack makes it (FIFO, SSE-SQS, its DLQ after 20 receives)."""
        sqs = self.aws["sqs"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=self.delivery_dlq_url,
                                           AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return sqs.create_queue(QueueName=f"doctor-{self.id}-delivery.fifo", Attributes={
            "FifoQueue": "true", "ContentBasedDeduplication": "false", "SqsManagedSseEnabled": "true",
            "VisibilityTimeout": "360",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 20})})["QueueUrl"]

    def create_events_table(self, stream: str | None) -> str | None:
        """The events table as the stack makes it, streaming `stream` (None: no stream); the
        stream's ARN. Nothing is ever written to it: moto would try to run event-delivery."""
        table = self.aws["dynamodb"].create_table(
            TableName=self.events_table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in ("owner", "position")],
            KeySchema=[{"AttributeName": "owner", "KeyType": "HASH"},
                       {"AttributeName": "position", "KeyType": "RANGE"}],
            **({"StreamSpecification": {"StreamEnabled": True, "StreamViewType": stream}} if stream else {}))
        return table["TableDescription"].get("LatestStreamArn")

    def create_event_delivery_function(self) -> None:
        """event-delivery, a function moto keeps and never runs (once, whichever mapping needs it)."""
        import io
        import zipfile
        if self.event_delivery_created:
            return
        iam = boto3.client("iam", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                           region_name=os.environ.get("AWS_REGION", "us-east-1"))
        role = iam.create_role(RoleName=f"doctor-{self.id}-EventDeliveryRole", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                                                    "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as z:
            z.writestr("bootstrap", "#!/bin/sh\n")
        self.aws["lambda"].create_function(FunctionName=self.event_delivery, Runtime="provided.al2023",
                                           Handler="bootstrap", Role=role, Code={"ZipFile": code.getvalue()},
                                           Architectures=["arm64"])
        self.event_delivery_created = True

    def create_event_delivery(self, enabled: bool = True) -> str:
        """event-delivery fed by the delivery queue; the mapping's UUID. Nothing is ever sent to
        that queue: moto would try to run the function."""
        self.create_event_delivery_function()
        queue_arn = self.aws["sqs"].get_queue_attributes(
            QueueUrl=self.delivery_queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return self.aws["lambda"].create_event_source_mapping(
            EventSourceArn=queue_arn, FunctionName=self.event_delivery, BatchSize=10, Enabled=enabled,
            FunctionResponseTypes=["ReportBatchItemFailures"])["UUID"]

    def create_stream_mapping(self, enabled: bool = True, with_filter: bool = True,
                              with_destination: bool = True) -> str:
        """event-delivery fed by the events table's stream, as the template's
        EventDeliveryStreamEventSource (its filter, its on-failure destination); the mapping's UUID."""
        self.create_event_delivery_function()
        failures = self.aws["sqs"].get_queue_attributes(
            QueueUrl=self.stream_failure_queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        pattern = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"webhooks": {"BOOL": [True]}}}}
        return self.aws["lambda"].create_event_source_mapping(
            EventSourceArn=self.stream_arn, FunctionName=self.event_delivery, Enabled=enabled,
            StartingPosition="LATEST", BatchSize=10, MaximumBatchingWindowInSeconds=0,
            FunctionResponseTypes=["ReportBatchItemFailures"], BisectBatchOnFunctionError=True,
            MaximumRetryAttempts=10, MaximumRecordAgeInSeconds=21600,
            **({"FilterCriteria": {"Filters": [{"Pattern": json.dumps(pattern)}]}} if with_filter else {}),
            **({"DestinationConfig": {"OnFailure": {"Destination": failures}}} if with_destination else {}))["UUID"]

    def create_pipeline(self, parameters=SEED_PARAMETERS, asks: bool = True, callback_queue_url: str | None = None) -> None:
        """The pipeline; `asks`: a CallbackStep after training sends to the callback queue (or to
        `callback_queue_url`)."""
        steps = [{"Name": "TrainModel", "Type": "Training", "Arguments": {}}]
        if asks:
            steps.append({"Name": "ApproveModel", "Type": "Callback", "DependsOn": ["TrainModel"],
                          "SqsQueueUrl": callback_queue_url or self.callback_queue_url,
                          "Arguments": {"prompt": "Register the model?"}, "OutputParameters": []})
        definition = {"Version": "2020-12-01", "Metadata": {},
                      "Parameters": [{"Name": p, "Type": "String"} for p in parameters], "Steps": steps}
        self.aws["sagemaker"].create_pipeline(PipelineName=self.pipeline, RoleArn=PIPELINE_ROLE,
                                              ClientRequestToken=uuid.uuid4().hex,
                                              PipelineDefinition=json.dumps(definition))

    def create_rule(self, state: str = "ENABLED") -> None:
        pattern = {"source": ["aws.sagemaker"],
                   "detail-type": ["SageMaker Model Building Pipeline Execution Status Change"]}
        self.aws["events"].put_rule(Name=self.rule, EventPattern=json.dumps(pattern), State=state)

    def create_alarm(self, with_action: bool = True) -> None:
        self.aws["cloudwatch"].put_metric_alarm(
            AlarmName=self.alarm, Namespace="McpAsyncJobs/doctor", MetricName="JobsProbablyLost",
            Statistic="Sum", Period=900, EvaluationPeriods=1, Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
            AlarmActions=[self.success_topic] if with_action else [])

    def build(self, skip: tuple = ()) -> "Setup":
        """Everything correct, except the parts named in `skip` (a test builds those itself)."""
        if "subscriptions" not in skip:
            self.subscribe(self.success_topic)
            self.subscribe(self.error_topic)
        if "endpoint" not in skip:
            self.create_endpoint()
        if "pipeline" not in skip:
            self.create_pipeline()
        if "rule" not in skip:
            self.create_rule()
        if "alarm" not in skip:
            self.create_alarm()
        if "event delivery" not in skip:
            self.create_event_delivery()
        if "event stream" not in skip:
            self.create_stream_mapping()
        return self

    def doctor_args(self) -> list:
        args = ["--endpoint-name", self.endpoint, "--success-topic-arn", self.success_topic,
                "--error-topic-arn", self.error_topic, "--bucket", self.bucket,
                "--pipeline-name", self.pipeline, "--rule-name", self.rule,
                "--notification-handler", self.handler, "--dlq-url", self.dlq_url, "--alarm-name", self.alarm,
                "--model-execution-role-arn", ROLE, "--results-table", f"doctor-{self.id}-results",
                "--pipeline-results-table", f"doctor-{self.id}-runs", "--pipeline-queue-url", self.dlq_url,
                "--callback-queue-url", self.callback_queue_url,
                "--subscriptions-table", f"doctor-{self.id}-subscriptions", "--delivery-queue-url",
                self.delivery_queue_url, "--event-delivery", self.event_delivery,
                "--events-table", self.events_table, "--stream-failure-queue-url", self.stream_failure_queue_url]
        args += [a for fn, role in FUNCTION_ROLES.items() for a in ("--function-role", f"{fn}={role}")]
        if self.pipeline_parameters is not None:
            args += ["--pipeline-parameters", self.pipeline_parameters]
        return args

    def wiring_args(self) -> list:
        return ["--endpoint-name", self.endpoint, "--success-topic-arn", self.success_topic,
                "--error-topic-arn", self.error_topic, "--bucket", self.bucket]


def run_script(script: str, args: list) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / script), *args], capture_output=True, text=True,
                          timeout=120, env=local_stack())


def lines_by_check(stdout: str) -> dict:
    """`{check: (status, line)}` from the doctor's output."""
    found = {}
    for line in stdout.splitlines():
        status, _, rest = line.partition("  ")
        check, sep, _ = rest.strip().partition(": ")
        if sep and status.strip() in ("ok", "warn", "FAIL", "skip"):
            found[check] = (status.strip(), line)
    return found


def catalog_endpoint(setup: Setup, config: dict | None = None, name: str = "churn") -> str:
    """A second endpoint, as a tool catalog names one beside the stack's (correctly wired unless
    `config` says otherwise); its name."""
    primary, setup.endpoint = setup.endpoint, f"doctor-{setup.id}-{name}-async"
    try:
        setup.create_endpoint(config)
        return setup.endpoint
    finally:
        setup.endpoint = primary
