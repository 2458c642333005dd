//! A request refused before MCP sees it.

use http::StatusCode;

/// A request refused before MCP sees it: its status, its `WWW-Authenticate` challenge, and a
/// line saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub challenge: Option<String>,
    pub text: &'static str,
}

impl Refusal {
    pub fn new(status: StatusCode, text: &'static str) -> Self {
        Self {
            status,
            challenge: None,
            text,
        }
    }

    pub fn challenged(
        status: StatusCode,
        challenge: impl Into<String>,
        text: &'static str,
    ) -> Self {
        Self {
            status,
            challenge: Some(challenge.into()),
            text,
        }
    }
}
