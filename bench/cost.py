"""What a job costs: published on-demand prices applied to what the emulator counted.

A job's bill is the sum of its AWS calls (each priced by the unit its service bills: DynamoDB
request units from the item sizes before and after each write and the sizes each read returned,
S3 requests by tier, SNS and SQS requests per 64 KiB chunk) and of its Lambda invocations
(a request fee plus the billed duration at the function's memory). cost_scenarios.py counts;
this file prices and has no I/O, so tests/bench/test_cost.py can check its arithmetic by hand.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from dataclasses import dataclass, field

KIB = 1024
CHUNK = 64 * KIB  # SNS and SQS bill each 64 KiB of a payload as one request

# us-east-1, on-demand, without free tiers (a free tier is per account and month, not per job).
PRICES_REGION = "us-east-1"
PRICES_CHECKED = "2026-12-02"
PRICES = {
    "lambda_request": 0.20 / 1e6,
    "lambda_arm64_gb_second": 0.0000133334,
    "dynamodb_write_unit": 0.625 / 1e6,  # on-demand, Standard table class
    "dynamodb_read_unit": 0.125 / 1e6,
    "dynamodb_streams_lambda_read": 0.0,  # GetRecords made by a Lambda trigger's mapping
    "s3_put": 0.005 / 1000,  # S3 Standard: PUT, COPY, POST, LIST
    "s3_get": 0.0004 / 1000,  # GET, HEAD and the other requests
    "sns_publish": 0.50 / 1e6,  # standard topic, per 64 KiB chunk
    "sns_delivery": 0.0,  # to Lambda and to SQS
    "sqs_request": 0.40 / 1e6,  # standard queue, per 64 KiB chunk
    "sqs_fifo_request": 0.50 / 1e6,  # FIFO queue (MCP Events' delivery queue), per 64 KiB chunk
    "eventbridge_aws_event": 0.0,  # a service's own events on the default bus
}
# Where each price was read, shown under the table.
SOURCES = [
    ("Lambda", "aws.amazon.com/lambda/pricing (the request fee); the arm64 GB-second rate of its first tier as "
     "listed from that page in artillery's aws-lambda/prices.js (1333340e-11)"),
    ("DynamoDB", "aws.amazon.com/dynamodb/pricing/on-demand (units: a write unit per 1 KB, a strongly consistent "
     "read unit per 4 KB); the prices after the November 2024 cut as airbyte.com's DynamoDB pricing page lists them"),
    ("DynamoDB Streams", "aws.amazon.com/dynamodb/pricing: the GetRecords calls Lambda makes for a DynamoDB "
     "trigger are not charged (other readers pay streams read request units)"),
    ("DynamoDB item size", "docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html"),
    ("S3", "c3x.dev's S3 request fees page (S3 Standard, from aws.amazon.com/s3/pricing)"),
    ("SNS, SQS", "SNS publish and SQS requests per 64 KiB chunk as commonly published; SNS deliveries to Lambda and "
     "SQS free: from memory of aws.amazon.com/sns/pricing, not confirmed from a stored copy"),
    ("SQS FIFO", "$0.50 per million requests (send, receive, delete, change visibility), flat, as cloudburn.io's "
     "and factualminds.com's 2026 SQS pricing guides list it from aws.amazon.com/sqs/pricing; read 2026-12-06"),
]


# ------------------------------------------------------------------ DynamoDB's units


def number_size(text: str) -> int:
    """A number: 1 byte per two significant digits, plus 1 (leading and trailing zeros, sign,
    point and exponent do not count)."""
    mantissa = text.lstrip("+-").lower().split("e")[0].replace(".", "")
    digits = mantissa.strip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def value_size(value: dict) -> int:
    """One attribute value in DynamoDB JSON ({"S": ...}), without its name."""
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        return number_size(v)
    if kind == "B":
        import base64
        return len(base64.b64decode(v)) if isinstance(v, str) else len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(e) for k, e in v.items())
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: e}) for e in v)
    raise ValueError(f"not a DynamoDB attribute value: {value!r}")


def item_size(item: dict) -> int:
    """An item's size as DynamoDB bills it: each attribute's name and value."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(old: int | None, new: int | None) -> int:
    """A write is billed by the larger of the item before and after, per 1 KB, at least one."""
    return max(1, math.ceil(max(old or 0, new or 0) / KIB))


def read_units(sizes: list[int], consistent: bool = True) -> float:
    """A read (GetItem, or the items of one Query page) per 4 KB of what it returned, at least
    one; an eventually consistent read costs half."""
    units = max(1, math.ceil(sum(sizes) / (4 * KIB)))
    return units if consistent else units / 2


def batch_read_units(sizes: list[int], consistent: bool = False) -> float:
    """BatchGetItem: each key a GetItem of its own (its item rounded up to 4 KB, at least one
    unit, a missing item too); an eventually consistent read costs half."""
    units = sum(max(1, math.ceil(size / (4 * KIB))) for size in sizes)
    return units if consistent else units / 2


def chunks(payload_bytes: int) -> int:
    return max(1, math.ceil(payload_bytes / CHUNK))


# ------------------------------------------------------------------ a bill


@dataclass
class Line:
    service: str
    what: str  # e.g. "DynamoDB UpdateItem", "notification-handler requests"
    quantity: float  # in `unit`s
    unit: str  # "write units", "requests", "GB-s", ...
    dollars: float


@dataclass
class Invocation:
    function: str
    duration_ms: float
    memory_mb: int = 128


@dataclass
class Bill:
    lines: list[Line] = field(default_factory=list)

    def add(self, *lines: Line) -> Bill:
        self.lines.extend(lines)
        return self

    def __add__(self, other: Bill) -> Bill:
        return Bill(self.lines + other.lines)

    def scaled(self, factor: float) -> Bill:
        return Bill([Line(l.service, l.what, l.quantity * factor, l.unit, l.dollars * factor) for l in self.lines])

    @property
    def total(self) -> float:
        return sum(l.dollars for l in self.lines)

    def by_service(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for l in self.lines:
            out[l.service] = out.get(l.service, 0.0) + l.dollars
        return out

    def units(self, unit: str) -> float:
        return sum(l.quantity for l in self.lines if l.unit == unit)

    def dominant(self) -> Line:
        """The largest term: lines of the same service, unit and kind added up."""
        merged: dict[tuple[str, str], Line] = {}
        for l in self.lines:
            key = (l.what, l.unit)
            m = merged.setdefault(key, Line(l.service, l.what, 0.0, l.unit, 0.0))
            m.quantity += l.quantity
            m.dollars += l.dollars
        return max(merged.values(), key=lambda l: l.dollars)


S3_PUT_TIER = ("PutObject", "CopyObject", "ListObjectsV2", "CreateMultipartUpload", "UploadPart")
FREE_OPERATIONS = {
    # SageMaker bills its instances (excluded here), not these requests.
    "SageMakerRuntime InvokeEndpointAsync", "sagemaker StartPipelineExecution", "sagemaker DescribePipelineExecution",
    "sagemaker DescribePipelineDefinitionForExecution", "sagemaker ListPipelineExecutionSteps",
    "sagemaker StopPipelineExecution",
}


def price_call(call, prices: dict = PRICES) -> Line:
    """One counted AWS call (emulator.Call, or anything with its fields)."""
    op = call.operation
    service, _, name = op.partition(" ")
    if op in ("DynamoDB PutItem", "DynamoDB UpdateItem", "DynamoDB DeleteItem"):
        units = write_units(call.old_size, call.new_size)
        return Line("DynamoDB", op, units, "write units", units * prices["dynamodb_write_unit"])
    if op in ("DynamoDB GetItem", "DynamoDB Query"):
        units = read_units(call.read_sizes, call.consistent)
        return Line("DynamoDB", op, units, "read units", units * prices["dynamodb_read_unit"])
    if op == "DynamoDB Streams GetRecords":
        # Only a Lambda trigger's mapping reads a stream here.
        return Line("DynamoDB", op, 1, "requests", prices["dynamodb_streams_lambda_read"])
    if op == "DynamoDB BatchGetItem":
        units = batch_read_units(call.read_sizes, call.consistent)
        return Line("DynamoDB", op, units, "read units", units * prices["dynamodb_read_unit"])
    if service == "S3":
        put = name in S3_PUT_TIER
        return Line("S3", op, 1, "requests", prices["s3_put" if put else "s3_get"])
    if op == "SNS Publish":
        n = chunks(call.request_bytes)
        return Line("SNS", op, n, "requests", n * prices["sns_publish"])
    if service == "SQS":
        # What a request carries: the messages sent, or those received.
        n = chunks(call.response_bytes if name == "ReceiveMessage" else call.request_bytes)
        fifo = queue_url(call).endswith(".fifo")
        return Line("SQS", op, n, "requests", n * prices["sqs_fifo_request" if fifo else "sqs_request"])
    if op in FREE_OPERATIONS or service.lower() == "sagemaker":
        return Line("SageMaker", op, 1, "requests", 0.0)
    raise ValueError(f"no price for {op!r}")


def queue_url(call) -> str:
    """The queue an SQS call names (JSON protocol, or the query protocol's form); "" when unknown."""
    body = getattr(call, "body", b"") or b""
    try:
        return str(json.loads(body).get("QueueUrl", ""))
    except (ValueError, AttributeError):
        return urllib.parse.parse_qs(body.decode("utf-8", "replace")).get("QueueUrl", [""])[0]


def price_invocation(inv: Invocation, prices: dict = PRICES) -> list[Line]:
    """Lambda bills each request and its duration rounded up to the millisecond, at the
    function's memory (arm64)."""
    gb_s = math.ceil(inv.duration_ms) / 1000 * inv.memory_mb / 1024
    return [Line("Lambda", f"{inv.function} requests", 1, "requests", prices["lambda_request"]),
            Line("Lambda", f"{inv.function} duration", gb_s, "GB-s", gb_s * prices["lambda_arm64_gb_second"])]


def bill(calls=(), invocations=(), prices: dict = PRICES) -> Bill:
    out = Bill()
    for call in calls:
        out.add(price_call(call, prices))
    for inv in invocations:
        out.add(*price_invocation(inv, prices))
    return out


def lambda_second(memory_mb: int = 128, prices: dict = PRICES) -> float:
    """What one second of a waiting function costs."""
    return memory_mb / 1024 * prices["lambda_arm64_gb_second"]


# ------------------------------------------------------------------ long polls

# The delays between a long poll's reads as shared/usecases/src/check.rs has them (poll_delay;
# tests/bench/test_cost.py holds this to the Rust), and the alternatives the model weighs.
POLL_SCHEDULES = {"250, 500, 1000, then 2000 ms (as built)": [250, 500, 1000, 2000],
                  "the same, then 4000 ms": [250, 500, 1000, 2000, 4000],
                  "250, 500, then 1000 ms": [250, 500, 1000]}


def poll_times(delays_ms: list[int], wait_s: float) -> list[float]:
    """When a long poll reads, from the delays between reads (the last one repeating): at 0, then
    after each delay, while the wait lasts; the final read comes at the deadline."""
    times, t, attempt = [0.0], 0.0, 0
    while t < wait_s:
        t = min(t + delays_ms[min(attempt, len(delays_ms) - 1)] / 1000, wait_s)
        times.append(t)
        attempt += 1
    return times


def long_poll(delays_ms: list[int], wait_s: float, done_at_s: float) -> tuple[int, float]:
    """Reads made, and seconds waited, until a read sees a job that completed at `done_at_s`
    (or the wait ends)."""
    times = poll_times(delays_ms, wait_s)
    seen = next((i for i, t in enumerate(times) if t >= done_at_s), len(times) - 1)
    return seen + 1, times[seen]


def expected_long_poll(delays_ms: list[int], wait_s: float, pending_read_units: float, done_read_units: float,
                       memory_mb: int = 128, prices: dict = PRICES, steps: int = 1000) -> dict:
    """A wait of `wait_s` on a job that completes at a uniformly random moment within it: the
    mean reads, read units, seconds waited and dollars (reads plus the function's duration)."""
    reads = units = secs = 0.0
    for i in range(steps):
        n, t = long_poll(delays_ms, wait_s, (i + 0.5) * wait_s / steps)
        reads += n
        units += (n - 1) * pending_read_units + done_read_units
        secs += t
    reads, units, secs = reads / steps, units / steps, secs / steps
    dollars = units * prices["dynamodb_read_unit"] + secs * lambda_second(memory_mb, prices)
    return {"reads": reads, "read_units": units, "seconds": secs, "dollars": dollars}


# ------------------------------------------------------------------ the SQS buffer's batches


def messages_per_invocation(batch_size: int, window_s: float, per_second: float) -> float:
    """Notifications an invocation records when they trickle in at `per_second`: the first opens
    the window and those arriving within it join, up to batch_size (a backlog fills every batch)."""
    return min(batch_size, 1 + per_second * window_s)
