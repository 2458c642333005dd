"""The notification handler as it would otherwise be written: Python, boto3, the Lambda Python
runtime. Used only by `make bench` as the reference for notification-handler.

Same work per notification: parse the SNS message, take the output from `responseBody` or read
it from S3 (bounded), write the outcome with a TTL in one conditional UpdateItem that only
replaces a `pending` item. Clients are created at import, as the Lambda docs recommend.
"""

import base64
import json
import os
import time
from urllib.parse import urlparse

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["RESULTS_TABLE"]
TTL_SECS = int(os.environ.get("RESULT_TTL_SECS", "3600"))
INLINE_MAX = int(os.environ.get("INLINE_RESULT_MAX_BYTES", "65536"))

s3 = boto3.client("s3")
dynamodb = boto3.client("dynamodb")


def lambda_handler(event, context):
    failures = []
    for record in event.get("Records", []):
        if record.get("eventSource") == "aws:sqs":
            envelope = json.loads(record["body"])
            message = envelope["Message"]
        else:
            message = record["Sns"]["Message"]
        try:
            record_outcome(json.loads(message))
        except Exception:
            if record.get("eventSource") != "aws:sqs":
                raise
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def record_outcome(n):
    inference_id = n["inferenceId"]
    now = time.time()
    completed = n["invocationStatus"] == "Completed"
    values = {
        ":status": {"S": "completed" if completed else "failed"},
        ":completed_at": {"S": n.get("eventTime") or iso(now)},
        ":ttl": {"N": str(int(now) + TTL_SECS)},
        ":pending": {"S": "pending"},
    }
    sets = ["#status = :status", "completed_at = :completed_at", "#ttl = :ttl"]
    if completed:
        output = n.get("responseParameters", {}).get("outputLocation")
        body = n.get("responseBody")
        result = None
        if body and body.get("content") is not None:
            raw = base64.b64decode(body["content"]) if body.get("encoding") == "BASE64" else body["content"].encode()
            result = raw if len(raw) <= INLINE_MAX else None
        elif output:
            result = read_prefix(output)
        if output:
            sets.append("output_location = :output")
            values[":output"] = {"S": output}
        if result is not None:
            sets.append("#result = :result")
            values[":result"] = {"S": result.decode("utf-8", "replace")}
    else:
        sets.append("failure_reason = :reason")
        values[":reason"] = {"S": n.get("failureReason", "")[:4096]}
    try:
        dynamodb.update_item(
            TableName=TABLE,
            Key={"inference_id": {"S": inference_id}},
            UpdateExpression="SET " + ", ".join(sets),
            ConditionExpression="attribute_not_exists(inference_id) OR #status = :pending",
            ExpressionAttributeNames={"#status": "status", "#ttl": "ttl",
                                      **({"#result": "result"} if ":result" in values else {})},
            ExpressionAttributeValues=values,
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise


def read_prefix(location):
    url = urlparse(location)
    obj = s3.get_object(Bucket=url.netloc, Key=url.path.lstrip("/"), Range=f"bytes=0-{INLINE_MAX}")
    data = obj["Body"].read()
    total = int(obj.get("ContentRange", "/%d" % len(data)).rsplit("/", 1)[1])
    return data if total <= INLINE_MAX else None


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
