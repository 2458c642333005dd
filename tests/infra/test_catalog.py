"""The tool catalog's wiring: the template with a two-endpoint catalog as CloudFormation resolves it
(IAM grants every endpoint and pipeline, the rule matches every pipeline, the layer is attached and
TOOL_CATALOG set), the template without one exactly as before, and scripts/catalog.py's
derivation of the parameters from the catalog (infra/catalog.example.json) and its refusals."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from cloudformation import Deployed
from test_deployed import CFN, refusals

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import catalog  # noqa: E402

EXAMPLE = ROOT / "infra" / "catalog.example.json"
ARN = "arn:aws:sagemaker:us-east-1:123456789012"
# The parameters make catalog derives from infra/catalog.example.json.
CATALOG = {"ToolCatalog": "catalog.example.json",
           "CatalogEndpointNames": "mcp-doc-processor-async,mcp-churn-scorer-async",
           "CatalogPipelineNames": "mcp-intent-classifier-pipeline", "CatalogModelNames": ""}
TOOL_FUNCTIONS = ("McpToolsFunction", "GatewayTargetFunction")
GATEWAY = {"AgentCoreGatewayId": "gw-1234567890", "AgentCoreGatewayRoleArn": "arn:aws:iam::123456789012:role/gw"}


def grants(stack: Deployed, role: str) -> dict:
    """{action: set of resources} over the role's statements."""
    found: dict = {}
    for policy in stack.props(role)["Policies"]:
        for s in policy["PolicyDocument"]["Statement"]:
            actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
            resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
            for action in actions:
                found.setdefault(action, set()).update(json.dumps(r) if isinstance(r, dict) else r for r in resources)
    return found


def layers(stack: Deployed) -> dict:
    return {n: r for n, r in stack.resources.items() if r["Type"] == "AWS::Lambda::LayerVersion"}


# ---------------------------------------------------------------- the template


def test_the_example_derives_the_parameters_the_tests_deploy():
    endpoints, pipelines = catalog.names(catalog.load(EXAMPLE))
    assert catalog.overrides(EXAMPLE.name, endpoints, pipelines) == [f'{k}="{v}"' for k, v in CATALOG.items()]


def test_a_catalog_grants_each_endpoint_and_pipeline_beside_the_stacks_own():
    stack = Deployed(CFN, **CATALOG, **GATEWAY)
    granted = grants(stack, "McpToolsRole")
    endpoints = {f"{ARN}:endpoint/{e}" for e in ("doc-processor-async", "mcp-doc-processor-async",
                                                 "mcp-churn-scorer-async")}
    pipelines = {f"{ARN}:pipeline/{p}" for p in ("intent-classifier", "mcp-intent-classifier-pipeline")}
    assert granted["sagemaker:InvokeEndpointAsync"] == endpoints
    assert granted["sagemaker:DescribeEndpoint"] == endpoints
    assert granted["sagemaker:StartPipelineExecution"] == pipelines
    for action in ("sagemaker:DescribePipelineExecution", "sagemaker:ListPipelineExecutionSteps",
                   "sagemaker:DescribePipelineDefinitionForExecution", "sagemaker:StopPipelineExecution"):
        assert granted[action] == {f"{p}/execution/*" for p in pipelines}, action
    # gateway-target runs with the same role.
    assert stack.props("GatewayTargetFunction")["Role"] == stack.props("McpToolsFunction")["Role"]
    router = grants(stack, "PipelineRouterRole")
    # It lists the steps of exactly the runs it may describe (a callback's token is checked
    # against the run's waiting step), and nothing wider.
    for action in ("sagemaker:DescribePipelineExecution", "sagemaker:ListPipelineExecutionSteps"):
        assert router[action] == {f"{p}/execution/*" for p in pipelines}, action


def test_the_rule_routes_every_pipelines_runs():
    stack = Deployed(CFN, **CATALOG)
    pattern = stack.props("PipelineStatusRule")["EventPattern"]
    assert pattern["detail"]["pipelineArn"] == [f"{ARN}:pipeline/intent-classifier",
                                                f"{ARN}:pipeline/mcp-intent-classifier-pipeline"]
    # Routing every pipeline's runs needs no list, and reads any run.
    wide = Deployed(CFN, **CATALOG, NarrowEventsToPipeline="false")
    assert "pipelineArn" not in wide.props("PipelineStatusRule")["EventPattern"]["detail"]
    for action in ("sagemaker:DescribePipelineExecution", "sagemaker:ListPipelineExecutionSteps"):
        assert grants(wide, "PipelineRouterRole")[action] == {f"{ARN}:pipeline/*/execution/*"}, action


def test_the_catalogs_layer_is_attached_to_both_tool_functions():
    stack = Deployed(CFN, **CATALOG, **GATEWAY)
    (name, layer), = layers(stack).items()
    assert name.startswith("ToolCatalogLayer")
    assert layer["Properties"]["LayerName"] == "mcp-jobs-catalog"
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    for function in TOOL_FUNCTIONS:
        props = stack.props(function)
        assert props["Layers"] == [{"Ref": name}], function
        assert props["Environment"]["Variables"]["TOOL_CATALOG"] == "/opt/tool-catalog/catalog.example.json"
    for function in ("NotificationHandlerFunction", "PipelineRouterFunction"):
        assert "Layers" not in stack.props(function)
        assert "TOOL_CATALOG" not in stack.props(function)["Environment"]["Variables"]


def test_ten_names_each_get_their_grant():
    names = [f"model-{i}" for i in range(10)]
    stack = Deployed(CFN, CatalogEndpointNames=",".join(names))
    assert grants(stack, "McpToolsRole")["sagemaker:InvokeEndpointAsync"] == {
        f"{ARN}:endpoint/{n}" for n in ["doc-processor-async", *names]}


def test_without_a_catalog_nothing_changes():
    """The catalog's parameters at their defaults deploy today's stack: no layer, the same grants,
    the same rule, TOOL_CATALOG empty (no catalog)."""
    for parameters in ({}, GATEWAY, {"PipelineName": ""}, {"NarrowEventsToPipeline": "false"}):
        stack = Deployed(CFN, **parameters)
        assert not layers(stack)
        before = Deployed(without_catalog(CFN), **parameters)
        for name, resource in before.resources.items():
            if name in TOOL_FUNCTIONS:
                variables = stack.props(name)["Environment"]["Variables"]
                assert variables.pop("TOOL_CATALOG") == ""
                assert "Layers" not in stack.props(name)
            assert stack.resources[name] == resource, name
        assert set(stack.resources) == set(before.resources)


def without_catalog(cfn: dict) -> dict:
    """The template as it was before the catalog: its statements, rule entries, layer and
    variable taken out."""
    cfn = copy.deepcopy(cfn)
    for name in [n for n in cfn["Resources"] if n.startswith("ToolCatalogLayer")]:
        del cfn["Resources"][name]

    def strip(node):
        if isinstance(node, list):
            return [strip(n) for n in node if not catalog_node(n)]
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("TOOL_CATALOG", "Layers")}
        return node
    cfn["Resources"] = strip(cfn["Resources"])
    for name in ("ToolCatalog", "CatalogEndpointNames", "CatalogPipelineNames"):
        del cfn["Parameters"][name]
    return cfn


def catalog_node(node) -> bool:
    return isinstance(node, dict) and set(node) == {"Fn::If"} and (
        node["Fn::If"][0].startswith(("Catalog", "HasCatalog", "NarrowToCatalog")))


def test_catalog_pipelines_need_the_stacks_pipeline():
    assert refusals(**CATALOG) == []
    assert refusals(**CATALOG, PipelineName="") == ["PipelineForCatalogPipelines"]
    assert refusals(CatalogEndpointNames="a", PipelineName="") == []


def test_the_parameters_patterns_take_what_make_catalog_derives():
    import re
    for parameter, value in CATALOG.items():
        pattern = CFN["Parameters"][parameter]["AllowedPattern"]
        for element in value.split(",") if parameter != "ToolCatalog" else [value]:
            assert re.fullmatch(pattern, element), (parameter, element)
    assert not re.fullmatch(CFN["Parameters"]["ToolCatalog"]["AllowedPattern"], "../etc/passwd")
    assert not re.fullmatch(CFN["Parameters"]["CatalogEndpointNames"]["AllowedPattern"], "Doc-Processor")


# ---------------------------------------------------------------- scripts/catalog.py


def write(tmp_path: Path, content, name: str = "tools.json") -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def example() -> dict:
    return json.loads(EXAMPLE.read_text())


def test_each_name_once_in_the_catalogs_order():
    tools = example()
    second = copy.deepcopy(tools["async_tools"][0])
    second["name"] = "summarize_briefly"
    tools["async_tools"].append(second)
    assert catalog.names(tools) == (["mcp-doc-processor-async", "mcp-churn-scorer-async"],
                                    ["mcp-intent-classifier-pipeline"])
    assert catalog.names({"async_tools": tools["async_tools"][:1]}) == (["mcp-doc-processor-async"], [])


@pytest.mark.parametrize("change, message", [
    (lambda c: c["async_tools"][1].pop("endpoint"), "\n  score_churn_risk: (tool): missing field `endpoint`"),
    (lambda c: c["async_tools"][0].update(endpoint=7), "\n  summarize_document: endpoint: invalid type: integer `7`"),
    (lambda c: c["pipeline_tools"][0].pop("pipeline"),
     "\n  retrain_intent_classifier: (tool): missing field `pipeline`"),
    (lambda c: c["async_tools"][0].pop("name"), "\n  async_tools[0]: (tool): missing field `name`"),
    # What the template's CatalogEndpointNames pattern refuses, mcp-tools' check refuses first.
    (lambda c: c["async_tools"][1].update(endpoint="Churn-Scorer"),
     "\n  score_churn_risk: endpoint: must be a SageMaker endpoint name as its ARN spells it"),
    (lambda c: c["async_tools"][1].update(endpoint="churn_scorer"),
     "\n  score_churn_risk: endpoint: must be a SageMaker endpoint name as its ARN spells it"),
    (lambda c: c["pipeline_tools"][0].update(pipeline="Intent-Pipeline"),
     "\n  retrain_intent_classifier: pipeline: must be a SageMaker pipeline name as its ARN spells it"),
    (lambda c: c.update(async_tools={}), "\n  async_tools: invalid type: map, expected a sequence"),
    (lambda c: c.update(async_tools=[], pipeline_tools=[]), "\n  async_tools: the catalog declares no tool"),
    (lambda c: c.update(async_tools=[dict(c["async_tools"][0], name=f"t{i}", endpoint=f"e-{i}") for i in range(11)]),
     ": 11 endpoints; the template grants at most 10"),
])
def test_a_catalog_without_what_the_template_needs_is_refused_naming_the_tool_and_field(tmp_path, change, message):
    tools = example()
    change(tools)
    path = write(tmp_path, tools)
    with pytest.raises(catalog.CatalogError) as refused:
        catalog.install(path, tmp_path / "layer")
    said = str(refused.value)
    assert message in said, said
    assert said.count(str(path)) == 1, said
    assert not (tmp_path / "layer" / "tool-catalog").exists()


def test_a_name_the_check_takes_the_templates_pattern_takes():
    """One set of rules: every endpoint and pipeline name mcp-tools' check takes is one the
    template's parameters take, and those it refuses the template refuses too."""
    import re
    endpoint = CFN["Parameters"]["CatalogEndpointNames"]["AllowedPattern"]
    pipeline = CFN["Parameters"]["CatalogPipelineNames"]["AllowedPattern"]
    names = ["a", "doc-processor-2", "a--b", "A", "Doc", "doc_proc", "-doc", "doc-", "x" * 63, "x" * 64, "d.p"]
    for name in names:
        tools = {"async_tools": [{"name": "t", "description": "d", "endpoint": name,
                                  "input_schema": {"type": "object"}}],
                 "pipeline_tools": [{"name": "p", "description": "d", "pipeline": name}]}
        path = ROOT / ".local" / "name-check.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(tools))
        try:
            catalog.check(path)
            taken = True
        except catalog.CatalogError:
            taken = False
        template = bool(re.fullmatch(endpoint, name)) and bool(re.fullmatch(pipeline, name))
        assert taken == template, (name, taken, template)


def test_check_prints_the_tools_the_catalog_serves(capsys):
    assert catalog.main(["check", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"the tool catalog {EXAMPLE} serves:",
        "  summarize_document: async tool on endpoint mcp-doc-processor-async",
        "  score_churn_risk: async tool on endpoint mcp-churn-scorer-async",
        "  retrain_intent_classifier: pipeline tool on mcp-intent-classifier-pipeline",
    ]


def test_a_file_that_is_not_json_is_refused(tmp_path):
    path = write(tmp_path, '{"async_tools": [')
    with pytest.raises(catalog.CatalogError, match=r"tools\.json is refused:\n  is not JSON: EOF"):
        catalog.install(path, tmp_path / "layer")
    with pytest.raises(catalog.CatalogError, match="the catalog declares no tool"):
        catalog.install(write(tmp_path, "[]"), tmp_path / "layer")
    with pytest.raises(catalog.CatalogError, match="cannot be read"):
        catalog.install(tmp_path / "missing.json", tmp_path / "layer")


def test_install_replaces_the_layers_catalog_and_deploys_follow_it(tmp_path):
    layer = tmp_path / "layer"
    assert catalog.layer_overrides(layer) == ['ToolCatalog=""', 'CatalogEndpointNames=""', 'CatalogPipelineNames=""',
                                              'CatalogModelNames=""']
    first = write(tmp_path, {"async_tools": [example()["async_tools"][0]]}, "first.json")
    assert catalog.install(first, layer)[0] == 'ToolCatalog="first.json"'
    assert catalog.install(EXAMPLE, layer) == [f'{k}="{v}"' for k, v in CATALOG.items()]
    assert [p.name for p in (layer / "tool-catalog").iterdir()] == ["catalog.example.json"]
    assert (layer / "tool-catalog" / "catalog.example.json").read_bytes() == EXAMPLE.read_bytes()
    assert catalog.layer_overrides(layer) == [f'{k}="{v}"' for k, v in CATALOG.items()]
    catalog.clear(layer)
    assert layer.is_dir() and not any(layer.iterdir())
    assert catalog.layer_overrides(layer)[0] == 'ToolCatalog=""'


def test_a_file_name_the_template_would_refuse_is_refused(tmp_path):
    path = write(tmp_path, example(), "my tools.json")
    with pytest.raises(catalog.CatalogError, match="becomes the ToolCatalog parameter"):
        catalog.install(path, tmp_path / "layer")


def test_deploys_pass_the_saved_overrides_first(tmp_path, capsys):
    samconfig = tmp_path / "samconfig.toml"
    samconfig.write_text('version = 0.1\n[default.deploy.parameters]\nstack_name = "jobs"\n'
                         'parameter_overrides = "AsyncEndpointName=\\"docs\\" CatalogEndpointNames=\\"old\\""\n')
    layer = tmp_path / "layer"
    catalog.install(EXAMPLE, layer)
    assert catalog.main(["--layer-dir", str(layer), "overrides", "--samconfig", str(samconfig)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # sam deploy takes the last value given for a parameter: the catalog's.
    assert lines == ['AsyncEndpointName="docs" CatalogEndpointNames="old"',
                     *(f'{k}="{v}"' for k, v in CATALOG.items())]
    from samcli.cli.types import CfnParameterOverridesType
    parsed = CfnParameterOverridesType().convert(tuple(lines), None, None)
    assert parsed == {"AsyncEndpointName": "docs", **CATALOG}


def test_the_cli_says_what_is_wrong_and_exits_2(tmp_path, capsys):
    tools = example()
    del tools["pipeline_tools"][0]["pipeline"]
    path = write(tmp_path, tools)
    assert catalog.main(["--layer-dir", str(tmp_path / "layer"), "install", str(path)]) == 2
    # The file named once, then each mistake on a line of its own.
    assert capsys.readouterr().err == (f"error: the tool catalog {path} is refused:\n"
                                       "  retrain_intent_classifier: (tool): missing field `pipeline`\n")



def test_models_go_in_their_endpoints_places_and_deploys_follow_them(tmp_path):
    layer = tmp_path / "layer"
    lines = catalog.install(EXAMPLE, layer, "mcp-churn-scorer-async=churn-xgb-7")
    # The first endpoint exists already (an empty place), the second is created from its Model.
    assert lines[-1] == 'CatalogModelNames=",churn-xgb-7"'
    assert catalog.layer_overrides(layer)[-1] == 'CatalogModelNames=",churn-xgb-7"'
    both = catalog.install(EXAMPLE, layer, "mcp-doc-processor-async=doc-v3 mcp-churn-scorer-async=churn-xgb-7")
    assert both[-1] == 'CatalogModelNames="doc-v3,churn-xgb-7"'
    # The Models stay beside the layer, not in what Lambda ships.
    assert [p.name for p in (layer / "tool-catalog").iterdir()] == ["catalog.example.json"]
    catalog.install(EXAMPLE, layer)
    assert catalog.layer_overrides(layer)[-1] == 'CatalogModelNames=""'


@pytest.mark.parametrize("models, message", [
    ("mcp-doc-processor-async", "'mcp-doc-processor-async' is not ENDPOINT=MODEL"),
    ("other-endpoint=m", "'other-endpoint' is not an endpoint of"),
    ("mcp-doc-processor-async=a,mcp-doc-processor-async=b", "'mcp-doc-processor-async' is given twice"),
    ("mcp-doc-processor-async=doc_model", "'doc_model' (for mcp-doc-processor-async) is not a SageMaker Model name"),
])
def test_a_models_mistake_is_refused_naming_it(tmp_path, models, message):
    with pytest.raises(catalog.CatalogError) as refused:
        catalog.install(EXAMPLE, tmp_path / "layer", models)
    assert message in str(refused.value)
    assert not (tmp_path / "layer" / "tool-catalog").exists()
