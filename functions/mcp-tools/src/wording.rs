//! What the agent is told, in words: the use cases return facts (a pending job's condition, a
//! run's progress), and this front door says them. One place for every sentence, so the tools,
//! their task forms and the Gateway door say the same.

use domain::allow_lists::ParameterRefusal;
use domain::job::{JobStatus, PendingCondition, Stage};
use domain::lineage::{Direction, Limits};
use domain::pipeline_status::{ExecutionStatus, PipelineStatus};
use domain::progress::{JobEvent, JobMilestone, RunEvent};
use domain::question::Standing;
use domain::quota::Quota;
use domain::training_input::InputRefusal;
use domain::util::quote;
use ports::{AwsFailure, StepStatus};
use usecases::check::JobNote;
use usecases::quota::QuotaError;
use usecases::training::Refused;

const AGAIN: &str = "Submit it again with the same idempotency_key to re-drive it under the same \
                     inference_id (without a key, submit it as a new job).";

/// Beside a pending job's status in check_job_status (and a job task's status message).
pub fn pending(condition: &PendingCondition) -> String {
    match condition {
        PendingCondition::Crashed => format!(
            "The submission stopped before SageMaker confirmed the request, so it was probably never \
             queued. {AGAIN}"
        ),
        PendingCondition::ProbablyLost => format!(
            "No outcome has arrived long after the request's TTL and invocation timeout. SageMaker drops \
             requests that expire in its queue, and without an error topic nobody is told. {AGAIN} \
             If the endpoint was scaled to zero, give a larger request_ttl_secs (up to 21600)."
        ),
        PendingCondition::Submitting => "The submission is still in progress.".to_owned(),
        PendingCondition::Uncertain { invoke_error } => uncertain(invoke_error.as_deref()),
    }
}

/// Beside submit_job's answer: its outcome is not known, or (a replay) the first call with the
/// key is still submitting.
pub fn submitted(condition: &PendingCondition) -> String {
    match condition {
        PendingCondition::Submitting => {
            "The first submission with this idempotency_key is still in \
                                         progress; check_job_status shows when it is queued."
                .to_owned()
        }
        other => pending(other),
    }
}

fn uncertain(error: Option<&str>) -> String {
    let cause = error.map(|e| format!(" ({e})")).unwrap_or_default();
    format!(
        "SageMaker's answer to the submission was lost{cause}, so whether the request was queued is not \
         known yet. The job stays pending: if SageMaker runs it, its outcome is recorded as usual. Check it \
         with check_job_status; if it is reported probably lost, submit again with the same idempotency_key."
    )
}

/// Beside check_job_status's answer.
pub fn job_note(note: &JobNote) -> String {
    match note {
        JobNote::Pending(condition) => pending(condition),
        JobNote::OutputUnreachable => {
            "The output is not inline and no download URL could be made for it.".to_owned()
        }
    }
}

/// A working job task's status message.
pub fn job_task_working(stage: Option<Stage>, note: Option<&JobNote>) -> String {
    if let Some(note) = note {
        return job_note(note);
    }
    match stage {
        Some(Stage::Reserved) => "queued: the request is being submitted to SageMaker",
        Some(Stage::Uncertain) => {
            "outcome not known yet: SageMaker may or may not have queued the request"
        }
        _ => JOB_INVOKED,
    }
    .to_owned()
}

/// A new job task's status message once SageMaker took the request.
pub const JOB_INVOKED: &str = "invoked: SageMaker has queued the request";

/// Whether a failure reason says the request expired in SageMaker's queue (its request TTL
/// ran out before an instance took it). SageMaker's exact words are not documented: any
/// mention of expiry or of the TTL as a word (`TTL`, `RequestTTLSeconds`) counts; "ttl" inside
/// another word (`ThrottlingException`) does not.
pub fn expired_in_queue(failure_reason: &str) -> bool {
    let reason = failure_reason.to_ascii_lowercase();
    let ttl_word = reason
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word == "ttl" || word.starts_with("requestttl"));
    reason.contains("expired") || reason.contains("time to live") || ttl_word
}

/// Beside a job that failed because it expired in the queue.
pub const EXPIRED_IN_QUEUE: &str = "The request expired in SageMaker's queue before an instance \
    took it (an endpoint scaled to zero takes minutes to start). Submit it again with a larger \
    request_ttl_secs (up to 21600), or have the endpoint keep an instance running.";

/// Beside submit_job's answer when the endpoint had no instance running.
pub const ENDPOINT_AT_ZERO: &str = "invoked: SageMaker has queued the request, but the endpoint \
    is scaled to zero: the first outcome waits for an instance to start and load the model \
    (typically several minutes). The request waits in the queue for request_ttl_secs.";

/// A working run task's status message: the step it is on.
pub fn run_task_working(status: &ExecutionStatus, steps: &[StepStatus]) -> String {
    if status.is(PipelineStatus::Stopping) {
        return "stopping: SageMaker is stopping the run".to_owned();
    }
    match steps.last() {
        Some(step) => format!(
            "{status}: step {} is {} ({} of the run's steps so far)",
            step.name,
            step.status,
            steps.len()
        ),
        None => format!("{status}: no step has started yet"),
    }
}

/// A run task's status message while a person is asked: how many questions wait, and for the
/// run's owner where approvers answer, that they do.
pub fn run_task_asking(open: usize, standing: Standing) -> String {
    let asked = match open {
        1 => "input_required: the run waits for a person's answer to its question".to_owned(),
        n => format!("input_required: the run waits for a person's answers to {n} questions"),
    };
    match standing {
        Standing::OwnRun => format!("{asked}; {OWN_RUN}"),
        Standing::Answers | Standing::Outsider => asked,
    }
}

/// A working run task's status message when an answer was not taken by SageMaker.
pub fn run_task_unsent(working: &str, reason: &str) -> String {
    format!("{working}; an answer to its question was not taken by SageMaker: {reason}")
}

/// answer_training_input's `key`, when it cannot be a question's key.
pub const BAD_QUESTION_KEY: &str =
    "`key` is not a question's key: give the `key` check_training_status \
    reports in `waiting_for_input` (letters, digits and dashes, at most 64)";
/// answer_training_input's `content` given with decline or cancel.
pub const CONTENT_ONLY_TO_ACCEPT: &str =
    "`content` goes only with `action` accept: decline and cancel take no content";
/// Who may answer a run's questions and decide its model: the one sentence the tools'
/// descriptions, the template and the docs all say (a test holds them to it).
pub const WHO_MAY_ANSWER: &str = "Who may answer: the deployment's approvers (APPROVERS) when \
    it names them, never for a run they started; otherwise the run's owner.";
/// Why an answer changed nothing.
pub const NOT_AN_APPROVER: &str =
    "this caller is not among APPROVERS, who answer this deployment's runs";
/// Why the run's owner's answer changed nothing.
pub const OWN_RUN: &str = "where the deployment names approvers (APPROVERS), one of them \
    answers, not the run's owner (separation of duties)";
pub const UNKNOWN_QUESTION: &str = "the run never asked a question under this key";
pub const ANSWERED_ALREADY: &str = "the question was answered already; a question takes one answer";

/// A stopped run task's status message.
pub const RUN_STOPPED: &str = "the run was stopped";
/// A new run task's status message.
pub const RUN_STARTED: &str = "Executing: the run has started";

/// Beside trigger_training's answer when the run started but could not be recorded (the log
/// says why).
pub const RUN_NOT_RECORDED: &str = "The run started, but recording it failed; \
    check_training_result will list it once it finishes.";

/// A task method that failed on AWS's side (the log says which call and why).
pub const TASK_FAILED: &str =
    "the task could not be read or changed just now (an AWS call failed); retrying may succeed";

/// The longest error text a tool answers with; every caller's value in it is already cut to
/// 200 characters, so only a message quoting many values could reach it.
pub const ERROR_MAX_CHARS: usize = 2000;

/// An error text cut to [`ERROR_MAX_CHARS`] (then `…`).
pub fn bounded(text: String) -> String {
    if text.chars().count() <= ERROR_MAX_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(ERROR_MAX_CHARS).collect();
    cut.push('…');
    cut
}

/// A request that reached the tools without an authenticated caller: a front door's bug, never
/// the agent's.
pub const NO_CALLER: &str =
    "the request carries no authenticated caller; nothing was read or started";

/// Beside get_model_provenance's answer: why there is little or nothing, or that there may be
/// more than it shows.
pub fn provenance_note(
    direction: Direction,
    has_lineage: bool,
    found: usize,
    truncated: bool,
) -> Option<String> {
    if !has_lineage {
        return Some(
            "SageMaker keeps no lineage for this model package (no lineage artifact has its ARN \
             as source URI), so there is nothing to walk: `root` is all that is known."
                .to_owned(),
        );
    }
    if truncated {
        return Some(format!(
            "The walk stopped at {} entities or {} pages of associations with more left to read: \
             ask again with a smaller max_depth to see the nearest entities whole.",
            Limits::MAX_ENTITIES,
            Limits::MAX_PAGES
        ));
    }
    (found == 0).then(|| {
        format!(
            "Nothing is recorded {} of this model package in SageMaker's lineage.",
            direction.as_str()
        )
    })
}

/// Beside an entity (or a run) get_model_provenance could not describe.
pub fn not_described(operation: &str, failure: &AwsFailure) -> String {
    aws_failed(&format!("SageMaker {operation}"), failure)
}

/// An AWS call that failed, as a caller may read it: the call, AWS's error code, and whether
/// a retry helps. AWS's message is not repeated: it can name the role, the account, a table
/// or a bucket.
pub fn aws_failed(operation: &str, failure: &AwsFailure) -> String {
    let code = failure
        .code
        .as_deref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    let advice = if failure.retryable {
        "This is transient (throttling or a service error): retrying the same call may succeed."
    } else {
        "Retrying the same call will not help."
    };
    format!("{operation} failed{code}. {advice}")
}

/// An id that names no job of the caller's (never submitted, another caller's, or expired).
pub fn job_not_found(inference_id: &str, result_ttl_secs: u64) -> String {
    format!(
        "no job with inference_id {}: it was not submitted here, or its record expired \
         ({result_ttl_secs} s after completion)",
        quote(inference_id)
    )
}

/// A resource the caller may not read, for whatever reason (unknown, another caller's,
/// expired, not written yet): one answer.
pub fn resource_not_found(uri: &str) -> String {
    format!(
        "no resource {}: resources here are job://<inference_id>/output and \
         job://<inference_id>/failure, for jobs this caller submitted that have completed (or \
         failed) and not yet expired",
        quote(uri)
    )
}

/// An object past what resources/read returns.
pub fn resource_too_large(size: u64, max: u64) -> String {
    format!(
        "the object is {size} bytes, more than the {max} bytes resources/read returns: download it \
         from the result_url check_job_status gives"
    )
}

pub const RESOURCE_UNREADABLE: &str =
    "the resource could not be read just now (the store did not answer); retrying may help";

/// A run the caller may not see, for whatever reason: one answer.
pub fn run_not_found(execution_arn: &str) -> String {
    format!(
        "no training run {} was found: check the execution_arn that trigger_training returned",
        quote(execution_arn)
    )
}

/// A model package the caller may not see, for whatever reason: one answer.
pub fn model_package_not_found(arn: &str) -> String {
    format!(
        "no model package {} was found: check the model_package_arn (check_training_status \
         reports the one a run registered)",
        quote(arn)
    )
}

/// An idempotency key used again with another input.
pub const INPUT_CONFLICT: &str =
    "this idempotency_key was already used with a different input; use a new key for a new job";

/// A submission SageMaker (or S3, for the input) definitely did not take.
pub fn submit_refused(inference_id: &str, reason: &str, transient: bool) -> String {
    let transient = if transient {
        " The cause looks transient."
    } else {
        ""
    };
    format!(
        "job {inference_id} was not submitted: {reason}. Nothing was queued; submitting again \
         (with the same idempotency_key, if one was given) may succeed once the cause is fixed.\
         {transient}"
    )
}

/// The store refused an item or held one it could not read: the log says which.
pub const STORE_FAILED: &str =
    "the results table could not be used for this call; retrying may succeed";

/// trigger_training on a deployment whose pipeline parameter map is invalid.
pub const PIPELINE_MISCONFIGURED: &str = "trigger_training cannot start runs on this deployment: \
    its pipeline parameter map (PIPELINE_PARAMETERS) is invalid. Nothing was started; the \
    deployment's operator must fix it (the function's log names the problem).";

/// A pipeline parameter the deployment's allow-lists refuse (the argument that set it, its value
/// quoted), with what it allows instead. Nothing was started.
pub fn parameter_refused(refused: &Refused) -> String {
    let (argument, value) = (&refused.argument, quote(&refused.value));
    let allowed = refused.allowed.join(", ");
    let why = match refused.refusal {
        ParameterRefusal::InstanceType => {
            return format!(
                "`{argument}` {value} is not one this deployment allows; use one of: {allowed}"
            )
        }
        ParameterRefusal::Input(InputRefusal::NotS3) => "is not an s3://bucket/prefix URI",
        ParameterRefusal::Input(InputRefusal::Segments) => "has a `.`, `..` or empty path segment",
        ParameterRefusal::Input(InputRefusal::Outside) => {
            "is not under a prefix this deployment allows"
        }
        ParameterRefusal::Input(InputRefusal::AccessPoint) => {
            "is an S3 access point, not a bucket under a prefix this deployment allows"
        }
    };
    format!(
        "`{argument}` {value} {why}; training may read only under: {allowed}. Nothing was started."
    )
}

/// A quota reached, or its count not written; nothing was started (or read) either way.
pub fn quota(e: &QuotaError) -> String {
    match e {
        QuotaError::Exceeded {
            quota: Quota::Submits,
            limit,
            retry_after_secs,
        } => format!(
            "Quota reached: each caller may submit {limit} jobs per minute. Nothing was submitted; \
             try again in {retry_after_secs} s."
        ),
        QuotaError::Exceeded {
            quota: Quota::Runs,
            limit,
            retry_after_secs,
        } => format!(
            "Quota reached: each caller may start {limit} training runs per hour. Nothing was \
             started; try again in {retry_after_secs} s."
        ),
        QuotaError::Exceeded {
            quota: Quota::Waits,
            limit,
            retry_after_secs,
        } => format!(
            "Quota reached: each caller may hold {limit} waits at once. Call again with wait_secs 0 \
             to read the status without waiting, or wait: a place frees within {retry_after_secs} s."
        ),
        QuotaError::Exceeded {
            quota: Quota::Reads,
            limit,
            retry_after_secs,
        } => format!(
            "Quota reached: each caller may make {limit} reads (status checks, provenance, \
             resources/read, tasks/get) per minute. Nothing was read; try again in \
             {retry_after_secs} s."
        ),
        QuotaError::Store {
            quota: Quota::Reads,
            ..
        } => "This read could not be counted against the caller's quota, so nothing was read; \
             retrying may succeed."
            .to_owned(),
        QuotaError::Store { .. } => "This call could not be counted against the caller's quota, \
             so nothing was started; retrying may succeed."
            .to_owned(),
    }
}

/// A progress notification's message while check_job_status waits.
pub fn job_progress(event: &JobEvent) -> String {
    let (milestone, still) = match event {
        JobEvent::Reached(m) => (m, false),
        JobEvent::StillAt(m) => (m, true),
    };
    let said = match milestone {
        JobMilestone::Queued => "queued: the request is being submitted to SageMaker",
        JobMilestone::Invoked => "invoked: SageMaker has the request; waiting for its outcome",
        JobMilestone::Uncertain => {
            "outcome not known yet: SageMaker may or may not have queued the request"
        }
        JobMilestone::Recorded(JobStatus::Completed) => "outcome recorded: completed",
        JobMilestone::Recorded(JobStatus::Failed) => "outcome recorded: failed",
        JobMilestone::Recorded(JobStatus::Cancelled) => "cancelled",
        JobMilestone::Recorded(JobStatus::Pending) => "pending",
    };
    if still {
        format!("{said} (still waiting)")
    } else {
        said.to_owned()
    }
}

/// A progress notification's message while check_training_status waits.
pub fn run_progress(event: &RunEvent) -> String {
    match (&event.step, event.of) {
        (None, _) => "Executing: no step has started yet".to_owned(),
        (Some(step), Some(of)) => format!(
            "step {} of {of}: {} {}",
            step.number, step.name, step.status
        ),
        (Some(step), None) => format!("step {}: {} {}", step.number, step.name, step.status),
    }
}

/// A tool name this deployment does not serve.
pub fn unknown_tool(name: &str) -> String {
    format!("no tool is called {}", quote(name))
}

/// A call to a tool not served, naming the tools that are (the name quoted, so cut).
pub fn not_served(name: &str, served: &[String], why: NotServed) -> String {
    let hint = match name {
        "submit_job" | "trigger_training" if why.catalog => {
            " (this deployment serves a tool catalog: each model and pipeline is a tool of its own)"
        }
        "answer_training_input" | "approve_model_package" if why.answers_by_form_only => {
            " (this deployment takes a run's answers only through the client's form, which a \
             person fills in: APPROVALS_VIA=elicitation; the run's task asks, and tasks/update \
             answers)"
        }
        _ => "",
    };
    format!(
        "{}{hint}; the tools are: {}",
        unknown_tool(name),
        served.join(", ")
    )
}

/// What a deployment leaves out of the built-in tools, for a call to one it does not serve.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotServed {
    /// A catalog's tools stand in for submit_job and trigger_training.
    pub catalog: bool,
    /// `APPROVALS_VIA=elicitation`: the tools that answer are not served.
    pub answers_by_form_only: bool,
}

/// What the server tells a client it is for (`instructions`), with today's tools.
pub const INSTRUCTIONS: &str = "Long-running ML work. submit_job returns an inference_id at once; poll check_job_status (wait_secs up to \
                 20, longer with a progress token) until it is completed or failed. trigger_training starts a pipeline run for a session; follow it with \
                 check_training_status, and list a session's finished runs with check_training_result. \
                 get_model_provenance says what built a registered model (or what it fed). Pass an \
                 idempotency_key to submit_job and trigger_training so a retried call never starts work twice.";

/// The same, for a deployment whose tools come from a catalog.
pub const CATALOG_INSTRUCTIONS: &str = "Long-running ML work. Each model's tool returns an inference_id at once; poll \
     check_job_status (wait_secs up to 20, longer with a progress token) until it is completed or failed. \
     Each pipeline's tool starts a run for a session and returns an execution_arn; follow it with \
     check_training_status, and list a session's runs with check_training_result. get_model_provenance \
     says what built a registered model (or what it fed). Pass an idempotency_key so a retried call never \
     starts work twice.";

#[cfg(test)]
mod tests {
    use super::*;
    use domain::pipeline_status::StepState;

    #[test]
    fn each_condition_says_what_happened_and_what_to_do() {
        let crashed = pending(&PendingCondition::Crashed);
        assert!(
            crashed.contains("probably never queued") && crashed.contains("same idempotency_key")
        );
        let lost = pending(&PendingCondition::ProbablyLost);
        assert!(lost.contains("without an error topic") && lost.contains("same idempotency_key"));
        let uncertain = pending(&PendingCondition::Uncertain {
            invoke_error: Some("InternalFailure: boom".into()),
        });
        assert!(
            uncertain.contains(
                "lost (InternalFailure: boom), so whether the request was queued is not known"
            ),
            "{uncertain}"
        );
        assert_eq!(
            pending(&PendingCondition::Submitting),
            "The submission is still in progress."
        );
        assert!(submitted(&PendingCondition::Submitting)
            .starts_with("The first submission with this idempotency_key"));
        assert_eq!(
            submitted(&PendingCondition::Crashed),
            pending(&PendingCondition::Crashed)
        );
    }

    #[test]
    fn only_an_expiry_or_the_ttl_reads_as_expired_in_the_queue() {
        for expired in [
            "Request expired in queue",
            "Request TTL exceeded",
            "RequestTTLSeconds elapsed before the request was processed",
            "the request's time to live ran out",
        ] {
            assert!(expired_in_queue(expired), "{expired}");
        }
        for other in [
            "ThrottlingException: Rate exceeded",
            "ClientError: the model raised an error",
            "ModelError: throttled by the container",
        ] {
            assert!(!expired_in_queue(other), "{other}");
        }
    }

    #[test]
    fn a_job_tasks_message_follows_its_note_then_its_stage() {
        assert_eq!(job_task_working(Some(Stage::Invoked), None), JOB_INVOKED);
        assert!(job_task_working(Some(Stage::Reserved), None).starts_with("queued:"));
        assert!(job_task_working(Some(Stage::Uncertain), None).starts_with("outcome not known yet"));
        let lost = JobNote::Pending(PendingCondition::ProbablyLost);
        assert_eq!(
            job_task_working(Some(Stage::Invoked), Some(&lost)),
            job_note(&lost)
        );
    }

    #[test]
    fn a_run_tasks_message_names_its_last_step() {
        let executing = ExecutionStatus::Known(PipelineStatus::Executing);
        assert_eq!(
            run_task_working(&executing, &[]),
            "Executing: no step has started yet"
        );
        let steps = [
            StepStatus {
                name: "Preprocess".into(),
                status: StepState::Succeeded,
                failure_reason: None,
                model_package_arn: None,
                callback_token: None,
            },
            StepStatus {
                name: "Train".into(),
                status: StepState::Executing,
                failure_reason: None,
                model_package_arn: None,
                callback_token: None,
            },
        ];
        assert_eq!(
            run_task_working(&executing, &steps),
            "Executing: step Train is Executing (2 of the run's steps so far)"
        );
        let stopping = ExecutionStatus::Known(PipelineStatus::Stopping);
        assert_eq!(
            run_task_working(&stopping, &steps),
            "stopping: SageMaker is stopping the run"
        );
    }
}
