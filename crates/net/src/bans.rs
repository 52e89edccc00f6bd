//! Addresses the server refuses. The server's ban list (kept on disk, with expiry) lives
//! in the server crate; what the transport needs of it is this table, checked where an
//! address first asks for anything: the token request, and netcode's connection (which a
//! matchmaker's token or an insecure server reaches without a token request).

use bevy::prelude::*;
use sightline_limits::canonical_ip;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An address with the length of the prefix that counts: `203.0.113.0/24`, `2001:db8::/48`,
/// or one address (`/32`, `/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpPrefix {
    addr: IpAddr,
    len: u8,
}

impl IpPrefix {
    /// `addr`'s first `len` bits; `None` when `len` is longer than the address.
    pub fn new(addr: IpAddr, len: u8) -> Option<Self> {
        let addr = canonical_ip(addr);
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (len <= max).then(|| Self {
            addr: mask(addr, len),
            len,
        })
    }

    /// Exactly `addr`.
    pub fn host(addr: IpAddr) -> Self {
        let addr = canonical_ip(addr);
        let len = if addr.is_ipv4() { 32 } else { 128 };
        Self { addr, len }
    }

    /// Whether `ip` lies inside.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical_ip(ip);
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.len) == self.addr
    }
}

/// `ip` with all but its first `len` bits cleared.
fn mask(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4) & u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let whole = if self.addr.is_ipv4() { 32 } else { 128 };
        if self.len == whole {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.len)
        }
    }
}

impl FromStr for IpPrefix {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, len) = match s.split_once('/') {
            Some((addr, len)) => (addr, Some(len)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("\"{s}\" is not an IP address or ADDRESS/PREFIX"))?;
        match len {
            None => Ok(Self::host(addr)),
            Some(len) => len
                .parse::<u8>()
                .ok()
                .and_then(|len| Self::new(addr, len))
                .ok_or_else(|| format!("\"{s}\": the prefix length does not fit the address")),
        }
    }
}

/// The prefixes the server refuses and why, as the transport checks them. The server
/// replaces the whole table when its ban list changes.
#[derive(Resource, Debug, Default, Clone, PartialEq, Eq)]
pub struct AddressBans(pub Vec<(IpPrefix, String)>);

impl AddressBans {
    /// Why `ip` is refused, if it is.
    pub fn refusal(&self, ip: IpAddr) -> Option<&str> {
        self.0
            .iter()
            .find(|(prefix, _)| prefix.contains(ip))
            .map(|(_, reason)| reason.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_print_and_contain() {
        let net: IpPrefix = "203.0.113.77/24".parse().unwrap();
        assert_eq!(net.to_string(), "203.0.113.0/24");
        assert!(net.contains("203.0.113.1".parse().unwrap()));
        assert!(
            net.contains("::ffff:203.0.113.9".parse().unwrap()),
            "mapped IPv4"
        );
        assert!(!net.contains("203.0.114.1".parse().unwrap()));
        assert!(!net.contains("::1".parse().unwrap()));
        let one: IpPrefix = "198.51.100.4".parse().unwrap();
        assert_eq!(one.to_string(), "198.51.100.4");
        assert!(!one.contains("198.51.100.5".parse().unwrap()));
        let v6: IpPrefix = "2001:db8:1:2::5/48".parse().unwrap();
        assert_eq!(v6.to_string(), "2001:db8:1::/48");
        assert!(v6.contains("2001:db8:1:ffff::1".parse().unwrap()));
        let all: IpPrefix = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        for bad in [
            "",
            "x",
            "1.2.3.4/33",
            "::/129",
            "1.2.3.4/-1",
            "1.2.3.4/",
            "1.2.3/8",
        ] {
            assert!(bad.parse::<IpPrefix>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bans_say_why() {
        let bans = AddressBans(vec![("10.0.0.0/8".parse().unwrap(), "griefing".into())]);
        assert_eq!(bans.refusal("10.9.8.7".parse().unwrap()), Some("griefing"));
        assert_eq!(bans.refusal("11.0.0.1".parse().unwrap()), None);
    }
}
