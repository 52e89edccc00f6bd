//! Choosing the interpolation delay from how snapshots actually arrive.

use bevy::prelude::*;
use sightline_sim::quantile;
use std::collections::VecDeque;

/// Smallest automatic delay, seconds.
pub const MIN_DELAY: f64 = 0.010;
/// Largest automatic delay, seconds.
pub const MAX_DELAY: f64 = 0.150;
/// Delay used until enough snapshots have arrived to measure, seconds: conservative.
pub const STARTING_DELAY: f64 = 0.100;
/// Snapshots needed before the delay is measured.
const MIN_SAMPLES: usize = 16;
/// Snapshots remembered: four seconds at 64 Hz, so the percentile sees a few bursts.
const WINDOW: usize = 256;
/// The share of snapshots the delay covers: the next one is in hand this often.
pub const COVERAGE: f64 = 0.99;
/// Safety added to interval + jitter, seconds.
const MARGIN: f64 = 0.002;

/// One snapshot's arrival.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    /// Server time stamped on the snapshot.
    stamp: f64,
    /// Client time of the frame that read it.
    read: f64,
    /// Length of that frame: the frame before it drew without the snapshot.
    frame: f64,
}

/// Snapshot arrivals, to choose the delay from.
#[derive(Resource, Debug, Default, Clone)]
pub struct DelayEstimator {
    arrivals: VecDeque<Arrival>,
}

impl DelayEstimator {
    /// Records a snapshot stamped `server_time` read in the frame at client time
    /// `arrival`, a frame `frame` seconds long (0 when it is seen the moment it arrives).
    pub fn record(&mut self, server_time: f64, arrival: f64, frame: f64) {
        self.arrivals.push_back(Arrival {
            stamp: server_time,
            read: arrival,
            frame: frame.max(0.0),
        });
        if self.arrivals.len() > WINDOW {
            self.arrivals.pop_front();
        }
    }

    /// Snapshots recorded (up to the window).
    pub fn len(&self) -> usize {
        self.arrivals.len()
    }

    /// Whether nothing has arrived.
    pub fn is_empty(&self) -> bool {
        self.arrivals.is_empty()
    }

    fn lateness(&self) -> impl Iterator<Item = f64> + '_ {
        self.arrivals.iter().map(|a| a.read - a.stamp)
    }

    /// Mean of (arrival - server time): the client-clock delay of the snapshot stream.
    pub fn mean_lateness(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.lateness().sum::<f64>() / self.len() as f64)
    }

    /// Standard deviation of arrival lateness: the snapshot stream's jitter, seconds.
    pub fn jitter(&self) -> Option<f64> {
        let mean = self.mean_lateness()?;
        let var = self.lateness().map(|l| (l - mean).powi(2)).sum::<f64>() / self.len() as f64;
        Some(var.sqrt())
    }

    /// Mean server-time interval between snapshots received (loss lengthens it).
    pub fn mean_interval(&self) -> Option<f64> {
        // Snapshots can arrive out of order, so the span is newest minus oldest stamp.
        let stamps = self.arrivals.iter().map(|a| a.stamp);
        let spread = stamps.clone().fold(f64::MIN, f64::max) - stamps.fold(f64::MAX, f64::min);
        (self.len() > 1).then(|| spread / (self.len() - 1) as f64)
    }

    /// The automatic delay: the [`COVERAGE`] percentile, over the window, of what each
    /// snapshot needed to be in hand when render time reached the one before it (the
    /// server-time gap since that one, which loss lengthens, plus how much later than
    /// usual it arrived), plus a margin; within [`MIN_DELAY`]..=[`MAX_DELAY`], and
    /// [`STARTING_DELAY`] until measured. A percentile, not mean plus a deviation:
    /// bursts of loss and late packets are not normally distributed.
    ///
    /// What a snapshot must cover is the last frame drawn without it, the one before
    /// the frame that read it: frames come one at a time, and no frame in between waits
    /// for it. So each need is counted from the frame before, a frame's length earlier
    /// than the read; counted from the read, a 30 fps client waited a whole frame (33 ms)
    /// more than it had to, 15 ms more than the 64 Hz spacing itself.
    pub fn delay(&self) -> f64 {
        if self.len() < MIN_SAMPLES {
            return STARTING_DELAY;
        }
        let Some(mean) = self.mean_lateness() else {
            return STARTING_DELAY;
        };
        let mut by_stamp: Vec<Arrival> = self.arrivals.iter().copied().collect();
        by_stamp.sort_by(|a, b| a.stamp.total_cmp(&b.stamp));
        let needed = quantile::sorted(
            by_stamp
                .windows(2)
                .map(|w| {
                    let (before, next) = (w[0], w[1]);
                    let later_than_usual = next.read - next.frame - next.stamp - mean;
                    (next.stamp - before.stamp) + later_than_usual
                })
                .filter(|n| n.is_finite()),
        );
        let covered = quantile::nearest_rank(&needed, COVERAGE).unwrap_or(MAX_DELAY);
        (covered + MARGIN).clamp(MIN_DELAY, MAX_DELAY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_64_hz_snapshots_need_little_delay() {
        let mut e = DelayEstimator::default();
        assert_eq!(e.delay(), STARTING_DELAY);
        for i in 0..100 {
            let s = i as f64 / 64.0;
            e.record(s, s + 0.075, 0.0);
        }
        let d = e.delay();
        assert!((d - (1.0 / 64.0 + MARGIN)).abs() < 1e-9, "{d}");
        assert!(d < 0.025);
        assert!((e.mean_lateness().unwrap() - 0.075).abs() < 1e-9);
    }

    #[test]
    fn jitter_and_loss_raise_the_delay_within_bounds() {
        let mut e = DelayEstimator::default();
        for i in 0..100u64 {
            if i % 10 == 3 {
                continue; // lost
            }
            let s = i as f64 / 64.0;
            let jitter = if i % 2 == 0 { 0.015 } else { -0.015 };
            e.record(s, s + 0.1 + jitter, 0.0);
        }
        let d = e.delay();
        assert!(d > 1.0 / 64.0 + 0.014, "{d}");
        assert!(d <= MAX_DELAY);
        let mut slow = DelayEstimator::default();
        for i in 0..40 {
            slow.record(i as f64, i as f64, 0.0);
        }
        assert_eq!(slow.delay(), MAX_DELAY);
    }

    #[test]
    fn bursts_of_loss_are_covered_where_mean_and_deviation_would_not_be() {
        let mut e = DelayEstimator::default();
        // Three snapshots lost in a row every 40: 2.5 % loss, in bursts.
        for i in 0..400u64 {
            if i % 40 < 3 {
                continue;
            }
            let s = i as f64 / 64.0;
            e.record(s, s + 0.05, 0.0);
        }
        let d = e.delay();
        assert!(d >= 4.0 / 64.0, "covers a gap of four intervals: {d}");
        let interval = e.mean_interval().unwrap();
        let mean_plus_sd = interval + e.jitter().unwrap() + MARGIN;
        assert!(mean_plus_sd < 2.0 / 64.0, "the old rule: {mean_plus_sd}");
    }

    /// Frames of about `fps` (each up to 20 % longer, by a fixed sequence) reading 64 Hz
    /// snapshots that arrive 50 ms after their stamp: the delay chosen after `warm`
    /// seconds, and the share of the frames after that whose render time lay past the
    /// newest snapshot in hand.
    fn frames_reading_snapshots(fps: f64, warm: f64) -> (f64, f64) {
        let mut e = DelayEstimator::default();
        let (mut now, mut next_snapshot, mut newest) = (0.0_f64, 0_u64, f64::MIN);
        let (mut chosen, mut frames, mut short) = (None, 0_u32, 0_u32);
        let mut draw = 12345_u64;
        while now < warm + 5.0 {
            draw = draw
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let frame = (1.0 + 0.2 * (draw >> 40) as f64 / (1u64 << 24) as f64) / fps;
            now += frame;
            while next_snapshot as f64 / 64.0 + 0.05 <= now {
                let stamp = next_snapshot as f64 / 64.0;
                e.record(stamp, now, frame);
                newest = newest.max(stamp);
                next_snapshot += 1;
            }
            if now < warm {
                continue;
            }
            let delay = *chosen.get_or_insert_with(|| e.delay());
            let render = now - e.mean_lateness().unwrap() - delay;
            frames += 1;
            short += u32::from(render > newest);
        }
        (chosen.unwrap(), f64::from(short) / f64::from(frames))
    }

    #[test]
    fn the_delay_covers_the_last_frame_without_a_snapshot_not_the_one_that_read_it() {
        for fps in [30.0, 60.0, 144.0, 240.0] {
            let (delay, short) = frames_reading_snapshots(fps, 4.0);
            // Render time never passed what was in hand…
            assert!(short < 1.0 - COVERAGE, "{fps} fps: {short} of frames short");
            // …and the delay is no more than the spacing: a slow client, whose frame
            // waits before reading each snapshot, needs less, not a frame more.
            assert!(delay <= 1.0 / 64.0 + MARGIN + 1e-9, "{fps} fps: {delay}");
        }
        let (at_30, _) = frames_reading_snapshots(30.0, 4.0);
        assert!(at_30 < 0.011, "{at_30}");
    }
}
