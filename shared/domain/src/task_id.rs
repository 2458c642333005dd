//! An MCP task id, parsed once: a job's (`<inference_id>.<secret>`) or a run's
//! (`run.<session>.<execution>.<secret>`). Anything else is no task, which every caller answers
//! exactly as it answers an unknown one.

use crate::{job, run};

/// The longest task id accepted anywhere (a request's `taskId`, a listen's `taskIds`): a run's
/// carries its session (at most 128 bytes) and execution ARN (a pipeline's name may be 256
/// characters), each base64url, and its secret, so a genuine one stays under about 700 bytes.
pub const MAX_TASK_ID_BYTES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskId {
    Job {
        inference_id: String,
        secret: String,
    },
    Run {
        session_id: String,
        execution_arn: String,
        secret: String,
    },
}

impl TaskId {
    pub fn parse(task_id: &str) -> Option<TaskId> {
        if run::is_run_task(task_id) {
            let (session_id, execution_arn, secret) = run::parse_task_id(task_id)?;
            Some(TaskId::Run {
                session_id,
                execution_arn,
                secret: secret.to_owned(),
            })
        } else {
            let (inference_id, secret) = job::parse_task_id(task_id)?;
            Some(TaskId::Job {
                inference_id: inference_id.to_owned(),
                secret: secret.to_owned(),
            })
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
            Some(TaskId::Job {
                inference_id: "abc".into(),
                secret: SECRET.into()
            })
        );
        let arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/1";
        assert_eq!(
            TaskId::parse(&run::task_id("s.1", arn, SECRET)),
            Some(TaskId::Run {
                session_id: "s.1".into(),
                execution_arn: arn.into(),
                secret: SECRET.into()
            })
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
            assert_eq!(TaskId::parse(bad), None, "{bad:?}");
        }
    }
}
