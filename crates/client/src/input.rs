//! Sampling one command per tick and sending it with its predecessors.

use crate::LatestSnapshot;
use crate::pacing::InputPacing;
use bevy::prelude::*;
use sightline_bots::{decide, sense};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_net::RenetClient;
use sightline_prediction::Predicted;
use sightline_protocol::{Channel, ClientDatagram, InputPacket, REDUNDANT_INPUTS};
use sightline_sim::{CurrentCmd, InputCmd, Tick, TickConfig};
use std::collections::VecDeque;

/// Commands after which a client moves even if pacing never settles (a link so bad the
/// server keeps starving): about four seconds at 128 Hz.
const SETTLE_LIMIT: u32 = 512;

/// Where this client's commands come from.
#[derive(Resource, Debug, Clone, PartialEq, Eq)]
pub enum InputSource {
    /// The bot brain plays for us (headless clients, soak tests, the automatic mode).
    Bot {
        /// Makes this bot's choices its own.
        seed: u64,
    },
    /// A person: the windowed client keeps [`LocalInput`] up to date.
    Local,
}

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
}

/// The most recent commands sent, newest last, and the next sequence number.
#[derive(Resource, Debug, Default)]
pub struct InputHistory {
    recent: VecDeque<InputCmd>,
    last_seq: u32,
}

impl InputHistory {
    /// Stamps a command with the next sequence number and remembers it.
    pub fn record(&mut self, mut cmd: InputCmd, client_tick: u32) -> InputCmd {
        self.last_seq += 1;
        cmd.seq = self.last_seq;
        cmd.client_tick = client_tick;
        self.recent.push_back(cmd);
        if self.recent.len() > REDUNDANT_INPUTS {
            self.recent.pop_front();
        }
        cmd
    }

    /// The packet to send: the newest command first, then up to three before it.
    pub fn packet(&self, ack_snapshot: u32) -> Option<InputPacket> {
        (!self.recent.is_empty()).then(|| InputPacket {
            ack_snapshot,
            cmds: self.recent.iter().rev().copied().collect(),
        })
    }

    /// Sequence number of the newest command.
    pub fn last_seq(&self) -> u32 {
        self.last_seq
    }
}

/// Chooses this tick's command, sanitises it and records it. Until input pacing has
/// settled the command only looks (no movement, no buttons): while the server may still
/// run short of our commands, standing still keeps its repeats identical to ours.
pub(crate) fn sample_input(
    source: Res<InputSource>,
    local_input: Res<LocalInput>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    pacing: Res<InputPacing>,
    render: Res<sightline_interpolation::RenderTime>,
    mut history: ResMut<InputHistory>,
    latest: Res<LatestSnapshot>,
    match_info: Res<crate::MatchInfo>,
    mut local: Query<(&sightline_sim::PlayerId, &PlayerState, &mut CurrentCmd), With<Predicted>>,
) {
    let Ok((id, state, mut current)) = local.single_mut() else {
        return;
    };
    // The dead and everyone between matches only look around, as the server makes them:
    // predicting movement the server will not simulate would only be corrected.
    let dead = crate::dead_in(&latest, *id);
    let mut raw = match *source {
        InputSource::Bot { seed } => {
            let seen = sense(&map.world, state, &params);
            decide(state, &seen, seed, tick.0, config.tick_hz)
        }
        InputSource::Local => InputCmd {
            forward: local_input.forward,
            right: local_input.right,
            yaw: local_input.yaw,
            pitch: local_input.pitch,
            buttons: local_input.buttons,
            weapon_slot: local_input.weapon_slot,
            ..Default::default()
        },
    };
    // Lag compensation judges this command's shots against the moment drawn on screen.
    if let Some(t) = render.server_time {
        raw.set_view_time(t * config.tick_hz as f64);
    }
    if dead || match_info.intermission || (!pacing.settled() && history.last_seq() < SETTLE_LIMIT) {
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

/// Sends the newest command with its predecessors, acknowledging the newest snapshot.
pub(crate) fn send_inputs(
    history: Res<InputHistory>,
    latest: Res<LatestSnapshot>,
    mut client: ResMut<RenetClient>,
) {
    let ack = latest.0.as_ref().map_or(0, |s| s.seq);
    if let Some(packet) = history.packet(ack) {
        crate::send_to_server(
            &mut client,
            Channel::Unreliable,
            &ClientDatagram::Input(packet),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_protocol::Wire;

    #[test]
    fn packets_carry_the_newest_command_and_three_before_it() {
        let mut h = InputHistory::default();
        assert!(h.packet(0).is_none());
        for tick in 0..6 {
            h.record(InputCmd::default(), tick);
        }
        let p = h.packet(9).unwrap();
        assert_eq!(p.ack_snapshot, 9);
        let seqs: Vec<u32> = p.cmds.iter().map(|c| c.seq).collect();
        assert_eq!(seqs, [6, 5, 4, 3]);
        assert_eq!(p.cmds[0].client_tick, 5);
        assert!(InputPacket::decode(&p.encode().unwrap()).is_ok());
    }
}
