//! `AUTH_MODE=bearer`: `Authorization: Bearer <token>`, checked against each named token's
//! SHA-256; the caller is the token's name.

use domain::caller::Principal;
use http::StatusCode;
use sha2::{Digest, Sha256};

use super::refusal::Refusal;
use crate::config::NamedToken;

/// The caller a bearer token names, or the challenge (with `invalid_token` when a wrong
/// token was sent).
pub fn principal(authorization: Option<&str>, tokens: &[NamedToken]) -> Result<Principal, Refusal> {
    match name(authorization, tokens) {
        Some(name) => Ok(Principal::Bearer {
            name: name.to_owned(),
        }),
        None => {
            let challenge = if authorization.is_some() {
                r#"Bearer realm="mcp-tools", error="invalid_token""#
            } else {
                r#"Bearer realm="mcp-tools""#
            };
            Err(Refusal::challenged(
                StatusCode::UNAUTHORIZED,
                challenge,
                "Unauthorized: a valid bearer token is required",
            ))
        }
    }
}

/// The token in `Authorization: Bearer <token>`, if the header has that form.
pub fn token(authorization: Option<&str>) -> Option<&str> {
    let (scheme, rest) = authorization?.trim().split_once(' ')?;
    let token = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The named token whose SHA-256 is the presented token's. Every hash is compared in
/// constant time, so the answer takes as long whichever token (if any) matches.
pub fn name<'a>(authorization: Option<&str>, tokens: &'a [NamedToken]) -> Option<&'a str> {
    let token = token(authorization)?;
    let digest = Sha256::digest(token.as_bytes());
    let mut found = None;
    for known in tokens {
        let diff = digest
            .iter()
            .zip(&known.sha256)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff == 0 {
            found = Some(known.name.as_str());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_checked_by_hash_and_named() {
        let named = |name: &str, token: &[u8]| NamedToken {
            name: name.to_owned(),
            sha256: Sha256::digest(token).into(),
        };
        let tokens = [named("a", b"test"), named("b", b"other")];
        assert_eq!(name(Some("Bearer test"), &tokens), Some("a"));
        assert_eq!(name(Some("bearer  other "), &tokens), Some("b"));
        assert_eq!(name(Some("Bearer wrong"), &tokens), None);
        assert_eq!(name(Some("Basic dGVzdA=="), &tokens), None);
        assert_eq!(name(Some("Bearer"), &tokens), None);
        assert_eq!(name(Some("Bearer "), &tokens), None);
        assert_eq!(name(None, &tokens), None);
    }
}
