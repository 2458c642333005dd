"""What the doctor's checks look at (scripts/doctor.py): the names of a stack's resources, as
the stack or the command line gives them. Here, below the checks' modules, so that each of them
can take it without importing the doctor that imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

SEED_PIPELINE_PARAMETERS = ("input_data_uri=InputDataUri,max_epochs=MaxEpochs,"
                            "accuracy_threshold=AccuracyThreshold,training_instance_type=TrainingInstanceType")


@dataclass
class Targets:
    """What the checks look at; None where it is not known (the check is then skipped)."""
    endpoint: Optional[str] = None
    success_topic: Optional[str] = None
    error_topic: Optional[str] = None
    bucket: Optional[str] = None
    output_prefix: str = "outputs/"
    failure_prefix: str = "failures/"
    pipeline: Optional[str] = None
    pipeline_parameters: str = SEED_PIPELINE_PARAMETERS
    rule: Optional[str] = None
    notification_handler: Optional[str] = None
    buffer_queue_url: Optional[str] = None
    dlq_urls: list = field(default_factory=list)
    alarms: list = field(default_factory=list)
    stack: Optional[str] = None
    inference_only: bool = False
    # The permission checks: the endpoint's execution role (else found through DescribeModel), each
    # function's role, and what their ARNs need.
    model_role: Optional[str] = None
    function_roles: dict = field(default_factory=dict)
    region: str = ""
    account: str = ""
    partition: str = "aws"
    results_table: Optional[str] = None
    pipeline_results_table: Optional[str] = None
    events_table: Optional[str] = None
    # MCP Events' webhooks: the subscriptions table, the delivery queue (retries; and its DLQ),
    # event-delivery, the function it and the events table's stream feed, and where Lambda records
    # the stream's batches event-delivery gave up on.
    subscriptions_table: Optional[str] = None
    delivery_queue_url: Optional[str] = None
    delivery_dlq_url: Optional[str] = None
    event_delivery: Optional[str] = None
    stream_failure_queue_url: Optional[str] = None
    pipeline_queue_url: Optional[str] = None
    # Where the pipelines' CallbackSteps send their questions, and its dead-letter queue.
    callback_queue_url: Optional[str] = None
    callback_dlq_url: Optional[str] = None
    event_bus: Optional[str] = None
    bucket_key: Optional[str] = None
    # The tool catalog's endpoints and pipelines beside `endpoint` and `pipeline`.
    catalog_endpoints: list = field(default_factory=list)
    catalog_pipelines: list = field(default_factory=list)
