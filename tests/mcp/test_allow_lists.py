"""Hostile input costs nothing, through the official Python MCP SDK on the local stack: the
training allow-lists hold on every path. A catalog pipeline tool whose arguments are free strings
(the data, the instance type, a note) and the generic trigger_training are each sent an S3
location outside TRAINING_INPUT_PREFIXES in every form S3 reads (s3a/s3n, https virtual-hosted,
path-style, regional, dual-stack, an access point, any case, dot segments, encodings) and an
instance type outside TRAINING_INSTANCE_TYPES: each is a tool error naming the argument and what
is allowed, and nothing starts (the stand-in started no run, the runs table holds no item). A
missing run is answered as unknown whether SageMaker says ResourceNotFound or, as moto does,
ValidationException "Could not find ..."."""

import json
import urllib.request
import uuid

import pytest

from conftest import error_text, mcp_under_watch, need, ok
from test_identity import call_tool

BUCKET = "mcp-sagemaker-async-io"
TRAIN = f"s3://{BUCKET}/train/"
PIPELINE = "mcp-intent-classifier-pipeline"
TOOL = "retrain_on_any_data"
# The tool's arguments are free strings: only the allow-lists stand between them and SageMaker.
CATALOG = {"pipeline_tools": [{
    "name": TOOL,
    "description": "Retrain the intent classifier on any data, on any instance type.",
    "pipeline": PIPELINE,
    "parameters": {
        "data": {"parameter": "InputDataUri", "schema": {"type": "string", "maxLength": 4096}},
        "compute": {"parameter": "TrainingInstanceType", "schema": {"type": "string"}},
        "note": {"parameter": "RunNote", "schema": {"type": "string"}},
    },
}]}

OUTSIDE = [
    f"https://{BUCKET}.s3.amazonaws.com/inputs/x.csv",
    f"https://{BUCKET}.s3.us-east-1.amazonaws.com/inputs/x.csv",
    f"https://{BUCKET}.s3-us-east-1.amazonaws.com/inputs/x.csv",
    f"https://s3.amazonaws.com/{BUCKET}/inputs/x.csv",
    "https://s3.us-east-1.amazonaws.com/someone-elses-bucket/train/x.csv",
    f"https://s3.dualstack.us-east-1.amazonaws.com/{BUCKET}/inputs/x.csv",
    f"HTTPS://{BUCKET.upper()}.S3.AMAZONAWS.COM/inputs/x.csv",
    f"{BUCKET}.s3.amazonaws.com/inputs/x.csv",
    f"s3a://{BUCKET}/inputs/x.csv",
    f"s3n://{BUCKET}/inputs/x.csv",
    f"S3A://{BUCKET}/inputs/x.csv",
    f"arn:aws:s3:::{BUCKET}/inputs/x.csv",
]
CLIMBING = [
    f"https://{BUCKET}.s3.amazonaws.com/train/../inputs/x.csv",
    f"https://s3.amazonaws.com/{BUCKET}/train/%2e%2e/inputs/x.csv",
    f"s3a://{BUCKET}/train/%252E%252E/inputs/x.csv",
]
ACCESS_POINT = "https://data-123456789012.s3-accesspoint.us-east-1.amazonaws.com/train/x.csv"


def standin(method: str, path: str, body=None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{need('AWS_ENDPOINT_URL_SAGEMAKER')}/_standin/{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def runs_started() -> int:
    """Runs the stand-in's StartPipelineExecution has started, in all."""
    return standin("GET", "pipeline")["runs_started"]


def run_items(aws, session: str) -> int:
    """Items of `session` in the runs table, whoever's partition."""
    return aws["ddb"].scan(TableName=aws["runs_table"], ConsistentRead=True, Select="COUNT",
                           FilterExpression="contains(session_id, :s)",
                           ExpressionAttributeValues={":s": {"S": session}})["Count"]


@pytest.fixture(scope="module")
def catalog_url(servers, tmp_path_factory):
    """mcp-tools serving a catalog whose one pipeline tool takes free strings, with the
    default allow-lists (the IO bucket's train/, ml.m5.xlarge)."""
    path = tmp_path_factory.mktemp("catalog") / "catalog.json"
    path.write_text(json.dumps(CATALOG))
    yield from mcp_under_watch({"AUTH_MODE": "none", "TOOL_CATALOG": str(path)}, "watch-allow-lists")


def refused(url, aws, tool, arguments) -> str:
    """The tool error for `arguments`, once it is certain nothing started."""
    session = f"allow-{uuid.uuid4().hex[:10]}"
    before = runs_started()
    text = error_text(call_tool(url, tool, {**arguments, "session_id": session}))
    assert runs_started() == before, f"a run started: {arguments}"
    assert run_items(aws, session) == 0, f"a run was recorded: {arguments}"
    return text


@pytest.mark.parametrize("value", OUTSIDE)
def test_a_pipeline_tool_refuses_each_form_of_a_location_outside_the_prefixes(catalog_url, aws, value):
    text = refused(catalog_url, aws, TOOL, {"data": value})
    assert text.startswith("`data` "), text
    assert f"is not under a prefix this deployment allows; training may read only under: {TRAIN}. " \
           "Nothing was started." in text, text


@pytest.mark.parametrize("value", CLIMBING)
def test_a_pipeline_tool_refuses_dot_segments_however_written(catalog_url, aws, value):
    text = refused(catalog_url, aws, TOOL, {"data": value})
    assert text.startswith("`data` ") and "has a `.`, `..` or empty path segment" in text, text


def test_a_pipeline_tool_refuses_an_access_point_and_a_location_in_any_argument(catalog_url, aws):
    text = refused(catalog_url, aws, TOOL, {"data": ACCESS_POINT})
    assert text.startswith("`data` ") and "is an S3 access point" in text and TRAIN in text, text
    # Whatever the argument: the note reaches SageMaker as a parameter too.
    text = refused(catalog_url, aws, TOOL, {"note": f"s3n://{BUCKET}/inputs/"})
    assert text.startswith("`note` ") and "is not under a prefix this deployment allows" in text, text


@pytest.mark.parametrize("arguments, argument", [
    ({"compute": "ml.p5.48xlarge"}, "compute"),
    ({"compute": "p5.48xlarge"}, "compute"),
    ({"note": "ML.P5.48XLARGE"}, "note"),
])
def test_a_pipeline_tool_refuses_an_instance_type_outside_the_list(catalog_url, aws, arguments, argument):
    text = refused(catalog_url, aws, TOOL, arguments)
    assert text.startswith(f"`{argument}` ") and "is not one this deployment allows; use one of: ml.m5.xlarge" in text, text


def test_a_long_refused_value_is_quoted_only_in_part(catalog_url, aws):
    value = f"https://{BUCKET}.s3.amazonaws.com/inputs/{'x' * 3000}"
    text = refused(catalog_url, aws, TOOL, {"data": value})
    assert value not in text and f"({len(value)} characters)" in text, text[:400]


def test_an_allowed_location_in_another_form_starts_a_run(catalog_url, aws):
    session = f"allow-{uuid.uuid4().hex[:10]}"
    before = runs_started()
    run = ok(call_tool(catalog_url, TOOL, {"session_id": session, "compute": "ml.m5.xlarge",
                                           "data": f"https://{BUCKET}.s3.us-east-1.amazonaws.com/train/x.csv"}))
    assert f":pipeline/{PIPELINE}/execution/" in run["execution_arn"]
    assert runs_started() == before + 1 and run_items(aws, session) == 1


@pytest.mark.parametrize("value", OUTSIDE[:6] + CLIMBING[:1] + [ACCESS_POINT, f"s3://{BUCKET}/inputs/x.csv"])
def test_trigger_training_refuses_each_form_too(servers, aws, value):
    text = refused(servers["url"], aws, "trigger_training", {"input_data_uri": value})
    assert text.startswith("`input_data_uri` "), text
    # trigger_training takes s3:// URIs only; one of them elsewhere is held to the prefixes.
    says = "is not under a prefix this deployment allows" if value.startswith("s3://") \
        else "is not an s3://bucket/prefix URI"
    assert says in text, text


def test_trigger_training_refuses_an_instance_type_outside_the_list(servers, aws):
    text = refused(servers["url"], aws, "trigger_training",
                   {"input_data_uri": TRAIN, "training_instance_type": "ml.p5.48xlarge"})
    assert text == "`training_instance_type` \"ml.p5.48xlarge\" is not one this deployment allows; " \
                   "use one of: ml.m5.xlarge", text


@pytest.mark.parametrize("shape", ["ResourceNotFound", "ValidationException"])
def test_a_missing_run_is_unknown_in_either_shape(servers, shape):
    arn = f"arn:aws:sagemaker:us-east-1:123456789012:pipeline/{PIPELINE}/execution/{uuid.uuid4().hex[:12]}"
    standin("POST", "pipeline", {"missing_execution": shape})
    try:
        text = error_text(call_tool(servers["url"], "check_training_status", {"execution_arn": arn}))
    finally:
        standin("DELETE", "pipeline")
    assert text == f'no training run "{arn}" was found: check the execution_arn that trigger_training returned', text
