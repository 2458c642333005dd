//! A client that fetches what a caller or a configuration names (an OAuth issuer's keys, a
//! subscriber's webhook) resolves names itself and connects only to public addresses: a name is
//! judged by the addresses it has when the connection is made, so a name that answered with a
//! public address at one fetch and with 127.0.0.1 at the next (DNS rebinding) is refused then.
//! A URL with an address for its host never reaches a resolver: its user checks it before any
//! fetch.

use std::error::Error;
use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use domain::address::not_public;

/// A name that resolved to no public address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host} resolves to {address}, a {class} address, and to no public one (allowed only with \
     {allowed_by}=true, for local development)"
)]
pub struct NotPublic {
    pub host: String,
    pub address: IpAddr,
    pub class: &'static str,
    /// The setting that would allow it.
    pub allowed_by: &'static str,
}

/// reqwest's TLS runs on aws-lc-rs (the provider already in the build through rustls), which
/// it wants installed once.
pub fn install_tls_provider() {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Err only when a provider is already installed, which serves as well.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}

/// The system's resolver (getaddrinfo, as reqwest's own), keeping public answers only.
pub struct PublicOnly {
    /// The setting that allows other addresses, for the refusal to name.
    pub allowed_by: &'static str,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(resolve_public(name.as_str().to_owned(), self.allowed_by))
    }
}

async fn resolve_public(
    host: String,
    allowed_by: &'static str,
) -> Result<Addrs, Box<dyn Error + Send + Sync>> {
    let answers: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
    let public = public_answers(&host, answers, allowed_by)?;
    Ok(Box::new(public.into_iter()))
}

/// The public addresses among a name's answers; when there are none, why (the first address
/// refused). An empty answer is left to the connector, which reports it as such.
pub fn public_answers(
    host: &str,
    answers: Vec<SocketAddr>,
    allowed_by: &'static str,
) -> Result<Vec<SocketAddr>, NotPublic> {
    let refused = answers
        .iter()
        .find_map(|a| not_public(a.ip()).map(|class| (a.ip(), class)));
    let public: Vec<SocketAddr> = answers
        .into_iter()
        .filter(|a| not_public(a.ip()).is_none())
        .collect();
    match refused {
        Some((address, class)) if public.is_empty() => Err(NotPublic {
            host: host.to_owned(),
            address,
            class,
            allowed_by,
        }),
        _ => Ok(public),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAG: &str = "OAUTH_ALLOW_LOCAL_ISSUER";

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|a| SocketAddr::new(a.parse().unwrap(), 0))
            .collect()
    }

    #[test]
    fn only_public_answers_are_kept() {
        assert_eq!(
            public_answers(
                "login.example.com",
                addrs(&["10.0.0.1", "1.1.1.1", "::1"]),
                FLAG
            ),
            Ok(addrs(&["1.1.1.1"]))
        );
        assert_eq!(
            public_answers("login.example.com", addrs(&["2606:4700::1111"]), FLAG),
            Ok(addrs(&["2606:4700::1111"]))
        );
        let refused = public_answers(
            "rebound.example.com",
            addrs(&["127.0.0.1", "10.0.0.1"]),
            FLAG,
        );
        assert_eq!(
            refused,
            Err(NotPublic {
                host: "rebound.example.com".to_owned(),
                address: "127.0.0.1".parse().unwrap(),
                class: "loopback",
                allowed_by: FLAG,
            })
        );
        assert!(refused
            .unwrap_err()
            .to_string()
            .contains("OAUTH_ALLOW_LOCAL_ISSUER=true"));
        assert_eq!(
            public_answers("nothing.example.com", vec![], FLAG),
            Ok(vec![])
        );
    }

    #[tokio::test]
    async fn localhost_resolves_to_nothing_this_client_connects_to() {
        let resolver = PublicOnly { allowed_by: FLAG };
        let error = match resolver.resolve("localhost".parse().unwrap()).await {
            Ok(found) => panic!("resolved to {:?}", found.collect::<Vec<_>>()),
            Err(error) => error,
        };
        let refused = error.downcast_ref::<NotPublic>().expect("NotPublic");
        assert_eq!(refused.host, "localhost");
        assert_eq!(refused.class, "loopback");
    }
}
