//! Lag compensation: the server remembers every player's hitbox for a short while, and
//! judges a shot against the hitboxes as the shooter saw them, rewound no further than
//! [`MAX_REWIND`].

use crate::Hitbox;
use bevy::prelude::*;
use sightline_sim::PlayerId;
use std::collections::VecDeque;

/// Furthest back a shot is judged, seconds. A claim further back (a lagging or lying
/// client) is judged at this limit instead; a claim in the future is judged at the present.
///
/// The rewind a shot needs is the round trip plus the interpolation delay plus the time its
/// command waits in the server's input buffer: about 265 ms at 150 ms of round trip with
/// 20 ms of jitter. 300 ms covers that (Source allows a full second).
pub const MAX_REWIND: f32 = 0.3;

/// Clamps a claimed view time (in ticks, fractional) to the rewind window ending at
/// `now_tick`.
pub fn clamp_view_time(now_tick: u32, claimed: f64, tick_hz: u32) -> f64 {
    let now = now_tick as f64;
    let oldest = now - (MAX_REWIND as f64 * tick_hz as f64);
    claimed.clamp(oldest.max(0.0), now)
}

/// Every player's hitbox after each recent tick.
#[derive(Resource, Debug, Default)]
pub struct HitboxHistory {
    ticks: VecDeque<(u32, Vec<(PlayerId, Hitbox)>)>,
    capacity: usize,
}

impl HitboxHistory {
    /// Room for `seconds` of history at `tick_hz`.
    pub fn new(tick_hz: u32, seconds: f32) -> Self {
        Self {
            ticks: VecDeque::new(),
            capacity: (seconds * tick_hz as f32).ceil() as usize + 2,
        }
    }

    /// Records the hitboxes after `tick` (sorted by player).
    pub fn record(&mut self, tick: u32, mut boxes: Vec<(PlayerId, Hitbox)>) {
        boxes.sort_by_key(|(id, _)| *id);
        self.ticks.push_back((tick, boxes));
        while self.ticks.len() > self.capacity {
            self.ticks.pop_front();
        }
    }

    fn at(&self, tick: u32) -> Option<&Vec<(PlayerId, Hitbox)>> {
        let first = self.ticks.front()?.0;
        let (t, boxes) = self.ticks.get(tick.checked_sub(first)? as usize)?;
        (*t == tick).then_some(boxes)
    }

    /// The hitboxes as a client drew them at `view` ticks: blended between the snapshot
    /// ticks around it (snapshots every `snapshot_every` ticks), the same two states the
    /// client's interpolation blended.
    pub fn rewound(&self, view: f64, snapshot_every: u32) -> Vec<(PlayerId, Hitbox)> {
        let every = snapshot_every.max(1) as f64;
        let t0 = ((view / every).floor() * every) as u32;
        let t1 = t0 + snapshot_every.max(1);
        let frac = ((view - t0 as f64) / every) as f32;
        let (Some(a), b) = (self.at(t0), self.at(t1)) else {
            // Outside the history: the newest there is.
            return self
                .ticks
                .back()
                .map(|(_, b)| b.clone())
                .unwrap_or_default();
        };
        let Some(b) = b else {
            return a.clone();
        };
        a.iter()
            .map(|(id, ha)| {
                let hb = b
                    .iter()
                    .find(|(other, _)| other == id)
                    .map_or(*ha, |(_, h)| *h);
                (*id, ha.lerp(&hb, frac))
            })
            .collect()
    }

    /// The newest tick recorded.
    pub fn newest_tick(&self) -> Option<u32> {
        self.ticks.back().map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_x(x: f32) -> Hitbox {
        Hitbox {
            feet: Vec3::new(x, 0.0, 0.0),
            crouched: false,
        }
    }

    #[test]
    fn view_times_are_clamped_to_the_window() {
        // 128 Hz: the window is 38.4 ticks.
        assert_eq!(clamp_view_time(1000, 990.5, 128), 990.5);
        assert!((clamp_view_time(1000, 900.0, 128) - (1000.0 - 38.4)).abs() < 1e-4);
        assert_eq!(
            clamp_view_time(1000, 1010.0, 128),
            1000.0,
            "the future is not trusted"
        );
        assert_eq!(clamp_view_time(10, 0.0, 128), 0.0);
    }

    #[test]
    fn rewinding_blends_the_snapshot_ticks_around_the_view_time() {
        let mut h = HitboxHistory::new(128, 1.0);
        for tick in 0..100 {
            h.record(tick, vec![(PlayerId(1), at_x(tick as f32 * 0.1))]);
        }
        // Snapshots every 2 ticks: 40.5 lies between snapshot ticks 40 and 42.
        let b = h.rewound(40.5, 2);
        assert!((b[0].1.feet.x - 4.05).abs() < 1e-5, "{:?}", b[0]);
        let exact = h.rewound(60.0, 2);
        assert!((exact[0].1.feet.x - 6.0).abs() < 1e-6);
        assert_eq!(h.newest_tick(), Some(99));
    }

    #[test]
    fn history_is_bounded_and_falls_back_to_the_newest() {
        let mut h = HitboxHistory::new(128, 0.25);
        for tick in 0..1000 {
            h.record(tick, vec![(PlayerId(0), at_x(tick as f32))]);
        }
        assert!(h.ticks.len() <= 34);
        let old = h.rewound(10.0, 2);
        assert_eq!(old[0].1.feet.x, 999.0);
    }
}
