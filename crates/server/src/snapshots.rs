//! Snapshots: every player's state, sent to each client with its own acknowledgements.

use crate::{Connection, ConnectionStage, InputBuffer, TickTimes};
use bevy::prelude::*;
use sightline_combat::{Arsenal, ItemSpot, Rocket, Vitals, items_present};
use sightline_movement::PlayerState;
use sightline_net::RenetServer;
use sightline_protocol::{
    Channel, MAX_SNAPSHOT_PROJECTILES, PlayerSnap, ProjectileSnap, ServerDatagram, Snapshot,
};
use sightline_sim::{PlayerId, Tick, TickConfig};

/// Number of the last snapshot sent to this client.
#[derive(Component, Debug, Default, Clone, Copy)]
pub struct SnapshotCounter(pub u32);

/// On snapshot ticks, sends the world to every playing client.
pub(crate) fn send_snapshots(
    tick: Res<Tick>,
    config: Res<TickConfig>,
    mut server: ResMut<RenetServer>,
    players: Query<(&PlayerId, &PlayerState, &Vitals, &Arsenal)>,
    rockets: Query<&Rocket>,
    items: Query<&ItemSpot>,
    mut clients: Query<(&Connection, &mut InputBuffer, &mut SnapshotCounter)>,
    times: Res<TickTimes>,
) {
    if !config.is_snapshot_tick(*tick) {
        return;
    }
    let mut snapshot = Snapshot {
        seq: 0,
        baseline: 0,
        server_tick: tick.0,
        server_time_us: config.tick_time_us(*tick),
        ack_input_seq: 0,
        input_queue: 0,
        repeated_inputs: 0,
        server_tick_us: times.last_us(),
        players: players
            .iter()
            .map(|(id, s, vitals, arsenal)| PlayerSnap {
                health: vitals.health.clamp(0.0, 255.0).ceil() as u8,
                armor: vitals.armor.clamp(0.0, 255.0).ceil() as u8,
                weapon: arsenal.current.index() as u8,
                ammo: arsenal.ammo[arsenal.current.index()].magazine,
                ..PlayerSnap::new(*id, s)
            })
            .collect(),
        projectiles: rockets
            .iter()
            .take(MAX_SNAPSHOT_PROJECTILES)
            .map(|r| ProjectileSnap {
                id: r.id,
                owner: r.owner,
                pos: r.pos.to_array(),
                vel: r.vel.to_array(),
            })
            .collect(),
        items: items_present(items.iter().copied()),
    };
    snapshot.players.sort_by_key(|p| p.id);
    // One snapshot, its per-client header rewritten for each recipient.
    for (conn, mut buffer, mut counter) in &mut clients {
        if conn.stage != ConnectionStage::Playing {
            continue;
        }
        counter.0 += 1;
        let timing = buffer.take_timing();
        snapshot.seq = counter.0;
        snapshot.ack_input_seq = buffer.last_simulated();
        // No tick since the last snapshot (not possible at a steady rate): report 0.
        snapshot.input_queue = if timing.min_queue == u8::MAX {
            0
        } else {
            timing.min_queue
        };
        snapshot.repeated_inputs = timing.repeats;
        let bytes = ServerDatagram::encode_snapshot(&snapshot);
        server.send_message(conn.client_id, Channel::Unreliable, bytes);
    }
}
