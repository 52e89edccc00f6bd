//! Clock synchronisation, NTP-style: from (client send, server time, client receive)
//! triples, estimate the round trip and the offset between the client's clock and the
//! server's; keep a server-clock estimate that moves smoothly and never runs backwards.

use bevy::prelude::*;
use sightline_sim::quantile;
use std::collections::VecDeque;

/// Samples kept for the estimate.
pub const CLOCK_WINDOW: usize = 32;
/// Fastest the estimate may be pulled toward a new offset: 5 % of elapsed time, so the
/// estimated server clock always runs forward at 0.95x to 1.05x speed.
pub const SLEW_RATE: f64 = 0.05;
/// An error larger than this (seconds) is corrected at once, forward only.
pub const STEP_THRESHOLD: f64 = 0.5;

/// One ping's round trip.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    rtt: f64,
    offset: f64,
}

/// Round-trip and offset estimation from ping samples.
#[derive(Resource, Debug, Default, Clone)]
pub struct ClockSync {
    samples: VecDeque<Sample>,
}

impl ClockSync {
    /// Records one ping: sent at `client_send`, stamped `server_time` by the server,
    /// answered at `client_recv` (seconds; client times on the client's clock).
    pub fn add_sample(&mut self, client_send: f64, server_time: f64, client_recv: f64) {
        let rtt = (client_recv - client_send).max(0.0);
        // The server stamped its time about half a round trip after we sent.
        let offset = server_time - (client_send + client_recv) * 0.5;
        self.samples.push_back(Sample { rtt, offset });
        if self.samples.len() > CLOCK_WINDOW {
            self.samples.pop_front();
        }
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether no sample has arrived yet.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Mean round-trip time, seconds.
    pub fn rtt_mean(&self) -> Option<f64> {
        (!self.is_empty())
            .then(|| self.samples.iter().map(|s| s.rtt).sum::<f64>() / self.len() as f64)
    }

    /// Standard deviation of the round-trip time (jitter), seconds.
    pub fn rtt_jitter(&self) -> Option<f64> {
        let mean = self.rtt_mean()?;
        let var = self
            .samples
            .iter()
            .map(|s| (s.rtt - mean).powi(2))
            .sum::<f64>()
            / self.len() as f64;
        Some(var.sqrt())
    }

    /// Offset to add to the client clock to read the server's, seconds.
    ///
    /// Only the quickest quarter of the samples count (at least three when there are
    /// three): a ping delayed on one leg skews its offset by half the delay, and the
    /// quickest round trips are the ones least skewed. Among those, the median is taken,
    /// so one odd sample cannot pull the estimate.
    pub fn offset(&self) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        let mut by_rtt: Vec<Sample> = self.samples.iter().copied().collect();
        by_rtt.sort_by(|a, b| a.rtt.total_cmp(&b.rtt));
        let keep = (by_rtt.len() / 4).max(3).min(by_rtt.len());
        let offsets = quantile::sorted(by_rtt[..keep].iter().map(|s| s.offset));
        quantile::quantile(&offsets, 0.5)
    }
}

/// The client's running estimate of the server's clock.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct ServerClock {
    offset: Option<f64>,
    last_client_time: f64,
}

impl ServerClock {
    /// Moves the estimate toward `target` offset as the client clock reaches `client_now`.
    /// The first call adopts it outright; later ones slew at most [`SLEW_RATE`] of the
    /// elapsed time, or step forward when more than [`STEP_THRESHOLD`] behind.
    pub fn update(&mut self, client_now: f64, target: f64) {
        let elapsed = (client_now - self.last_client_time).max(0.0);
        self.last_client_time = client_now;
        let Some(offset) = self.offset.as_mut() else {
            self.offset = Some(target);
            return;
        };
        let error = target - *offset;
        if error > STEP_THRESHOLD {
            *offset = target;
        } else {
            let limit = SLEW_RATE * elapsed;
            *offset += error.clamp(-limit, limit);
        }
    }

    /// The current offset, once known.
    pub fn offset(&self) -> Option<f64> {
        self.offset
    }

    /// Estimated server time at client time `client_now`, seconds.
    pub fn server_time(&self, client_now: f64) -> Option<f64> {
        self.offset.map(|o| client_now + o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in 0..1.
    fn noise(i: u64) -> f64 {
        let mut z = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn converges_to_the_true_offset_under_jitter() {
        let true_offset = 12.345;
        let mut sync = ClockSync::default();
        for i in 0..64u64 {
            let send = i as f64 * 0.5;
            // 50 ms each way plus up to 20 ms of jitter on each leg, independently.
            let up = 0.050 + 0.020 * noise(2 * i);
            let down = 0.050 + 0.020 * noise(2 * i + 1);
            sync.add_sample(send, send + up + true_offset, send + up + down);
        }
        let err = (sync.offset().unwrap() - true_offset).abs();
        assert!(err < 0.004, "offset error {err} s");
        let rtt = sync.rtt_mean().unwrap();
        assert!((rtt - 0.120).abs() < 0.005, "rtt {rtt}");
        let jitter = sync.rtt_jitter().unwrap();
        assert!(jitter > 0.003 && jitter < 0.015, "jitter {jitter}");
    }

    #[test]
    fn one_very_late_sample_does_not_move_the_offset() {
        let mut sync = ClockSync::default();
        for i in 0..10 {
            let t = i as f64;
            sync.add_sample(t, t + 0.05 + 3.0, t + 0.1);
        }
        sync.add_sample(20.0, 20.0 + 0.9 + 3.0, 21.0);
        assert!((sync.offset().unwrap() - 3.0).abs() < 1e-9);
    }

    #[test]
    fn the_server_clock_slews_and_never_runs_backwards() {
        let mut clock = ServerClock::default();
        clock.update(0.0, 10.0);
        assert_eq!(clock.server_time(0.0), Some(10.0));
        let mut last = 10.0;
        // The estimate learns the offset was 200 ms too high: it must slow, not jump back.
        for i in 1..=400 {
            let now = i as f64 * 0.01;
            clock.update(now, 9.8);
            let t = clock.server_time(now).unwrap();
            assert!(t > last, "went backwards at {now}");
            assert!(t - last >= 0.01 * (1.0 - SLEW_RATE) - 1e-12);
            last = t;
        }
        assert!(
            (clock.offset().unwrap() - 9.8).abs() < 1e-9,
            "did not converge"
        );
        // A large error in the forward direction is corrected at once.
        clock.update(4.01, 11.0);
        assert_eq!(clock.offset(), Some(11.0));
    }
}
