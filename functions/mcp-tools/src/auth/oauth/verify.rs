//! OAuth 2.1 access tokens (JWT), verified as an MCP resource server verifies them.
//!
//! The caller is the token's `iss` + `sub`. A token is accepted only when an asymmetric
//! signature verifies under one of the issuer's published keys (see [`super::keys`]) and its
//! claims say it was issued by the configured issuer, for this resource, and is valid now.
//!
//! A token's text is never logged, put in an error, or sent anywhere: the errors say what was
//! wrong, not what the token held. The token's own `jku`, `jwk` and `x5u` headers are ignored:
//! keys come from the configured issuer only.

use base64::Engine as _;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, KeyOperations, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::keys::{same_modulo_slash, HttpKeySource, KeySource, Keys};
use crate::config::OAuthConfig;

/// Clock skew tolerated between the issuer and this server, for `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: u64 = 30;
/// Far above any real access token; a larger one is not decoded at all.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a token was refused. No variant carries any part of the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is not a well-formed JWT")]
    Malformed,
    #[error("the token's algorithm {0:?} is not allowed: asymmetric signatures only")]
    AlgorithmNotAllowed(String),
    #[error("the token has critical header parameters this server does not understand")]
    UnsupportedCritical,
    #[error("no key of the issuer has the token's key id")]
    UnknownKey,
    #[error("the token names no key id and the issuer publishes several keys")]
    MissingKeyId,
    #[error("the issuer's key for this token does not fit the token's algorithm")]
    KeyMismatch,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token has no expiry (exp)")]
    MissingExpiry,
    #[error("the token was issued by another issuer")]
    WrongIssuer,
    #[error("the token is not meant for this resource (aud)")]
    WrongAudience,
    #[error("the token has no subject (sub)")]
    MissingSubject,
    #[error("the issuer's signing keys are unavailable: {0}")]
    KeysUnavailable(String),
}

/// What a verified token says about its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The configured issuer (a token's `iss` may differ from it by one trailing slash).
    pub issuer: String,
    pub subject: String,
    /// From `scope` (RFC 9068, Cognito) and `scp` (Okta, Entra ID), in order, without repeats.
    pub scopes: Vec<String>,
}

impl Claims {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Verifies access tokens of one issuer for one resource.
pub struct Verifier {
    issuer: String,
    /// App clients whose tokens may lack `aud` (Cognito's access tokens carry only `client_id`).
    client_ids: Vec<String>,
    keys: Keys,
}

impl Verifier {
    /// Keys from the configured `jwks_uri`, or from the issuer's metadata.
    pub fn new(config: &OAuthConfig) -> Self {
        Self::with_source(config, HttpKeySource::new(config))
    }

    pub fn with_source(config: &OAuthConfig, source: impl KeySource) -> Self {
        Self {
            issuer: config.issuer.clone(),
            client_ids: config.client_ids.clone(),
            keys: Keys::new(config, source),
        }
    }

    /// The token's claims if it is valid at `now_secs` (seconds since the Unix epoch) for
    /// `resource` (this server's identifier, see [`super::metadata::resource`]).
    pub async fn verify(
        &self,
        token: &str,
        now_secs: u64,
        resource: &str,
    ) -> Result<Claims, TokenError> {
        let header = parse_header(token)?;
        let key = self.key_for(header.kid.as_deref(), header.alg).await?;
        let raw = verify_signature(token, &key, header.alg)?;
        self.check_claims(raw, now_secs, resource)
    }

    /// The key that must have signed a token, fetching the keys when none fits yet.
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, TokenError> {
        let (keys, generation, stale) = self.keys.held().await;
        if let (Some(keys), false) = (&keys, stale) {
            if let Some(key) = select_key(keys, kid, alg)? {
                return Ok(key);
            }
        }
        self.keys.refresh(generation).await;
        let (keys, _, _) = self.keys.held().await;
        match keys {
            Some(keys) => select_key(&keys, kid, alg)?.ok_or(TokenError::UnknownKey),
            None => Err(TokenError::KeysUnavailable(self.keys.last_error().await)),
        }
    }

    /// The registered claims, checked against this server's clock (`now_secs`) rather than
    /// jsonwebtoken's (it reads the system clock), and with `aud` tolerating one trailing
    /// slash; jsonwebtoken would also take an `iss` array.
    fn check_claims(
        &self,
        raw: RawClaims,
        now_secs: u64,
        resource: &str,
    ) -> Result<Claims, TokenError> {
        if !raw
            .iss
            .as_deref()
            .is_some_and(|iss| same_modulo_slash(iss, &self.issuer))
        {
            return Err(TokenError::WrongIssuer);
        }
        // An ID token is never an access token, whatever its audience (Cognito marks both).
        if raw.token_use.as_deref().is_some_and(|u| u != "access") {
            return Err(TokenError::WrongAudience);
        }
        let audience_ok = match &raw.aud {
            Some(aud) => aud.values().any(|a| same_modulo_slash(a, resource)),
            // Without `aud`, only an app client named in OAUTH_CLIENT_IDS, as API Gateway's
            // JWT authorizers accept Cognito's access tokens.
            None => raw
                .client_id
                .as_deref()
                .is_some_and(|id| self.client_ids.iter().any(|c| c == id)),
        };
        if !audience_ok {
            return Err(TokenError::WrongAudience);
        }
        check_times(&raw, now_secs)?;
        let subject = raw
            .sub
            .filter(|s| !s.is_empty())
            .ok_or(TokenError::MissingSubject)?;
        Ok(Claims {
            issuer: self.issuer.clone(),
            subject,
            scopes: scopes(raw.scope.as_deref(), raw.scp.as_ref()),
        })
    }
}

/// The header fields this server reads.
#[derive(Deserialize)]
struct RawHeader {
    alg: String,
    kid: Option<String>,
    crit: Option<serde_json::Value>,
}

struct Header {
    alg: Algorithm,
    kid: Option<String>,
}

/// Checks the token's shape and header before any key is looked up: three base64url parts,
/// an allowed algorithm, no critical extensions.
fn parse_header(token: &str) -> Result<Header, TokenError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::Malformed);
    }
    let parts: Vec<&str> = token.split('.').collect();
    let base64url = |part: &str| {
        part.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if parts.len() != 3
        || parts[..2].iter().any(|p| p.is_empty())
        || !parts.iter().all(|p| base64url(p))
    {
        return Err(TokenError::Malformed);
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[0])
        .map_err(|_| TokenError::Malformed)?;
    // An object (serde would also read a struct from an array), each member once.
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return Err(TokenError::Malformed);
    }
    let raw: RawHeader = serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed)?;
    let alg = allowed_algorithm(&raw.alg)?;
    if raw.crit.is_some() {
        return Err(TokenError::UnsupportedCritical);
    }
    Ok(Header { alg, kid: raw.kid })
}

/// Asymmetric signatures only: `none` and HMAC (whose secret an attacker could take to be
/// the issuer's public key) are refused by name.
fn allowed_algorithm(name: &str) -> Result<Algorithm, TokenError> {
    match name {
        "RS256" => Ok(Algorithm::RS256),
        "RS384" => Ok(Algorithm::RS384),
        "RS512" => Ok(Algorithm::RS512),
        "PS256" => Ok(Algorithm::PS256),
        "PS384" => Ok(Algorithm::PS384),
        "PS512" => Ok(Algorithm::PS512),
        "ES256" => Ok(Algorithm::ES256),
        "ES384" => Ok(Algorithm::ES384),
        "EdDSA" => Ok(Algorithm::EdDSA),
        other => {
            // The name is the sender's text: quote it only when it is short and plain.
            let plain = other.len() <= 16 && other.bytes().all(|b| b.is_ascii_alphanumeric());
            Err(TokenError::AlgorithmNotAllowed(if plain {
                other.to_owned()
            } else {
                "?".to_owned()
            }))
        }
    }
}

/// The key a token must verify under: by `kid`, or the only key when the token names none.
/// `Ok(None)` when no key has the id (new keys may have been published); an error when the
/// key found cannot verify this algorithm.
fn select_key(
    keys: &JwkSet,
    kid: Option<&str>,
    alg: Algorithm,
) -> Result<Option<DecodingKey>, TokenError> {
    let usable: Vec<&Jwk> = keys.keys.iter().filter(|k| is_signing_key(k)).collect();
    let candidates: Vec<&Jwk> = match kid {
        Some(kid) => usable
            .into_iter()
            .filter(|k| k.common.key_id.as_deref() == Some(kid))
            .collect(),
        None if usable.len() > 1 => return Err(TokenError::MissingKeyId),
        None => usable,
    };
    if candidates.is_empty() {
        return Ok(None);
    }
    let key = candidates
        .into_iter()
        .find(|k| key_fits(k, alg))
        .ok_or(TokenError::KeyMismatch)?;
    DecodingKey::from_jwk(key)
        .map(Some)
        .map_err(|_| TokenError::KeyMismatch)
}

/// A public key published for verifying signatures: not an encryption key (`use`, `key_ops`),
/// not a symmetric one, not for an algorithm outside the allowed ones.
fn is_signing_key(jwk: &Jwk) -> bool {
    let use_ok = matches!(
        jwk.common.public_key_use,
        None | Some(PublicKeyUse::Signature)
    );
    let ops_ok = jwk
        .common
        .key_operations
        .as_ref()
        .is_none_or(|ops| ops.contains(&KeyOperations::Verify));
    let alg_ok = jwk
        .common
        .key_algorithm
        .is_none_or(|declared| ALLOWED.iter().any(|(_, a)| *a == declared));
    let asymmetric = !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_));
    use_ok && ops_ok && alg_ok && asymmetric
}

const ALLOWED: [(Algorithm, KeyAlgorithm); 9] = [
    (Algorithm::RS256, KeyAlgorithm::RS256),
    (Algorithm::RS384, KeyAlgorithm::RS384),
    (Algorithm::RS512, KeyAlgorithm::RS512),
    (Algorithm::PS256, KeyAlgorithm::PS256),
    (Algorithm::PS384, KeyAlgorithm::PS384),
    (Algorithm::PS512, KeyAlgorithm::PS512),
    (Algorithm::ES256, KeyAlgorithm::ES256),
    (Algorithm::ES384, KeyAlgorithm::ES384),
    (Algorithm::EdDSA, KeyAlgorithm::EdDSA),
];

/// The key's type (and curve) suits the algorithm, and so does its declared `alg`, if any.
fn key_fits(jwk: &Jwk, alg: Algorithm) -> bool {
    let declared_ok = jwk
        .common
        .key_algorithm
        .is_none_or(|declared| ALLOWED.contains(&(alg, declared)));
    let type_ok = match (&jwk.algorithm, alg) {
        (
            AlgorithmParameters::RSA(_),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512,
        ) => true,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES384) => {
            ec.curve == EllipticCurve::P384
        }
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    };
    declared_ok && type_ok
}

/// The claims this server reads; anything else in the payload is ignored.
#[derive(Deserialize)]
struct RawClaims {
    iss: Option<String>,
    sub: Option<String>,
    aud: Option<OneOrMany>,
    /// NumericDate may be fractional (RFC 7519).
    exp: Option<f64>,
    nbf: Option<f64>,
    iat: Option<f64>,
    scope: Option<String>,
    scp: Option<OneOrMany>,
    client_id: Option<String>,
    token_use: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn values(&self) -> impl Iterator<Item = &str> {
        let values: &[String] = match self {
            OneOrMany::One(one) => std::slice::from_ref(one),
            OneOrMany::Many(many) => many,
        };
        values.iter().map(String::as_str)
    }
}

/// The signature, checked by jsonwebtoken with its own claim checks off (`check_claims` does
/// them), and the payload read only once the signature holds.
fn verify_signature(
    token: &str,
    key: &DecodingKey,
    alg: Algorithm,
) -> Result<RawClaims, TokenError> {
    let mut validation = Validation::new(alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    jsonwebtoken::decode::<RawClaims>(token, key, &validation)
        .map(|data| data.claims)
        .map_err(|error| match error.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => TokenError::BadSignature,
            jsonwebtoken::errors::ErrorKind::InvalidAlgorithm
            | jsonwebtoken::errors::ErrorKind::InvalidEcdsaKey
            | jsonwebtoken::errors::ErrorKind::InvalidEddsaKey
            | jsonwebtoken::errors::ErrorKind::InvalidRsaKey(_)
            | jsonwebtoken::errors::ErrorKind::InvalidKeyFormat => TokenError::KeyMismatch,
            _ => TokenError::Malformed,
        })
}

/// `exp` required, `nbf` and `iat` when present, each with `LEEWAY_SECS` of skew.
fn check_times(raw: &RawClaims, now_secs: u64) -> Result<(), TokenError> {
    let now = now_secs as f64;
    let leeway = LEEWAY_SECS as f64;
    let exp = raw.exp.ok_or(TokenError::MissingExpiry)?;
    if now >= exp + leeway {
        return Err(TokenError::Expired);
    }
    let future = |t: Option<f64>| t.is_some_and(|t| now + leeway < t);
    if future(raw.nbf) || future(raw.iat) {
        return Err(TokenError::NotYetValid);
    }
    Ok(())
}

/// Space-separated `scope` and `scp` (an array, or a space-separated string).
fn scopes(scope: Option<&str>, scp: Option<&OneOrMany>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let all = scope
        .into_iter()
        .chain(scp.into_iter().flat_map(OneOrMany::values))
        .flat_map(str::split_whitespace);
    for s in all {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
