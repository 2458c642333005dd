//! The verifier against tokens signed at test time, its keys served by a fake source.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{EncodingKey, Header as JwtHeader};
use serde_json::{json, Value};

use super::*;
use crate::auth::oauth::fixtures::*;
use crate::auth::oauth::keys::{KeyError, KEYS_MAX_AGE, NO_KEYS_RETRY};

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
