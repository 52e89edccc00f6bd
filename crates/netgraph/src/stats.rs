//! Rolling statistics the graph shows.

use std::collections::VecDeque;

/// Counts per second from a growing counter, over the last second.
#[derive(Debug, Default, Clone)]
pub struct RateMeter {
    samples: VecDeque<(f64, u64)>,
}

impl RateMeter {
    /// Records the counter's value at time `now` (seconds).
    pub fn record(&mut self, now: f64, count: u64) {
        self.samples.push_back((now, count));
        while self.samples.len() > 2 && now - self.samples[1].0 >= 1.0 {
            self.samples.pop_front();
        }
    }

    /// Increase per second over the span recorded (about a second).
    pub fn per_second(&self) -> f64 {
        let (Some(&(t0, c0)), Some(&(t1, c1))) = (self.samples.front(), self.samples.back()) else {
            return 0.0;
        };
        if t1 - t0 <= 0.0 {
            0.0
        } else {
            c1.saturating_sub(c0) as f64 / (t1 - t0)
        }
    }
}

/// The last `N` values of something, for a rolling graph.
#[derive(Debug, Clone)]
pub struct History<T> {
    values: VecDeque<T>,
    len: usize,
}

impl<T: Copy> History<T> {
    /// Keeps `len` values.
    pub fn new(len: usize) -> Self {
        Self {
            values: VecDeque::with_capacity(len),
            len,
        }
    }

    /// Adds a value, dropping the oldest when full.
    pub fn push(&mut self, v: T) {
        if self.values.len() == self.len {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }

    /// The values, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.values.iter().copied()
    }

    /// How many values are held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// What one snapshot's bar in the lagometer shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnapshotBar {
    /// Round trip when it arrived, milliseconds.
    pub ping_ms: f32,
    /// Snapshots missing just before it.
    pub lost: u32,
    /// Whether remote players were being extrapolated since the previous one.
    pub extrapolated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_count_the_last_second() {
        let mut r = RateMeter::default();
        assert_eq!(r.per_second(), 0.0);
        for i in 0..=200 {
            // 64 events a second, sampled at 100 Hz.
            r.record(i as f64 / 100.0, (i as f64 * 0.64) as u64);
        }
        assert!((r.per_second() - 64.0).abs() < 1.5, "{}", r.per_second());
    }

    #[test]
    fn history_keeps_the_newest_values() {
        let mut h = History::new(3);
        for v in 1..=5 {
            h.push(v);
        }
        assert_eq!(h.iter().collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(h.len(), 3);
    }
}
