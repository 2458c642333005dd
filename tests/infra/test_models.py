"""A catalog's endpoints created by the stack from Model names (CatalogModelNames): each place of
CatalogEndpointNames with a Model gets its own endpoint, wired and scaling to zero as ModelName's
is, and a place left empty stays an endpoint that exists already. The ten slots are one slot
written ten times: each is slot 1 with its index."""

from __future__ import annotations

import json
import re

import pytest
from cfnlint.decode import decode

from cloudformation import ROOT, Deployed
from test_deployed import CFN, ROLE, refusals

SOURCE, _ = decode(str(ROOT / "infra" / "template.yaml"))
SLOT_PARTS = ("Config", "", "ScalableTarget", "BacklogScalingPolicy", "ScaleOutFromZeroPolicy",
              "HasBacklogWithoutCapacityAlarm")
TWO = {"ToolCatalog": "catalog.json", "CatalogEndpointNames": "doc-processor-async,churn-scorer-async",
       "CatalogModelNames": "doc-processor-v3,churn-xgb-7", "ModelExecutionRoleArn": ROLE}


def slot(i: int) -> str:
    """Slot i's resources and condition, as JSON with its index written as #."""
    resources = {f"CatalogEndpoint#{part}": SOURCE["Resources"][f"CatalogEndpoint{i}{part}"] for part in SLOT_PARTS}
    text = json.dumps([resources, SOURCE["Conditions"][f"CatalogModel{i}"]], sort_keys=True)
    text = re.sub(rf"CatalogEndpoint{i}(?![0-9])", "CatalogEndpoint#", text)
    text = re.sub(rf"CatalogModel{i}(?![0-9])", "CatalogModel#", text)
    # The place each slot reads from the lists (Fn::Select's index).
    return text.replace(f'{{"Fn::Select": [{i - 1}, ', '{"Fn::Select": [#, ')


@pytest.mark.parametrize("i", range(2, 11))
def test_every_slot_is_slot_one_with_its_index(i):
    assert slot(i) == slot(1)


def test_a_slot_for_each_place_the_template_grants():
    # CatalogEndpointNames holds at most 10 names (scripts/catalog.py refuses more): one slot each.
    slots = [r for r in SOURCE["Resources"] if re.fullmatch(r"CatalogEndpoint[0-9]+", r)]
    assert len(slots) == 10 and "CatalogEndpoint11" not in SOURCE["Resources"]


def test_two_models_two_endpoints_each_wired_and_scaling_to_zero():
    stack = Deployed(CFN, **TWO)
    for i, (endpoint, model) in enumerate(zip(TWO["CatalogEndpointNames"].split(","),
                                             TWO["CatalogModelNames"].split(",")), 1):
        assert stack.props(f"CatalogEndpoint{i}")["EndpointName"] == endpoint
        config = stack.props(f"CatalogEndpoint{i}Config")
        assert config["ProductionVariants"][0]["ModelName"] == model
        output = config["AsyncInferenceConfig"]["OutputConfig"]
        assert output["S3OutputPath"] == "s3://mcp-io-bucket/outputs/"
        assert output["S3FailurePath"] == "s3://mcp-io-bucket/failures/"
        assert output["NotificationConfig"] == {"SuccessTopic": {"Ref": "SuccessTopic"},
                                                "ErrorTopic": {"Ref": "ErrorTopic"},
                                                "IncludeInferenceResponseIn": ["SUCCESS_NOTIFICATION_TOPIC"]}
        name = {"Fn::GetAtt": [f"CatalogEndpoint{i}", "EndpointName"]}
        target = stack.props(f"CatalogEndpoint{i}ScalableTarget")
        assert str(target["MinCapacity"]) == "0" and target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
        assert target["ResourceId"] == {"Fn::Join": ["", ["endpoint/", name, "/variant/", "AllTraffic"]]}
        tracking = stack.props(f"CatalogEndpoint{i}BacklogScalingPolicy")
        assert tracking["ScalingTargetId"] == {"Ref": f"CatalogEndpoint{i}ScalableTarget"}
        assert tracking["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]["Dimensions"] \
            == [{"Name": "EndpointName", "Value": name}]
        alarm = stack.props(f"CatalogEndpoint{i}HasBacklogWithoutCapacityAlarm")
        assert alarm["MetricName"] == "HasBacklogWithoutCapacity"
        assert alarm["Dimensions"] == [{"Name": "EndpointName", "Value": name}]
        assert alarm["AlarmActions"] == [{"Ref": f"CatalogEndpoint{i}ScaleOutFromZeroPolicy"}]
        # The model role's policy exists before SageMaker's test notification (the tag's reference).
        assert {"Key": "model-role-policy", "Value": {"Ref": "ModelExecutionRolePolicy"}} in config["Tags"]
    assert "CatalogEndpoint3" not in stack.resources
    # One policy on the Models' shared role, granting the topics and prefixes every endpoint uses.
    policy = stack.props("ModelExecutionRolePolicy")
    assert policy["Roles"] == ["endpoint-execution"]
    # The stack's own endpoint is not created (no ModelName): AsyncEndpointName exists already.
    assert "AsyncEndpoint" not in stack.resources


def test_an_empty_place_is_an_existing_endpoint():
    stack = Deployed(CFN, **{**TWO, "CatalogModelNames": ",churn-xgb-7"})
    assert "CatalogEndpoint1" not in stack.resources and "CatalogEndpoint1Config" not in stack.resources
    assert stack.props("CatalogEndpoint2")["EndpointName"] == "churn-scorer-async"
    # Both stay granted to mcp-tools by name, created here or not.
    granted = json.dumps(stack.props("McpToolsRole"))
    assert "endpoint/doc-processor-async" in granted and "endpoint/churn-scorer-async" in granted


def test_no_models_no_endpoints_and_no_role_policy():
    stack = Deployed(CFN, **{k: v for k, v in TWO.items() if k != "CatalogModelNames"})
    assert not [r for r in stack.resources if r.startswith("CatalogEndpoint")]
    assert "ModelExecutionRolePolicy" not in stack.resources


def test_models_need_the_role():
    assert refusals(**{**TWO, "ModelExecutionRoleArn": ""}) == ["ExecutionRoleForCatalogModels"]
    assert refusals(**TWO) == []


def test_a_model_name_is_checked_by_its_pattern():
    pattern = re.compile(CFN["Parameters"]["CatalogModelNames"]["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch("Doc-Processor-v3")
    for bad in ("doc processor", "-doc", "doc_model", "a" * 64):
        assert not pattern.fullmatch(bad), bad
