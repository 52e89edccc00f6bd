//! A token bucket.

use std::time::Instant;

/// A token bucket: holds at most `burst` tokens and regains `per_second`. The clock is
/// the caller's, so tests drive it.
#[derive(Debug, Clone)]
pub struct Bucket {
    burst: f64,
    per_second: f64,
    tokens: f64,
    at: Option<Instant>,
}

impl Bucket {
    /// A full bucket of `burst` (at least one token), regaining `per_second`.
    pub fn new(burst: f64, per_second: f64) -> Self {
        let burst = burst.max(1.0);
        Self {
            burst,
            per_second: per_second.max(0.0),
            tokens: burst,
            at: None,
        }
    }

    /// Whether a token is left at `now`, without taking it.
    pub fn has(&mut self, now: Instant) -> bool {
        if let Some(at) = self.at {
            let regained = now.saturating_duration_since(at).as_secs_f64() * self.per_second;
            self.tokens = (self.tokens + regained).min(self.burst);
        }
        // A clock read out of order must not move the bucket back.
        if self.at.is_none_or(|at| now > at) {
            self.at = Some(now);
        }
        self.tokens >= 1.0
    }

    /// Spends a token (after [`Self::has`] said there is one).
    pub fn spend(&mut self) {
        self.tokens = (self.tokens - 1.0).max(0.0);
    }

    /// Spends `n` tokens if there are that many at `now` (a bucket of bytes: a datagram
    /// takes its length). Never more than the burst holds.
    pub fn take_n(&mut self, n: f64, now: Instant) -> bool {
        self.has(now);
        if self.tokens < n {
            return false;
        }
        self.tokens -= n;
        true
    }

    /// Spends a token if there is one at `now`.
    pub fn take(&mut self, now: Instant) -> bool {
        let has = self.has(now);
        if has {
            self.spend();
        }
        has
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_refills_at_its_rate_up_to_its_burst() {
        let mut b = Bucket::new(2.0, 10.0);
        let t0 = Instant::now();
        assert!(b.take(t0) && b.take(t0));
        assert!(!b.take(t0));
        assert!(b.take(t0 + Duration::from_millis(100)));
        assert!(!b.take(t0 + Duration::from_millis(100)));
        assert!(!b.take(t0), "an earlier clock adds nothing");
        let later = t0 + Duration::from_secs(60);
        assert!(b.take(later) && b.take(later));
        assert!(!b.take(later), "capped at the burst");
        assert!(!b.has(later), "has takes nothing, and found none");
    }

    #[test]
    fn a_bucket_of_bytes_takes_a_datagram_s_length() {
        let mut b = Bucket::new(1000.0, 1000.0);
        let t0 = Instant::now();
        assert!(b.take_n(600.0, t0));
        assert!(!b.take_n(600.0, t0), "400 left");
        assert!(b.take_n(400.0, t0));
        assert!(b.take_n(500.0, t0 + Duration::from_millis(500)));
        assert!(
            !b.take_n(1001.0, t0 + Duration::from_secs(60)),
            "more than the burst"
        );
    }
}
