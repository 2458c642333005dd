"""The doctor's permission checks (scripts/doctor.py): iam:SimulatePrincipalPolicy for the
endpoint's execution role and each function's role on every call its code makes, with the
resource policies in play (a topic's, the bucket's, a key's, a queue's) given to the simulation.
Each denial is a FAIL line with the IAM statement to add."""

from __future__ import annotations

import json
from typing import Callable, Optional

from botocore.exceptions import BotoCoreError, ClientError

import model_role
from doctor_result import fail, ok, skip
from doctor_targets import Targets


def queue_arn_of_url(url: str, partition: str, region: str = "") -> Optional[str]:
    """https://sqs.<region>.amazonaws.com/<account>/<name> -> arn:<partition>:sqs:<region>:<account>:<name>
    (`region` for a URL that does not say, an emulator's)."""
    parts = url.rstrip("/").split("/")
    if len(parts) < 5:
        return None
    host = parts[2]
    region = host.split(".")[1] if host.startswith("sqs.") else region
    return f"arn:{partition}:sqs:{region}:{parts[-2]}:{parts[-1]}" if region else None


class ResourcePolicies:
    """The resource policies the simulation is given beside the role's own (a topic policy grants
    the stack's topics to the execution role, a queue policy may deny a sender); None where there
    is none or it cannot be read."""

    def __init__(self, session):
        self.session, self.cache = session, {}

    def of(self, resource: str) -> Optional[str]:
        service = resource.split(":")[2] if resource.count(":") >= 5 else ""
        if service == "s3":
            key = resource.split(":::", 1)[1].split("/", 1)[0]
        elif service in ("sns", "kms", "sqs"):
            key = resource
        else:
            return None
        if (service, key) not in self.cache:
            self.cache[(service, key)] = self._read(service, key)
        return self.cache[(service, key)]

    def _read(self, service: str, key: str) -> Optional[str]:
        try:
            if service == "sns":
                return self.session.client("sns").get_topic_attributes(TopicArn=key)["Attributes"].get("Policy")
            if service == "s3":
                return self.session.client("s3").get_bucket_policy(Bucket=key)["Policy"]
            if service == "sqs":
                sqs = self.session.client("sqs")
                account, name = key.split(":")[4:6]
                url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
                # No "Attributes" at all when the queue has no policy.
                return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"]).get("Attributes", {}).get("Policy")
            return self.session.client("kms").get_key_policy(KeyId=key, PolicyName="default")["Policy"]
        except (ClientError, BotoCoreError):
            return None


def simulate(iam, policies: ResourcePolicies, role: str, action: str, resource: str) -> str:
    """IAM's decision for `role` doing `action` on `resource`: allowed, implicitDeny or explicitDeny."""
    request = {"PolicySourceArn": role, "ActionNames": [action], "ResourceArns": [resource]}
    resource_policy = policies.of(resource) if resource != "*" else None
    if resource_policy:
        request["ResourcePolicy"] = resource_policy
    results = iam.simulate_principal_policy(**request)["EvaluationResults"]
    return results[0]["EvalDecision"] if results else "implicitDeny"


def check_role(iam, policies: ResourcePolicies, who: str, role: str, needed: list, what: str) -> list:
    """One line when `role` may do all of `needed` [(label, action, granted, simulated)], else a
    FAIL per denial with the statement to add."""
    denied = []
    for label, action, granted, simulated in needed:
        decision = simulate(iam, policies, role, action, simulated)
        if decision != "allowed":
            denied.append(fail(f"{who} role {action} ({label})",
                               f"{role} may not {action} on {simulated} ({decision})",
                               "add to the role's policy: " + json.dumps(model_role.statement(action, granted))
                               + (" and remove the statement that denies it" if decision == "explicitDeny" else "")))
    if denied:
        return denied
    actions = sorted({action for _, action, _, _ in needed})
    return [ok(f"{who} role", f"{role} may {what} ({len(needed)} simulated: {', '.join(actions)})")]


def key_arns(t: Targets, config: Optional[dict]) -> list:
    """The customer managed keys outputs are written with: the endpoint config's, the bucket's."""
    keys = model_role.config_key_arns(config or {}, t.partition, t.region, t.account) if t.account else []
    return keys + ([t.bucket_key] if t.bucket_key and t.bucket_key not in keys else [])


def check_endpoint_role(sm, iam, policies: ResourcePolicies, config: Optional[dict], t: Targets) -> list:
    if config is None or "AsyncInferenceConfig" not in config:
        return [skip("endpoint role", "no async endpoint config to read")]
    if not (t.success_topic and t.error_topic and t.bucket):
        return [skip("endpoint role", "the stack's topics and bucket are not known")]
    role = t.model_role
    if not role:
        try:
            role = model_role.execution_role(sm, config)
        except (ClientError, LookupError) as e:
            return [skip("endpoint role", f"its execution role is not known ({e}); give --model-execution-role-arn")]
    t.account = t.account or role.split(":")[4]
    needed = model_role.requirements(t.success_topic, t.error_topic, t.bucket, t.output_prefix, t.failure_prefix,
                                     key_arns(t, config), t.partition)
    return check_role(iam, policies, "endpoint", role, needed,
                      "publish and write every outcome, and read the inputs")


def function_calls(t: Targets, keys: list) -> dict:
    """{function: [(label, action, granted, simulated)]}: each call its code makes on this stack's
    resources (infra/iam-actions.json's `code`), and the keys. A call on a resource this
    deployment has none of (no pipeline, no completion events) is left out."""
    p, region, account = t.partition, t.region, t.account
    table = (lambda name: f"arn:{p}:dynamodb:{region}:{account}:table/{name}" if name else None)
    results, runs, events = table(t.results_table), table(t.pipeline_results_table), table(t.events_table)
    subscriptions = table(t.subscriptions_table)
    delivery = queue_arn_of_url(t.delivery_queue_url, p, region) if t.delivery_queue_url else None
    s3 = f"arn:{p}:s3:::{t.bucket}" if t.bucket else None
    prefix = (lambda pre: (f"{s3}/{pre}*", f"{s3}/{pre}doctor-check") if s3 else (None, None))
    (out_g, out_s), (fail_g, fail_s), (in_g, in_s) = prefix(t.output_prefix), prefix(t.failure_prefix), prefix("inputs/")
    sagemaker = f"arn:{p}:sagemaker:{region}:{account}"
    pipeline = f"{sagemaker}:pipeline/{t.pipeline}" if t.pipeline else None
    execution = (f"{pipeline}/execution/*", f"{pipeline}/execution/doctor-check") if pipeline else (None, None)
    endpoint = f"{sagemaker}:endpoint/{t.endpoint}" if t.endpoint else None
    others = [e for e in t.catalog_endpoints if e != t.endpoint]
    other_pipelines = [f"{sagemaker}:pipeline/{q}" for q in t.catalog_pipelines if q != t.pipeline]
    bus = None
    if t.event_bus:
        bus = t.event_bus if t.event_bus.startswith("arn:") else f"arn:{p}:events:{region}:{account}:event-bus/{t.event_bus}"
    queue = queue_arn_of_url(t.pipeline_queue_url, p, region) if t.pipeline_queue_url else None

    def same(label, action, resource):
        return (label, action, resource, resource)
    reads = [("outputs", "s3:GetObject", out_g, out_s), ("failures", "s3:GetObject", fail_g, fail_s)]
    decrypt = [same("key", "kms:Decrypt", key) for key in keys]
    # MCP Events: the event logged once (a conditional put), marked for the webhooks of the
    # owner's subscriptions; the events table's stream takes it to event-delivery.
    to_log = [same("events table", "dynamodb:PutItem", events),
              same("subscriptions table", "dynamodb:Query", subscriptions)]
    calls = {
        "notification-handler": [*(same("results table", a, results) for a in ("dynamodb:GetItem",
                                                                                "dynamodb:UpdateItem")),
                                 *to_log, *reads,
                                 same("event bus", "events:PutEvents", bus), *decrypt],
        "pipeline-router": [*(same("pipeline results table", a, runs) for a in ("dynamodb:GetItem",
                                                                              "dynamodb:UpdateItem",
                                                                              "dynamodb:BatchGetItem")),
                            *to_log,
                            same("completion queue", "sqs:SendMessage", queue),
                            *(("runs", a, *execution) for a in ("sagemaker:DescribePipelineExecution",
                                                               "sagemaker:ListPipelineExecutionSteps"))],
        "mcp-tools": [*(same("results table", a, results) for a in ("dynamodb:PutItem", "dynamodb:GetItem",
                                                                    "dynamodb:UpdateItem", "dynamodb:BatchGetItem")),
                      *(same("pipeline results table", a, runs) for a in ("dynamodb:PutItem", "dynamodb:Query",
                                                                          "dynamodb:BatchGetItem")),
                      # events/poll; events/subscribe and events/unsubscribe.
                      same("events table", "dynamodb:Query", events),
                      *(same("subscriptions table", a, subscriptions) for a in (
                          "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query")),
                      ("inputs", "s3:PutObject", in_g, in_s), *reads,
                      same("endpoint", "sagemaker:InvokeEndpointAsync", endpoint),
                      same("endpoint", "sagemaker:DescribeEndpoint", endpoint),
                      *(same(f"endpoint {e}", a, f"{sagemaker}:endpoint/{e}") for e in others
                        for a in ("sagemaker:InvokeEndpointAsync", "sagemaker:DescribeEndpoint")),
                      same("pipeline", "sagemaker:StartPipelineExecution", pipeline),
                      *(same(f"pipeline {q.rsplit('/', 1)[1]}", a, r) for q in other_pipelines
                        for a, r in (("sagemaker:StartPipelineExecution", q),
                                     ("sagemaker:DescribePipelineExecution", f"{q}/execution/doctor-check"))),
                      *(("runs", a, *execution) for a in ("sagemaker:DescribePipelineExecution",
                                                         "sagemaker:ListPipelineExecutionSteps",
                                                         "sagemaker:DescribePipelineDefinitionForExecution",
                                                         "sagemaker:StopPipelineExecution",
                                                         "sagemaker:SendPipelineExecutionStepSuccess",
                                                         "sagemaker:SendPipelineExecutionStepFailure")),
                      *(("model packages", a, f"{sagemaker}:model-package/*", f"{sagemaker}:model-package/doctor-check/1")
                        for a in ("sagemaker:DescribeModelPackage", "sagemaker:UpdateModelPackage")),
                      ("lineage", "sagemaker:DescribeArtifact", f"{sagemaker}:artifact/*", f"{sagemaker}:artifact/doctor-check"),
                      same("lineage", "sagemaker:ListAssociations", "*"), same("lineage", "sagemaker:ListArtifacts", "*"),
                      same("event bus", "events:PutEvents", bus), *decrypt,
                      *(same("key", "kms:GenerateDataKey", t.bucket_key) for _ in [1] if t.bucket_key)],
        # A delivery's subscription read and updated; a failed one queued for its retry, or put
        # back with its backoff.
        "event-delivery": [same("subscriptions table", "dynamodb:GetItem", subscriptions),
                           same("subscriptions table", "dynamodb:UpdateItem", subscriptions),
                           same("delivery queue", "sqs:SendMessage", delivery),
                           same("delivery queue", "sqs:ChangeMessageVisibility", delivery)],
    }
    return {fn: [c for c in needed if c[2] and c[3]] for fn, needed in calls.items()}


def check_function_roles(iam, policies: ResourcePolicies, config: Optional[dict], t: Targets) -> list:
    if not t.function_roles:
        return [skip("function roles", "not known (give --stack-name, or --function-role FUNCTION=ROLE_ARN)")]
    t.account = t.account or next(iter(t.function_roles.values())).split(":")[4]
    calls = function_calls(t, key_arns(t, config))
    return [line for fn, role in sorted(t.function_roles.items())
            for line in check_role(iam, policies, fn, role, calls[fn], "make every call its code makes")]


def simulated(session, check: Callable[[object, ResourcePolicies], list]) -> list:
    """The lines of a check that asks IAM's policy simulator, called with the IAM client and the
    resource policies; the simulator refusing is one FAIL line, not a traceback."""
    try:
        return check(session.client("iam"), ResourcePolicies(session))
    except ClientError as e:
        return [fail("permissions", f"IAM's policy simulator refused ({e.response['Error'].get('Message', e)})",
                     "allow whoever runs the doctor iam:SimulatePrincipalPolicy on the stack's, the model's and "
                     "the pipelines' roles")]


def check_permissions(session, sm, config: Optional[dict], t: Targets) -> list:
    """The endpoint's and the functions' roles, through IAM's policy simulator."""
    return simulated(session, lambda iam, policies: check_endpoint_role(sm, iam, policies, config, t)
                     + check_function_roles(iam, policies, config, t))
