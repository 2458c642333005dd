//! Tokens signed at test time with the fixed test keys under tests/data/oauth (generated with
//! `openssl genpkey`, used nowhere else), keys served by a fake source or a local HTTP server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use jsonwebtoken::{EncodingKey, Header as JwtHeader};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

const NOW: u64 = 1_800_000_000;
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
        jwks_min_refresh_secs: 60,
    }
}

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/oauth/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A test key's public JWK, with the given `kid` and extra members (`alg`, `use`, …).
fn jwk_value(name: &str, kid: &str, extra: Value) -> Value {
    let all: Value = serde_json::from_slice(&data("public_jwks.json")).unwrap();
    let mut jwk = all[name].clone();
    jwk["kid"] = json!(kid);
    for (k, v) in extra.as_object().unwrap() {
        jwk[k] = v.clone();
    }
    jwk
}

fn jwk(name: &str, kid: &str, extra: Value) -> Jwk {
    serde_json::from_value(jwk_value(name, kid, extra)).unwrap()
}

fn jwks(keys: Vec<Jwk>) -> JwkSet {
    JwkSet { keys }
}

fn signing_key(name: &str) -> EncodingKey {
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

fn token(key: &str, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let mut header = JwtHeader::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &signing_key(key)).unwrap()
}

pub(crate) fn rs256(claims: &Value) -> String {
    token("rsa_a", Algorithm::RS256, Some("a"), claims)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A token put together by hand: header and payload as given, the signature as given.
fn hand_token(header: &Value, payload: &Value, signature: &[u8]) -> String {
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
    answer: Arc<std::sync::Mutex<Result<JwkSet, KeyError>>>,
    fetches: Arc<AtomicUsize>,
    delay: Duration,
}

impl Fake {
    pub(crate) fn new(keys: JwkSet) -> Self {
        Self {
            answer: Arc::new(std::sync::Mutex::new(Ok(keys))),
            fetches: Arc::new(AtomicUsize::new(0)),
            delay: Duration::ZERO,
        }
    }

    fn set(&self, answer: Result<JwkSet, KeyError>) {
        *self.answer.lock().unwrap() = answer;
    }

    fn fetches(&self) -> usize {
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

fn verifier(keys: JwkSet) -> (Verifier, Fake) {
    let fake = Fake::new(keys);
    (Verifier::with_source(&config(), fake.clone()), fake)
}

#[tokio::test]
async fn a_good_token_gives_its_subject_and_scopes() {
    let (v, fake) = verifier(all_keys());
    let claims = v.verify(&rs256(&claims()), NOW, AUDIENCE).await.unwrap();
    assert_eq!(
        claims,
        Claims {
            issuer: ISSUER.to_owned(),
            subject: "user-1".to_owned(),
            scopes: vec!["jobs:read".to_owned(), "jobs:write".to_owned()],
        }
    );
    assert!(claims.has_scope("jobs:write"));
    assert!(!claims.has_scope("jobs"));
    // Cached: a second token fetches nothing.
    v.verify(&rs256(&claims_for("user-2")), NOW, AUDIENCE)
        .await
        .unwrap();
    assert_eq!(fake.fetches(), 1);
}

fn claims_for(sub: &str) -> Value {
    with(claims(), json!({ "sub": sub }))
}

#[tokio::test]
async fn scopes_come_from_scp_as_an_array_or_a_string() {
    let (v, _) = verifier(all_keys());
    let array = with(claims(), json!({"scope": null, "scp": ["jobs:read", "x"]}));
    let es = token("ec_p256", Algorithm::ES256, Some("ec"), &array);
    assert_eq!(
        v.verify(&es, NOW, AUDIENCE).await.unwrap().scopes,
        ["jobs:read", "x"]
    );
    let string = with(claims(), json!({"scope": "a b", "scp": "b c"}));
    let ed = token("ed25519", Algorithm::EdDSA, Some("ed"), &string);
    assert_eq!(
        v.verify(&ed, NOW, AUDIENCE).await.unwrap().scopes,
        ["a", "b", "c"]
    );
    let none = with(claims(), json!({"scope": null}));
    let ps = token("rsa_b", Algorithm::PS256, Some("b"), &none);
    assert!(v
        .verify(&ps, NOW, AUDIENCE)
        .await
        .unwrap()
        .scopes
        .is_empty());
}

#[tokio::test]
async fn the_times_are_checked_with_thirty_seconds_of_leeway() {
    let (v, _) = verifier(all_keys());
    let at = |changes: Value| rs256(&with(claims(), changes));
    let exp = NOW - LEEWAY_SECS;
    assert_eq!(
        v.verify(&at(json!({ "exp": exp })), NOW, AUDIENCE).await,
        Err(TokenError::Expired)
    );
    assert!(v
        .verify(&at(json!({ "exp": exp + 1 })), NOW, AUDIENCE)
        .await
        .is_ok());
    // Fractional NumericDate.
    assert!(v
        .verify(&at(json!({ "exp": NOW as f64 + 0.5 })), NOW, AUDIENCE)
        .await
        .is_ok());
    let nbf = NOW + LEEWAY_SECS;
    assert!(v
        .verify(&at(json!({ "nbf": nbf })), NOW, AUDIENCE)
        .await
        .is_ok());
    let early = at(json!({ "nbf": nbf + 1 }));
    assert_eq!(
        v.verify(&early, NOW, AUDIENCE).await,
        Err(TokenError::NotYetValid)
    );
    let issued_later = at(json!({ "iat": nbf + 1 }));
    assert_eq!(
        v.verify(&issued_later, NOW, AUDIENCE).await,
        Err(TokenError::NotYetValid)
    );
    let no_exp = at(json!({ "exp": null }));
    assert_eq!(
        v.verify(&no_exp, NOW, AUDIENCE).await,
        Err(TokenError::MissingExpiry)
    );
    let text_exp = at(json!({ "exp": "soon" }));
    assert_eq!(
        v.verify(&text_exp, NOW, AUDIENCE).await,
        Err(TokenError::Malformed)
    );
}

#[tokio::test]
async fn the_audience_must_name_this_resource() {
    let (v, _) = verifier(all_keys());
    let aud = |aud: Value| rs256(&with(claims(), json!({ "aud": aud })));
    for good in [
        json!(AUDIENCE),
        json!(format!("{AUDIENCE}/")),
        json!(["https://other.example.com", AUDIENCE]),
    ] {
        assert!(
            v.verify(&aud(good.clone()), NOW, AUDIENCE).await.is_ok(),
            "{good}"
        );
    }
    for bad in [
        json!("https://other.example.com/mcp"),
        json!("https://mcp.example.com"),
        json!(format!("{AUDIENCE}//")),
        json!([]),
        Value::Null,
    ] {
        assert_eq!(
            v.verify(&aud(bad.clone()), NOW, AUDIENCE).await,
            Err(TokenError::WrongAudience),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_token_without_aud_is_accepted_only_from_a_listed_app_client() {
    // Cognito's access tokens: `client_id` and `token_use`, no `aud`.
    let cognito = |client: &str, token_use: &str| {
        let changes = json!({ "aud": null, "client_id": client, "token_use": token_use });
        rs256(&with(claims(), changes))
    };
    let listed = OAuthConfig {
        client_ids: vec!["app-1".into()],
        ..config()
    };
    let v = Verifier::with_source(&listed, Fake::new(all_keys()));
    assert!(v
        .verify(&cognito("app-1", "access"), NOW, AUDIENCE)
        .await
        .is_ok());
    for (client, token_use) in [("app-2", "access"), ("app-1", "id")] {
        assert_eq!(
            v.verify(&cognito(client, token_use), NOW, AUDIENCE).await,
            Err(TokenError::WrongAudience),
            "{client} {token_use}"
        );
    }
    let (unlisted, _) = verifier(all_keys());
    assert_eq!(
        unlisted
            .verify(&cognito("app-1", "access"), NOW, AUDIENCE)
            .await,
        Err(TokenError::WrongAudience)
    );
}

#[tokio::test]
async fn the_issuer_must_be_the_configured_one() {
    let (v, _) = verifier(all_keys());
    let iss = |iss: Value| rs256(&with(claims(), json!({ "iss": iss })));
    // The configuration drops a trailing slash (Auth0's issuers have one).
    let slash = v
        .verify(&iss(json!(format!("{ISSUER}/"))), NOW, AUDIENCE)
        .await;
    assert_eq!(slash.unwrap().issuer, ISSUER);
    for bad in [
        json!("https://evil.example.com"),
        json!("https://issuer.example.co"),
        Value::Null,
    ] {
        assert_eq!(
            v.verify(&iss(bad), NOW, AUDIENCE).await,
            Err(TokenError::WrongIssuer)
        );
    }
    // jsonwebtoken would take an array holding the issuer; this is not a string.
    let array = iss(json!([ISSUER]));
    assert_eq!(
        v.verify(&array, NOW, AUDIENCE).await,
        Err(TokenError::Malformed)
    );
}

#[tokio::test]
async fn the_subject_is_required() {
    let (v, _) = verifier(all_keys());
    for sub in [Value::Null, json!("")] {
        let t = rs256(&with(claims(), json!({ "sub": sub })));
        assert_eq!(
            v.verify(&t, NOW, AUDIENCE).await,
            Err(TokenError::MissingSubject)
        );
    }
}

#[tokio::test]
async fn alg_none_is_refused_before_any_key_is_fetched() {
    let (v, fake) = verifier(all_keys());
    for alg in ["none", "None", "NONE", ""] {
        let header = json!({"alg": alg, "kid": "a"});
        for signature in [&b""[..], b"x"] {
            let t = hand_token(&header, &claims(), signature);
            let refused = v.verify(&t, NOW, AUDIENCE).await.unwrap_err();
            assert!(
                matches!(refused, TokenError::AlgorithmNotAllowed(_)),
                "{alg}: {refused:?}"
            );
        }
    }
    let long = hand_token(&json!({"alg": "x".repeat(40)}), &claims(), b"x");
    let refused = v.verify(&long, NOW, AUDIENCE).await;
    assert_eq!(
        refused,
        Err(TokenError::AlgorithmNotAllowed("?".to_owned()))
    );
    assert_eq!(fake.fetches(), 0);
}

#[tokio::test]
async fn hmac_keyed_with_the_public_key_is_refused() {
    let (v, fake) = verifier(all_keys());
    let n = jwk_value("rsa_a", "a", json!({}))["n"]
        .as_str()
        .unwrap()
        .to_owned();
    let secrets = [
        data("rsa_a_public.pem"),
        data("rsa_a_public.der"),
        n.into_bytes(),
    ];
    for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
        for secret in &secrets {
            let mut header = JwtHeader::new(alg);
            header.kid = Some("a".to_owned());
            let key = EncodingKey::from_secret(secret);
            let t = jsonwebtoken::encode(&header, &claims(), &key).unwrap();
            let refused = v.verify(&t, NOW, AUDIENCE).await;
            let name = format!("{alg:?}");
            assert_eq!(refused, Err(TokenError::AlgorithmNotAllowed(name)));
        }
    }
    assert_eq!(fake.fetches(), 0);
}

#[tokio::test]
async fn a_signature_by_another_key_under_a_known_kid_is_refused() {
    let (v, _) = verifier(all_keys());
    let forged = token("rsa_b", Algorithm::RS256, Some("a"), &claims());
    assert_eq!(
        v.verify(&forged, NOW, AUDIENCE).await,
        Err(TokenError::BadSignature)
    );
    let forged_pss = token("rsa_a", Algorithm::PS256, Some("b"), &claims());
    assert_eq!(
        v.verify(&forged_pss, NOW, AUDIENCE).await,
        Err(TokenError::BadSignature)
    );
}

#[tokio::test]
async fn a_tampered_payload_is_refused() {
    let (v, _) = verifier(all_keys());
    let good = rs256(&claims());
    let other = rs256(&claims_for("admin"));
    let parts: Vec<&str> = good.split('.').collect();
    let other_payload = other.split('.').nth(1).unwrap();
    let swapped = format!("{}.{}.{}", parts[0], other_payload, parts[2]);
    assert_eq!(
        v.verify(&swapped, NOW, AUDIENCE).await,
        Err(TokenError::BadSignature)
    );
    // The same signature over a payload edited by hand.
    let edited = b64(with(claims(), json!({"sub": "admin"}))
        .to_string()
        .as_bytes());
    let edited = format!("{}.{}.{}", parts[0], edited, parts[2]);
    assert_eq!(
        v.verify(&edited, NOW, AUDIENCE).await,
        Err(TokenError::BadSignature)
    );
}

#[tokio::test]
async fn malformed_tokens_are_refused_without_a_fetch() {
    let (v, fake) = verifier(all_keys());
    let good = rs256(&claims());
    let (h, rest) = good.split_once('.').unwrap();
    let header_text = |text: &str| format!("{}.{rest}", b64(text.as_bytes()));
    let cases = [
        String::new(),
        "abc".to_owned(),
        "a.b".to_owned(),
        format!("{good}.x"),
        format!(".{rest}"),
        format!("{h}..{}", rest.split_once('.').unwrap().1),
        format!("{h}=.{rest}"),
        format!("!!.{rest}"),
        format!("{h}.a+b/.c"),
        header_text("not json"),
        header_text("[\"RS256\", \"a\", null]"),
        header_text("{\"kid\":\"a\"}"),
        header_text("{\"alg\":\"RS256\",\"alg\":\"RS256\"}"),
        format!("{good}{}", "A".repeat(MAX_TOKEN_BYTES)),
    ];
    for case in &cases {
        assert_eq!(
            v.verify(case, NOW, AUDIENCE).await,
            Err(TokenError::Malformed),
            "{case:.60}"
        );
    }
    assert_eq!(fake.fetches(), 0);
    // A validly signed payload that is not a claims object.
    let message = format!("{h}.{}", b64(b"not json"));
    let signature =
        jsonwebtoken::crypto::sign(message.as_bytes(), &signing_key("rsa_a"), Algorithm::RS256)
            .unwrap();
    let signed_garbage = format!("{message}.{signature}");
    assert_eq!(
        v.verify(&signed_garbage, NOW, AUDIENCE).await,
        Err(TokenError::Malformed)
    );
}

#[tokio::test]
async fn critical_header_extensions_are_refused() {
    let (v, fake) = verifier(all_keys());
    let header = json!({"alg": "RS256", "kid": "a", "crit": ["exp"], "exp": 1});
    let t = hand_token(&header, &claims(), b"x");
    assert_eq!(
        v.verify(&t, NOW, AUDIENCE).await,
        Err(TokenError::UnsupportedCritical)
    );
    assert_eq!(fake.fetches(), 0);
}

#[tokio::test]
async fn the_key_must_fit_the_algorithm() {
    let (v, _) = verifier(all_keys());
    // The JWK says RS256: a PS256 signature by the very same key is refused.
    let pss = token("rsa_a", Algorithm::PS256, Some("a"), &claims());
    assert_eq!(
        v.verify(&pss, NOW, AUDIENCE).await,
        Err(TokenError::KeyMismatch)
    );
    // An RSA signature under the id of an EC or Ed25519 key.
    let on_ec = token("rsa_a", Algorithm::RS256, Some("ec"), &claims());
    assert_eq!(
        v.verify(&on_ec, NOW, AUDIENCE).await,
        Err(TokenError::KeyMismatch)
    );
    let on_ed = token("rsa_a", Algorithm::RS256, Some("ed"), &claims());
    assert_eq!(
        v.verify(&on_ed, NOW, AUDIENCE).await,
        Err(TokenError::KeyMismatch)
    );
    // ES384 needs a P-384 key.
    let header = json!({"alg": "ES384", "kid": "ec"});
    let es384 = hand_token(&header, &claims(), &[0; 96]);
    assert_eq!(
        v.verify(&es384, NOW, AUDIENCE).await,
        Err(TokenError::KeyMismatch)
    );
}

#[tokio::test(start_paused = true)]
async fn keys_not_for_signing_are_skipped() {
    let keys = jwks(vec![
        jwk("rsa_a", "enc", json!({"use": "enc"})),
        jwk("rsa_a", "ops", json!({"key_ops": ["encrypt"]})),
        jwk("rsa_a", "oaep", json!({"alg": "RSA-OAEP"})),
        serde_json::from_value(json!({"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"})).unwrap(),
    ]);
    let (v, _) = verifier(keys);
    for kid in ["enc", "ops", "oaep"] {
        let t = token("rsa_a", Algorithm::RS256, Some(kid), &claims());
        assert_eq!(
            v.verify(&t, NOW, AUDIENCE).await,
            Err(TokenError::UnknownKey),
            "{kid}"
        );
    }
    // Not even the only key when the token names none.
    let t = token("rsa_a", Algorithm::RS256, None, &claims());
    assert_eq!(
        v.verify(&t, NOW, AUDIENCE).await,
        Err(TokenError::UnknownKey)
    );
}

#[tokio::test]
async fn a_token_without_kid_needs_a_single_key() {
    let one = jwks(vec![jwk("rsa_a", "a", json!({}))]);
    let (v, _) = verifier(one);
    let t = token("rsa_a", Algorithm::RS256, None, &claims());
    assert!(v.verify(&t, NOW, AUDIENCE).await.is_ok());
    let (v, _) = verifier(all_keys());
    assert_eq!(
        v.verify(&t, NOW, AUDIENCE).await,
        Err(TokenError::MissingKeyId)
    );
}

#[tokio::test(start_paused = true)]
async fn an_unknown_kid_fetches_again_and_the_rotated_key_is_accepted() {
    let (v, fake) = verifier(jwks(vec![jwk("rsa_a", "a", json!({}))]));
    v.verify(&rs256(&claims()), NOW, AUDIENCE).await.unwrap();
    fake.set(Ok(jwks(vec![jwk("rsa_b", "b2", json!({}))])));
    let rotated = token("rsa_b", Algorithm::RS256, Some("b2"), &claims());
    // Unknown keys are fetched for no sooner than the interval after the last fetch.
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(v.verify(&rotated, NOW, AUDIENCE).await.is_ok());
    assert_eq!(fake.fetches(), 2);
    // The old key is gone with the old set.
    let old = rs256(&claims());
    assert_eq!(
        v.verify(&old, NOW, AUDIENCE).await,
        Err(TokenError::UnknownKey)
    );
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_unknown_kids_fetches_at_most_once_per_interval() {
    let (v, fake) = verifier(all_keys());
    v.verify(&rs256(&claims()), NOW, AUDIENCE).await.unwrap();
    for i in 0..50 {
        let kid = format!("random-{i}");
        let t = token("rsa_a", Algorithm::RS256, Some(&kid), &claims());
        assert_eq!(
            v.verify(&t, NOW, AUDIENCE).await,
            Err(TokenError::UnknownKey)
        );
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    // 50 s in: still the first fetch.
    assert_eq!(fake.fetches(), 1);
    tokio::time::advance(Duration::from_secs(10)).await;
    let t = token("rsa_a", Algorithm::RS256, Some("another"), &claims());
    assert_eq!(
        v.verify(&t, NOW, AUDIENCE).await,
        Err(TokenError::UnknownKey)
    );
    assert_eq!(fake.fetches(), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_fetch() {
    let mut fake = Fake::new(all_keys());
    fake.delay = Duration::from_millis(200);
    let v = Arc::new(Verifier::with_source(&config(), fake.clone()));
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..20 {
        let v = Arc::clone(&v);
        let t = if i % 2 == 0 {
            rs256(&claims())
        } else {
            token(
                "rsa_a",
                Algorithm::RS256,
                Some(&format!("unknown-{i}")),
                &claims(),
            )
        };
        calls.spawn(async move { (i, v.verify(&t, NOW, AUDIENCE).await) });
    }
    while let Some(done) = calls.join_next().await {
        let (i, result) = done.unwrap();
        if i % 2 == 0 {
            assert!(result.is_ok());
        } else {
            assert_eq!(result, Err(TokenError::UnknownKey));
        }
    }
    assert_eq!(fake.fetches(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_fetch_keeps_the_keys_held() {
    let (v, fake) = verifier(all_keys());
    v.verify(&rs256(&claims()), NOW, AUDIENCE).await.unwrap();
    fake.set(Err(KeyError::Status {
        url: "https://issuer.example.com/jwks".to_owned(),
        status: 503,
    }));
    tokio::time::advance(Duration::from_secs(61)).await;
    let unknown = token("rsa_a", Algorithm::RS256, Some("new"), &claims());
    assert_eq!(
        v.verify(&unknown, NOW, AUDIENCE).await,
        Err(TokenError::UnknownKey)
    );
    assert_eq!(fake.fetches(), 2);
    assert!(v.verify(&rs256(&claims()), NOW, AUDIENCE).await.is_ok());
    // Past the keys' age the set is asked for again, and kept when that fails.
    tokio::time::advance(KEYS_MAX_AGE).await;
    assert!(v.verify(&rs256(&claims()), NOW, AUDIENCE).await.is_ok());
    assert_eq!(fake.fetches(), 3);
}

#[tokio::test(start_paused = true)]
async fn no_keys_at_all_says_why_and_retries_soon() {
    let fake = Fake::new(jwks(vec![]));
    fake.set(Err(KeyError::NoMetadata(
        "GET … answered HTTP 500".to_owned(),
    )));
    let v = Verifier::with_source(&config(), fake.clone());
    let refused = v
        .verify(&rs256(&claims()), NOW, AUDIENCE)
        .await
        .unwrap_err();
    assert!(matches!(&refused, TokenError::KeysUnavailable(why) if why.contains("HTTP 500")));
    // Within the short retry delay: no new fetch.
    let _ = v.verify(&rs256(&claims()), NOW, AUDIENCE).await;
    assert_eq!(fake.fetches(), 1);
    tokio::time::advance(NO_KEYS_RETRY).await;
    fake.set(Ok(all_keys()));
    assert!(v.verify(&rs256(&claims()), NOW, AUDIENCE).await.is_ok());
    assert_eq!(fake.fetches(), 2);
}

#[tokio::test]
async fn errors_never_quote_the_token() {
    let (v, _) = verifier(all_keys());
    let secret_sub = "sub-that-must-not-leak";
    let cases = [
        rs256(&with(claims_for(secret_sub), json!({"exp": 1}))),
        rs256(&with(claims_for(secret_sub), json!({"aud": "x"}))),
        token(
            "rsa_b",
            Algorithm::RS256,
            Some("a"),
            &claims_for(secret_sub),
        ),
        hand_token(&json!({"alg": secret_sub}), &claims(), b"x"),
        hand_token(&json!({"alg": "RS256", "kid": secret_sub}), &claims(), b"x"),
    ];
    for t in &cases {
        let error = v.verify(t, NOW, AUDIENCE).await.unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(
            !text.contains(secret_sub) && !text.contains(t.as_str()),
            "{text}"
        );
    }
}

#[test]
fn metadata_urls_sit_beside_the_mcp_path() {
    let cases = [
        // RFC 9728's own form for a resource at the root of its host.
        (
            "https://h/mcp",
            "https://h/.well-known/oauth-protected-resource/mcp",
        ),
        (
            "https://h",
            "https://h/.well-known/oauth-protected-resource",
        ),
        (
            "https://h/",
            "https://h/.well-known/oauth-protected-resource",
        ),
        // A function mounted under a prefix (cargo lambda watch, a proxy) keeps it.
        (
            "http://127.0.0.1:9000/lambda-url/mcp-tools/mcp",
            "http://127.0.0.1:9000/lambda-url/mcp-tools/.well-known/oauth-protected-resource/mcp",
        ),
        (
            "https://a.lambda-url.eu-west-1.on.aws:8443/v1",
            "https://a.lambda-url.eu-west-1.on.aws:8443/.well-known/oauth-protected-resource/v1",
        ),
    ];
    for (resource, url) in cases {
        assert_eq!(metadata_url(resource), url, "{resource}");
    }
}

#[test]
fn the_metadata_document_names_the_issuer_and_the_scopes() {
    assert_eq!(
        protected_resource_metadata(&config(), AUDIENCE),
        json!({
            "resource": AUDIENCE,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["jobs:read", "jobs:write"],
            "bearer_methods_supported": ["header"],
            "resource_name": "mcp-tools",
        })
    );
}

#[test]
fn challenges_point_at_the_metadata() {
    let c = config();
    let metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    assert_eq!(
        challenge(&c, AUDIENCE, Challenge::MissingToken),
        format!(r#"Bearer resource_metadata="{metadata}", scope="jobs:read jobs:write""#)
    );
    assert_eq!(
        challenge(&c, AUDIENCE, Challenge::InvalidToken),
        format!(
            r#"Bearer resource_metadata="{metadata}", scope="jobs:read jobs:write", error="invalid_token""#
        )
    );
    assert_eq!(
        challenge(&c, AUDIENCE, Challenge::InsufficientScope("jobs:write")),
        format!(
            r#"Bearer resource_metadata="{metadata}", scope="jobs:write", error="insufficient_scope""#
        )
    );
    // Without OAUTH_AUDIENCE, the resource is the request's own MCP URL.
    let unset = OAuthConfig {
        audience: None,
        ..config()
    };
    assert_eq!(
        resource(&unset, "abc.lambda-url.eu-west-1.on.aws"),
        "https://abc.lambda-url.eu-west-1.on.aws/mcp"
    );
    assert_eq!(resource(&c, "abc.lambda-url.eu-west-1.on.aws"), AUDIENCE);
    // Every challenge is a valid header value.
    assert!(http::HeaderValue::from_str(&challenge(&c, AUDIENCE, Challenge::InvalidToken)).is_ok());
}

#[test]
fn urls_must_be_https_or_loopback_http() {
    for ok in [
        "https://keys.example.com/jwks",
        "http://127.0.0.1:9000/jwks",
        "http://localhost/jwks",
        "http://[::1]:8080/jwks",
    ] {
        assert_eq!(check_url(ok), Ok(()), "{ok}");
    }
    for bad in [
        "http://keys.example.com/jwks",
        "http://localhost.example.com/jwks",
        "http://127.0.0.1.example.com/jwks",
        "http://127.0.0.1@example.com/jwks",
        "ftp://keys.example.com/jwks",
        "file:///etc/passwd",
        "keys.example.com/jwks",
    ] {
        assert!(
            matches!(check_url(bad), Err(KeyError::InsecureUrl(_))),
            "{bad}"
        );
    }
}

#[test]
fn metadata_is_looked_for_at_both_well_known_places() {
    assert_eq!(
        metadata_urls("https://login.example.com/tenant/v2"),
        [
            "https://login.example.com/tenant/v2/.well-known/openid-configuration",
            "https://login.example.com/.well-known/oauth-authorization-server/tenant/v2",
        ]
    );
    assert_eq!(
        metadata_urls("https://login.example.com/"),
        [
            "https://login.example.com/.well-known/openid-configuration",
            "https://login.example.com/.well-known/oauth-authorization-server",
        ]
    );
}

// --- HttpKeySource against a local server --------------------------------------------------

/// One canned answer.
struct Route {
    path: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// Without Content-Length: the body ends when the connection closes.
    unsized_body: bool,
}

fn route(path: &str, status: u16, body: String) -> Route {
    Route {
        path: path.to_owned(),
        status,
        headers: vec![],
        body,
        unsized_body: false,
    }
}

/// A tiny HTTP/1.1 server on 127.0.0.1 answering canned routes (404 otherwise), one
/// connection at a time; it stops when dropped.
struct Server {
    base: String,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start(routes: impl FnOnce(&str) -> Vec<Route>) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let base = format!("http://{addr}");
        let routes = routes(&base);
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                seen.lock().unwrap().push(path.clone());
                let answer = match routes.iter().find(|r| r.path == path) {
                    Some(r) => respond(r),
                    None => respond(&route(&path, 404, "{}".to_owned())),
                };
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
        });
        Server {
            base,
            requests,
            task,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn respond(r: &Route) -> String {
    let mut text = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", r.status);
    if !r.unsized_body {
        text.push_str(&format!("Content-Length: {}\r\n", r.body.len()));
    }
    for (name, value) in &r.headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    format!("{text}\r\n{}", r.body)
}

fn jwks_document() -> String {
    json!({"keys": [
        jwk_value("rsa_a", "a", json!({"alg": "RS256", "use": "sig"})),
        {"kty": "ML-DSA", "kid": "future", "pub": "AAAA"},
    ]})
    .to_string()
}

fn oauth_config(issuer: &str) -> OAuthConfig {
    OAuthConfig {
        issuer: issuer.to_owned(),
        jwks_uri: None,
        ..config()
    }
}

#[tokio::test]
async fn openid_discovery_leads_to_the_keys() {
    let server = Server::start(|base| {
        let metadata = json!({"issuer": base, "jwks_uri": format!("{base}/keys")});
        vec![
            route(
                "/.well-known/openid-configuration",
                200,
                metadata.to_string(),
            ),
            route("/keys", 200, jwks_document()),
        ]
    })
    .await;
    let config = oauth_config(&server.base);
    let v = Verifier::new(&config);
    let t = rs256(&with(claims(), json!({"iss": server.base})));
    assert_eq!(
        v.verify(&t, NOW, AUDIENCE).await.unwrap().issuer,
        server.base
    );
    assert_eq!(
        server.requests(),
        ["/.well-known/openid-configuration", "/keys"]
    );
    // The discovered jwks_uri is kept: another fetch asks for the keys only.
    let source = HttpKeySource::new(&config);
    source.fetch().await.unwrap();
    let keys = source.fetch().await.unwrap();
    assert_eq!(keys.keys.len(), 1, "the unknown key type is skipped");
    assert_eq!(server.requests().len(), 5);
}

#[tokio::test]
async fn rfc_8414_metadata_is_the_fallback() {
    let server = Server::start(|base| {
        let issuer = format!("{base}/tenant");
        let metadata = json!({"issuer": issuer, "jwks_uri": format!("{base}/keys")});
        vec![
            route(
                "/.well-known/oauth-authorization-server/tenant",
                200,
                metadata.to_string(),
            ),
            route("/keys", 200, jwks_document()),
        ]
    })
    .await;
    let source = HttpKeySource::new(&oauth_config(&format!("{}/tenant", server.base)));
    assert_eq!(source.fetch().await.unwrap().keys.len(), 1);
    assert_eq!(
        server.requests(),
        [
            "/tenant/.well-known/openid-configuration",
            "/.well-known/oauth-authorization-server/tenant",
            "/keys"
        ]
    );
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused() {
    let server = Server::start(|base| {
        let metadata =
            json!({"issuer": "https://evil.example.com", "jwks_uri": format!("{base}/keys")});
        vec![
            route(
                "/.well-known/openid-configuration",
                200,
                metadata.to_string(),
            ),
            route(
                "/.well-known/oauth-authorization-server",
                200,
                metadata.to_string(),
            ),
            route("/keys", 200, jwks_document()),
        ]
    })
    .await;
    let source = HttpKeySource::new(&oauth_config(&server.base));
    let error = source.fetch().await.unwrap_err();
    assert!(matches!(&error, KeyError::NoMetadata(why) if why.contains("evil.example.com")));
    assert!(!server.requests().contains(&"/keys".to_owned()));
}

#[tokio::test]
async fn a_discovered_plain_http_jwks_uri_off_loopback_is_refused() {
    let server = Server::start(|base| {
        let metadata = json!({"issuer": base, "jwks_uri": "http://keys.example.com/jwks"});
        vec![route(
            "/.well-known/openid-configuration",
            200,
            metadata.to_string(),
        )]
    })
    .await;
    let source = HttpKeySource::new(&oauth_config(&server.base));
    let error = source.fetch().await.unwrap_err().to_string();
    assert!(
        error.contains("http://keys.example.com/jwks is neither https://"),
        "{error}"
    );
}

#[tokio::test]
async fn a_configured_jwks_uri_needs_no_metadata() {
    let server = Server::start(|_| vec![route("/jwks.json", 200, jwks_document())]).await;
    let config = OAuthConfig {
        jwks_uri: Some(format!("{}/jwks.json", server.base)),
        ..oauth_config("https://issuer.example.com")
    };
    let v = Verifier::new(&config);
    assert!(v.verify(&rs256(&claims()), NOW, AUDIENCE).await.is_ok());
    assert_eq!(server.requests(), ["/jwks.json"]);
}

#[tokio::test]
async fn redirects_large_bodies_and_bad_documents_are_refused() {
    let big = "x".repeat(MAX_BODY_BYTES + 1);
    let server = Server::start(|_| {
        let mut redirect = route("/moved", 302, String::new());
        redirect.headers = vec![("Location".to_owned(), "/jwks".to_owned())];
        let mut unsized_big = route("/unsized", 200, big.clone());
        unsized_big.unsized_body = true;
        vec![
            redirect,
            route("/jwks", 200, jwks_document()),
            route("/big", 200, big.clone()),
            unsized_big,
            route("/text", 200, "hello".to_owned()),
            route("/nokeys", 200, "{}".to_owned()),
        ]
    })
    .await;
    let fetch = |path: &str| {
        let config = OAuthConfig {
            jwks_uri: Some(format!("{}{path}", server.base)),
            ..config()
        };
        async move { HttpKeySource::new(&config).fetch().await.unwrap_err() }
    };
    assert!(matches!(
        fetch("/moved").await,
        KeyError::Status { status: 302, .. }
    ));
    assert!(matches!(fetch("/big").await, KeyError::TooLarge { .. }));
    assert!(matches!(fetch("/unsized").await, KeyError::TooLarge { .. }));
    assert!(matches!(fetch("/text").await, KeyError::BadDocument { .. }));
    assert!(matches!(
        fetch("/nokeys").await,
        KeyError::BadDocument { .. }
    ));
    assert!(matches!(
        fetch("/missing").await,
        KeyError::Status { status: 404, .. }
    ));
    assert!(!server.requests().contains(&"/jwks".to_owned()));
}

#[tokio::test]
async fn an_issuer_that_does_not_answer_is_a_request_error() {
    // A port just freed: nothing listens there.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let source = HttpKeySource::new(&oauth_config(&base));
    let error = source.fetch().await.unwrap_err().to_string();
    assert!(error.contains("failed"), "{error}");
}

#[test]
fn a_tls_client_builds() {
    assert!(http_client().is_ok());
}
