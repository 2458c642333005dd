//! The ids a job and a run are known by, each a type of its own: an inference id cannot be
//! passed where an execution ARN is meant. Each is the text AWS gives or takes, unchanged,
//! and reads as a `&str` wherever one is asked for.

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
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

        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
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

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                Self(text.to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_text_as_given_and_serializes_as_a_string() {
        let id = InferenceId::from("3f1c-a");
        assert_eq!(id, "3f1c-a");
        assert_eq!(id.as_str(), "3f1c-a");
        assert_eq!(id.to_string(), "3f1c-a");
        assert_eq!(
            serde_json::to_value(&id).unwrap(),
            serde_json::json!("3f1c-a")
        );
        let arn =
            ExecutionArn::from("arn:aws:sagemaker:eu-west-1:1:pipeline/p/execution/e".to_owned());
        assert!(arn.ends_with("/execution/e"), "reads as a str");
        assert_eq!(String::from(SessionId::from("s")), "s");
    }
}
