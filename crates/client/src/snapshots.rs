//! Receiving snapshots and applying the newest to the world.

use crate::{LocalPlayer, RemotePlayer};
use bevy::prelude::*;
use sightline_movement::PlayerState;
use sightline_net::RenetClient;
use sightline_protocol::{Channel, Snapshot, Wire};
use sightline_sim::{Player, PlayerId};
use std::collections::BTreeMap;

/// The newest snapshot received, and whether it has been applied.
#[derive(Resource, Debug, Default)]
pub struct LatestSnapshot(pub Option<Snapshot>, bool);

/// How far each player has been seen to travel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayerSeen {
    /// Where it was first seen.
    pub first: Vec3,
    /// Farthest it has been from there, m.
    pub farthest: f32,
}

/// What this client has received, for tests and the status line.
#[derive(Resource, Debug, Default)]
pub struct ClientStats {
    /// Snapshots accepted.
    pub snapshots: u64,
    /// Snapshots that arrived after a newer one (dropped).
    pub stale_snapshots: u64,
    /// Messages that failed to decode or validate (dropped).
    pub malformed: u64,
    /// Every player seen in snapshots.
    pub seen: BTreeMap<PlayerId, PlayerSeen>,
}

impl ClientStats {
    /// Players seen to move more than `metres` from where they were first seen.
    pub fn players_moved(&self, metres: f32) -> usize {
        self.seen.values().filter(|p| p.farthest > metres).count()
    }

    /// A one-line summary.
    pub fn summary(&self) -> String {
        format!(
            "snapshots={} stale={} malformed={} players_seen={} players_moved={}",
            self.snapshots,
            self.stale_snapshots,
            self.malformed,
            self.seen.len(),
            self.players_moved(1.0)
        )
    }
}

/// Keeps the newest valid snapshot; older, duplicate and malformed ones are dropped.
pub(crate) fn receive_snapshots(
    mut client: ResMut<RenetClient>,
    mut latest: ResMut<LatestSnapshot>,
    mut stats: ResMut<ClientStats>,
) {
    while let Some(bytes) = client.receive_message(Channel::Unreliable) {
        let snapshot = match Snapshot::decode(&bytes) {
            Ok(s) => s,
            Err(e) => {
                stats.malformed += 1;
                debug!("dropped a snapshot: {e}");
                continue;
            }
        };
        if latest.0.as_ref().is_some_and(|l| snapshot.seq <= l.seq) {
            stats.stale_snapshots += 1;
            continue;
        }
        stats.snapshots += 1;
        *latest = LatestSnapshot(Some(snapshot), false);
    }
}

/// Sets every player to its state in the newest snapshot; spawns newcomers and removes
/// players the snapshot no longer holds.
pub(crate) fn apply_snapshot(
    mut commands: Commands,
    mut latest: ResMut<LatestSnapshot>,
    mut stats: ResMut<ClientStats>,
    mut players: Query<(Entity, &PlayerId, &mut PlayerState, Has<LocalPlayer>)>,
) {
    let LatestSnapshot(Some(snapshot), applied) = &mut *latest else {
        return;
    };
    if *applied {
        return;
    }
    *applied = true;
    let mut present: BTreeMap<PlayerId, Entity> = BTreeMap::new();
    for (entity, id, mut state, local) in &mut players {
        match snapshot.players.binary_search_by_key(id, |p| p.id) {
            Ok(i) => {
                *state = snapshot.players[i].state();
                present.insert(*id, entity);
            }
            Err(_) if !local => commands.entity(entity).despawn(),
            Err(_) => {}
        }
    }
    for p in &snapshot.players {
        let state = p.state();
        if !present.contains_key(&p.id) {
            commands.spawn((Player, p.id, state, RemotePlayer));
        }
        let seen = stats.seen.entry(p.id).or_insert(PlayerSeen {
            first: state.pos,
            farthest: 0.0,
        });
        seen.farthest = seen.farthest.max(seen.first.distance(state.pos));
    }
}
