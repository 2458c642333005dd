"""scripts/preflight.py (what make deploy, make deploy-guided and make cdk-deploy check before they
build) and scripts/destroy.py (make destroy): the preflight's refusals name what is missing and
how to give it, a stack of that name another deploy made included (against moto); destroy's plan
from a stack's outputs, then carried out against moto (S3 versions, the stack, the tables)."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

import guided

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import destroy  # noqa: E402
import preflight  # noqa: E402

GOOD = 'AsyncEndpointName=\\"doc-ep\\" IoBucketName=\\"mcp-io\\"'


def samconfig(tmp_path: Path, overrides: str = GOOD, stack: str = "jobs") -> Path:
    path = tmp_path / "samconfig.toml"
    lines = ["version = 0.1", "[default.deploy.parameters]"]
    if stack:
        lines.append(f'stack_name = "{stack}"')
    lines.append(f'parameter_overrides = "{overrides}"')
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def region(monkeypatch, in_process_aws):
    """A region, and CloudFormation (moto, in this process) for preflight's look at the stack."""
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with mock_aws():
        yield


def run(tmp_path, mode="deploy", **kw):
    config = kw["config"] if "config" in kw else samconfig(tmp_path)
    return preflight.preflight(mode, kw.get("stack", ""), config, tmp_path / "layer")


def test_a_complete_configuration_passes(tmp_path, region):
    assert run(tmp_path) == []


def test_no_region_no_stack_no_parameters_each_named(tmp_path, monkeypatch):
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    problems = run(tmp_path, config=tmp_path / "missing.toml")
    assert problems[0].startswith("region: no AWS region is set. Set AWS_REGION")
    assert problems[1].startswith("stack name: none given; run make deploy-guided once")
    assert [p.split(" ")[0] for p in problems[2:]] == ["AsyncEndpointName", "IoBucketName"]
    assert "make deploy-guided" in problems[2]
    # STACK=... on the command line is a stack name.
    assert not [p for p in run(tmp_path, stack="jobs", config=tmp_path / "missing.toml") if p.startswith("stack")]


@pytest.mark.parametrize("overrides, problem", [
    ('AsyncEndpointName=\\"\\" IoBucketName=\\"mcp-io\\"', "AsyncEndpointName='': an endpoint name is required"),
    ('AsyncEndpointName=\\"doc-ep\\" IoBucketName=\\"x\\"', "IoBucketName='x': an existing bucket's name is required"),
    (GOOD + ' FunctionUrlAuthType=\\"OPEN\\"', "FunctionUrlAuthType='OPEN': must be one of AWS_IAM, NONE"),
    (GOOD + ' ToolsTimeoutSecs=\\"5\\"', "ToolsTimeoutSecs='5': must lie in 30..900"),
    (GOOD + ' Colour=\\"blue\\"', "Colour: the template has no such parameter"),
    (GOOD + ' ModelName=\\"m\\"', "ExecutionRoleForEndpoint: ModelName needs ModelExecutionRoleArn"),
    (GOOD + ' FunctionUrlAuthType=\\"NONE\\"', "BearerTokenForUrlAuthNone:"),
])
def test_what_cloudformation_would_refuse_is_refused_first(tmp_path, region, overrides, problem):
    problems = run(tmp_path, config=samconfig(tmp_path, overrides))
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_a_model_named_twice_or_without_its_catalog_endpoint_is_refused(tmp_path, region):
    import catalog
    role = ' ModelExecutionRoleArn=\\"arn:aws:iam::123456789012:role/sm\\" PipelineName=\\"p\\"'
    catalog.install(ROOT / "infra" / "catalog.example.json", tmp_path / "layer", "mcp-churn-scorer-async=churn-7")
    assert run(tmp_path, config=samconfig(tmp_path, GOOD + role)) == []
    # The stack's own endpoint's Model named again for a catalog endpoint: created twice.
    twice = run(tmp_path, config=samconfig(tmp_path, GOOD + role + ' ModelName=\\"churn-7\\"'))
    assert len(twice) == 1 and twice[0].startswith(
        "CatalogModelNames: churn-7 is named twice (ModelName and place 2 of CatalogModelNames)"), twice
    # The CDK app's deploy is held to the same, its endpoints read from the catalog it is given;
    # there CatalogModelNames is given by hand, so a Model may stand at a place with no catalog
    # endpoint, whose slot would never be made (make catalog MODELS=... places each Model).
    cdk = CDK_GOOD + " ToolCatalog=infra/catalog.example.json PipelineName=p ModelExecutionRoleArn=arn:aws:iam::123456789012:role/sm"
    assert preflight.preflight_cdk(cdk + " CatalogModelNames=,churn-7") == []
    assert preflight.preflight_cdk(cdk + " ModelName=churn-7 CatalogModelNames=,churn-7")[0].startswith(
        "CatalogModelNames: churn-7 is named twice")
    assert preflight.preflight_cdk(cdk + " CatalogModelNames=,,orphan")[0].startswith(
        "CatalogModelNames: place 3 names orphan, but the catalog has no endpoint at place 3")


def test_the_catalogs_models_without_their_role_are_refused(tmp_path, region):
    import catalog
    catalog.install(ROOT / "infra" / "catalog.example.json", tmp_path / "layer", "mcp-churn-scorer-async=churn-7")
    problems = run(tmp_path)
    # The example catalog has a pipeline too: the stack routes it only with PipelineName.
    assert [p.split(":")[0] for p in problems] == ["ExecutionRoleForCatalogModels", "PipelineForCatalogPipelines"]
    assert problems[0].startswith("ExecutionRoleForCatalogModels: CatalogModelNames needs ModelExecutionRoleArn")
    role = ' ModelExecutionRoleArn=\\"arn:aws:iam::123456789012:role/sm\\" PipelineName=\\"p\\"'
    assert run(tmp_path, config=samconfig(tmp_path, GOOD + role)) == []


def test_a_broken_catalog_in_the_layer_is_refused_for_both_deploys(tmp_path, region):
    (tmp_path / "layer" / "tool-catalog").mkdir(parents=True)
    (tmp_path / "layer" / "tool-catalog" / "tools.json").write_text('{"async_tools": [{"name": "t"}]}')
    for mode in ("deploy", "guided"):
        problems = run(tmp_path, mode)
        assert len(problems) == 1 and problems[0].startswith("tool catalog: ") and '"endpoint" is missing' in problems[0]
        assert "make catalog CATALOG=<file>" in problems[0]


def test_params_are_checked_with_the_saved_parameters(tmp_path, region):
    config = samconfig(tmp_path, 'AsyncEndpointName=\\"doc-ep\\"')
    assert preflight.preflight("deploy", "", config, tmp_path / "layer", "IoBucketName=mcp-io") == []
    refused = preflight.preflight("deploy", "", config, tmp_path / "layer", "IoBucketName=mcp-io Colour=blue")
    assert refused == ["Colour: the template has no such parameter (remove it from samconfig.toml or PARAMS)"]
    # A Model at a place of CatalogModelNames with no catalog endpoint: its slot would never be made.
    orphan = preflight.preflight("deploy", "", config, tmp_path / "layer", "IoBucketName=mcp-io CatalogModelNames=m "
                                 "ModelExecutionRoleArn=arn:aws:iam::123456789012:role/sm")
    assert orphan == ["CatalogModelNames: place 1 names m, but the catalog has no endpoint at place 1 (its endpoints: "
                      "none); make catalog MODELS=\"<endpoint>=<model> ...\" puts each Model at its endpoint's place"]
    assert preflight.preflight("deploy", "", config, tmp_path / "layer", "IoBucketName=")[0].startswith(
        "PARAMS cannot be read (IoBucketName= is not a valid format.")
    (tmp_path / "broken.toml").write_text("[default.deploy.parameters\n")
    assert preflight.preflight("deploy", "", tmp_path / "broken.toml", tmp_path / "layer")[-1].startswith(
        f"{tmp_path / 'broken.toml'}: not TOML (")


def test_a_stack_another_deploy_made_is_refused_and_one_of_its_own_is_not(tmp_path, region):
    session = boto3.session.Session(region_name="eu-west-1")
    for name, kind in (("sam-jobs", "sam"), ("cdk-jobs", "cdk"), ("site", "other")):
        guided.create_stack(session, name, kind)
    # A change set never executed: the stack exists, with nothing deployed.
    session.client("cloudformation").create_change_set(StackName="fresh", ChangeSetName="c", ChangeSetType="CREATE",
                                                      TemplateBody=json.dumps(guided.stack_template("sam")))
    sam = {name: run(tmp_path, stack=name) for name in ("sam-jobs", "cdk-jobs", "site", "fresh", "new-jobs")}
    assert sam["sam-jobs"] == sam["fresh"] == sam["new-jobs"] == []
    assert sam["cdk-jobs"] == [
        "stack cdk-jobs: made by make cdk-deploy (the CDK app) in eu-west-1; make deploy (SAM) would take it over, and "
        "each deploy would then undo the other's: deploy it with make cdk-deploy STACK=cdk-jobs, or choose another "
        "stack name (stack_name in samconfig.toml, or STACK=<name>)"]
    assert sam["site"] == [
        "stack site: exists in eu-west-1 and is not a stack of this template (its description: 'A static website'); "
        "deploying would replace what it holds: choose another stack name (stack_name in samconfig.toml, or "
        "STACK=<name>)"]
    assert preflight.preflight_cdk(CDK_GOOD, "cdk-jobs") == preflight.preflight_cdk(CDK_GOOD, "new-jobs") == []
    assert preflight.preflight_cdk(CDK_GOOD, "sam-jobs")[0].startswith(
        "stack sam-jobs: made by make deploy (SAM) in eu-west-1; make cdk-deploy (the CDK app) would take it over")
    assert preflight.preflight_cdk(CDK_GOOD, "site")[0].startswith("stack site: exists in eu-west-1 and is not a stack")
    assert run(tmp_path, stack="2jobs") == ["stack name '2jobs': a letter, then letters, digits and hyphens, at most "
                                            "128 (CloudFormation's rule): choose another stack name (stack_name in "
                                            "samconfig.toml, or STACK=<name>)"]


def test_a_stack_that_cannot_be_looked_up_is_a_problem(tmp_path, monkeypatch, in_process_aws):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.setenv(variable, str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    problems = run(tmp_path, stack="jobs")
    assert problems == ["stack jobs: cannot be looked up in eu-west-1 (Unable to locate credentials); the deploy "
                        "needs the same access (aws sts get-caller-identity shows whose credentials are found)"]


def test_the_cli_lists_every_problem_and_exits_2(tmp_path, region, capsys):
    config = samconfig(tmp_path, 'AsyncEndpointName=\\"doc-ep\\"', stack="")
    assert preflight.main(["deploy", "--samconfig", str(config), "--layer-dir", str(tmp_path / "layer")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: make deploy stopped before building:"
    assert err[1].startswith("  - stack name:") and err[2].startswith("  - IoBucketName is missing")


# ---------------------------------------------------------------- the CDK app's deploy

CDK_GOOD = "AsyncEndpointName=doc-ep IoBucketName=mcp-io"


def test_the_cdk_deploy_is_checked_as_the_template_checks_the_same_parameters(tmp_path, region):
    assert preflight.preflight_cdk(CDK_GOOD) == []
    assert preflight.preflight_cdk(CDK_GOOD + " ToolCatalog=infra/catalog.example.json PipelineName=p") == []
    problems = preflight.preflight_cdk("IoBucketName=x FunctionUrlAuthType=OPEN Colour=blue")
    assert [p.split(":")[0].split(" ")[0] for p in problems] == [
        "Colour", "AsyncEndpointName", "IoBucketName='x'", "FunctionUrlAuthType='OPEN'"], problems
    assert problems[0] == "Colour: the template has no such parameter (remove it from PARAMS)"
    assert problems[1] == 'AsyncEndpointName is missing: add AsyncEndpointName=... to PARAMS (make cdk-deploy PARAMS="AsyncEndpointName=... ...")'
    # The Rules too, and the catalog the app would read.
    assert preflight.preflight_cdk(CDK_GOOD + " ModelName=m")[0].startswith("ExecutionRoleForEndpoint: ModelName needs")
    missing = preflight.preflight_cdk(CDK_GOOD + " ToolCatalog=infra/no-such-catalog.json")
    assert len(missing) == 1 and missing[0].startswith("ToolCatalog: "), missing
    assert "infra/no-such-catalog.json: cannot be read" in missing[0], missing
    assert preflight.preflight_cdk(CDK_GOOD + " PipelineName")[0] == "PipelineName: not Name=Value (PARAMS takes Name=Value words)"


def test_make_cdk_deploy_stops_before_any_build(tmp_path):
    import subprocess
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    done = subprocess.run(["make", "--no-print-directory", "cdk-deploy", "PARAMS=IoBucketName=x"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "error: make cdk-deploy stopped before building:" in done.stderr, done.stderr
    assert "  - region: no AWS region is set" in done.stderr
    assert "  - AsyncEndpointName is missing: add AsyncEndpointName=... to PARAMS" in done.stderr
    # Nothing was built: neither the functions nor the CDK app.
    assert "cargo" not in done.stdout + done.stderr and "npm" not in done.stdout + done.stderr


@pytest.mark.parametrize("target, kind, refusal", [
    ("deploy", "cdk", "  - stack jobs: made by make cdk-deploy (the CDK app) in eu-west-1; make deploy (SAM) would"),
    ("cdk-deploy", "sam", "  - stack jobs: made by make deploy (SAM) in eu-west-1; make cdk-deploy (the CDK app) would"),
])
def test_make_refuses_a_stack_the_other_deploy_made_before_any_build(tmp_path, target, kind, refusal):
    import subprocess
    with guided.Moto() as moto:
        guided.create_stack(moto, "jobs", kind)
        done = subprocess.run(["make", "--no-print-directory", target, "STACK=jobs", f"PARAMS={CDK_GOOD}"], cwd=ROOT,
                              env=guided.aws_env(moto.url, tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert f"error: make {target} stopped before building:" in done.stderr, done.stderr
    assert refusal in done.stderr, done.stderr
    assert "cargo" not in done.stdout + done.stderr and "npm" not in done.stdout + done.stderr


# ---------------------------------------------------------------- destroy

OUTPUTS = {"S3OutputPath": "s3://mcp-io/outputs/", "S3FailurePath": "s3://mcp-io/failures/",
           "ResultsTableName": "jobs-ResultsTable-1", "PipelineResultsTableName": "jobs-PipelineResultsTable-1"}


def test_the_plan_empties_the_stacks_prefixes_and_names_the_kept_tables():
    steps = destroy.plan("jobs", OUTPUTS)
    assert steps.empty == [("mcp-io", "inputs/"), ("mcp-io", "outputs/"), ("mcp-io", "failures/")]
    lines = steps.lines()
    assert lines[3].startswith("stack jobs: deleted")
    assert lines[4] == ("table jobs-ResultsTable-1: kept (DeletionPolicy RetainExceptOnCreate); remove it with "
                        "aws dynamodb delete-table --table-name jobs-ResultsTable-1, or make destroy ... "
                        "ARGS=--delete-tables")
    assert destroy.plan("jobs", OUTPUTS, keep_objects=True).empty == []
    assert "deleted after the stack" in destroy.plan("jobs", OUTPUTS, delete_tables=True).lines()[-1]
    # MCP Events' tables (the log, the webhook subscriptions) are kept, and named, as the others are.
    events = destroy.plan("jobs", {**OUTPUTS, "EventsTableName": "jobs-EventsTable-1",
                                   "SubscriptionsTableName": "jobs-SubscriptionsTable-1"}).lines()
    assert any(line.startswith("table jobs-EventsTable-1: kept") for line in events), events
    assert events[-1].startswith("table jobs-SubscriptionsTable-1: kept"), events
    assert destroy.plan("jobs", {**OUTPUTS, "SubscriptionsTableName": "jobs-SubscriptionsTable-1"},
                        delete_tables=True).lines()[-1] == "table jobs-SubscriptionsTable-1: deleted after the stack"
    with pytest.raises(ValueError, match="an empty prefix would empty the whole bucket"):
        destroy.plan("jobs", {**OUTPUTS, "S3OutputPath": "s3://mcp-io/"})


STACK_TEMPLATE = {
    "Resources": {
        "ResultsTable": {"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "Retain", "Properties": {
            "TableName": "jobs-results", "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "inference_id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "inference_id", "KeyType": "HASH"}]}},
        "Queue": {"Type": "AWS::SQS::Queue"}},
    "Outputs": {"S3OutputPath": {"Value": "s3://mcp-io/outputs/"}, "S3FailurePath": {"Value": "s3://mcp-io/failures/"},
                "ResultsTableName": {"Value": {"Ref": "ResultsTable"}}},
}


@pytest.fixture
def in_process_aws(monkeypatch):
    """moto in this process: `make test` points AWS_ENDPOINT_URL at its shared moto server, which
    mock_aws would let these calls reach (and its state leak between tests)."""
    for variable in [v for v in os.environ if v.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(variable)
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(variable, "testing")


@pytest.mark.parametrize("delete_tables", [False, True])
def test_destroy_empties_every_version_deletes_the_stack_and_keeps_or_deletes_the_table(monkeypatch, delete_tables,
                                                                                        in_process_aws):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(variable, "testing")
    with mock_aws():
        session = boto3.session.Session(region_name="eu-west-1")
        s3 = session.client("s3")
        s3.create_bucket(Bucket="mcp-io", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_bucket_versioning(Bucket="mcp-io", VersioningConfiguration={"Status": "Enabled"})
        for key in ("inputs/a.json", "outputs/a.out", "outputs/a.out", "failures/b.err", "train/keep.csv"):
            s3.put_object(Bucket="mcp-io", Key=key, Body=b"x")
        s3.delete_object(Bucket="mcp-io", Key="failures/b.err")  # a delete marker over a version
        cloudformation = session.client("cloudformation")
        cloudformation.create_stack(StackName="jobs", TemplateBody=json.dumps(STACK_TEMPLATE))
        args = ["--stack-name", "jobs", "--yes"] + (["--delete-tables"] if delete_tables else [])
        assert destroy.main(args, session=session) == 0
        left = s3.list_object_versions(Bucket="mcp-io")
        assert [v["Key"] for v in left.get("Versions", [])] == ["train/keep.csv"]
        assert not left.get("DeleteMarkers")
        assert [s["StackName"] for s in cloudformation.list_stacks(StackStatusFilter=["CREATE_COMPLETE"])["StackSummaries"]] == []
        tables = session.client("dynamodb").list_tables()["TableNames"]
        assert ("jobs-results" in tables) is not delete_tables or not tables


def test_destroy_asks_for_the_stacks_name_and_does_nothing_on_another(monkeypatch, capsys, in_process_aws):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setattr("sys.stdin", io.StringIO("other\n"))
    with mock_aws():
        session = boto3.session.Session(region_name="eu-west-1")
        session.client("cloudformation").create_stack(StackName="jobs", TemplateBody=json.dumps(STACK_TEMPLATE))
        assert destroy.main(["--stack-name", "jobs"], session=session) == 1
        assert session.client("cloudformation").describe_stacks(StackName="jobs")["Stacks"][0]["StackStatus"] \
            == "CREATE_COMPLETE"
    assert "nothing done" in capsys.readouterr().err


def test_destroy_names_a_missing_stack(monkeypatch, capsys, in_process_aws):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with mock_aws():
        assert destroy.main(["--stack-name", "nope"], session=boto3.session.Session(region_name="eu-west-1")) == 1
    assert capsys.readouterr().err.startswith("error: stack nope: ")
