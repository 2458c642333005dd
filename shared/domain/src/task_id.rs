//! An MCP task id, parsed once: a job's (`<inference_id>.<secret>`) or a run's
//! (`run.<session>.<execution>.<secret>`). Anything else is no task, which every caller answers
//! exactly as it answers an unknown one.

use crate::ids::{ExecutionArn, InferenceId, SessionId};
use crate::{job, run};

/// The longest task id accepted anywhere (a request's `taskId`, a listen's `taskIds`): a run's
/// carries its session (at most 128 bytes) and execution ARN (a pipeline's name may be 256
/// characters), each base64url, and its secret, so a genuine one stays under about 700 bytes.
pub const MAX_TASK_ID_BYTES: usize = 1024;

/// A job's task: the job's id and the task's secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTask {
    pub inference_id: InferenceId,
    pub secret: String,
}

/// A run's task: the session that started it, the run, and the task's secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTask {
    pub session_id: SessionId,
    pub execution_arn: ExecutionArn,
    pub secret: String,
}

/// A task id, parsed: the one place a task is told to be a job's or a run's. Built only by
/// [`TaskId::parse`] (or from a task this server made), so a use case given one need not look
/// at its text again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskId {
    Job(JobTask),
    Run(RunTask),
}

/// A text that is no task id of this server's (too long, or of neither shape). Every caller
/// answers it exactly as it answers an unknown task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no such task")]
pub struct NotATask;

impl TaskId {
    pub fn parse(task_id: &str) -> Result<TaskId, NotATask> {
        if task_id.len() > MAX_TASK_ID_BYTES {
            return Err(NotATask);
        }
        if run::is_run_task(task_id) {
            let (session_id, execution_arn, secret) =
                run::parse_task_id(task_id).ok_or(NotATask)?;
            // Each part as the task id this server made carries it.
            Ok(TaskId::Run(RunTask {
                session_id: session_id.into(),
                execution_arn: execution_arn.into(),
                secret: secret.to_owned(),
            }))
        } else {
            let (inference_id, secret) = job::parse_task_id(task_id).ok_or(NotATask)?;
            Ok(TaskId::Job(JobTask {
                inference_id: inference_id.to_owned().into(),
                secret: secret.to_owned(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_job_and_a_run_task_id_parse_to_their_kind() {
        assert_eq!(
            TaskId::parse(&job::task_id("abc", SECRET)),
            Ok(TaskId::Job(JobTask {
                inference_id: InferenceId::parse("abc").unwrap(),
                secret: SECRET.into()
            }))
        );
        let arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/1";
        assert_eq!(
            TaskId::parse(&run::task_id("s.1", arn, SECRET)),
            Ok(TaskId::Run(RunTask {
                session_id: SessionId::parse("s.1").unwrap(),
                execution_arn: ExecutionArn::parse(arn).unwrap(),
                secret: SECRET.into()
            }))
        );
    }

    #[test]
    fn anything_else_is_no_task() {
        for bad in [
            "",
            "abc",
            "abc.short",
            "run.x.y.short",
            "run.!!.??.0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(TaskId::parse(bad), Err(NotATask), "{bad:?}");
        }
    }

    #[test]
    fn an_id_past_the_bound_is_no_task_whatever_its_shape() {
        let long_session = "s".repeat(MAX_TASK_ID_BYTES);
        let arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/1";
        let long = run::task_id(&long_session, arn, SECRET);
        assert!(long.len() > MAX_TASK_ID_BYTES);
        assert_eq!(TaskId::parse(&long), Err(NotATask));
    }
}
