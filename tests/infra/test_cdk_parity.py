"""The CDK construct (infra/cdk) held to the SAM template: for each set of parameter values, the
synthesized stack holds the same resources under the same logical ids, with the same properties,
and the same outputs, as the template deploys for those values (cloudformation.Deployed: the
conditions decided, Fn::If and parameters resolved). What the template's Rules refuse, the
construct refuses; its prop table is the template's Parameters; cfn-lint passes on what it
synthesizes.

Both sides go through the same normalisation, and only where a difference means nothing to
CloudFormation:
- tool metadata: resource Metadata (SAM's build hints, cfn-lint config, CDK's paths and assets),
  the CDKMetadata resource and CDK's bootstrap parameter and rule, a function's Code, SAM's
  `lambda:createdBy` tag;
- a resource's Condition (decided already on both sides);
- pseudo parameters resolved (Deployed does it on both sides), and Fn::Sub and Fn::Join written
  as one canonical concatenation (`!Sub a-${X}` and `!Join ["", [a-, !Ref X]]` are one string);
- a number and its decimal string are one value (CloudFormation passes Number parameters as
  strings anyway);
- in IAM policy documents, a single Action, Resource, principal or condition value and the
  one-element list of it are one value, and those lists are compared as sets (statements are
  not: their order is compared as written);
- Tags compared by Key, not by position;
- DependsOn compared as a set, without the names a Ref or GetAtt in the resource already waits
  for (CDK adds the role a function's GetAtt names);
- DeletionPolicy and UpdateReplacePolicy Delete are CloudFormation's default: written or not,
  the same;
- the dashboard's body compared as the JSON it is (CDK writes it compact, the template by hand);
- the tool catalog's layer: SAM names it ToolCatalogLayer and a hash of its content's location,
  CDK ToolCatalogLayer, and its Content (like a function's Code) is not compared.

The construct takes the tool catalog itself where the template takes the names make catalog
derives from it: a catalog case gives the CDK side the file (CDK_VALUES).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, lint

from cloudformation import PSEUDO, REQUIRED, Deployed
from test_catalog import CATALOG, EXAMPLE
from test_deployed import AUTH_CASES, CASES, CFN, COGNITO, ISSUER, ROLE, URL_AUTH, refusals

ROOT = Path(__file__).resolve().parents[2]
CDK = ROOT / "infra" / "cdk"
DRIVER = CDK / "dist" / "bin" / "synth-cases.js"
# Touched after each build (make cdk-check does the same): tsc leaves unchanged outputs alone.
BUILT = CDK / "dist" / ".built"
BINARIES = ("notification-handler", "pipeline-router", "mcp-tools", "gateway-target", "event-delivery")

GATEWAY = {"AgentCoreGatewayId": "gw-1234567890", "AgentCoreGatewayRoleArn": ROLE}
# The template's conditions (test_deployed's wiring and auth cases), then each remaining option.
PARITY_CASES = {
    "defaults": {},
    **{f"wiring: {name}": parameters for name, parameters in CASES.items() if parameters},
    **{f"auth: {name}": parameters for name, (parameters, _) in AUTH_CASES.items() if parameters},
    "auth: Cognito, own callback URLs": {
        **COGNITO, "OAuthCallbackUrls": "http://localhost:3030/callback,http://localhost:8765/callback"},
    "gateway target": GATEWAY,
    "gateway target, own name, OAuth, tracing": {**GATEWAY, **URL_AUTH, "OAuthIssuer": ISSUER,
                                                 "AgentCoreTargetName": "ml-jobs", "TracingMode": "Active"},
    "endpoint, every setting": {
        "ModelName": "doc-classifier", "ModelExecutionRoleArn": ROLE, "EndpointInstanceType": "ml.g5.xlarge",
        "EndpointInitialInstanceCount": "2", "EndpointMinInstanceCount": "1", "EndpointMaxInstanceCount": "8",
        "TargetBacklogPerInstance": "3", "MaxConcurrentInvocationsPerInstance": "16", "VariantName": "blue",
        "EndpointKmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k", "OutputPrefix": "async/out/",
        "FailurePrefix": "async/err/", "SuccessTopicArn": "arn:aws:sns:us-east-1:123456789012:their-success"},
    "completion events, default bus, gateway target": {**GATEWAY, "CompletionEvents": "default-bus"},
    "completion events, stack bus, webhook": {
        "CompletionEvents": "stack-bus", "CompletionWebhookUrl": "https://hooks.example.com/jobs",
        "CompletionWebhookApiKeyName": "x-hook-key", "CompletionWebhookApiKeySecret": "mcp/webhook-key",
        "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:alarms"},
    "completion events, default bus, webhook": {
        "CompletionEvents": "default-bus", "CompletionWebhookUrl": "https://hooks.example.com/jobs",
        "CompletionWebhookApiKeySecret": "mcp/webhook-key"},
    "inference only, keys, the model role's policy": {
        "PipelineName": "", "ModelName": "doc-classifier",
        "ModelExecutionRoleArn": "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1",
        "EndpointKmsKeyId": "1234abcd-12ab-34cd-56ef-1234567890ab",
        "IoBucketKmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/mrk-0123456789abcdef",
        "AlarmEmail": "oncall@example.com"},
    "endpoint, own role policy, bucket key, gateway": {
        **GATEWAY, "ModelName": "doc-classifier", "ModelExecutionRoleArn": ROLE, "AttachModelRolePolicy": "false",
        "IoBucketKmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/k-1"},
    "a shared deployment": {
        **GATEWAY, "DefaultRequestTtlSecs": "7200", "TrainingInputPrefixes": "s3://datasets/curated/,s3://other/x/",
        "TrainingInstanceTypes": "ml.m5.xlarge,ml.g5.2xlarge", "CallerSubmitsPerMinute": "0", "CallerRunsPerHour": "3",
        "CallerWaitsMax": "8", "CallerReadsPerMinute": "1200", "ToolsReservedConcurrency": "25"},
    "every other setting": {
        "PipelineParameters": "input_data_uri=TrainingData,max_epochs=Epochs", "UseSqsBuffer": "true",
        "SqsBatchSize": "100", "SqsBatchingWindowSecs": "1", "NarrowEventsToPipeline": "false", "ResultTtlSecs": "7200", "InlineResultMaxBytes": "1024",
        "AllowedOrigins": "https://app.example.com", "Approvers": "arn:aws:iam::123456789012:role/Reviewer",
        "ApprovalGate": "true", "ApprovalsVia": "elicitation",
        "LogRetentionDays": "365",
        "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:alarms", "ApplicationLogLevel": "DEBUG",
        "SystemLogLevel": "INFO", "TracingMode": "Active", "FailureRateThreshold": "0.5"},
    # infra/catalog.example.json: two endpoints and a pipeline beside the stack's own.
    "tool catalog, two endpoints, gateway target": {**GATEWAY, **CATALOG},
    "tool catalog, every pipeline's runs": {**CATALOG, "NarrowEventsToPipeline": "false"},
    # Both of the catalog's endpoints created by the stack, each with its scaling and alarm; then
    # the second only, the first existing already.
    "tool catalog, two models": {**CATALOG, "CatalogModelNames": "doc-processor-v3,churn-xgb-7",
                                 "ModelExecutionRoleArn": ROLE},
    "tool catalog, one model, an existing endpoint, own role policy": {
        **CATALOG, "CatalogModelNames": ",churn-xgb-7", "ModelExecutionRoleArn": ROLE,
        "AttachModelRolePolicy": "false", "EndpointKmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k"},
    "catalog names without a catalog": {"CatalogEndpointNames": "churn-scorer,doc-processor-async",
                                        "CatalogPipelineNames": "intent-classifier-v2"},
}
# What the CDK side is given instead, case by case: the catalog itself, whose names it derives.
CDK_VALUES = {case: {"ToolCatalog": str(EXAMPLE), "CatalogEndpointNames": "", "CatalogPipelineNames": ""}
              for case, parameters in PARITY_CASES.items() if parameters.get("ToolCatalog")}
# What the template's Rules refuse (test_deployed checks the same on the template), and the rule.
REFUSED = {
    "OAuth with AWS_IAM": ({"OAuthIssuer": ISSUER}, "UrlAuthNoneForOAuth"),
    "user pool with AWS_IAM": ({"CreateUserPool": "true", "UserPoolDomainPrefix": "acme"}, "UrlAuthNoneForOAuth"),
    "user pool without a domain": ({**URL_AUTH, "CreateUserPool": "true"}, "DomainPrefixForUserPool"),
    "user pool and an issuer": ({**COGNITO, "OAuthIssuer": ISSUER}, "DomainPrefixForUserPool"),
    "user pool and scopes": ({**COGNITO, "OAuthReadScope": "jobs:read"}, "DomainPrefixForUserPool"),
    "user pool and an approval scope": ({**COGNITO, "OAuthApproveScope": "jobs:approve"}, "DomainPrefixForUserPool"),
    "NONE without a token": (URL_AUTH, "BearerTokenForUrlAuthNone"),
    "model without its role": ({"ModelName": "m"}, "ExecutionRoleForEndpoint"),
    "catalog models without their role": ({"CatalogEndpointNames": "a", "CatalogModelNames": "m"},
                                          "ExecutionRoleForCatalogModels"),
    "gateway without its role": ({"AgentCoreGatewayId": "gw-1234567890"}, "GatewayRoleForGatewayTarget"),
    "webhook without events": ({"CompletionWebhookUrl": "https://hooks.example.com/jobs",
                                "CompletionWebhookApiKeySecret": "k"}, "WebhookNeedsEventsAndKey"),
    "webhook without a key": ({"CompletionEvents": "stack-bus", "CompletionWebhookUrl": "https://hooks.example.com/jobs"},
                              "WebhookNeedsEventsAndKey"),
    "catalog pipelines without PipelineName": ({"PipelineName": "", "CatalogPipelineNames": "p"},
                                               "PipelineForCatalogPipelines"),
}
LINTED = ["defaults", "wiring: endpoint, existing topics, SQS buffer, KMS key", "auth: oauth, Cognito",
          "inference only, keys, the model role's policy", "a shared deployment",
          "gateway target, own name, OAuth, tracing", "every other setting", "completion events, stack bus, webhook",
          "tool catalog, two endpoints, gateway target", "tool catalog, two models"]


# ---------------------------------------------------------------- the CDK side: one node process


def stale() -> bool:
    if not BUILT.exists() or not DRIVER.exists():
        return True
    sources = [CDK / "tsconfig.json", CDK / "package-lock.json",
               *(p for d in ("lib", "bin", "test") for p in (CDK / d).rglob("*.ts"))]
    return max(p.stat().st_mtime for p in sources) > BUILT.stat().st_mtime


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> dict:
    """{"parameters": the construct's parameter table, "cases": {name: {"template"} | {"error"}}}."""
    node = shutil.which("node")
    assert node, "node is missing (Node.js 20 or newer): the CDK parity test needs it"
    assert (CDK / "node_modules" / "aws-cdk-lib").is_dir(), \
        "infra/cdk's packages are not installed: run make cdk-check (npm ci --prefix infra/cdk)"
    if stale():
        subprocess.run([node, str(CDK / "node_modules" / "typescript" / "bin" / "tsc"), "-p", str(CDK)], check=True)
        BUILT.touch()
    work = tmp_path_factory.mktemp("cdk")
    # The functions' code is not what is compared: a stub bootstrap stands in for each build.
    for binary in BINARIES:
        (work / "functions" / binary).mkdir(parents=True)
        (work / "functions" / binary / "bootstrap").write_text("#!/bin/sh\n")
    cases = {**PARITY_CASES, **{f"refused: {name}": parameters for name, (parameters, _) in REFUSED.items()}}
    request = {"functionsDir": str(work / "functions"),
               "cases": {name: {**REQUIRED, **parameters, **CDK_VALUES.get(name, {})} for name, parameters in cases.items()}}
    (work / "request.json").write_text(json.dumps(request))
    subprocess.run([node, str(DRIVER), str(work / "request.json"), str(work / "result.json")], check=True,
                   env={**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true"})
    return json.loads((work / "result.json").read_text())


def template_of(synthesized: dict, case: str) -> dict:
    result = synthesized["cases"][case]
    assert "template" in result, f"the construct refused {case!r}: {result.get('error')}"
    return result["template"]


# ---------------------------------------------------------------- normalisation

REFERENCE = re.compile(r"\$\{([^}]+)\}")
CDK_ONLY = {"CDKMetadata"}
IAM_LISTS = ("Action", "NotAction", "Resource", "NotResource")


def concatenation(parts: list):
    """Adjacent strings merged, empty ones dropped: a plain string, or one canonical Fn::Join."""
    merged: list = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif part != "":
            merged.append(part)
    if not merged:
        return ""
    if len(merged) == 1 and isinstance(merged[0], str):
        return merged[0]
    return {"Fn::Join": ["", merged]}


def sub_parts(text: str, variables: dict) -> list:
    parts, at = [], 0
    for match in REFERENCE.finditer(text):
        parts.append(text[at:match.start()])
        name = match.group(1)
        if name.startswith("!"):
            parts.append("${" + name[1:] + "}")
        elif name in variables:
            parts.append(variables[name])
        elif name in PSEUDO:
            parts.append(PSEUDO[name])
        elif "." in name:
            resource, attribute = name.split(".", 1)
            parts.append({"Fn::GetAtt": [resource, attribute]})
        else:
            parts.append({"Ref": name})
        at = match.end()
    parts.append(text[at:])
    return parts


def flat(node) -> list:
    """A canonical value as concatenation parts."""
    if isinstance(node, dict) and set(node) == {"Fn::Join"} and node["Fn::Join"][0] == "":
        return list(node["Fn::Join"][1])
    return [node]


def canonical(node):
    if isinstance(node, list):
        return [canonical(n) for n in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, (int, float)):
        return str(int(node)) if float(node).is_integer() else repr(float(node))
    if not isinstance(node, dict):
        return node
    if set(node) == {"Fn::Join"}:
        delimiter, values = node["Fn::Join"]
        values = canonical(values)
        if isinstance(values, list):
            parts = []
            for i, value in enumerate(values):
                parts += ([delimiter] if i else []) + flat(value)
            return concatenation(parts)
    if set(node) == {"Fn::Sub"}:
        argument = node["Fn::Sub"]
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        variables = {k: canonical(v) for k, v in variables.items()}
        return concatenation([p for part in sub_parts(text, variables) for p in flat(part)])
    return {k: canonical(v) for k, v in node.items()}


def as_set(value) -> list:
    values = value if isinstance(value, list) else [value]
    return sorted(values, key=lambda v: json.dumps(v, sort_keys=True))


def policies(node):
    """IAM documents with their one-or-many values as sets, wherever they appear."""
    if isinstance(node, list):
        return [policies(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: policies(v) for k, v in node.items()}
    if isinstance(node.get("Statement"), list):
        node["Statement"] = [statement(s) for s in node["Statement"]]
    return node


def statement(s):
    if not isinstance(s, dict):
        return s
    s = dict(s)
    for key in IAM_LISTS:
        if key in s:
            s[key] = as_set(s[key])
    for key in ("Principal", "NotPrincipal"):
        if isinstance(s.get(key), dict):
            s[key] = {k: as_set(v) for k, v in s[key].items()}
    if isinstance(s.get("Condition"), dict):
        s["Condition"] = {op: {k: as_set(v) for k, v in tests.items()} for op, tests in s["Condition"].items()}
    return s


def references(node) -> set:
    if isinstance(node, list):
        return set().union(*(references(n) for n in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = set()
    if set(node) == {"Ref"}:
        found.add(node["Ref"])
    if set(node) == {"Fn::GetAtt"}:
        found.add(node["Fn::GetAtt"][0])
    return found | references(list(node.values()))


def dashboard_json(body):
    """A dashboard body, references and all, as the JSON it holds."""
    holes = {}

    def hole(part):
        key = f"@@{len(holes)}@@"
        holes[key] = part
        return key
    text = "".join(p if isinstance(p, str) else hole(p) for p in flat(body))
    parsed = json.loads(text)

    def fill(node):
        if isinstance(node, list):
            return [fill(n) for n in node]
        if isinstance(node, dict):
            return {k: fill(v) for k, v in node.items()}
        if isinstance(node, str) and "@@" in node:
            return concatenation([holes.get(p, p) for p in re.split(r"(@@\d+@@)", node)])
        return node
    return fill(parsed)


def resource(logical_id: str, r: dict) -> dict:
    r = {k: v for k, v in r.items() if k not in ("Metadata", "Condition")}
    r = policies(canonical(r))
    props = r.get("Properties", {})
    if r["Type"] == "AWS::Lambda::Function":
        props.pop("Code", None)
    if r["Type"] == "AWS::Lambda::LayerVersion":
        props.pop("Content", None)
    if isinstance(props.get("Tags"), list):
        tags = sorted((t for t in props["Tags"] if t.get("Key") != "lambda:createdBy"), key=lambda t: t["Key"])
        props["Tags"] = tags
        if not tags:
            del props["Tags"]
    if r["Type"] == "AWS::CloudWatch::Dashboard":
        props["DashboardBody"] = dashboard_json(props["DashboardBody"])
    for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
        if r.get(policy) == "Delete":
            del r[policy]
    if "DependsOn" in r:
        waits = set(as_set(r["DependsOn"])) - references(props) - {logical_id}
        r.pop("DependsOn")
        if waits:
            r["DependsOn"] = sorted(waits)
    return r


SAM_LAYER = re.compile(r"^ToolCatalogLayer[0-9a-f]{10}$")


def unhashed(node):
    """SAM's layer's logical id (ToolCatalogLayer and a hash) as CDK's, wherever it appears."""
    if isinstance(node, list):
        return [unhashed(n) for n in node]
    if isinstance(node, dict):
        return {("ToolCatalogLayer" if SAM_LAYER.match(k) else k): unhashed(v) for k, v in node.items()}
    return "ToolCatalogLayer" if isinstance(node, str) and SAM_LAYER.match(node) else node


def view(stack: Deployed) -> dict:
    stack.resources = unhashed(stack.resources)
    return {"Resources": {n: resource(n, r) for n, r in stack.resources.items() if n not in CDK_ONLY},
            "Outputs": {n: canonical({k: v for k, v in o.items() if k != "Condition"}) for n, o in stack.outputs.items()}}


def sam_view(case: str) -> dict:
    return view(Deployed(CFN, **PARITY_CASES[case]))


def cdk_view(template: dict) -> dict:
    # Nothing is left for CloudFormation to decide: no parameters but CDK's bootstrap version.
    assert set(template.get("Parameters", {})) <= {"BootstrapVersion"}, template.get("Parameters")
    assert set(template.get("Conditions", {})) <= {"CDKMetadataAvailable"}, template.get("Conditions")
    assert set(template.get("Rules", {})) <= {"CheckBootstrapVersion"}, template.get("Rules")
    assert "Fn::If" not in json.dumps(template)
    return view(Deployed({**template, "Parameters": {}, "Conditions": {}}))


# ---------------------------------------------------------------- comparison


def differences(sam, cdk, path: str) -> list:
    if isinstance(sam, dict) and isinstance(cdk, dict):
        found = []
        for key in sorted(set(sam) | set(cdk)):
            where = f"{path}.{key}" if path else key
            if key not in cdk:
                found.append(f"{where}: SAM has {short(sam[key])}, CDK has nothing")
            elif key not in sam:
                found.append(f"{where}: CDK has {short(cdk[key])}, SAM has nothing")
            else:
                found += differences(sam[key], cdk[key], where)
        return found
    if isinstance(sam, list) and isinstance(cdk, list):
        if len(sam) != len(cdk):
            longer, shorter, side = (sam, cdk, "SAM") if len(sam) > len(cdk) else (cdk, sam, "CDK")
            extra = extra_items(longer, shorter)
            if extra is not None:
                other = "CDK" if side == "SAM" else "SAM"
                return [f"{path}[{i}]: {side} has {short(longer[i])}, {other} has nothing" for i in extra]
        found = []
        for i, (a, b) in enumerate(zip(sam, cdk)):
            found += differences(a, b, f"{path}[{i}]")
        if len(sam) != len(cdk):
            found.append(f"{path}: SAM has {len(sam)} items, CDK {len(cdk)}")
        return found
    if sam != cdk:
        return [f"{path}: SAM has {short(sam)}, CDK has {short(cdk)}"]
    return []


def extra_items(longer: list, shorter: list):
    """The indexes of `longer` that, taken out, leave `shorter` (in order); None when none do."""
    extra, j = [], 0
    for i, item in enumerate(longer):
        if j < len(shorter) and item == shorter[j]:
            j += 1
        else:
            extra.append(i)
    return extra if j == len(shorter) else None


def short(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."


def compare(sam: dict, cdk: dict) -> list:
    problems = []
    for section in ("Resources", "Outputs"):
        for name in sorted(set(sam[section]) - set(cdk[section])):
            problems.append(f"{section} {name}: in SAM ({sam[section][name].get('Type', 'output')}), not in CDK")
        for name in sorted(set(cdk[section]) - set(sam[section])):
            problems.append(f"{section} {name}: in CDK ({cdk[section][name].get('Type', 'output')}), not in SAM")
        for name in sorted(set(sam[section]) & set(cdk[section])):
            problems += [f"{section} {name}: {d}" for d in differences(sam[section][name], cdk[section][name], "")]
    return problems


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("case", list(PARITY_CASES))
def test_the_construct_deploys_what_the_template_deploys(synthesized, case):
    sam, cdk = sam_view(case), cdk_view(template_of(synthesized, case))
    assert len(sam["Resources"]) > 30
    problems = compare(sam, cdk)
    if problems:
        pytest.fail(f"{case}: the CDK stack differs from the SAM stack:\n" + "\n".join(problems), pytrace=False)


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_construct_refuses_what_the_rules_refuse(synthesized, case):
    parameters, rule = REFUSED[case]
    assert refusals(**parameters) == [rule]
    result = synthesized["cases"][f"refused: {case}"]
    assert "error" in result, f"the construct synthesized {case!r}, which the template's {rule} refuses"
    assert f"{rule}:" in result["error"], result["error"]


def test_the_props_mirror_the_templates_parameters(synthesized):
    table = synthesized["parameters"]
    assert set(table) == set(CFN["Parameters"])
    kinds = {"Number": "number", "CommaDelimitedList": "list"}
    for name, parameter in CFN["Parameters"].items():
        spec = table[name]
        boolean = parameter.get("AllowedValues") == ["true", "false"]
        assert spec["kind"] == ("boolean" if boolean else kinds.get(parameter["Type"], "string")), name
        assert spec.get("default") == (canonical(parameter["Default"]) if "Default" in parameter else None), name
        assert spec.get("pattern") == parameter.get("AllowedPattern"), name
        allowed = parameter.get("AllowedValues")
        assert spec.get("allowed") == (canonical(allowed) if allowed else None), name
        for bound, key in (("min", "MinValue"), ("max", "MaxValue")):
            assert spec.get(bound) == parameter.get(key), (name, bound)


@pytest.mark.parametrize("case", LINTED)
def test_cfn_lint_passes_on_the_synthesized_template(synthesized, case):
    # W3005: CDK writes DependsOn on a function's role, which its GetAtt already waits for.
    matches = lint(json.dumps(template_of(synthesized, case)),
                   config=ManualArgs(regions=["us-east-1"], ignore_checks=["W3005"]))
    assert not matches, "\n".join(str(m) for m in matches)


def test_the_normalisation_still_tells_values_apart():
    assert canonical({"Fn::Sub": "${AWS::StackName}-x"}) == canonical({"Fn::Join": ["", ["mcp-jobs", "-x"]]})
    assert canonical({"Fn::Sub": "a-${Fn}"}) == canonical({"Fn::Join": ["-", ["a", {"Ref": "Fn"}]]})
    assert canonical({"Fn::Sub": "a-${Fn.Arn}"}) != canonical({"Fn::Sub": "a-${Fn}"})
    assert canonical(4) == canonical("4") and canonical(0.2) == canonical("0.2") and canonical(1) != canonical("1.5")
    assert canonical(True) != canonical("true")
    one, many = {"Statement": [{"Action": "a"}]}, {"Statement": [{"Action": ["a", "b"]}]}
    assert policies(one) == policies({"Statement": [{"Action": ["a"]}]}) and policies(one) != policies(many)
    assert resource("X", {"Type": "T", "DependsOn": ["Y"], "Properties": {}})["DependsOn"] == ["Y"]
    assert "DependsOn" not in resource("X", {"Type": "T", "DependsOn": "Y", "Properties": {"P": {"Ref": "Y"}}})
    assert compare({"Resources": {"X": {"Type": "T", "DeletionPolicy": "Retain"}}, "Outputs": {}},
                   {"Resources": {"X": {"Type": "T"}}, "Outputs": {}}) == [
        'Resources X: DeletionPolicy: SAM has "Retain", CDK has nothing']
