//! The server's own stalls: a paused VM, a swap storm, a slow disk. They are normal
//! events, and nobody honest may pay for them.
//!
//! While the process stands still, clients go on sending; on waking, the server finds
//! seconds of input in its socket at once. So after a frame that began long after the
//! last one ended (the process did not run: [`allow_catching_up`]), the simulation
//! catches up every tick it owes, up to [`MAX_STALL_CATCH_UP`], where Bevy's default
//! gives up after a quarter second and leaves the simulation behind real time, every
//! client's commands then far ahead of it. A server whose own ticks overrun keeps
//! Bevy's quarter second and runs in slow motion instead, serving the network every
//! frame, rather than turning into frames of seconds; sends snapshots only once the catching up is nearly done (the ones in
//! between would arrive together and stale), and the input checks measure what a client
//! sent over the time it had to send it, with the ticks about to run counted in
//! ([`owed_ticks`]). Each stall is logged (at most once per [`STALL_LOG_INTERVAL`]) and
//! counted on the status line.

use bevy::prelude::*;
use std::time::Duration;

/// Longest stall whose ticks are caught up afterwards; past it, the rest of the lost time
/// is skipped and counted.
pub const MAX_STALL_CATCH_UP: Duration = Duration::from_secs(5);
/// What any other frame may catch up (Bevy's default).
const NORMAL_CATCH_UP: Duration = Duration::from_millis(250);
/// A frame this much longer than a tick counts as a stall.
pub const STALL_SECONDS: f64 = 0.25;
/// Ticks still owed in a frame past which a snapshot tick sends nothing: the next
/// snapshots would leave in the same frame.
pub const CATCH_UP_SNAPSHOT_SKIP: u32 = 8;
/// Seconds between log lines about stalls; every stall is counted.
const STALL_LOG_INTERVAL: f64 = 10.0;

/// When the last frame ended, and how long the process was idle before this one.
#[derive(Resource, Debug, Default)]
pub(crate) struct LastFrameEnd {
    at: Option<std::time::Instant>,
    idle: Duration,
}

/// Notes when a frame ends (the last thing it does).
pub(crate) fn note_frame_end(mut end: ResMut<LastFrameEnd>) {
    end.at = Some(std::time::Instant::now());
}

/// The server's stalls over its life.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct Stalls {
    /// Frames that began at least [`STALL_SECONDS`] after the one before ended.
    pub count: u64,
    /// The longest, seconds.
    pub longest: f64,
    /// Ticks run to catch up after them.
    pub ticks_caught_up: u64,
    /// Seconds of simulation given up, past [`MAX_STALL_CATCH_UP`].
    pub skipped: f64,
    logged_at: Option<f64>,
}

/// Before the clocks advance: a frame that begins long after the last one ended
/// follows a stall, and may catch up its ticks; any other keeps Bevy's quarter second
/// (see the module docs).
pub(crate) fn allow_catching_up(mut end: ResMut<LastFrameEnd>, mut time: ResMut<Time<Virtual>>) {
    let idle = end.at.map_or(Duration::ZERO, |at| at.elapsed());
    end.idle = idle;
    let limit = if idle.as_secs_f64() >= STALL_SECONDS {
        MAX_STALL_CATCH_UP
    } else {
        NORMAL_CATCH_UP
    };
    if time.max_delta() != limit {
        time.set_max_delta(limit);
    }
}

/// Ticks the fixed schedule will run this frame, read before it runs: the time owed
/// from earlier frames and this frame's.
pub fn owed_ticks(fixed: &Time<Fixed>, virt: &Time<Virtual>) -> u32 {
    let owed = fixed.overstep() + virt.delta();
    let step = fixed.timestep().as_secs_f64().max(1e-6);
    (owed.as_secs_f64() / step).floor().min(u32::MAX as f64) as u32
}

/// Whether this tick is one of many in a frame catching up, with more than
/// [`CATCH_UP_SNAPSHOT_SKIP`] still to run after it.
pub fn catching_up(fixed: &Time<Fixed>) -> bool {
    fixed.overstep() >= fixed.timestep() * CATCH_UP_SNAPSHOT_SKIP
}

/// Notices a frame that began long after the one before ended (not one whose own ticks
/// ran long) and says what catching up costs.
pub(crate) fn notice_stalls(
    real: Res<Time<Real>>,
    virt: Res<Time<Virtual>>,
    fixed: Res<Time<Fixed>>,
    end: Res<LastFrameEnd>,
    mut stalls: ResMut<Stalls>,
) {
    if end.idle.as_secs_f64() < STALL_SECONDS {
        return;
    }
    let gap = real.delta().as_secs_f64();
    let skipped = (gap - virt.delta().as_secs_f64()).max(0.0);
    let ticks = owed_ticks(&fixed, &virt);
    stalls.count += 1;
    stalls.longest = stalls.longest.max(gap);
    stalls.ticks_caught_up += u64::from(ticks);
    stalls.skipped += skipped;
    let now = real.elapsed_secs_f64();
    if stalls
        .logged_at
        .is_none_or(|at| now - at >= STALL_LOG_INTERVAL)
    {
        stalls.logged_at = Some(now);
        if skipped > 0.0 {
            warn!(
                "the server stood still for {gap:.2} s; catching up {ticks} ticks and \
                 skipping {skipped:.2} s"
            );
        } else {
            warn!("the server stood still for {gap:.2} s; catching up {ticks} ticks");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_owed_count_the_frame_and_what_was_left_over() {
        let mut fixed = Time::<Fixed>::from_hz(128.0);
        let mut virt = Time::<Virtual>::from_max_delta(MAX_STALL_CATCH_UP);
        virt.advance_by(Duration::from_millis(2500));
        assert_eq!(owed_ticks(&fixed, &virt), 320);
        fixed.accumulate_overstep(Duration::from_millis(80));
        assert!(catching_up(&fixed), "80 ms is over 8 ticks");
        fixed.discard_overstep(Duration::from_millis(75));
        assert!(!catching_up(&fixed));
    }
}
