//! Input timing: run the client's tick a little faster or slower (time dilation) so that
//! its commands reach the server just ahead of the tick that needs them.
//!
//! Each snapshot reports the fewest commands that were waiting when the server's ticks
//! took one (counting that one; 0 when a tick found none and held the player or repeated
//! its last command). Too few and the server has to wait for our commands; too many and
//! every input waits needlessly. The controller steers a low percentile of those reports
//! over the last two seconds to one: at the worst moments but the rarest, the command a
//! tick needs has only just arrived. Its window so sees the link's jitter and the frames'
//! unevenness itself, and the buffer grows with them only as far as they actually delay
//! commands. Three things keep it from steering where it should not:
//! - an outage (several dry reports in a row) is left out: bridging one would delay every
//!   command by it, so the server holds the player through it instead;
//! - one command too many is drained gently, so the window's lag does not swing the pace
//!   past the target into a dry tick;
//! - a dry report too rare for the percentile (a clock a little slower than the server's
//!   leaves one every few seconds) teaches a lasting, slowly fading speed-up.
//!
//! What an outage piles up is not ours to drain: each tick the server held us through it
//! is a command of ours that would wait a tick longer than before, and the server repays
//! those ticks itself, running two of our commands a tick until they are
//! (`sightline_server::InputBuffer::take_catch_up`), within as many ticks as it held. A
//! client slowing down to drain them too would drain the buffer past its target into
//! held ticks again. The deep reports the burst leaves are
//! the window's highest, and the percentile steered is one of its lowest.
//!
//! A dry tick costs no correction: the server holds the player for that tick and runs the
//! command when it comes (`sightline_server::HOLD_SHARE`).

use crate::sets::playing;
use bevy::prelude::*;
use sightline_sim::SessionAppExt;
use sightline_sim::TickConfig;
use std::collections::VecDeque;

/// Fewest commands that should be waiting when the server takes one, at all but the
/// rarest moments: just the one it takes.
pub const TARGET_MIN_QUEUE: u8 = 1;
/// Share of reports that may find the buffer short of [`TARGET_MIN_QUEUE`] (the
/// percentile steered), outages aside ([`OUTAGE_REPORTS`]). Each such report is a tick
/// or two the server held the player waiting for a late command. A smaller share buys
/// fewer holds with a deeper buffer for every command.
pub const SHORT_SHARE: f64 = 0.04;
/// Dry reports in a row from which the spell is an outage (of the link, or of our own
/// frames: a hitch) rather than the link's jitter or the frames' unevenness: three
/// snapshots' worth, 47 ms at 64 Hz. An outage is not steered against: a buffer deep
/// enough to bridge one would delay every command by it. The server holds the player
/// through it and repays the held ticks once the commands come.
pub const OUTAGE_REPORTS: usize = 3;
/// Commands after which a client moves even if pacing never settles (a link so bad the
/// server keeps starving): about four seconds at 128 Hz.
pub const SETTLE_LIMIT: u32 = 512;
/// Largest change of tick pace, as a fraction.
pub const MAX_DILATION: f64 = 0.03;
/// Speed-up while the pipeline first fills, as a fraction.
pub const CATCH_UP_DILATION: f64 = 0.10;
/// Pace change per command of error, as a fraction.
const GAIN: f64 = 0.01;
/// Pace change when the queue is one command deeper than the target: gentle, draining a
/// command in about three seconds, slower than the window can see the change, so the
/// pace does not overshoot into a dry tick.
const GENTLE: f64 = 0.0025;
/// Largest pace correction learnt for a clock running slower than the server's
/// ([`InputPacing::drift`]), as a fraction: crystals differ by a few hundredths of a
/// percent, virtual machines' clocks by more.
pub const MAX_DRIFT: f64 = 0.0015;
/// Correction learnt from each dry report that is not an outage, as a fraction.
const DRIFT_STEP: f64 = 0.0003;
/// Reports over which the learnt correction fades, unless dry reports renew it: five
/// minutes at 64 Hz.
const DRIFT_FADE_REPORTS: f64 = 300.0 * 64.0;
/// Reports the controller looks back over: two seconds at 64 Hz.
const WINDOW: usize = 128;
/// Reports needed before the pace is trusted.
const SETTLE_REPORTS: usize = 16;
/// Server time a report covers at least, seconds: a 64 Hz stream's interval, for which
/// the window, the outage threshold and the percentile above were tuned. A faster
/// stream's reports are taken together until they cover it (at 128 a second, in pairs:
/// the lower queue of the two), so a report means the same at any stream rate; a
/// report of a single tick would find the buffer short twice as often as one of two.
pub const REPORT_SPAN: f64 = 1.0 / 64.0;

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
    /// Ticks the server held our player waiting for a command of ours, in all.
    pub held: u32,
    /// The server's wrapping count of them in the newest snapshot.
    held_count: Option<u8>,
    /// Sum of reported queue depths, for the mean.
    queue_sum: u64,
    /// The server's total of repeats as of the snapshot prediction last took.
    repeats_applied: u32,
    /// Whether the pace has ever settled; before that, starvation is the pipeline
    /// filling up and only calls for catching up.
    ever_settled: bool,
    /// The pace correction learnt for our clock (negative: faster). A clock slower than
    /// the server's by 0.1 % leaves the buffer a tick short every 8 s: each time one tick
    /// finds it dry and the server holds the player, and the window's percentile never
    /// sees a dry report that rare. Each such report (one not in an outage) so makes us
    /// a little faster for good, fading slowly.
    pub drift: f64,
    /// Dry reports in a row, the latest included.
    dry_run: usize,
    /// A report shorter than [`REPORT_SPAN`] waiting for the next: its queue and the
    /// server time it covered, seconds.
    partial: Option<(u8, f64)>,
}

impl Default for InputPacing {
    fn default() -> Self {
        Self {
            reports: VecDeque::new(),
            factor: 1.0,
            received: 0,
            repeats: 0,
            held: 0,
            held_count: None,
            queue_sum: 0,
            repeats_applied: 0,
            ever_settled: false,
            drift: 0.0,
            dry_run: 0,
            partial: None,
        }
    }
}

impl InputPacing {
    /// Takes one snapshot's report: the fewest commands waiting since the previous one,
    /// over `span` seconds of server time since the previous snapshot observed, and the
    /// server's running total of repeated commands. Reports shorter than [`REPORT_SPAN`]
    /// wait to be taken with the next.
    pub fn observe(&mut self, min_queue: u8, repeats_total: u32, span: f64) {
        let (min_queue, covered) = match self.partial.take() {
            Some((queue, before)) => (queue.min(min_queue), before + span),
            None => (min_queue, span),
        };
        // A little short of the span counts (a stream of 128 a second covers it in two).
        if covered < 0.9 * REPORT_SPAN {
            self.partial = Some((min_queue, covered));
            return;
        }
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
        if self.ever_settled {
            self.learn_drift(min_queue);
        }
        self.factor = self.choose_factor();
    }

    /// Takes a newer snapshot's wrapping count of the ticks the server held our player.
    /// A count seemingly more than half the range on is an older snapshot's, and taken for
    /// none (snapshots come a few ticks apart).
    pub fn count_holds(&mut self, count: u8) {
        let since = self.held_count.map_or(0, |last| count.wrapping_sub(last));
        if since < 128 {
            self.held += u32::from(since);
            self.held_count = Some(count);
        }
    }

    /// Whether the server repeated or skipped commands of ours between the snapshot
    /// prediction took last and this one (whose running total is `repeats_total`).
    pub fn repeated_since_applied(&mut self, repeats_total: u32) -> bool {
        let repeated = repeats_total > self.repeats_applied;
        self.repeats_applied = self.repeats_applied.max(repeats_total);
        repeated
    }

    /// The reported minimum queue that all but [`SHORT_SHARE`] of the window's reports
    /// reach, leaving out outages: runs of at least [`OUTAGE_REPORTS`] dry reports. If
    /// those are most of the window, the link is not out but our commands come too late,
    /// and every report counts.
    pub fn low_queue(&self) -> u8 {
        let all: Vec<u8> = self.reports.iter().map(|&(q, _)| q).collect();
        let outside = outside_outages(&all);
        let mut queues = if outside.len() * 2 >= all.len() {
            outside
        } else {
            all
        };
        if queues.is_empty() {
            return 0;
        }
        queues.sort_unstable();
        let rank = (SHORT_SHARE * queues.len() as f64).floor() as usize;
        queues[rank.min(queues.len() - 1)]
    }

    /// Learns from a dry run that ended short of an outage, and fades what was learnt.
    fn learn_drift(&mut self, min_queue: u8) {
        if min_queue == 0 {
            self.dry_run += 1;
            return;
        }
        if (1..OUTAGE_REPORTS).contains(&self.dry_run) {
            self.drift -= DRIFT_STEP * self.dry_run as f64;
        }
        self.dry_run = 0;
        self.drift = (self.drift * (1.0 - 1.0 / DRIFT_FADE_REPORTS)).clamp(-MAX_DRIFT, 0.0);
    }

    fn choose_factor(&self) -> f64 {
        let filling = !self.ever_settled && self.reports.iter().any(|&(q, _)| q == 0);
        if filling {
            return 1.0 - CATCH_UP_DILATION;
        }
        // Positive error: commands wait too long, so tick a little slower.
        let error = i32::from(self.low_queue()) - i32::from(TARGET_MIN_QUEUE);
        let steer = match error {
            1 => GENTLE,
            e => GAIN * f64::from(e),
        };
        1.0 + (steer + self.drift).clamp(-MAX_DILATION, MAX_DILATION)
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

/// The reports of `queues` outside runs of [`OUTAGE_REPORTS`] or more dry ones.
fn outside_outages(queues: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(queues.len());
    for run in queues.chunk_by(|a, b| (*a == 0) == (*b == 0)) {
        if run[0] != 0 || run.len() < OUTAGE_REPORTS {
            kept.extend_from_slice(run);
        }
    }
    kept
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

/// Input pacing: how far ahead of the server this client runs its ticks.
pub(crate) struct PacingPlugin;

impl Plugin for PacingPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<InputPacing>()
            .add_systems(Update, pace_ticks.run_if(playing));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(p: &mut InputPacing, min_queue: u8, repeats_total: u32) {
        p.observe(min_queue, repeats_total, REPORT_SPAN);
    }

    #[test]
    fn a_faster_stream_s_reports_are_taken_in_pairs() {
        let (mut fast, mut slow) = (InputPacing::default(), InputPacing::default());
        let half = REPORT_SPAN / 2.0;
        for i in 0..4 * WINDOW {
            // At 128 a second, one tick in eight finds the buffer dry: a quarter of the
            // pairs, as a quarter of the 64 Hz reports over the same ticks.
            let queue = |tick: usize| if tick.is_multiple_of(8) { 0 } else { 1 };
            fast.observe(queue(2 * i), 0, half);
            fast.observe(queue(2 * i + 1), 0, half);
            slow.observe(queue(2 * i).min(queue(2 * i + 1)), 0, REPORT_SPAN);
        }
        assert_eq!(fast.received, slow.received);
        assert_eq!(fast.low_queue(), slow.low_queue());
        assert_eq!(fast.factor, slow.factor);
        assert_eq!(fast.mean_queue(), 0.75);
        // A 20 Hz stream's reports each cover more than the span: each is taken alone.
        let mut sparse = InputPacing::default();
        sparse.observe(2, 0, 0.05);
        assert_eq!(sparse.received, 1);
    }

    #[test]
    fn starvation_while_filling_catches_up_then_the_low_queue_is_steered_to_one() {
        let mut p = InputPacing::default();
        report(&mut p, 0, 1);
        assert_eq!(p.factor, 1.0 - CATCH_UP_DILATION, "filling the pipeline");
        assert_eq!(p.repeats, 1);
        assert!(!p.settled());
        let mut p = InputPacing::default();
        for _ in 0..WINDOW {
            report(&mut p, 6, 0);
        }
        assert!(p.settled());
        assert!(
            p.factor > 1.0 && p.factor <= 1.0 + MAX_DILATION,
            "too deep: slower"
        );
        let mut p = InputPacing::default();
        for _ in 0..WINDOW {
            report(&mut p, 1, 0);
        }
        assert_eq!(p.factor, 1.0);
        assert_eq!(p.mean_queue(), 1.0);
    }

    #[test]
    fn rare_dry_ticks_are_tolerated_and_frequent_ones_speed_up() {
        let mut p = InputPacing::default();
        for _ in 0..SETTLE_REPORTS {
            report(&mut p, 2, 0);
        }
        assert!(p.has_settled());
        // One report in a hundred and twenty finds the buffer dry: the percentile is not
        // moved by it, and the deeper rest slows the pace.
        for i in 0..WINDOW {
            report(&mut p, if i % 120 == 0 { 0 } else { 2 }, 0);
        }
        assert_eq!(p.low_queue(), 2);
        assert!(p.factor > 1.0);
        // One in five: speed up, within the settled limit.
        for i in 0..WINDOW {
            report(&mut p, if i % 5 == 0 { 0 } else { 2 }, 0);
        }
        assert_eq!(p.low_queue(), 0);
        // Besides, each of those dry reports taught that our clock is slow.
        assert!((p.drift + MAX_DRIFT).abs() < 1e-6, "{}", p.drift);
        assert!((p.factor - (1.0 - GAIN - MAX_DRIFT)).abs() < 1e-6);
    }

    #[test]
    fn a_slow_clock_s_rare_dry_ticks_teach_a_faster_pace_that_fades() {
        let mut p = InputPacing::default();
        for _ in 0..SETTLE_REPORTS {
            report(&mut p, 1, 0);
        }
        // A clock 0.1 % slow: a dry tick every 8 s (512 reports), too rare for the
        // window's percentile, which stays on target.
        for i in 0..4 * 512 {
            report(&mut p, if i % 512 == 256 { 0 } else { 1 }, 0);
            assert_eq!(p.low_queue(), 1);
        }
        assert!(p.drift < -3.5 * DRIFT_STEP, "{}", p.drift);
        assert!(p.factor < 1.0);
        // None since: the correction fades, by half in about 3.5 minutes.
        let learnt = p.drift;
        for _ in 0..(0.7 * DRIFT_FADE_REPORTS) as usize {
            report(&mut p, 1, 0);
        }
        assert!(
            (p.drift / learnt - 0.5).abs() < 0.01,
            "{} of {learnt}",
            p.drift
        );
        // An outage's dry run teaches nothing.
        let before = p.drift;
        for q in [0, 0, 0, 0, 1] {
            report(&mut p, q, 0);
        }
        assert!(p.drift >= before && p.drift <= before * 0.999);
    }

    #[test]
    fn holds_are_counted_across_the_wrap_and_not_from_an_older_count() {
        let mut p = InputPacing::default();
        p.count_holds(250);
        assert_eq!(p.held, 0, "the first count is where we start");
        p.count_holds(252);
        p.count_holds(3);
        assert_eq!(p.held, 9);
        p.count_holds(1);
        assert_eq!(p.held, 9, "an older count");
        p.count_holds(4);
        assert_eq!(p.held, 10);
    }

    #[test]
    fn one_command_too_deep_drains_gently_and_more_drains_faster() {
        let mut p = InputPacing::default();
        for _ in 0..WINDOW {
            report(&mut p, 2, 0);
        }
        assert_eq!(p.factor, 1.0 + GENTLE);
        for _ in 0..WINDOW {
            report(&mut p, 4, 0);
        }
        assert_eq!(p.factor, 1.0 + MAX_DILATION);
    }

    #[test]
    fn outages_are_not_steered_against_but_a_starved_link_is() {
        let mut p = InputPacing::default();
        for _ in 0..SETTLE_REPORTS {
            report(&mut p, 2, 0);
        }
        // An outage of 8 dry reports (125 ms) in two seconds, a seventh of them more than
        // the share, and the commands otherwise one ahead: that is the target.
        for i in 0..WINDOW {
            report(&mut p, if (40..48).contains(&i) { 0 } else { 1 }, 0);
        }
        assert_eq!(p.low_queue(), 1);
        assert_eq!(p.factor, 1.0);
        // The same dry reports one at a time are the link's jitter: run faster.
        for i in 0..WINDOW {
            report(&mut p, if i % 16 == 0 { 0 } else { 1 }, 0);
        }
        assert_eq!(p.low_queue(), 0);
        assert!(p.factor < 1.0);
        // Dry most of the time: our commands are late, whatever the runs look like.
        for i in 0..WINDOW {
            report(&mut p, if i % 8 < 6 { 0 } else { 1 }, 0);
        }
        assert_eq!(p.low_queue(), 0);
        assert!(p.factor < 1.0);
    }

    /// Settled with the server's hold count at 0 and its queue on target a whole window.
    fn on_target() -> InputPacing {
        let mut p = InputPacing::default();
        p.count_holds(0);
        for _ in 0..WINDOW {
            report(&mut p, 1, 0);
        }
        p
    }

    #[test]
    fn what_an_outage_piled_up_is_left_to_the_server_to_repay() {
        let mut p = on_target();
        assert_eq!(p.factor, 1.0);
        // 100 ms dark on the way up: the server held us 11 ticks over six dry reports.
        for held in [0, 2, 4, 6, 8, 11] {
            report(&mut p, 0, 0);
            p.count_holds(held);
        }
        assert_eq!(p.held, 11);
        // Then the commands made meanwhile came at once, ten beyond the one steered to,
        // and the server ran two a tick until it had repaid them: the reports show the
        // queue draining without our pace changing.
        for queue in [11, 9, 7, 5, 3, 1, 1, 1] {
            report(&mut p, queue, 0);
            assert_eq!(p.low_queue(), 1);
            assert_eq!(p.factor, 1.0, "queue {queue}");
        }
    }

    #[test]
    fn a_dry_tick_of_commands_sent_late_speeds_up_a_little() {
        let mut p = on_target();
        // Held a tick for a command that came late, which then ran at once.
        report(&mut p, 0, 0);
        p.count_holds(1);
        report(&mut p, 1, 0);
        p.count_holds(1);
        // A little faster, as the dry tick taught that our clock may be slow.
        assert!(p.factor < 1.0, "{}", p.factor);
    }

    #[test]
    fn runs_of_dry_reports_from_the_outage_length_on_are_left_out() {
        let short = vec![0; OUTAGE_REPORTS - 1];
        let long = vec![0; OUTAGE_REPORTS];
        let with = |run: &[u8]| [&[3, 1][..], run, &[2][..]].concat();
        assert_eq!(outside_outages(&with(&short)).len(), 3 + short.len());
        assert_eq!(outside_outages(&with(&long)), vec![3, 1, 2]);
        assert_eq!(outside_outages(&long), Vec::<u8>::new());
    }
}
