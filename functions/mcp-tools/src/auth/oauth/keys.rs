//! The issuer's signing keys: where they come from (HTTP in production, a fake in tests), and
//! the copy held between requests. They are fetched on the first token and again,
//! rate-limited, when a token names a key not yet known (the issuer rotated its keys) or the
//! copy is too old.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use tokio::sync::{Mutex, RwLock};
use tokio::time::Instant;

use crate::config::issuer_url::{self, UrlRefusal};
use crate::config::OAuthConfig;
use adapters::public_dns::{NotPublic, PublicOnly};

/// Without any key, a failed fetch is retried no sooner than this: every request would
/// otherwise wait on an issuer that is down.
pub(super) const NO_KEYS_RETRY: Duration = Duration::from_secs(2);
/// Keys held longer than this are fetched again, so a key the issuer withdrew stops being
/// trusted even by a long-lived instance.
pub(super) const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);

/// Why the issuer's keys could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("{url} is not fetched: {reason}")]
    Refused { url: String, reason: UrlRefusal },
    #[error("{url} is not fetched: {reason}")]
    NotPublic { url: String, reason: NotPublic },
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

/// Where the issuer's keys come from: HTTP in production, a fake in tests.
pub trait KeySource: Send + Sync + 'static {
    fn fetch(&self) -> impl Future<Output = Result<JwkSet, KeyError>> + Send;
}

type KeyFuture<'a> = Pin<Box<dyn Future<Output = Result<JwkSet, KeyError>> + Send + 'a>>;

/// `KeySource` as a trait object, so `Keys` needs no type parameter.
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

/// The keys of one issuer as held between requests: one fetch at a time, at most one per
/// `min_refresh` while keys are held.
pub(super) struct Keys {
    min_refresh: Duration,
    source: Box<dyn DynKeySource>,
    cache: RwLock<KeyCache>,
    /// Held while fetching: concurrent callers wait for one fetch instead of each starting one.
    fetch_gate: Mutex<()>,
}

impl Keys {
    pub(super) fn new(config: &OAuthConfig, source: impl KeySource) -> Self {
        Self {
            min_refresh: Duration::from_secs(config.jwks_min_refresh_secs),
            source: Box::new(source),
            cache: RwLock::new(KeyCache::default()),
            fetch_gate: Mutex::new(()),
        }
    }

    /// The keys held, the fetch generation they belong to, and whether they are too old.
    pub(super) async fn held(&self) -> (Option<Arc<JwkSet>>, u64, bool) {
        let cache = self.cache.read().await;
        let stale = cache
            .fetched_at
            .is_some_and(|at| at.elapsed() >= KEYS_MAX_AGE);
        (cache.keys.clone(), cache.generation, stale)
    }

    /// Fetches the keys unless another caller just did, or the last attempt is too recent.
    /// A failed fetch keeps the keys held.
    pub(super) async fn refresh(&self, seen_generation: u64) {
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

    /// Why the last fetch failed, for a caller that found no keys at all.
    pub(super) async fn last_error(&self) -> String {
        self.cache
            .read()
            .await
            .last_error
            .clone()
            .unwrap_or_else(|| "not fetched yet".to_owned())
    }
}

/// Equal, or equal but for one trailing slash on either side: how issuers and resources are
/// compared (in tokens and in the issuer's metadata alike).
pub(super) fn same_modulo_slash(a: &str, b: &str) -> bool {
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
/// configured issuer. Redirects are not followed; every URL, configured or discovered, is held
/// to `config::issuer_url`'s rule, and a name to its public addresses when connecting (unless
/// `OAUTH_ALLOW_LOCAL_ISSUER`).
pub struct HttpKeySource {
    /// Built on the first fetch, not at cold start: building it parses every TLS root.
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
    issuer: String,
    allow_local: bool,
    /// Configured, or discovered once and kept.
    jwks_uri: std::sync::Mutex<Option<String>>,
}

impl HttpKeySource {
    pub fn new(config: &OAuthConfig) -> Self {
        Self {
            client: std::sync::OnceLock::new(),
            issuer: config.issuer.clone(),
            allow_local: config.allow_local_issuer,
            jwks_uri: std::sync::Mutex::new(config.jwks_uri.clone()),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, KeyError> {
        self.client
            .get_or_init(|| http_client(self.allow_local))
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
        check_url(jwks_uri, self.allow_local)?;
        Ok(jwks_uri.to_owned())
    }

    /// A JSON document, with the URL checked, no redirect, and the size capped.
    async fn get_json(&self, url: &str) -> Result<serde_json::Value, KeyError> {
        check_url(url, self.allow_local)?;
        let failed = |e: reqwest::Error| request_error(url, e);
        let mut response = self
            .client()?
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(failed)?;
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
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
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
pub(super) fn parse_jwks(url: &str, document: &serde_json::Value) -> Result<JwkSet, KeyError> {
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
pub(super) fn metadata_urls(issuer: &str) -> Vec<String> {
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

/// The rule the configuration holds the issuer and a configured `jwks_uri` to, for every URL
/// before it is fetched (a `jwks_uri` found in the issuer's metadata included).
pub(super) fn check_url(url: &str, allow_local: bool) -> Result<(), KeyError> {
    issuer_url::check(url, allow_local).map_err(|reason| KeyError::Refused {
        url: url.to_owned(),
        reason,
    })
}

/// A failed request as a `KeyError`: a refused address as such, else reqwest's error with its
/// causes (its own text alone says only "error sending request").
fn request_error(url: &str, error: reqwest::Error) -> KeyError {
    let error = error.without_url();
    let mut causes = Vec::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<NotPublic>() {
            return KeyError::NotPublic {
                url: url.to_owned(),
                reason: refused.clone(),
            };
        }
        causes.push(e.to_string());
        cause = e.source();
    }
    KeyError::Request {
        url: url.to_owned(),
        reason: causes.join(": "),
    }
}

/// A client with short timeouts and no redirects, its TLS on aws-lc-rs (the provider already
/// in the build through rustls; reqwest wants one installed). It connects directly (no proxy
/// from the environment: a proxy would resolve the name itself) and, unless `allow_local`, to
/// public addresses only.
pub(super) fn http_client(allow_local: bool) -> Result<reqwest::Client, String> {
    adapters::public_dns::install_tls_provider();
    let builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    let builder = match allow_local {
        true => builder,
        false => builder.dns_resolver(std::sync::Arc::new(PublicOnly {
            allowed_by: "OAUTH_ALLOW_LOCAL_ISSUER",
        })),
    };
    builder.build().map_err(|e| e.to_string())
}
