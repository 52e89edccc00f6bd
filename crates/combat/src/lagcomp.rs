//! Lag compensation: the server remembers every player's hitbox for a short while, and
//! judges a shot against the hitboxes as the shooter saw them, rewound no further than
//! [`MAX_REWIND`].

use crate::Hitbox;
use bevy::prelude::*;
use sightline_sim::PlayerId;
use std::collections::VecDeque;

/// Furthest back a shot is judged, seconds: the one rewind limit, chosen from measured
/// latency.
///
/// The rewind a shot needs is the round trip plus the interpolation delay plus the time
/// its command waits in the server's input buffer (longer when the server held the
/// player for a late command). `sightline-bench hits` measured, at 150 ms of round trip
/// with 20 ms of jitter and 5 % loss in bursts, 241 ms on average (284 ms max) from a
/// 144 fps client and 275 ms (357 ms max) from a 60 fps one. 400 ms covers those with a
/// margin. A player further away than about 250 ms of round trip sees an older world: its
/// shots are judged against the world this long ago, so it leads its targets by the
/// excess, and its client is told each such shot was late (Source allows a full second,
/// at the cost of victims shot long after they reached cover).
pub const MAX_REWIND: f32 = 0.4;
/// Longest round trip a view time is explained by, seconds: past it a claimed view is
/// older than any honest client's, not merely late.
pub const MAX_HONEST_ROUND_TRIP: f32 = 1.0;
/// The largest interpolation delay honoured, seconds: the most a client's `cl_interp`
/// may ask for.
pub const MAX_INTERP_DELAY: f32 = 0.25;
/// Furthest a client may claim to see behind the newest snapshot it acknowledged,
/// seconds: the largest interpolation delay honoured plus a margin for the stream
/// clock's slewing.
pub const MAX_VIEW_LAG: f32 = MAX_INTERP_DELAY + 0.05;
/// Furthest a client may claim to see ahead of the newest snapshot it acknowledged,
/// seconds: extrapolation past the newest snapshot (at most 0.1 s) plus the stream clock
/// running on between snapshots.
pub const MAX_VIEW_LEAD: f32 = 0.15;
/// How far one command's view time may fall behind the previous command's, seconds: the
/// automatic interpolation delay grows when jitter does, which steps the view back.
pub const MAX_VIEW_STEP_BACK: f32 = 0.05;

/// The view times a human player's current command may claim, in fractional ticks,
/// bounded by what the server knows rather than by what the client says: the snapshot the
/// command's packet acknowledged, the server's own measure of the client's round trip
/// (so acknowledging an older snapshot than it holds buys a client no older view), and
/// the previous command's view time (view time moves forward with the commands).
///
/// A claim outside it is one no honest client could make, and is refused, not judged at
/// its edge: a client with a 10 ms ping cannot choose any moment of the last few hundred
/// milliseconds to shoot at. An honest claim older than the rewind limit is judged at
/// the limit ([`ViewJudgement::Late`]).
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct ViewWindow {
    /// Oldest view time an honest client may claim.
    pub oldest: f64,
    /// Newest view time allowed.
    pub newest: f64,
    /// Oldest world a shot is judged against ([`MAX_REWIND`] before the command's tick).
    pub rewind_floor: f64,
}

/// How a claimed view time is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ViewJudgement {
    /// Against the world at the view time claimed.
    OnTime(f64),
    /// Honest but older than the rewind limit: against the oldest world allowed, `at`,
    /// the shooter `excess` ticks behind it.
    Late {
        /// The view time judged.
        at: f64,
        /// How far the claim lay behind it, ticks.
        excess: f64,
    },
    /// No honest client could have claimed it (the future, or older than what its packet
    /// and round trip explain): not judged.
    Refused,
}

impl ViewWindow {
    /// The window for a command taken at `now_tick` that arrived at `arrived_tick`, whose
    /// packet acknowledged the snapshot of `ack_tick` (`None`: none the server can vouch
    /// for, so no rewind is allowed at all), following a command that claimed
    /// `previous_view`, from a client whose round trip the transport measures at
    /// `round_trip` seconds.
    ///
    /// What a client draws is at most a round trip, its interpolation delay and a little
    /// more old when its command arrives, so the view may lie no further back than
    /// `round_trip` plus [`MAX_VIEW_LAG`] before the arrival, whichever snapshot the packet
    /// names. The time it then waits in the server's buffer (longer after the player was
    /// held for a late command) is the server's, not the client's.
    pub fn new(
        now_tick: u32,
        arrived_tick: u32,
        ack_tick: Option<u32>,
        previous_view: Option<f64>,
        round_trip: f32,
        tick_hz: u32,
    ) -> Self {
        let hz = tick_hz as f64;
        let now = now_tick as f64;
        let Some(ack) = ack_tick else {
            return Self::CLOSED;
        };
        let ack = ack as f64;
        let latency =
            f64::from(round_trip.clamp(0.0, MAX_HONEST_ROUND_TRIP)) + f64::from(MAX_VIEW_LAG);
        let arrived = f64::from(arrived_tick.min(now_tick));
        let mut oldest = (ack - MAX_VIEW_LAG as f64 * hz).max(arrived - latency * hz);
        if let Some(previous) = previous_view {
            oldest = oldest.max(previous - MAX_VIEW_STEP_BACK as f64 * hz);
        }
        let newest = (ack + MAX_VIEW_LEAD as f64 * hz).min(now);
        Self {
            oldest: oldest.max(0.0),
            newest,
            rewind_floor: rewind_floor(now_tick, tick_hz),
        }
    }

    /// The window that admits exactly `view` for a command taken at `now_tick`: what a
    /// demo's replay uses for a command whose view the game found honest, so the shot is
    /// judged as it was (late past the same rewind limit).
    pub fn exactly(view: f64, now_tick: u32, tick_hz: u32) -> Self {
        Self {
            oldest: view,
            newest: view,
            rewind_floor: rewind_floor(now_tick, tick_hz),
        }
    }

    /// A window no view time lies in.
    pub const CLOSED: Self = Self {
        oldest: f64::INFINITY,
        newest: f64::NEG_INFINITY,
        rewind_floor: f64::INFINITY,
    };

    /// Whether a claimed view time is one an honest client could make.
    pub fn contains(&self, view: f64) -> bool {
        view.is_finite() && self.oldest <= view && view <= self.newest
    }

    /// How a shot claiming `view` is judged.
    pub fn judge(&self, view: f64) -> ViewJudgement {
        if !self.contains(view) {
            ViewJudgement::Refused
        } else if view < self.rewind_floor {
            ViewJudgement::Late {
                at: self.rewind_floor,
                excess: self.rewind_floor - view,
            }
        } else {
            ViewJudgement::OnTime(view)
        }
    }
}

/// Hitscan shots judged with lag compensation, and shots refused for a view time outside
/// their [`ViewWindow`].
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LagCompStats {
    /// Shots judged against the rewound world (late ones included).
    pub judged: u64,
    /// Of those, shots whose view was older than the rewind limit, judged at the limit.
    pub late: u64,
    /// Shots refused.
    pub refused: u64,
}

/// Clamps a claimed view time (in ticks, fractional) to the rewind window ending at
/// `now_tick`.
pub fn clamp_view_time(now_tick: u32, claimed: f64, tick_hz: u32) -> f64 {
    claimed.clamp(rewind_floor(now_tick, tick_hz), now_tick as f64)
}

/// The oldest view time a shot at `now_tick` is judged at, in ticks: [`MAX_REWIND`]
/// back, never before tick 0.
fn rewind_floor(now_tick: u32, tick_hz: u32) -> f64 {
    (now_tick as f64 - MAX_REWIND as f64 * tick_hz as f64).max(0.0)
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

    /// Every tick kept, oldest first, with its hitboxes (for a demo's keyframe).
    pub fn ticks(&self) -> impl Iterator<Item = (u32, &[(PlayerId, Hitbox)])> {
        self.ticks.iter().map(|(t, b)| (*t, b.as_slice()))
    }

    /// Forgets every tick kept.
    pub fn clear(&mut self) {
        self.ticks.clear();
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
        // 128 Hz: the window is 51.2 ticks.
        assert_eq!(clamp_view_time(1000, 990.5, 128), 990.5);
        assert!((clamp_view_time(1000, 900.0, 128) - (1000.0 - 51.2)).abs() < 1e-4);
        assert_eq!(
            clamp_view_time(1000, 1010.0, 128),
            1000.0,
            "the future is not trusted"
        );
        assert_eq!(clamp_view_time(10, 0.0, 128), 0.0);
    }

    #[test]
    fn a_view_window_follows_the_acknowledged_snapshot() {
        // 128 Hz, tick 1000, the command's packet acknowledged the snapshot of tick 980.
        let w = ViewWindow::new(1000, 1000, Some(980), None, 0.15, 128);
        assert!(w.contains(980.0 - 12.8), "100 ms of interpolation delay");
        assert!(w.contains(980.0 + 5.0), "a little extrapolation");
        assert!(
            !w.contains(980.0 - 40.0),
            "backtracking beyond the delay honoured"
        );
        assert!(!w.contains(1001.0), "the future");
        assert!(!w.contains(f64::NAN));
        // The round trip bounds it too: a stale acknowledgement from a near client
        // leaves nothing.
        let stale = ViewWindow::new(1000, 1000, Some(900), None, 0.15, 128);
        assert!(!stale.contains(900.0));
        assert_eq!(stale.judge(900.0), ViewJudgement::Refused);
        assert!(!ViewWindow::new(1000, 1000, None, None, 0.15, 128).contains(1000.0));
    }

    #[test]
    fn an_honest_view_older_than_the_rewind_limit_is_judged_late_at_the_limit() {
        // 128 Hz, tick 1000: 300 ms of round trip, 100 ms of interpolation delay and a
        // little input buffer put the view 460 ms back (58.9 ticks), past the 400 ms
        // (51.2 ticks) rewind limit.
        let hz = 128.0;
        let w = ViewWindow::new(1000, 1000, Some(958), None, 0.3, 128);
        let view = 1000.0 - 0.46 * hz;
        match w.judge(view) {
            ViewJudgement::Late { at, excess } => {
                assert!((at - (1000.0 - 0.4 * hz)).abs() < 1e-4, "{at}");
                assert!((excess - 0.06 * hz).abs() < 1e-4, "{excess}");
            }
            other => panic!("{other:?}"),
        }
        // Within the limit it is on time; in the future or past what the round trip
        // explains (300 ms plus the largest delay honoured), refused.
        assert_eq!(w.judge(970.0), ViewJudgement::OnTime(970.0));
        assert_eq!(w.judge(1000.5), ViewJudgement::Refused);
        assert_eq!(w.judge(1000.0 - 0.61 * hz), ViewJudgement::Refused);
        assert_eq!(w.judge(f64::NAN), ViewJudgement::Refused);
        // A round trip past any honest one explains no more.
        let far = ViewWindow::new(1000, 1000, Some(700), None, 30.0, 128);
        assert_eq!(far.judge(1000.0 - 1.4 * hz), ViewJudgement::Refused);
    }

    #[test]
    fn an_old_acknowledgement_buys_a_near_client_no_older_view() {
        // 20 ms of round trip, but the packet names a snapshot 60 ms old: the window
        // follows the round trip, not the snapshot.
        let hz = 128.0;
        let w = ViewWindow::new(1000, 1000, Some(992), None, 0.02, 128);
        assert!(w.contains(1000.0 - 0.3 * hz), "the largest delay honoured");
        assert!(!w.contains(1000.0 - 0.33 * hz));
        assert!(
            !w.contains(1000.0 - 0.39 * hz),
            "what the snapshot alone allowed"
        );
        // A far client keeps what its round trip explains.
        let far = ViewWindow::new(1000, 1000, Some(980), None, 0.1, 128);
        assert!(far.contains(1000.0 - 0.35 * hz));
    }

    #[test]
    fn time_a_command_waits_in_the_servers_buffer_is_not_held_against_its_view() {
        // 20 ms of round trip; the command arrived at tick 980 and runs at 1000, after
        // the player was held for a late command before it. Its view, as old as any when
        // it arrived, is judged; one older still is not.
        let hz = 128.0;
        let w = ViewWindow::new(1000, 980, Some(975), None, 0.02, 128);
        let at_arrival = 980.0 - 0.3 * hz;
        assert!(w.contains(at_arrival));
        assert!(!w.contains(at_arrival - 0.03 * hz));
        // Past the rewind limit of the tick it runs in, it is judged late, not refused.
        assert!(matches!(w.judge(at_arrival), ViewJudgement::Late { .. }));
        // An arrival "after" the tick it runs in is taken as that tick.
        let now = ViewWindow::new(1000, 1010, Some(975), None, 0.02, 128);
        assert_eq!(now, ViewWindow::new(1000, 1000, Some(975), None, 0.02, 128));
    }

    #[test]
    fn view_time_may_not_jump_back_from_the_previous_command() {
        let w = ViewWindow::new(1000, 1000, Some(980), Some(975.0), 0.15, 128);
        assert!(w.contains(975.0 - 6.0), "within 50 ms of the previous");
        assert!(!w.contains(975.0 - 7.0));
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
