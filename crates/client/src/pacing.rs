//! Input timing: run the client's tick a little faster or slower (time dilation) so that
//! its commands reach the server just ahead of the tick that needs them.
//!
//! Each snapshot reports the fewest commands that were waiting when the server's ticks
//! took one, and whether any tick found none. Too few and the server repeats stale input
//! (a misprediction for us); too many and every input waits needlessly. The controller
//! keeps the minimum over the last half second at [`TARGET_MIN_QUEUE`].

use bevy::prelude::*;
use sightline_sim::TickConfig;
use std::collections::VecDeque;

/// Fewest commands that should be waiting when the server takes one, at best: the one it
/// takes and one spare. Each starvation raises the target by one (up to
/// [`MAX_TARGET_QUEUE`]), and a quiet spell (about 15 s without one) lowers it again, so the
/// spare grows with the link's jitter and shrinks when the link calms down.
pub const TARGET_MIN_QUEUE: f64 = 2.0;
/// Most spare commands the controller asks for.
pub const MAX_TARGET_QUEUE: f64 = 8.0;
/// Reports without starvation after which the target drops by one (about 15 s at 64 Hz).
const RELAX_REPORTS: u32 = 960;
/// Commands after which a client moves even if pacing never settles (a link so bad the
/// server keeps starving): about four seconds at 128 Hz.
pub const SETTLE_LIMIT: u32 = 512;
/// Largest change of tick pace, as a fraction.
pub const MAX_DILATION: f64 = 0.03;
/// Largest speed-up before the pace first settles, as a fraction.
pub const CATCH_UP_DILATION: f64 = 0.10;
/// Snapshots the controller looks back over.
const WINDOW: usize = 64;
/// Reports needed before the pace is trusted.
const SETTLE_REPORTS: usize = 16;

/// The server's recent reports and the pace chosen from them.
#[derive(Resource, Debug, Clone)]
pub struct InputPacing {
    reports: VecDeque<(u8, u8)>,
    /// Current tick duration multiplier (above 1: slower).
    pub factor: f64,
    /// Reports received in all.
    pub received: u64,
    /// Ticks the server had to repeat our command, in all.
    pub repeats: u32,
    /// Sum of reported queue depths, for the mean.
    queue_sum: u64,
    /// Current target for the fewest commands waiting.
    pub target: f64,
    /// Lowest the target may relax to, from the link's measured jitter.
    pub floor: f64,
    quiet_reports: u32,
    /// Whether the pace has ever settled; before that, starvation is the pipeline
    /// filling up and only calls for catching up.
    ever_settled: bool,
}

impl Default for InputPacing {
    fn default() -> Self {
        Self {
            reports: VecDeque::new(),
            factor: 1.0,
            received: 0,
            repeats: 0,
            queue_sum: 0,
            target: TARGET_MIN_QUEUE,
            floor: TARGET_MIN_QUEUE,
            quiet_reports: 0,
            ever_settled: false,
        }
    }
}

impl InputPacing {
    /// Takes one snapshot's report: the fewest commands waiting since the previous one,
    /// and the server's running total of repeated commands.
    pub fn observe(&mut self, min_queue: u8, repeats_total: u32) {
        let repeated = repeats_total
            .saturating_sub(self.repeats)
            .min(u8::MAX as u32) as u8;
        self.repeats = self.repeats.max(repeats_total);
        self.reports.push_back((min_queue, repeated));
        if self.reports.len() > WINDOW {
            self.reports.pop_front();
        }
        self.received += 1;
        self.queue_sum += min_queue as u64;
        // Raise the target on starvation once settled, at most once a window (one dry
        // spell shows in several reports); relax it after a quiet spell.
        let starved = min_queue == 0 || repeated > 0;
        if starved && self.ever_settled {
            if self.quiet_reports >= WINDOW as u32 {
                self.target = (self.target + 1.0).min(MAX_TARGET_QUEUE);
            }
            self.quiet_reports = 0;
        } else {
            self.quiet_reports += 1;
            if self.quiet_reports >= RELAX_REPORTS {
                self.target = (self.target - 1.0).max(self.floor);
                self.quiet_reports = 0;
            }
        }
        self.ever_settled |= self.settled();
        self.factor = self.choose_factor();
    }

    /// Sets the target's floor from the link: one-way jitter (standard deviation,
    /// seconds) and loss (fraction of packets). Jitter needs a spare command per tick of
    /// two standard deviations; loss needs one per packet of the longest run of losses
    /// expected more often than once in 20 minutes (each lost input packet makes the next
    /// command a tick late, until a later packet's redundant copy arrives).
    pub fn set_link(&mut self, one_way_jitter: f64, loss: f64, tick_hz: u32) {
        let jitter_spare = (2.0 * one_way_jitter * tick_hz as f64).ceil();
        let packets_per_minute = tick_hz as f64 * 60.0;
        let mut loss_run = 0.0;
        while loss.powf(loss_run + 1.0) * packets_per_minute > 0.05 && loss_run < MAX_TARGET_QUEUE {
            loss_run += 1.0;
        }
        // Jitter and a run of losses rarely strike the same command: the spare covers the
        // larger of the two, not their sum.
        self.floor = (1.0 + loss_run.max(jitter_spare).max(1.0)).min(MAX_TARGET_QUEUE);
        self.target = self.target.max(self.floor);
    }

    fn choose_factor(&self) -> f64 {
        let starved = self.reports.iter().any(|&(q, r)| q == 0 || r > 0);
        let min = self.reports.iter().map(|&(q, _)| q).min().unwrap_or(0) as f64;
        // Positive error: commands wait too long, so tick a little slower.
        let error = if starved {
            -self.target
        } else {
            min - self.target
        };
        // Filling the pipeline at first may go faster than later corrections.
        let fastest = if self.ever_settled {
            MAX_DILATION
        } else {
            CATCH_UP_DILATION
        };
        1.0 + (0.01 * error).clamp(-fastest, MAX_DILATION)
    }

    /// Whether commands should only look around for now: the pace has not settled yet
    /// this session and fewer than [`SETTLE_LIMIT`] commands have gone.
    pub fn holds_input(&self, commands_sent: u32) -> bool {
        !self.ever_settled && commands_sent < SETTLE_LIMIT
    }

    /// Whether the pace has settled at least once this session. Until then the client
    /// sends commands that only look around (see `sample_input`); afterwards a spell of
    /// starvation changes the pace, never what the player may do.
    pub fn has_settled(&self) -> bool {
        self.ever_settled
    }

    /// Whether the latest reports show no starvation: the server has had a command ready
    /// at every tick for a while.
    pub fn settled(&self) -> bool {
        self.reports.len() >= SETTLE_REPORTS
            && self
                .reports
                .iter()
                .rev()
                .take(SETTLE_REPORTS)
                .all(|&(q, r)| q > 0 && r == 0)
    }

    /// Mean of the reported minimum queue, commands.
    pub fn mean_queue(&self) -> f64 {
        if self.received == 0 {
            0.0
        } else {
            self.queue_sum as f64 / self.received as f64
        }
    }

    /// (reports received, sum of their reported queue depths), to average over a span.
    pub fn queue_totals(&self) -> (u64, u64) {
        (self.received, self.queue_sum)
    }
}

/// Applies the chosen pace to the fixed timestep.
pub(crate) fn pace_ticks(
    pacing: Res<InputPacing>,
    config: Res<TickConfig>,
    mut fixed: ResMut<Time<Fixed>>,
) {
    if pacing.is_changed() {
        fixed.set_timestep_seconds(pacing.factor / config.tick_hz as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starvation_speeds_up_and_a_long_queue_slows_down() {
        let mut p = InputPacing::default();
        p.observe(0, 1);
        assert!(p.factor < 1.0);
        assert_eq!(p.repeats, 1);
        assert!(!p.settled());
        let mut p = InputPacing::default();
        for _ in 0..WINDOW {
            p.observe(6, 0);
        }
        assert!(p.factor > 1.0 && p.factor <= 1.0 + MAX_DILATION);
        assert!(p.settled());
        let mut p = InputPacing::default();
        for _ in 0..WINDOW {
            p.observe(2, 0);
        }
        assert_eq!(p.factor, 1.0);
        assert_eq!(p.mean_queue(), 2.0);
    }

    #[test]
    fn jitter_and_loss_deepen_the_floor() {
        let mut p = InputPacing::default();
        p.set_link(0.0, 0.0, 128);
        assert_eq!(p.floor, TARGET_MIN_QUEUE);
        p.set_link(0.0115, 0.0, 128);
        assert_eq!(p.floor, TARGET_MIN_QUEUE + 2.0);
        p.set_link(0.0115, 0.05, 128);
        assert_eq!(
            p.floor, 4.0,
            "the larger of jitter's and loss's spare, not both"
        );
        p.set_link(0.0, 0.05, 128);
        assert_eq!(p.floor, 4.0, "runs of three losses at 5 %");
        p.set_link(0.1, 0.5, 128);
        assert_eq!(p.floor, MAX_TARGET_QUEUE);
    }

    #[test]
    fn starvation_raises_the_target_and_quiet_lowers_it() {
        let mut p = InputPacing::default();
        // Starving while filling the pipeline does not raise the target.
        p.observe(0, 3);
        for _ in 0..WINDOW {
            p.observe(3, 3);
        }
        assert_eq!(p.target, TARGET_MIN_QUEUE);
        p.observe(0, 4);
        p.observe(0, 5);
        assert_eq!(p.target, TARGET_MIN_QUEUE + 1.0, "one dry spell, one step");
        for _ in 0..RELAX_REPORTS {
            p.observe(3, 5);
        }
        assert_eq!(p.target, TARGET_MIN_QUEUE);
    }
}
