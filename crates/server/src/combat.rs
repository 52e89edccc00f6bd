//! The server's side of combat: respawning the dead, and telling clients what happened.

use crate::connection::{Connection, ConnectionStage};
use crate::interest::{Interest, hears_explosion};
use crate::outbox::Outgoing;
use crate::spawn::choose_spawn;
use bevy::prelude::*;
use sightline_combat::{Arsenal, CombatEvent, HitZone, SpawnCount, Vitals, respawned};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_protocol::{ProjectileSnap, ServerMessage};
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

/// Turns combat events into reliable messages: fire and deaths for everyone, a hit
/// confirmation for the shooter, a damage indicator for the victim, a rocket's burst for
/// whoever was sent the rocket or could see or hear the burst.
pub(crate) fn send_combat_events(
    mut events: MessageReader<CombatEvent>,
    mut outbox: MessageWriter<Outgoing>,
    connections: Query<(&Connection, &PlayerId)>,
    positions: Query<(&PlayerId, &PlayerState)>,
    views: Query<(&Connection, &PlayerId, &PlayerState, &Interest)>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    now: Res<Tick>,
) {
    let client_of = |id: PlayerId| {
        connections
            .iter()
            .find(|(c, p)| **p == id && c.stage == ConnectionStage::Playing)
            .map(|(c, _)| c.client_id)
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
                // The shooter predicts its own effects.
                match client_of(shooter) {
                    Some(client) => Outgoing::ToPlayingExcept(client, msg),
                    None => Outgoing::ToPlaying(msg),
                }
            }
            CombatEvent::Hit {
                shooter,
                target,
                damage,
                zone,
                ..
            } => {
                let amount = damage.round().clamp(0.0, u16::MAX as f32) as u16;
                if let Some(client) = client_of(shooter) {
                    let msg = ServerMessage::HitConfirm {
                        target,
                        damage: amount,
                        head: zone == HitZone::Head,
                    };
                    outbox.write(Outgoing::To(client, msg));
                }
                let Some(client) = client_of(target) else {
                    continue;
                };
                let from = positions
                    .iter()
                    .find(|(id, _)| **id == shooter)
                    .map_or(Vec3::ZERO, |(_, s)| s.pos);
                let msg = ServerMessage::Damaged {
                    attacker: shooter,
                    damage: amount,
                    from: from.to_array(),
                };
                Outgoing::To(client, msg)
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
                Outgoing::ToPlaying(ServerMessage::Killed {
                    victim,
                    killer,
                    weapon,
                })
            }
            CombatEvent::ShotLate {
                shooter,
                tick,
                excess,
            } => {
                let Some(client) = client_of(shooter) else {
                    continue;
                };
                let excess_ms = (excess * 1000.0).round().clamp(0.0, f32::from(u16::MAX)) as u16;
                Outgoing::To(client, ServerMessage::ShotLate { tick, excess_ms })
            }
            CombatEvent::ShotRefused { shooter, tick } => {
                let Some(client) = client_of(shooter) else {
                    continue;
                };
                Outgoing::To(client, ServerMessage::ShotRefused { tick })
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
