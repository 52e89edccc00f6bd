//! Receiving datagrams (snapshots, pongs) and handing the newest snapshot to prediction
//! (our player) and interpolation (everyone else).

use crate::clock::{SnapshotSilence, on_pong};
use crate::events::{EventInbox, ShownEvent};
use crate::pacing::{InputPacing, REPORT_SPAN};
use crate::sets::{ReceiveStep, in_game};
use crate::stats::{ClientStats, PlayerSeen};
use crate::{LocalPlayer, RemotePlayer};
use bevy::prelude::*;
use sightline_combat::{Ammo, Arsenal, Rocket, SpawnCount};
use sightline_interpolation::ClockSync;
use sightline_interpolation::{
    DelayEstimator, Interpolated, ProjectileTracks, SnapshotBuffer, StreamTime,
};
use sightline_movement::PlayerState;
use sightline_net::RenetClient;
use sightline_prediction::{
    OtherPlayer, OtherPlayers, Predicted, SeenTouches, ServerState, ServerUpdate, ServerWeapons,
    WeaponChecks,
};
use sightline_protocol::{
    Channel, ServerDatagram, Snapshot, SnapshotHistory, Unresolved, WeaponCheck, Wire,
};
use sightline_sim::SessionAppExt;
use sightline_sim::{Player, PlayerId, TickConfig};
use std::collections::BTreeMap;

/// The newest snapshot received, and whether it has been applied.
#[derive(Resource, Debug, Default)]
pub struct LatestSnapshot(pub Option<Snapshot>, bool);

/// Whether player `id` is dead in the newest snapshot (not there at all: alive).
pub fn dead_in(latest: &LatestSnapshot, id: PlayerId) -> bool {
    latest
        .0
        .as_ref()
        .and_then(|s| s.players.iter().find(|p| p.id == id))
        .is_some_and(|p| p.health == 0)
}

/// Keeps the newest valid snapshot (older, duplicate and malformed ones are dropped),
/// hands each one's input timing to pacing and feeds pongs to clock sync. Every snapshot,
/// even a stale one, tells interpolation how snapshots arrive and brings its events
/// ([`EventInbox`]). Snapshots come as changes
/// from one this client acknowledged, resolved against the ones it keeps
/// ([`SnapshotHistory`]); one whose baseline is no longer kept is dropped and counted.
/// Where the game keeps the [`crate::RecentWorld`], every snapshot goes into it too.
pub(crate) fn receive_datagrams(
    mut client: ResMut<RenetClient>,
    mut latest: ResMut<LatestSnapshot>,
    mut history: ResMut<SnapshotHistory>,
    mut stats: ResMut<ClientStats>,
    mut sync: ResMut<ClockSync>,
    mut delay: ResMut<DelayEstimator>,
    mut remotes: Query<(&PlayerId, &mut SnapshotBuffer), With<RemotePlayer>>,
    mut projectiles: ResMut<ProjectileTracks>,
    mut pacing: ResMut<InputPacing>,
    (mut inbox, mut shown, config, mut weapon_checks, local): (
        ResMut<EventInbox>,
        MessageWriter<ShownEvent>,
        Res<TickConfig>,
        ResMut<WeaponChecks>,
        Query<&PlayerId, With<LocalPlayer>>,
    ),
    (time, stream, mut recent): (
        Res<Time<Real>>,
        Res<StreamTime>,
        Option<ResMut<crate::RecentWorld>>,
    ),
) {
    let now = time.elapsed_secs_f64();
    while let Some(bytes) = client.receive_message(Channel::Unreliable) {
        let packet = match ServerDatagram::decode(&bytes) {
            Ok(ServerDatagram::Snapshot(p)) => {
                stats.snapshot_bytes += bytes.len() as u64;
                p
            }
            Ok(ServerDatagram::Pong {
                client_time_us,
                server_time_us,
            }) => {
                on_pong(&mut sync, client_time_us, server_time_us, now);
                continue;
            }
            Ok(ServerDatagram::WeaponCheck(check)) => {
                let dead = local.single().is_ok_and(|id| dead_in(&latest, *id));
                if !dead && weapon_checks.0.is_none_or(|w| w.ack < check.ack_input_seq) {
                    weapon_checks.0 = Some(server_weapons(&check));
                }
                continue;
            }
            Err(e) => {
                stats.malformed += 1;
                debug!("dropped a datagram: {e}");
                continue;
            }
        };
        let snapshot = match history.resolve(&packet) {
            Ok(s) => s,
            Err(Unresolved::NoBaseline(_)) => {
                stats.unresolved += 1;
                continue;
            }
            Err(Unresolved::Invalid(e)) => {
                stats.malformed += 1;
                debug!("dropped a snapshot: {e}");
                continue;
            }
        };
        let server_time = snapshot.server_time_us as f64 / 1e6;
        if let Some(recent) = recent.as_deref_mut() {
            recent.record(&snapshot);
        }
        // On the clock render time runs on (a demo's may run faster or stop).
        delay.record(server_time, stream.elapsed(), stream.delta());
        // More waiting than the queue holds: the oldest show now.
        for early in inbox.take(&snapshot.events, now, &config, &mut stats) {
            shown.write(ShownEvent(early));
        }
        stats.note_snapshot(snapshot.seq);
        // Late snapshots still fill gaps in remote players' paths; a player the server
        // held back for our rate is no measurement.
        for (id, mut buffer) in &mut remotes {
            if snapshot.held.binary_search(id).is_ok() {
                continue;
            }
            if let Ok(i) = snapshot.players.binary_search_by_key(id, |p| p.id) {
                let p = &snapshot.players[i];
                buffer.push_steered(server_time, p.state(), p.spawn_count, p.intent_cmd());
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
        // Every snapshot's report counts, not only the newest of a frame's: at a few
        // frames a second most are never applied.
        // A report covers the server's time since the snapshot numbered before it, so
        // one after a snapshot lost or overtaken covers an interval, not the gap.
        let span = latest.0.as_ref().map_or(REPORT_SPAN, |l| {
            let numbers = snapshot.seq.wrapping_sub(l.seq).max(1);
            snapshot.server_time_us.saturating_sub(l.server_time_us) as f64
                / 1e6
                / f64::from(numbers)
        });
        pacing.observe(snapshot.input_queue, snapshot.repeated_inputs, span);
        pacing.count_holds(snapshot.touches.held);
        *latest = LatestSnapshot(Some(snapshot), false);
    }
}

/// The server's word on our weapons as prediction compares it.
fn server_weapons(c: &WeaponCheck) -> ServerWeapons {
    let [switching, cooldown, reloading, charge] = c.timers;
    ServerWeapons {
        ack: c.ack_input_seq,
        tick: c.tick,
        arsenal: Arsenal {
            current: c.current,
            switching,
            cooldown,
            reloading,
            ammo: c.ammo.map(|(magazine, reserve)| Ammo { magazine, reserve }),
            owned: c.owned,
            charge,
            alt_held: c.alt_held,
        },
    }
}

/// Applies the newest snapshot: our player's state goes to prediction (the first one is
/// adopted outright, which starts prediction) with our rockets, whether the server placed
/// us anew (a changed [`SpawnCount`]) and whether it ran short of our commands; the other
/// living players go to prediction as obstacles ([`OtherPlayers`]) and to their
/// interpolation buffers; newcomers are spawned and players no longer present removed.
/// Every player entity carries the snapshot's [`SpawnCount`], so a teleport can be told
/// from movement, and the server's counts of what it did to our player (pushes, bodies
/// met) tell others' doing from our own misprediction.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_snapshot(
    mut commands: Commands,
    mut latest: ResMut<LatestSnapshot>,
    mut stats: ResMut<ClientStats>,
    mut update: ResMut<ServerUpdate>,
    mut others: ResMut<OtherPlayers>,
    mut touches: ResMut<SeenTouches>,
    mut pacing: ResMut<InputPacing>,
    watching: Option<Res<crate::Watching>>,
    mut players: Query<(
        Entity,
        &PlayerId,
        &mut PlayerState,
        Option<&mut SpawnCount>,
        Has<LocalPlayer>,
        Has<Predicted>,
    )>,
) {
    let ours = players
        .iter()
        .find(|(.., local, _)| *local)
        .map(|(_, id, state, ..)| (*id, state.pos));
    let LatestSnapshot(Some(snapshot), applied) = &mut *latest else {
        return;
    };
    // A snapshot can overtake the Welcome (it is unreliable, the Welcome reliable): it
    // waits until we know which player is ours, or ours would be drawn as someone else
    // (a spectator has none: it waits for its Welcome only).
    if *applied || (ours.is_none() && watching.is_none()) {
        return;
    }
    *applied = true;
    let starved = pacing.repeated_since_applied(snapshot.repeated_inputs);
    let t = snapshot.touches;
    let touched = touches.changed([t.own_pushes, t.pushes, t.contacts, t.held]);
    let server_time = snapshot.server_time_us as f64 / 1e6;
    let mut present: BTreeMap<PlayerId, Entity> = BTreeMap::new();
    for (entity, id, mut state, spawns, local, predicted) in &mut players {
        let Ok(i) = snapshot.players.binary_search_by_key(id, |p| p.id) else {
            if !local {
                commands.entity(entity).despawn();
            }
            continue;
        };
        let snap = &snapshot.players[i];
        let server_state = snap.state();
        present.insert(*id, entity);
        let count = SpawnCount(snap.spawn_count);
        let teleported = spawns.as_ref().is_some_and(|s| **s != count);
        match spawns {
            Some(mut spawns) => *spawns = count,
            None => {
                commands.entity(entity).insert(count);
            }
        }
        match (local, predicted) {
            (true, true) => {
                update.0 = Some(ServerState {
                    ack: snapshot.ack_input_seq,
                    state: server_state,
                    rockets: rockets_in(snapshot),
                    teleported,
                    dead: snap.health == 0,
                    starved,
                    touched,
                });
            }
            (true, false) => {
                *state = server_state;
                commands.entity(entity).insert(Predicted);
            }
            (false, _) => *state = server_state,
        }
    }
    *others = OtherPlayers {
        ack: snapshot.ack_input_seq,
        owed: snapshot.touches.owed.into(),
        players: ours.map_or_else(Vec::new, |(me, _)| {
            snapshot
                .players
                .iter()
                .filter(|p| p.id != me && p.health > 0)
                .map(|p| OtherPlayer {
                    id: p.id,
                    state: p.state(),
                    moves_first: p.id < me,
                })
                .collect()
        }),
    };
    for p in &snapshot.players {
        let state = p.state();
        if !present.contains_key(&p.id) {
            let mut buffer = SnapshotBuffer::default();
            buffer.push_steered(server_time, state, p.spawn_count, p.intent_cmd());
            commands.spawn((
                player_bundle(p.id, state),
                SpawnCount(p.spawn_count),
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

/// Notes when each new snapshot arrived, for the silences between them
/// ([`SnapshotSilence`]).
pub(crate) fn note_snapshot_silence(
    time: Res<Time<Real>>,
    latest: Res<LatestSnapshot>,
    mut silence: ResMut<SnapshotSilence>,
) {
    if let Some(s) = &latest.0 {
        silence.note(s.seq, time.elapsed_secs_f64());
    }
}

/// The rockets in flight in `snapshot`, as prediction flies them (on the server's grid,
/// so exactly). Their age is not sent; it only matters to a rocket five seconds old, far
/// from its owner by then. Nor is an owner's order to burst one: that arrives as a
/// correction.
fn rockets_in(snapshot: &Snapshot) -> Vec<Rocket> {
    snapshot
        .projectiles
        .iter()
        .map(|p| Rocket {
            id: p.id,
            kind: p.kind,
            owner: p.owner,
            pos: Vec3::from_array(p.pos),
            vel: Vec3::from_array(p.vel),
            age: 0.0,
            detonate: false,
        })
        .collect()
}

/// What every player entity on the client has, ours or another's.
pub(crate) fn player_bundle(id: PlayerId, state: PlayerState) -> impl Bundle {
    (Player, id, state)
}

/// Snapshots: read from the datagrams, applied to the world, and their silence noted
/// before prediction reconciles (the first after an outage must find it in its patience).
pub(crate) struct SnapshotsPlugin;

impl Plugin for SnapshotsPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<LatestSnapshot>()
            .init_session_resource::<SnapshotHistory>()
            .add_systems(
                PreUpdate,
                (
                    receive_datagrams,
                    apply_snapshot,
                    note_snapshot_silence.run_if(in_game),
                )
                    .chain()
                    .in_set(ReceiveStep::Snapshots)
                    .run_if(resource_exists::<RenetClient>),
            );
    }
}
