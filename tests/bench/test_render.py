"""BENCHMARKS.md's renderer on a hand-made data set: it shows each figure as given, in the
table it belongs to, and needs nothing running."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import results as R  # noqa: E402
from render import fmt, render  # noqa: E402


def data(**changes) -> R.Results:
    values = dict(
        environment=R.Environment(date="2026-01-02 03:04 UTC", took_s=175.6, cpu="Test CPU", cores=2,
                                  system="Linux 6.1", machine="x86_64", python="3.11.7", boto3="1.43.108",
                                  events=100, cold=5, delay_ms=10.0),
        targets=[R.Target("init ≥ 40x shorter", 73.4, "{:.0f}x", True),
                 R.Target("init < 10 ms", 5.471, "ms", True),
                 R.Target("overhead ≤ 1 ms", 1.913, "ms", False)],
        cold=[R.ColdStart("notification-handler", "HTTP", 5.47, 22.7, 28.2),
              R.ColdStart("python-reference", "HTTP", 402.4, 20.8, 423.0),
              R.ColdStart("mcp-tools (MCP client, tools/list)", "HTTP", 5.63, 0.52, 6.17)],
        cold_ratio={"HTTP": R.ColdRatio(73.4, 15.0), "HTTPS": R.ColdRatio(127.7, 24.9)},
        tls_cost={"notification-handler": R.TlsCost(0.44, 14.1, 17.9), "python-reference": R.TlsCost(100.2, 20.5, 31.0)},
        runtime_ms=0.05,
        warm=[R.Warm("notification-handler", "output in S3", ["S3 GetObject", "DynamoDB UpdateItem"],
                     12.6, 11.4, 10.8, 1.14, 1.47, 8.94, 12.0, 0.46, 0.88),
              R.Warm("python-reference", "output in S3", ["S3 GetObject", "DynamoDB UpdateItem"],
                     14.2, 7.77, 7.52, 6.02, 5.73, 70.4)],
        warm_comparisons=[R.WarmComparison("output in S3", 1.14, 6.02, 5.28, 12.6, 14.2)],
        mcp=[R.McpOperation("tools/list", [], 0.39, 0.05, 0.34, 3.53, 0.31, 0.05, 0.34, 0.0),
             R.McpOperation("check_job_status", ["DynamoDB GetItem"], 3.17, 2.56, 0.57, 6.31, 0.66, 2.81, 0.36, 0.18)],
        mcp_rss_mb=12.44,
        polls={"check_job_status wait_secs=3, job stays pending": ["DynamoDB GetItem"] * 3},
        batch_calls=200.0,
        batches=[R.Batch("moto", 1663.0, 1841.0, 0.903, 18.41), R.Batch("fixed 10 ms per call", 2190.0, 155.0, 14.13, 1.55)],
        criterion_us={"parse a notification": 4.5, "decide": 6.51},
        entropy=[R.Entropy("with jitter entropy", 31160, 1)],
        sizes_mb={"notification-handler": (3.141, 7.139)},
        init_floor=[R.InitAgainstFloor("notification-handler", "empty buffered Rust Lambda", 5.47, 3.2, 5.47 / 3.2,
                                       4.1, 5.47 / 4.1),
                    R.InitAgainstFloor("mcp-tools", "empty streaming Rust Lambda", 6.4, 3.3, 6.4 / 3.3, 4.1, 6.4 / 4.1)],
        init_rounds=15,
    )
    values.update(changes)
    return R.Results(**values)


def section(text: str, title: str) -> list[str]:
    """The table rows of one section."""
    lines = text.split("\n## " + title + "\n", 1)[1].split("\n## ", 1)[0].splitlines()
    return [line for line in lines if line.startswith("| ") and not line.startswith("| ---")][1:]


def test_times_are_shown_to_three_significant_figures_or_so():
    assert [fmt(x) for x in (0.05, 5.471, 12.64, 402.4, 1841.0)] == ["0.05 ms", "5.47 ms", "12.6 ms", "402 ms", "1841 ms"]


def test_the_header_says_when_where_and_how_it_ran():
    text = render(data())
    assert text.startswith("# Benchmarks\n\nWritten by `make bench` (bench/run.py)")
    assert "- date: 2026-01-02 03:04 UTC; the run took 176 s\n" in text
    assert "- machine: Test CPU, 2 cores, Linux 6.1, x86_64\n" in text
    assert "(`bench/run.py --events 100 --cold 5 --delay-ms 10`)" in text
    assert "the reference: Python 3.11.7, boto3 1.43.108, awslambdaric" in text
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_targets_come_right_after_the_header_each_with_its_value_and_whether_it_was_met():
    text = render(data())
    assert text.index("## Targets") < text.index("## Cold start")
    assert section(text, "Targets") == ["| init ≥ 40x shorter | 73x | yes |", "| init < 10 ms | 5.47 ms | yes |",
                                        "| overhead ≤ 1 ms | 1.91 ms | **no** |"]


def test_every_table_shows_its_rows_in_the_given_order():
    text = render(data())
    assert section(text, "Cold start") == [
        "| notification-handler | HTTP | 5.47 ms | 22.7 ms | 28.2 ms |",
        "| python-reference | HTTP | 402 ms | 20.8 ms | 423 ms |",
        "| mcp-tools (MCP client, tools/list) | HTTP | 5.63 ms | 0.52 ms | 6.17 ms |"]
    assert "init **73x** shorter, first response **15x** sooner (HTTP); 128x and 25x over HTTPS." in text
    assert text.index("## Cold start") < text.index("## Init against its floor") < text.index("## Warm latency")
    assert section(text, "Init against its floor") == [
        "| notification-handler | 5.47 ms | empty buffered Rust Lambda | 3.20 ms | 1.71x | 4.10 ms | 1.33x |",
        "| mcp-tools | 6.40 ms | empty streaming Rust Lambda | 3.30 ms | 1.94x | 4.10 ms | 1.56x |"]
    assert "15 rounds of fresh processes" in text
    assert section(text, "Warm latency per event, against the floor") == [
        "| notification-handler | output in S3 | S3 GetObject, DynamoDB UpdateItem | 12.6 ms | 11.4 ms | 1.11x"
        " | 10.8 ms | 1.14 ms | 12.0 ms | 0.46 ms | 1.47 ms | 0.88 ms | 8.9 MB |",
        # The reference's SDK is boto3: no floor through the Rust SDK.
        "| python-reference | output in S3 | S3 GetObject, DynamoDB UpdateItem | 14.2 ms | 7.77 ms | 1.83x"
        " | 7.52 ms | 6.02 ms | – | – | 5.73 ms | – | 70.4 MB |"]
    assert ("- output in S3: time of its own per event (above the floor) 1.14 ms for notification-handler, 6.02 ms"
            " for the reference (5x); latency 12.6 ms against 14.2 ms, most of it the emulator's.") in text
    assert section(text, "mcp-tools through an MCP client") == [
        "| tools/list | none | 0.39 ms | 0.05 ms | 7.80x | 0.34 ms | 0.05 ms | 0.34 ms | 0.31 ms | 0.00 ms | 3.53 ms |",
        "| check_job_status | DynamoDB GetItem | 3.17 ms | 2.56 ms | 1.24x | 0.57 ms | 2.81 ms | 0.36 ms | 0.66 ms"
        " | 0.18 ms | 6.31 ms |"]
    assert "Peak RSS of mcp-tools after these calls: 12.4 MB." in text
    # The time above the raw floor, split at the SDK's floor, for the operation with the most calls.
    assert ("the operation with the most calls (check_job_status, 1 AWS call): 0.57 ms above it, of which the"
            " SDK's part is 0.25 ms (its floor less the raw one; 0.25 ms a call) and the function's own code's"
            " 0.36 ms. The SDK alone spends 0.18 ms of CPU a call here") in text
    assert section(text, "AWS calls per operation, counted at the emulator") == [
        "| notification-handler: output in S3 | S3 GetObject, DynamoDB UpdateItem |",
        "| mcp-tools: tools/list | none |",
        "| mcp-tools: check_job_status | DynamoDB GetItem |",
        "| mcp-tools: check_job_status wait_secs=3, job stays pending | DynamoDB GetItem, DynamoDB GetItem, DynamoDB GetItem |",
        "| notification-handler: SQS batch of 100 (output in S3) | 200 calls |"]
    assert section(text, "SQS batch of 100 notifications") == [
        "| moto | 1663 ms | 1841 ms | 0.9x | 18.4 ms |",
        "| fixed 10 ms per call | 2190 ms | 155 ms | 14.1x | 1.55 ms |"]
    assert section(text, "Handler CPU per notification (criterion, no I/O)") == [
        "| decide | 6.51 µs |", "| parse a notification | 4.50 µs |"]
    assert section(text, "aws-lc's first random bytes (bench/entropy)") == ["| with jitter entropy | 31.16 ms | 1 µs |"]
    assert section(text, "Artifacts (arm64, zipped as Lambda takes them)") == ["| notification-handler | 3.14 MB | 7.14 MB |"]


def test_each_zip_is_shown_by_part_when_measured():
    parts = {"code": 1.9, "unwind tables": 0.41, "relocations": 0.12, "constants": 0.6, "the rest": 0.111}
    text = render(data(zip_parts_mb={"notification-handler": parts}))
    rows = text.split("\n## Artifacts (arm64, zipped as Lambda takes them)\n", 1)[1].splitlines()
    assert "| function | zip | unzipped | code | unwind tables | relocations | constants | the rest |" in rows
    assert section(text, "Artifacts (arm64, zipped as Lambda takes them)") == [
        "| notification-handler | 3.14 MB | 7.14 MB | 1.90 MB | 0.41 MB | 0.12 MB | 0.60 MB | 0.11 MB |"]
    assert "The functions abort on a panic" in text


def test_a_ratio_that_cannot_be_taken_is_left_out():
    text = render(data(warm_comparisons=[R.WarmComparison("responseBody", 0.0, 3.3, None, 11.4, 9.71)]))
    assert "0.00 ms for notification-handler, 3.30 ms for the reference; latency" in text


def test_what_was_not_built_says_so():
    text = render(data(entropy=[], sizes_mb={}))
    assert "| (not built: run `make bench`) | | |" in text
    assert "| (no zips in target/lambda: run `make bench`) | | |" in text


def test_the_cost_section_shows_each_scenario_by_service_and_each_default_weighed():
    c = R.Cost(region="us-east-1", checked="2026-12-02",
               prices={"lambda_request": 0.2e-6, "lambda_arm64_gb_second": 0.0000133334, "sns_delivery": 0.0},
               sources=[("Lambda", "its pricing page")],
               rows=[R.CostRow("job, one check", "Rust", "small (70 B)",
                               {"Lambda": 0.61e-6, "DynamoDB": 1.9e-6, "S3": 10.4e-6, "SNS": 0.5e-6}, 13.41e-6, 13.41,
                               3, 1, "S3 PutObject, 2 requests: $10.00 per million")],
               headline="A job costs **$13.41 per million jobs**.",
               changes=[R.CostChange("INLINE_RESULT_MAX_BYTES 65536 → 4096", "medium", "$55.00 per million",
                                     "$14.00 per million", "75%")],
               notes=["SageMaker is excluded."])
    text = render(data(cost=c))
    assert text.index("## SQS batch of 100 notifications") < text.index("## What a job costs") \
        < text.index("## Handler CPU per notification")
    assert "\nA job costs **$13.41 per million jobs**.\n" in text
    rows = section(text, "What a job costs")
    assert rows[0] == ("| job, one check | Rust | small (70 B) | $0.610 | $1.90 | $10.40 | $0.500 | – | **$13.41** | 3 | 1"
                       " | S3 PutObject, 2 requests: $10.00 per million |")
    assert "| INLINE_RESULT_MAX_BYTES 65536 → 4096 | medium | $55.00 per million | $14.00 per million | 75% |" in rows
    assert "| Lambda request | $0.200 |" in rows and "| Lambda duration, arm64, per GB-second | $0.0000133334 |" in rows
    assert "| SNS delivery to Lambda or SQS | free |" in rows
    assert "- SageMaker is excluded." in text and "Sources: Lambda: its pricing page." in text


def test_a_run_without_the_cost_phase_has_no_cost_section():
    assert "## What a job costs" not in render(data())


def test_a_cost_only_run_replaces_just_the_cost_section():
    from render import splice_cost

    def priced(headline):
        return R.Cost(region="us-east-1", checked="2026-12-02", prices={}, sources=[], rows=[], headline=headline,
                      changes=[], notes=[], provenance="This section alone is from a cost-only run.")

    full = render(data())
    first = splice_cost(full, priced("First."))
    assert first.index("## SQS batch of 100") < first.index("## What a job costs") < first.index("## Handler CPU")
    assert "\nThis section alone is from a cost-only run.\n\nFirst.\n" in first
    second = splice_cost(first, priced("Second."))
    assert "First." not in second and second.count("## What a job costs") == 1
    assert second.replace("Second.", "First.") == first
    assert splice_cost("# Benchmarks\n", priced("Alone.")).startswith("# Benchmarks\n\n## What a job costs\n")


def paths() -> R.InputPaths:
    inline = R.McpOperation("submit_job", ["DynamoDB PutItem", "SageMakerRuntime InvokeEndpointAsync",
                                           "DynamoDB UpdateItem"], 10.2, 9.8, 1.1, 14.0)
    s3 = R.McpOperation("submit_job, INLINE_INPUT_MAX_BYTES=0 (input through S3)",
                        ["DynamoDB PutItem", "S3 PutObject", "SageMakerRuntime InvokeEndpointAsync",
                         "DynamoDB UpdateItem"], 14.1, 13.8, 1.2, 17.9, 1.31, 13.5, 0.6, 0.9)
    return R.InputPaths("INLINE_INPUT_MAX_BYTES=0", inline, s3, 3.9, 3.9, 4.0)


def test_submit_jobs_two_input_paths_are_shown_side_by_side_with_what_moto_cannot_show():
    p = paths()
    text = render(data(mcp=[p.inline, p.through_s3], input_paths=p))
    assert section(text, "mcp-tools through an MCP client")[-1] == (
        "| submit_job, INLINE_INPUT_MAX_BYTES=0 (input through S3) | DynamoDB PutItem, S3 PutObject,"
        " SageMakerRuntime InvokeEndpointAsync, DynamoDB UpdateItem | 14.1 ms | 13.8 ms | 1.02x | 1.20 ms | 13.5 ms"
        " | 0.60 ms | 1.31 ms | 0.90 ms | 17.9 ms |")
    assert ("through S3 (`INLINE_INPUT_MAX_BYTES=0`), two mcp-tools processes called in turn: 10.2 ms against"
            " 14.1 ms in the function, 14.0 ms against 17.9 ms at the client; the inline path saves 3.90 ms") in text
    assert "(an expectation, not measured here)" in text
    assert "not measured here" not in render(data())


def test_an_mcp_only_run_replaces_its_section_and_its_rows_of_the_calls_table():
    from render import splice_mcp

    full = render(data())
    p = paths()
    spliced = splice_mcp(full, 100, [p.inline, p.through_s3], 12.0, {}, p, "This section alone is from --mcp-only.")
    assert "\n## mcp-tools through an MCP client\n\nThis section alone is from --mcp-only.\n\n" in spliced
    assert "| tools/list | none |" not in spliced and "Peak RSS of mcp-tools after these calls: 12.0 MB." in spliced
    assert section(spliced, "AWS calls per operation, counted at the emulator") == [
        "| notification-handler: output in S3 | S3 GetObject, DynamoDB UpdateItem |",
        "| mcp-tools: submit_job | DynamoDB PutItem, SageMakerRuntime InvokeEndpointAsync, DynamoDB UpdateItem |",
        "| mcp-tools: submit_job, INLINE_INPUT_MAX_BYTES=0 (input through S3) | DynamoDB PutItem, S3 PutObject,"
        " SageMakerRuntime InvokeEndpointAsync, DynamoDB UpdateItem |",
        "| notification-handler: SQS batch of 100 (output in S3) | 200 calls |"]
    assert spliced.split("## mcp-tools through")[0] == full.split("## mcp-tools through")[0]
    assert spliced.split("## SQS batch of 100")[1] == full.split("## SQS batch of 100")[1]


def test_the_hostile_section_shows_each_request_beside_its_cheap_one_and_replaces_only_itself():
    from render import HOSTILE_HEADING, splice_hostile
    rows = [{"what": "5 MB `[0,0,…]`, no token", "bytes": 5_238_783, "status": 401, "answer": "Unauthorized",
             "answer_bytes": 46, "peak_mb": 15.04, "ms": 36.01, "cheap_peak_mb": 14.96, "cheap_ms": 35.7},
            {"baseline_rss_mb": 15.2}]
    text = "# Benchmarks\n\n## Warm\n\nwarm\n\n## Handler CPU per notification (criterion, no I/O)\n\ncpu\n"
    once = splice_hostile(text, rows, "From the hostile run.")
    assert "| 5 MB `[0,0,…]`, no token | 5,238,783 | 401, 46 bytes | 15.0 MB | 36.0 ms | 15.0 MB | 35.7 ms |" in once
    assert "the warm process holds 15.2 MB" in once and "From the hostile run." in once
    assert once.index(HOSTILE_HEADING) < once.index("## Handler CPU")
    assert "\nwarm\n" in once and "\ncpu\n" in once
    rows[0]["ms"] = 99.0
    twice = splice_hostile(once, rows, "Again.")
    assert twice.count(HOSTILE_HEADING) == 1 and "| 99.0 ms |" in twice and "From the hostile run." not in twice


def test_a_catalog_tools_first_call_is_shown_beside_the_catalogs_init():
    rows = [R.InitAgainstFloor("mcp-tools", "empty streaming Rust Lambda", 2.0, 1.0, 2.0, 1.5, 2.0 / 1.5),
            R.InitAgainstFloor("mcp-tools, example catalog", "empty streaming Rust Lambda", 2.25, 1.0, 2.25, 1.5, 1.5)]
    text = render(data(init_floor=rows, catalog_first_calls={"first_ms": 3.41, "next_ms": 0.52}))
    init = text.split("\n## Init against its floor\n", 1)[1].split("\n## ", 1)[0]
    assert "- The example catalog adds 0.25 ms to mcp-tools' init" in init
    assert "took 3.41 ms in the function the first time, and 0.52 ms the next" in init
    # A run that did not measure it says nothing of it.
    assert "the first time" not in render(data(init_floor=rows))
    # A catalog's init inside the noise is not a negative cost.
    rows[1] = R.InitAgainstFloor("mcp-tools, example catalog", "empty streaming Rust Lambda", 1.94, 1.0, 1.94, 1.5, 1.94 / 1.5)
    assert ("- The example catalog adds nothing measurable to mcp-tools' init (its median 0.06 ms below, within"
            " the noise)") in render(data(init_floor=rows))


def test_what_tls_adds_is_read_against_the_spread_of_the_http_first_events():
    text = render(data())
    assert "notification-handler 0.44 ms (its HTTP first events 14.1 ms to 17.9 ms, inside it); the reference" \
           " 100 ms (its HTTP first events 20.5 ms to 31.0 ms)." in text


def test_what_tls_adds_is_the_median_of_the_pairs_not_of_the_medians():
    from summary import cold_figures

    def runs(*first_events):
        return [{"init_ms": 1.0, "first_event_ms": ms, "first_response_ms": ms + 1} for ms in first_events]

    # Two pairs add 1 ms; in the third the HTTP run was slow. The medians differ by -5 ms.
    cold = {("notification-handler", False): runs(10, 20, 30), ("notification-handler", True): runs(11, 21, 15),
            ("python-reference", False): runs(20, 30, 40), ("python-reference", True): runs(29, 40, 50)}
    _, _, tls = cold_figures({"cold": cold, "mcp": {"cold": runs(5)}})
    assert tls["notification-handler"] == R.TlsCost(1.0, 10, 30)
    assert tls["python-reference"] == R.TlsCost(10.0, 20, 40)


def test_the_events_part_of_the_cost_section_shows_each_charge_each_stretch_beside_its_floor_and_the_targets():
    from render import EVENTS_HEADING, splice_cost
    events = R.EventsDelivery(
        intro="One webhook subscription.", batch=10,
        terms=[R.EventsTerm("DynamoDB PutItem (notification-handler)", "write units", 1, 0.625e-6, 1, 0.625e-6),
               R.EventsTerm("event-delivery requests", "requests", 1, 0.2e-6, 0.1, 0.02e-6),
               R.EventsTerm("DynamoDB Streams GetRecords (event source mapping)", "requests", 1, 0.0, 0.1, 0.0)],
        total_single=0.825e-6, total_batched=0.645e-6,
        timings=[R.EventsTiming("notification → 2xx", 116.1, 220.34, "two empty invocations", 11.4, 15.0),
                 R.EventsTiming("on the stream", 102.23, 196.5, "none", float("nan"), float("nan"))],
        targets=[R.Target("a delivered event ≤ $2.00 per million, delivered alone", 2.59, "${:.2f} per million",
                          False),
                 R.Target("p50 ≤ 1 s (local stack)", 116.1, "ms", True)],
        findings=["What dominates: DynamoDB."])
    c = R.Cost(region="us-east-1", checked="2026-12-02", prices={"dynamodb_streams_lambda_read": 0.0,
                                                                  "sqs_fifo_request": 0.5e-6},
               sources=[], rows=[], headline="A job costs.", changes=[], notes=[], events=events)
    text = render(data(cost=c))
    part = text.split("\n" + EVENTS_HEADING + "\n", 1)[1].split("\n### ", 1)[0]
    assert part.startswith("\nOne webhook subscription.\n\n| charge | alone: per event | per million events"
                           " | 10 to a batch: per event | per million events |\n")
    rows = [line for line in part.splitlines() if line.startswith("| ")]
    # A free charge shows as a dash, as the cost table shows nothing.
    assert rows[1:5] == ["| DynamoDB PutItem (notification-handler) | 1 write units | $0.625 | 1 write units | $0.625 |",
                         "| event-delivery requests | 1 requests | $0.200 | 0.1 requests | $0.020 |",
                         "| DynamoDB Streams GetRecords (event source mapping) | 1 requests | – | 0.1 requests | – |",
                         "| **total** | | **$0.825** | | **$0.645** |"]
    assert "| notification → 2xx | 116 ms | 220 ms | two empty invocations | 11.4 ms | 15.0 ms |" in rows
    assert "| on the stream | 102 ms | 196 ms | none | – | – |" in rows
    assert "| a delivered event ≤ $2.00 per million, delivered alone | $2.59 per million | **no** |" in rows
    assert "| p50 ≤ 1 s (local stack) | 116 ms | yes |" in rows
    assert "\n- What dominates: DynamoDB.\n" in part
    # Between the cost table and the defaults; the stream's free reads and the FIFO price (retries)
    # in the price table; a cost-only run keeps it.
    assert text.index("## What a job costs") < text.index(EVENTS_HEADING) < text.index("### The defaults")
    assert "| DynamoDB Streams GetRecords made by a Lambda trigger | free |" in text
    assert "| SQS FIFO request (per 64 KiB chunk) | $0.500 |" in text
    assert splice_cost(text, c) == text
    c.events = None
    assert EVENTS_HEADING not in render(data(cost=c))


def test_the_first_answer_at_128_mb_is_the_first_response_plus_the_first_invocations_cpu_stretched():
    from summary import STRETCH_128, first_answer_figures, first_answer_targets
    run = {"first_response_ms": 10.0, "init_cpu_ms": 2.0, "first_event_cpu_ms": 4.0, "next_event_cpu_ms": 1.0,
           "init_ms": 3.0, "first_event_ms": 7.0}
    reference = {**run, "first_response_ms": 450.0, "first_event_cpu_ms": 20.0, "next_event_cpu_ms": 5.0}
    cold = {("notification-handler", False): [run] * 3, ("notification-handler", True): [run],
            ("python-reference", False): [reference] * 3, ("pipeline-router", False): [run]}
    rows = first_answer_figures(cold)
    # Over HTTP only, one row per function.
    assert [a.function for a in rows] == ["notification-handler", "python-reference", "pipeline-router"]
    assert abs(STRETCH_128 - (1769 / 128 - 1)) < 1e-9
    assert abs(rows[0].modelled_128_ms - (10.0 + 4.0 * STRETCH_128)) < 1e-9
    assert rows[0].first_over_next == 4.0
    [ratio] = first_answer_targets(rows)
    assert abs(ratio.value - (450 + 20 * STRETCH_128) / (10 + 4 * STRETCH_128)) < 1e-9 and ratio.met
    text = render(data(first_answers=rows))
    assert section(text, "The first answer at 128 MB")[0] == (
        "| notification-handler | 10.0 ms | 2.00 ms | 4.00 ms | 1.00 ms | 4.0x | 61.3 ms |")
    # A run without the figures has no such section.
    assert "## The first answer at 128 MB" not in render(data())


def test_a_first_invocations_work_is_counted_in_instructions_and_held_to_1_75_times_an_events(tmp_path):
    from first_work import dumped_counts, work_of
    from summary import first_work_figures, first_work_targets

    # callgrind's dumps of one process: at its first `next`, then at each answer.
    for n, count in enumerate([27_000_000, 1_500_000, 900_000, 1_100_000], start=1):
        (tmp_path / f"cg.41.{n}").write_text(f"version: 1\ncmd: bootstrap\nsummary: {count}\ntotals: {count}\n")
    (tmp_path / "cg.41").write_text("summary: 5\n")  # the last, at exit: not a dump
    counts = dumped_counts(tmp_path, 41)
    assert counts == [27_000_000, 1_500_000, 900_000, 1_100_000]
    assert work_of(counts) == {"init": 27_000_000, "first": 1_500_000, "next": 1_000_000}
    with pytest.raises(ValueError):
        work_of(counts[:2])

    runs = {"gateway-target": [work_of(counts)] * 2 + [{"init": 1, "first": 3_000_000, "next": 1_000_000}],
            "pipeline-router": [{"init": 2, "first": 1_200_000, "next": 1_000_000}] * 3}
    rows = first_work_figures(runs)
    assert [(w.function, w.first_over_next) for w in rows] == [("gateway-target", 1.5), ("pipeline-router", 1.2)]
    [met] = first_work_targets(rows)
    assert met.met and met.value == 1.5 and "gateway-target" in met.name
    runs["pipeline-router"] = [{"init": 2, "first": 1_760_000, "next": 1_000_000}] * 3
    [missed] = first_work_targets(first_work_figures(runs))
    assert not missed.met and "pipeline-router" in missed.name
    # A run that did not count holds no target, and shows no table.
    assert first_work_targets([]) == []
    assert "What a first invocation does" not in render(data())
    assert section(render(data(first_work=rows)), "What a first invocation does, in instructions")[0] == (
        "| gateway-target | 27.00 M | 1.50 M | 1.00 M | 1.50x |")


def test_a_catalog_tools_first_call_is_held_to_one_and_a_half_times_its_next_when_measured():
    from summary import catalog_first_call_target
    [met] = catalog_first_call_target({"first_ms": 0.57, "next_ms": 0.39})
    assert met.met and round(met.value, 2) == 1.46
    [missed] = catalog_first_call_target({"first_ms": 0.76, "next_ms": 0.37})
    assert not missed.met and round(missed.value, 2) == 2.05
    # A run that did not measure the calls holds no target for them.
    assert catalog_first_call_target({}) == []


def test_init_is_set_beside_both_floors_of_the_same_rounds():
    from init_floor import SDK_FLOOR
    from summary import init_figures

    init = {"notification-handler": [6.0, 5.0, 7.0], "empty buffered Rust Lambda": [2.0, 3.0, 4.0],
            SDK_FLOOR: [4.0, 5.0, 4.0], "pipeline-router": [4.0] * 3, "gateway-target": [8.0] * 3,
            "empty streaming Rust Lambda": [2.5] * 3, "mcp-tools": [10.0] * 3, "mcp-tools, example catalog": [12.0] * 3}
    rows = {row.function: row for row in init_figures(init)}
    assert (rows["notification-handler"].ratio, rows["notification-handler"].sdk_ratio) == (2.0, 1.5)
    assert (rows["mcp-tools, example catalog"].floor_ms, rows["mcp-tools, example catalog"].sdk_ratio) == (2.5, 3.0)
    assert rows["pipeline-router"].sdk_floor_ms == 4.0
