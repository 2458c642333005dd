#!/usr/bin/env python3
"""Wires an existing SageMaker async endpoint to a stack: SageMaker then publishes every outcome
to the stack's topics and writes it where the functions may read.

    wire_endpoint.py --stack-name STACK [--dry-run] [--wait] [--attach-role-policy]
    wire_endpoint.py --endpoint-name E --success-topic-arn T --error-topic-arn T --bucket B
                     [--output-prefix outputs/] [--failure-prefix failures/] [--dry-run] [--wait]
                     [--attach-role-policy]

An EndpointConfig cannot be changed, so this reads the endpoint's current one, copies it (its
production variants, KMS key, data capture, client config and the rest, unchanged) with the
stack's wiring set in AsyncInferenceConfig.OutputConfig:
- NotificationConfig: SuccessTopic and ErrorTopic the stack's, IncludeInferenceResponseIn with
  SUCCESS_NOTIFICATION_TOPIC (responses up to 128 KB arrive in the message);
- S3OutputPath and S3FailurePath: kept when already under the granted prefixes
  (s3://IoBucketName/OutputPrefix, .../FailurePrefix), else set to them;
creates it under a new name (the old name plus -wired-<UTC time>) and calls UpdateEndpoint
(blue/green, the endpoint keeps serving; instance counts are retained). --dry-run prints the
difference and changes nothing; nothing is created either when the endpoint is already wired.
--wait waits for the endpoint to be InService again. The old EndpointConfig is left in place
(delete it once the endpoint runs on the new one, if nothing else uses it).
With --stack-name the names come from the stack (parameters AsyncEndpointName, IoBucketName,
OutputPrefix, FailurePrefix; outputs SuccessTopic, ErrorTopic); an explicit option overrides one.
Every endpoint the stack serves is wired, one after the other: AsyncEndpointName and each of the
tool catalog's (CatalogEndpointNames); --endpoint-name wires that one alone.
SageMaker publishes and writes as the endpoint's execution role (its Model's ExecutionRoleArn,
read with DescribeModel, or --model-execution-role-arn). Its policy (sns:Publish on both topics,
s3:PutObject under both prefixes, s3:GetObject under inputs/, kms:GenerateDataKey and kms:Decrypt
on the outputs' key: the config's, and the stack's IoBucketKmsKeyArn or --bucket-kms-key-arn) is
printed every run; --attach-role-policy puts it on the role as the inline policy
mcp-async-jobs-<endpoint> (not on a dry run). make doctor then simulates it.
AWS access is boto3's standard chain in the region scripts/aws_region.py picks, printed first.
IAM: sagemaker:DescribeEndpoint, sagemaker:DescribeEndpointConfig, sagemaker:DescribeModel,
sagemaker:CreateEndpointConfig, sagemaker:UpdateEndpoint, iam:PassRole on the config's
ExecutionRoleArn when it has one, cloudformation:DescribeStacks; with --attach-role-policy
iam:PutRolePolicy on the execution role.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import sys
import time
from datetime import datetime, timezone
from typing import Optional

from botocore.exceptions import BotoCoreError, ClientError

import aws_region
import model_role
from stack import StackError, error_status, names, read_stack, under_prefix, wiring_parser

# What DescribeEndpointConfig returns that CreateEndpointConfig takes back.
COPIED_FIELDS = ("ProductionVariants", "DataCaptureConfig", "KmsKeyId", "AsyncInferenceConfig", "ExplainerConfig",
                 "ShadowProductionVariants", "ExecutionRoleArn", "VpcConfig", "EnableNetworkIsolation",
                 "MetricsConfig")
SUCCESS_TYPE = "SUCCESS_NOTIFICATION_TOPIC"
NAME_MAX = 63


class WiringError(Exception):
    """The endpoint cannot be wired as asked (the message says why)."""


def wiring_from_stack(session, name: str) -> dict:
    stack = read_stack(session, name, with_resources=False)
    return {
        "endpoint": stack.parameter("AsyncEndpointName"),
        "catalog_endpoints": names(stack.parameter("CatalogEndpointNames")),
        "success_topic": stack.output("SuccessTopic"),
        "error_topic": stack.output("ErrorTopic"),
        "bucket": stack.parameter("IoBucketName"),
        "output_prefix": stack.parameter("OutputPrefix", "outputs/"),
        "failure_prefix": stack.parameter("FailurePrefix", "failures/"),
        "bucket_key": stack.parameter("IoBucketKmsKeyArn") or None,
        "account": stack.account(),
        "partition": stack.partition(),
    }


def wired_config(current: dict, wiring: dict) -> dict:
    """The CreateEndpointConfig arguments (without the name): `current` with the stack's wiring."""
    if "AsyncInferenceConfig" not in current:
        raise WiringError(f"endpoint config {current['EndpointConfigName']} has no AsyncInferenceConfig: the "
                          "endpoint is not asynchronous (wiring it would change how its other callers call it)")
    config = {k: copy.deepcopy(current[k]) for k in COPIED_FIELDS if k in current}
    output = config["AsyncInferenceConfig"].setdefault("OutputConfig", {})
    for key, prefix in (("S3OutputPath", wiring["output_prefix"]), ("S3FailurePath", wiring["failure_prefix"])):
        granted = f"s3://{wiring['bucket']}/{prefix}"
        if not under_prefix(output.get(key), granted):
            output[key] = granted
    notification = output.setdefault("NotificationConfig", {})
    notification["SuccessTopic"] = wiring["success_topic"]
    notification["ErrorTopic"] = wiring["error_topic"]
    included = notification.get("IncludeInferenceResponseIn") or []
    notification["IncludeInferenceResponseIn"] = included + [SUCCESS_TYPE] * (SUCCESS_TYPE not in included)
    return config


def new_config_name(current: str, now: datetime) -> str:
    suffix = f"-wired-{now:%Y%m%d%H%M%S}"
    base = current.split("-wired-")[0][:NAME_MAX - len(suffix)].rstrip("-")
    return base + suffix


def difference(before: dict, after: dict) -> list:
    def lines(d: dict) -> list:
        return json.dumps(d, indent=2, sort_keys=True, default=str).splitlines()
    return list(difflib.unified_diff(lines(before), lines(after), "current AsyncInferenceConfig",
                                     "wired AsyncInferenceConfig", lineterm=""))


def wait_in_service(sm, endpoint: str, poll_secs: float, timeout_secs: float) -> str:
    deadline = time.monotonic() + timeout_secs
    while True:
        status = sm.describe_endpoint(EndpointName=endpoint)["EndpointStatus"]
        if status not in ("Creating", "Updating", "SystemUpdating") or time.monotonic() > deadline:
            return status
        time.sleep(poll_secs)


def wire(sm, wiring: dict, dry_run: bool, out=sys.stdout) -> Optional[str]:
    """Prints the difference; unless dry_run, creates the wired config and updates the endpoint
    to it. Returns the new config's name (None when nothing changed or on a dry run)."""
    endpoint = sm.describe_endpoint(EndpointName=wiring["endpoint"])
    if endpoint["EndpointStatus"] != "InService":
        raise WiringError(f"endpoint {wiring['endpoint']} is {endpoint['EndpointStatus']}; UpdateEndpoint needs it "
                          "InService (wait for the change under way to finish)")
    current = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    config = wired_config(current, wiring)
    diff = difference(current["AsyncInferenceConfig"], config["AsyncInferenceConfig"])
    if not diff:
        print(f"endpoint {wiring['endpoint']} is already wired (config {current['EndpointConfigName']}); "
              "nothing to do", file=out)
        return None
    name = new_config_name(current["EndpointConfigName"], datetime.now(timezone.utc))
    print("\n".join(diff), file=out)
    if dry_run:
        print(f"dry run: would create EndpointConfig {name} (a copy of {current['EndpointConfigName']} with the "
              f"above) and update endpoint {wiring['endpoint']} to it", file=out)
        return None
    sm.create_endpoint_config(EndpointConfigName=name, **config)
    # Retained variant properties keep the instance count scaling has set (zero included).
    sm.update_endpoint(EndpointName=wiring["endpoint"], EndpointConfigName=name, RetainAllVariantProperties=True)
    print(f"created EndpointConfig {name}; endpoint {wiring['endpoint']} is updating to it (blue/green)", file=out)
    return name


def role_policy(sm, wiring: dict, region: str, out=sys.stdout) -> tuple:
    """(the execution role's ARN, the policy it needs for this wiring), printed on `out`."""
    endpoint = sm.describe_endpoint(EndpointName=wiring["endpoint"])
    config = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    role = wiring.get("role") or model_role.execution_role(sm, config)
    account, partition = wiring.get("account") or role.split(":")[4], wiring.get("partition") or role.split(":")[1]
    keys = model_role.config_key_arns(config, partition, region, account)
    keys += [wiring["bucket_key"]] if wiring.get("bucket_key") and wiring["bucket_key"] not in keys else []
    document = model_role.policy_document(model_role.requirements(
        wiring["success_topic"], wiring["error_topic"], wiring["bucket"], wiring["output_prefix"],
        wiring["failure_prefix"], keys, partition))
    print(f"The endpoint's execution role {role} needs this policy (--attach-role-policy puts it on the role as "
          f"{policy_name(wiring)}):", file=out)
    print(json.dumps(document, indent=2), file=out)
    return role, document


def policy_name(wiring: dict) -> str:
    return f"mcp-async-jobs-{wiring['endpoint']}"[:128]


def main(argv: Optional[list] = None) -> int:
    parser = wiring_parser(__doc__, "the deployed stack the endpoint is wired to")
    parser.add_argument("--catalog-endpoint-name", action="append", dest="catalog_endpoints",
                        help="an endpoint of the tool catalog, wired after --endpoint-name (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print the difference, change nothing")
    parser.add_argument("--wait", action="store_true", help="wait until the endpoint is InService again")
    parser.add_argument("--poll-secs", type=float, default=30.0, help="with --wait, seconds between checks (30)")
    parser.add_argument("--timeout-secs", type=float, default=3600.0, help="with --wait, give up after (3600)")
    parser.add_argument("--model-execution-role-arn", help="the endpoint's execution role (default: its Model's)")
    parser.add_argument("--bucket-kms-key-arn", help="the bucket's default encryption key (IoBucketKmsKeyArn)")
    parser.add_argument("--attach-role-policy", action="store_true",
                        help="put the printed policy on the execution role (iam:PutRolePolicy)")
    args = parser.parse_args(argv)

    wiring = {"output_prefix": "outputs/", "failure_prefix": "failures/"}
    try:
        session = aws_region.session(out=sys.stdout)
        if args.stack_name:
            wiring.update(wiring_from_stack(session, args.stack_name))
    except (StackError, aws_region.NoRegion) as e:
        return error_status(e, 2)
    wiring["role"] = args.model_execution_role_arn
    if args.bucket_kms_key_arn:
        wiring["bucket_key"] = args.bucket_kms_key_arn
    for key in ("endpoint", "success_topic", "error_topic", "bucket", "output_prefix", "failure_prefix"):
        if getattr(args, key) is not None:
            wiring[key] = getattr(args, key)
    missing = [f"--{k.replace('_', '-')}" + ("-arn" if "topic" in k else "") + ("-name" if k == "endpoint" else "")
               for k in ("endpoint", "success_topic", "error_topic", "bucket") if not wiring.get(k)]
    if missing:
        parser.error(f"give --stack-name, or {', '.join(missing)}")

    if args.catalog_endpoints:
        wiring["catalog_endpoints"] = args.catalog_endpoints
    # With --stack-name alone, the stack's endpoint and its catalog's, each once; --endpoint-name
    # (without --catalog-endpoint-name) wires that one alone.
    catalog_endpoints = wiring.get("catalog_endpoints", []) if args.catalog_endpoints or not args.endpoint else []
    endpoints = [wiring["endpoint"]] + [e for e in catalog_endpoints if e != wiring["endpoint"]]
    status = 0
    for endpoint in endpoints:
        if len(endpoints) > 1:
            print(f"== endpoint {endpoint}")
        # --model-execution-role-arn is the stack's endpoint's; the others' are read from their Models.
        role = wiring["role"] if endpoint == wiring["endpoint"] else None
        status = max(status, wire_one(session, {**wiring, "endpoint": endpoint, "role": role}, args))
    return status


def wire_one(session, wiring: dict, args: argparse.Namespace) -> int:
    sm = session.client("sagemaker")
    try:
        name = wire(sm, wiring, args.dry_run)
        try:
            role, document = role_policy(sm, wiring, session.region_name)
        except (ClientError, LookupError) as e:
            print(f"warning: the endpoint's execution role is not known ({e}): give --model-execution-role-arn "
                  "to print the policy it needs", file=sys.stderr)
            role = document = None
        if args.attach_role_policy and role and not args.dry_run:
            session.client("iam").put_role_policy(RoleName=model_role.role_name(role), PolicyName=policy_name(wiring),
                                                  PolicyDocument=json.dumps(document))
            print(f"attached {policy_name(wiring)} to role {model_role.role_name(role)}")
        elif args.attach_role_policy and not role:
            return 1
        if name and args.wait:
            status = wait_in_service(sm, wiring["endpoint"], args.poll_secs, args.timeout_secs)
            print(f"endpoint {wiring['endpoint']} is {status}")
            if status != "InService":
                return 1
    except WiringError as e:
        return error_status(e, 2)
    except (ClientError, BotoCoreError) as e:
        return error_status(e, 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
