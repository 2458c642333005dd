#!/usr/bin/env python3
"""Wires an existing SageMaker async endpoint to a stack: SageMaker then publishes every outcome
to the stack's topics and writes it where the functions may read.

    wire_endpoint.py --stack-name STACK [--dry-run] [--wait]
    wire_endpoint.py --endpoint-name E --success-topic-arn T --error-topic-arn T --bucket B
                     [--output-prefix outputs/] [--failure-prefix failures/] [--dry-run] [--wait]

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
The endpoint's execution role also needs sns:Publish on both topics and s3:PutObject under both
prefixes (the stack's own topics allow it when the stack has ModelExecutionRoleArn).
AWS access is boto3's standard chain. IAM: sagemaker:DescribeEndpoint,
sagemaker:DescribeEndpointConfig, sagemaker:CreateEndpointConfig, sagemaker:UpdateEndpoint,
iam:PassRole on the config's ExecutionRoleArn when it has one, cloudformation:DescribeStacks.
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

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from stack import StackError, add_wiring_arguments, read_stack, under_prefix

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
        "success_topic": stack.output("SuccessTopic"),
        "error_topic": stack.output("ErrorTopic"),
        "bucket": stack.parameter("IoBucketName"),
        "output_prefix": stack.parameter("OutputPrefix", "outputs/"),
        "failure_prefix": stack.parameter("FailurePrefix", "failures/"),
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


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--stack-name", help="the deployed stack the endpoint is wired to")
    add_wiring_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the difference, change nothing")
    parser.add_argument("--wait", action="store_true", help="wait until the endpoint is InService again")
    parser.add_argument("--poll-secs", type=float, default=30.0, help="with --wait, seconds between checks (30)")
    parser.add_argument("--timeout-secs", type=float, default=3600.0, help="with --wait, give up after (3600)")
    args = parser.parse_args(argv)

    session = boto3.session.Session()
    wiring = {"output_prefix": "outputs/", "failure_prefix": "failures/"}
    try:
        if args.stack_name:
            wiring.update(wiring_from_stack(session, args.stack_name))
    except StackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for key in ("endpoint", "success_topic", "error_topic", "bucket", "output_prefix", "failure_prefix"):
        if getattr(args, key) is not None:
            wiring[key] = getattr(args, key)
    missing = [f"--{k.replace('_', '-')}" + ("-arn" if "topic" in k else "") + ("-name" if k == "endpoint" else "")
               for k in ("endpoint", "success_topic", "error_topic", "bucket") if not wiring.get(k)]
    if missing:
        parser.error(f"give --stack-name, or {', '.join(missing)}")

    sm = session.client("sagemaker")
    try:
        name = wire(sm, wiring, args.dry_run)
        if name and args.wait:
            status = wait_in_service(sm, wiring["endpoint"], args.poll_secs, args.timeout_secs)
            print(f"endpoint {wiring['endpoint']} is {status}")
            if status != "InService":
                return 1
    except WiringError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (ClientError, BotoCoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
