//! Per-player input buffers: commands arrive in redundant, possibly reordered packets and
//! leave at exactly one per tick (received by `crate::datagrams`).

use crate::stats::ServerStats;
use bevy::prelude::*;
use sightline_combat::ViewWindow;
use sightline_sim::{BotControlled, CurrentCmd, InputCmd, PlayerId, Tick, TickConfig};
use std::collections::VecDeque;

/// Most buffered input, in seconds of play; newer commands beyond it are refused, never
/// the older ones waiting (dropping those would leave a hole the server then fills with a
/// repeat, and the client's prediction would be wrong).
pub const MAX_BUFFERED_SECONDS: f32 = 0.5;
/// For how long a missing command is covered by repeating the last one unchanged; after
/// that the repeat releases jump, fire and the other one-shot buttons.
pub const REPEAT_GRACE_SECONDS: f32 = 0.05;
/// Furthest a command's sequence number may run ahead of the last one simulated, in
/// seconds of ticks. An honest client is at most its input buffer (well under a second)
/// ahead; a jump further is refused, so a forged sequence cannot skip the buffer ahead or
/// run the counter into its limit.
pub const MAX_SEQ_AHEAD_SECONDS: f32 = 1.0;

/// What became of a received command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Push {
    /// Waiting to be simulated.
    Queued,
    /// Already simulated or already waiting: one of the redundant copies every packet
    /// carries.
    Duplicate,
    /// Refused: its sequence number is further ahead than any honest client's can be.
    TooFarAhead,
    /// Refused: the buffer already holds its limit of commands to come. A later packet
    /// repeats it, by when the buffer has room.
    Full,
}

/// A command waiting, with the tick of the snapshot its packet acknowledged.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    cmd: InputCmd,
    ack_tick: Option<u32>,
}

/// How the buffer looked to the ticks since the last snapshot, reported to the client so
/// it can pace its sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputTiming {
    /// Fewest commands waiting when a tick took one (counting that one; 0 when a tick
    /// had to repeat). The minimum, not the latest, because starvation happens at the
    /// minimum.
    pub min_queue: u8,
    /// Ticks, in all, in which a command had to be repeated.
    pub repeats: u32,
}

impl Default for InputTiming {
    fn default() -> Self {
        Self {
            min_queue: u8::MAX,
            repeats: 0,
        }
    }
}

/// A connected player's commands waiting to be simulated, in sequence order.
///
/// One command is taken per tick, so flooding cannot speed a player up; a missing command
/// is covered by repeating the last one, so withholding input cannot slow a fall; the
/// buffer is capped, so it cannot grow without bound.
#[derive(Component, Debug)]
pub struct InputBuffer {
    pending: VecDeque<Waiting>,
    cap: usize,
    grace_ticks: u32,
    max_ahead: u32,
    last_simulated: u32,
    last_cmd: InputCmd,
    last_ack_tick: Option<u32>,
    missing_streak: u32,
    /// Newest snapshot the client acknowledged.
    pub ack_snapshot: u32,
    timing: InputTiming,
}

impl InputBuffer {
    /// An empty buffer sized for the tick rate.
    pub fn new(tick: TickConfig) -> Self {
        let hz = tick.tick_hz as f32;
        Self {
            pending: VecDeque::new(),
            cap: ((MAX_BUFFERED_SECONDS * hz).ceil() as usize).max(4),
            grace_ticks: (REPEAT_GRACE_SECONDS * hz).ceil() as u32,
            max_ahead: (MAX_SEQ_AHEAD_SECONDS * hz).ceil() as u32,
            last_simulated: 0,
            last_cmd: InputCmd::default(),
            last_ack_tick: None,
            missing_streak: 0,
            ack_snapshot: 0,
            timing: InputTiming::default(),
        }
    }

    /// Adds a received command, sent in a packet that acknowledged the snapshot of
    /// `ack_tick` (`None`: no snapshot, or one the server cannot vouch for). A full
    /// buffer keeps what it holds and refuses a newer command; one older than everything
    /// waiting (it fills a hole) takes the place of the newest.
    pub fn push(&mut self, cmd: InputCmd, ack_tick: Option<u32>) -> Push {
        if cmd.seq <= self.last_simulated {
            return Push::Duplicate;
        }
        // No underflow: seq > last_simulated here.
        if cmd.seq - self.last_simulated > self.max_ahead {
            return Push::TooFarAhead;
        }
        let at = match self.pending.binary_search_by_key(&cmd.seq, |w| w.cmd.seq) {
            Ok(_) => return Push::Duplicate,
            Err(at) => at,
        };
        if self.pending.len() >= self.cap {
            if at == self.pending.len() {
                return Push::Full;
            }
            self.pending.pop_back();
        }
        self.pending.insert(at, Waiting { cmd, ack_tick });
        Push::Queued
    }

    /// The command for this tick: the oldest waiting one, or a repeat of the last.
    ///
    /// For a short gap (up to the repeat grace) the repeat stands in for the next
    /// command: that command's sequence counts as simulated, and when it arrives late it
    /// is dropped. The client's commands and the server's ticks so stay paired, and when
    /// the late command equals the repeat (input rarely changes within a tick) the
    /// client's prediction still matches exactly. After a longer gap the client is
    /// treated as stalled and its commands are taken as they come.
    pub fn take_next(&mut self) -> InputCmd {
        let waiting = self.pending.len().min(u8::MAX as usize) as u8;
        self.timing.min_queue = self.timing.min_queue.min(waiting);
        if let Some(w) = self.pending.pop_front() {
            self.last_simulated = w.cmd.seq;
            self.last_cmd = w.cmd;
            self.last_ack_tick = w.ack_tick;
            self.missing_streak = 0;
            return w.cmd;
        }
        self.missing_streak = self.missing_streak.saturating_add(1);
        // A running total on the wire; the client takes differences with wrapping_sub.
        self.timing.repeats = self.timing.repeats.wrapping_add(1);
        if self.missing_streak <= self.grace_ticks {
            // Saturates rather than overflows: a sequence near the limit then simply
            // stops advancing (it takes 388 days of 128 Hz play to get there honestly).
            if self.last_simulated > 0 {
                self.last_simulated = self.last_simulated.saturating_add(1);
            }
            self.last_cmd
        } else {
            self.last_cmd.repeated()
        }
    }

    /// The tick of the snapshot acknowledged by the packet that brought the command last
    /// taken: what lag compensation bounds that command's view time by.
    pub fn last_ack_tick(&self) -> Option<u32> {
        self.last_ack_tick
    }

    /// Sequence of the newest command simulated: what snapshots acknowledge.
    pub fn last_simulated(&self) -> u32 {
        self.last_simulated
    }

    /// Commands waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no command is waiting.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The timing report for a snapshot; the minimum starts afresh, the total goes on.
    pub fn take_timing(&mut self) -> InputTiming {
        let timing = self.timing;
        self.timing.min_queue = u8::MAX;
        timing
    }
}

/// Takes this tick's command for every connected player, through the sanitizer, in
/// player-id order (as every per-player step of a tick is, so runs are reproducible), and
/// bounds the view time its shots may claim.
pub(crate) fn consume_inputs(
    mut players: Query<
        (
            &PlayerId,
            &mut InputBuffer,
            &mut CurrentCmd,
            &mut ViewWindow,
        ),
        Without<BotControlled>,
    >,
    mut stats: ResMut<ServerStats>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
) {
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    for (_, mut buffer, mut current, mut window) in order {
        let previous_view = (buffer.last_simulated() > 0).then(|| current.0.view_time());
        let cmd = buffer.take_next();
        match cmd.sanitized() {
            Ok(cmd) => current.0 = cmd,
            Err(_) => {
                stats.malformed_packets = stats.malformed_packets.saturating_add(1);
                current.0 = current.0.repeated();
            }
        }
        *window = ViewWindow::new(
            tick.0,
            buffer.last_ack_tick(),
            previous_view,
            config.tick_hz,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::Buttons;

    fn cmd(seq: u32) -> InputCmd {
        InputCmd {
            seq,
            forward: 1.0,
            buttons: Buttons::JUMP.with(Buttons::FIRE),
            ..Default::default()
        }
    }

    fn buffer() -> InputBuffer {
        InputBuffer::new(TickConfig::new(128, 64).unwrap())
    }

    #[test]
    fn commands_leave_in_sequence_order_once_each() {
        let mut b = buffer();
        for seq in [3, 1, 2, 3, 2] {
            b.push(cmd(seq), None);
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.take_next().seq, 1);
        assert_eq!(b.take_next().seq, 2);
        assert_eq!(
            b.push(cmd(2), None),
            Push::Duplicate,
            "an already simulated command"
        );
        assert_eq!(b.take_next().seq, 3);
        assert_eq!(b.last_simulated(), 3);
    }

    #[test]
    fn a_missing_command_repeats_the_last_then_releases_buttons() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        let grace = (REPEAT_GRACE_SECONDS * 128.0).ceil() as usize;
        for _ in 0..grace {
            let r = b.take_next();
            assert_eq!(r.buttons, cmd(1).buttons);
            assert_eq!(r.forward, 1.0);
        }
        let r = b.take_next();
        assert_eq!(r.buttons, Buttons::default());
        assert_eq!(
            r.forward, 1.0,
            "movement keeps going: falling cannot be paused"
        );
        // Within the grace each repeat stood in for the next command...
        assert_eq!(b.last_simulated(), 1 + grace as u32);
        // ...which is dropped when it arrives late; later ones are taken.
        assert_eq!(b.push(cmd(2), None), Push::Duplicate);
        assert_eq!(b.push(cmd(2 + grace as u32), None), Push::Queued);
        assert_eq!(b.take_timing().repeats, grace as u32 + 1);
        assert_eq!(b.take_timing().repeats, grace as u32 + 1, "a running total");
    }

    #[test]
    fn flooding_fills_the_buffer_but_still_yields_one_command_per_tick() {
        let mut b = buffer();
        let results: Vec<Push> = (1..=1000).map(|seq| b.push(cmd(seq), None)).collect();
        assert_eq!(b.len(), 64, "0.5 s at 128 Hz");
        assert!(results[64..128].iter().all(|r| *r == Push::Full));
        // The commands waiting are never dropped for newer ones: they leave in order.
        assert_eq!(b.take_next().seq, 1);
        assert_eq!(b.take_next().seq, 2);
        assert_eq!(b.push(cmd(65), None), Push::Queued, "room again");
        assert_eq!(b.push(cmd(67), None), Push::Queued);
        assert_eq!(b.push(cmd(68), None), Push::Full);
        // A late command that fills a hole takes the newest one's place.
        assert_eq!(b.push(cmd(66), None), Push::Queued);
        let order: Vec<u32> = (0..64).map(|_| b.take_next().seq).collect();
        assert_eq!(order, (3..=66).collect::<Vec<_>>());
    }

    #[test]
    fn timing_reports_the_fewest_commands_waiting_since_the_last_report() {
        let mut b = buffer();
        for seq in 1..=3 {
            b.push(cmd(seq), None);
        }
        b.take_next();
        b.take_next();
        assert_eq!(b.take_timing().min_queue, 2);
        b.take_next();
        b.take_next();
        let t = b.take_timing();
        assert_eq!((t.min_queue, t.repeats), (0, 1));
    }

    #[test]
    fn a_sequence_far_ahead_is_refused_and_the_maximum_cannot_overflow() {
        let mut b = buffer();
        assert_eq!(b.push(cmd(u32::MAX), None), Push::TooFarAhead);
        assert_eq!(b.push(cmd(1), None), Push::Queued);
        b.take_next();
        assert_eq!(
            b.push(cmd(1 + 129), None),
            Push::TooFarAhead,
            "one second at 128 Hz"
        );
        assert_eq!(b.push(cmd(1 + 128), None), Push::Queued);
        // A client that reached the end of the sequence honestly: repeats saturate.
        let mut end = buffer();
        end.last_simulated = u32::MAX - 1;
        assert_eq!(end.push(cmd(u32::MAX), Some(7)), Push::Queued);
        assert_eq!(end.take_next().seq, u32::MAX);
        assert_eq!(end.last_ack_tick(), Some(7));
        for _ in 0..100 {
            end.take_next();
        }
        assert_eq!(end.last_simulated(), u32::MAX);
    }
}
