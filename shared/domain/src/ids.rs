//! The ids a job and a run are known by, each a type of its own: an inference id cannot be
//! passed where an execution ARN is meant. Each is the text AWS gives or takes, unchanged.
//! A caller's text becomes one only through `parse`, which holds it to the one bound of its
//! kind; text AWS or the tables gave (already an id) comes in with `From<String>`. None has a
//! default, and none is made from a `&str` by a conversion that checks nothing.

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                Self(text)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl From<&$name> for String {
            fn from(id: &$name) -> String {
                id.0.clone()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    };
}

id! {
    /// A job's id: SageMaker's `InferenceId`, the results table's key.
    InferenceId
}

id! {
    /// The caller's session a run belongs to: the runs table's partition.
    SessionId
}

id! {
    /// A pipeline run's `PipelineExecutionArn`.
    ExecutionArn
}

/// A caller's text that is no id of its kind: which kind, and the rule it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not {what}: {rule}")]
pub struct IdError {
    pub what: &'static str,
    pub rule: &'static str,
}

impl InferenceId {
    /// The most bytes a job's id may have: ours are 36 or 64 characters, so the bound only
    /// keeps a caller's text from costing a read.
    pub const MAX_BYTES: usize = 1024;

    pub fn parse(text: &str) -> Result<Self, IdError> {
        if text.trim().is_empty() || text.len() > Self::MAX_BYTES {
            return Err(IdError {
                what: "an inference_id",
                rule: "1 to 1024 bytes, not blank",
            });
        }
        Ok(Self(text.to_owned()))
    }
}

impl SessionId {
    pub const MAX_CHARS: usize = 128;

    pub fn parse(text: &str) -> Result<Self, IdError> {
        let ok = !text.is_empty()
            && text.len() <= Self::MAX_CHARS
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
        match ok {
            true => Ok(Self(text.to_owned())),
            false => Err(IdError {
                what: "a session_id",
                rule: "1 to 128 letters, digits or `_ . : -`",
            }),
        }
    }
}

impl ExecutionArn {
    /// The longest ARN SageMaker gives.
    pub const MAX_BYTES: usize = 2048;

    pub fn parse(text: &str) -> Result<Self, IdError> {
        let ok = text.starts_with("arn:")
            && text.contains(":pipeline/")
            && text.contains("/execution/")
            && text.len() <= Self::MAX_BYTES;
        match ok {
            true => Ok(Self(text.to_owned())),
            false => Err(IdError {
                what: "a pipeline execution ARN",
                rule: "arn:aws:sagemaker:<region>:<account>:pipeline/<name>/execution/<id>",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_text_as_given_and_serializes_as_a_string() {
        let id = InferenceId::parse("3f1c-a").unwrap();
        assert_eq!(id, "3f1c-a");
        assert_eq!(id.as_str(), "3f1c-a");
        assert_eq!(id.to_string(), "3f1c-a");
        assert_eq!(
            serde_json::to_value(&id).unwrap(),
            serde_json::json!("3f1c-a")
        );
        let arn =
            ExecutionArn::from("arn:aws:sagemaker:eu-west-1:1:pipeline/p/execution/e".to_owned());
        assert!(arn.as_str().ends_with("/execution/e"));
        assert_eq!(String::from(SessionId::parse("s").unwrap()), "s");
    }

    #[test]
    fn a_callers_text_is_an_id_only_within_its_kinds_bound() {
        assert!(InferenceId::parse(" ").is_err());
        assert!(InferenceId::parse(&"i".repeat(InferenceId::MAX_BYTES + 1)).is_err());
        assert!(SessionId::parse("a b").is_err());
        assert!(SessionId::parse(&"s".repeat(129)).is_err());
        assert!(ExecutionArn::parse("arn:aws:sagemaker:r:1:pipeline/p/execution/e").is_ok());
        let err = ExecutionArn::parse("arn:aws:sagemaker:r:1:pipeline/p").unwrap_err();
        assert_eq!(err.what, "a pipeline execution ARN");
    }
}
