#!/usr/bin/env python3
"""The one AWS region every command here uses (make deploy, deploy-guided, doctor, wire-endpoint,
redrive, cdk-deploy, cdk-bootstrap): the caller's, as the AWS CLI v2 picks it: AWS_REGION, then
AWS_DEFAULT_REGION, then the region of the profile (AWS_PROFILE, or default). A region saved in
samconfig.toml is not used: make deploy passes this one to sam deploy. Run as a script it prints
the region; it exits 1, saying how to set one, when there is none: nothing guesses a region.
(boto3 alone reads AWS_DEFAULT_REGION and the profile, not AWS_REGION: the scripts build their
sessions with session() below.)"""

from __future__ import annotations

import os
import sys

import boto3


class NoRegion(Exception):
    """No region is set anywhere the rule looks."""

    def __init__(self):
        profile = os.environ.get("AWS_PROFILE", "default")
        super().__init__(f"no AWS region is set. Set AWS_REGION, or a region in profile {profile!r} "
                         f"(aws configure set region <region> --profile {profile}).")


def caller_region_and_source() -> tuple:
    """(region, where it came from); ("", "") when none is set."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable].strip(), variable
    region = boto3.session.Session().region_name or ""
    return (region, f"profile {os.environ.get('AWS_PROFILE', 'default')}") if region else ("", "")


def caller_region() -> str:
    return caller_region_and_source()[0]


def session(out=sys.stderr) -> boto3.session.Session:
    """A boto3 session in the caller's region, said on `out`; NoRegion when there is none."""
    region, source = caller_region_and_source()
    if not region:
        raise NoRegion()
    if out is not None:
        print(f"region {region} (from {source})", file=out)
    return boto3.session.Session(region_name=region)


def main() -> int:
    region = caller_region()
    if not region:
        print(f"error: {NoRegion()}", file=sys.stderr)
        return 1
    print(region)
    return 0


if __name__ == "__main__":
    sys.exit(main())
