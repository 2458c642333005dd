"""What an async endpoint's execution role (its Model's ExecutionRoleArn) must be allowed for a
stack's outcomes to arrive: the policy the template attaches when it creates the endpoint
(ModelExecutionRolePolicy), for make wire-endpoint to print or attach and for the doctor to
simulate. SageMaker publishes to the NotificationConfig topics, writes the output and failure
objects, reads the inputs (mcp-tools writes them under inputs/) and, with a customer managed key
on the outputs or the bucket, asks KMS for data keys, all as that role."""

from __future__ import annotations

INPUT_PREFIX = "inputs/"


def arn_parts(arn: str) -> list:
    return arn.split(":", 5)


def key_arn(key: str, partition: str, region: str, account: str) -> str:
    """A KMS key's ARN from its ARN or its ID (in this account and region)."""
    return key if key.startswith("arn:") else f"arn:{partition}:kms:{region}:{account}:key/{key}"


def role_name(role_arn: str) -> str:
    """arn:aws:iam::123456789012:role/service-role/Name -> Name (what PutRolePolicy takes)."""
    return role_arn.rsplit("/", 1)[-1]


def requirements(success_topic: str, error_topic: str, bucket: str, output_prefix: str, failure_prefix: str,
                 key_arns: list, partition: str = "aws") -> list:
    """[(label, action, granted resource, a resource to simulate)]: each thing the role must be
    allowed. An object prefix is granted as `prefix*` and simulated on an object under it."""
    s3 = f"arn:{partition}:s3:::{bucket}"
    needed = [("success topic", "sns:Publish", success_topic, success_topic),
              ("error topic", "sns:Publish", error_topic, error_topic),
              ("output prefix", "s3:PutObject", f"{s3}/{output_prefix}*", f"{s3}/{output_prefix}doctor-check.out"),
              ("failure prefix", "s3:PutObject", f"{s3}/{failure_prefix}*", f"{s3}/{failure_prefix}doctor-check.out"),
              ("input prefix", "s3:GetObject", f"{s3}/{INPUT_PREFIX}*", f"{s3}/{INPUT_PREFIX}doctor-check.json")]
    for key in key_arns:
        needed += [("key", "kms:GenerateDataKey", key, key), ("key", "kms:Decrypt", key, key)]
    return [n for n in needed if n[2]]


def policy_document(needed: list) -> dict:
    """The requirements as one policy, in the template's statements (Sid for Sid)."""
    def resources(action: str) -> list:
        return list(dict.fromkeys(granted for _, a, granted, _ in needed if a == action))
    statements = [{"Sid": "PublishOutcomes", "Effect": "Allow", "Action": "sns:Publish", "Resource": resources("sns:Publish")},
                  {"Sid": "WriteOutcomes", "Effect": "Allow", "Action": "s3:PutObject", "Resource": resources("s3:PutObject")},
                  {"Sid": "ReadInputs", "Effect": "Allow", "Action": "s3:GetObject", "Resource": resources("s3:GetObject")}]
    keys = resources("kms:Decrypt")
    if keys:
        statements.append({"Sid": "UseKeys", "Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
                           "Resource": keys})
    return {"Version": "2012-10-17", "Statement": [s for s in statements if s["Resource"]]}


def statement(action: str, resource: str) -> dict:
    """The one statement that grants `action` on `resource`."""
    return {"Effect": "Allow", "Action": action, "Resource": resource}


def config_key_arns(config: dict, partition: str, region: str, account: str) -> list:
    """The customer managed key an endpoint config writes its outputs with, as an ARN (or none)."""
    output = (config.get("AsyncInferenceConfig") or {}).get("OutputConfig") or {}
    key = output.get("KmsKeyId") or ""
    return [key_arn(key, partition, region, account)] if key else []


def execution_role(sm, config: dict) -> str:
    """The execution role of the endpoint config's first variant's Model (DescribeModel)."""
    variants = config.get("ProductionVariants") or []
    if not variants or not variants[0].get("ModelName"):
        raise LookupError(f"config {config.get('EndpointConfigName')} names no model")
    return sm.describe_model(ModelName=variants[0]["ModelName"])["ExecutionRoleArn"]
