"""The doctor's MCP Events checks end to end on the local stack: the delivery queue, its
mapping and DLQ, the events table's stream, the stream mapping and its failure queue."""

import json
import sys

import pytest
from botocore.stub import Stubber

from wiring import FUNCTION_ROLES, SCRIPTS, Setup, lines_by_check, run_script

sys.path.insert(0, str(SCRIPTS))
import doctor  # noqa: E402
import doctor_delivery  # noqa: E402
from doctor_run import failed_lines, only_failure, printed_statement, run_doctor  # noqa: E402
from iam_fixtures import fake_iam, iam  # noqa: F401,E402 (fixtures)


# ---------------------------------------------------------------- MCP Events' webhook deliveries


def test_a_disabled_event_source_mapping_fails_with_the_command_that_enables_it():
    setup = Setup().build(skip=("event delivery",))
    uuid = setup.create_event_delivery(enabled=False)
    line = only_failure(setup, "delivery queue")
    assert f"the event source mapping {uuid} from doctor-{setup.id}-delivery.fifo to {setup.event_delivery} " \
           "is Disabled" in line
    assert f"aws lambda update-event-source-mapping --uuid {uuid} --enabled" in line


def test_a_delivery_queue_that_feeds_no_function_fails():
    setup = Setup().build(skip=("event delivery",))
    line = only_failure(setup, "delivery queue")
    assert f"doctor-{setup.id}-delivery.fifo feeds no {setup.event_delivery}" in line
    assert "EventDeliveryEventSource" in line


def test_deliveries_in_the_dlq_are_a_warning_with_their_count_and_the_redrive():
    setup = Setup().build()
    for n in range(2):
        setup.aws["sqs"].send_message(QueueUrl=setup.delivery_dlq_url, MessageBody=json.dumps({"delivery": n}),
                                      MessageGroupId="subscription-1", MessageDeduplicationId=f"d-{n}")
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout
    status, line = lines[f"DLQ doctor-{setup.id}-delivery-dlq.fifo"]
    assert status == "warn", result.stdout
    assert "2 webhook deliveries event-delivery did not finish in 20 receives" in line
    assert f"make redrive QUEUE_URL={setup.delivery_dlq_url} ARGS=--event-deliveries" in line
    assert all(s == "ok" for c, (s, _) in lines.items() if c != f"DLQ doctor-{setup.id}-delivery-dlq.fifo")


def test_a_denied_delivery_call_of_event_delivery_is_a_fail_line(iam):
    setup = Setup().build()
    role = FUNCTION_ROLES["event-delivery"]
    queue = setup.aws["sqs"].get_queue_attributes(QueueUrl=setup.delivery_queue_url,
                                                  AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    iam.deny(role, "sqs:ChangeMessageVisibility", queue)
    result, _ = run_doctor(setup)
    assert result.returncode == 1, result.stdout
    (line,) = failed_lines(result.stdout)
    assert line.startswith(f"FAIL  event-delivery role sqs:ChangeMessageVisibility (delivery queue): {role} may not "
                           f"sqs:ChangeMessageVisibility on {queue} (implicitDeny)")
    assert printed_statement(line) == {"Effect": "Allow", "Action": "sqs:ChangeMessageVisibility", "Resource": queue}
    simulated = {(a, r) for req in iam.requests if req["role"] == role for a in req["actions"] for r in req["resources"]}
    table = f"arn:aws:dynamodb:us-east-1:123456789012:table/doctor-{setup.id}-subscriptions"
    assert simulated == {("dynamodb:GetItem", table), ("dynamodb:UpdateItem", table), ("sqs:SendMessage", queue),
                         ("sqs:ChangeMessageVisibility", queue)}


def test_a_mapping_on_its_way_to_enabled_is_a_warning_and_without_a_queue_the_check_is_skipped():
    """What moto cannot show: a mapping Lambda is still enabling, stubbed."""
    import boto3
    functions = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    arn = "arn:aws:sqs:us-east-1:123456789012:mcp-event-delivery-u.fifo"
    with Stubber(functions) as stub:
        stub.add_response("list_event_source_mappings", {"EventSourceMappings": [{
            "UUID": "6c1d0a2e-3f4b-4c5d-8e9f-0a1b2c3d4e5f", "State": "Enabling", "EventSourceArn": arn,
            "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:s-EventDeliveryFunction-3"}]},
            {"EventSourceArn": arn})
        result = doctor_delivery.check_mapping(functions, doctor.Targets(event_delivery="s-EventDeliveryFunction-3"), arn)
    assert result.status == "warn" and "is Enabling" in result.detail and "run the doctor again" in result.fix
    assert [r.line() for r in doctor_delivery.check_delivery(None, doctor.Targets())] == [
        "skip  delivery queue: the delivery queue is not known (give --delivery-queue-url)"]


# ---------------------------------------------------------------- the events table's stream


def test_an_events_table_without_a_stream_fails_and_its_mapping_is_not_looked_for():
    setup = Setup(events_stream=None).build(skip=("event stream",))
    result, lines = run_doctor(setup)
    assert result.returncode == 1 and {c for c, (s, _) in lines.items() if s == "FAIL"} == {"events stream"}, \
        result.stdout
    line = lines["events stream"][1]
    assert f"{setup.events_table} has no stream" in line and "events/poll still has every event" in line
    assert "redeploy the stack" in line and "StreamViewType=NEW_IMAGE" in line
    assert lines["stream mapping"] == ("skip", "skip  stream mapping: the events table has no stream to map")
    # The failure queue, named, is still looked at.
    assert lines["stream failure queue"][0] == "ok", result.stdout


def test_a_stream_without_the_new_image_fails():
    setup = Setup(events_stream="KEYS_ONLY").build()
    line = only_failure(setup, "events stream")
    assert f"{setup.events_table} streams KEYS_ONLY, without the new image event-delivery reads" in line


def test_a_missing_stream_mapping_fails():
    setup = Setup().build(skip=("event stream",))
    line = only_failure(setup, "stream mapping")
    assert f"the events stream feeds no {setup.event_delivery} (event source mappings: none)" in line
    assert "EventDeliveryStreamEventSource" in line


def test_a_stream_mapping_without_the_filter_or_a_destination_fails_with_the_command_that_sets_them():
    setup = Setup().build(skip=("event stream",))
    uuid = setup.create_stream_mapping(with_filter=False, with_destination=False)
    line = only_failure(setup, "stream mapping")
    assert "it has no filter: every change to the events table invokes event-delivery" in line
    assert "it has no on-failure destination" in line
    fix = line.split("Fix: ", 1)[1]
    assert fix.startswith(f"aws lambda update-event-source-mapping --uuid {uuid} --filter-criteria ")
    criteria = json.loads(fix.split("--filter-criteria '", 1)[1].split("'", 1)[0])
    assert json.loads(criteria["Filters"][0]["Pattern"]) == doctor_delivery.WEBHOOK_EVENTS
    failures = setup.aws["sqs"].get_queue_attributes(QueueUrl=setup.stream_failure_queue_url,
                                                     AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    destination = json.loads(fix.split("--destination-config '", 1)[1].split("'", 1)[0])
    assert destination == {"OnFailure": {"Destination": failures}}


def test_a_disabled_stream_mapping_fails_with_the_command_that_enables_it():
    setup = Setup().build(skip=("event stream",))
    uuid = setup.create_stream_mapping(enabled=False)
    line = only_failure(setup, "stream mapping")
    assert "it is Disabled" in line and f"--uuid {uuid} --enabled" in line


def test_records_of_batches_given_up_on_are_a_warning_saying_the_events_are_in_the_log():
    setup = Setup().build()
    # What Lambda records for a stream batch: where it was, not the events.
    setup.aws["sqs"].send_message(QueueUrl=setup.stream_failure_queue_url, MessageBody=json.dumps({
        "requestContext": {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 11},
        "DDBStreamBatchInfo": {"shardId": "shardId-1", "startSequenceNumber": "100", "endSequenceNumber": "109",
                               "batchSize": 10, "streamArn": setup.stream_arn}}))
    result, lines = run_doctor(setup)
    assert result.returncode == 0, result.stdout
    status, line = lines["stream failure queue"]
    assert status == "warn", result.stdout
    assert f"1 record in doctor-{setup.id}-stream-failures of events-stream batches event-delivery gave up on" in line
    assert "events/poll" in line and f"aws sqs purge-queue --queue-url {setup.stream_failure_queue_url}" in line
    assert "make redrive" not in line and "nothing redrives them" in line
    assert all(s == "ok" for c, (s, _) in lines.items() if c != "stream failure queue"), result.stdout


def test_the_stream_failure_queue_is_found_through_the_mappings_destination():
    setup = Setup().build()
    args = setup.doctor_args()
    at = args.index("--stream-failure-queue-url")
    result = run_script("doctor.py", args[:at] + args[at + 2:])
    lines = lines_by_check(result.stdout)
    assert result.returncode == 0, result.stdout
    assert lines["stream failure queue"] == ("ok", f"ok    stream failure queue: doctor-{setup.id}-stream-failures is "
                                                   "empty"), result.stdout
    assert "batches given up on to doctor-" in lines["stream mapping"][1]


def test_make_redrive_replays_no_record_of_the_stream_failure_queue():
    import redrive
    record = {"requestContext": {"functionArn": "arn:aws:lambda:us-east-1:123456789012:function:s-EventDelivery",
                                 "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 11},
              "version": "1.0", "DDBStreamBatchInfo": {"shardId": "shardId-1", "startSequenceNumber": "100",
                                                       "endSequenceNumber": "109", "batchSize": 10}}
    with pytest.raises(redrive.NotUnderstood, match="nothing replays it") as refused:
        redrive.understand({"MessageId": "m-1", "Body": json.dumps(record)},
                           {"notification-handler": "s-NotificationHandler", "pipeline-router": "s-PipelineRouter"})
    assert refused.value.kind == "stream-failure-record"


def test_the_doctors_filter_is_the_templates():
    from test_template import RESOURCES
    (stream_filter,) = RESOURCES["EventDeliveryStreamEventSource"]["Properties"]["FilterCriteria"]["Filters"]
    assert json.loads(stream_filter["Pattern"]) == doctor_delivery.WEBHOOK_EVENTS


def test_a_mapping_lambda_reports_a_problem_on_is_a_warning_and_without_an_events_table_the_stream_is_skipped():
    """What moto cannot show: Lambda's LastProcessingResult, stubbed."""
    import boto3
    functions = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stream = "arn:aws:dynamodb:us-east-1:123456789012:table/s-EventsTable-5/stream/2026-01-01T00:00:00.000"
    failures = "arn:aws:sqs:us-east-1:123456789012:s-EventStreamFailureQueue-6"
    with Stubber(functions) as stub:
        stub.add_response("list_event_source_mappings", {"EventSourceMappings": [{
            "UUID": "6c1d0a2e-3f4b-4c5d-8e9f-0a1b2c3d4e5f", "State": "Enabled", "EventSourceArn": stream,
            "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:s-EventDeliveryFunction-3",
            "FilterCriteria": {"Filters": [{"Pattern": json.dumps(doctor_delivery.WEBHOOK_EVENTS)}]},
            "DestinationConfig": {"OnFailure": {"Destination": failures}},
            "LastProcessingResult": "PROBLEM: Function call failed"}]}, {"EventSourceArn": stream})
        result, destination = doctor_delivery.check_stream_mapping(
            functions, doctor.Targets(event_delivery="s-EventDeliveryFunction-3"), stream)
    assert result.status == "warn" and "PROBLEM: Function call failed" in result.detail, result.line()
    assert destination == failures

    class NoClients:
        def client(self, name):
            raise AssertionError(f"{name} asked for, with nothing to check")
    lines = doctor_delivery.check_stream(NoClients(), doctor.Targets())
    assert [r.line() for r in lines] == [
        "skip  events stream: the events table is not known (give --events-table)",
        "skip  stream failure queue: the stream failure queue is not known (give --stream-failure-queue-url)"]
