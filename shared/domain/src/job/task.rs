//! A job's MCP task id: its inference_id and a random secret stored with the job. A task id is
//! a bearer handle: whoever holds it may read and cancel the job, so it is unguessable and
//! never logged whole.

use crate::job::state::Job;

/// A new random task secret (128 bits, 32 hex characters).
pub fn new_task_secret() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub fn task_id(inference_id: &str, secret: &str) -> String {
    format!("{inference_id}.{secret}")
}
/// The inference_id and secret of a task id (inference ids hold no `.`).
pub fn parse_task_id(task_id: &str) -> Option<(&str, &str)> {
    task_id
        .rsplit_once('.')
        .filter(|(id, secret)| !id.is_empty() && secret.len() >= 32)
}

/// Whether `secret` is the job's, compared in constant time.
pub fn task_secret_matches(job: &Job, secret: &str) -> bool {
    secrets_match(job.task_secret.as_deref(), secret)
}

/// A stored task secret against a given one, in constant time; no stored secret matches nothing.
pub fn secrets_match(stored: Option<&str>, secret: &str) -> bool {
    let Some(stored) = stored else {
        return false;
    };
    stored.len() == secret.len()
        && stored
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_is_the_inference_id_a_dot_and_the_secret() {
        let id = task_id(
            "5f0c6a9e-8f3b-4c1e-9d2a-0b1c2d3e4f50",
            "0123456789abcdef0123456789abcdef",
        );
        assert_eq!(
            id,
            "5f0c6a9e-8f3b-4c1e-9d2a-0b1c2d3e4f50.0123456789abcdef0123456789abcdef"
        );
        assert_eq!(
            parse_task_id(&id),
            Some((
                "5f0c6a9e-8f3b-4c1e-9d2a-0b1c2d3e4f50",
                "0123456789abcdef0123456789abcdef"
            ))
        );
        assert_eq!(
            parse_task_id("id.short"),
            None,
            "a secret under 32 characters"
        );
        assert_eq!(
            parse_task_id(&format!(".{}", "a".repeat(32))),
            None,
            "no inference_id"
        );
        assert_eq!(parse_task_id("no-dot"), None);
    }

    #[test]
    fn new_secrets_are_32_hex_characters_and_differ() {
        let (a, b) = (new_task_secret(), new_task_secret());
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }

    #[test]
    fn secrets_match_only_when_equal_and_never_without_a_stored_one() {
        let s = "0123456789abcdef0123456789abcdef";
        assert!(secrets_match(Some(s), s));
        assert!(!secrets_match(Some(s), &s[..31]));
        assert!(!secrets_match(Some(s), "1123456789abcdef0123456789abcdef"));
        assert!(!secrets_match(None, s));
        assert!(!secrets_match(None, ""));
    }
}
