//! What the per-address limits count by, and the bounded tables they keep.
//!
//! An IPv4 address is one host, but an IPv6 subscriber is handed a whole /64 (often a
//! /56 or /48) and may send from any address in it: limits keyed on exact IPv6
//! addresses give such a client unlimited slots, tokens and guesses. So every
//! per-address limit counts by [`HostKey`] (an IPv4 address, or an IPv6 /64), and the
//! token service's fair shares also by [`NetworkKey`] (an IPv4 /24, or an IPv6 /48).
//! Tables keyed by them are [`LruMap`]s: full, they forget the entry used least
//! recently, never everything at once.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::net::IpAddr;
use std::time::Instant;

/// The IPv4 address behind an IPv4-mapped IPv6 one, so both forms count as one host.
pub(crate) fn canonical_ip(ip: IpAddr) -> IpAddr {
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

/// A network as the token service's fair shares count it: an IPv4 /24, or an IPv6 /48.
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

/// A map of at most `capacity` entries that forgets the least recently used one to make
/// room. Each access is O(log n).
#[derive(Debug, Clone)]
pub struct LruMap<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    order: BTreeMap<u64, K>,
    clock: u64,
}

impl<K: Hash + Eq + Copy, V> LruMap<K, V> {
    /// An empty map holding at most `capacity` (at least 1) entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: BTreeMap::new(),
            clock: 0,
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `key`'s value without marking it used.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(v, _)| v)
    }

    /// `key`'s value, marked as the most recently used, made by `make` if absent (which
    /// forgets the least recently used entry when the map is full).
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.clock += 1;
        let stamp = self.clock;
        if let Some((_, used)) = self.entries.get_mut(&key) {
            self.order.remove(used);
            *used = stamp;
        } else {
            if self.entries.len() >= self.capacity
                && let Some((_, oldest)) = self.order.pop_first()
            {
                self.entries.remove(&oldest);
            }
            self.entries.insert(key, (make(), stamp));
        }
        self.order.insert(stamp, key);
        &mut self.entries.get_mut(&key).expect("just inserted").0
    }

    /// Forgets `key`.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (value, used) = self.entries.remove(key)?;
        self.order.remove(&used);
        Some(value)
    }
}

/// A token bucket per host: `burst` at once, `per_second` regained. Hosts are kept in an
/// [`LruMap`], so a flood from many addresses forgets the quietest first: a forgotten
/// host starts again with a full bucket, at most a burst more.
pub(crate) struct RateLimiter {
    burst: f32,
    per_second: f32,
    buckets: LruMap<HostKey, (f32, Instant)>,
}

/// Hosts the rate limiters remember.
pub(crate) const MAX_TRACKED_HOSTS: usize = 4096;

impl RateLimiter {
    pub(crate) fn new(burst: f32, per_second: f32) -> Self {
        Self {
            burst,
            per_second,
            buckets: LruMap::new(MAX_TRACKED_HOSTS),
        }
    }

    /// Takes one from `ip`'s host's bucket; false when it is empty.
    pub(crate) fn allow(&mut self, ip: IpAddr, now: Instant) -> bool {
        let burst = self.burst;
        let (tokens, at) = self
            .buckets
            .get_or_insert_with(HostKey::of(ip), || (burst, now));
        *tokens = (*tokens + now.saturating_duration_since(*at).as_secs_f32() * self.per_second)
            .min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One token bucket for everyone: `burst` at once, `per_second` regained.
#[derive(Debug, Clone)]
pub struct GlobalBucket {
    burst: f32,
    per_second: f32,
    tokens: f32,
    at: Option<Instant>,
}

impl GlobalBucket {
    /// A full bucket of `burst`, regaining `per_second`.
    pub fn new(burst: f32, per_second: f32) -> Self {
        Self {
            burst,
            per_second,
            tokens: burst,
            at: None,
        }
    }

    /// Whether a token is left at `now` (without taking it).
    pub fn has(&mut self, now: Instant) -> bool {
        if let Some(at) = self.at {
            let regained = now.saturating_duration_since(at).as_secs_f32() * self.per_second;
            self.tokens = (self.tokens + regained).min(self.burst);
        }
        self.at = Some(now);
        self.tokens >= 1.0
    }

    /// Takes a token (after [`Self::has`] said there is one).
    pub fn take(&mut self) {
        self.tokens = (self.tokens - 1.0).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};
    use std::time::Duration;

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

    #[test]
    fn a_full_map_forgets_the_least_recently_used() {
        let mut m = LruMap::new(3);
        for k in 0..3 {
            *m.get_or_insert_with(k, || 0) += k;
        }
        *m.get_or_insert_with(0, || 99) += 10; // 0 is now the newest
        m.get_or_insert_with(3, || 3); // forgets 1
        assert_eq!(m.len(), 3);
        assert_eq!(m.peek(&1), None);
        assert_eq!(m.peek(&0), Some(&10));
        assert_eq!(m.peek(&2), Some(&2));
        m.get_or_insert_with(4, || 4); // forgets 2
        assert_eq!(m.peek(&2), None);
        assert_eq!(m.remove(&0), Some(10));
        assert_eq!(m.len(), 2);
        assert_eq!(m.order.len(), 2);
    }

    #[test]
    fn rate_limits_allow_a_burst_then_a_steady_trickle_per_host() {
        let mut limiter = RateLimiter::new(5.0, 0.5);
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let t0 = Instant::now();
        assert_eq!((0..10).filter(|_| limiter.allow(ip, t0)).count(), 5);
        assert!(!limiter.allow(ip, t0 + Duration::from_millis(1500)));
        assert!(limiter.allow(ip, t0 + Duration::from_millis(2100)));
        // Every address of one IPv6 /64 shares a bucket.
        let mut v6_limiter = RateLimiter::new(2.0, 0.0);
        let allowed = (0..10u16)
            .filter(|i| v6_limiter.allow(v6(&format!("2001:db8::{i:x}")), t0))
            .count();
        assert_eq!(allowed, 2);
        // A flood of new hosts forgets the quietest, and the table stays bounded, but a
        // busy host keeps its empty bucket.
        let busy = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let mut flood = RateLimiter::new(1.0, 0.0);
        assert!(flood.allow(busy, t0));
        for i in 0..(MAX_TRACKED_HOSTS as u32 * 2) {
            assert!(flood.allow(IpAddr::V4(Ipv4Addr::from(i)), t0));
            if i % 64 == 0 {
                assert!(!flood.allow(busy, t0), "still remembered at {i}");
            }
        }
        assert!(flood.buckets.len() <= MAX_TRACKED_HOSTS);
    }

    #[test]
    fn a_global_bucket_refills_over_time() {
        let mut b = GlobalBucket::new(2.0, 1.0);
        let t0 = Instant::now();
        assert!(b.has(t0));
        b.take();
        b.take();
        assert!(!b.has(t0));
        assert!(!b.has(t0 + Duration::from_millis(500)));
        assert!(b.has(t0 + Duration::from_millis(1100)));
    }
}
