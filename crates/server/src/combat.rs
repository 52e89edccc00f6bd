//! The server's side of combat: respawning the dead, and telling clients what happened.

use crate::connection::{Connection, ConnectionStage};
use crate::interest::{Interest, hears_explosion};
use crate::outbox::Outgoing;
use crate::snapshots::EventQueue;
use crate::spawn::choose_spawn;
use crate::spectators::SpectatorFeed;
use crate::stats::SnapshotStats;
use bevy::prelude::*;
use sightline_combat::{Arsenal, CombatEvent, HitZone, SpawnCount, Vitals, respawned};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_protocol::{PlayerEvent, ProjectileSnap, ServerMessage};
use sightline_sim::{PlayerId, Tick};

/// Brings back the dead whose respawn time is up, at the spawn point farthest from the
/// living, with fresh health, weapons and spawn protection. A respawn is a teleport: the
/// player's [`SpawnCount`] goes up.
pub(crate) fn respawn_players(
    map: Res<CurrentMap>,
    mut players: Query<(&mut PlayerState, &mut Vitals, &mut Arsenal, &mut SpawnCount)>,
) {
    let living: Vec<Vec3> = players
        .iter()
        .filter(|(_, v, ..)| v.alive())
        .map(|(s, ..)| s.pos)
        .collect();
    for (mut state, mut vitals, mut arsenal, mut spawns) in &mut players {
        if vitals.alive() || vitals.respawn_in > 0.0 {
            continue;
        }
        let spawn = choose_spawn(&map.def.spawns, &living);
        (*state, *vitals, *arsenal) = respawned(spawn);
        spawns.bump();
    }
}

/// Tells clients what combat did: fire and bursts as reliable messages (to every player,
/// and to whoever was sent the rocket or could see or hear the burst; to spectators
/// later, through the [`SpectatorFeed`]); deaths to everyone,
/// a hit confirmation to the shooter, a damage indicator to the victim and verdicts on
/// late or refused shots to the shooter as events in their snapshots ([`EventQueue`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_combat_events(
    mut events: MessageReader<CombatEvent>,
    mut outbox: MessageWriter<Outgoing>,
    connections: Query<(&Connection, &PlayerId)>,
    mut queues: Query<(&Connection, &PlayerId, &mut EventQueue)>,
    positions: Query<(&PlayerId, &PlayerState)>,
    views: Query<(&Connection, &PlayerId, &PlayerState, &Interest)>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    now: Res<Tick>,
    mut stats: ResMut<SnapshotStats>,
    mut feed: ResMut<SpectatorFeed>,
) {
    let client_of = |id: PlayerId| {
        connections
            .iter()
            .find(|(c, p)| **p == id && c.stage == ConnectionStage::Playing)
            .map(|(c, _)| c.client_id)
    };
    // Queues `event` of the world at `tick` for `who` (everyone playing: `None`).
    let mut tell = |who: Option<PlayerId>, tick: u32, event: PlayerEvent| {
        for (conn, id, mut queue) in &mut queues {
            if conn.stage == ConnectionStage::Playing && who.is_none_or(|w| w == *id) {
                stats.events_expired += queue.push(now.0, tick, event) as u64;
            }
        }
    };
    for event in events.read() {
        let out = match *event {
            CombatEvent::Fired {
                shooter,
                weapon,
                origin,
                dir,
                tick,
            } => {
                let msg = ServerMessage::Fired {
                    shooter,
                    weapon,
                    origin: origin.to_array(),
                    dir: dir.to_array(),
                    tick,
                };
                feed.news(tick, msg.clone());
                // The shooter predicts its own effects.
                Outgoing::ToPlayersExcept(client_of(shooter), msg)
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
                continue;
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
                continue;
            }
            CombatEvent::ShotLate {
                shooter,
                tick,
                excess,
            } => {
                let excess_ms = (excess * 1000.0).round().clamp(0.0, f32::from(u16::MAX)) as u16;
                tell(Some(shooter), tick, PlayerEvent::ShotLate { excess_ms });
                continue;
            }
            CombatEvent::ShotRefused { shooter, tick } => {
                tell(Some(shooter), tick, PlayerEvent::ShotRefused);
                continue;
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
                continue;
            }
        };
        outbox.write(out);
    }
}
