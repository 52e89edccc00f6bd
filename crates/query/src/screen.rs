//! What of a master's list the browser asks. A master is a stranger: it could list the
//! player's own machine, the player's private network, or thousands of ports of one
//! host, so that every player who opens the browser sends queries there for it. So an
//! entry is asked only if it reaches at least as far as the master does (a master on
//! the Internet lists Internet addresses; one on the LAN or on this machine, as a host's
//! own may be, may list those too), only a few ports of one host and a few dozen hosts
//! of one network are asked, and a refresh asks a bounded number in all. LAN discovery
//! does not come here: it finds private addresses by broadcast, as it should.

use sightline_limits::{HostKey, NetworkKey};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Most entries of one host asked: its IPv4 address, or its IPv6 /64 (one host or site
/// holds a whole /64). A host runs a few servers; a list of its every port is a flood.
pub const MAX_PER_HOST: usize = 4;
/// Most entries of one network asked: an IPv4 /24, or an IPv6 /48.
pub const MAX_PER_NETWORK: usize = 32;
/// Most entries asked from one master's list.
pub const MAX_PER_LIST: usize = 2048;
/// Most entries one refresh asks, all lists together.
pub const MAX_ASKED: usize = 4096;

/// How far an address reaches: a server there can be asked from as far as this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// Nowhere a server could be: unspecified, multicast, broadcast, documentation,
    /// benchmarking and reserved addresses.
    Nowhere,
    /// This machine.
    Loopback,
    /// A private network: RFC 1918, shared (CGNAT, 100.64/10) and link-local IPv4;
    /// unique-local (fc00::/7), site-local and link-local IPv6.
    Local,
    /// The Internet.
    Global,
}

impl Reach {
    /// How far `ip` reaches; an IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4 (2002::/16)
    /// address reaches as far as the IPv4 address it carries.
    pub fn of(ip: IpAddr) -> Reach {
        match ip.to_canonical() {
            IpAddr::V4(v4) => reach_v4(v4),
            IpAddr::V6(v6) => reach_v6(v6),
        }
    }
}

fn reach_v4(ip: Ipv4Addr) -> Reach {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (127, ..) => Reach::Loopback,
        (10, ..) | (192, 168, _) | (169, 254, _) => Reach::Local,
        (172, 16..=31, _) | (100, 64..=127, _) => Reach::Local,
        // 0/8 "this network", multicast and the reserved 240/4 (broadcast with it).
        (0, ..) | (224..=255, ..) => Reach::Nowhere,
        // IETF assignments, documentation and benchmarking.
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) | (198, 18..=19, _) => {
            Reach::Nowhere
        }
        _ => Reach::Global,
    }
}

fn reach_v6(ip: Ipv6Addr) -> Reach {
    let s = ip.segments();
    if ip.is_loopback() {
        return Reach::Loopback;
    }
    match s[0] {
        // NAT64's well-known prefix and 6to4: the IPv4 address inside decides.
        0x0064 if s[1..6] == [0xff9b, 0, 0, 0, 0] => reach_v4(embedded_v4(s[6], s[7])),
        0x2002 => reach_v4(embedded_v4(s[1], s[2])),
        // Documentation: 2001:db8::/32 and 3fff::/20.
        0x2001 if s[1] == 0x0db8 => Reach::Nowhere,
        0x3fff if s[1] < 0x1000 => Reach::Nowhere,
        0x2000..=0x3fff => Reach::Global,
        // Unique-local fc00::/7; link-local fe80::/10 and the old site-local fec0::/10.
        0xfc00..=0xfdff | 0xfe80..=0xfeff => Reach::Local,
        // Multicast, unspecified, IPv4-compatible and every other reserved block.
        _ => Reach::Nowhere,
    }
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(high) << 16) | u32::from(low))
}

/// Entries of master lists not asked, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Addresses no server can be at (see [`Reach::Nowhere`]), or port 0.
    pub unreachable: usize,
    /// Addresses nearer than the master that listed them: loopback or a private network
    /// from a master farther away.
    pub nearer: usize,
    /// Entries past [`MAX_PER_HOST`] on one host or [`MAX_PER_NETWORK`] on one network.
    pub crowded: usize,
    /// Entries past [`MAX_PER_LIST`] of one list or [`MAX_ASKED`] in all.
    pub too_many: usize,
}

impl Skipped {
    /// Entries skipped, for every reason.
    pub fn total(&self) -> usize {
        self.unreachable + self.nearer + self.crowded + self.too_many
    }
}

impl fmt::Display for Skipped {
    /// "12 entries of the master lists skipped (3 private or loopback, 9 crowding one
    /// host or network)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total();
        let noun = if total == 1 { "entry" } else { "entries" };
        write!(f, "{total} {noun} of the master lists skipped (")?;
        let parts = [
            (self.nearer, "private or loopback"),
            (self.unreachable, "not a server's address"),
            (self.crowded, "crowding one host or network"),
            (self.too_many, "past the most asked"),
        ];
        let mut first = true;
        for (n, why) in parts.into_iter().filter(|&(n, _)| n > 0) {
            let comma = if first { "" } else { ", " };
            write!(f, "{comma}{n} {why}")?;
            first = false;
        }
        write!(f, ")")
    }
}

/// The entries of one refresh's master lists that are asked, list by list, and a count
/// of those that are not. Each address is asked once, whichever lists name it.
#[derive(Debug, Default)]
pub struct ListScreen {
    asked: HashSet<SocketAddr>,
    hosts: HashMap<HostKey, usize>,
    networks: HashMap<NetworkKey, usize>,
    skipped: Skipped,
}

impl ListScreen {
    /// A screen that has asked nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Of `list`, what `master` sent, the entries to ask (IPv4-mapped addresses as IPv4,
    /// in the list's order, leaving out any already asked); the rest are counted in
    /// [`Self::skipped`].
    pub fn admit(&mut self, master: SocketAddr, list: &[SocketAddr]) -> Vec<SocketAddr> {
        // A master at no real address is held to the Internet's rule, the strictest.
        let floor = match Reach::of(master.ip()) {
            Reach::Nowhere => Reach::Global,
            reach => reach,
        };
        let mut out = Vec::new();
        for entry in list {
            let addr = SocketAddr::new(entry.ip().to_canonical(), entry.port());
            if self.asked.contains(&addr) {
                continue;
            }
            let reach = Reach::of(addr.ip());
            if reach == Reach::Nowhere || addr.port() == 0 {
                self.skipped.unreachable += 1;
                continue;
            }
            if reach < floor {
                self.skipped.nearer += 1;
                continue;
            }
            let (host, network) = (HostKey::of(addr.ip()), NetworkKey::of(addr.ip()));
            let on_host = self.hosts.get(&host).copied().unwrap_or(0);
            let on_network = self.networks.get(&network).copied().unwrap_or(0);
            if on_host >= MAX_PER_HOST || on_network >= MAX_PER_NETWORK {
                self.skipped.crowded += 1;
                continue;
            }
            if out.len() >= MAX_PER_LIST || self.asked.len() >= MAX_ASKED {
                self.skipped.too_many += 1;
                continue;
            }
            self.asked.insert(addr);
            self.hosts.insert(host, on_host + 1);
            self.networks.insert(network, on_network + 1);
            out.push(addr);
        }
        out
    }

    /// What was not asked, so far.
    pub fn skipped(&self) -> Skipped {
        self.skipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    /// A master on the Internet.
    const PUBLIC_MASTER: &str = "8.8.4.4:27950";

    #[test]
    fn addresses_reach_as_far_as_their_block() {
        let cases = [
            ("127.0.0.1", Reach::Loopback),
            ("127.255.0.9", Reach::Loopback),
            ("::1", Reach::Loopback),
            ("::ffff:127.0.0.1", Reach::Loopback),
            ("10.1.2.3", Reach::Local),
            ("172.16.0.1", Reach::Local),
            ("172.31.255.255", Reach::Local),
            ("192.168.1.1", Reach::Local),
            ("100.64.0.1", Reach::Local),
            ("100.127.255.254", Reach::Local),
            ("169.254.10.10", Reach::Local),
            ("fc00::1", Reach::Local),
            ("fd12:3456::1", Reach::Local),
            ("fe80::1", Reach::Local),
            ("::ffff:192.168.0.1", Reach::Local),
            ("64:ff9b::10.0.0.1", Reach::Local),
            ("2002:c0a8:0101::1", Reach::Local), // 6to4 of 192.168.1.1
            ("0.0.0.0", Reach::Nowhere),
            ("0.1.2.3", Reach::Nowhere),
            ("::", Reach::Nowhere),
            ("224.0.0.1", Reach::Nowhere),
            ("239.255.255.250", Reach::Nowhere),
            ("255.255.255.255", Reach::Nowhere),
            ("240.0.0.1", Reach::Nowhere),
            ("ff02::1", Reach::Nowhere),
            ("192.0.2.1", Reach::Nowhere),
            ("198.51.100.7", Reach::Nowhere),
            ("203.0.113.9", Reach::Nowhere),
            ("198.18.0.1", Reach::Nowhere),
            ("2001:db8::1", Reach::Nowhere),
            ("3fff::1", Reach::Nowhere),
            ("::10.0.0.1", Reach::Nowhere), // IPv4-compatible, long deprecated
            ("8.8.8.8", Reach::Global),
            ("172.32.0.1", Reach::Global),
            ("100.128.0.1", Reach::Global),
            ("192.169.0.1", Reach::Global),
            ("2606:4700::1111", Reach::Global),
            ("64:ff9b::8.8.8.8", Reach::Global),
            ("2002:0808:0808::1", Reach::Global),
            ("::ffff:8.8.8.8", Reach::Global),
        ];
        for (ip, reach) in cases {
            assert_eq!(Reach::of(ip.parse().unwrap()), reach, "{ip}");
        }
    }

    #[test]
    fn a_public_master_gets_no_loopback_or_private_address_asked() {
        let mut screen = ListScreen::new();
        let list = [
            "127.0.0.1:27015",
            "[::1]:27015",
            "[::ffff:127.0.0.1]:27016",
            "10.0.0.5:27015",
            "172.20.1.1:27015",
            "192.168.1.10:27015",
            "100.100.0.1:27015",
            "169.254.1.1:27015",
            "[fd00::5]:27015",
            "[fe80::1]:27015",
            "0.0.0.0:27015",
            "224.0.0.251:5353",
            "255.255.255.255:27015",
            "[ff02::1]:27015",
            "8.8.8.8:0",
            "1.1.1.1:27015",
        ]
        .map(addr);
        assert_eq!(
            screen.admit(addr(PUBLIC_MASTER), &list),
            [addr("1.1.1.1:27015")]
        );
        let skipped = screen.skipped();
        assert_eq!((skipped.nearer, skipped.unreachable), (10, 5));
        assert_eq!(skipped.total(), 15);
        assert_eq!(
            skipped.to_string(),
            "15 entries of the master lists skipped (10 private or loopback, 5 not a \
             server's address)"
        );
    }

    #[test]
    fn a_master_on_this_machine_or_the_lan_may_list_what_it_reaches() {
        let list = [
            "127.0.0.1:27015",
            "192.168.1.10:27015",
            "1.1.1.1:27015",
            "0.0.0.0:27015",
        ]
        .map(addr);
        let mut screen = ListScreen::new();
        assert_eq!(
            screen.admit(addr("127.0.0.1:27950"), &list),
            list[..3].to_vec()
        );
        let mut screen = ListScreen::new();
        assert_eq!(
            screen.admit(addr("192.168.1.2:27950"), &list),
            list[1..3].to_vec()
        );
        assert_eq!(screen.skipped().nearer, 1);
        // A master at no real address is held to the Internet's rule.
        let mut screen = ListScreen::new();
        assert_eq!(screen.admit(addr("0.0.0.0:27950"), &list), [list[2]]);
    }

    #[test]
    fn a_few_ports_of_one_host_are_asked_and_no_more() {
        let mut screen = ListScreen::new();
        let ports: Vec<SocketAddr> = (0..5000)
            .map(|p| SocketAddr::new("1.2.3.4".parse().unwrap(), 20000 + p))
            .collect();
        let asked = screen.admit(addr(PUBLIC_MASTER), &ports);
        assert_eq!(asked, ports[..MAX_PER_HOST].to_vec());
        assert_eq!(screen.skipped().crowded, 5000 - MAX_PER_HOST);
        assert_eq!(
            screen.skipped().to_string(),
            "4996 entries of the master lists skipped (4996 crowding one host or network)"
        );
        // One IPv6 /64 is one host, whatever its low bits.
        let mut screen = ListScreen::new();
        let v6: Vec<SocketAddr> = (1..=10u16)
            .map(|i| addr(&format!("[2606:4700:1:2::{i:x}]:27015")))
            .collect();
        assert_eq!(screen.admit(addr(PUBLIC_MASTER), &v6).len(), MAX_PER_HOST);
        // Its neighbouring /64 is another.
        let next = [addr("[2606:4700:1:3::1]:27015")];
        assert_eq!(screen.admit(addr(PUBLIC_MASTER), &next), next);
        // IPv4-mapped spellings are the same host, and the same address is asked once.
        let mut screen = ListScreen::new();
        let twice = [addr("1.2.3.4:27015"), addr("[::ffff:1.2.3.4]:27015")];
        assert_eq!(screen.admit(addr(PUBLIC_MASTER), &twice), [twice[0]]);
        assert!(screen.admit(addr(PUBLIC_MASTER), &twice).is_empty());
        assert_eq!(screen.skipped().total(), 0, "duplicates are not skipped");
    }

    #[test]
    fn a_network_gets_a_few_dozen_hosts_asked() {
        let mut screen = ListScreen::new();
        let hosts: Vec<SocketAddr> = (0..=255u8)
            .map(|i| SocketAddr::from(([5, 6, 7, i], 27015)))
            .collect();
        assert_eq!(
            screen.admit(addr(PUBLIC_MASTER), &hosts),
            hosts[..MAX_PER_NETWORK].to_vec()
        );
        assert_eq!(screen.skipped().crowded, 256 - MAX_PER_NETWORK);
        let next_network = [addr("5.6.8.1:27015")];
        assert_eq!(
            screen.admit(addr(PUBLIC_MASTER), &next_network),
            next_network
        );
    }

    #[test]
    fn a_list_and_a_refresh_ask_a_bounded_number() {
        // Each entry on a network of its own: only the totals bind.
        let spread = |from: u32, n: u32| -> Vec<SocketAddr> {
            (from..from + n)
                .map(|i| SocketAddr::from((Ipv4Addr::from((11 << 24) | (i << 8) | 1), 27015)))
                .collect()
        };
        let mut screen = ListScreen::new();
        let first = screen.admit(addr(PUBLIC_MASTER), &spread(0, 3000));
        assert_eq!(first.len(), MAX_PER_LIST);
        assert_eq!(screen.skipped().too_many, 3000 - MAX_PER_LIST);
        // A second list still gets its share, a third what is left of the total.
        let second = screen.admit(addr("8.8.8.8:27950"), &spread(10_000, 2000));
        assert_eq!(second.len(), 2000);
        let third = screen.admit(addr("9.9.9.9:27950"), &spread(20_000, 2000));
        assert_eq!(third.len(), MAX_ASKED - MAX_PER_LIST - 2000);
        assert_eq!(
            screen.skipped().too_many,
            3000 - MAX_PER_LIST + 2000 - third.len()
        );
    }
}
