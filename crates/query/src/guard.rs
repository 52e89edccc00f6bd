//! Stateless challenges that prove a sender owns its address (the budgets that bound
//! how many answers a second go out, per asker, are [`sightline_limits::Shares`]).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Challenges as a keyed hash (SipHash, with `RandomState`'s random keys) of the address
/// and the current epoch: nothing is stored per sender, and a value stays valid for the
/// rest of its epoch and the whole next one.
#[derive(Debug)]
pub(crate) struct Challenges {
    secret: RandomState,
    start: Instant,
    epoch: Duration,
}

impl Challenges {
    pub(crate) fn new(epoch: Duration) -> Self {
        Self {
            secret: RandomState::new(),
            start: Instant::now(),
            epoch: epoch.max(Duration::from_millis(1)),
        }
    }

    fn epoch_index(&self, now: Instant) -> u128 {
        now.saturating_duration_since(self.start).as_nanos() / self.epoch.as_nanos()
    }

    fn value(&self, addr: SocketAddr, epoch: u128) -> u32 {
        let hash = self
            .secret
            .hash_one((addr.ip().to_canonical(), addr.port(), epoch));
        // 0 and -1 mean "no challenge" to clients; never issue them.
        match (hash ^ (hash >> 32)) as u32 {
            0 => 1,
            u32::MAX => u32::MAX - 1,
            v => v,
        }
    }

    /// The challenge `addr` must echo.
    pub(crate) fn issue(&self, addr: SocketAddr, now: Instant) -> u32 {
        self.value(addr, self.epoch_index(now))
    }

    /// Whether `value` is the challenge of `addr` in this epoch or the last.
    pub(crate) fn check(&self, addr: SocketAddr, value: u32, now: Instant) -> bool {
        let epoch = self.epoch_index(now);
        value == self.value(addr, epoch) || (epoch > 0 && value == self.value(addr, epoch - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_live_two_epochs_and_bind_the_address() {
        let c = Challenges::new(Duration::from_secs(30));
        let a: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        let b: SocketAddr = "192.0.2.1:5001".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:192.0.2.1]:5000".parse().unwrap();
        let t0 = c.start;
        let value = c.issue(a, t0);
        assert!(value != 0 && value != u32::MAX);
        assert!(c.check(a, value, t0));
        assert!(c.check(mapped, value, t0));
        assert!(!c.check(b, value, t0));
        assert!(c.check(a, value, t0 + Duration::from_secs(59)));
        assert!(!c.check(a, value, t0 + Duration::from_secs(60)));
        assert!(!c.check(a, value.wrapping_add(1), t0));
    }
}
