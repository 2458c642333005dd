"""The SAM template as CloudFormation deploys it, offline: samtranslator turns it into plain
CloudFormation, then one set of parameter values decides the conditions, drops what they
exclude, and resolves Fn::If, parameter Refs and parameter Fn::Subs, so a test reads what a stack
with those parameters would hold. Refs to resources and GetAtts stay as they are: they are the
wiring a test follows."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "template.yaml"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012",
          "AWS::StackName": "mcp-jobs", "AWS::URLSuffix": "amazonaws.com",
          "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/mcp-jobs/"
                          "4f0c2a30-9d1e-11f0-8de9-0a1b2c3d4e5f"}
# Values for the parameters without a default, and the pipeline (without it the stack is
# inference-only), as a user would give them.
REQUIRED = {"AsyncEndpointName": "doc-processor-async", "PipelineName": "intent-classifier",
            "IoBucketName": "mcp-io-bucket"}


class NoManagedPolicies:
    """The template names no AWS managed policy; translating must not look any up."""

    def load(self) -> dict:
        return {}


def translated() -> dict:
    """The template as plain CloudFormation (CodeUri pointed at S3, as `sam package` would)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", PSEUDO["AWS::Region"])
    sam = yaml_parse(TEMPLATE.read_text())
    sam["Globals"]["Function"]["CodeUri"] = "s3://mcp-artifacts/functions.zip"
    sam["Resources"]["ToolCatalogLayer"]["Properties"]["ContentUri"] = "s3://mcp-artifacts/tool-catalog.zip"
    return transform(sam, {}, NoManagedPolicies())


class Deployed:
    """One stack's view of the translated template for a set of parameter values."""

    def __init__(self, cfn: dict, stack_name: str = PSEUDO["AWS::StackName"], **parameters):
        unknown = set(parameters) - set(cfn["Parameters"])
        assert not unknown, f"no such parameters: {unknown}"
        self.pseudo = {**PSEUDO, "AWS::StackName": stack_name,
                       "AWS::StackId": PSEUDO["AWS::StackId"].replace("/mcp-jobs/", f"/{stack_name}/")}
        self.values = {name: str(spec.get("Default", "")) for name, spec in cfn["Parameters"].items()}
        self.values.update(REQUIRED)
        self.values.update({k: str(v) for k, v in parameters.items()})
        self.lists = {name for name, spec in cfn["Parameters"].items() if spec["Type"] == "CommaDelimitedList"}
        self.conditions: dict = {}
        for name in cfn.get("Conditions", {}):
            self._condition(cfn["Conditions"], name)
        self.resources = {name: self.resolve(resource) for name, resource in cfn["Resources"].items()
                          if self.conditions.get(resource.get("Condition"), True)}
        self.outputs = {name: self.resolve(output) for name, output in cfn.get("Outputs", {}).items()
                        if self.conditions.get(output.get("Condition"), True)}

    def _condition(self, all_conditions: dict, name: str) -> bool:
        if name not in self.conditions:
            self.conditions[name] = self.evaluate(all_conditions[name], all_conditions)
        return self.conditions[name]

    def evaluate(self, node, all_conditions: dict) -> bool:
        (function, args), = node.items()
        if function == "Condition":
            return self._condition(all_conditions, args)
        if function == "Fn::Equals":
            left, right = (self.resolve(a) for a in args)
            return str(left) == str(right)
        if function == "Fn::Not":
            return not self.evaluate(args[0], all_conditions)
        if function == "Fn::And":
            return all(self.evaluate(a, all_conditions) for a in args)
        if function == "Fn::Or":
            return any(self.evaluate(a, all_conditions) for a in args)
        if function == "Fn::EachMemberEquals":  # a Rule's
            values, value = (self.resolve(a) for a in args)
            return all(v == value for v in values)
        raise AssertionError(f"unexpected condition function {function}")

    def resolve(self, node):
        if isinstance(node, list):
            return [v for v in (self.resolve(n) for n in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Fn::If"}:
            name, yes, no = node["Fn::If"]
            return self.resolve(yes if self.conditions[name] else no)
        if set(node) == {"Ref"}:
            ref = node["Ref"]
            if ref == "AWS::NoValue":
                return NO_VALUE
            if ref in self.lists:
                return [v.strip() for v in self.values[ref].split(",")]
            if ref in self.values:
                return self.values[ref]
            return self.pseudo.get(ref, node)
        if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
            return self.substitute(node["Fn::Sub"])
        if set(node) == {"Fn::Sub"}:
            text, variables = node["Fn::Sub"]
            variables = {k: self.resolve(v) for k, v in variables.items()}
            # Resolved when nothing is left to CloudFormation (a catalog's ARN); else its variables are.
            resolved = self.substitute(text, variables) if all(isinstance(v, str) for v in variables.values()) else None
            return resolved if isinstance(resolved, str) else {"Fn::Sub": [text, variables]}
        # The list functions, once their arguments are known (a resource's attribute stays as it is).
        if set(node) == {"Fn::Join"}:
            delimiter, values = node["Fn::Join"]
            values = self.resolve(values)
            if isinstance(values, list) and all(isinstance(v, str) for v in values):
                return delimiter.join(values)
            return {"Fn::Join": [delimiter, values]}
        if set(node) == {"Fn::Split"}:
            delimiter, text = node["Fn::Split"]
            text = self.resolve(text)
            return text.split(delimiter) if isinstance(text, str) else {"Fn::Split": [delimiter, text]}
        if set(node) == {"Fn::Select"}:
            index, values = node["Fn::Select"]
            values = self.resolve(values)
            if isinstance(values, list):
                assert int(index) < len(values), f"Fn::Select index {index} out of {values}: CloudFormation refuses it"
                return values[int(index)]
            return {"Fn::Select": [index, values]}
        return {k: v for k, v in ((k, self.resolve(v)) for k, v in node.items()) if v is not NO_VALUE}

    def substitute(self, text: str, variables: dict | None = None):
        """Parameters, pseudo parameters and the Sub's own variables substituted; a Sub naming a
        resource stays a Sub."""
        def value(match):
            name = match.group(1)
            return (variables or {}).get(name, self.values.get(name, self.pseudo.get(name, match.group(0))))
        result = re.sub(r"\$\{([A-Za-z0-9:]+)\}", value, text)
        return {"Fn::Sub": result} if "${" in result else result

    def of_type(self, resource_type: str) -> dict:
        return {n: r for n, r in self.resources.items() if r["Type"] == resource_type}

    def props(self, name: str) -> dict:
        return self.resources[name]["Properties"]


class _NoValue:
    def __repr__(self):
        return "AWS::NoValue"


NO_VALUE = _NoValue()


def with_defaults(cfn: dict, **parameters) -> str:
    """The translated template as JSON with these values as the parameters' defaults, for linting
    one condition set."""
    linted = copy.deepcopy(cfn)
    for name, value in {**REQUIRED, **parameters}.items():
        linted["Parameters"][name]["Default"] = value
    return json.dumps(linted)
