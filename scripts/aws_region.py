#!/usr/bin/env python3
"""Prints the AWS region a deployment goes to: the caller's, as the AWS CLI and SDKs pick it
(AWS_REGION, then AWS_DEFAULT_REGION, then the region of the profile, AWS_PROFILE or default).
Exits 1, saying how to set one, when there is none: a deployment never guesses a region."""

import os
import sys

import boto3


def caller_region() -> str:
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable].strip()
    return boto3.session.Session().region_name or ""


def main() -> int:
    region = caller_region()
    if not region:
        profile = os.environ.get("AWS_PROFILE", "default")
        print(f"error: no AWS region is set. Set AWS_REGION, or a region in profile {profile!r} "
              f"(aws configure set region <region> --profile {profile}).", file=sys.stderr)
        return 1
    print(region)
    return 0


if __name__ == "__main__":
    sys.exit(main())
