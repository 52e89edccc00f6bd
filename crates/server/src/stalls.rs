//! The server's own stalls: a paused VM, a swap storm, a slow disk. They are normal
//! events, and nobody honest may pay for them.
//!
//! While the process stands still, clients go on sending; on waking, the server finds
//! seconds of input in its socket at once. So the simulation catches up every tick it
//! owes, up to [`MAX_STALL_CATCH_UP`], where Bevy's default gives up after a quarter
//! second and leaves the simulation behind real time, every client's commands then far
//! ahead of it. A server whose own ticks overrun (their usual cost is most of a tick:
//! [`TickCost`]) keeps Bevy's quarter second instead, and runs in slow motion serving
//! the network every frame rather than in frames of seconds; one long tick (a stall
//! that fell inside it) does not change the usual cost. Snapshots are sent only once the
//! catching up is nearly done (the ones in between would arrive together and stale), and
//! the input checks measure what a client sent over the time it had to send it, with the
//! ticks about to run counted in ([`owed_ticks`]). Each stall is logged (at most once per
//! [`STALL_LOG_INTERVAL`]) and counted on the status line.

use crate::sets::ReceiveStep;
use crate::stats::TickTimes;
use bevy::prelude::*;
use std::collections::VecDeque;
use std::time::Duration;

/// Longest stall whose ticks are caught up afterwards; past it, the rest of the lost time
/// is skipped and counted.
pub const MAX_STALL_CATCH_UP: Duration = Duration::from_secs(5);
/// What an overrunning server catches up in a frame (Bevy's default).
const NORMAL_CATCH_UP: Duration = Duration::from_millis(250);
/// A frame this long counts as a stall, seconds.
pub const STALL_SECONDS: f64 = 0.25;
/// Ticks still owed in a frame past which a snapshot tick sends nothing: the next
/// snapshots would leave in the same frame.
pub const CATCH_UP_SNAPSHOT_SKIP: u32 = 8;
/// Seconds between log lines about stalls; every stall is counted.
const STALL_LOG_INTERVAL: f64 = 10.0;
/// Frames whose last tick's cost [`TickCost`] keeps.
const COST_FRAMES: usize = 32;
/// Share of a tick's time its usual cost may take before the server counts as
/// overrunning.
const OVERRUN_SHARE: f64 = 0.8;

/// The server's stalls over its life.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct Stalls {
    /// Frames that came at least [`STALL_SECONDS`] after the one before, the server not
    /// overrunning.
    pub count: u64,
    /// The longest, seconds.
    pub longest: f64,
    /// Ticks run to catch up after them.
    pub ticks_caught_up: u64,
    /// Seconds of simulation given up, past [`MAX_STALL_CATCH_UP`].
    pub skipped: f64,
    logged_at: Option<f64>,
}

/// How long after this frame's clock was read its datagrams were read: a stall that fell
/// inside the frame, after Bevy read the time, shows here, not in the frame's delta (which
/// the next frame's carries). Measured only in real time ([`crate::Pacing::RealTime`]);
/// zero on the manual clock.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct FrameLag(pub Duration);

/// Measures [`FrameLag`], once the socket is read and before the server handles it.
pub(crate) fn measure_frame_lag(real: Res<Time<Real>>, mut lag: ResMut<FrameLag>) {
    lag.0 = real.last_update().map_or(Duration::ZERO, |at| at.elapsed());
}

/// What a tick usually costs: the last tick's duration in each of the last
/// 32 frames (`COST_FRAMES`), microseconds.
#[derive(Resource, Debug, Default)]
pub struct TickCost(VecDeque<u32>);

impl TickCost {
    /// Whether the usual (median) tick takes most of a tick's time.
    pub fn overrunning(&self, timestep: Duration) -> bool {
        let mut sorted: Vec<u32> = self.0.iter().copied().collect();
        sorted.sort_unstable();
        let usual = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
        f64::from(usual) > OVERRUN_SHARE * timestep.as_secs_f64() * 1e6
    }
}

/// At the end of a frame: notes what its last tick cost, and lets the next frame catch
/// up a stall's ticks unless the server is overrunning (see the module docs).
pub(crate) fn allow_catching_up(
    times: Res<TickTimes>,
    fixed: Res<Time<Fixed>>,
    mut cost: ResMut<TickCost>,
    mut virt: ResMut<Time<Virtual>>,
) {
    cost.0.push_back(times.last_us());
    if cost.0.len() > COST_FRAMES {
        cost.0.pop_front();
    }
    let limit = if cost.overrunning(fixed.timestep()) {
        NORMAL_CATCH_UP
    } else {
        MAX_STALL_CATCH_UP
    };
    if virt.max_delta() != limit {
        virt.set_max_delta(limit);
    }
}

/// Ticks the fixed schedule will run this frame and the next, read before they run: the
/// time owed from earlier frames, this frame's, and the frame's lag, which the next frame
/// will owe.
pub fn owed_ticks(fixed: &Time<Fixed>, virt: &Time<Virtual>, lag: FrameLag) -> u32 {
    let owed = fixed.overstep() + virt.delta() + lag.0;
    let step = fixed.timestep().as_secs_f64().max(1e-6);
    (owed.as_secs_f64() / step).floor().min(u32::MAX as f64) as u32
}

/// Whether this tick is one of many in a frame catching up, with more than
/// [`CATCH_UP_SNAPSHOT_SKIP`] still to run after it.
pub fn catching_up(fixed: &Time<Fixed>) -> bool {
    fixed.overstep() >= fixed.timestep() * CATCH_UP_SNAPSHOT_SKIP
}

/// Notices a frame that came long after the one before (the server not overrunning)
/// and says what catching up costs.
pub(crate) fn notice_stalls(
    real: Res<Time<Real>>,
    virt: Res<Time<Virtual>>,
    fixed: Res<Time<Fixed>>,
    cost: Res<TickCost>,
    mut stalls: ResMut<Stalls>,
) {
    let gap = real.delta().as_secs_f64();
    if gap < STALL_SECONDS || cost.overrunning(fixed.timestep()) {
        return;
    }
    let skipped = (gap - virt.delta().as_secs_f64()).max(0.0);
    let ticks = owed_ticks(&fixed, &virt, FrameLag::default());
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

/// The server's own stalls: noticed before anyone is judged for them, and caught up on
/// within a budget.
pub(crate) struct StallsPlugin;

impl Plugin for StallsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Stalls>()
            .init_resource::<TickCost>()
            .init_resource::<FrameLag>()
            .add_systems(PreUpdate, notice_stalls.in_set(ReceiveStep::Stalls))
            .add_systems(Last, allow_catching_up);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_long_tick_is_not_an_overrun_but_usually_long_ones_are() {
        let step = Duration::from_micros(7812);
        let mut cost = TickCost::default();
        cost.0.extend([400; 31]);
        cost.0.push_back(2_500_000);
        assert!(!cost.overrunning(step), "a stall inside a tick");
        cost.0.clear();
        cost.0.extend([7000; 20]);
        cost.0.extend([400; 12]);
        assert!(cost.overrunning(step));
    }

    #[test]
    fn ticks_owed_count_the_frame_and_what_was_left_over() {
        let mut fixed = Time::<Fixed>::from_hz(128.0);
        let mut virt = Time::<Virtual>::from_max_delta(MAX_STALL_CATCH_UP);
        virt.advance_by(Duration::from_millis(2500));
        assert_eq!(owed_ticks(&fixed, &virt, FrameLag::default()), 320);
        let lag = FrameLag(Duration::from_millis(500));
        assert_eq!(
            owed_ticks(&fixed, &virt, lag),
            384,
            "a stall inside the frame"
        );
        fixed.accumulate_overstep(Duration::from_millis(80));
        assert!(catching_up(&fixed), "80 ms is over 8 ticks");
        fixed.discard_overstep(Duration::from_millis(75));
        assert!(!catching_up(&fixed));
    }
}
