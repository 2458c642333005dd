//! A request refused before MCP sees it, and what a request may do (the scope it needs).

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

/// What a request may do, by what it calls: the scope an OAuth token needs for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads the caller's work (and everything that is not a tool call: discovery, listing).
    Read,
    /// Starts or stops work: a tool that is not read-only, or `tasks/cancel`.
    Write,
}
