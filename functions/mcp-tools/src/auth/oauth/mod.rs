//! `AUTH_MODE=oauth`: mcp-tools as an OAuth 2.1 resource server. [`verify`] checks an access
//! token, [`keys`] holds the issuer's signing keys (fetched only from public addresses:
//! `resolver`), [`metadata`] says where to get a token
//! (RFC 9728) and how a refusal is worded; this module puts them together for one request.

pub mod keys;
pub mod metadata;
pub mod verify;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod keys_tests;

use domain::caller::Principal;
use domain::time::Clock;
use http::StatusCode;

use super::bearer;
use super::refusal::Refusal;
use super::Access;
use crate::config::OAuthConfig;
use metadata::Challenge;
use verify::Verifier;

/// The oauth mode's settings, its verifier (built once, so the keys it fetches are kept), and
/// the clock tokens are checked by.
pub struct OAuth {
    pub config: OAuthConfig,
    verifier: Verifier,
    clock: Clock,
}

impl OAuth {
    pub fn new(config: OAuthConfig, verifier: Verifier, clock: Clock) -> Self {
        Self {
            config,
            verifier,
            clock,
        }
    }

    /// The caller an access token names, when it is valid for `resource`, with the scopes
    /// it grants. A token only in the query string is not looked at.
    pub async fn caller(
        &self,
        authorization: Option<&str>,
        resource: &str,
    ) -> Result<(Principal, Vec<String>), Refusal> {
        let oauth = &self.config;
        let Some(token) = bearer::token(authorization) else {
            return Err(Refusal::challenged(
                StatusCode::UNAUTHORIZED,
                metadata::challenge(oauth, resource, Challenge::MissingToken),
                "Unauthorized: an OAuth access token is required (see the resource_metadata in WWW-Authenticate)",
            ));
        };
        let now_secs = u64::try_from(self.clock.now().timestamp()).unwrap_or(0);
        let claims = match self.verifier.verify(token, now_secs, resource).await {
            Ok(claims) => claims,
            Err(e) => {
                // Why, never the token.
                tracing::info!(reason = %e, "access token refused");
                return Err(Refusal::challenged(
                    StatusCode::UNAUTHORIZED,
                    metadata::challenge(oauth, resource, Challenge::InvalidToken),
                    "Unauthorized: the access token is not valid for this server",
                ));
            }
        };
        let principal = Principal::OAuth {
            issuer: claims.issuer,
            subject: claims.subject,
        };
        Ok((principal, claims.scopes))
    }

    /// Whether `scopes` (a verified token's) cover what the request asks to do.
    pub fn authorize(
        &self,
        scopes: &[String],
        resource: &str,
        access: Access,
    ) -> Result<(), Refusal> {
        let oauth = &self.config;
        let needed = match access {
            Access::Read => &oauth.read_scope,
            Access::Write => &oauth.write_scope,
            Access::Approve => &oauth.approve_scope,
        };
        if scopes.iter().any(|s| s == needed) {
            return Ok(());
        }
        Err(Refusal::challenged(
            StatusCode::FORBIDDEN,
            metadata::challenge(oauth, resource, Challenge::InsufficientScope(needed)),
            "Forbidden: the access token lacks the scope this call needs",
        ))
    }
}
