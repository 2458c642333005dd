"""Reading a deployed stack of this template: its parameters, outputs and resources, for the
commands that operate on it (redrive.py, doctor.py, wire_endpoint.py), and what else those
commands share: the wiring options, how an error stops them.
IAM: cloudformation:DescribeStacks and cloudformation:ListStackResources on the stack."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field


class StackError(Exception):
    """The stack cannot be read, or lacks what the command needs (the message names it)."""


@dataclass
class Stack:
    name: str
    # arn:aws:cloudformation:<region>:<account>:stack/<name>/<id>, when read from CloudFormation
    stack_id: str = ""
    parameters: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    # logical id -> (resource type, physical id)
    resources: dict = field(default_factory=dict)

    def output(self, key: str) -> str:
        value = self.outputs.get(key)
        if not value:
            raise StackError(f"stack {self.name} has no output {key}")
        return value

    def parameter(self, key: str, default: str | None = None) -> str | None:
        return self.parameters.get(key, default)

    def physical_id(self, logical_id: str) -> str | None:
        resource = self.resources.get(logical_id)
        return resource[1] if resource else None

    def account(self) -> str:
        parts = self.stack_id.split(":")
        return parts[4] if len(parts) > 5 else ""

    def partition(self) -> str:
        parts = self.stack_id.split(":")
        return parts[1] if len(parts) > 5 else "aws"

    def of_type(self, resource_type: str) -> list:
        """The physical ids of every resource of one type, by logical id order."""
        return [physical for _, (kind, physical) in sorted(self.resources.items()) if kind == resource_type]


def read_stack(session, name: str, with_resources: bool = True) -> Stack:
    """The stack as CloudFormation describes it; StackError when it does not exist."""
    cloudformation = session.client("cloudformation")
    try:
        described = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
    except Exception as e:  # botocore's ClientError and connection errors alike
        raise StackError(f"could not read stack {name}: {e}") from e
    stack = Stack(
        name=name,
        stack_id=described.get("StackId", ""),
        parameters={p["ParameterKey"]: p.get("ResolvedValue", p.get("ParameterValue", ""))
                    for p in described.get("Parameters", [])},
        outputs={o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])},
    )
    if with_resources:
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=name):
            for r in page["StackResourceSummaries"]:
                stack.resources[r["LogicalResourceId"]] = (r["ResourceType"], r.get("PhysicalResourceId", ""))
    return stack


def wiring_parser(doc: str, stack_help: str) -> argparse.ArgumentParser:
    """The parser wire-endpoint and the doctor start from: the script's docstring (its first
    paragraph the description, what follows its second the epilog), --stack-name and the names
    that wire an endpoint to a stack, given explicitly instead of by --stack-name."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=doc.split("\n\n", 2)[2])
    parser.add_argument("--stack-name", help=stack_help)
    parser.add_argument("--endpoint-name", dest="endpoint")
    parser.add_argument("--success-topic-arn", dest="success_topic")
    parser.add_argument("--error-topic-arn", dest="error_topic")
    parser.add_argument("--bucket", help="the IO bucket (IoBucketName)")
    parser.add_argument("--output-prefix", help="OutputPrefix (default outputs/)")
    parser.add_argument("--failure-prefix", help="FailurePrefix (default failures/)")
    return parser


def error_status(message: object, status: int) -> int:
    """`error: <message>` on stderr, and `status` for the command's main to return; each
    command's except clauses say which errors stop it and with which status."""
    print(f"error: {message}", file=sys.stderr)
    return status


def names(text: str | None) -> list:
    """A CommaDelimitedList parameter's value (as DescribeStacks gives it) as its names, each once."""
    found: list = []
    for name in (n.strip() for n in (text or "").split(",")):
        if name and name not in found:
            found.append(name)
    return found


def under_prefix(path: str | None, prefix_uri: str) -> bool:
    """Whether objects SageMaker writes under `path` have keys that the IAM grant on
    `prefix_uri` (`s3://bucket/prefix*`) covers."""
    return bool(path) and (path.rstrip("/") + "/").startswith(prefix_uri)
