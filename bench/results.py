"""What one `make bench` run measured, as plain data: every figure BENCHMARKS.md shows, already
reduced from the samples (medians, ratios, targets met), and nothing about how it is shown.

run.py measures, summary.py reduces the samples to a Results; render.py turns one into the
table. Times are in milliseconds unless a name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The Python/boto3 handler the Rust functions are measured against: its rows' function name.
REFERENCE = "python-reference"


@dataclass
class Environment:
    date: str  # "2026-11-30 09:32 UTC"
    took_s: float
    cpu: str
    cores: int
    system: str  # platform.system() and platform.release(), e.g. "Linux 6.18.44"
    machine: str  # e.g. "x86_64"
    python: str  # the reference's Python
    boto3: str
    events: int  # --events
    cold: int  # --cold
    delay_ms: float  # --delay-ms


@dataclass
class Target:
    name: str
    value: float
    shown_as: str  # "ms" (shown like every time), or a format such as "{:.0f}x"
    met: bool


@dataclass
class ColdStart:
    function: str
    over: str  # how AWS was reached: "HTTP", "HTTPS", ...
    init_ms: float
    first_event_ms: float
    first_response_ms: float


@dataclass
class FirstAnswer:
    """A cold start as a caller of a 128 MB function waits for it: Lambda runs init with a whole
    CPU, the first invocation with 128/1769 of one. From the same fresh processes as the cold
    starts: the process's CPU (all threads) at its first `next`, at its first answer and at each of
    the next events' answers."""
    function: str
    first_response_ms: float  # spawn to the first answer, with a whole CPU
    init_cpu_ms: float
    first_event_cpu_ms: float
    next_event_cpu_ms: float  # the mean of the events after it, in the same process
    modelled_128_ms: float  # first_response_ms + (1769/128 - 1) x first_event_cpu_ms

    @property
    def first_over_next(self) -> float:
        return self.first_event_cpu_ms / self.next_event_cpu_ms


@dataclass
class FirstWork:
    """The instructions of a first invocation beside an average event's, in the same fresh
    processes under callgrind (bench/first_work.py): the work init left to the first
    invocation, apart from cold caches and first touches of memory, which CPU time also holds."""
    function: str
    init_instructions: float
    first_instructions: float
    next_instructions: float  # the mean of the events after it, in the same process

    @property
    def first_over_next(self) -> float:
        return self.first_instructions / self.next_instructions


@dataclass
class InitAgainstFloor:
    """A function's init beside its floors' (an empty Rust Lambda, and one that first does the
    SDK's one-time work), from the same rounds."""
    function: str
    floor: str
    init_ms: float
    floor_ms: float
    ratio: float  # init_ms / floor_ms
    sdk_floor_ms: float
    sdk_ratio: float  # init_ms / sdk_floor_ms


@dataclass
class TlsCost:
    """What TLS adds to a first event: the median of paired differences (HTTPS less HTTP), and
    the range of the HTTP first events, the noise it is read against."""
    added_ms: float
    http_min_ms: float
    http_max_ms: float


@dataclass
class ColdRatio:
    """The reference's cold start over notification-handler's (how many times longer)."""
    init: float
    first_response: float


@dataclass
class Warm:
    function: str
    event: str
    calls: list[str]  # the AWS calls of a typical event, e.g. ["S3 GetObject", "DynamoDB UpdateItem"]
    latency_ms: float
    floor_ms: float
    emulator_ms: float
    overhead_ms: float
    cpu_ms: float
    rss_mb: float
    # The same calls through the Rust SDK alone (shared/adapters/examples/sdk_replay.rs), with the
    # Runtime API's exchange; own: the function's time above it. The reference has none.
    sdk_floor_ms: float = float("nan")
    own_ms: float = float("nan")
    sdk_cpu_ms: float = float("nan")


@dataclass
class WarmComparison:
    """notification-handler beside the reference for one kind of event."""
    event: str
    ours_overhead_ms: float
    reference_overhead_ms: float
    ratio: float | None  # the reference's overhead over ours; None when either is not positive
    ours_latency_ms: float
    reference_latency_ms: float


@dataclass
class McpOperation:
    operation: str
    calls: list[str]
    function_ms: float
    floor_ms: float
    overhead_ms: float
    client_ms: float
    cpu_ms: float = float("nan")  # the function's CPU time per call
    # The same calls through the SDK alone (shared/adapters/examples/sdk_replay.rs): its time with the
    # Runtime API's exchange, the function's time above it (its own code's), and its CPU per call (a
    # mean, like the function's `cpu_ms`).
    sdk_floor_ms: float = float("nan")
    own_ms: float = float("nan")
    sdk_cpu_ms: float = float("nan")


@dataclass
class InputPaths:
    """submit_job with its input inline (the default) and with every input through S3, measured
    side by side; each saving is the S3 path's median minus the inline one's."""
    setting: str  # how the S3 path was configured, e.g. "INLINE_INPUT_MAX_BYTES=0"
    inline: McpOperation
    through_s3: McpOperation
    saved_function_ms: float
    saved_client_ms: float
    saved_floor_ms: float  # the emulator's own share: the floors' difference


@dataclass
class Batch:
    backend: str
    sequential_ms: float
    concurrent_ms: float
    speedup: float
    per_message_ms: float  # concurrent, per message of the batch of 100


@dataclass
class Entropy:
    label: str
    first_us: float
    second_us: float


@dataclass
class CostRow:
    """One scenario's price, per job, by service (dollars)."""
    scenario: str  # "job, one check", ...
    design: str  # which notification handler, at which inline limit
    output: str  # "small (70 B)", ...
    by_service: dict[str, float]
    total: float
    per_million: float
    write_units: float
    read_units: float
    dominant: str  # the largest term, e.g. "DynamoDB UpdateItem, 65 write units: $40.6 per million"


@dataclass
class CostChange:
    """A default weighed by the model: what it costs as it was and as it is."""
    setting: str
    case: str
    before: str  # e.g. "$43.1 per million jobs (65 write units, 17 read units)"
    after: str
    saved: str  # e.g. "97%", or "none"


@dataclass
class EventsTerm:
    """One kind of charge of a delivered MCP Events event, per event, delivered alone and ten to
    a batch."""
    what: str  # e.g. "DynamoDB PutItem (notification-handler)"
    unit: str
    single_quantity: float
    single: float  # dollars per event
    batched_quantity: float
    batched: float


@dataclass
class EventsTiming:
    """One stretch of an event's way to a webhook: its percentiles and its floor's, over the
    same events (the floor measured right after each)."""
    what: str
    p50_ms: float
    p95_ms: float
    floor: str  # what the floor is
    floor_p50_ms: float
    floor_p95_ms: float


@dataclass
class EventsDelivery:
    """MCP Events' webhook delivery, priced and timed (bench/events_cost.py)."""
    intro: str
    batch: int  # the events of a batch in the batched figures
    terms: list[EventsTerm]
    total_single: float  # dollars per event
    total_batched: float
    timings: list[EventsTiming]
    targets: list[Target]
    findings: list[str]


@dataclass
class Cost:
    region: str
    checked: str  # when the prices were read
    prices: dict[str, float]
    sources: list[tuple[str, str]]
    rows: list[CostRow]
    headline: str  # the sentence BENCHMARKS.md leads with
    changes: list[CostChange]
    notes: list[str]
    provenance: str = ""  # set when the section was made apart from the rest of the file
    events: EventsDelivery | None = None  # None when the run did not measure MCP Events


@dataclass
class Results:
    environment: Environment
    targets: list[Target]
    cold: list[ColdStart]  # in the order shown; the last row is mcp-tools through an MCP client
    cold_ratio: dict[str, ColdRatio]  # by "HTTP" and "HTTPS"
    tls_cost: dict[str, TlsCost]  # what TLS adds to the first event, by function
    runtime_ms: float  # the Runtime API exchange of a function that does nothing
    warm: list[Warm]
    warm_comparisons: list[WarmComparison]
    mcp: list[McpOperation]
    mcp_rss_mb: float
    polls: dict[str, list[str]]  # check_job_status with wait_secs: its AWS calls, by case
    batch_calls: float  # AWS calls of one SQS batch of 100 (moto, concurrent)
    batches: list[Batch]
    criterion_us: dict[str, float] = field(default_factory=dict)
    entropy: list[Entropy] = field(default_factory=list)  # empty when bench/entropy was not built
    sizes_mb: dict[str, tuple[float, float]] = field(default_factory=dict)  # zipped, unzipped
    # Each zip's binary by part (code, unwind tables, ...), each deflated alone (builds.elf_parts).
    zip_parts_mb: dict[str, dict[str, float]] = field(default_factory=dict)
    cost: Cost | None = None
    init_floor: list[InitAgainstFloor] = field(default_factory=list)
    init_rounds: int = 0
    # mcp-tools with the example catalog: a catalog tool's first call in a process, and the next
    catalog_first_calls: dict[str, float] = field(default_factory=dict)
    input_paths: InputPaths | None = None  # None when the run did not measure the S3 path
    first_answers: list[FirstAnswer] = field(default_factory=list)
    first_work: list[FirstWork] = field(default_factory=list)
