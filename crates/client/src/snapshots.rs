//! Receiving datagrams (snapshots, pongs) and handing the newest snapshot to prediction
//! (our player) and interpolation (everyone else).

use crate::clock::on_pong;
use crate::pacing::InputPacing;
use crate::stats::{ClientStats, PlayerSeen};
use crate::{LocalPlayer, RemotePlayer};
use bevy::prelude::*;
use sightline_interpolation::{DelayEstimator, Interpolated, ProjectileTracks, SnapshotBuffer};
use sightline_movement::PlayerState;
use sightline_net::{ClockSync, RenetClient};
use sightline_prediction::{Predicted, ServerUpdate};
use sightline_protocol::{Channel, ServerDatagram, Snapshot, Wire};
use sightline_sim::{Player, PlayerId};
use std::collections::BTreeMap;

/// The newest snapshot received, and whether it has been applied.
#[derive(Resource, Debug, Default)]
pub struct LatestSnapshot(pub Option<Snapshot>, bool);

/// Keeps the newest valid snapshot (older, duplicate and malformed ones are dropped)
/// and feeds pongs to clock sync. Every snapshot, even a stale one, tells interpolation
/// how snapshots arrive.
pub(crate) fn receive_datagrams(
    mut client: ResMut<RenetClient>,
    mut latest: ResMut<LatestSnapshot>,
    mut stats: ResMut<ClientStats>,
    mut sync: ResMut<ClockSync>,
    mut delay: ResMut<DelayEstimator>,
    mut remotes: Query<(&PlayerId, &mut SnapshotBuffer), With<RemotePlayer>>,
    mut projectiles: ResMut<ProjectileTracks>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed_secs_f64();
    while let Some(bytes) = client.receive_message(Channel::Unreliable) {
        let snapshot = match ServerDatagram::decode(&bytes) {
            Ok(ServerDatagram::Snapshot(s)) => s,
            Ok(ServerDatagram::Pong {
                client_time_us,
                server_time_us,
            }) => {
                on_pong(&mut sync, client_time_us, server_time_us, now);
                continue;
            }
            Err(e) => {
                stats.malformed += 1;
                debug!("dropped a datagram: {e}");
                continue;
            }
        };
        let server_time = snapshot.server_time_us as f64 / 1e6;
        delay.record(server_time, now);
        stats.note_snapshot(snapshot.seq);
        // Late snapshots still fill gaps in remote players' paths.
        for (id, mut buffer) in &mut remotes {
            if let Ok(i) = snapshot.players.binary_search_by_key(id, |p| p.id) {
                let p = &snapshot.players[i];
                buffer.push_spawned(server_time, p.state(), p.spawn_count);
            }
        }
        projectiles.note_snapshot(server_time);
        for p in &snapshot.projectiles {
            let (pos, vel) = (Vec3::from_array(p.pos), Vec3::from_array(p.vel));
            projectiles.push(p.id, server_time, pos, vel);
        }
        if latest.0.as_ref().is_some_and(|l| snapshot.seq <= l.seq) {
            stats.stale_snapshots += 1;
            continue;
        }
        stats.snapshots += 1;
        *latest = LatestSnapshot(Some(snapshot), false);
    }
}

/// Applies the newest snapshot: our player's state goes to prediction (the first one is
/// adopted outright, which starts prediction), remote players' states to their
/// interpolation buffers; newcomers are spawned and players no longer present removed.
pub(crate) fn apply_snapshot(
    mut commands: Commands,
    mut latest: ResMut<LatestSnapshot>,
    mut stats: ResMut<ClientStats>,
    mut update: ResMut<ServerUpdate>,
    mut pacing: ResMut<InputPacing>,
    mut players: Query<(
        Entity,
        &PlayerId,
        &mut PlayerState,
        Has<LocalPlayer>,
        Has<Predicted>,
    )>,
) {
    let LatestSnapshot(Some(snapshot), applied) = &mut *latest else {
        return;
    };
    if *applied {
        return;
    }
    *applied = true;
    pacing.observe(snapshot.input_queue, snapshot.repeated_inputs);
    let server_time = snapshot.server_time_us as f64 / 1e6;
    let mut present: BTreeMap<PlayerId, Entity> = BTreeMap::new();
    for (entity, id, mut state, local, predicted) in &mut players {
        let Ok(i) = snapshot.players.binary_search_by_key(id, |p| p.id) else {
            if !local {
                commands.entity(entity).despawn();
            }
            continue;
        };
        let server_state = snapshot.players[i].state();
        present.insert(*id, entity);
        match (local, predicted) {
            (true, true) => update.0 = Some((snapshot.ack_input_seq, server_state)),
            (true, false) => {
                *state = server_state;
                commands.entity(entity).insert(Predicted);
            }
            (false, _) => *state = server_state,
        }
    }
    for p in &snapshot.players {
        let state = p.state();
        if !present.contains_key(&p.id) {
            let mut buffer = SnapshotBuffer::default();
            buffer.push_spawned(server_time, state, p.spawn_count);
            commands.spawn((
                player_bundle(p.id, state),
                RemotePlayer,
                Interpolated,
                buffer,
            ));
        }
        let seen = stats.seen.entry(p.id).or_insert(PlayerSeen {
            first: state.pos,
            farthest: 0.0,
        });
        seen.farthest = seen.farthest.max(seen.first.distance(state.pos));
    }
}

/// What every player entity on the client has, ours or another's.
pub(crate) fn player_bundle(id: PlayerId, state: PlayerState) -> impl Bundle {
    (Player, id, state)
}
