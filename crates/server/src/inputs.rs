//! Per-player input buffers: commands arrive in redundant, possibly reordered packets and
//! leave at exactly one per tick.

use crate::{Connection, ServerStats};
use bevy::prelude::*;
use sightline_net::RenetServer;
use sightline_protocol::{Channel, InputPacket, Wire};
use sightline_sim::{BotControlled, CurrentCmd, InputCmd, PlayerId, TickConfig};
use std::collections::VecDeque;

/// Most buffered input, in seconds of play; older commands beyond it are dropped.
pub const MAX_BUFFERED_SECONDS: f32 = 0.25;
/// For how long a missing command is covered by repeating the last one unchanged; after
/// that the repeat releases jump, fire and the other one-shot buttons.
pub const REPEAT_GRACE_SECONDS: f32 = 0.05;

/// How the buffer looked to the last tick, reported to the client in snapshots so it can
/// pace its sending.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct InputTiming {
    /// Commands waiting when the latest tick took one (0 if it had to repeat).
    pub queue_at_consume: u8,
    /// Ticks since the last snapshot in which a command had to be repeated.
    pub repeats_since_snapshot: u8,
}

/// A connected player's commands waiting to be simulated, in sequence order.
///
/// One command is taken per tick, so flooding cannot speed a player up; a missing command
/// is covered by repeating the last one, so withholding input cannot slow a fall; the
/// buffer is capped, so it cannot grow without bound.
#[derive(Component, Debug)]
pub struct InputBuffer {
    pending: VecDeque<InputCmd>,
    cap: usize,
    grace_ticks: u32,
    last_simulated: u32,
    last_cmd: InputCmd,
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
            last_simulated: 0,
            last_cmd: InputCmd::default(),
            missing_streak: 0,
            ack_snapshot: 0,
            timing: InputTiming::default(),
        }
    }

    /// Adds a received command. Returns false for one already simulated or already
    /// waiting (the redundant copies every packet carries).
    pub fn push(&mut self, cmd: InputCmd) -> bool {
        if cmd.seq <= self.last_simulated {
            return false;
        }
        let at = match self.pending.binary_search_by_key(&cmd.seq, |c| c.seq) {
            Ok(_) => return false,
            Err(at) => at,
        };
        self.pending.insert(at, cmd);
        if self.pending.len() > self.cap {
            self.pending.pop_front();
        }
        true
    }

    /// The command for this tick: the oldest waiting one, or a repeat of the last.
    pub fn take_next(&mut self) -> InputCmd {
        self.timing.queue_at_consume = self.pending.len().min(u8::MAX as usize) as u8;
        if let Some(cmd) = self.pending.pop_front() {
            self.last_simulated = cmd.seq;
            self.last_cmd = cmd;
            self.missing_streak = 0;
            return cmd;
        }
        self.missing_streak += 1;
        self.timing.repeats_since_snapshot = self.timing.repeats_since_snapshot.saturating_add(1);
        if self.missing_streak <= self.grace_ticks {
            self.last_cmd
        } else {
            self.last_cmd.repeated()
        }
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

    /// The timing report for a snapshot; starts counting repeats afresh.
    pub fn take_timing(&mut self) -> InputTiming {
        let timing = self.timing;
        self.timing.repeats_since_snapshot = 0;
        timing
    }
}

/// Reads input packets into each player's buffer.
pub(crate) fn receive_input_packets(
    mut server: ResMut<RenetServer>,
    mut connections: Query<(&mut Connection, Option<&mut InputBuffer>)>,
    mut stats: ResMut<ServerStats>,
) {
    for (mut conn, mut buffer) in &mut connections {
        while let Some(bytes) = server.receive_message(conn.client_id, Channel::Unreliable) {
            let packet = match InputPacket::decode(&bytes) {
                Ok(p) => p,
                Err(e) => {
                    conn.malformed += 1;
                    stats.malformed_packets += 1;
                    debug!(
                        "dropped an input packet from client {}: {e}",
                        conn.client_id
                    );
                    continue;
                }
            };
            let Some(buffer) = buffer.as_deref_mut() else {
                continue;
            };
            buffer.ack_snapshot = buffer.ack_snapshot.max(packet.ack_snapshot);
            for cmd in packet.cmds.iter().rev() {
                buffer.push(*cmd);
            }
        }
    }
}

/// Takes this tick's command for every connected player, through the sanitizer, in
/// player-id order (as every per-player step of a tick is, so runs are reproducible).
pub(crate) fn consume_inputs(
    mut players: Query<(&PlayerId, &mut InputBuffer, &mut CurrentCmd), Without<BotControlled>>,
    mut stats: ResMut<ServerStats>,
) {
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    for (_, mut buffer, mut current) in order {
        let cmd = buffer.take_next();
        match cmd.sanitized() {
            Ok(cmd) => current.0 = cmd,
            Err(_) => {
                stats.malformed_packets += 1;
                current.0 = current.0.repeated();
            }
        }
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
            b.push(cmd(seq));
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.take_next().seq, 1);
        assert_eq!(b.take_next().seq, 2);
        assert!(!b.push(cmd(2)), "an already simulated command came back");
        assert_eq!(b.take_next().seq, 3);
        assert_eq!(b.last_simulated(), 3);
    }

    #[test]
    fn a_missing_command_repeats_the_last_then_releases_buttons() {
        let mut b = buffer();
        b.push(cmd(1));
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
        assert_eq!(
            b.last_simulated(),
            1,
            "repeats do not acknowledge anything new"
        );
        assert_eq!(b.take_timing().repeats_since_snapshot, grace as u8 + 1);
        assert_eq!(b.take_timing().repeats_since_snapshot, 0);
    }

    #[test]
    fn flooding_fills_the_buffer_but_still_yields_one_command_per_tick() {
        let mut b = buffer();
        for seq in 1..=1000 {
            b.push(cmd(seq));
        }
        assert_eq!(b.len(), 32, "0.25 s at 128 Hz");
        let first = b.take_next().seq;
        assert_eq!(first, 1000 - 31);
        assert_eq!(b.take_next().seq, first + 1);
    }

    #[test]
    fn timing_reports_the_queue_depth_at_consumption() {
        let mut b = buffer();
        b.push(cmd(1));
        b.push(cmd(2));
        b.take_next();
        assert_eq!(b.take_timing().queue_at_consume, 2);
        b.take_next();
        b.take_next();
        assert_eq!(b.take_timing().queue_at_consume, 0);
    }
}
