#!/usr/bin/env python3
"""What a deploy needs, checked in seconds before anything is compiled (a release build takes
twenty minutes): the region, the stack's name and that it is free or this kind of stack of this
template, the parameters CloudFormation would refuse, and the tool catalog. Every mistake is
listed, with how to give what is missing.

    preflight.py deploy [--stack-name NAME] [--params "N=V ..."]
                          make deploy and make deploy-guided (after its questions): everything,
                          from samconfig.toml's saved parameters, the catalog's, then PARAMS
    preflight.py guided   what make deploy-guided checks before its first question: the region
                          and the catalog
    preflight.py cdk [--stack-name NAME] [--params "N=V ..."]
                          make cdk-deploy: the region, the stack, PARAMS against the template's
                          parameters and Rules (the CDK app takes the same names), and the
                          catalog file ToolCatalog names

The stack is looked up with DescribeStacks in the caller's region (the one the deploy uses): a
stack of that name the other deploy made (SAM's has the template's parameters, the CDK app's
only CDK's BootstrapVersion) or one of another template is refused, since deploying would take
it over.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aws_region  # noqa: E402
import catalog  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "infra" / "template.yaml"
# How each parameter a first deploy must give is given.
HOW = "run make deploy-guided (it saves the answers in samconfig.toml), or add {name}=... to parameter_overrides there"
# The same for the CDK app, which takes them on make's command line.
HOW_CDK = "add {name}=... to PARAMS (make cdk-deploy PARAMS=\"{name}=... ...\")"
# CloudFormation's rule for a stack's name.
STACK_NAME = re.compile(r"[a-zA-Z][-a-zA-Z0-9]{0,127}")
# What every stack of this template has, SAM's and the CDK app's alike, whatever its version's
# description (outputs without a Condition).
OUTPUTS = {"McpFunctionUrl", "ResultsTableName", "S3OutputPath"}
# How each deploy names the other, for a stack the other made.
DEPLOYS = {"sam": "make deploy (SAM)", "cdk": "make cdk-deploy (the CDK app)"}
# The CDK app's stack without STACK= (infra/cdk/bin/app.ts).
CDK_STACK = "mcp-async-jobs"


def template() -> dict:
    from samtranslator.yaml_helper import yaml_parse
    return yaml_parse(TEMPLATE.read_text())


def saved(samconfig: Path) -> dict:
    if not samconfig.is_file():
        return {}
    return tomllib.loads(samconfig.read_text()).get("default", {}).get("deploy", {}).get("parameters", {})


def parameter_values(lines: list) -> dict:
    """The overrides as sam deploy reads them (the last value of a parameter wins)."""
    from samcli.cli.types import CfnParameterOverridesType
    return dict(CfnParameterOverridesType().convert(tuple(line for line in lines if line.strip()), None, None))


def check_value(name: str, spec: dict, value: str) -> Optional[str]:
    """CloudFormation's own checks of one value (its type's, AllowedPattern, AllowedValues, bounds)."""
    values = [v.strip() for v in value.split(",")] if spec.get("Type") == "CommaDelimitedList" else [value]
    for v in values:
        if "AllowedValues" in spec and v not in [str(a) for a in spec["AllowedValues"]]:
            return f"{name}={value!r}: must be one of {', '.join(str(a) for a in spec['AllowedValues'])}"
        if "AllowedPattern" in spec and re.fullmatch(spec["AllowedPattern"], v) is None:
            why = spec.get("ConstraintDescription") or f"does not match {spec['AllowedPattern']}"
            return f"{name}={value!r}: {why}"
        if spec.get("Type") == "Number":
            try:
                number = float(v)
            except ValueError:
                return f"{name}={value!r}: not a number"
            if "MinValue" in spec and number < float(spec["MinValue"]) or \
                    "MaxValue" in spec and number > float(spec["MaxValue"]):
                return f"{name}={value!r}: must lie in {spec.get('MinValue', '')}..{spec.get('MaxValue', '')}"
    return None


def evaluate(node, values: dict, specs: dict):
    """A Rule's condition or assertion, for the few functions Rules use here."""
    if isinstance(node, dict) and len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref":
            value = values.get(arg, str(specs[arg].get("Default", "")))
            return [v.strip() for v in value.split(",")] if specs[arg].get("Type") == "CommaDelimitedList" else value
        args = [evaluate(a, values, specs) for a in arg] if isinstance(arg, list) else evaluate(arg, values, specs)
        if fn == "Fn::Equals":
            return args[0] == args[1]
        if fn == "Fn::Not":
            return not args[0]
        if fn == "Fn::And":
            return all(args)
        if fn == "Fn::Or":
            return any(args)
        if fn == "Fn::EachMemberEquals":
            return all(v == args[1] for v in args[0])
        raise ValueError(f"preflight cannot evaluate {fn}")
    return node


def check_parameters(values: dict, cfn: dict, how: str = HOW, where: str = "samconfig.toml") -> list:
    specs = cfn["Parameters"]
    problems = []
    for name in values:
        if name not in specs:
            problems.append(f"{name}: the template has no such parameter (remove it from {where})")
    for name, spec in specs.items():
        if name not in values and "Default" not in spec:
            problems.append(f"{name} is missing: {how.format(name=name)}")
        elif name in values:
            problem = check_value(name, spec, values[name])
            if problem:
                problems.append(problem)
    return problems or check_rules(values, cfn)


def refs(node) -> set:
    """The parameters a Rule (or any part of one) reads."""
    if isinstance(node, dict):
        return {node["Ref"]} if set(node) == {"Ref"} else set().union(*(refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node))
    return set()


def check_rules(values: dict, cfn: dict, about: Optional[str] = None, pending: frozenset = frozenset()) -> list:
    """The template's Rules; with `about`, only those that read it, and none of `pending` (the
    parameters still to be asked, whose values are not known yet)."""
    specs = cfn["Parameters"]
    problems = []
    for rule_name, rule in cfn.get("Rules", {}).items():
        read = refs(rule)
        if about is not None and about not in read or read & pending:
            continue
        if not evaluate(rule.get("RuleCondition", True), values, specs):
            continue
        for assertion in rule["Assertions"]:
            if not evaluate(assertion["Assert"], values, specs):
                problems.append(f"{rule_name}: {' '.join(str(assertion['AssertDescription']).split())}")
    return problems


def listed(value: str) -> list:
    return [v.strip() for v in value.split(",")] if value else []


def check_models(values: dict, endpoints: Optional[list] = None) -> list:
    """What CloudFormation would find only halfway through the deploy: a Model the stack would
    create twice (ModelName and a place of CatalogModelNames, or two places), and a place of
    CatalogModelNames with no catalog endpoint at it (its slot is never made, so the Model
    would be silently left out). `endpoints`: the catalog's, where the parameters do not list
    them (the CDK app derives them from the catalog)."""
    problems = []
    models = listed(values.get("CatalogModelNames", ""))
    endpoints = listed(values.get("CatalogEndpointNames", "")) if endpoints is None else endpoints
    seen = {values["ModelName"]: "ModelName"} if values.get("ModelName") else {}
    for place, model in enumerate(models, start=1):
        if not model:
            continue
        if model in seen:
            problems.append(f"CatalogModelNames: {model} is named twice ({seen[model]} and place {place} of "
                            "CatalogModelNames); the stack creates each Model once: give each endpoint a Model of its own")
        seen.setdefault(model, f"place {place} of CatalogModelNames")
        if place > len(endpoints) or not endpoints[place - 1]:
            problems.append(f"CatalogModelNames: place {place} names {model}, but the catalog has no endpoint at "
                            f"place {place} (its endpoints: {', '.join(e for e in endpoints if e) or 'none'}); "
                            "make catalog MODELS=\"<endpoint>=<model> ...\" puts each Model at its endpoint's place")
    return problems


class LookupFailed(Exception):
    """CloudFormation could not be asked about the stack (credentials, network, permission)."""


def stack_kind(described: dict, description: str) -> str:
    """'sam' or 'cdk' for a stack of this template, by the deploy that made it (SAM's has the
    template's parameters; the CDK app decides them when it synthesizes); 'other' for any other."""
    outputs = {o["OutputKey"] for o in described.get("Outputs", [])}
    if " ".join(str(described.get("Description", "")).split()) != description and not OUTPUTS <= outputs:
        return "other"
    parameters = {p["ParameterKey"] for p in described.get("Parameters", [])}
    return "sam" if "AsyncEndpointName" in parameters else "cdk"


def check_stack(session, name: str, deploy: str, elsewhere: str) -> Optional[str]:
    """Whether `deploy` ('sam' or 'cdk') may deploy stack `name`: it does not exist yet, or that
    deploy made it. `elsewhere`: how to pick another name. LookupFailed when CloudFormation
    cannot say."""
    from botocore.exceptions import BotoCoreError, ClientError
    region = session.region_name
    try:
        described = session.client("cloudformation").describe_stacks(StackName=name)["Stacks"][0]
    except ClientError as e:
        if "does not exist" in str(e):
            return None
        raise LookupFailed(f"stack {name}: cannot be looked up in {region} ({e})") from e
    except BotoCoreError as e:
        raise LookupFailed(f"stack {name}: cannot be looked up in {region} ({e}); the deploy needs the same "
                           "access (aws sts get-caller-identity shows whose credentials are found)") from e
    # A change set never executed leaves this status, and nothing deployed: both deploys start over.
    if described.get("StackStatus") == "REVIEW_IN_PROGRESS":
        return None
    kind = stack_kind(described, " ".join(str(template().get("Description", "")).split()))
    if kind == deploy:
        return None
    if kind == "other":
        description = " ".join(str(described.get("Description", "")).split())
        its = f"its description: {description[:80]!r}" if description else "it has no description"
        return (f"stack {name}: exists in {region} and is not a stack of this template ({its}); deploying would "
                f"replace what it holds: {elsewhere}")
    again = "make deploy" if kind == "sam" else f"make cdk-deploy STACK={name}"
    return (f"stack {name}: made by {DEPLOYS[kind]} in {region}; {DEPLOYS[deploy]} would take it over, and each "
            f"deploy would then undo the other's: deploy it with {again}, or {elsewhere}")


def stack_name_problem(name: str, elsewhere: str) -> Optional[str]:
    if STACK_NAME.fullmatch(name) is None:
        return (f"stack name {name!r}: a letter, then letters, digits and hyphens, at most 128 (CloudFormation's "
                f"rule): {elsewhere}")
    return None


def stack_problems(name: str, deploy: str, elsewhere: str) -> list:
    """The stack's name against CloudFormation's rule, then the stack itself (with a region)."""
    problem = stack_name_problem(name, elsewhere)
    if problem or not aws_region.caller_region():
        return [problem] if problem else []
    try:
        problem = check_stack(aws_region.session(out=None), name, deploy, elsewhere)
    except LookupFailed as e:
        return [str(e)]
    return [problem] if problem else []


def preflight(mode: str, stack_name: str, samconfig: Path, layer_dir: Path, params: str = "") -> list:
    problems = []
    if not aws_region.caller_region():
        problems.append(f"region: {aws_region.NoRegion()}")
    try:
        catalog_lines = catalog.layer_overrides(layer_dir)
    except catalog.CatalogError as e:
        problems.append(f"tool catalog: {e} (make catalog CATALOG=<file> checks and installs one; CATALOG=none "
                        "removes it)")
        catalog_lines = None
    if mode == "guided":
        return problems
    try:
        name = stack_name or saved(samconfig).get("stack_name", "")
    except tomllib.TOMLDecodeError as e:
        return problems + [f"{samconfig}: not TOML ({e})"]
    if not name:
        problems.append("stack name: none given; run make deploy-guided once (it saves one in samconfig.toml), "
                        "or make deploy STACK=<name>")
    else:
        problems += stack_problems(name, "sam", "choose another stack name (stack_name in samconfig.toml, or "
                                                "STACK=<name>)")
    # What sam deploy is given, in its order (a later value of a parameter wins).
    values: dict = {}
    sources = ((catalog.saved_overrides(samconfig), f"{samconfig}: parameter_overrides"),
               (catalog_lines, "tool catalog"), (params.split(), "PARAMS"))
    unread = catalog_lines is None
    for lines, source in sources:
        try:
            values.update(parameter_values(lines or []))
        except Exception as e:  # click's BadParameter: they do not parse as sam deploy parses them
            problems.append(f"{source} cannot be read ({e})")
            unread = True
    if not unread:
        where = "samconfig.toml or PARAMS" if params.strip() else "samconfig.toml"
        problems += check_parameters(values, template(), where=where) or check_models(values)
    return problems


def cdk_values(params: str) -> dict:
    """make's PARAMS as the CDK app takes them: Name=Value words (the last value of a name wins)."""
    values = {}
    for word in params.split():
        name, eq, value = word.partition("=")
        values[name] = value if eq else None
    return values


def preflight_cdk(params: str, stack_name: str = CDK_STACK) -> list:
    """The CDK app's deploy: the region, the stack, its context checked as the template checks
    the same parameters, and the catalog file ToolCatalog names (the app takes a path, the
    template a file name in the layer)."""
    problems = []
    if not aws_region.caller_region():
        problems.append(f"region: {aws_region.NoRegion()}")
    problems += stack_problems(stack_name, "cdk", "choose another stack name (STACK=<name>)")
    values = cdk_values(params)
    problems += [f"{name}: not Name=Value (PARAMS takes Name=Value words)" for name, v in values.items() if v is None]
    values = {name: v for name, v in values.items() if v is not None}
    path = values.pop("ToolCatalog", "")
    endpoints: list = []
    if path:
        try:
            endpoints, _ = catalog.names(catalog.load(ROOT / path), path)
        except catalog.CatalogError as e:
            problems.append(f"ToolCatalog: {e}")
        values["ToolCatalog"] = Path(path).name
    return problems + (check_parameters(values, template(), HOW_CDK, "PARAMS") or check_models(values, endpoints))


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("mode", choices=("deploy", "guided", "cdk"))
    parser.add_argument("--stack-name", default="")
    parser.add_argument("--params", default="", help="make's PARAMS, Name=Value words")
    parser.add_argument("--samconfig", type=Path, default=ROOT / "samconfig.toml")
    parser.add_argument("--layer-dir", type=Path, default=catalog.LAYER_DIR)
    args = parser.parse_args(argv)
    if args.mode == "cdk":
        problems = preflight_cdk(args.params, args.stack_name or CDK_STACK)
    else:
        problems = preflight(args.mode, args.stack_name, args.samconfig, args.layer_dir, args.params)
    target = {"guided": "deploy-guided", "deploy": "deploy", "cdk": "cdk-deploy"}[args.mode]
    return catalog.refuse(f"make {target} stopped before building:", problems) if problems else 0


if __name__ == "__main__":
    sys.exit(main())
