//! The issuer's keys over HTTP, against a local server: discovery, the URL rules, the limits.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::fixtures::*;
use super::keys::*;
use super::verify::Verifier;
use crate::config::OAuthConfig;

#[test]
fn urls_are_held_to_the_issuer_rule_of_the_configuration() {
    for (url, local_only) in [
        ("https://keys.example.com/jwks", false),
        ("https://127.0.0.1:9001/jwks", true),
        ("http://127.0.0.1:9000/jwks", true),
        ("http://localhost/jwks", true),
        ("http://[::1]:8080/jwks", true),
    ] {
        assert_eq!(check_url(url, true), Ok(()), "{url}");
        assert_eq!(check_url(url, false).is_err(), local_only, "{url}");
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
        for allow_local in [true, false] {
            assert!(
                matches!(check_url(bad, allow_local), Err(KeyError::Refused { .. })),
                "{bad}"
            );
        }
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
    port: u16,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
    /// Every connection accepted, whatever came over it (a TLS hello included).
    connections: Arc<AtomicUsize>,
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
        let connections = Arc::new(AtomicUsize::new(0));
        let connected = Arc::clone(&connections);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                connected.fetch_add(1, Ordering::SeqCst);
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
            port: addr.port(),
            requests,
            connections,
            task,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
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

/// An issuer on this machine, as `OAUTH_ALLOW_LOCAL_ISSUER=true` allows.
fn oauth_config(issuer: &str) -> OAuthConfig {
    OAuthConfig {
        issuer: issuer.to_owned(),
        jwks_uri: None,
        allow_local_issuer: true,
        ..config()
    }
}

/// An issuer on this machine with OpenID metadata that names its keys.
async fn openid_issuer() -> Server {
    Server::start(|base| {
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
    .await
}

#[tokio::test]
async fn openid_discovery_leads_to_the_keys() {
    let server = openid_issuer().await;
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
        error.contains("http://keys.example.com/jwks is not fetched: it is not https://"),
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
            allow_local_issuer: true,
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
    assert!(http_client(false).is_ok());
    assert!(http_client(true).is_ok());
}

// --- Without OAUTH_ALLOW_LOCAL_ISSUER ------------------------------------------------------

#[tokio::test]
async fn without_the_flag_nothing_on_this_machine_is_connected_to() {
    let server = openid_issuer().await;
    let port = server.port;
    let production = |issuer: String, jwks_uri: Option<String>| OAuthConfig {
        issuer,
        jwks_uri,
        allow_local_issuer: false,
        ..config()
    };
    // Plain http, and an address for host: refused before any connection.
    for issuer in [
        format!("http://127.0.0.1:{port}"),
        format!("https://127.0.0.1:{port}"),
        format!("https://[::ffff:127.0.0.1]:{port}"),
        format!("https://0x7f.0.0.1:{port}"),
    ] {
        let error = HttpKeySource::new(&production(issuer.clone(), None))
            .fetch()
            .await
            .unwrap_err();
        let KeyError::NoMetadata(why) = &error else {
            panic!("{issuer}: {error}")
        };
        assert!(why.contains("OAUTH_ALLOW_LOCAL_ISSUER=true"), "{why}");
    }
    let error = HttpKeySource::new(&production(
        "https://issuer.example.com".to_owned(),
        Some(format!("https://127.0.0.1:{port}/keys")),
    ))
    .fetch()
    .await
    .unwrap_err();
    assert!(
        matches!(&error, KeyError::Refused { reason, .. } if reason.to_string().contains("loopback")),
        "{error}"
    );
    // A name is resolved, and its loopback answer refused, when connecting.
    let error = HttpKeySource::new(&production(
        "https://issuer.example.com".to_owned(),
        Some(format!("https://localhost:{port}/keys")),
    ))
    .fetch()
    .await
    .unwrap_err();
    let KeyError::NotPublic { url, reason } = &error else {
        panic!("{error}")
    };
    assert_eq!(url, &format!("https://localhost:{port}/keys"));
    assert_eq!(
        (reason.host.as_str(), reason.class),
        ("localhost", "loopback")
    );
    // Through the verifier: the token is refused as unverifiable, and says why.
    let issuer = format!("https://localhost:{port}");
    let v = Verifier::new(&production(issuer.clone(), None));
    let t = rs256(&with(claims(), json!({ "iss": issuer })));
    let refused = v.verify(&t, NOW, AUDIENCE).await.unwrap_err().to_string();
    assert!(
        refused.contains("signing keys are unavailable")
            && refused.contains("localhost resolves to")
            && refused.contains("loopback")
            && refused.contains("OAUTH_ALLOW_LOCAL_ISSUER=true"),
        "{refused}"
    );
    assert!(!refused.contains(&t), "never the token");
    assert_eq!(server.connections(), 0, "nothing connected");
    // The same issuer with the flag is fetched (over http, as a local one is).
    let local = OAuthConfig {
        allow_local_issuer: true,
        ..production(server.base.clone(), None)
    };
    assert_eq!(
        HttpKeySource::new(&local).fetch().await.unwrap().keys.len(),
        1
    );
    assert_eq!(server.connections(), 2);
}
