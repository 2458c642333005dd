//! What a call to a tool does around its work, declared once per tool: the work it starts or
//! reads, the scope an OAuth token needs for it, whether it counts a read, whether the ARN it
//! names must lie within the deployment, and whether it may wait. The registry gives every
//! entry one, and `Tools::call` applies it, so a new tool cannot forget a quota or a scope.
//! The built-in tools' entries are also the names a catalog may not take.

use super::common::names;

/// What a request may do, by what it calls: the scope an OAuth token needs for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Reads the caller's work (and everything that is not a tool call: discovery, listing).
    Read,
    /// Starts or stops work: a tool that is not read-only, or `tasks/cancel`.
    Write,
    /// Answers a run's question or decides its model (`tasks/update`, answer_training_input,
    /// approve_model_package): a scope of its own, which a person's client is given and an
    /// agent's is not.
    Approve,
}

/// The work a tool does, which decides the forms a call to it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Starts a job on an async endpoint (a task for a client with the tasks extension).
    StartsJob,
    /// Starts a pipeline run (a task for a client with the tasks extension).
    StartsRun,
    /// Reads, or reads and changes what it names: the same answer for every client.
    Reads,
}

/// A tool's policy. A tool that starts work counts against the start quotas in its use case,
/// where a replay is told from a new start; every other counts one read before its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub work: Work,
    pub access: Access,
    /// One read against the caller's reads per minute, before its work.
    pub counts_read: bool,
    /// The ARN its arguments name ([`super::Place`]) is checked against the deployment's region,
    /// account and pipelines before anything is counted or read.
    pub in_deployment: bool,
    /// May wait for work to finish (`wait_secs`): held to what the call may have, within one
    /// of the caller's wait slots.
    pub may_wait: bool,
}

impl Policy {
    /// A tool that starts work.
    pub const fn starts(work: Work) -> Self {
        Self {
            work,
            access: Access::Write,
            counts_read: false,
            in_deployment: false,
            may_wait: false,
        }
    }

    /// A tool that reads: one read counted. What a tool without an entry gets.
    pub const READS: Self = Self {
        work: Work::Reads,
        access: Access::Read,
        counts_read: true,
        in_deployment: false,
        may_wait: false,
    };

    const fn in_deployment(self) -> Self {
        Self {
            in_deployment: true,
            ..self
        }
    }

    const fn waits(self) -> Self {
        Self {
            may_wait: true,
            ..self
        }
    }

    /// A tool that reads and changes what it names (answers a question, decides a model).
    const fn decides(self) -> Self {
        Self {
            access: Access::Approve,
            ..self
        }
    }

    /// Whether it starts work.
    pub fn starts_work(&self) -> bool {
        self.work != Work::Reads
    }
}

/// The built-in tools, each with its policy: the registry's entries for them, and the names
/// no catalog tool may take.
pub const BUILT_IN: [(&str, Policy); 8] = [
    (names::SUBMIT_JOB, Policy::starts(Work::StartsJob)),
    (names::CHECK_JOB_STATUS, Policy::READS.waits()),
    (names::TRIGGER_TRAINING, Policy::starts(Work::StartsRun)),
    (
        names::CHECK_TRAINING_STATUS,
        Policy::READS.waits().in_deployment(),
    ),
    (names::CHECK_TRAINING_RESULT, Policy::READS),
    (
        names::ANSWER_TRAINING_INPUT,
        Policy::READS.decides().in_deployment(),
    ),
    (
        names::APPROVE_MODEL_PACKAGE,
        Policy::READS.decides().in_deployment(),
    ),
    (names::GET_MODEL_PROVENANCE, Policy::READS.in_deployment()),
];

/// The protocol's methods whose names could be a tool's (the rest hold a `/`).
pub const PROTOCOL_METHODS: [&str; 2] = ["initialize", "ping"];

/// A built-in tool's policy.
pub fn built_in(name: &str) -> Option<Policy> {
    BUILT_IN.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// Whether no catalog tool may take `name`: every built-in tool's, served or not, and each
/// protocol method's. A catalog tool of such a name would replace the built-in one, or be
/// mistaken for it.
pub fn is_reserved(name: &str) -> bool {
    built_in(name).is_some() || PROTOCOL_METHODS.contains(&name)
}
