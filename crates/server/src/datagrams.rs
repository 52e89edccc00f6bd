//! Datagrams from clients: input packets into each player's buffer, spectators'
//! acknowledgements, and clock-sync pings answered at once.

use crate::conduct::{self, Offence};
use crate::connection::{ClientIndex, Connection, ConnectionStage, Switched};
use crate::inputs::{InputBuffer, Push};
use crate::snapshots::SnapshotCounter;
use crate::spectators::Spectator;
use crate::stalls::{FrameLag, owed_ticks};
use crate::stats::ServerStats;
use crate::wire::encoded;
use bevy::prelude::*;
use sightline_net::{PacketFaults, RenetServer};
use sightline_protocol::{Channel, ClientDatagram, ServerDatagram, Wire};
use sightline_sim::{Tick, TickConfig};

/// Strikes the senders of transport packets the transport refused (see
/// [`sightline_net::PacketGuard`]): one strike each, as for a malformed message.
pub(crate) fn strike_refused_packets(
    mut faults: ResMut<PacketFaults>,
    mut server: ResMut<RenetServer>,
    index: Res<ClientIndex>,
    mut connections: Query<&mut Connection>,
    mut stats: ResMut<ServerStats>,
    real: Res<Time<Real>>,
) {
    let now = real.elapsed_secs_f64();
    for (client, fault) in faults.0.drain(..) {
        let Some(mut conn) = index
            .0
            .get(&client)
            .and_then(|e| connections.get_mut(*e).ok())
        else {
            continue;
        };
        if !matches!(conn.stage, ConnectionStage::Refused { .. }) {
            conn.refuse_packet(&mut server, fault, now, &mut stats);
        }
    }
}

/// How much faster than the tick rate a client may make commands while the server hears
/// nothing from it: pacing runs a client's ticks at most a few percent fast.
const SILENT_TICK_SLACK: f64 = 1.05;

/// Reads input packets into each player's buffer and answers clock-sync pings at once,
/// within each connection's per-frame budget; junk, floods and impossible commands earn
/// strikes.
pub(crate) fn receive_datagrams(
    mut server: ResMut<RenetServer>,
    mut connections: Query<(
        &mut Connection,
        Option<&mut InputBuffer>,
        Option<&SnapshotCounter>,
        Option<&mut Spectator>,
        Option<&mut Switched>,
    )>,
    mut stats: ResMut<ServerStats>,
    config: Res<TickConfig>,
    time: Res<Time<Virtual>>,
    fixed: Res<Time<Fixed>>,
    real: Res<Time<Real>>,
    lag: Res<FrameLag>,
    tick: Res<Tick>,
) {
    // Now, as it is while the datagrams are read: a stall inside this frame (after its
    // clock was read) is time the clients had to send them.
    let now = real.elapsed_secs_f64() + lag.0.as_secs_f64();
    // What arrived since the last frame, and the ticks about to run on it: after a stall
    // of the server's own, both are large, and neither is the clients' doing.
    let elapsed = real.delta_secs_f64() + lag.0.as_secs_f64();
    let (max_messages, max_bytes) = conduct::frame_budget(elapsed, config.tick_hz);
    let owed = owed_ticks(&fixed, &time, *lag);
    for (mut conn, mut buffer, counter, mut spectator, mut switched) in &mut connections {
        if matches!(conn.stage, ConnectionStage::Refused { .. }) {
            continue; // discarded unread by `drop_refused`
        }
        let mut bytes_left = max_bytes;
        let batch = conduct::take_budgeted(
            &mut server,
            conn.client_id,
            Channel::Unreliable,
            max_messages,
            &mut bytes_left,
        );
        // Over the frame's budget is dropped unread; only the rate is an offence.
        stats.over_budget = stats.over_budget.saturating_add(batch.dropped as u64);
        let arrived = batch.messages.len() + batch.dropped;
        if conn.conduct.count_datagrams(arrived, now, config.tick_hz) {
            conn.offend(&mut server, Offence::Flood, now, &mut stats);
        }
        for bytes in batch.messages {
            if matches!(conn.stage, ConnectionStage::Refused { .. }) {
                break;
            }
            let decoded = ClientDatagram::decode(&bytes);
            // Sent in the role the connection just left, before its client heard.
            let role = match &decoded {
                Ok(ClientDatagram::Input(_)) => Some(spectator.is_none()),
                Ok(ClientDatagram::Ack { .. }) => Some(spectator.is_some()),
                _ => None,
            };
            if let (Some(switched), Some(ours)) = (switched.as_deref_mut(), role) {
                if ours {
                    switched.hear(now);
                } else if switched.leftover(now) {
                    stats.switch_leftovers = stats.switch_leftovers.saturating_add(1);
                    continue;
                }
            }
            let packet = match decoded {
                Ok(ClientDatagram::Input(_)) if spectator.is_some() => {
                    let reason = "kicked: spectators send no input".into();
                    conn.kick(&mut server, reason, now, &mut stats);
                    break;
                }
                Ok(ClientDatagram::Input(p)) => p,
                Ok(ClientDatagram::Ack { snapshot }) => {
                    match (spectator.as_deref_mut(), counter) {
                        (Some(spectator), Some(counter)) => {
                            if spectator.acknowledge(snapshot, counter).is_err() {
                                conn.refuse_command(&mut server, now, &mut stats);
                            }
                            // A spectator's acknowledgements are its sign of life.
                            conn.conduct.last_command_at = now;
                        }
                        // Players acknowledge in their input packets.
                        _ => conn.offend(&mut server, Offence::Unexpected, now, &mut stats),
                    }
                    continue;
                }
                Ok(ClientDatagram::Ping { client_time_us }) => {
                    // The simulation clock: snapshots are stamped on it too.
                    let pong = ServerDatagram::Pong {
                        client_time_us,
                        server_time_us: time.elapsed().as_micros() as u64,
                    };
                    if let Some(bytes) = encoded(&pong) {
                        server.send_message(conn.client_id, Channel::Unreliable, bytes);
                    }
                    continue;
                }
                Err(_) => {
                    conn.offend_malformed(&mut server, bytes.is_empty(), now, &mut stats);
                    continue;
                }
            };
            let (Some(buffer), Some(counter)) = (buffer.as_deref_mut(), counter) else {
                continue; // not in the game yet: inputs mean nothing
            };
            // An acknowledgement must name a snapshot sent to this client recently; 0
            // (none yet) is allowed, a number never sent is not.
            let ack_tick = counter.tick_of(packet.ack_snapshot);
            if packet.ack_snapshot != 0
                && ack_tick.is_none()
                && packet.ack_snapshot > counter.last()
            {
                conn.refuse_command(&mut server, now, &mut stats);
                continue;
            }
            // The chain starts from a command this client sent before, counted back from
            // what the acknowledged snapshot said was simulated; one no longer held is
            // dropped and counted (the next packets name a newer base).
            let base = match packet.base_offset {
                None => None,
                Some(_) => {
                    let held = counter
                        .acked_input_of(packet.ack_snapshot)
                        .and_then(|acked| packet.base_seq(acked))
                        .and_then(|seq| buffer.received(seq));
                    let Some(base) = held else {
                        stats.unresolved_inputs = stats.unresolved_inputs.saturating_add(1);
                        continue;
                    };
                    Some(*base)
                }
            };
            let Ok(cmds) = packet.commands(base.as_ref()) else {
                conn.offend_malformed(&mut server, false, now, &mut stats);
                continue;
            };
            // Back from an outage, a client's commands lead by the ticks it made in real
            // time meanwhile (and a little for pacing's faster ticks): no forgery.
            let silent = ((now - conn.conduct.last_command_at).max(0.0)
                * f64::from(config.tick_hz)
                * SILENT_TICK_SLACK)
                .ceil()
                .min(f64::from(u32::MAX)) as u32;
            conn.conduct.last_command_at = now;
            // The first packet to acknowledge a snapshot times the round trip.
            if packet.ack_snapshot > buffer.ack_snapshot
                && let Some(sent) = counter.sent_at(packet.ack_snapshot)
            {
                conn.round_trip.sample(now - sent);
            }
            buffer.ack_snapshot = buffer.ack_snapshot.max(packet.ack_snapshot);
            buffer.note_arrival(tick.0.saturating_add(1));
            for cmd in cmds.iter().rev() {
                if buffer.push_within(*cmd, ack_tick, owed, silent) == Push::TooFarAhead {
                    conn.refuse_command(&mut server, now, &mut stats);
                    break;
                }
            }
        }
    }
}
