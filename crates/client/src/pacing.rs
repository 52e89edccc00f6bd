//! Input timing: run the client's tick a little faster or slower (time dilation) so that
//! its commands reach the server just ahead of the tick that needs them.
//!
//! Each snapshot reports the fewest commands that were waiting when the server's ticks
//! took one (counting that one; 0 when a tick found none and held the player or repeated
//! its last command). Too few and the server has to wait for our commands; too many and
//! every input waits needlessly. The controller steers a low percentile of those reports
//! over the last few seconds to one: at the worst moments but the rarest, the command a
//! tick needs has only just arrived. Its window so sees the link's jitter and losses
//! itself, and the buffer grows with them only as far as they actually delay commands.
//! The rare dry tick costs no correction: the server holds the player for that tick and
//! runs the command when it comes (`sightline_server::HOLD_SHARE`).

use bevy::prelude::*;
use sightline_sim::TickConfig;
use std::collections::VecDeque;

/// Fewest commands that should be waiting when the server takes one, at all but the
/// rarest moments: just the one it takes.
pub const TARGET_MIN_QUEUE: u8 = 1;
/// Share of reports that may find the buffer short of [`TARGET_MIN_QUEUE`] (the
/// percentile steered). Each such report is a tick or two the server held the player
/// waiting for a late command: measured, at most 1.6 % of ticks (60 fps, 150 ms, 5 %
/// bursty loss), inside the server's allowance of one in 32. A smaller share buys fewer
/// holds with a deeper buffer for every command.
pub const SHORT_SHARE: f64 = 0.10;
/// Commands after which a client moves even if pacing never settles (a link so bad the
/// server keeps starving): about four seconds at 128 Hz.
pub const SETTLE_LIMIT: u32 = 512;
/// Largest change of tick pace, as a fraction.
pub const MAX_DILATION: f64 = 0.03;
/// Speed-up while the pipeline first fills, as a fraction.
pub const CATCH_UP_DILATION: f64 = 0.10;
/// Pace change per command of error, as a fraction.
const GAIN: f64 = 0.01;
/// Reports the controller looks back over: two seconds at 64 Hz.
const WINDOW: usize = 128;
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
    /// The server's total of repeats as of the snapshot prediction last took.
    repeats_applied: u32,
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
            repeats_applied: 0,
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
        if !self.ever_settled && self.settled() {
            // The dry reports of filling the pipeline say nothing about the link.
            self.ever_settled = true;
            self.reports.clear();
        }
        self.factor = self.choose_factor();
    }

    /// Whether the server repeated or skipped commands of ours between the snapshot
    /// prediction took last and this one (whose running total is `repeats_total`).
    pub fn repeated_since_applied(&mut self, repeats_total: u32) -> bool {
        let repeated = repeats_total > self.repeats_applied;
        self.repeats_applied = self.repeats_applied.max(repeats_total);
        repeated
    }

    /// The reported minimum queue that all but [`SHORT_SHARE`] of the window's reports
    /// reach.
    pub fn low_queue(&self) -> u8 {
        let mut queues: Vec<u8> = self.reports.iter().map(|&(q, _)| q).collect();
        if queues.is_empty() {
            return 0;
        }
        queues.sort_unstable();
        let rank = (SHORT_SHARE * queues.len() as f64).floor() as usize;
        queues[rank.min(queues.len() - 1)]
    }

    fn choose_factor(&self) -> f64 {
        let filling = !self.ever_settled && self.reports.iter().any(|&(q, _)| q == 0);
        if filling {
            return 1.0 - CATCH_UP_DILATION;
        }
        // Positive error: commands wait too long, so tick a little slower.
        let error = self.low_queue() as f64 - TARGET_MIN_QUEUE as f64;
        1.0 + (GAIN * error).clamp(-MAX_DILATION, MAX_DILATION)
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

    /// Mean of the reported minimum queue over the window, commands: about how many
    /// ticks a command now waits at the server at least.
    pub fn recent_queue(&self) -> f64 {
        if self.reports.is_empty() {
            return TARGET_MIN_QUEUE as f64;
        }
        self.reports.iter().map(|&(q, _)| q as f64).sum::<f64>() / self.reports.len() as f64
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
    fn starvation_while_filling_catches_up_then_the_low_queue_is_steered_to_one() {
        let mut p = InputPacing::default();
        p.observe(0, 1);
        assert_eq!(p.factor, 1.0 - CATCH_UP_DILATION, "filling the pipeline");
        assert_eq!(p.repeats, 1);
        assert!(!p.settled());
        let mut p = InputPacing::default();
        for _ in 0..WINDOW {
            p.observe(6, 0);
        }
        assert!(p.settled());
        assert!(
            p.factor > 1.0 && p.factor <= 1.0 + MAX_DILATION,
            "too deep: slower"
        );
        let mut p = InputPacing::default();
        for _ in 0..WINDOW {
            p.observe(1, 0);
        }
        assert_eq!(p.factor, 1.0);
        assert_eq!(p.mean_queue(), 1.0);
    }

    #[test]
    fn rare_dry_ticks_are_tolerated_and_frequent_ones_speed_up() {
        let mut p = InputPacing::default();
        for _ in 0..SETTLE_REPORTS {
            p.observe(2, 0);
        }
        assert!(p.has_settled());
        // One report in a hundred and twenty finds the buffer dry: the percentile is not
        // moved by it, and the deeper rest slows the pace.
        for i in 0..WINDOW {
            p.observe(if i % 120 == 0 { 0 } else { 2 }, 0);
        }
        assert_eq!(p.low_queue(), 2);
        assert!(p.factor > 1.0);
        // One in five: speed up, within the settled limit.
        for i in 0..WINDOW {
            p.observe(if i % 5 == 0 { 0 } else { 2 }, 0);
        }
        assert_eq!(p.low_queue(), 0);
        assert_eq!(p.factor, 1.0 - GAIN);
    }
}
