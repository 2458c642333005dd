"""wire-endpoint end to end on the local stack: a dry run prints the difference and changes
nothing; a real run leaves the endpoint on a new, wired EndpointConfig (everything else copied),
the doctor then passes, and a second run has nothing to do."""

import sys

from wiring import SCRIPTS, Setup, async_config, catalog_endpoint, lines_by_check, run_script

sys.path.insert(0, str(SCRIPTS))
import wire_endpoint  # noqa: E402
from iam_fixtures import fake_iam, iam  # noqa: F401 (fixtures)


def miswired() -> Setup:
    """An endpoint that notifies someone else's topic, writes outputs elsewhere, has no failure
    path and no response in its messages; the rest of the stack is right."""
    setup = Setup().build(skip=("endpoint",))
    other = setup.aws["sns"].create_topic(Name=f"doctor-{setup.id}-old-success")["TopicArn"]
    setup.create_endpoint(async_config(setup, SuccessTopic=other, S3OutputPath=f"s3://{setup.bucket}/legacy/",
                                       S3FailurePath=None, IncludeInferenceResponseIn=None))
    setup.old_topic = other
    return setup


def current_config(setup: Setup) -> dict:
    sm = setup.aws["sagemaker"]
    name = sm.describe_endpoint(EndpointName=setup.endpoint)["EndpointConfigName"]
    return sm.describe_endpoint_config(EndpointConfigName=name)


def test_a_dry_run_prints_the_difference_and_changes_nothing():
    setup = miswired()
    before = current_config(setup)
    result = run_script("wire_endpoint.py", setup.wiring_args() + ["--dry-run"])
    assert result.returncode == 0, result.stderr
    changed = [line.rstrip(",") for line in result.stdout.splitlines()
               if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert f'-      "SuccessTopic": "{setup.old_topic}"' in changed, result.stdout
    assert f'+      "SuccessTopic": "{setup.success_topic}"' in changed, result.stdout
    assert f'-    "S3OutputPath": "s3://{setup.bucket}/legacy/"' in changed, result.stdout
    assert f'+    "S3OutputPath": "s3://{setup.bucket}/outputs/"' in changed, result.stdout
    assert f'+    "S3FailurePath": "s3://{setup.bucket}/failures/"' in changed, result.stdout
    assert '+        "SUCCESS_NOTIFICATION_TOPIC"' in changed, result.stdout
    assert "dry run: would create EndpointConfig" in result.stdout
    after = current_config(setup)
    assert after["EndpointConfigName"] == before["EndpointConfigName"]
    assert after["AsyncInferenceConfig"] == before["AsyncInferenceConfig"]


def test_wiring_an_endpoint_makes_the_doctor_pass():
    setup = miswired()
    before = current_config(setup)
    doctor_before = lines_by_check(run_script("doctor.py", setup.doctor_args()).stdout)
    assert {c for c, (s, _) in doctor_before.items() if s == "FAIL"} == {"topics", "output path", "failure path"}

    result = run_script("wire_endpoint.py", setup.wiring_args() + ["--wait", "--poll-secs", "0.05"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"endpoint {setup.endpoint} is InService"

    after = current_config(setup)
    assert after["EndpointConfigName"].startswith(f"{before['EndpointConfigName']}-wired-")
    output = after["AsyncInferenceConfig"]["OutputConfig"]
    assert output["NotificationConfig"] == {"SuccessTopic": setup.success_topic, "ErrorTopic": setup.error_topic,
                                            "IncludeInferenceResponseIn": ["SUCCESS_NOTIFICATION_TOPIC"]}
    assert output["S3OutputPath"] == f"s3://{setup.bucket}/outputs/"
    assert output["S3FailurePath"] == f"s3://{setup.bucket}/failures/"
    # Everything else is the old config's.
    assert after["ProductionVariants"] == before["ProductionVariants"]
    assert after["AsyncInferenceConfig"]["ClientConfig"] == before["AsyncInferenceConfig"]["ClientConfig"]

    doctor = run_script("doctor.py", setup.doctor_args())
    assert doctor.returncode == 0, doctor.stdout
    assert doctor.stdout.splitlines()[-1] == "all checks passed"

    again = run_script("wire_endpoint.py", setup.wiring_args())
    assert again.returncode == 0 and "is already wired" in again.stdout, again.stdout
    assert current_config(setup)["EndpointConfigName"] == after["EndpointConfigName"]


def test_paths_already_under_the_granted_prefixes_are_kept():
    current = {"EndpointConfigName": "c", "ProductionVariants": [{"VariantName": "v"}],
               "AsyncInferenceConfig": {"OutputConfig": {"S3OutputPath": "s3://io/outputs/docs",
                                                         "S3FailurePath": "s3://io/failures/docs/"}}}
    wiring = {"success_topic": "arn:s", "error_topic": "arn:e", "bucket": "io", "output_prefix": "outputs/",
              "failure_prefix": "failures/"}
    output = wire_endpoint.wired_config(current, wiring)["AsyncInferenceConfig"]["OutputConfig"]
    assert (output["S3OutputPath"], output["S3FailurePath"]) == ("s3://io/outputs/docs", "s3://io/failures/docs/")


def test_a_real_time_endpoint_is_refused_naming_why():
    current = {"EndpointConfigName": "realtime", "ProductionVariants": [{"VariantName": "v"}]}
    try:
        wire_endpoint.wired_config(current, {})
    except wire_endpoint.WiringError as e:
        assert "realtime has no AsyncInferenceConfig" in str(e)
    else:
        raise AssertionError("a real-time endpoint was wired")


def test_new_names_stay_within_sagemakers_limit():
    from datetime import datetime, timezone
    now = datetime(2026, 12, 1, 19, 0, 0, tzinfo=timezone.utc)
    assert wire_endpoint.new_config_name("docs-config", now) == "docs-config-wired-20261201190000"
    name = wire_endpoint.new_config_name("x" * 63, now)
    assert len(name) == 63 and name.endswith("-wired-20261201190000")
    # Re-wiring a wired config does not stack suffixes.
    assert wire_endpoint.new_config_name("docs-config-wired-20250101000000", now) == "docs-config-wired-20261201190000"


def output_location_of_a_job(setup: Setup) -> str:
    """Submits one input to the endpoint (the stand-in's runtime) and returns where SageMaker
    says the output goes, once the object is there."""
    import json
    import os
    import time

    import boto3
    s3 = boto3.client("s3")
    key = f"inputs/{setup.id}-{time.monotonic_ns()}.json"
    s3.put_object(Bucket=setup.bucket, Key=key, Body=json.dumps({"inputs": "Invoice 42"}).encode())
    runtime = boto3.client("sagemaker-runtime", endpoint_url=os.environ["AWS_ENDPOINT_URL_SAGEMAKER"])
    location = runtime.invoke_endpoint_async(EndpointName=setup.endpoint,
                                             InputLocation=f"s3://{setup.bucket}/{key}")["OutputLocation"]
    bucket, _, output_key = location.removeprefix("s3://").partition("/")
    deadline = time.monotonic() + 30
    while True:
        try:
            s3.head_object(Bucket=bucket, Key=output_key)
            return location
        except s3.exceptions.ClientError:
            assert time.monotonic() < deadline, f"no output at {location}"
            time.sleep(0.1)


def test_after_wiring_outputs_land_under_the_granted_prefix():
    setup = miswired()
    assert output_location_of_a_job(setup).startswith(f"s3://{setup.bucket}/legacy/")
    result = run_script("wire_endpoint.py", setup.wiring_args() + ["--wait", "--poll-secs", "0.05"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert output_location_of_a_job(setup).startswith(f"s3://{setup.bucket}/outputs/")


def printed_policy(stdout: str) -> dict:
    import json
    text = stdout.split("needs this policy", 1)[1].split(":\n", 1)[1]
    return json.JSONDecoder().raw_decode(text)[0]


def test_the_execution_roles_policy_is_printed_and_attached_on_request(iam):
    import json
    setup = miswired()
    role = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1"
    args = setup.wiring_args() + ["--model-execution-role-arn", role]
    dry = run_script("wire_endpoint.py", args + ["--dry-run", "--attach-role-policy"])
    assert dry.returncode == 0, dry.stderr
    assert f"The endpoint's execution role {role} needs this policy" in dry.stdout
    assert iam.attached == [], "a dry run attaches nothing"
    s3 = f"arn:aws:s3:::{setup.bucket}"
    expected = {"Version": "2012-10-17", "Statement": [
        {"Sid": "PublishOutcomes", "Effect": "Allow", "Action": "sns:Publish",
         "Resource": [setup.success_topic, setup.error_topic]},
        {"Sid": "WriteOutcomes", "Effect": "Allow", "Action": "s3:PutObject",
         "Resource": [f"{s3}/outputs/*", f"{s3}/failures/*"]},
        {"Sid": "ReadInputs", "Effect": "Allow", "Action": "s3:GetObject", "Resource": [f"{s3}/inputs/*"]}]}
    assert printed_policy(dry.stdout) == expected

    key = "arn:aws:kms:us-east-1:123456789012:key/k-1"
    result = run_script("wire_endpoint.py", args + ["--attach-role-policy", "--bucket-kms-key-arn", key])
    assert result.returncode == 0, result.stdout + result.stderr
    (attached,) = iam.attached
    assert (attached["RoleName"], attached["PolicyName"]) == ("AmazonSageMaker-ExecutionRole-1",
                                                              f"mcp-async-jobs-{setup.endpoint}")
    document = json.loads(attached["PolicyDocument"])
    assert document == printed_policy(result.stdout)
    assert document["Statement"][:3] == expected["Statement"]
    assert document["Statement"][3] == {"Sid": "UseKeys", "Effect": "Allow",
                                        "Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Resource": [key]}
    assert f"attached mcp-async-jobs-{setup.endpoint} to role AmazonSageMaker-ExecutionRole-1" in result.stdout


def test_the_catalogs_endpoints_are_wired_too_or_one_alone():
    setup = miswired()
    other = setup.aws["sns"].create_topic(Name=f"doctor-{setup.id}-older-success")["TopicArn"]
    churn = catalog_endpoint(setup, async_config(setup, SuccessTopic=other))
    wait = ["--wait", "--poll-secs", "0.05"]
    alone = run_script("wire_endpoint.py", setup.wiring_args() + wait)
    assert alone.returncode == 0, alone.stderr
    assert churn not in alone.stdout

    result = run_script("wire_endpoint.py", setup.wiring_args() + wait + ["--catalog-endpoint-name", churn])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"== endpoint {setup.endpoint}" in result.stdout and f"== endpoint {churn}" in result.stdout
    assert f"endpoint {setup.endpoint} is already wired" in result.stdout
    sm = setup.aws["sagemaker"]
    config = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName=churn)["EndpointConfigName"])
    assert "-wired-" in config["EndpointConfigName"]
    assert config["AsyncInferenceConfig"]["OutputConfig"]["NotificationConfig"]["SuccessTopic"] == setup.success_topic
