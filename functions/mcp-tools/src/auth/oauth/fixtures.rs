//! What the OAuth tests share: the fixed test keys under tests/data/oauth (generated with
//! `openssl genpkey`, used nowhere else), tokens signed with them at test time, and keys
//! served from memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header as JwtHeader};
use serde_json::{json, Value};

use super::keys::{KeyError, KeySource};
use crate::config::OAuthConfig;

pub(crate) const NOW: u64 = 1_800_000_000;
pub(crate) const ISSUER: &str = "https://issuer.example.com";
pub(crate) const AUDIENCE: &str = "https://mcp.example.com/mcp";

pub(crate) fn config() -> OAuthConfig {
    OAuthConfig {
        issuer: ISSUER.to_owned(),
        audience: Some(AUDIENCE.to_owned()),
        client_ids: Vec::new(),
        jwks_uri: None,
        read_scope: "jobs:read".to_owned(),
        write_scope: "jobs:write".to_owned(),
        approve_scope: "jobs:approve".to_owned(),
        jwks_min_refresh_secs: 60,
        allow_local_issuer: false,
    }
}

pub(crate) fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/oauth/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A test key's public JWK, with the given `kid` and extra members (`alg`, `use`, …).
pub(crate) fn jwk_value(name: &str, kid: &str, extra: Value) -> Value {
    let all: Value = serde_json::from_slice(&data("public_jwks.json")).unwrap();
    let mut jwk = all[name].clone();
    jwk["kid"] = json!(kid);
    for (k, v) in extra.as_object().unwrap() {
        jwk[k] = v.clone();
    }
    jwk
}

pub(crate) fn jwk(name: &str, kid: &str, extra: Value) -> Jwk {
    serde_json::from_value(jwk_value(name, kid, extra)).unwrap()
}

pub(crate) fn jwks(keys: Vec<Jwk>) -> JwkSet {
    JwkSet { keys }
}

pub(crate) fn signing_key(name: &str) -> EncodingKey {
    let pem = data(&format!("{name}.pem"));
    match name {
        "rsa_a" | "rsa_b" => EncodingKey::from_rsa_pem(&pem),
        "ec_p256" => EncodingKey::from_ec_pem(&pem),
        "ed25519" => EncodingKey::from_ed_pem(&pem),
        _ => panic!("no test key {name}"),
    }
    .unwrap()
}

pub(crate) fn claims() -> Value {
    json!({
        "iss": ISSUER,
        "sub": "user-1",
        "aud": AUDIENCE,
        "exp": NOW + 300,
        "iat": NOW - 10,
        "scope": "jobs:read jobs:write",
    })
}

pub(crate) fn with(mut claims: Value, changes: Value) -> Value {
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            claims.as_object_mut().unwrap().remove(k);
        } else {
            claims[k] = v.clone();
        }
    }
    claims
}

pub(crate) fn token(key: &str, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let mut header = JwtHeader::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &signing_key(key)).unwrap()
}

pub(crate) fn rs256(claims: &Value) -> String {
    token("rsa_a", Algorithm::RS256, Some("a"), claims)
}

pub(crate) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A token put together by hand: header and payload as given, the signature as given.
pub(crate) fn hand_token(header: &Value, payload: &Value, signature: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        b64(header.to_string().as_bytes()),
        b64(payload.to_string().as_bytes()),
        b64(signature)
    )
}

/// Keys from memory: counts fetches, can swap its answer, can be slow.
#[derive(Clone)]
pub(crate) struct Fake {
    pub(crate) answer: Arc<std::sync::Mutex<Result<JwkSet, KeyError>>>,
    pub(crate) fetches: Arc<AtomicUsize>,
    pub(crate) delay: Duration,
}

impl Fake {
    pub(crate) fn new(keys: JwkSet) -> Self {
        Self {
            answer: Arc::new(std::sync::Mutex::new(Ok(keys))),
            fetches: Arc::new(AtomicUsize::new(0)),
            delay: Duration::ZERO,
        }
    }

    pub(crate) fn set(&self, answer: Result<JwkSet, KeyError>) {
        *self.answer.lock().unwrap() = answer;
    }

    pub(crate) fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

impl KeySource for Fake {
    async fn fetch(&self) -> Result<JwkSet, KeyError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.answer.lock().unwrap().clone()
    }
}

/// The usual key set: one key of each kind.
pub(crate) fn all_keys() -> JwkSet {
    jwks(vec![
        jwk("rsa_a", "a", json!({"alg": "RS256", "use": "sig"})),
        jwk("ec_p256", "ec", json!({"alg": "ES256"})),
        jwk("ed25519", "ed", json!({})),
        jwk("rsa_b", "b", json!({})),
    ])
}
