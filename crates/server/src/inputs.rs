//! Per-player input buffers: commands arrive in redundant, possibly reordered packets and
//! leave at exactly one per tick (received by `crate::datagrams`).

use crate::catch_up::CatchUp;
use crate::connection::Connection;
use crate::stats::ServerStats;
use bevy::prelude::*;
use sightline_combat::ViewWindow;
use sightline_net::RenetServer;
use sightline_protocol::INPUT_BASE_SPAN;
use sightline_sim::{
    BotControlled, Buttons, CurrentCmd, Held, InputCmd, PlayerId, Tick, TickConfig,
};
use std::collections::VecDeque;

/// Most buffered input, in seconds of play; newer commands beyond it are refused, never
/// the older ones waiting (dropping those would leave a hole the server then fills with a
/// repeat, and the client's prediction would be wrong). A client at a few frames a second
/// sends a packet every few hundred milliseconds, and its buffer must bridge the gap.
pub const MAX_BUFFERED_SECONDS: f32 = 1.0;
/// For how long a missing command is covered by repeating the last one unchanged, when
/// the player cannot be held; after that the repeat releases jump, fire and the other
/// one-shot buttons.
pub const REPEAT_GRACE_SECONDS: f32 = 0.05;
/// For how long a missing command is waited for, the player [`Held`], within the
/// allowance: an outage of up to 150 ms (Wi-Fi's are 50-150 ms), which the client's
/// packets repeat their commands across ([`sightline_protocol::InputPacket`]). At 0.1 s
/// the 30 and 60 fps clients of the netcode report lost 3.5-4 commands a minute to
/// 60-140 ms outages, each a correction of late input.
pub const HOLD_GRACE_SECONDS: f32 = 0.15;
/// One tick in this many, on average, a player may spend held and not repaid. Each hold
/// leaves the client's commands one tick later than before until the server repays it
/// ([`InputBuffer::take_catch_up`]), which gives the allowance back; holds never repaid
/// are a client whose commands keep coming late, and after the allowance its gaps are
/// repeated over. A cheat withholding input so gains at most a 3 % slow motion, in
/// pauses no longer than [`HOLD_GRACE_SECONDS`]; withholding and then sending at once
/// gains pauses as long, each followed by as many ticks at twice the pace.
pub const HOLD_SHARE: u32 = 32;
/// Furthest a command's sequence number may run ahead of the last one simulated, in
/// seconds of ticks. An honest client is at most the buffer's limit
/// ([`MAX_BUFFERED_SECONDS`]) ahead; a jump further is refused, so a forged sequence
/// cannot skip the buffer ahead or run the counter into its limit.
pub const MAX_SEQ_AHEAD_SECONDS: f32 = 1.5;

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
    /// The server tick at which it arrived.
    arrived: u32,
}

/// How the buffer looked to the ticks since the last snapshot, reported to the client so
/// it can pace its sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputTiming {
    /// Fewest commands waiting when a tick took one (counting that one; 0 when a tick
    /// had to repeat). The minimum, not the latest, because starvation happens at the
    /// minimum.
    pub min_queue: u8,
    /// Commands, in all, the server could not run as sent: ticks in which it repeated
    /// the last one instead, and commands it gave up waiting for and skipped.
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
/// One command is taken per tick, so flooding cannot speed a player up. A missing command
/// is waited for a few ticks, within an allowance ([`HOLD_SHARE`]), and otherwise covered
/// by repeating the last one, so withholding input cannot slow a fall by more than the
/// allowance. The buffer is capped, so it cannot grow without bound.
#[derive(Component, Debug)]
pub struct InputBuffer {
    pending: VecDeque<Waiting>,
    cap: usize,
    grace_ticks: u32,
    hold_ticks: u32,
    max_ahead: u32,
    last_simulated: u32,
    last_cmd: InputCmd,
    last_ack_tick: Option<u32>,
    /// The tick commands pushed now arrive at ([`Self::note_arrival`]), and the tick the
    /// command last taken arrived at.
    arrival_tick: u32,
    last_arrival_tick: u32,
    missing_streak: u32,
    held_streak: u32,
    /// Holding allowance left, in 1/[`HOLD_SHARE`] ticks: each command taken earns one,
    /// each hold spends [`HOLD_SHARE`], up to [`HOLD_GRACE_SECONDS`]' worth.
    hold_credit: u32,
    hold_credit_cap: u32,
    holds: u32,
    /// Ticks held and not yet repaid ([`Self::take_catch_up`]), at most
    /// [`HOLD_GRACE_SECONDS`]' worth.
    owed: u32,
    /// Commands run as a tick's second, in all.
    catch_ups: u32,
    /// Whether this tick's second command was taken (at most one a tick).
    second_taken: bool,
    /// Newest snapshot the client acknowledged.
    pub ack_snapshot: u32,
    timing: InputTiming,
    /// The last [`INPUT_BASE_SPAN`] commands received, at their sequence modulo the span:
    /// what input packets are written against.
    received: Box<[InputCmd]>,
    /// The sequence of the command run as sent at each sequence modulo
    /// [`INPUT_BASE_SPAN`]: a command arriving behind the simulation that is not here was
    /// never run (a repeat stood in for it, it was skipped, or a full buffer let it go).
    ran: Box<[u32]>,
    /// Per sequence modulo [`INPUT_BASE_SPAN`], the sequence a repeat stood in for and
    /// the buttons that repeat held: what ran in a late command's place.
    stood_in: Box<[(u32, Buttons)]>,
    /// A weapon asked for in a command that was never run, to go with the next command
    /// run (0: none). Choosing a weapon is an intent, not a moment:
    /// a client at a few frames a second would otherwise press a key the server never
    /// saw, and its prediction would take it back.
    carried_slot: u8,
    /// Likewise the one-shot buttons ([`Buttons::ONE_SHOT`]) pressed in a command that
    /// was never run and not held by what ran in its place: a jump or a shot tapped at
    /// a few frames a second comes a little late rather than never.
    carried_presses: Buttons,
}

impl InputBuffer {
    /// An empty buffer sized for the tick rate.
    pub fn new(tick: TickConfig) -> Self {
        let hz = tick.tick_hz as f32;
        let hold_ticks = (HOLD_GRACE_SECONDS * hz).ceil() as u32;
        Self {
            pending: VecDeque::new(),
            cap: ((MAX_BUFFERED_SECONDS * hz).ceil() as usize).max(4),
            grace_ticks: (REPEAT_GRACE_SECONDS * hz).ceil() as u32,
            hold_ticks,
            max_ahead: (MAX_SEQ_AHEAD_SECONDS * hz).ceil() as u32,
            last_simulated: 0,
            last_cmd: InputCmd::default(),
            last_ack_tick: None,
            arrival_tick: 0,
            last_arrival_tick: 0,
            missing_streak: 0,
            held_streak: 0,
            hold_credit: hold_ticks * HOLD_SHARE,
            hold_credit_cap: hold_ticks * HOLD_SHARE,
            holds: 0,
            owed: 0,
            catch_ups: 0,
            second_taken: true,
            ack_snapshot: 0,
            timing: InputTiming::default(),
            received: vec![InputCmd::default(); INPUT_BASE_SPAN as usize].into_boxed_slice(),
            ran: vec![0; INPUT_BASE_SPAN as usize].into_boxed_slice(),
            stood_in: vec![(0, Buttons::default()); INPUT_BASE_SPAN as usize].into_boxed_slice(),
            carried_slot: 0,
            carried_presses: Buttons::default(),
        }
    }

    /// `cmd` with the weapon a late command asked for, when it asks for none itself (a
    /// newer choice of its own replaces the late one), and the presses late commands
    /// made.
    fn with_carried(&mut self, mut cmd: InputCmd) -> InputCmd {
        if cmd.weapon_slot == 0 {
            cmd.weapon_slot = self.carried_slot;
        }
        cmd.buttons = cmd.buttons.with(self.carried_presses);
        self.carried_slot = 0;
        self.carried_presses = Buttons::default();
        cmd
    }

    /// Notes what `cmd`, arriving after the simulation passed it and never run as sent,
    /// asked for that the server did not do: its weapon choice, and the one-shot buttons
    /// it pressed (not held in the command before it) that the repeat standing in for it
    /// did not hold. Once per command.
    fn carry_from_late(&mut self, cmd: &InputCmd) {
        let at = (cmd.seq % INPUT_BASE_SPAN) as usize;
        if self.ran[at] == cmd.seq {
            return;
        }
        self.ran[at] = cmd.seq;
        if cmd.weapon_slot != 0 {
            self.carried_slot = cmd.weapon_slot;
        }
        let before = self
            .received(cmd.seq.wrapping_sub(1))
            .map_or(Buttons::default(), |c| c.buttons);
        let (stood_seq, stood) = self.stood_in[at];
        let ran_in_place = if stood_seq == cmd.seq {
            stood
        } else {
            Buttons::default()
        };
        let missed = cmd.buttons.presses_after(before.with(ran_in_place));
        self.carried_presses = self.carried_presses.with(missed);
    }

    /// The received command numbered `seq`, while it is among the last
    /// [`INPUT_BASE_SPAN`] received; never for 0.
    pub fn received(&self, seq: u32) -> Option<&InputCmd> {
        let cmd = &self.received[(seq % INPUT_BASE_SPAN) as usize];
        (seq != 0 && cmd.seq == seq).then_some(cmd)
    }

    /// Adds a received command, sent in a packet that acknowledged the snapshot of
    /// `ack_tick` (`None`: no snapshot, or one the server cannot vouch for). A full
    /// buffer keeps what it holds and refuses a newer command; one older than everything
    /// waiting (it fills a hole) takes the place of the newest.
    pub fn push(&mut self, cmd: InputCmd, ack_tick: Option<u32>) -> Push {
        self.push_within(cmd, ack_tick, 0, 0)
    }

    /// [`Self::push`] when `owed` ticks are about to run before the next command is
    /// read (the server fell behind: it stood still, and the client's commands are ahead
    /// of what it simulated by that much more than the limits allow), after `silent` ticks'
    /// worth of time in which nothing came from the client (an outage: it went on making
    /// commands in real time, so they may lead by that much more, but the buffer holds no
    /// more for it).
    pub fn push_within(
        &mut self,
        cmd: InputCmd,
        ack_tick: Option<u32>,
        owed: u32,
        silent: u32,
    ) -> Push {
        let max_ahead = self.max_ahead.saturating_add(owed).saturating_add(silent);
        // No underflow: seq is above last_simulated when subtracted.
        if cmd.seq > self.last_simulated && cmd.seq - self.last_simulated > max_ahead {
            return Push::TooFarAhead;
        }
        // Kept as received, simulated or not: the client may write later packets
        // against any command the server acknowledges. A late copy of an older command
        // never replaces a newer one.
        let at = (cmd.seq % INPUT_BASE_SPAN) as usize;
        let slot = &mut self.received[at];
        if cmd.seq > slot.seq {
            *slot = cmd;
        }
        if cmd.seq <= self.last_simulated {
            // Behind the simulation and never run as sent: its choice of weapon and its
            // presses still count, once.
            self.carry_from_late(&cmd);
            return Push::Duplicate;
        }
        let at = match self.pending.binary_search_by_key(&cmd.seq, |w| w.cmd.seq) {
            Ok(_) => return Push::Duplicate,
            Err(at) => at,
        };
        if self.pending.len() >= self.cap.saturating_add(owed as usize) {
            if at == self.pending.len() {
                return Push::Full;
            }
            self.pending.pop_back();
        }
        self.pending.insert(
            at,
            Waiting {
                cmd,
                ack_tick,
                arrived: self.arrival_tick,
            },
        );
        Push::Queued
    }

    /// The command for this tick: the next in sequence; `None` to hold the player this
    /// tick and wait for it; or a repeat of the last.
    ///
    /// A short gap (up to [`HOLD_GRACE_SECONDS`]) is waited out while the holding allowance
    /// lasts: the missing command runs when it comes, after the one before it, just as the
    /// client predicted. Without allowance the repeat stands in for the next command: that
    /// command's sequence counts as simulated, and when it arrives late it is dropped, so
    /// the client's commands and the server's ticks stay paired (when the late command
    /// equals the repeat the client's prediction still matches exactly). After a longer gap
    /// the client is treated as stalled and its commands are taken as they come. A command
    /// missing before others that came is waited for the same way, and then skipped.
    pub fn take_next(&mut self) -> Option<InputCmd> {
        self.second_taken = false;
        let waiting = self.pending.len().min(u8::MAX as usize) as u8;
        // Commands come in sequence; one missing before those waiting is a gap to wait
        // for like an empty buffer (a later packet may still bring it).
        let expected = self.last_simulated.saturating_add(1);
        let gap =
            self.last_simulated > 0 && self.pending.front().is_some_and(|w| w.cmd.seq > expected);
        if !gap && let Some(w) = self.pending.pop_front() {
            self.timing.min_queue = self.timing.min_queue.min(waiting);
            return Some(self.took(w));
        }
        self.timing.min_queue = 0;
        // Holding needs a command to wait after (before the first, the player falls), and
        // once a gap is being repeated over, the repeats go on standing in.
        let may_hold = self.last_simulated > 0
            && self.hold_credit >= HOLD_SHARE
            && self.held_streak < self.hold_ticks
            && self.missing_streak == 0;
        if may_hold {
            self.hold_credit -= HOLD_SHARE;
            self.held_streak += 1;
            self.holds = self.holds.saturating_add(1);
            self.owed = (self.owed + 1).min(self.hold_ticks);
            return None;
        }
        if gap && let Some(w) = self.pending.pop_front() {
            // Waited long enough: the missing commands are lost (older than any packet
            // still repeats). They count with the repeats, as commands not run as sent,
            // and repay as many held ticks: the commands after them are that much sooner.
            let skipped = w.cmd.seq.saturating_sub(expected);
            self.timing.repeats = self.timing.repeats.wrapping_add(skipped);
            self.owed = self.owed.saturating_sub(skipped);
            return Some(self.took(w));
        }
        self.missing_streak = self.missing_streak.saturating_add(1);
        // A running total on the wire; the client takes differences with wrapping_sub.
        self.timing.repeats = self.timing.repeats.wrapping_add(1);
        if self.missing_streak <= self.grace_ticks {
            // Saturates rather than overflows: a sequence near the limit then simply
            // stops advancing (it takes 388 days of 128 Hz play to get there honestly).
            let stand_in = self.with_carried(self.last_cmd);
            if self.last_simulated > 0 {
                self.last_simulated = self.last_simulated.saturating_add(1);
                let seq = self.last_simulated;
                self.stood_in[(seq % INPUT_BASE_SPAN) as usize] = (seq, stand_in.buttons);
            }
            Some(stand_in)
        } else {
            Some(self.with_carried(self.last_cmd.repeated()))
        }
    }

    /// A second command for this tick, after [`Self::take_next`] took one: the next in
    /// sequence, while ticks held are owed and another command would still be left
    /// waiting for the next tick. Each hold left every later command of the player's a
    /// tick later than the client meant; running two in a tick repays one, so after an
    /// outage the buffer is back to its depth within as many ticks as were held. Never
    /// more than one a tick, and never to run the buffer dry: a repaid tick must not cost
    /// the next one a hold. A repaid hold gives its holding allowance back: the allowance
    /// bounds the slow motion of holds never repaid, and a repaid one slowed nobody.
    pub fn take_catch_up(&mut self) -> Option<InputCmd> {
        let expected = self.last_simulated.saturating_add(1);
        let ready = self.pending.len() >= 2 && self.pending[0].cmd.seq == expected;
        if self.second_taken || self.owed == 0 || self.missing_streak > 0 || !ready {
            return None;
        }
        self.second_taken = true;
        let w = self.pending.pop_front()?;
        self.owed -= 1;
        self.catch_ups = self.catch_ups.saturating_add(1);
        // A repaid hold slowed nobody down: its allowance comes back (less the share the
        // command itself earns in `took`).
        self.hold_credit = (self.hold_credit + HOLD_SHARE - 1).min(self.hold_credit_cap);
        Some(self.took(w))
    }

    /// Ticks held and not yet repaid.
    pub fn owed(&self) -> u32 {
        self.owed
    }

    /// Commands run as a tick's second, repaying held ticks, in all.
    pub fn catch_ups(&self) -> u32 {
        self.catch_ups
    }

    /// Makes a waiting command the one simulated.
    fn took(&mut self, w: Waiting) -> InputCmd {
        self.ran[(w.cmd.seq % INPUT_BASE_SPAN) as usize] = w.cmd.seq;
        self.last_simulated = w.cmd.seq;
        self.last_cmd = w.cmd;
        self.last_ack_tick = w.ack_tick;
        self.last_arrival_tick = w.arrived;
        self.missing_streak = 0;
        self.held_streak = 0;
        self.hold_credit = (self.hold_credit + 1).min(self.hold_credit_cap);
        self.with_carried(w.cmd)
    }

    /// Commands, in all, this player's buffer could not run as sent (repeated or
    /// skipped).
    pub fn repeats(&self) -> u32 {
        self.timing.repeats
    }

    /// Ticks this player was held waiting for a command, in all.
    pub fn holds(&self) -> u32 {
        self.holds
    }

    /// Notes the server tick at which the commands pushed from now on arrive (the tick
    /// about to run when their packet is read).
    pub fn note_arrival(&mut self, tick: u32) {
        self.arrival_tick = tick;
    }

    /// The tick at which the command last taken arrived: lag compensation allows its view
    /// time a round trip and the interpolation delay before that, however long it then
    /// waited in this buffer (a hold on a missing command before it delays every later
    /// one).
    pub fn last_arrival_tick(&self) -> u32 {
        self.last_arrival_tick
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
/// bounds the view time its shots may claim; or holds the player for the tick. A player
/// owed held ticks may get a second command ([`InputBuffer::take_catch_up`]).
pub(crate) fn consume_inputs(
    mut players: Query<
        (
            &PlayerId,
            &Connection,
            &mut InputBuffer,
            &mut CurrentCmd,
            &mut Held,
            &mut ViewWindow,
            &mut CatchUp,
        ),
        Without<BotControlled>,
    >,
    mut stats: ResMut<ServerStats>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    server: Res<RenetServer>,
) {
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    for (_, conn, mut buffer, mut current, mut held, mut window, mut catch_up) in order {
        catch_up.0 = None;
        let previous_view = (buffer.last_simulated() > 0).then(|| current.0.view_time());
        let repeats_before = buffer.repeats();
        let Some(cmd) = buffer.take_next() else {
            held.set_if_neq(Held(true));
            stats.holds = stats.holds.saturating_add(1);
            continue;
        };
        let repeated = buffer.repeats().wrapping_sub(repeats_before);
        stats.repeats = stats.repeats.saturating_add(u64::from(repeated));
        held.set_if_neq(Held(false));
        let rtt = server.rtt(conn.client_id) as f32;
        let window_after = |buffer: &InputBuffer, previous_view| {
            ViewWindow::new(
                tick.0,
                buffer.last_arrival_tick(),
                buffer.last_ack_tick(),
                previous_view,
                rtt,
                config.tick_hz,
            )
        };
        current.0 = sanitized_or_repeat(cmd, &current.0, &mut stats);
        *window = window_after(&buffer, previous_view);
        if let Some(second) = buffer.take_catch_up() {
            let second = sanitized_or_repeat(second, &current.0, &mut stats);
            let second_window = window_after(&buffer, Some(current.0.view_time()));
            catch_up.0 = Some((second, second_window));
        }
    }
}

/// `cmd` as the sanitizer passes it, or, where it refuses it (counted as malformed), a
/// repeat of `last`.
fn sanitized_or_repeat(cmd: InputCmd, last: &InputCmd, stats: &mut ServerStats) -> InputCmd {
    cmd.sanitized().unwrap_or_else(|_| {
        stats.malformed_packets = stats.malformed_packets.saturating_add(1);
        last.repeated()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::Buttons;

    fn cmd(seq: u32) -> InputCmd {
        InputCmd {
            forward: 1.0,
            buttons: Buttons::JUMP.with(Buttons::FIRE),
            ..sightline_sim::test_support::cmd(seq)
        }
    }

    fn buffer() -> InputBuffer {
        InputBuffer::new(TickConfig::new(128, 64).unwrap())
    }

    #[test]
    fn received_commands_are_kept_for_packets_to_be_written_against() {
        let mut b = buffer();
        for seq in 1..=200 {
            b.push(cmd(seq), None);
            if seq % 2 == 0 {
                b.take_next();
            }
        }
        assert_eq!(b.received(200).map(|c| c.seq), Some(200));
        assert_eq!(
            b.received(73).map(|c| c.seq),
            Some(73),
            "the last 128 are held"
        );
        assert_eq!(b.received(72), None, "an older one has made way");
        assert_eq!(b.received(0), None);
        // A late copy of an older command never takes a newer one's place.
        b.push(cmd(72), None);
        assert_eq!(b.received(200).map(|c| c.seq), Some(200));
        assert_eq!(b.received(72), None);
    }

    #[test]
    fn ticks_about_to_run_after_a_stall_widen_the_buffer_s_limits() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        let far = 1 + (MAX_SEQ_AHEAD_SECONDS * 128.0) as u32 + 64;
        assert_eq!(b.push(cmd(far), None), Push::TooFarAhead);
        // The server stood still half a second: 64 ticks are about to run.
        assert_eq!(b.push_within(cmd(far), None, 64, 0), Push::Queued);
        // And it holds that much more than its usual second of commands.
        for seq in 2..2 + 128 + 64 {
            assert_eq!(b.push_within(cmd(seq), None, 64, 0), Push::Queued, "{seq}");
        }
        assert_eq!(b.push_within(cmd(far - 1), None, 64, 0), Push::Full);
    }

    #[test]
    fn a_client_back_from_an_outage_leads_by_the_silence_but_queues_no_more() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        // Three seconds without a word: its newest command is 384 ticks on.
        let back = 1 + 3 * 128;
        assert_eq!(b.push(cmd(back), None), Push::TooFarAhead);
        assert_eq!(b.push_within(cmd(back), None, 0, 3 * 128), Push::Queued);
        // The buffer's limit is not widened: a second of commands, then full.
        for seq in back - 127..back {
            assert_eq!(b.push_within(cmd(seq), None, 0, 3 * 128), Push::Queued);
        }
        assert_eq!(b.push_within(cmd(back + 1), None, 0, 3 * 128), Push::Full);
    }

    #[test]
    fn commands_leave_in_sequence_order_once_each() {
        let mut b = buffer();
        for seq in [3, 1, 2, 3, 2] {
            b.push(cmd(seq), None);
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.take_next().unwrap().seq, 1);
        assert_eq!(b.take_next().unwrap().seq, 2);
        assert_eq!(
            b.push(cmd(2), None),
            Push::Duplicate,
            "an already simulated command"
        );
        assert_eq!(b.take_next().unwrap().seq, 3);
        assert_eq!(b.last_simulated(), 3);
    }

    #[test]
    fn a_missing_command_is_waited_for_within_the_allowance() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        let hold = (HOLD_GRACE_SECONDS * 128.0).ceil() as u32;
        for _ in 0..hold {
            assert_eq!(b.take_next(), None, "held, waiting for command 2");
        }
        assert_eq!(b.holds(), hold);
        // The late command runs after its predecessor, as the client predicted.
        assert_eq!(b.push(cmd(2), None), Push::Queued);
        assert_eq!(b.take_next().unwrap().seq, 2);
        let t = b.take_timing();
        assert_eq!(
            (t.min_queue, t.repeats),
            (0, 0),
            "holds starve but repeat nothing"
        );
        // The allowance is spent: it comes back at one tick in HOLD_SHARE.
        assert!(b.take_next().is_some(), "a repeat, not another hold");
        assert_eq!(b.take_timing().repeats, 1);
        assert_eq!(b.last_simulated(), 3, "the repeat stood in for command 3");
        for seq in 4..4 + HOLD_SHARE {
            b.push(cmd(seq), None);
            assert_eq!(b.take_next().unwrap().seq, seq);
        }
        assert_eq!(b.take_next(), None, "one hold earned back");
        assert!(b.take_next().is_some(), "and only one");
    }

    #[test]
    fn held_ticks_are_repaid_two_commands_a_tick_never_running_the_buffer_dry() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        // 50 ms dark: held six ticks, waiting for command 2.
        for _ in 0..6 {
            assert_eq!(b.take_next(), None);
        }
        assert_eq!((b.owed(), b.take_catch_up()), (6, None), "nothing to run");
        // The commands made meanwhile come at once, with one more.
        for seq in 2..=9 {
            b.push(cmd(seq), None);
        }
        let mut ran = Vec::new();
        for _ in 0..5 {
            ran.push(b.take_next().unwrap().seq);
            ran.extend(b.take_catch_up().map(|c| c.seq));
        }
        // Two a tick while waiting commands allow and leave one for the next tick:
        // 2 3, 4 5, 6 7, then with one left waiting each tick takes one: 8, 9.
        assert_eq!(ran, [2, 3, 4, 5, 6, 7, 8, 9], "in sequence, once each");
        assert_eq!((b.owed(), b.catch_ups()), (3, 3));
        assert!(b.is_empty());
        // The rest is repaid when commands pile up again, one a tick.
        for seq in 10..=14 {
            b.push(cmd(seq), None);
        }
        let credit = b.hold_credit;
        assert_eq!(b.take_next().unwrap().seq, 10);
        assert_eq!(b.take_catch_up().unwrap().seq, 11);
        assert_eq!(b.take_catch_up(), None, "never more than two a tick");
        assert_eq!((b.owed(), b.catch_ups(), b.len()), (2, 4, 3));
        // A repaid hold slowed nobody: its allowance is back, besides what each
        // command earns.
        assert_eq!(b.hold_credit, credit + 2 + (HOLD_SHARE - 1));
    }

    #[test]
    fn nothing_is_owed_for_repeats_and_a_skipped_gap_repays_its_length() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        b.hold_credit = 0;
        // No allowance: the missing command is repeated over, which owes nothing.
        assert!(b.take_next().is_some());
        assert_eq!(b.owed(), 0);
        for seq in 3..=6 {
            b.push(cmd(seq), None);
        }
        assert_eq!(b.take_next().unwrap().seq, 3);
        assert_eq!(b.take_catch_up(), None);

        // Held for a command missing before others, then skipped past: the commands
        // after the gap are as early as if the held ticks had been repaid.
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        for seq in 5..=8 {
            b.push(cmd(seq), None);
        }
        let hold = (HOLD_GRACE_SECONDS * 128.0).ceil() as u32;
        for _ in 0..hold {
            assert_eq!(b.take_next(), None);
        }
        assert_eq!(b.take_next().unwrap().seq, 5, "2 to 4 given up");
        assert_eq!(b.owed(), hold - 3);
    }

    #[test]
    fn a_command_missing_before_later_ones_is_waited_for_then_skipped() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        b.push(cmd(3), None);
        assert_eq!(b.take_next(), None, "waiting for command 2");
        b.push(cmd(2), None);
        assert_eq!(b.take_next().unwrap().seq, 2, "which came");
        assert_eq!(b.take_next().unwrap().seq, 3);
        b.push(cmd(6), None);
        let hold = (HOLD_GRACE_SECONDS * 128.0).ceil() as usize;
        let mut held = 0;
        let next = loop {
            match b.take_next() {
                None => held += 1,
                Some(c) => break c,
            }
            assert!(held <= hold, "held longer than the grace");
        };
        assert!(held > 0);
        assert_eq!(next.seq, 6, "4 and 5 given up");
        assert_eq!(b.take_timing().repeats, 2, "and counted");
    }

    #[test]
    fn a_missing_command_repeats_the_last_then_releases_buttons() {
        let mut b = buffer();
        b.push(cmd(1), None);
        b.take_next();
        b.hold_credit = 0;
        let grace = (REPEAT_GRACE_SECONDS * 128.0).ceil() as usize;
        for _ in 0..grace {
            let r = b.take_next().unwrap();
            assert_eq!(r.buttons, cmd(1).buttons);
            assert_eq!(r.forward, 1.0);
        }
        let r = b.take_next().unwrap();
        assert_eq!(r.buttons, Buttons::default());
        assert_eq!(
            r.forward, 1.0,
            "movement keeps going: falling cannot be paused"
        );
        // Within the grace each repeat stood in for the next command...
        assert_eq!(b.last_simulated(), 1 + grace as u32);
        // ...which is dropped when it arrives late; later ones are taken. A weapon it
        // chose goes with the next command run: the key was pressed.
        let late = InputCmd {
            weapon_slot: 3,
            ..cmd(2)
        };
        assert_eq!(b.push(late, None), Push::Duplicate);
        assert_eq!(b.push(late, None), Push::Duplicate, "a second copy");
        assert_eq!(b.push(cmd(2 + grace as u32), None), Push::Queued);
        assert_eq!(b.take_timing().repeats, grace as u32 + 1);
        assert_eq!(b.take_timing().repeats, grace as u32 + 1, "a running total");
        assert_eq!(b.take_next().map(|c| c.weapon_slot), Some(3));
        assert_eq!(b.take_next().map(|c| c.weapon_slot), Some(0), "once");
        // Later copies of it carry nothing more, nor does a late copy of one that ran.
        assert_eq!(b.push(late, None), Push::Duplicate);
        let ran = InputCmd {
            weapon_slot: 2,
            ..cmd(2 + grace as u32)
        };
        assert_eq!(b.push(ran, None), Push::Duplicate);
        b.push(cmd(3 + grace as u32), None);
        assert_eq!(b.take_next().map(|c| c.weapon_slot), Some(0));
    }

    #[test]
    fn a_tap_in_a_command_a_repeat_stood_in_for_goes_with_the_next_command_run() {
        let plain = |seq: u32, buttons: Buttons| InputCmd {
            buttons,
            ..cmd(seq)
        };
        let mut b = buffer();
        // Runs a repeat standing in for the next command (no holding allowance left).
        let stand_in = |b: &mut InputBuffer| {
            b.hold_credit = 0;
            let before = b.last_simulated();
            let repeat = b.take_next().expect("a repeat, not a hold");
            assert_eq!(b.last_simulated(), before + 1);
            repeat
        };
        b.push(plain(1, Buttons::default()), None);
        b.take_next();
        // Repeats of 1 (no buttons) stand in for 2 and 3, which come late: 2 tapped fire
        // and jump, 3 let go again.
        stand_in(&mut b);
        stand_in(&mut b);
        let tap = Buttons::FIRE.with(Buttons::JUMP);
        assert_eq!(b.push(plain(2, tap), None), Push::Duplicate);
        assert_eq!(b.push(plain(3, Buttons::default()), None), Push::Duplicate);
        assert_eq!(
            b.push(plain(2, tap), None),
            Push::Duplicate,
            "a second copy"
        );
        b.push(plain(4, Buttons::CROUCH), None);
        b.push(plain(5, Buttons::default()), None);
        let next = b.take_next().unwrap();
        assert_eq!((next.seq, next.buttons), (4, Buttons::CROUCH.with(tap)));
        assert_eq!(b.take_next().unwrap().buttons, Buttons::default(), "once");
        // Fire held through a gap: the repeat (of 6) held it too, so the late 7 pressed
        // nothing the server missed; nor is held crouch a press.
        b.push(plain(6, Buttons::FIRE.with(Buttons::CROUCH)), None);
        b.take_next();
        assert_eq!(
            stand_in(&mut b).buttons,
            Buttons::FIRE.with(Buttons::CROUCH)
        );
        b.push(plain(7, Buttons::FIRE.with(Buttons::CROUCH)), None);
        b.push(plain(8, Buttons::default()), None);
        assert_eq!(b.take_next().unwrap().buttons, Buttons::default());
        // A press late behind a repeat that held it (a tap between two held shots) is not
        // run twice.
        b.push(plain(9, Buttons::FIRE), None);
        b.take_next();
        stand_in(&mut b);
        stand_in(&mut b);
        b.push(plain(10, Buttons::default()), None);
        b.push(plain(11, Buttons::FIRE), None);
        b.push(plain(12, Buttons::default()), None);
        let next = b.take_next().unwrap();
        assert_eq!((next.seq, next.buttons), (12, Buttons::default()));
    }

    #[test]
    fn flooding_fills_the_buffer_but_still_yields_one_command_per_tick() {
        let mut b = buffer();
        let results: Vec<Push> = (1..=1000).map(|seq| b.push(cmd(seq), None)).collect();
        assert_eq!(b.len(), 128, "1 s at 128 Hz");
        assert!(results[128..192].iter().all(|r| *r == Push::Full));
        // The commands waiting are never dropped for newer ones: they leave in order.
        assert_eq!(b.take_next().unwrap().seq, 1);
        assert_eq!(b.take_next().unwrap().seq, 2);
        assert_eq!(b.push(cmd(129), None), Push::Queued, "room again");
        assert_eq!(b.push(cmd(131), None), Push::Queued);
        assert_eq!(b.push(cmd(132), None), Push::Full);
        // A late command that fills a hole takes the newest one's place.
        assert_eq!(b.push(cmd(130), None), Push::Queued);
        let order: Vec<u32> = (0..128).map(|_| b.take_next().unwrap().seq).collect();
        assert_eq!(order, (3..=130).collect::<Vec<_>>());
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
        b.hold_credit = 0;
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
            b.push(cmd(1 + 193), None),
            Push::TooFarAhead,
            "1.5 s at 128 Hz"
        );
        assert_eq!(b.push(cmd(1 + 192), None), Push::Queued);
        // A client that reached the end of the sequence honestly: repeats saturate.
        let mut end = buffer();
        end.last_simulated = u32::MAX - 1;
        end.hold_credit = 0;
        assert_eq!(end.push(cmd(u32::MAX), Some(7)), Push::Queued);
        assert_eq!(end.take_next().unwrap().seq, u32::MAX);
        assert_eq!(end.last_ack_tick(), Some(7));
        for _ in 0..100 {
            end.take_next();
        }
        assert_eq!(end.last_simulated(), u32::MAX);
    }
}
