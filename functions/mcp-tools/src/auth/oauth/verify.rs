//! OAuth 2.1 access tokens (JWT), verified as an MCP resource server verifies them.
//!
//! The caller is the token's `iss` + `sub`. A token is accepted only when an asymmetric
//! signature verifies under one of the issuer's published keys and its claims say it was
//! issued by the configured issuer, for this resource, and is valid now. The issuer's keys
//! (JWKS) are fetched on the first token and again, rate-limited, when a token names a key not
//! yet known (the issuer rotated its keys).
//!
//! A token's text is never logged, put in an error, or sent anywhere: the errors say what was
//! wrong, not what the token held. The token's own `jku`, `jwk` and `x5u` headers are ignored:
//! keys come from the configured issuer only.
//!
//! The pure helpers the front door needs for RFC 9728 (protected resource metadata) and the
//! `WWW-Authenticate` challenges live here too.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::config::OAuthConfig;
use base64::Engine as _;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, KeyOperations, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::{Mutex, RwLock};
use tokio::time::Instant;

/// Clock skew tolerated between the issuer and this server, for `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: u64 = 30;
/// The RFC 9728 well-known path; a resource with a path has it appended.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// Far above any real access token; a larger one is not decoded at all.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Without any key, a failed fetch is retried no sooner than this: every request would
/// otherwise wait on an issuer that is down.
const NO_KEYS_RETRY: Duration = Duration::from_secs(2);
/// Keys held longer than this are fetched again, so a key the issuer withdrew stops being
/// trusted even by a long-lived instance.
const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);

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

/// Why the issuer's keys could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("{0} is neither https:// nor http:// to this machine")]
    InsecureUrl(String),
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
    #[error("GET {url} failed: {reason}")]
    Request { url: String, reason: String },
    #[error("GET {url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("GET {url}: the answer is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{url} is not a valid document: {reason}")]
    BadDocument { url: String, reason: String },
    #[error("{url} names the issuer {found:?}, not the configured {expected:?}")]
    IssuerMismatch {
        url: String,
        expected: String,
        found: String,
    },
    #[error("no metadata of the issuer could be read: {0}")]
    NoMetadata(String),
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

/// Where the issuer's keys come from: HTTP in production, a fake in tests.
pub trait KeySource: Send + Sync + 'static {
    fn fetch(&self) -> impl Future<Output = Result<JwkSet, KeyError>> + Send;
}

type KeyFuture<'a> = Pin<Box<dyn Future<Output = Result<JwkSet, KeyError>> + Send + 'a>>;

/// `KeySource` as a trait object, so `Verifier` needs no type parameter.
trait DynKeySource: Send + Sync {
    fn fetch_boxed(&self) -> KeyFuture<'_>;
}

impl<S: KeySource> DynKeySource for S {
    fn fetch_boxed(&self) -> KeyFuture<'_> {
        Box::pin(self.fetch())
    }
}

/// The keys held, and when they were last asked for.
#[derive(Default)]
struct KeyCache {
    keys: Option<Arc<JwkSet>>,
    fetched_at: Option<Instant>,
    attempted_at: Option<Instant>,
    /// Counts fetch attempts: a caller that waited for another's fetch sees it changed.
    generation: u64,
    last_error: Option<String>,
}

/// Verifies access tokens of one issuer for one resource.
pub struct Verifier {
    issuer: String,
    /// App clients whose tokens may lack `aud` (Cognito's access tokens carry only `client_id`).
    client_ids: Vec<String>,
    min_refresh: Duration,
    source: Box<dyn DynKeySource>,
    cache: RwLock<KeyCache>,
    /// Held while fetching: concurrent callers wait for one fetch instead of each starting one.
    fetch_gate: Mutex<()>,
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
            min_refresh: Duration::from_secs(config.jwks_min_refresh_secs),
            source: Box::new(source),
            cache: RwLock::new(KeyCache::default()),
            fetch_gate: Mutex::new(()),
        }
    }

    /// The token's claims if it is valid at `now_secs` (seconds since the Unix epoch) for
    /// `resource` (this server's identifier, see [`resource`]).
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
        let (keys, generation, stale) = self.held().await;
        if let (Some(keys), false) = (&keys, stale) {
            if let Some(key) = select_key(keys, kid, alg)? {
                return Ok(key);
            }
        }
        self.refresh(generation).await;
        let (keys, _, _) = self.held().await;
        match keys {
            Some(keys) => select_key(&keys, kid, alg)?.ok_or(TokenError::UnknownKey),
            None => Err(TokenError::KeysUnavailable(
                self.cache
                    .read()
                    .await
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "not fetched yet".to_owned()),
            )),
        }
    }

    /// The keys held, the fetch generation they belong to, and whether they are too old.
    async fn held(&self) -> (Option<Arc<JwkSet>>, u64, bool) {
        let cache = self.cache.read().await;
        let stale = cache
            .fetched_at
            .is_some_and(|at| at.elapsed() >= KEYS_MAX_AGE);
        (cache.keys.clone(), cache.generation, stale)
    }

    /// Fetches the keys unless another caller just did, or the last attempt is too recent.
    /// A failed fetch keeps the keys held.
    async fn refresh(&self, seen_generation: u64) {
        let _gate = self.fetch_gate.lock().await;
        {
            let cache = self.cache.read().await;
            if cache.generation != seen_generation {
                return;
            }
            let wait = match cache.keys {
                Some(_) => self.min_refresh,
                None => NO_KEYS_RETRY,
            };
            if cache.attempted_at.is_some_and(|at| at.elapsed() < wait) {
                return;
            }
        }
        let fetched = self.source.fetch_boxed().await;
        let mut cache = self.cache.write().await;
        cache.generation += 1;
        cache.attempted_at = Some(Instant::now());
        match fetched {
            Ok(keys) => {
                tracing::info!(keys = keys.keys.len(), "fetched the issuer's signing keys");
                cache.keys = Some(Arc::new(keys));
                cache.fetched_at = cache.attempted_at;
                cache.last_error = None;
            }
            Err(error) => {
                tracing::warn!(%error, "could not fetch the issuer's signing keys");
                cache.last_error = Some(error.to_string());
            }
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

/// Equal, or equal but for one trailing slash on either side.
fn same_modulo_slash(a: &str, b: &str) -> bool {
    let trim = |s: &str| s.strip_suffix('/').unwrap_or(s).to_owned();
    trim(a) == trim(b)
}

// ---------------------------------------------------------------------------------------
// Keys over HTTP
// ---------------------------------------------------------------------------------------

/// The largest metadata or JWKS document read.
pub const MAX_BODY_BYTES: usize = 256 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The issuer's keys over HTTP: from the configured `jwks_uri`, else from the `jwks_uri` of
/// the issuer's metadata (OpenID Connect discovery, then RFC 8414), which must name the
/// configured issuer. Redirects are not followed; every URL must be `https://` or `http://`
/// to this machine.
pub struct HttpKeySource {
    client: Result<reqwest::Client, String>,
    issuer: String,
    /// Configured, or discovered once and kept.
    jwks_uri: std::sync::Mutex<Option<String>>,
}

impl HttpKeySource {
    pub fn new(config: &OAuthConfig) -> Self {
        Self {
            client: http_client(),
            issuer: config.issuer.clone(),
            jwks_uri: std::sync::Mutex::new(config.jwks_uri.clone()),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, KeyError> {
        self.client
            .as_ref()
            .map_err(|reason| KeyError::Client(reason.clone()))
    }

    async fn jwks_uri(&self) -> Result<String, KeyError> {
        let known = self.jwks_uri.lock().expect("not poisoned").clone();
        if let Some(uri) = known {
            return Ok(uri);
        }
        let uri = self.discover().await?;
        *self.jwks_uri.lock().expect("not poisoned") = Some(uri.clone());
        Ok(uri)
    }

    /// The `jwks_uri` of the first metadata document that names this issuer.
    async fn discover(&self) -> Result<String, KeyError> {
        let mut failures = Vec::new();
        for url in metadata_urls(&self.issuer) {
            match self.metadata_jwks_uri(&url).await {
                Ok(uri) => return Ok(uri),
                Err(error) => failures.push(error.to_string()),
            }
        }
        Err(KeyError::NoMetadata(failures.join("; ")))
    }

    async fn metadata_jwks_uri(&self, url: &str) -> Result<String, KeyError> {
        let document = self.get_json(url).await?;
        let bad = |reason: &str| KeyError::BadDocument {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let issuer = document
            .get("issuer")
            .and_then(|v| v.as_str())
            .ok_or_else(|| bad("no issuer"))?;
        if !same_modulo_slash(issuer, &self.issuer) {
            return Err(KeyError::IssuerMismatch {
                url: url.to_owned(),
                expected: self.issuer.clone(),
                found: issuer.to_owned(),
            });
        }
        let jwks_uri = document
            .get("jwks_uri")
            .and_then(|v| v.as_str())
            .ok_or_else(|| bad("no jwks_uri"))?;
        check_url(jwks_uri)?;
        Ok(jwks_uri.to_owned())
    }

    /// A JSON document, with the URL checked, no redirect, and the size capped.
    async fn get_json(&self, url: &str) -> Result<serde_json::Value, KeyError> {
        check_url(url)?;
        let failed = |reason: String| KeyError::Request {
            url: url.to_owned(),
            reason,
        };
        let mut response = self
            .client()?
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| failed(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(KeyError::Status {
                url: url.to_owned(),
                status: response.status().as_u16(),
            });
        }
        let too_large = || KeyError::TooLarge {
            url: url.to_owned(),
        };
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BODY_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failed(e.without_url().to_string()))?
        {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| KeyError::BadDocument {
            url: url.to_owned(),
            reason: e.to_string(),
        })
    }
}

impl KeySource for HttpKeySource {
    async fn fetch(&self) -> Result<JwkSet, KeyError> {
        let uri = self.jwks_uri().await?;
        let document = self.get_json(&uri).await?;
        parse_jwks(&uri, &document)
    }
}

/// The keys of a JWKS document; a key of a type or algorithm jsonwebtoken does not know is
/// skipped rather than failing the whole set.
fn parse_jwks(url: &str, document: &serde_json::Value) -> Result<JwkSet, KeyError> {
    let keys = document
        .get("keys")
        .and_then(|k| k.as_array())
        .ok_or_else(|| KeyError::BadDocument {
            url: url.to_owned(),
            reason: "no keys array".to_owned(),
        })?;
    let keys = keys
        .iter()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .collect();
    Ok(JwkSet { keys })
}

/// OpenID Connect discovery first (what most issuers serve), then RFC 8414's, which puts the
/// issuer's path after the well-known one.
fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.strip_suffix('/').unwrap_or(issuer);
    let mut urls = vec![format!("{issuer}/.well-known/openid-configuration")];
    if let Ok(url) = reqwest::Url::parse(issuer) {
        let path = url.path().trim_end_matches('/');
        urls.push(format!(
            "{}/.well-known/oauth-authorization-server{path}",
            url.origin().ascii_serialization()
        ));
    }
    urls
}

/// The rule the configuration holds the issuer and a configured `jwks_uri` to, for a URL
/// found in the issuer's metadata.
fn check_url(url: &str) -> Result<(), KeyError> {
    if crate::config::auth::https_or_loopback(url) {
        Ok(())
    } else {
        Err(KeyError::InsecureUrl(url.to_owned()))
    }
}

/// A client with short timeouts and no redirects, its TLS on aws-lc-rs (the provider already
/// in the build through rustls; reqwest wants one installed).
fn http_client() -> Result<reqwest::Client, String> {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Err only when a provider is already installed, which serves as well.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------
// What the front door serves
// ---------------------------------------------------------------------------------------

/// This server's resource identifier: `OAUTH_AUDIENCE`, or else the public URL of the
/// request's MCP endpoint, `https://<Host>/mcp` (the Host has been checked against
/// MCP_ALLOWED_HOSTS, so a first deployment works before its Function URL is known).
pub fn resource(config: &OAuthConfig, host: &str) -> String {
    match &config.audience {
        Some(audience) => audience.clone(),
        None => format!("https://{host}/mcp"),
    }
}

/// Where the metadata of `resource` is served: beside its MCP path, on the same function
/// (`https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`, as RFC 9728 has
/// it; a function mounted under a path prefix keeps the prefix, so the URL still reaches it).
pub fn metadata_url(resource: &str) -> String {
    let resource = resource.split(['?', '#']).next().unwrap_or_default();
    let authority_start = resource.find("://").map_or(0, |i| i + 3);
    let path_start = resource[authority_start..]
        .find('/')
        .map_or(resource.len(), |i| authority_start + i);
    let (origin, path) = resource.split_at(path_start);
    match path.strip_suffix("/mcp") {
        Some(base) => format!("{origin}{base}{METADATA_PATH}/mcp"),
        // A terminating slash right after the host is removed (RFC 9728, section 3.1).
        None if path.is_empty() || path == "/" => format!("{origin}{METADATA_PATH}"),
        None => format!("{origin}{METADATA_PATH}{path}"),
    }
}

/// The RFC 9728 metadata document, served unauthenticated.
pub fn protected_resource_metadata(config: &OAuthConfig, resource: &str) -> serde_json::Value {
    serde_json::json!({
        "resource": resource,
        "authorization_servers": [config.issuer],
        "scopes_supported": supported_scopes(config),
        "bearer_methods_supported": ["header"],
        "resource_name": "mcp-tools",
    })
}

fn supported_scopes(config: &OAuthConfig) -> Vec<&str> {
    let mut scopes = vec![config.read_scope.as_str()];
    if config.write_scope != config.read_scope {
        scopes.push(config.write_scope.as_str());
    }
    scopes
}

/// What a `WWW-Authenticate` challenge answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge<'a> {
    /// No token was sent (401; RFC 6750 gives no error code then).
    MissingToken,
    /// The token was refused (401).
    InvalidToken,
    /// The token is valid but lacks the scope the call needs (403).
    InsufficientScope(&'a str),
}

/// The `WWW-Authenticate` value: where the metadata is, the scopes to ask for, and the error.
pub fn challenge(config: &OAuthConfig, resource: &str, problem: Challenge<'_>) -> String {
    let all = supported_scopes(config).join(" ");
    let (scope, error) = match problem {
        Challenge::MissingToken => (all.as_str(), None),
        Challenge::InvalidToken => (all.as_str(), Some("invalid_token")),
        Challenge::InsufficientScope(needed) => (needed, Some("insufficient_scope")),
    };
    let mut value = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{}\"",
        quoted(&metadata_url(resource)),
        quoted(scope)
    );
    if let Some(error) = error {
        value.push_str(&format!(", error=\"{error}\""));
    }
    value
}

/// Text safe inside a quoted-string.
fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
pub(crate) mod tests;
