//! Sampling one command per tick, and sending each frame's new commands with every
//! earlier one the server has not yet acknowledged, within a redundancy window.

use crate::LatestSnapshot;
use crate::pacing::InputPacing;
use crate::sets::playing;
use bevy::app::RunFixedMainLoopSystems;
use bevy::prelude::*;
use sightline_movement::MoveParams;
use sightline_net::RenetClient;
use sightline_prediction::Predicted;
use sightline_protocol::cmds::{follow_view, view_anchor};
use sightline_protocol::{
    Channel, ClientDatagram, INPUT_BASE_SPAN, InputPacket, MAX_PACKET_CMDS, Wire,
};
use sightline_sim::{Buttons, CurrentCmd, InputCmd, Tick, TickConfig};
use sightline_sim::{SessionAppExt, SimSet};
use std::collections::VecDeque;

/// The player's input as last sampled from keyboard and mouse: what the next command
/// carries.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct LocalInput {
    /// Forward (+) or back (-), -1..=1.
    pub forward: f32,
    /// Right (+) or left (-), -1..=1.
    pub right: f32,
    /// View yaw, radians.
    pub yaw: f32,
    /// View pitch, radians.
    pub pitch: f32,
    /// Buttons held.
    pub buttons: sightline_sim::Buttons,
    /// Weapon slot asked for (0 = keep).
    pub weapon_slot: u8,
    /// One-shot buttons ([`LocalInput::LATCHED`]) pressed since the last command was
    /// sampled, whether still held or not: a tap that falls between two samples (a quick
    /// one, or a low frame rate) still reaches the next command. Set by
    /// [`LocalInput::press`]; the command that carries them clears them.
    pub pressed: sightline_sim::Buttons,
    /// A weapon slot asked for since the last command (0: none), likewise.
    pub pressed_slot: u8,
}

impl LocalInput {
    /// The buttons a press of which is kept until a command carries it: the one-shot
    /// ones (jump, fire, alternate fire, reload). Crouch is held, not pressed.
    pub const LATCHED: sightline_sim::Buttons = sightline_sim::Buttons::ONE_SHOT;

    /// Notes buttons and a weapon slot (0: none) seen pressed, to reach the next command
    /// even if released before it is sampled.
    pub fn press(&mut self, buttons: sightline_sim::Buttons, slot: u8) {
        self.pressed = self
            .pressed
            .with(sightline_sim::Buttons(buttons.0 & Self::LATCHED.0));
        if slot != 0 {
            self.pressed_slot = slot;
        }
    }

    /// What the next command carries, the buttons held and those pressed since the last
    /// command, and the weapon slot; clears the presses it takes.
    pub fn take(&mut self) -> (sightline_sim::Buttons, u8) {
        let buttons = self.buttons.with(self.pressed);
        let slot = if self.weapon_slot != 0 {
            self.weapon_slot
        } else {
            self.pressed_slot
        };
        self.pressed = sightline_sim::Buttons::default();
        self.pressed_slot = 0;
        (buttons, slot)
    }
}

/// Shortest redundancy window: a packet repeats at least this much recent input, so an
/// outage of up to this long (Wi-Fi's are 50-150 ms) loses no command for good, however
/// high the frame rate. At 0.1 s a 144 fps client lost 14 commands a minute to 60-140 ms
/// outages at 5 % (each a correction); at 0.15 s it loses 2, for 4.7 kB/s more upstream.
pub const MIN_REDUNDANCY_SECONDS: f64 = 0.15;
/// The window also spans this many frames, so at low frame rates a lost packet's
/// commands still ride in the next ones after a run of seven losses (bursty loss comes
/// in runs: with runs of three on average, one in sixteen is eight or longer).
pub const REDUNDANCY_FRAMES: f64 = 8.0;

/// Commands kept for sending: more than one packet holds, for a frame so long (up to half
/// a second, the most a frame catches up) that its ticks outnumber a packet's commands.
const KEPT_CMDS: usize = 2 * MAX_PACKET_CMDS;

/// The most recent commands, newest last, the next sequence number, and what was sent.
#[derive(Resource, Debug, Default)]
pub struct InputHistory {
    recent: VecDeque<InputCmd>,
    last_seq: u32,
    /// Newest sequence already sent.
    sent_seq: u32,
    /// Input packets sent, and their encoded bytes (the datagram renet carries, before
    /// its and netcode's headers).
    packets_sent: (u64, u64),
    /// Frame time, smoothed, seconds: how far apart packets leave.
    frame_seconds: f64,
    /// Packets [`CommandRate`] allows now: a share of one, earned as time passes.
    send_credit: f64,
    /// The newest command the server is known to have received (0: none yet): what
    /// packets are written against.
    base_seq: u32,
    /// The newest command whose view time was not held from the one before it, which
    /// the next command's is predicted from ([`view_anchor`]).
    view_anchor: Option<InputCmd>,
    /// The snapshot last learnt from: its number, the newest command it says was
    /// simulated, and the running count of commands repeated or skipped.
    last_report: Option<(u32, u32, u32)>,
    /// A weapon chosen in a command never sent, for the next command recorded (0: none).
    carried_slot: u8,
    /// Likewise the one-shot buttons pressed in commands never sent.
    carried_presses: Buttons,
}

/// `cl_cmdrate`: at most this many input packets a second (0: one every frame that made
/// new commands). A packet carries every command not yet sent, so a lower rate costs
/// input latency (half a packet interval on average), never commands.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandRate(pub u32);

impl CommandRate {
    /// The fewest packets a second a non-zero rate means.
    pub const MIN: u32 = 10;

    /// One packet per two ticks at the default 128 Hz, as Source's default caps a fast
    /// client: a 144 fps client sent a packet for nearly every tick (114 a second), each
    /// paying 47 bytes of UDP/IP and netcode headers and repeating the same redundancy
    /// window, for about 4 ms less input delay on average. At 64 frames a second and
    /// below nothing changes.
    pub const DEFAULT: Self = Self(64);

    /// Seconds between packets; 0 for one every frame.
    pub fn interval(self) -> f64 {
        match self.0 {
            0 => 0.0,
            n => 1.0 / f64::from(n.max(Self::MIN)),
        }
    }
}

impl Default for CommandRate {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl InputHistory {
    /// Stamps a command with the next sequence number and remembers it, with what
    /// commands never sent carried to it ([`Self::carry_unsent_choice`]). A command that
    /// does not shoot has the view time cheapest to send within two ticks of the moment
    /// drawn ([`follow_view`]).
    pub fn record(&mut self, mut cmd: InputCmd, client_tick: u32) -> InputCmd {
        if cmd.weapon_slot == 0 {
            cmd.weapon_slot = self.carried_slot;
        }
        cmd.buttons = cmd.buttons.with(self.carried_presses);
        self.carried_slot = 0;
        self.carried_presses = Buttons::default();
        self.last_seq += 1;
        cmd.seq = self.last_seq;
        cmd.client_tick = client_tick;
        if let Some(prev) = self.recent.back() {
            let anchor = self.view_anchor.unwrap_or(*prev);
            follow_view(&anchor, prev, &mut cmd);
            self.view_anchor = Some(*view_anchor(&anchor, prev, &cmd));
        }
        self.recent.push_back(cmd);
        if self.recent.len() > KEPT_CMDS {
            self.recent.pop_front();
        }
        cmd
    }

    /// A weapon chosen, and the one-shot buttons pressed ([`Buttons::ONE_SHOT`]: a jump
    /// or a shot tapped), in commands the server already stood in for (at or before
    /// `acked_seq`, the newest it counts as simulated) before they were ever sent: at a
    /// few frames a second a frame's commands can fall behind the server's repeats. They
    /// are never sent, so what they asked for moves to the newest command, when that is
    /// still to go (its own choice of weapon first), or else to the next one recorded;
    /// prediction then follows the server's snapshots and weapon check.
    pub fn carry_unsent_choice(&mut self, acked_seq: u32) {
        let sent = self.sent_seq;
        let mut slot = 0;
        let mut presses = Buttons::default();
        let mut before = Buttons::default();
        for c in &self.recent {
            if c.seq > sent && c.seq <= acked_seq {
                if c.weapon_slot != 0 {
                    slot = c.weapon_slot;
                }
                presses = presses.with(c.buttons.presses_after(before));
            }
            before = c.buttons;
        }
        if slot == 0 && presses == Buttons::default() {
            return;
        }
        match self.recent.back_mut() {
            Some(newest) if newest.seq > acked_seq => {
                if newest.weapon_slot == 0 {
                    newest.weapon_slot = slot;
                }
                newest.buttons = newest.buttons.with(presses);
            }
            _ => {
                self.carried_slot = slot;
                self.carried_presses = self.carried_presses.with(presses);
            }
        }
    }

    /// Learns from a snapshot (its number, the newest command simulated and the running
    /// count of commands repeated or skipped) which command the server surely received:
    /// the newest simulated, when nothing was repeated or skipped since the snapshot last
    /// learnt from. Otherwise it may be one the server stood in for, never having had it.
    pub fn note_snapshot(&mut self, seq: u32, ack_input_seq: u32, repeated: u32) {
        if let Some((last_seq, last_ack, last_repeated)) = self.last_report {
            if seq <= last_seq {
                return;
            }
            if repeated == last_repeated && ack_input_seq > last_ack {
                self.base_seq = ack_input_seq;
            }
        }
        self.last_report = Some((seq, ack_input_seq, repeated));
    }

    /// The command packets are written against, while the server still holds it (within
    /// [`INPUT_BASE_SPAN`] of the newest sent) and so do we.
    fn base(&self) -> Option<&InputCmd> {
        if self.base_seq == 0 || self.last_seq.wrapping_sub(self.base_seq) >= INPUT_BASE_SPAN {
            return None;
        }
        self.recent.iter().rev().find(|c| c.seq == self.base_seq)
    }

    /// The packets a frame sends when the newest command sent before it was `sent_seq`
    /// ([`Self::sent_seq`]): one ending with the newest command (`packet_through`), its
    /// window widened to every command not sent yet, and before it, when the frame made
    /// more new commands than a packet carries, packets of the older new ones.
    pub fn packets(
        &self,
        sent_seq: u32,
        ack_snapshot: u32,
        acked_seq: u32,
        window: usize,
    ) -> Vec<InputPacket> {
        let unsent = self.last_seq.saturating_sub(sent_seq) as usize;
        let window = window.max(unsent);
        let mut packets = Vec::new();
        let mut newest = self.last_seq;
        while newest > sent_seq.max(acked_seq) {
            let cmds = self.cmds_through(newest, acked_seq, window);
            let Some(p) = self.packet_of(ack_snapshot, acked_seq, &cmds) else {
                break;
            };
            packets.push(p);
            newest = cmds.last().map_or(0, |c| c.seq).saturating_sub(1);
        }
        packets.reverse();
        packets
    }

    /// The commands up to `newest`: that one first, then each earlier one that the server
    /// has not simulated (`acked_seq` is the newest it has), up to `window` commands in
    /// all (and at most [`MAX_PACKET_CMDS`]).
    fn cmds_through(&self, newest: u32, acked_seq: u32, window: usize) -> Vec<InputCmd> {
        let window = window.clamp(1, MAX_PACKET_CMDS);
        self.recent
            .iter()
            .rev()
            .skip_while(|c| c.seq > newest)
            .enumerate()
            .take_while(|(i, c)| *i == 0 || (c.seq > acked_seq && *i < window))
            .map(|(_, c)| *c)
            .collect()
    }

    /// A packet of `cmds` (newest first), acknowledging snapshot `ack_snapshot` (which
    /// says `acked_seq` was simulated), written against the base when it is older than all
    /// of them.
    fn packet_of(
        &self,
        ack_snapshot: u32,
        acked_seq: u32,
        cmds: &[InputCmd],
    ) -> Option<InputPacket> {
        let oldest = cmds.last()?.seq;
        let base = self.base().filter(|b| b.seq < oldest);
        Some(InputPacket::new(ack_snapshot, acked_seq, base, cmds))
    }

    #[cfg(test)]
    fn packet_through(
        &self,
        newest: u32,
        ack_snapshot: u32,
        acked_seq: u32,
        window: usize,
    ) -> Option<InputPacket> {
        let cmds = self.cmds_through(newest, acked_seq, window);
        self.packet_of(ack_snapshot, acked_seq, &cmds)
    }

    /// Commands a packet repeats: [`MIN_REDUNDANCY_SECONDS`] or [`REDUNDANCY_FRAMES`]
    /// frames of them, whichever is more.
    pub fn window(&self, tick_hz: u32) -> usize {
        let seconds = MIN_REDUNDANCY_SECONDS.max(REDUNDANCY_FRAMES * self.frame_seconds);
        ((seconds * tick_hz as f64).ceil() as usize).clamp(1, MAX_PACKET_CMDS)
    }

    /// Notes a frame's length (seconds): a longer frame widens the window at once, a
    /// shorter one narrows it over a few dozen frames; a stall of a second counts as one.
    pub fn note_frame(&mut self, seconds: f64) {
        let seconds = seconds.clamp(0.0, 1.0);
        self.frame_seconds = seconds.max(self.frame_seconds * 0.9 + seconds * 0.1);
    }

    /// Whether a frame of `seconds` may send a packet at `rate`: it earns its share of a
    /// packet, and sends once a whole one is earned, so 30 a second at 60 frames a second
    /// is every other frame exactly.
    pub fn may_send(&mut self, seconds: f64, rate: CommandRate) -> bool {
        let interval = rate.interval();
        if interval == 0.0 {
            return true;
        }
        self.send_credit += seconds.max(0.0) / interval;
        if self.send_credit + 1e-9 < 1.0 {
            return false;
        }
        // What is left over counts toward the next, but never more than a packet: a
        // stall does not buy a burst.
        self.send_credit = (self.send_credit - 1.0).min(1.0);
        true
    }

    /// Input packets sent this session, and their encoded bytes.
    pub fn packets_sent(&self) -> (u64, u64) {
        self.packets_sent
    }

    /// Sequence number of the newest command sent.
    pub fn sent_seq(&self) -> u32 {
        self.sent_seq
    }

    /// Sequence number of the newest command.
    pub fn last_seq(&self) -> u32 {
        self.last_seq
    }

    /// The command packets are written against (0: none yet).
    pub fn base_seq(&self) -> u32 {
        self.base_seq
    }
}

/// Chooses this tick's command, sanitises it and records it. Until input pacing has
/// settled the command only looks (no movement, no buttons): while the server may still
/// run short of our commands, standing still keeps its repeats identical to ours.
pub(crate) fn sample_input(
    mut local_input: ResMut<LocalInput>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    pacing: Res<InputPacing>,
    (render, drawing): (
        Res<sightline_interpolation::RenderTime>,
        Res<sightline_interpolation::InterpolationSettings>,
    ),
    mut history: ResMut<InputHistory>,
    latest: Res<LatestSnapshot>,
    match_info: Res<crate::MatchInfo>,
    mut local: Query<(&sightline_sim::PlayerId, &mut CurrentCmd), With<Predicted>>,
) {
    let Ok((id, mut current)) = local.single_mut() else {
        return;
    };
    // The dead and everyone between matches only look around, as the server makes them:
    // predicting movement the server will not simulate would only be corrected.
    let dead = crate::dead_in(&latest, *id);
    let (buttons, weapon_slot) = local_input.take();
    let mut raw = InputCmd {
        forward: local_input.forward,
        right: local_input.right,
        yaw: local_input.yaw,
        pitch: local_input.pitch,
        buttons,
        weapon_slot,
        ..Default::default()
    };
    // Lag compensation judges this command's shots against the moment drawn on screen:
    // render time, but no later than the others are drawn when snapshots stop coming
    // (carried on past the newest for `max_extrapolation`, then held there).
    if let Some(t) = render.server_time {
        let drawn = latest.0.as_ref().map_or(t, |s| {
            t.min(s.server_time_us as f64 / 1e6 + f64::from(drawing.max_extrapolation))
        });
        raw.set_view_time(drawn * config.tick_hz as f64);
    }
    if dead || match_info.intermission || pacing.holds_input(history.last_seq()) {
        raw = InputCmd {
            yaw: raw.yaw,
            pitch: raw.pitch,
            view_tick: raw.view_tick,
            view_frac: raw.view_frac,
            ..Default::default()
        };
    }
    // Same gate as the server's: a command the server would refuse is never sent.
    let Ok(cmd) = raw.sanitized() else {
        return;
    };
    current.0 = history.record(cmd, tick.0);
}

/// Once a frame, after its ticks (or less often, as [`CommandRate`] allows): when they
/// made new commands, sends them with every earlier one the server has not acknowledged
/// within the redundancy window, and acknowledges the newest snapshot. One packet a frame, not one a tick: at a low frame
/// rate a frame's ticks would otherwise leave together anyway, each packet repeating the
/// last, and a lost burst would take all of them.
pub(crate) fn send_inputs(
    time: Res<Time<Real>>,
    config: Res<TickConfig>,
    mut history: ResMut<InputHistory>,
    latest: Res<LatestSnapshot>,
    rate: Res<CommandRate>,
    mut client: ResMut<RenetClient>,
) {
    let dt = time.delta_secs_f64();
    // Packets leave a frame or a `cl_cmdrate` interval apart, whichever is longer.
    history.note_frame(dt.max(rate.interval()));
    if !history.may_send(dt, *rate) || history.last_seq <= history.sent_seq {
        return;
    }
    if let Some(s) = &latest.0 {
        history.note_snapshot(s.seq, s.ack_input_seq, s.repeated_inputs);
    }
    let (ack, acked_seq) = latest
        .0
        .as_ref()
        .map_or((0, 0), |s| (s.seq, s.ack_input_seq));
    history.carry_unsent_choice(acked_seq);
    let window = history.window(config.tick_hz);
    for packet in history.packets(history.sent_seq, ack, acked_seq, window) {
        match ClientDatagram::Input(packet).encode() {
            Ok(bytes) => {
                history.packets_sent.0 += 1;
                history.packets_sent.1 += bytes.len() as u64;
                client.send_message(Channel::Unreliable, bytes);
            }
            Err(e) => warn!("an input packet was not sent: {e}"),
        }
    }
    history.sent_seq = history.last_seq;
}

/// The player's commands: one sampled per tick from [`LocalInput`], each frame's sent
/// after the ticks.
pub(crate) struct InputPlugin;

impl Plugin for InputPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<LocalInput>()
            .init_resource::<CommandRate>()
            .init_resource::<MoveParams>()
            .init_session_resource::<InputHistory>()
            .add_systems(
                FixedUpdate,
                sample_input.in_set(SimSet::ReadInputs).run_if(playing),
            )
            .add_systems(
                RunFixedMainLoop,
                send_inputs
                    .in_set(RunFixedMainLoopSystems::AfterFixedMainLoop)
                    .run_if(playing),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::Buttons;

    #[test]
    fn a_command_rate_sends_on_whole_packets_earned() {
        let every = |fps: f64, rate: u32, frames: usize| {
            let mut h = InputHistory::default();
            (0..frames)
                .filter(|_| h.may_send(1.0 / fps, CommandRate(rate)))
                .count()
        };
        assert_eq!(every(60.0, 0, 60), 60, "0: every frame");
        assert_eq!(every(60.0, 30, 60), 30, "every other frame");
        assert_eq!(every(144.0, 60, 144), 60);
        assert_eq!(every(20.0, 30, 20), 20, "never more than a frame's one");
        assert_eq!(every(60.0, 1, 60), 10, "at least ten a second");
    }

    #[test]
    fn a_tap_between_two_commands_reaches_the_next_one_only() {
        let mut input = LocalInput::default();
        // Jump and fire pressed and released within one frame, slot 3 tapped.
        input.press(Buttons::JUMP.with(Buttons::FIRE).with(Buttons::CROUCH), 3);
        assert_eq!(input.take(), (Buttons::JUMP.with(Buttons::FIRE), 3));
        assert_eq!(input.take(), (Buttons::default(), 0), "carried once");
        // Held buttons go on every command, latched or not.
        input.buttons = Buttons::CROUCH.with(Buttons::FIRE);
        input.press(input.buttons, 0);
        assert_eq!(input.take(), (Buttons::CROUCH.with(Buttons::FIRE), 0));
        assert_eq!(input.take(), (Buttons::CROUCH.with(Buttons::FIRE), 0));
    }
    use sightline_protocol::Wire;

    /// A packet's commands, read back as the server reads them (without a base).
    fn cmds_of(p: &InputPacket) -> Vec<InputCmd> {
        let read = InputPacket::decode(&p.encode().unwrap()).unwrap();
        read.commands(None).unwrap()
    }

    #[test]
    fn packets_are_written_against_a_command_the_server_surely_received() {
        let mut h = InputHistory::default();
        for tick in 0..40 {
            h.record(InputCmd::default(), tick);
        }
        let mut turned = InputCmd {
            yaw: sightline_sim::angle_of_steps(900),
            ..InputCmd::default()
        };
        turned = h.record(turned, 40);
        assert_eq!(turned.seq, 41);
        // One snapshot alone proves nothing; the next, with no repeats between, proves
        // the newest simulated command came from us.
        h.note_snapshot(5, 20, 3);
        assert_eq!(h.packet_through(41, 5, 20, 8).unwrap().base_offset, None);
        h.note_snapshot(6, 30, 4);
        assert_eq!(
            h.base_seq, 0,
            "a repeat between: command 30 may be a stand-in"
        );
        h.note_snapshot(7, 35, 4);
        h.note_snapshot(6, 38, 4);
        assert_eq!(h.base_seq, 35, "an older snapshot teaches nothing");
        let p = h.packet_through(41, 7, 35, 8).unwrap();
        assert_eq!(p.base_seq(35), Some(35));
        let base = h.base().copied();
        let read = InputPacket::decode(&p.encode().unwrap()).unwrap();
        let cmds = read.commands(base.as_ref()).unwrap();
        assert_eq!(
            cmds.iter().map(|c| c.seq).collect::<Vec<_>>(),
            [41, 40, 39, 38, 37, 36]
        );
        assert_eq!(cmds[0], turned);
        // Cheaper than the same packet written from nothing.
        let from_nothing = InputPacket::new(7, 35, None, &cmds);
        assert!(p.encode().unwrap().len() < from_nothing.encode().unwrap().len());
        // A base the server may have let go of is not used.
        for tick in 41..41 + INPUT_BASE_SPAN {
            h.record(InputCmd::default(), tick);
        }
        assert_eq!(
            h.packet_through(h.last_seq, 7, 35, 8).unwrap().base_offset,
            None
        );
    }

    #[test]
    fn packets_carry_every_unacknowledged_command_in_the_window() {
        let mut h = InputHistory::default();
        assert!(h.packet_through(h.last_seq, 0, 0, 8).is_none());
        for tick in 0..80 {
            h.record(InputCmd::default(), tick);
        }
        let seqs = |p: InputPacket| cmds_of(&p).iter().map(|c| c.seq).collect::<Vec<u32>>();
        let p = h.packet_through(h.last_seq, 9, 70, 32).unwrap();
        assert_eq!(p.ack_snapshot, 9);
        assert_eq!(cmds_of(&p)[0].client_tick, 79);
        assert_eq!(seqs(p.clone()), (71..=80).rev().collect::<Vec<_>>());
        assert!(InputPacket::decode(&p.encode().unwrap()).is_ok());
        assert_eq!(
            seqs(h.packet_through(h.last_seq, 9, 0, 4).unwrap()),
            [80, 79, 78, 77],
            "window"
        );
        assert_eq!(
            seqs(h.packet_through(h.last_seq, 9, 80, 4).unwrap()),
            [80],
            "always the newest"
        );
        assert_eq!(
            h.packet_through(h.last_seq, 9, 0, 100).unwrap().len(),
            MAX_PACKET_CMDS
        );
        // Standing still costs a byte a command.
        let full = h
            .packet_through(h.last_seq, 9, 0, MAX_PACKET_CMDS)
            .unwrap()
            .encode()
            .unwrap();
        assert!(full.len() < 100, "{} bytes", full.len());
    }

    #[test]
    fn a_weapon_chosen_in_commands_the_server_stood_in_for_goes_with_the_next() {
        let mut h = InputHistory::default();
        let chose = |slot| InputCmd {
            weapon_slot: slot,
            ..InputCmd::default()
        };
        for tick in 0..10 {
            h.record(InputCmd::default(), tick);
        }
        h.sent_seq = 10;
        // A slow frame: commands 11-14, the key in 12; the server has stood in through 13.
        for (tick, slot) in [(10, 0), (11, 2), (12, 0), (13, 0)] {
            h.record(chose(slot), tick);
        }
        h.carry_unsent_choice(13);
        let sent: Vec<InputCmd> = h
            .packets(h.sent_seq, 3, 13, 16)
            .iter()
            .flat_map(cmds_of)
            .collect();
        assert_eq!(sent.iter().map(|c| c.seq).collect::<Vec<_>>(), [14]);
        assert_eq!(
            sent[0].weapon_slot, 2,
            "the choice rides on the one still to go"
        );
        // Stood in for all of them: the next command recorded carries it.
        h.sent_seq = 14;
        for tick in 14..16 {
            h.record(chose(u8::from(tick == 14) * 3), tick);
        }
        h.carry_unsent_choice(16);
        assert_eq!(h.record(InputCmd::default(), 16).weapon_slot, 3);
        assert_eq!(h.record(InputCmd::default(), 17).weapon_slot, 0, "once");
        // A choice that was sent is not carried.
        h.sent_seq = 18;
        h.carry_unsent_choice(18);
        assert_eq!(h.record(InputCmd::default(), 18).weapon_slot, 0);
    }

    #[test]
    fn a_tap_in_commands_the_server_stood_in_for_goes_with_the_next() {
        let mut h = InputHistory::default();
        let held = |buttons| InputCmd {
            buttons,
            ..InputCmd::default()
        };
        for tick in 0..10 {
            h.record(held(Buttons::FIRE), tick);
        }
        h.sent_seq = 10;
        // A slow frame, commands 11-14: fire let go in 11 and tapped again in 12 with a
        // jump; crouch held from 13. The server stood in through 13.
        let tap = Buttons::FIRE.with(Buttons::JUMP);
        for (tick, b) in [
            (10, Buttons::default()),
            (11, tap),
            (12, Buttons::CROUCH),
            (13, Buttons::CROUCH),
        ] {
            h.record(held(b), tick);
        }
        h.carry_unsent_choice(13);
        let sent: Vec<InputCmd> = h
            .packets(h.sent_seq, 3, 13, 16)
            .iter()
            .flat_map(cmds_of)
            .collect();
        assert_eq!(sent.iter().map(|c| c.seq).collect::<Vec<_>>(), [14]);
        assert_eq!(
            sent[0].buttons,
            Buttons::CROUCH.with(tap),
            "the tap rides on 14"
        );
        // Fire held on from what was sent is no press; stood in for all: the next one
        // recorded carries a jump, once.
        h.sent_seq = 14;
        h.record(held(Buttons::CROUCH.with(Buttons::FIRE)), 14);
        h.record(held(Buttons::JUMP), 15);
        h.carry_unsent_choice(16);
        assert_eq!(h.record(InputCmd::default(), 16).buttons, Buttons::JUMP);
        assert_eq!(
            h.record(InputCmd::default(), 17).buttons,
            Buttons::default()
        );
    }

    #[test]
    fn a_frame_with_more_new_commands_than_a_packet_holds_sends_them_all() {
        let mut h = InputHistory::default();
        for tick in 0..100 {
            h.record(InputCmd::default(), tick);
        }
        h.sent_seq = 10;
        let packets = h.packets(h.sent_seq, 3, 5, 16);
        let seqs: Vec<Vec<u32>> = packets
            .iter()
            .map(|p| cmds_of(p).iter().map(|c| c.seq).collect())
            .collect();
        // Older ones first, each newest first; every new command goes at least once.
        assert_eq!(seqs.len(), 2, "{seqs:?}");
        assert_eq!(seqs[1][0], 100);
        assert_eq!(seqs[1].len(), MAX_PACKET_CMDS);
        assert_eq!(
            seqs[0],
            (6..=36).rev().collect::<Vec<_>>(),
            "back to the acked"
        );
        assert!(packets.iter().all(|p| p.ack_snapshot == 3));
        // An ordinary frame: one packet.
        h.sent_seq = 99;
        assert_eq!(h.packets(h.sent_seq, 3, 95, 16).len(), 1);
    }

    #[test]
    fn the_window_spans_0_15_s_or_eight_frames() {
        let mut h = InputHistory::default();
        h.note_frame(1.0 / 240.0);
        assert_eq!(h.window(128), 20, "240 fps: 0.15 s");
        h.note_frame(1.0 / 60.0);
        assert_eq!(h.window(128), 20, "60 fps: 0.15 s, more than eight frames");
        h.note_frame(1.0 / 30.0);
        assert_eq!(h.window(128), 35, "30 fps: eight frames, 267 ms");
        let mut slow = InputHistory::default();
        slow.note_frame(0.1);
        assert_eq!(slow.window(128), MAX_PACKET_CMDS, "10 fps: 0.8 s, capped");
        assert_eq!(slow.window(30), 24);
        slow.note_frame(10.0);
        assert_eq!(
            slow.window(128),
            MAX_PACKET_CMDS,
            "a stall counts as a second"
        );
    }
}
