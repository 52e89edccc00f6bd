//! Fair admission to a pool of connections that have not yet proved themselves (token
//! requests being read, RCON connections not yet authenticated).
//!
//! Caps per host and per network keep a few hosts from filling the pool, but caps alone
//! let those hosts fill it again the moment a place frees, and let sixteen hosts of one
//! /24 keep a seventeenth, an honest neighbour behind the same ISP or CGNAT, out for as
//! long as they like. So a newcomer may also take the place of a stalled claim held by a
//! host (within a network at its share) or a network (within a full pool) holding more
//! than the newcomer's would: max-min fairness, the oldest stalled claim giving way.
//! Only stalled claims give way: one that has made its progress (a whole request read,
//! a password given) is never dropped for a newcomer, and neither is one made in the same
//! poll, so an honest client whose request is already on its way is read before anyone
//! can push it out.

use crate::{HostKey, NetworkKey};
use std::collections::HashMap;
use std::hash::Hash;
use std::time::Instant;

/// One place held in a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// Who holds it.
    pub host: HostKey,
    /// Its network.
    pub network: NetworkKey,
    /// Since when.
    pub since: Instant,
    /// Whether it has made the progress that protects it from newcomers.
    pub settled: bool,
}

/// A pool's caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Places in all.
    pub capacity: usize,
    /// Places one host may hold.
    pub per_host: usize,
    /// Places one network may hold.
    pub per_network: usize,
}

/// What a newcomer gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// A place.
    Yes,
    /// The place of the claim at this index, which the caller drops.
    Instead(usize),
    /// Nothing.
    No,
}

/// Whether a newcomer from `host` in `network` gets a place among `pool` at `now`.
/// Within its host's share it does: if its network is at its share, in the place of the
/// oldest stalled claim of a host of that network holding more places than the
/// newcomer's; else if the pool has room, in a new place; else in the place of the
/// oldest stalled claim of a network holding more places than the newcomer's.
pub fn admit(
    pool: &[Claim],
    host: HostKey,
    network: NetworkKey,
    limits: PoolLimits,
    now: Instant,
) -> Admit {
    let of_host = pool.iter().filter(|c| c.host == host).count();
    if of_host >= limits.per_host {
        return Admit::No;
    }
    let of_network = pool.iter().filter(|c| c.network == network).count();
    if of_network >= limits.per_network {
        return give_way(pool, now, of_host, |c| {
            (c.network == network).then_some(c.host)
        });
    }
    if pool.len() < limits.capacity {
        return Admit::Yes;
    }
    give_way(pool, now, of_network, |c| Some(c.network))
}

/// The oldest stalled claim (not settled, made before `now`) of the group holding the
/// most claims, among the groups `group_of` puts claims in, if that group holds more
/// than `mine`.
fn give_way<K: Hash + Eq + Copy>(
    pool: &[Claim],
    now: Instant,
    mine: usize,
    group_of: impl Fn(&Claim) -> Option<K>,
) -> Admit {
    let mut held: HashMap<K, usize> = HashMap::new();
    for c in pool {
        if let Some(k) = group_of(c) {
            *held.entry(k).or_default() += 1;
        }
    }
    pool.iter()
        .enumerate()
        .filter(|(_, c)| !c.settled && c.since < now)
        .filter_map(|(i, c)| {
            let k = group_of(c)?;
            let n = held[&k];
            (n > mine).then_some((i, n, c.since))
        })
        // The busiest group first, then the oldest claim in it.
        .min_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)))
        .map_or(Admit::No, |(i, _, _)| Admit::Instead(i))
}

/// Which entry of a full queue to drop for a newcomer: the oldest of the host holding
/// the most (entries in arrival order, given by their hosts), so that one host's flood
/// of arrivals pushes out its own and not a stranger's.
pub fn oldest_of_busiest(hosts: &[HostKey]) -> Option<usize> {
    let mut held: HashMap<HostKey, usize> = HashMap::new();
    for h in hosts {
        *held.entry(*h).or_default() += 1;
    }
    let most = held.values().copied().max()?;
    hosts.iter().position(|h| held[h] == most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::Duration;

    const LIMITS: PoolLimits = PoolLimits {
        capacity: 8,
        per_host: 2,
        per_network: 4,
    };

    fn ip(c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(198, 51, c, d))
    }

    fn claim(ip: IpAddr, since: Instant) -> Claim {
        Claim {
            host: HostKey::of(ip),
            network: NetworkKey::of(ip),
            since,
            settled: false,
        }
    }

    fn ask(pool: &[Claim], ip: IpAddr, now: Instant) -> Admit {
        admit(pool, HostKey::of(ip), NetworkKey::of(ip), LIMITS, now)
    }

    /// Plays `arrivals` (address, at) into a pool as a server would, keeping what admit
    /// says; returns the pool.
    fn play(arrivals: impl IntoIterator<Item = (IpAddr, Instant)>) -> Vec<Claim> {
        let mut pool = Vec::new();
        for (ip, at) in arrivals {
            match ask(&pool, ip, at) {
                Admit::Yes => pool.push(claim(ip, at)),
                Admit::Instead(i) => {
                    pool.swap_remove(i);
                    pool.push(claim(ip, at));
                }
                Admit::No => {}
            }
        }
        pool
    }

    #[test]
    fn a_host_gets_its_share_and_no_more() {
        let t0 = Instant::now();
        let pool = play((0..10).map(|i| (ip(0, 1), t0 + Duration::from_millis(i))));
        assert_eq!(pool.len(), 2);
    }

    #[test]
    fn stalled_neighbours_do_not_keep_a_host_of_their_network_out() {
        // Four hosts of one /24 hold its whole share, stalled, and reopen at once
        // whenever dropped: the old rule refused every fifth host of that /24.
        let t0 = Instant::now();
        let mut pool = play((1..=4).map(|d| (ip(0, d), t0)));
        assert_eq!(pool.len(), 4);
        let later = t0 + Duration::from_millis(10);
        let Admit::Instead(i) = ask(&pool, ip(0, 77), later) else {
            panic!("the honest neighbour is refused");
        };
        pool.swap_remove(i);
        pool.push(Claim {
            settled: true, // its request was read at once
            ..claim(ip(0, 77), later)
        });
        // The flood goes on; the settled newcomer keeps its place throughout.
        let flood = (0..1000).map(|n| (ip(0, 1 + (n % 4) as u8), later + Duration::from_millis(n)));
        for (from, at) in flood {
            if let Admit::Instead(i) = ask(&pool, from, at) {
                assert!(!pool[i].settled, "a settled claim was dropped");
                pool.swap_remove(i);
                pool.push(claim(from, at));
            }
        }
        assert!(pool.iter().any(|c| c.host == HostKey::of(ip(0, 77))));
    }

    #[test]
    fn a_claim_made_this_poll_does_not_give_way() {
        let t0 = Instant::now();
        let pool = play((1..=4).map(|d| (ip(0, d), t0)));
        // Everything in the pool was made now: nothing can be pushed out yet.
        assert_eq!(ask(&pool, ip(0, 9), t0), Admit::No);
    }

    #[test]
    fn a_full_pool_makes_room_for_a_newcomer_from_elsewhere() {
        let t0 = Instant::now();
        // Eight networks hold one stalled place each (the old rule's blind spot: no
        // network held more than the newcomer's would).
        let pool = play((1..=8).map(|c| (ip(c, 1), t0)));
        assert_eq!(pool.len(), 8);
        let later = t0 + Duration::from_secs(1);
        assert!(matches!(ask(&pool, ip(100, 1), later), Admit::Instead(_)));
        // A busier network gives way before an older claim of a quieter one.
        let mut pool = play((1..=6).map(|c| (ip(c, 1), t0)));
        pool.extend(play([(ip(9, 1), later), (ip(9, 2), later)]));
        let after = later + Duration::from_secs(1);
        let Admit::Instead(i) = ask(&pool, ip(100, 1), after) else {
            panic!("refused");
        };
        assert_eq!(pool[i].network, NetworkKey::of(ip(9, 1)));
        // Nothing gives way to a network already as busy as any.
        assert_eq!(ask(&pool, ip(9, 3), after), Admit::No);
        // Settled claims never give way.
        let settled: Vec<Claim> = pool
            .iter()
            .map(|c| Claim {
                settled: true,
                ..*c
            })
            .collect();
        assert_eq!(ask(&settled, ip(100, 1), after), Admit::No);
    }

    #[test]
    fn a_full_queue_drops_the_busiest_hosts_oldest() {
        let [a, b, c] = [1, 2, 3].map(|d| HostKey::of(ip(0, d)));
        assert_eq!(oldest_of_busiest(&[a, b, b, c, b, a]), Some(1));
        assert_eq!(oldest_of_busiest(&[c, a]), Some(0), "ties: the oldest");
        assert_eq!(oldest_of_busiest(&[]), None);
    }
}
