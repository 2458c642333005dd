#!/usr/bin/env python3
"""Runs a command against a local AWS stack, then tears the stack down.

    .venv/bin/python scripts/local_stack.py [--env-file FILE] [--sagemaker BIN [--lambda]] -- COMMAND...

Starts moto on 127.0.0.1 on a free port, creates what the functions expect (the results and
events and subscriptions tables with TTL on `ttl`, the events table with its stream (new
images), the MCP Events retry queue (FIFO) and its DLQ, the IO bucket, the async endpoint's
success and error topics, and an SQS queue subscribed to both as the optional buffer), then runs
COMMAND with the environment that points every AWS SDK at it. The stack lives in this process, so
it stops when the command ends, fails, or this process is interrupted or killed.

With --lambda, the local `event-delivery` function is fed as its two event source mappings would
feed it (scripts/event_source_mappings.py): the events table's stream and the retry queue.
With --sagemaker, also starts the SageMaker stand-in (dev/sagemaker-standin) and points
AWS_ENDPOINT_URL_SAGEMAKER at it. With --lambda, a port is reserved for `cargo lambda watch`
(LAMBDA_PORT, LAMBDA_INVOKE_URL) and the stand-in delivers its events there.
"""

import argparse
import json
import logging
import os
import signal
import subprocess
import sys

import boto3
from event_source_mappings import REGION, QueueToFunction, StreamToFunction
from lambda_watch import free_port
from moto.server import ThreadedMotoServer

RESULTS_TABLE = "mcp-async-results"
PIPELINE_RESULTS_TABLE = "mcp-pipeline-results"
EVENTS_TABLE = "mcp-events"
SUBSCRIPTIONS_TABLE = "mcp-subscriptions"
DELIVERY_QUEUE = "mcp-event-delivery.fifo"
DELIVERY_DLQ = "mcp-event-delivery-dlq.fifo"
IO_BUCKET = "mcp-sagemaker-async-io"
SUCCESS_TOPIC = "mcp-inference-success"
ERROR_TOPIC = "mcp-inference-error"
NOTIFICATION_QUEUE = "mcp-inference-notifications"
PIPELINE_RESULTS_QUEUE = "mcp-pipeline-results"


def create_resources(endpoint: str) -> dict:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    ddb = session.client("dynamodb", endpoint_url=endpoint)
    # Each table with its keys (partition, then sort), as the template declares it; TTL on `ttl`.
    for table, keys in ((RESULTS_TABLE, ["inference_id"]),
                        (PIPELINE_RESULTS_TABLE, ["session_id", "execution_arn"]),
                        (EVENTS_TABLE, ["owner", "position"]),
                        (SUBSCRIPTIONS_TABLE, ["owner", "id"])):
        ddb.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key in keys],
            KeySchema=[{"AttributeName": key, "KeyType": kind} for key, kind in zip(keys, ("HASH", "RANGE"))],
            BillingMode="PAY_PER_REQUEST",
            # The events table's new items reach event-delivery through its stream.
            **({"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}}
               if table == EVENTS_TABLE else {}),
        )
        ddb.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
        )

    session.client("s3", endpoint_url=endpoint).create_bucket(Bucket=IO_BUCKET)

    sns = session.client("sns", endpoint_url=endpoint)
    success_arn = sns.create_topic(Name=SUCCESS_TOPIC)["TopicArn"]
    error_arn = sns.create_topic(Name=ERROR_TOPIC)["TopicArn"]

    sqs = session.client("sqs", endpoint_url=endpoint)
    queue_url = sqs.create_queue(QueueName=NOTIFICATION_QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    for topic in (success_arn, error_arn):
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    pipeline_queue_url = sqs.create_queue(QueueName=PIPELINE_RESULTS_QUEUE)["QueueUrl"]
    # MCP Events retries: FIFO (one ordered group per subscription), a DLQ as the template's.
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "false"}
    dlq_url = sqs.create_queue(QueueName=DELIVERY_DLQ, Attributes=fifo)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 20})
    delivery_url = sqs.create_queue(
        QueueName=DELIVERY_QUEUE,
        Attributes={**fifo, "VisibilityTimeout": "60", "RedrivePolicy": redrive},
    )["QueueUrl"]

    return {
        "RESULTS_TABLE": RESULTS_TABLE,
        "PIPELINE_RESULTS_TABLE": PIPELINE_RESULTS_TABLE,
        "EVENTS_TABLE": EVENTS_TABLE,
        "SUBSCRIPTIONS_TABLE": SUBSCRIPTIONS_TABLE,
        "DELIVERY_QUEUE_URL": delivery_url,
        "DELIVERY_DLQ_URL": dlq_url,
        "IO_BUCKET": IO_BUCKET,
        "SUCCESS_TOPIC_ARN": success_arn,
        "ERROR_TOPIC_ARN": error_arn,
        "NOTIFICATION_QUEUE_URL": queue_url,
        "PIPELINE_RESULTS_QUEUE_URL": pipeline_queue_url,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-file", help="also write the stack's environment to this file")
    parser.add_argument("--sagemaker", metavar="BIN", help="start this SageMaker stand-in binary too")
    parser.add_argument("--lambda", dest="with_lambda", action="store_true",
                        help="reserve a port for cargo lambda watch and deliver stand-in events to it")
    parser.add_argument("--step-millis", default="200", help="how long each stand-in pipeline step takes")
    parser.add_argument("--standin-runtime", action="store_true",
                        help="serve InvokeEndpointAsync from the stand-in (it runs a model and notifies) "
                             "instead of moto (which accepts calls and never notifies)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")

    # A SIGTERM (make interrupted, CI timeout) unwinds through `finally` like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    # One log line per request would bury the command's own output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    children: list[subprocess.Popen] = []
    stoppers: list = []
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        env = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_EC2_METADATA_DISABLED": "true",
            "MOTO_ENDPOINT": endpoint,
            **create_resources(endpoint),
        }
        if args.with_lambda:
            env["LAMBDA_PORT"] = str(free_port())
            env["LAMBDA_INVOKE_URL"] = f"http://127.0.0.1:{env['LAMBDA_PORT']}"
        if args.sagemaker:
            standin_cmd = [args.sagemaker, "--port", "0", "--region", REGION, "--step-millis", args.step_millis]
            if args.with_lambda:
                standin_cmd += ["--lambda-invoke-url", env["LAMBDA_INVOKE_URL"]]
            standin = subprocess.Popen(standin_cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, **env})
            children.append(standin)
            first = standin.stdout.readline().strip()
            if not first.startswith("listening on "):
                sys.exit(f"the SageMaker stand-in did not start (it printed {first!r})")
            env["AWS_ENDPOINT_URL_SAGEMAKER"] = first.removeprefix("listening on ")
            if args.standin_runtime:
                env["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] = env["AWS_ENDPOINT_URL_SAGEMAKER"]
        if args.with_lambda:
            invoke = f"{env['LAMBDA_INVOKE_URL']}/2015-03-31/functions/event-delivery/invocations"
            # Both mappings are reading before the command starts: the stream's from LATEST.
            for mapping in (StreamToFunction(endpoint, EVENTS_TABLE, invoke),
                            QueueToFunction(endpoint, env["DELIVERY_QUEUE_URL"], invoke)):
                mapping.start()
                stoppers.append(mapping.stopping.set)
        if args.env_file:
            os.makedirs(os.path.dirname(os.path.abspath(args.env_file)), exist_ok=True)
            with open(args.env_file, "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in env.items())
        print(f"local AWS stack (moto) at {endpoint}", file=sys.stderr, flush=True)
        child = subprocess.Popen(command, env={**os.environ, **env})
        try:
            return child.wait()
        except BaseException:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
            raise
    finally:
        for stop_it in stoppers:
            stop_it()
        for child in children:
            child.terminate()
            child.wait(timeout=10)
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
