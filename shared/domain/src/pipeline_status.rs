//! A pipeline run's status in SageMaker's words, and as this project records it (a run it
//! triggered is `pending` until SageMaker is heard of). A word SageMaker adds later still
//! decodes, kept as written, so nothing is lost and nothing panics.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// SageMaker's `PipelineExecutionStatus` values, spelled as the variants are.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
pub enum PipelineStatus {
    Executing,
    Stopping,
    Succeeded,
    Failed,
    Stopped,
    CompletedWithFailures,
}

impl PipelineStatus {
    pub const ALL: &'static [PipelineStatus] = <Self as strum::VariantArray>::VARIANTS;

    pub const TERMINAL: [PipelineStatus; 4] = [
        PipelineStatus::Succeeded,
        PipelineStatus::Failed,
        PipelineStatus::Stopped,
        PipelineStatus::CompletedWithFailures,
    ];

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// One of SageMaker's words; `None` for anything else.
    pub fn from_sagemaker(s: &str) -> Option<Self> {
        s.parse().ok()
    }

    pub fn is_terminal(self) -> bool {
        Self::TERMINAL.contains(&self)
    }
}

/// What DescribePipelineExecution reports: a known status, or a word this code does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecutionStatus {
    Known(PipelineStatus),
    /// Kept as SageMaker wrote it.
    Unknown(String),
}

impl ExecutionStatus {
    pub fn parse(s: &str) -> Self {
        PipelineStatus::from_sagemaker(s)
            .map(ExecutionStatus::Known)
            .unwrap_or_else(|| ExecutionStatus::Unknown(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            ExecutionStatus::Known(s) => s.as_str(),
            ExecutionStatus::Unknown(s) => s,
        }
    }

    /// Whether this is `status` (an unknown word never is).
    pub fn is(&self, status: PipelineStatus) -> bool {
        *self == ExecutionStatus::Known(status)
    }
}

impl From<PipelineStatus> for ExecutionStatus {
    fn from(status: PipelineStatus) -> Self {
        ExecutionStatus::Known(status)
    }
}

/// A run's status as the pipeline results table stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// Triggered here and not yet heard of from SageMaker (this project's word, `pending`).
    Pending,
    /// What SageMaker reported last.
    Reported(ExecutionStatus),
}

impl RunStatus {
    pub const PENDING: &'static str = "pending";

    pub fn parse(s: &str) -> Self {
        if s == Self::PENDING {
            RunStatus::Pending
        } else {
            RunStatus::Reported(ExecutionStatus::parse(s))
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Pending => Self::PENDING,
            RunStatus::Reported(s) => s.as_str(),
        }
    }

    /// Whether this is SageMaker's `status`.
    pub fn is(&self, status: PipelineStatus) -> bool {
        matches!(self, RunStatus::Reported(s) if s.is(status))
    }
}

impl From<PipelineStatus> for RunStatus {
    fn from(status: PipelineStatus) -> Self {
        RunStatus::Reported(ExecutionStatus::Known(status))
    }
}

/// SageMaker's `StepStatus` for one step of a run; a word this code does not know is kept as
/// written.
#[derive(Debug, Clone, PartialEq, Eq, strum::EnumString, strum::AsRefStr)]
pub enum StepState {
    Starting,
    Executing,
    Stopping,
    Stopped,
    Failed,
    Succeeded,
    /// Kept as SageMaker wrote it.
    #[strum(default)]
    Unknown(String),
}

impl StepState {
    /// The words SageMaker documents, in the order a step passes through them.
    pub const KNOWN: [&'static str; 6] = [
        "Starting",
        "Executing",
        "Stopping",
        "Stopped",
        "Failed",
        "Succeeded",
    ];

    pub fn parse(s: &str) -> Self {
        // The default variant takes any other word, so the error arm is never taken.
        s.parse()
            .unwrap_or_else(|_| StepState::Unknown(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            StepState::Unknown(s) => s,
            known => known.as_ref(),
        }
    }

    /// Whether the step is over (an unknown word is taken as not yet).
    pub fn has_ended(&self) -> bool {
        matches!(
            self,
            StepState::Succeeded | StepState::Failed | StepState::Stopped
        )
    }
}

/// Each status serializes and displays as its word (`as_str`), and nothing else.
macro_rules! said_as_its_word {
    ($($status:ty),*) => {$(
        impl Serialize for $status {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl fmt::Display for $status {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

said_as_its_word!(PipelineStatus, ExecutionStatus, RunStatus, StepState);

/// Each status that keeps any word reads back from it (`parse`), so an answer that carries one
/// decodes as it was sent.
macro_rules! read_from_its_word {
    ($($status:ty),*) => {$(
        impl<'de> Deserialize<'de> for $status {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d).map(|word| Self::parse(&word))
            }
        }
    )*};
}

read_from_its_word!(ExecutionStatus, RunStatus, StepState);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_word_round_trips_and_an_unknown_one_is_kept() {
        for word in StepState::KNOWN {
            let state = StepState::parse(word);
            assert_eq!(state.as_str(), word);
            assert!(!matches!(state, StepState::Unknown(_)), "{word}");
            let json = serde_json::to_value(&state).unwrap();
            assert_eq!(serde_json::from_value::<StepState>(json).unwrap(), state);
        }
        let later = StepState::parse("Paused");
        assert_eq!(later, StepState::Unknown("Paused".into()));
        assert!(!later.has_ended());
        let ended: Vec<&str> = StepState::KNOWN
            .into_iter()
            .filter(|w| StepState::parse(w).has_ended())
            .collect();
        assert_eq!(ended, ["Stopped", "Failed", "Succeeded"]);
    }

    #[test]
    fn every_known_word_round_trips() {
        for &status in PipelineStatus::ALL {
            assert_eq!(
                PipelineStatus::from_sagemaker(status.as_str()),
                Some(status)
            );
            assert_eq!(ExecutionStatus::parse(status.as_str()), status.into());
            assert_eq!(RunStatus::parse(status.as_str()), status.into());
        }
        assert_eq!(
            PipelineStatus::TERMINAL.map(PipelineStatus::as_str),
            ["Succeeded", "Failed", "Stopped", "CompletedWithFailures"]
        );
        assert!(
            !PipelineStatus::Executing.is_terminal() && !PipelineStatus::Stopping.is_terminal()
        );
    }

    #[test]
    fn an_unknown_word_is_kept_as_written() {
        let status = ExecutionStatus::parse("Paused");
        assert_eq!(status, ExecutionStatus::Unknown("Paused".into()));
        assert_eq!(status.as_str(), "Paused");
        assert!(!status.is(PipelineStatus::Executing));
        assert_eq!(PipelineStatus::from_sagemaker("pending"), None);
        assert_eq!(
            PipelineStatus::from_sagemaker("succeeded"),
            None,
            "case matters"
        );
        assert_eq!(RunStatus::parse("").as_str(), "");
    }

    #[test]
    fn pending_is_ours_and_only_the_stored_word() {
        assert_eq!(RunStatus::parse("pending"), RunStatus::Pending);
        assert_eq!(RunStatus::Pending.as_str(), "pending");
        assert!(!RunStatus::Pending.is(PipelineStatus::Executing));
        assert!(RunStatus::parse("Stopped").is(PipelineStatus::Stopped));
        assert_eq!(
            ExecutionStatus::parse("pending"),
            ExecutionStatus::Unknown("pending".into()),
            "SageMaker never says pending"
        );
    }
}
