"""get_model_provenance, and the model package check_training_status reports, as a real MCP
client sees them: the official Python SDK against mcp-tools under `cargo lambda watch`, over the
lineage the SageMaker stand-in records as its runs go (see dev/sagemaker-standin/src/
control_plane/lineage.rs)."""

import json
import os
import urllib.request
import uuid

import pytest

from conftest import error_text, ok
from test_mcp_tools import call, finished_training

ACCOUNT_ARN = "arn:aws:sagemaker:us-east-1:123456789012"
GROUP = "mcp-intent-classifier-pipeline-models"


def standin(method: str, path: str, body=None) -> dict:
    """The stand-in's control API."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{os.environ['AWS_ENDPOINT_URL_SAGEMAKER']}/_standin/{path}", data=data,
                                 method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def provenance(servers, mode="2026-07-28", **args):
    return ok(call(servers, "get_model_provenance", args, mode))


def by_kind(answer) -> dict:
    """The nodes by what they are: `kind:artifact_type` or `kind:lineage_type`."""
    found = {}
    for node in answer["nodes"]:
        what = node.get("artifact_type") or node.get("lineage_type")
        found.setdefault(f"{node['kind']}:{what}", []).append(node)
    return found


@pytest.fixture(scope="module")
def registered(servers):
    """A run that registered a model, on data of its own."""
    session = f"prov-{uuid.uuid4().hex[:12]}"
    data = f"s3://mcp-sagemaker-async-io/train/{session}/"
    started = ok(call(servers, "trigger_training", {"input_data_uri": data, "session_id": session}))
    status = finished_training(servers, started["execution_arn"])
    assert status["status"] == "Succeeded", status
    return {"session": session, "data": data, "execution_arn": started["execution_arn"], "status": status,
            "package": status["model_package_arn"]}


def test_check_training_status_names_the_model_package_the_run_registered(registered):
    status, package = registered["status"], registered["package"]
    assert package.startswith(f"{ACCOUNT_ARN}:model-package/{GROUP}/"), package
    register = status["steps"][-1]
    assert register["name"] == "RegisterModel" and register["model_package_arn"] == package
    assert all("model_package_arn" not in s for s in status["steps"][:-1])


def test_upstream_is_what_built_the_model(servers, registered):
    answer = provenance(servers, model_package_arn=registered["package"])
    assert (answer["direction"], answer["max_depth"], answer["truncated"]) == ("upstream", 2, False)
    root = answer["root"]
    assert root["arn"] == registered["package"] and root["group_name"] == GROUP
    assert (root["status"], root["approval_status"]) == ("Completed", "PendingManualApproval")
    assert root["generated_by"] == registered["execution_arn"]
    assert root["pipeline_execution"] == {
        "execution_arn": registered["execution_arn"], "pipeline_name": "mcp-intent-classifier-pipeline",
        "status": "Succeeded", "session_id": registered["session"]}
    assert len(root["lineage_arns"]) == 1
    found = by_kind(answer)
    assert sorted(found) == ["artifact:Image", "artifact:Model", "trial_component:SageMakerTrainingJob"], found
    model = found["artifact:Model"][0]
    assert model["depth"] == 1 and model["source_uri"].endswith("/TrainModel/output/model.tar.gz")
    job = found["trial_component:SageMakerTrainingJob"][0]
    execution_id = registered["execution_arn"].rsplit("/", 1)[1]
    assert job["depth"] == 2 and execution_id in job["name"]
    edges = {(e["source_arn"], e["destination_arn"], e["association_type"]) for e in answer["edges"]}
    assert (model["arn"], root["lineage_arns"][0], "ContributedTo") in edges
    assert (job["arn"], model["arn"], "Produced") in edges
    # The owner tag in the run's description never reaches the answer.
    assert "mcp_owner" not in json.dumps(answer)


def test_max_depth_bounds_the_walk(servers, registered):
    one = provenance(servers, model_package_arn=registered["package"], max_depth=1)
    assert sorted(by_kind(one)) == ["artifact:Image", "artifact:Model"]
    assert {n["depth"] for n in one["nodes"]} == {1}
    three = provenance(servers, mode="legacy", model_package_arn=registered["package"], max_depth=3)
    found = by_kind(three)
    data = found["artifact:DataSet"]
    assert [(d["source_uri"], d["depth"]) for d in data] == [(registered["data"], 3)]
    # The image contributed to the job and to the package: one node, both edges.
    image = found["artifact:Image"]
    assert len(image) == 1 and image[0]["depth"] == 1
    assert sum(e["source_arn"] == image[0]["arn"] for e in three["edges"]) == 2


def test_downstream_is_what_the_model_fed(servers, registered):
    answer = provenance(servers, model_package_arn=registered["package"], direction="downstream")
    assert answer["direction"] == "downstream"
    [group] = answer["nodes"]
    assert (group["kind"], group["lineage_type"], group["depth"]) == ("context", "ModelGroup", 1)
    assert answer["edges"] == [{"source_arn": answer["root"]["lineage_arns"][0], "destination_arn": group["arn"],
                                "association_type": "AssociatedWith"}]


def test_every_page_is_followed(servers, registered):
    whole = provenance(servers, model_package_arn=registered["package"], max_depth=3)
    before = standin("GET", "lineage")["continued_calls"]
    standin("POST", "lineage", {"page_size": 1})
    try:
        paged = provenance(servers, model_package_arn=registered["package"], max_depth=3)
    finally:
        standin("DELETE", "lineage")
    continued = standin("GET", "lineage")["continued_calls"] - before
    # The package's artifact and the training job each have two associations upstream.
    assert continued >= 2, continued
    key = lambda n: n["arn"]  # noqa: E731
    assert sorted(paged["nodes"], key=key) == sorted(whole["nodes"], key=key)
    assert sorted(map(json.dumps, paged["edges"])) == sorted(map(json.dumps, whole["edges"]))


def test_an_unknown_or_malformed_model_package_is_a_tool_error(servers):
    missing = f"{ACCOUNT_ARN}:model-package/{GROUP}/999999"
    assert error_text(call(servers, "get_model_provenance", {"model_package_arn": missing})) == (
        f'no model package "{missing}" was found: check the model_package_arn '
        "(check_training_status reports the one a run registered)")
    group = f"{ACCOUNT_ARN}:model-package-group/{GROUP}"
    assert "that is a model package group" in error_text(
        call(servers, "get_model_provenance", {"model_package_arn": group}))
    assert "`max_depth`" in error_text(
        call(servers, "get_model_provenance", {"model_package_arn": missing, "max_depth": 4}))
    assert '`direction` must be one of "upstream", "downstream"; got "sideways"' in error_text(
        call(servers, "get_model_provenance", {"model_package_arn": missing, "direction": "sideways"}))
