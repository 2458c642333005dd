//! Which addresses are on the public internet: where a server-side fetch (an OAuth issuer's
//! keys, a webhook's delivery) may connect, judged by the address itself, whatever name led
//! to it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
}
