//! Token buckets shared fairly: by host, by network, and by everyone.

use crate::{Bucket, HostKey, LruMap, NetworkKey};
use std::net::IpAddr;
use std::time::Instant;

/// Hosts, and networks, a [`Shares`] remembers; a flood from more addresses forgets the
/// quietest, which then start again with a full bucket (a burst more at most).
pub const MAX_TRACKED: usize = 4096;

/// A token bucket's size: `burst` at once, `per_second` regained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens at once.
    pub burst: f64,
    /// Tokens regained a second.
    pub per_second: f64,
}

impl Rate {
    /// `burst` at once, `per_second` regained.
    pub const fn new(burst: f64, per_second: f64) -> Self {
        Self { burst, per_second }
    }

    fn bucket(self) -> Bucket {
        Bucket::new(self.burst, self.per_second)
    }
}

/// The rates of a [`Shares`] at its three levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareRates {
    /// Each host's.
    pub host: Rate,
    /// Each network's, shared by its hosts.
    pub network: Rate,
    /// Everyone's together.
    pub everyone: Rate,
}

impl ShareRates {
    /// The same rate at every level: in effect one shared budget per host (tests).
    pub const fn all(rate: Rate) -> Self {
        Self {
            host: rate,
            network: rate,
            everyone: rate,
        }
    }
}

/// Which share was spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The asker's own host's.
    Host,
    /// Its network's, spent by its neighbours and itself.
    Network,
    /// Everyone's together.
    Everyone,
}

/// A budget shared by host, by network and by everyone. A request is allowed when all
/// three have a token, and then spends one of each; a host whose own share is spent
/// spends nothing of its network's or everyone's, so one host can take at most its own
/// rate from its neighbours, and one network at most its network's rate from the rest.
#[derive(Debug, Clone)]
pub struct Shares {
    host: Rate,
    network: Option<Rate>,
    hosts: LruMap<HostKey, Bucket>,
    networks: LruMap<NetworkKey, Bucket>,
    everyone: Option<Bucket>,
}

impl Shares {
    /// Shares at all three levels.
    pub fn new(rates: ShareRates) -> Self {
        Self {
            host: rates.host,
            network: Some(rates.network),
            hosts: LruMap::new(MAX_TRACKED),
            networks: LruMap::new(MAX_TRACKED),
            everyone: Some(rates.everyone.bucket()),
        }
    }

    /// A share per host only (where something else bounds the total).
    pub fn per_host(host: Rate) -> Self {
        Self {
            host,
            network: None,
            hosts: LruMap::new(MAX_TRACKED),
            networks: LruMap::new(1),
            everyone: None,
        }
    }

    /// Spends one token of `ip`'s shares if each has one; otherwise says which did not,
    /// having spent nothing.
    pub fn allow(&mut self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        let rate = self.host;
        let host = self
            .hosts
            .get_or_insert_with(HostKey::of(ip), || rate.bucket());
        if !host.has(now) {
            return Err(Refusal::Host);
        }
        let network = match self.network {
            Some(rate) => {
                let bucket = self
                    .networks
                    .get_or_insert_with(NetworkKey::of(ip), || rate.bucket());
                if !bucket.has(now) {
                    return Err(Refusal::Network);
                }
                Some(bucket)
            }
            None => None,
        };
        if let Some(everyone) = &mut self.everyone
            && !everyone.has(now)
        {
            return Err(Refusal::Everyone);
        }
        if let Some(network) = network {
            network.spend();
        }
        if let Some(everyone) = &mut self.everyone {
            everyone.spend();
        }
        host.spend();
        Ok(())
    }

    /// Hosts remembered now.
    pub fn hosts_tracked(&self) -> usize {
        self.hosts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};
    use std::time::Duration;

    fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }

    fn allowed(shares: &mut Shares, ip: IpAddr, n: usize, now: Instant) -> usize {
        (0..n).filter(|_| shares.allow(ip, now).is_ok()).count()
    }

    #[test]
    fn one_flooding_host_spends_only_its_own_share() {
        let mut shares = Shares::new(ShareRates {
            host: Rate::new(5.0, 5.0),
            network: Rate::new(20.0, 20.0),
            everyone: Rate::new(50.0, 50.0),
        });
        let t0 = Instant::now();
        let flooder = v4(198, 51, 100, 1);
        let neighbour = v4(198, 51, 100, 2);
        let stranger = v4(203, 0, 113, 9);
        // A second of flooding at 5,000 a second, a millisecond at a time.
        let mut flooded = 0;
        for ms in 0..1000 {
            let now = t0 + Duration::from_millis(ms);
            flooded += allowed(&mut shares, flooder, 5, now);
            // The others ask within their own hosts' rates.
            if ms % 250 == 0 {
                assert!(shares.allow(neighbour, now).is_ok(), "neighbour at {ms} ms");
                assert!(shares.allow(stranger, now).is_ok(), "stranger at {ms} ms");
            }
        }
        // Its burst and a second of its rate.
        assert!((9..=11).contains(&flooded), "{flooded}");
        assert_eq!(shares.allow(flooder, t0), Err(Refusal::Host));
    }

    #[test]
    fn a_network_and_everyone_have_caps_behind_the_hosts() {
        let mut shares = Shares::new(ShareRates {
            host: Rate::new(2.0, 0.0),
            network: Rate::new(5.0, 0.0),
            everyone: Rate::new(8.0, 0.0),
        });
        let now = Instant::now();
        let from_one_network: usize = (1..=10)
            .map(|d| allowed(&mut shares, v4(192, 0, 2, d), 2, now))
            .sum();
        assert_eq!(from_one_network, 5, "the /24's share");
        assert_eq!(shares.allow(v4(192, 0, 2, 99), now), Err(Refusal::Network));
        let elsewhere: usize = (1..=10)
            .map(|c| allowed(&mut shares, v4(10, 0, c, 1), 1, now))
            .sum();
        assert_eq!(elsewhere, 3, "everyone's share is 8");
        assert_eq!(shares.allow(v4(10, 9, 9, 9), now), Err(Refusal::Everyone));
        // An IPv6 /64 is one host.
        let mut v6 = Shares::per_host(Rate::new(2.0, 0.0));
        let n = (0..10u16)
            .filter(|i| {
                let ip: Ipv6Addr = format!("2001:db8::{i:x}").parse().unwrap();
                v6.allow(IpAddr::V6(ip), now).is_ok()
            })
            .count();
        assert_eq!(n, 2);
    }

    #[test]
    fn a_flood_of_new_hosts_forgets_the_quietest_but_stays_bounded() {
        let mut shares = Shares::per_host(Rate::new(1.0, 0.0));
        let t0 = Instant::now();
        let busy = v4(192, 0, 2, 1);
        assert!(shares.allow(busy, t0).is_ok());
        for i in 0..(MAX_TRACKED as u32 * 2) {
            assert!(shares.allow(IpAddr::V4(Ipv4Addr::from(i)), t0).is_ok());
            if i % 64 == 0 {
                assert!(shares.allow(busy, t0).is_err(), "still remembered at {i}");
            }
        }
        assert!(shares.hosts_tracked() <= MAX_TRACKED);
    }
}
