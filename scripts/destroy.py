#!/usr/bin/env python3
"""Removes a deployed stack (SAM's or the CDK construct's: both have the same outputs) and what
deleting it leaves behind: the stack's objects in the IO bucket (every version, under inputs/ and
the output and failure prefixes; the bucket itself is yours and stays), then the stack. What it
keeps, it names with the command that removes it: the tables (jobs, runs, MCP Events' log and its
webhook subscriptions; kept by their DeletionPolicy, so that a mistaken delete loses no job)
unless --delete-tables.

    destroy.py --stack-name NAME            print the plan, ask for the stack's name, then act
    destroy.py --stack-name NAME --dry-run  print the plan only
    destroy.py --stack-name NAME --yes [--delete-tables] [--keep-objects]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aws_region  # noqa: E402

TABLE_OUTPUTS = ("ResultsTableName", "PipelineResultsTableName", "EventsTableName", "SubscriptionsTableName")


@dataclass
class Plan:
    stack: str
    # (bucket, prefix) whose objects and versions go first.
    empty: list = field(default_factory=list)
    # Tables the stack keeps after it is deleted; deleted too with delete_tables.
    tables: list = field(default_factory=list)
    delete_tables: bool = False

    def lines(self) -> list:
        out = [f"s3://{b}/{p}: every object and version deleted" for b, p in self.empty]
        out.append(f"stack {self.stack}: deleted (functions, topics, queues, alarms, the endpoints it created)")
        for table in self.tables:
            if self.delete_tables:
                out.append(f"table {table}: deleted after the stack")
            else:
                out.append(f"table {table}: kept (DeletionPolicy RetainExceptOnCreate); remove it with "
                           f"aws dynamodb delete-table --table-name {table}, or make destroy ... ARGS=--delete-tables")
        return out


def s3_location(uri: str) -> tuple:
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"{uri!r} is not an s3:// location")
    return parsed.netloc, parsed.path.lstrip("/")


def plan(stack_name: str, outputs: dict, keep_objects: bool = False, delete_tables: bool = False) -> Plan:
    """What destroying a stack with these outputs (OutputKey -> OutputValue) does."""
    result = Plan(stack=stack_name, delete_tables=delete_tables)
    if not keep_objects:
        prefixes = []
        for key in ("S3OutputPath", "S3FailurePath"):
            if outputs.get(key):
                prefixes.append(s3_location(outputs[key]))
        if prefixes:
            # mcp-tools writes the inputs it uploads under inputs/ of the same bucket.
            prefixes.insert(0, (prefixes[0][0], "inputs/"))
        for bucket, prefix in prefixes:
            if not prefix:
                raise ValueError(f"{bucket}: an empty prefix would empty the whole bucket; give --keep-objects "
                                 "and empty it yourself")
            if (bucket, prefix) not in result.empty:
                result.empty.append((bucket, prefix))
    result.tables = [outputs[key] for key in TABLE_OUTPUTS if outputs.get(key)]
    return result


def empty_prefix(s3, bucket: str, prefix: str) -> int:
    """Deletes every object version and delete marker under prefix; how many it deleted."""
    deleted = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        for start in range(0, len(keys), 1000):
            batch = keys[start:start + 1000]
            answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise RuntimeError(f"s3://{bucket}/{first['Key']}: {first['Code']} {first.get('Message', '')}")
            deleted += len(batch)
    return deleted


def outputs_of(cloudformation, stack_name: str) -> dict:
    stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def execute(session, steps: Plan, out=sys.stdout, wait: bool = True) -> None:
    s3 = session.client("s3")
    for bucket, prefix in steps.empty:
        print(f"s3://{bucket}/{prefix}: {empty_prefix(s3, bucket, prefix)} objects and versions deleted", file=out)
    cloudformation = session.client("cloudformation")
    cloudformation.delete_stack(StackName=steps.stack)
    if wait:
        cloudformation.get_waiter("stack_delete_complete").wait(StackName=steps.stack)
    print(f"stack {steps.stack}: deleted", file=out)
    dynamodb = session.client("dynamodb")
    for table in steps.tables:
        if steps.delete_tables:
            dynamodb.delete_table(TableName=table)
            print(f"table {table}: deleted", file=out)
        else:
            print(f"table {table}: kept; aws dynamodb delete-table --table-name {table} removes it", file=out)


def main(argv: Optional[list] = None, session=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--stack-name", required=True)
    parser.add_argument("--dry-run", action="store_true", help="print the plan only")
    parser.add_argument("--yes", action="store_true", help="act without asking")
    parser.add_argument("--delete-tables", action="store_true", help="delete the kept tables too")
    parser.add_argument("--keep-objects", action="store_true", help="leave the stack's objects in the IO bucket")
    args = parser.parse_args(argv)
    try:
        session = session or aws_region.session()
        outputs = outputs_of(session.client("cloudformation"), args.stack_name)
        steps = plan(args.stack_name, outputs, args.keep_objects, args.delete_tables)
    except aws_region.NoRegion as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # botocore's ClientError: no such stack, no credentials
        print(f"error: stack {args.stack_name}: {e}", file=sys.stderr)
        return 1
    print("\n".join(steps.lines()))
    if args.dry_run:
        return 0
    if not args.yes:
        answer = input(f"Type the stack's name ({args.stack_name}) to go on: ")
        if answer.strip() != args.stack_name:
            print("nothing done", file=sys.stderr)
            return 1
    execute(session, steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
