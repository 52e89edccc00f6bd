//! The server's side of combat: respawning the dead, and telling clients what happened.

use crate::connection::{Connection, ConnectionStage};
use crate::interest::{Interest, hears_explosion};
use crate::outbox::Outgoing;
use crate::snapshots::EventQueue;
use crate::spawn::{choose_spawn, spawns_of};
use crate::spectators::{SpectatorFeed, tell_match};
use crate::stats::SnapshotStats;
use bevy::prelude::*;
use sightline_combat::CombatSystems;
use sightline_combat::{Arsenal, CombatEvent, Flags, HitZone, SpawnCount, Team, Vitals, respawned};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_protocol::{PlayerEvent, ProjectileSnap, ServerMessage};
use sightline_sim::SimSet;
use sightline_sim::{PlayerId, Tick};

/// Brings back the dead whose respawn time is up, at the spawn point farthest from the
/// living, with fresh health, weapons and spawn protection. A respawn is a teleport: the
/// player's [`SpawnCount`] goes up.
pub(crate) fn respawn_players(
    map: Res<CurrentMap>,
    flags: Res<Flags>,
    mut players: Query<(
        &mut PlayerState,
        &mut Vitals,
        &mut Arsenal,
        &mut SpawnCount,
        Option<&Team>,
    )>,
) {
    let living: Vec<Vec3> = players
        .iter()
        .filter(|(_, v, ..)| v.alive())
        .map(|(s, ..)| s.pos)
        .collect();
    for (mut state, mut vitals, mut arsenal, mut spawns, team) in &mut players {
        if vitals.alive() || vitals.respawn_in > 0.0 {
            continue;
        }
        let spawn = choose_spawn(&spawns_of(&map.def.spawns, &flags, team.copied()), &living);
        (*state, *vitals, *arsenal) = respawned(spawn);
        spawns.bump();
    }
}

/// Tells clients what combat did: fire and bursts as reliable messages (a shot to whoever
/// is sent its shooter, a burst to whoever was sent the rocket or could see or hear it;
/// to spectators later, through the [`SpectatorFeed`]); deaths to everyone,
/// a hit confirmation to the shooter, a damage indicator to the victim and verdicts on
/// late or refused shots to the shooter as events in their snapshots ([`EventQueue`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_combat_events(
    mut events: MessageReader<CombatEvent>,
    mut outbox: MessageWriter<Outgoing>,
    mut queues: Query<(&Connection, &PlayerId, &mut EventQueue)>,
    positions: Query<(&PlayerId, &PlayerState)>,
    views: Query<(&Connection, &PlayerId, &PlayerState, &Interest)>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    now: Res<Tick>,
    mut stats: ResMut<SnapshotStats>,
    mut feed: ResMut<SpectatorFeed>,
) {
    // Queues `event` of the world at `tick` for `who` (everyone playing: `None`).
    let mut tell = |who: Option<PlayerId>, tick: u32, event: PlayerEvent| {
        for (conn, id, mut queue) in &mut queues {
            if conn.stage == ConnectionStage::Playing && who.is_none_or(|w| w == *id) {
                stats.events_expired += queue.push(now.0, tick, event) as u64;
            }
        }
    };
    for event in events.read() {
        match *event {
            CombatEvent::Fired {
                shooter,
                weapon,
                aim,
                tick,
                ..
            } => {
                let msg = ServerMessage::Fired {
                    shooter,
                    weapon,
                    aim,
                    tick,
                };
                feed.news(tick, msg.clone());
                // By interest, as the shooter's position is: a shot from a player a
                // client is not sent would be a radar. The shooter predicts its own.
                for (conn, me, _, interest) in &views {
                    let told = conn.stage == ConnectionStage::Playing
                        && *me != shooter
                        && interest.sends(shooter, now.0);
                    if told {
                        outbox.write(Outgoing::To(conn.client_id, msg.clone()));
                    }
                }
            }
            CombatEvent::Hit {
                shooter,
                target,
                damage,
                zone,
                seen,
                ..
            } => {
                let damage = damage.round().clamp(0.0, u16::MAX as f32) as u16;
                let head = zone == HitZone::Head;
                tell(
                    Some(shooter),
                    seen,
                    PlayerEvent::HitConfirm {
                        target,
                        damage,
                        head,
                    },
                );
                let from = positions
                    .iter()
                    .find(|(id, _)| **id == shooter)
                    .map_or(Vec3::ZERO, |(_, s)| s.pos);
                let hurt = PlayerEvent::Damaged {
                    attacker: shooter,
                    damage,
                    from: from.to_array(),
                };
                tell(Some(target), now.0, hurt);
            }
            CombatEvent::Killed {
                victim,
                killer,
                weapon,
            } => {
                info!(
                    "player {} killed player {} ({})",
                    killer.0,
                    victim.0,
                    weapon.def().name
                );
                let killed = PlayerEvent::Killed {
                    victim,
                    killer,
                    weapon,
                };
                tell(None, now.0, killed);
                feed.death(now.0, killed);
            }
            CombatEvent::ShotLate {
                shooter,
                tick,
                excess,
            } => {
                let excess_ms = (excess * 1000.0).round().clamp(0.0, f32::from(u16::MAX)) as u16;
                tell(Some(shooter), tick, PlayerEvent::ShotLate { excess_ms });
            }
            CombatEvent::ShotRefused { shooter, tick } => {
                tell(Some(shooter), tick, PlayerEvent::ShotRefused);
            }
            CombatEvent::Exploded {
                kind,
                at,
                tick,
                rocket,
                owner,
            } => {
                let msg = ServerMessage::Exploded {
                    kind,
                    at: at.to_array(),
                    tick,
                };
                feed.news(tick, msg.clone());
                let rocket = ProjectileSnap {
                    id: rocket,
                    kind,
                    owner,
                    pos: at.to_array(),
                    vel: [0.0; 3],
                };
                for (conn, me, state, interest) in &views {
                    let told = conn.stage == ConnectionStage::Playing
                        && (interest.sends_rocket(&rocket, Some(*me), now.0)
                            || hears_explosion(&map.world, params.eye_position(state), at));
                    if told {
                        outbox.write(Outgoing::To(conn.client_id, msg.clone()));
                    }
                }
            }
            // Every player hears of a flag, as an announcer tells a whole server;
            // spectators when their late world reaches it.
            CombatEvent::Flag { team, news, by } => {
                info!(
                    "{} flag: {news:?}{}",
                    team.name(),
                    by.map_or(String::new(), |p| format!(" by player {}", p.0))
                );
                let msg = ServerMessage::Flag { team, news, by };
                tell_match(&mut outbox, &mut feed, now.0, msg);
            }
        }
    }
}

/// The server's side of combat: the dead respawned before the match rules count the tick,
/// and what happened told to clients once a frame.
pub(crate) struct RespawnPlugin;

impl Plugin for RespawnPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            FixedUpdate,
            respawn_players
                .in_set(SimSet::Combat)
                .after(CombatSystems)
                .before(crate::rules::run_match),
        )
        .add_systems(Update, send_combat_events);
    }
}
