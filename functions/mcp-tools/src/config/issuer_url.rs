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

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// The class of an address that is not on the public internet (loopback, private, link-local,
/// …), or None for a public one. IPv6 forms that carry an IPv4 address (mapped, compatible,
/// NAT64, 6to4) are judged by that address.
pub fn not_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => not_public_v4(v4),
        IpAddr::V6(v6) => not_public_v6(v6),
    }
}

fn not_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let class = match (a, b, c) {
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) | (192, 168, _) => "private (RFC 1918)",
        (172, b, _) if b & 0xf0 == 16 => "private (RFC 1918)",
        (100, b, _) if b & 0xc0 == 64 => "shared (CGNAT, 100.64.0.0/10)",
        (169, 254, _) => "link-local",
        (192, 0, 0) => "IETF protocol (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, b, _) if b & 0xfe == 18 => "benchmarking (198.18.0.0/15)",
        (192, 88, 99) => "6to4 relay (192.88.99.0/24)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved (240.0.0.0/4, broadcast)",
        _ => return None,
    };
    Some(class)
}

fn not_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // `::ffff:a.b.c.d` is connected to as a.b.c.d.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return not_public_v4(v4);
    }
    let embedded_v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let class = match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "unspecified",
        [0, 0, 0, 0, 0, 0, 0, 1] => "loopback",
        // IPv4-compatible (deprecated): the IPv4 address in its last 32 bits.
        [0, 0, 0, 0, 0, 0, hi, lo] => return not_public_v4(embedded_v4(hi, lo)),
        // NAT64 (RFC 6052): the IPv4 address in its last 32 bits.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => return not_public_v4(embedded_v4(hi, lo)),
        [0x64, 0xff9b, 1, ..] => "NAT64 local-use (64:ff9b:1::/48)",
        // 6to4 (RFC 3056): the IPv4 address in bits 16 to 48.
        [0x2002, hi, lo, ..] => return not_public_v4(embedded_v4(hi, lo)),
        [0x100, 0, 0, 0, ..] => "discard-only (100::/64)",
        [0x2001, 0, ..] => "Teredo (2001::/32)",
        [0x2001, 0xdb8, ..] => "documentation",
        [0x2001, b, ..] if b & 0xfff0 == 0x10 || b & 0xfff0 == 0x20 => "ORCHID",
        [a, ..] if a & 0xfe00 == 0xfc00 => "unique local (fc00::/7)",
        [a, ..] if a & 0xffc0 == 0xfe80 => "link-local",
        [a, ..] if a & 0xffc0 == 0xfec0 => "site-local (deprecated)",
        [a, ..] if a & 0xff00 == 0xff00 => "multicast",
        _ => return None,
    };
    Some(class)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_off_the_internet_are_named_and_public_ones_pass() {
        for (address, class) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.1.2.3", "private (RFC 1918)"),
            ("172.16.0.1", "private (RFC 1918)"),
            ("172.31.255.255", "private (RFC 1918)"),
            ("192.168.1.1", "private (RFC 1918)"),
            ("100.64.0.1", "shared (CGNAT, 100.64.0.0/10)"),
            ("100.127.255.255", "shared (CGNAT, 100.64.0.0/10)"),
            ("169.254.169.254", "link-local"),
            ("169.254.170.2", "link-local"),
            ("0.0.0.0", "unspecified (0.0.0.0/8)"),
            ("255.255.255.255", "reserved (240.0.0.0/4, broadcast)"),
            ("224.0.0.1", "multicast"),
            ("192.0.2.7", "documentation"),
            ("198.19.0.1", "benchmarking (198.18.0.0/15)"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private (RFC 1918)"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:1::", "loopback"),
            ("fc00::1", "unique local (fc00::/7)"),
            ("fd12:3456::1", "unique local (fc00::/7)"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local (deprecated)"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("2001::1", "Teredo (2001::/32)"),
        ] {
            assert_eq!(not_public(ip(address)), Some(class), "{address}");
        }
        for public in [
            "1.1.1.1",
            "52.94.236.248",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.0.1",
            "198.20.0.1",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            "2002:101:101::",
        ] {
            assert_eq!(not_public(ip(public)), None, "{public}");
        }
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
