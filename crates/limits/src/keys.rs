//! What per-asker limits count by.
//!
//! An IPv4 address is one host, but an IPv6 subscriber is handed a whole /64 (often a
//! /56 or /48) and may send from any address in it: limits keyed on exact IPv6
//! addresses give such a client unlimited slots, tokens and guesses. So every
//! per-address limit counts by [`HostKey`], and fair shares between networks by
//! [`NetworkKey`].

use std::net::IpAddr;

/// The IPv4 address behind an IPv4-mapped IPv6 one, so both forms count as one host.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// One host as limits count it: an IPv4 address, or the /64 an IPv6 address lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostKey(u128);

impl HostKey {
    /// The host `ip` belongs to.
    pub fn of(ip: IpAddr) -> Self {
        Self(prefix(ip, 32, 64))
    }
}

/// A network as fair shares count it: an IPv4 /24, or an IPv6 /48 (what one ISP
/// customer, or one CGNAT pool's neighbours, share).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NetworkKey(u128);

impl NetworkKey {
    /// The network `ip` belongs to.
    pub fn of(ip: IpAddr) -> Self {
        Self(prefix(ip, 24, 48))
    }
}

/// `ip`'s first `v4_bits` (IPv4) or `v6_bits` (IPv6) as a number, the family marked in
/// the top bits so the two never meet.
fn prefix(ip: IpAddr, v4_bits: u32, v6_bits: u32) -> u128 {
    match canonical_ip(ip) {
        IpAddr::V4(v4) => {
            let kept = u32::from(v4) & (u32::MAX << (32 - v4_bits));
            (1 << 127) | u128::from(kept)
        }
        IpAddr::V6(v6) => {
            let kept = u128::from(v6) & (u128::MAX << (128 - v6_bits));
            (kept >> 1) & !(1 << 127)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v6(s: &str) -> IpAddr {
        IpAddr::V6(s.parse::<Ipv6Addr>().unwrap())
    }

    #[test]
    fn an_ipv6_slash_64_is_one_host_and_ipv4_hosts_are_their_own() {
        assert_eq!(
            HostKey::of(v6("2001:db8:1:2::1")),
            HostKey::of(v6("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        );
        assert_ne!(
            HostKey::of(v6("2001:db8:1:2::1")),
            HostKey::of(v6("2001:db8:1:3::1"))
        );
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let b = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        assert_ne!(HostKey::of(a), HostKey::of(b));
        assert_eq!(
            HostKey::of(a),
            HostKey::of(IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped())),
            "IPv4-mapped is the same host"
        );
        assert_eq!(NetworkKey::of(a), NetworkKey::of(b), "one /24");
        assert_ne!(
            NetworkKey::of(a),
            NetworkKey::of(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)))
        );
        assert_eq!(
            NetworkKey::of(v6("2001:db8:1:2::1")),
            NetworkKey::of(v6("2001:db8:1:ffff::1")),
            "one /48"
        );
        // Families never share a key, even where the bits would agree.
        assert_ne!(
            HostKey::of(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            HostKey::of(v6("::"))
        );
    }
}
