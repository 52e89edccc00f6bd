//! Per-player input buffers: commands arrive in redundant, possibly reordered packets and
//! leave at exactly one per tick.

use crate::{Connection, ServerStats};
use bevy::prelude::*;
use sightline_net::RenetServer;
use sightline_protocol::{Channel, ClientDatagram, ServerDatagram, Wire};
use sightline_sim::{BotControlled, CurrentCmd, InputCmd, PlayerId, TickConfig};
use std::collections::VecDeque;

/// Most buffered input, in seconds of play; older commands beyond it are dropped.
pub const MAX_BUFFERED_SECONDS: f32 = 0.25;
/// For how long a missing command is covered by repeating the last one unchanged; after
/// that the repeat releases jump, fire and the other one-shot buttons.
pub const REPEAT_GRACE_SECONDS: f32 = 0.05;

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
        if let Some(cmd) = self.pending.pop_front() {
            self.last_simulated = cmd.seq;
            self.last_cmd = cmd;
            self.missing_streak = 0;
            return cmd;
        }
        self.missing_streak += 1;
        self.timing.repeats += 1;
        if self.missing_streak <= self.grace_ticks {
            if self.last_simulated > 0 {
                self.last_simulated += 1;
            }
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

    /// The timing report for a snapshot; the minimum starts afresh, the total goes on.
    pub fn take_timing(&mut self) -> InputTiming {
        let timing = self.timing;
        self.timing.min_queue = u8::MAX;
        timing
    }
}

/// Reads input packets into each player's buffer and answers clock-sync pings at once.
pub(crate) fn receive_datagrams(
    mut server: ResMut<RenetServer>,
    mut connections: Query<(&mut Connection, Option<&mut InputBuffer>)>,
    mut stats: ResMut<ServerStats>,
    time: Res<Time<Virtual>>,
) {
    for (mut conn, mut buffer) in &mut connections {
        while let Some(bytes) = server.receive_message(conn.client_id, Channel::Unreliable) {
            let packet = match ClientDatagram::decode(&bytes) {
                Ok(ClientDatagram::Input(p)) => p,
                Ok(ClientDatagram::Ping { client_time_us }) => {
                    // The simulation clock: snapshots are stamped on it too.
                    let pong = ServerDatagram::Pong {
                        client_time_us,
                        server_time_us: time.elapsed().as_micros() as u64,
                    };
                    server.send_message(conn.client_id, Channel::Unreliable, pong.encode());
                    continue;
                }
                Err(e) => {
                    conn.malformed += 1;
                    stats.malformed_packets += 1;
                    debug!("dropped a datagram from client {}: {e}", conn.client_id);
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
        // Within the grace each repeat stood in for the next command...
        assert_eq!(b.last_simulated(), 1 + grace as u32);
        // ...which is dropped when it arrives late; later ones are taken.
        assert!(!b.push(cmd(2)));
        assert!(b.push(cmd(2 + grace as u32)));
        assert_eq!(b.take_timing().repeats, grace as u32 + 1);
        assert_eq!(b.take_timing().repeats, grace as u32 + 1, "a running total");
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
    fn timing_reports_the_fewest_commands_waiting_since_the_last_report() {
        let mut b = buffer();
        for seq in 1..=3 {
            b.push(cmd(seq));
        }
        b.take_next();
        b.take_next();
        assert_eq!(b.take_timing().min_queue, 2);
        b.take_next();
        b.take_next();
        let t = b.take_timing();
        assert_eq!((t.min_queue, t.repeats), (0, 1));
    }
}
