"""BENCHMARKS.md from a Results (results.py): formatting only, no measuring and no arithmetic
on the samples; every figure comes from the data as it is."""

from __future__ import annotations

from results import REFERENCE, Cost, EventsDelivery, InputPaths, McpOperation, Results, Target, TlsCost

COST_SERVICES = ("Lambda", "DynamoDB", "S3", "SNS", "SQS")


def fmt(ms: float) -> str:
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"


def fmt_or_none(ms: float) -> str:
    """A figure the run may not have (NaN): a dash."""
    return fmt(ms) if ms == ms else "–"


def times(ratio: float | None) -> str:
    return f" ({ratio:.0f}x)" if ratio is not None else ""


def calls(operations: list[str]) -> str:
    return ", ".join(operations) or "none"


def target_value(t: Target) -> str:
    return fmt(t.value) if t.shown_as == "ms" else t.shown_as.format(t.value)


def table_head(columns: list[str]) -> list[str]:
    """A Markdown table's head: the columns' names, then the rule under them."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def table_section(heading: str, paragraphs: list[str], columns: list[str]) -> list[str]:
    """How every table of BENCHMARKS.md opens: its heading, each paragraph before the table,
    then the table's head, a blank line between each."""
    lines = ["", heading, ""]
    for paragraph in paragraphs:
        lines += [paragraph, ""]
    return lines + table_head(columns)


def targets(r: Results) -> list[str]:
    lines = table_section("## Targets", [], ["target", "this run", "met"])
    lines += [f"| {t.name} | {target_value(t)} | {'yes' if t.met else '**no**'} |" for t in r.targets]
    return lines


def header(r: Results) -> list[str]:
    e = r.environment
    return [
        "# Benchmarks",
        "",
        "Written by `make bench` (bench/run.py); every figure below is from one run on this machine.",
        "",
        f"- date: {e.date}; the run took {e.took_s:.0f} s",
        f"- machine: {e.cpu}, {e.cores} cores, {e.system}, {e.machine}",
        f"- command: `make bench` (`bench/run.py --events {e.events} --cold {e.cold} --delay-ms {e.delay_ms:g}`)",
        "- functions: release builds for this machine (the arm64 zips are built from the same source and profile);"
        f" the reference: Python {e.python}, boto3 {e.boto3}, awslambdaric",
        "- AWS: moto in the benchmark's process, over HTTP on 127.0.0.1, and over HTTPS for the TLS rows;"
        " the runtime: bench/runtime_api.py (TCP_NODELAY, one write per answer)",
        "",
        "Times are medians. The machines are noisy: compare the ratios within a run, not across runs.",
    ]


def cold_start(r: Results) -> list[str]:
    lines = table_section(
        "## Cold start",
        ["Init is spawn to the first `next` (Lambda's Init Duration); first response is spawn to the first answer;"
         f" first event is the first invocation alone. Median of {r.environment.cold} fresh processes, each handed a"
         " notification whose output is read from S3."],
        ["function", "AWS over", "init", "first event", "first response"])
    for c in r.cold:
        lines.append(f"| {c.function} | {c.over} | {fmt(c.init_ms)} | {fmt(c.first_event_ms)} | {fmt(c.first_response_ms)} |")
    http, https = r.cold_ratio["HTTP"], r.cold_ratio["HTTPS"]
    lines += [
        "",
        f"- notification-handler against the Python reference: init **{http.init:.0f}x** shorter,"
        f" first response **{http.first_response:.0f}x** sooner (HTTP);"
        f" {https.init:.0f}x and {https.first_response:.0f}x over HTTPS.",
        "- TLS in the first event (HTTPS less HTTP, the median of the pairs: each HTTPS cold start runs right after"
        f" an HTTP one): notification-handler {tls_added(r.tls_cost['notification-handler'])}; the reference"
        f" {tls_added(r.tls_cost['python-reference'])}. Both read the system's roots from SSL_CERT_FILE, as on Lambda;"
        " over HTTPS the file also holds the emulator's CA, and the first event adds the handshake and aws-lc's first"
        " random bytes. The emulator's time is most of a first event, so a difference inside the range of the HTTP"
        " first events is noise.",
    ]
    return lines


def first_answer(r: Results) -> list[str]:
    if not r.first_answers:
        return []
    lines = table_section(
        "## The first answer at 128 MB",
        ["What the first caller of a 128 MB function waits for. Lambda runs init with a whole CPU and an invocation"
         " at 128 MB with 128/1769 of one, so the first response measured here (with a whole CPU) is modelled as"
         " itself plus 12.8 times the first invocation's CPU. CPU is the process's, all threads, read when it asks"
         " for its first event and at each answer; the next events are more of the same kind in the same process"
         " (bench/cold.py's NEXT_EVENTS), their mean. Over HTTP; medians of the cold starts above."],
        ["function", "first response", "init CPU", "first invocation CPU", "next event CPU", "first / next",
         "modelled at 128 MB"])
    for a in r.first_answers:
        lines.append(f"| {a.function} | {fmt(a.first_response_ms)} | {fmt(a.init_cpu_ms)} | {fmt(a.first_event_cpu_ms)}"
                     f" | {fmt(a.next_event_cpu_ms)} | {a.first_over_next:.1f}x | {fmt(a.modelled_128_ms)} |")
    return lines


def first_work(r: Results) -> list[str]:
    if not r.first_work:
        return []
    lines = table_section(
        "## What a first invocation does, in instructions",
        ["The same cold starts, each function under callgrind (bench/first_work.py): instructions counted from its"
         " first `next` to its first answer, and for each next event (their mean). A count moves by a few percent"
         " at most from run to run, with the data, not the machine's load; the CPU time above also holds the first"
         " touch of each page and the CPU's cold caches, which no work moved into init removes. Medians."],
        ["function", "init", "first invocation", "next event", "first / next"])
    for w in r.first_work:
        lines.append(f"| {w.function} | {millions(w.init_instructions)} | {millions(w.first_instructions)}"
                     f" | {millions(w.next_instructions)} | {w.first_over_next:.2f}x |")
    return lines


def millions(instructions: float) -> str:
    return f"{instructions / 1e6:.2f} M"


def tls_added(cost: TlsCost) -> str:
    """What TLS added, beside the range it is read against, saying when it is inside it."""
    spread = cost.http_max_ms - cost.http_min_ms
    inside = ", inside it" if abs(cost.added_ms) < spread else ""
    return f"{fmt(cost.added_ms)} (its HTTP first events {fmt(cost.http_min_ms)} to {fmt(cost.http_max_ms)}{inside})"


def init_against_floor(r: Results) -> list[str]:
    lines = table_section(
        "## Init against its floor",
        ["Init (spawn to the first `next`, Lambda's Init Duration) of each function beside an empty Rust Lambda's"
         " (bench/empty-function: the same lambda_runtime, lambda_http, tokio and patch, answering `{}`, or an empty"
         " streamed body for the Function URL), in the same run: buffered for the event functions, streaming for"
         " mcp-tools; and beside an empty buffered Rust Lambda's that first does the SDK's one-time work the functions"
         " do in init (the SDK's configuration, a DynamoDB client and the warm-up read, through the same adapters):"
         " what a function takes above that is its own. In the same run;"
         f" {r.init_rounds} rounds of fresh processes; a round spawns each once, in an order that turns by"
         " one each round. Medians."],
        ["function", "init", "floor", "floor's init", "init / floor", "with the SDK's one-time work",
         "init / that"])
    for i in r.init_floor:
        lines.append(f"| {i.function} | {fmt(i.init_ms)} | {i.floor} | {fmt(i.floor_ms)} | {i.ratio:.2f}x"
                     f" | {fmt(i.sdk_floor_ms)} | {i.sdk_ratio:.2f}x |")
    rows = {i.function: i for i in r.init_floor}
    if "mcp-tools" in rows and "mcp-tools, example catalog" in rows:
        extra = rows["mcp-tools, example catalog"].init_ms - rows["mcp-tools"].init_ms
        adds = (f"adds {fmt(extra)} to mcp-tools' init" if extra > 0 else
                f"adds nothing measurable to mcp-tools' init (its median {fmt(-extra)} below, within the noise)")
        lines += ["", f"- The example catalog {adds}: the file is read and checked, the 2020-12 metaschema is"
                  " compiled (that draft's alone, not boon 0.6's set of all five), and each tool's schema is checked"
                  " against it and compiled (in init, which runs with a whole CPU, not in a tool's first call, which"
                  " at 128 MB gets 128/1769 of one)."]
    calls = r.catalog_first_calls
    if calls:
        lines += [f"- The first call of a catalog tool: a call of a catalog tool whose arguments its schema"
                  f" refuses (nothing sent anywhere) took {fmt(calls['first_ms'])} in the function the first time, and"
                  f" {fmt(calls['next_ms'])} the next (medians of fresh processes): the process's first pass through"
                  " a call's code, which a built-in tool's first call pays too (docs/performance.md)."]
    return lines


def ratio(value: float, floor: float) -> str:
    return f"{value / floor:.2f}x" if floor > 0 else "–"


def warm(r: Results) -> list[str]:
    lines = table_section(
        "## Warm latency per event, against the floor",
        [f"One process, 5 events to warm up, then {r.environment.events} events, each a new job. Floor: the same AWS"
         " calls replayed right after each event by a minimal client (request bytes prepared beforehand, one kept-alive"
         f" connection), plus the Runtime API exchange of a function that does nothing ({fmt(r.runtime_ms)},"
         " bench/null_function.py); emulator: moto's own time handling the calls. Overhead: median of"
         " (event − floor). The reference and notification-handler run side by side, an event each in turn."
         " Through the SDK alone: the Rust functions' calls made again, after the raw floor's, through the Rust SDK"
         " in a process of its own (shared/adapters/examples/sdk_replay.rs, as for mcp-tools below), with the Runtime"
         " API's exchange; own time: the median of (event − that floor), the function's own code's; the SDK alone's"
         " CPU: that process's for the calls."],
        ["function", "event", "AWS calls", "latency", "floor", "latency / floor", "emulator", "overhead above floor",
         "through the SDK alone", "own time", "CPU per event", "the SDK alone's CPU", "peak RSS"])
    for w in r.warm:
        lines.append(f"| {w.function} | {w.event} | {calls(w.calls)} | {fmt(w.latency_ms)} | {fmt(w.floor_ms)} | "
                     f"{ratio(w.latency_ms, w.floor_ms)} | {fmt(w.emulator_ms)} | {fmt(w.overhead_ms)} | "
                     f"{fmt_or_none(w.sdk_floor_ms)} | {fmt_or_none(w.own_ms)} | {fmt(w.cpu_ms)} | "
                     f"{fmt_or_none(w.sdk_cpu_ms)} | "
                     f"{w.rss_mb:.1f} MB |")
    for c in r.warm_comparisons:
        lines.append("")
        lines.append(f"- {c.event}: time of its own per event (above the floor) {fmt(c.ours_overhead_ms)} for"
                     f" notification-handler, {fmt(c.reference_overhead_ms)} for the reference{times(c.ratio)};"
                     f" latency {fmt(c.ours_latency_ms)} against {fmt(c.reference_latency_ms)}, most of it the emulator's.")
    return lines


MCP_HEADING = "## mcp-tools through an MCP client"


def mcp_tools(r: Results) -> list[str]:
    return mcp_section(r.environment.events, r.mcp, r.mcp_rss_mb, r.input_paths)


def mcp_section(events: int, ops: list[McpOperation], rss_mb: float, paths: InputPaths | None,
                provenance: str = "") -> list[str]:
    lines = table_section(MCP_HEADING, ([provenance] if provenance else []) + [
        "The official Python MCP SDK's client over Streamable HTTP, through a Function URL front (bench/function_url.py),"
        f" {events} calls each after 5 to warm up. Function: the invocation's time. Two floors, each with the"
        " Runtime API's exchange: the calls replayed by the minimal client (raw), and the same calls made again"
        " through the Rust SDK alone (shared/adapters/examples/sdk_replay.rs: clients built as the functions build them,"
        " each call through its own operation with the recorded request in place of a placeholder's, in a"
        " process of its own, right after each call); own time: the function's above the SDK's floor, its own"
        " code's. CPU: the function's process's CPU time per call (from one call's start to the next's, so its"
        " work after the reply counts), and the SDK replay's for the same calls; client: what the client"
        " waited, its own Python included."],
        ["operation", "AWS calls", "function", "raw floor", "function / floor", "above the raw floor",
         "through the SDK alone", "own time", "CPU per call", "the SDK alone's CPU", "client"])
    for m in ops:
        lines.append(f"| {m.operation} | {calls(m.calls)} | {fmt(m.function_ms)} | {fmt(m.floor_ms)} | "
                     f"{ratio(m.function_ms, m.floor_ms)} | {fmt(m.overhead_ms)} | {fmt(m.sdk_floor_ms)} | "
                     f"{fmt(m.own_ms)} | {fmt(m.cpu_ms)} | {fmt(m.sdk_cpu_ms)} | {fmt(m.client_ms)} |")
    lines.append(f"\nPeak RSS of mcp-tools after these calls: {rss_mb:.1f} MB.")
    return lines + sdk_share(ops) + input_paths(paths)


def sdk_share(ops: list[McpOperation]) -> list[str]:
    """The time above the raw floor of the operation with the most calls, split at the SDK's floor."""
    with_calls = [m for m in ops if m.calls and m.sdk_floor_ms == m.sdk_floor_ms]
    if not with_calls:
        return []
    m = max(with_calls, key=lambda m: (len(m.calls), m.overhead_ms))
    sdk = m.sdk_floor_ms - m.floor_ms
    n = len(m.calls)
    return ["", f"Where the time above the raw floor goes, for the operation with the most calls ({m.operation},"
            f" {n} AWS call{'s' if n != 1 else ''}): {fmt(m.overhead_ms)} above it, of which the SDK's part is"
            f" {fmt(sdk)} (its floor less the raw one; {fmt(sdk / n)} a call) and the function's own code's"
            f" {fmt(m.own_ms)}. The SDK alone spends {fmt(m.sdk_cpu_ms / n)} of CPU a call here, in a process that"
            " waits between calls as a function does."]


def input_paths(p: InputPaths | None) -> list[str]:
    if p is None:
        return []
    return ["", f"submit_job's input, inline in InvokeEndpointAsync's Body (the default, up to 128,000 bytes) or"
            f" through S3 (`{p.setting}`), two mcp-tools processes"
            f" called in turn: {fmt(p.inline.function_ms)} against {fmt(p.through_s3.function_ms)} in the function,"
            f" {fmt(p.inline.client_ms)} against {fmt(p.through_s3.client_ms)} at the client; the inline path"
            f" saves {fmt(p.saved_function_ms)} in the function, of which the floor (moto's own time for the"
            f" calls) {fmt(p.saved_floor_ms)}. That PutObject goes to moto on"
            " 127.0.0.1, in-process and in memory: against S3 a PutObject is a network round trip and a durable"
            " write, which we expect to take tens of milliseconds, so in a deployment the inline path should save"
            " that much more than this figure shows (an expectation, not measured here)."]


def calls_per_operation(r: Results) -> list[str]:
    lines = table_section(CALLS_HEADING, [], ["operation", "calls"])
    for w in r.warm:
        if w.function != REFERENCE:
            lines.append(f"| {w.function}: {w.event} | {calls(w.calls)} |")
    lines += mcp_call_rows(r.mcp, r.polls)
    lines.append(f"| notification-handler: SQS batch of 100 (output in S3) | {r.batch_calls:.0f} calls |")
    return lines


def mcp_call_rows(ops: list[McpOperation], polls: dict[str, list[str]]) -> list[str]:
    return ([f"| mcp-tools: {m.operation} | {calls(m.calls)} |" for m in ops]
            + [f"| mcp-tools: {label} | {', '.join(operations)} |" for label, operations in polls.items()])


def batches(r: Results) -> list[str]:
    lines = table_section(
        "## SQS batch of 100 notifications",
        ["Median of 3 batches of 100 new jobs (output read from S3: 200 calls a batch), after one warm-up batch."
         " moto handles one call at a time, so against it a batch takes the emulator's time either way. DynamoDB"
         " and S3 serve calls in parallel, each after a network round trip: the fixed-latency endpoint"
         " (bench/emulator.py FixedLatencyAws) answers every call with a canned success after a fixed delay, many"
         " at once, which is what concurrency is for."],
        ["AWS", "sequential (BATCH_CONCURRENCY=1)", "concurrent (16)", "speed-up", "per message, concurrent"])
    for b in r.batches:
        lines.append(f"| {b.backend} | {fmt(b.sequential_ms)} | {fmt(b.concurrent_ms)} | {b.speedup:.1f}x | "
                     f"{fmt(b.per_message_ms)} |")
    return lines


def usd(dollars: float) -> str:
    """Dollars per million of something, from dollars per one."""
    per_million = dollars * 1e6
    return "–" if per_million == 0 else f"${per_million:.3f}" if per_million < 1 else f"${per_million:.2f}"


def price_table(c: Cost) -> list[str]:
    names = {
        "lambda_request": "Lambda request", "lambda_arm64_gb_second": "Lambda duration, arm64, per GB-second",
        "dynamodb_write_unit": "DynamoDB on-demand write request unit", "dynamodb_read_unit":
            "DynamoDB on-demand read request unit",
        "dynamodb_streams_lambda_read": "DynamoDB Streams GetRecords made by a Lambda trigger",
        "s3_put": "S3 Standard PUT, COPY, POST, LIST request",
        "s3_get": "S3 Standard GET and other requests", "sns_publish": "SNS publish (per 64 KiB chunk)",
        "sns_delivery": "SNS delivery to Lambda or SQS", "sqs_request": "SQS standard request (per 64 KiB chunk)",
        "sqs_fifo_request": "SQS FIFO request (per 64 KiB chunk)",
        "eventbridge_aws_event": "EventBridge: an AWS service's event on the default bus",
    }
    lines = [f"Prices ({c.region}, on-demand, read {c.checked}; no free tier):", ""]
    lines += table_head(["price", "per million (per GB-second for duration)"])
    for key, value in c.prices.items():
        shown = f"${value:.10f}".rstrip("0") if key == "lambda_arm64_gb_second" else usd(value)
        lines.append(f"| {names.get(key, key)} | {'free' if value == 0 else shown} |")
    lines += ["", "Sources: " + "; ".join(f"{what}: {where}" for what, where in c.sources) + "."]
    return lines


def cost(r: Results) -> list[str]:
    return cost_section(r.cost) if r.cost else []


COST_HEADING = "## What a job costs"


def cost_section(c: Cost) -> list[str]:
    lines = table_section(COST_HEADING, ([c.provenance] if c.provenance else []) + [c.headline,
                          "Every call below was counted at the emulator in this run, with each DynamoDB item's size "
                          "before and after each write and each read's, and each request's bytes (bench/emulator.py); "
                          "bench/cost.py prices them. Dollars per million jobs, by service; units are per job."],
                          ["scenario", "notification handler", "output", *COST_SERVICES, "per million jobs",
                           "write units", "read units", "largest term"])
    for row in c.rows:
        services = " | ".join(usd(row.by_service.get(s, 0.0)) for s in COST_SERVICES)
        lines.append(f"| {row.scenario} | {row.design} | {row.output} | {services} | **${row.per_million:.2f}** | "
                     f"{row.write_units:g} | {row.read_units:g} | {row.dominant} |")
    lines += events_section(c.events) if c.events else []
    lines += table_section("### The defaults, before and after", [], ["setting", "case", "before", "after", "saved"])
    lines += [f"| {ch.setting} | {ch.case} | {ch.before} | {ch.after} | {ch.saved} |" for ch in c.changes]
    lines += ["", "### What the model leaves out, and how it counts", ""]
    lines += [f"- {note}" for note in c.notes]
    lines += [""] + price_table(c)
    return lines


EVENTS_HEADING = "### MCP Events: a webhook delivery, priced and timed"


def events_section(e: EventsDelivery) -> list[str]:
    """Each charge of a delivered event, alone and in a batch; its way's times beside their
    floors; the targets; what the figures say."""
    batch = f"{e.batch} to a batch"
    lines = table_section(EVENTS_HEADING, [e.intro], ["charge", "alone: per event", "per million events",
                                                      f"{batch}: per event", "per million events"])
    for t in e.terms:
        lines.append(f"| {t.what} | {t.single_quantity:g} {t.unit} | {usd(t.single)} | {t.batched_quantity:g} "
                     f"{t.unit} | {usd(t.batched)} |")
    lines.append(f"| **total** | | **{usd(e.total_single)}** | | **{usd(e.total_batched)}** |")
    lines += ["", "Times, from the outcome's notification handed to notification-handler to the webhook "
              "receiver's 2xx, each stretch beside its floor:", ""]
    lines += table_head(["stretch", "p50", "p95", "floor", "floor p50", "floor p95"])
    for t in e.timings:
        floor = ((fmt(t.floor_p50_ms), fmt(t.floor_p95_ms)) if t.floor_p50_ms == t.floor_p50_ms else ("–", "–"))
        lines.append(f"| {t.what} | {fmt(t.p50_ms)} | {fmt(t.p95_ms)} | {t.floor} | {floor[0]} | {floor[1]} |")
    lines += ["", "The targets:", ""] + table_head(["target", "this run", "met"])
    lines += [f"| {t.name} | {target_value(t)} | {'yes' if t.met else '**no**'} |" for t in e.targets]
    lines += [""] + [f"- {f}" for f in e.findings]
    return lines


def splice_section(text: str, lines: list[str], before: str) -> str:
    """`text` with the section `lines` renders (its heading the second line) replaced, or put in
    before the section headed `before`, or at the end; the rest as it was."""
    section = "\n".join(lines[1:]) + "\n"
    start = text.find("\n" + lines[1] + "\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        return text[:start + 1] + section + (text[end:] if end >= 0 else "")
    at = text.find("\n" + before)
    if at >= 0:
        return text[:at + 1] + section + text[at:]
    return text.rstrip("\n") + "\n\n" + section


def splice_cost(text: str, c: Cost) -> str:
    """BENCHMARKS.md with its cost section replaced by `c`'s (or put in before the criterion
    section, or at the end), the rest as it was."""
    return splice_section(text, cost_section(c), "## Handler CPU per notification")


HOSTILE_HEADING = "## Hostile input: what a refused request costs"


def hostile_section(rows: list[dict], provenance: str) -> list[str]:
    """Each hostile request's peak memory and time beside a cheap request of the same size
    (bench/hostile.py)."""
    baseline = next((r["baseline_rss_mb"] for r in rows if "baseline_rss_mb" in r), 0.0)
    lines = table_section(HOSTILE_HEADING, [
        "mcp-tools (release), bearer mode, the example catalog, in its own process under the bench's Runtime "
        "API, a fresh process for each request, warmed by one tools/list. Peak: what the request added to the "
        f"process's resident memory at its peak (VmHWM, reset before the request, less VmRSS just before it); "
        f"the warm process holds {baseline:.1f} MB. Time: from the "
        "event out to the reply's last byte in. The cheap request is the same size, refused as cheaply as "
        "the function can: a body that is not JSON, a string where an object is wanted, the same array where a "
        "string is wanted (the type check before the schema), or tools/list with the same bytes in `_meta`. "
        "Medians of 3."],
        ["request", "bytes", "answer", "peak", "time", "same-size cheap one: peak", "time"])
    for r in rows:
        if "what" not in r:
            continue
        lines.append(f"| {r['what']} | {r['bytes']:,} | {r['status']}, {r['answer_bytes']:,} bytes | "
                     f"{r['peak_mb']:.1f} MB | {r['ms']:.1f} ms | {r['cheap_peak_mb']:.1f} MB | {r['cheap_ms']:.1f} ms |")
    if provenance:
        lines += ["", provenance]
    return lines


def splice_hostile(text: str, rows: list[dict], provenance: str) -> str:
    """BENCHMARKS.md with its hostile-input section replaced (or put in before the criterion
    section), the rest as it was."""
    return splice_section(text, hostile_section(rows, provenance), "## Handler CPU per notification")


CALLS_HEADING = "## AWS calls per operation, counted at the emulator"


def splice_mcp(text: str, events: int, ops: list[McpOperation], rss_mb: float, polls: dict[str, list[str]],
               paths: InputPaths | None, provenance: str) -> str:
    """BENCHMARKS.md with its mcp-tools section replaced, and the mcp-tools rows of the calls
    table (the rest of that table kept: it comes from the other measurements)."""
    text = splice_section(text, mcp_section(events, ops, rss_mb, paths, provenance), CALLS_HEADING)
    start = text.find("\n" + CALLS_HEADING + "\n")
    if start < 0:
        return text
    end = text.find("\n## ", start + 1)
    end = len(text) if end < 0 else end
    lines = text[start:end].split("\n")
    ours = [i for i, line in enumerate(lines) if line.startswith("| mcp-tools: ")]
    if not ours:
        return text
    lines[ours[0]:ours[-1] + 1] = mcp_call_rows(ops, polls)
    return text[:start] + "\n".join(lines) + text[end:]


def criterion(r: Results) -> list[str]:
    lines = table_section("## Handler CPU per notification (criterion, no I/O)", [], ["benchmark", "median"])
    for name, us in sorted(r.criterion_us.items()):
        lines.append(f"| {name} | {us:.2f} µs |")
    return lines


def entropy(r: Results) -> list[str]:
    lines = table_section(
        "## aws-lc's first random bytes (bench/entropy)",
        ["A process's first TLS handshake seeds aws-lc's generator. With CPU jitter entropy (aws-lc's default)"
         " that costs tens of milliseconds; `.cargo/config.toml` builds without it"
         " (`AWS_LC_SYS_NO_JITTER_ENTROPY=1`), leaving the OS source (getrandom). Median of 5 processes."],
        ["aws-lc built", "first request", "second request"])
    for e in r.entropy:
        lines.append(f"| {e.label} | {e.first_us / 1000:.2f} ms | {e.second_us} µs |")
    if not r.entropy:
        lines.append("| (not built: run `make bench`) | | |")
    return lines


def artifacts(r: Results) -> list[str]:
    parts = next(iter(r.zip_parts_mb.values()), {})
    intro = ["Each zip's binary by part, each part deflated alone as the zip deflates it. The functions abort on a"
             " panic, so their code has no landing pads and next to no .gcc_except_table; the unwind tables left"
             " (.eh_frame and its index) describe the standard library, built to unwind, and the frames that call it"
             " (backtraces read them). Relocations are what a position-independent binary (ASLR) carries."
             ] if parts else []
    lines = table_section("## Artifacts (arm64, zipped as Lambda takes them)", intro,
                          ["function", "zip", "unzipped", *parts])
    for name, (zipped, unzipped) in r.sizes_mb.items():
        shares = [f"{mb:.2f} MB" for mb in r.zip_parts_mb.get(name, {}).values()]
        lines.append("| " + " | ".join([name, f"{zipped:.2f} MB", f"{unzipped:.2f} MB", *shares]) + " |")
    if not r.sizes_mb:
        lines.append("| (no zips in target/lambda: run `make bench`) | | |")
    return lines


def render(r: Results) -> str:
    """The whole of BENCHMARKS.md."""
    sections = (header, targets, cold_start, first_answer, first_work, init_against_floor, warm, mcp_tools, calls_per_operation, batches, cost, criterion, entropy,
                artifacts)
    return "\n".join(line for section in sections for line in section(r)) + "\n"
