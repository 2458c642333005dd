//! Where OAuth mode may fetch from: the issuer, its metadata and its `jwks_uri` must be
//! `https://` on a public address. In production the function shares 127.0.0.1 with the Lambda
//! Runtime API, and a VPC's private addresses with whatever else lives there: an issuer, or a
//! metadata document, naming one of those must not make the function fetch it.
//! `OAUTH_ALLOW_LOCAL_ISSUER=true` (local development) lifts the address rule and allows
//! `http://` to this machine.
//!
//! What a URL shows is checked here (at cold start, and again for every URL before a fetch); a
//! name is judged by the addresses it resolves to, when the connection is made
//! (`auth::oauth::resolver`), so a name that resolves differently later gains nothing.

use std::net::IpAddr;

pub use domain::address::not_public;

/// Why a URL may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    #[error("it is not an absolute URL with a host")]
    NotAUrl,
    #[error(
        "it is not https:// (http:// only to 127.0.0.1, [::1] or localhost, with \
         OAUTH_ALLOW_LOCAL_ISSUER=true)"
    )]
    NotHttps,
    #[error(
        "its host {address} is a {class} address (allowed only with \
         OAUTH_ALLOW_LOCAL_ISSUER=true, for local development)"
    )]
    NotPublic {
        address: IpAddr,
        class: &'static str,
    },
}

/// Whether `url` may be fetched: `https://` to a name or a public address; with `allow_local`,
/// also `https://` to any address and `http://` to this machine.
pub fn check(url: &str, allow_local: bool) -> Result<(), UrlRefusal> {
    let parsed = url::Url::parse(url).map_err(|_| UrlRefusal::NotAUrl)?;
    // Parsed, so the host is the real one (`http://127.0.0.1:80@evil.example` is evil.example's)
    // and every spelling of an address (`0x7f.1`, `[::ffff:127.0.0.1]`) is read as one.
    let address = match parsed.host() {
        None => return Err(UrlRefusal::NotAUrl),
        Some(url::Host::Domain(_)) => None,
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
    };
    match (parsed.scheme(), allow_local) {
        ("https", true) => Ok(()),
        ("https", false) => match address.and_then(|ip| not_public(ip).map(|c| (ip, c))) {
            Some((address, class)) => Err(UrlRefusal::NotPublic { address, class }),
            None => Ok(()),
        },
        ("http", true) if is_this_machine(&parsed) => Ok(()),
        _ => Err(UrlRefusal::NotHttps),
    }
}

/// `localhost` or a loopback address.
fn is_this_machine(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn without_the_flag_only_https_to_a_name_or_a_public_address() {
        for ok in [
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
            "https://login.example.com:8443/realms/ml",
            "https://1.1.1.1/jwks",
            // A name is judged by what it resolves to, when connecting.
            "https://localhost/jwks",
        ] {
            assert_eq!(check(ok, false), Ok(()), "{ok}");
        }
        for (bad, refusal) in [
            ("http://login.example.com", UrlRefusal::NotHttps),
            ("http://127.0.0.1:9001/", UrlRefusal::NotHttps),
            ("ftp://login.example.com", UrlRefusal::NotHttps),
            ("file:///etc/passwd", UrlRefusal::NotAUrl),
            ("login.example.com/jwks", UrlRefusal::NotAUrl),
            ("https://", UrlRefusal::NotAUrl),
        ] {
            assert_eq!(check(bad, false), Err(refusal), "{bad}");
        }
        for (bad, address) in [
            ("https://127.0.0.1:9001/2018-06-01/runtime", "127.0.0.1"),
            ("https://0x7f.1/jwks", "127.0.0.1"),
            ("https://2130706433/jwks", "127.0.0.1"),
            ("https://127.0.0.1./jwks", "127.0.0.1"),
            ("https://[::1]/jwks", "::1"),
            ("https://[::ffff:127.0.0.1]/jwks", "::ffff:127.0.0.1"),
            ("https://[::ffff:a9fe:a9fe]/jwks", "::ffff:169.254.169.254"),
            ("https://169.254.169.254/latest", "169.254.169.254"),
            ("https://10.0.0.8/jwks", "10.0.0.8"),
            ("https://[fd00::8]/jwks", "fd00::8"),
            ("https://100.100.0.1/jwks", "100.100.0.1"),
            ("https://0.0.0.0/jwks", "0.0.0.0"),
            ("https://user@127.0.0.1/jwks", "127.0.0.1"),
        ] {
            assert!(
                matches!(check(bad, false), Err(UrlRefusal::NotPublic { address: a, .. }) if a == ip(address)),
                "{bad}: {:?}",
                check(bad, false)
            );
        }
        // The host is the one after the userinfo.
        assert_eq!(
            check("https://127.0.0.1:80@login.example.com/", false),
            Ok(())
        );
    }

    #[test]
    fn with_the_flag_any_https_and_http_to_this_machine() {
        for ok in [
            "https://login.example.com",
            "https://10.0.0.8/jwks",
            "https://127.0.0.1:8443",
            "http://127.0.0.1:9000",
            "http://127.1.2.3/jwks",
            "http://localhost:9000/jwks",
            "http://LOCALHOST/jwks",
            "http://[::1]:8080/jwks",
        ] {
            assert_eq!(check(ok, true), Ok(()), "{ok}");
        }
        for bad in [
            "http://login.example.com",
            "http://localhost.example.com/jwks",
            "http://127.0.0.1.example.com/jwks",
            "http://127.0.0.1@example.com/jwks",
            "http://10.0.0.8/jwks",
            "ftp://127.0.0.1/jwks",
        ] {
            assert_eq!(check(bad, true), Err(UrlRefusal::NotHttps), "{bad}");
        }
    }

    #[test]
    fn a_refusal_names_the_flag_that_lifts_it() {
        let refusal = check("https://169.254.169.254/", false).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "its host 169.254.169.254 is a link-local address (allowed only with \
             OAUTH_ALLOW_LOCAL_ISSUER=true, for local development)"
        );
        assert!(UrlRefusal::NotHttps
            .to_string()
            .contains("OAUTH_ALLOW_LOCAL_ISSUER=true"));
    }
}
