"""The local AWS stack the bench runs against: its names (from scripts/local_stack.py), a boto3
client for the emulator, and the prewarm that keeps moto's first calls out of the figures."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import boto3  # noqa: E402
from emulator import Emulator  # noqa: E402
from lambda_events import OUTPUT_BODY  # noqa: E402
from local_stack import IO_BUCKET, REGION, RESULTS_TABLE, create_resources  # noqa: E402

# Where every notification says SageMaker wrote its output.
OUTPUT = f"s3://{IO_BUCKET}/outputs/bench.out"


def set_up(emulator: Emulator) -> dict:
    """The stack's resources in the emulator, prewarmed: their names and addresses."""
    stack = create_resources(emulator.http_endpoint)
    prewarm(emulator, stack, OUTPUT)
    return stack


def aws(emulator: Emulator, service: str):
    return boto3.client(service, endpoint_url=emulator.http_endpoint, region_name=REGION,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def prewarm(emulator: Emulator, stack: dict, output: str) -> None:
    """The output object, and one call of each kind the functions make: moto loads a service's
    code on its first call, which would otherwise land in the first cold start measured."""
    s3, ddb = aws(emulator, "s3"), aws(emulator, "dynamodb")
    s3.put_object(Bucket=IO_BUCKET, Key="outputs/bench.out", Body=OUTPUT_BODY)
    s3.get_object(Bucket=IO_BUCKET, Key="outputs/bench.out", Range="bytes=0-10")
    for table, key in ((RESULTS_TABLE, {"inference_id": {"S": "prewarm"}}),
                       (stack["PIPELINE_RESULTS_TABLE"], {"session_id": {"S": "prewarm"}, "execution_arn": {"S": "x"}})):
        ddb.update_item(TableName=table, Key=key, UpdateExpression="SET #s = :s",
                        ConditionExpression="attribute_not_exists(#s) OR #s = :p",
                        ExpressionAttributeNames={"#s": "status"},
                        ExpressionAttributeValues={":s": {"S": "x"}, ":p": {"S": "pending"}}, ReturnValues="ALL_OLD")
        ddb.get_item(TableName=table, Key=key, ConsistentRead=True)
    aws(emulator, "sqs").send_message(QueueUrl=stack["PIPELINE_RESULTS_QUEUE_URL"], MessageBody="{}")
    aws(emulator, "sagemaker-runtime").invoke_endpoint_async(
        EndpointName="mcp-doc-processor-async", InputLocation=f"s3://{IO_BUCKET}/inputs/prewarm.json")
    # and the TLS listener's first handshake
    boto3.client("dynamodb", endpoint_url=emulator.https_endpoint, region_name=REGION, verify=emulator.ca_bundle,
                 aws_access_key_id="testing", aws_secret_access_key="testing").list_tables()
