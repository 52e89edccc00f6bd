//! The server's combat systems and their plugin: firing with lag compensation, flying
//! rockets, the state of the living and the dead, and the hitbox history.

use crate::{
    Arsenal, CombatEvent, HitZone, Hitbox, HitboxHistory, LagCompStats, NextDropId, Pushes, Rocket,
    Score, Shot, Team, ViewJudgement, ViewWindow, Vitals, WeaponKind, aim_direction,
    clamp_view_time, detonate_newest, fly_rocket, launch_rocket, pellet_direction, ray_hit,
    rocket_splash, step_arsenal,
};
use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState, Solid};
use sightline_sim::{
    CommandStep, CurrentCmd, Held, InputCmd, PlayerId, SimSet, Tick, TickConfig, angle_steps,
};

/// Self-damage from your own rockets is scaled by this (rocket jumps hurt, a little).
const SELF_SPLASH: f32 = 0.5;

/// The combat systems, for ordering against (they run in [`SimSet::Combat`]).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CombatSystems;

/// Server-side combat: firing, rockets, damage and deaths.
pub struct CombatPlugin;

impl Plugin for CombatPlugin {
    fn build(&self, app: &mut App) {
        let hz = app
            .world()
            .get_resource::<TickConfig>()
            .map_or(128, |c| c.tick_hz);
        app.insert_resource(HitboxHistory::new(hz, 1.0))
            .init_resource::<NextRocketId>()
            .init_resource::<NextDropId>()
            .init_resource::<LagCompStats>()
            .add_message::<CombatEvent>()
            .add_systems(
                Startup,
                crate::items::spawn_items.run_if(resource_exists::<CurrentMap>),
            )
            .add_systems(
                FixedUpdate,
                silence_the_dead
                    .after(SimSet::ReadInputs)
                    .before(SimSet::Move),
            )
            // A second command in a tick: it too is silenced if its player is dead (perhaps
            // killed by this tick's first), and fires; the world's part (rockets flying,
            // pick-ups) is the tick's, once.
            .add_systems(
                CommandStep,
                (
                    silence_the_dead
                        .after(SimSet::ReadInputs)
                        .before(SimSet::Move),
                    fire_weapons
                        .in_set(SimSet::Combat)
                        .in_set(CombatSystems)
                        .run_if(resource_exists::<CurrentMap>),
                ),
            )
            .add_systems(
                FixedUpdate,
                (
                    tick_vitals,
                    fire_weapons,
                    fly_rockets,
                    crate::drops::drop_weapons_of_the_dead,
                    crate::items::take_items,
                    crate::drops::take_dropped_weapons,
                )
                    .chain()
                    .in_set(SimSet::Combat)
                    .in_set(CombatSystems)
                    .run_if(resource_exists::<CurrentMap>),
            )
            .add_systems(FixedUpdate, record_hitboxes.in_set(SimSet::RecordHistory));
    }
}

/// The number the next projectile launched takes (a demo's keyframe keeps it).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NextRocketId(pub u16);

/// What a dead player's command does: it only looks around. The server runs the dead's
/// commands through this, and a client replays its own through it once it learns it died.
pub fn silenced(cmd: &InputCmd) -> InputCmd {
    InputCmd {
        seq: cmd.seq,
        yaw: cmd.yaw,
        pitch: cmd.pitch,
        ..default()
    }
}

/// The dead do nothing but wait, and nobody bumps into them.
fn silence_the_dead(mut players: Query<(&Vitals, &mut CurrentCmd, &mut Solid)>) {
    for (vitals, mut cmd, mut solid) in &mut players {
        solid.set_if_neq(Solid(vitals.alive()));
        if !vitals.alive() {
            cmd.0 = silenced(&cmd.0);
        }
    }
}

fn tick_vitals(config: Res<TickConfig>, mut players: Query<&mut Vitals>) {
    let dt = config.dt();
    for mut v in &mut players {
        v.tick(dt);
    }
}

/// Everyone who can fight and be hurt.
type Combatants<'w, 's> = Query<
    'w,
    's,
    (
        &'static PlayerId,
        &'static mut PlayerState,
        &'static CurrentCmd,
        &'static mut Arsenal,
        &'static mut Vitals,
        &'static mut Score,
        Option<&'static Team>,
    ),
>;

struct PendingShot {
    shooter: PlayerId,
    shot: Shot,
    origin: Vec3,
    dirs: Vec<Vec3>,
    view: f64,
}

/// Runs every living player's weapon; hitscan shots are judged against the hitboxes as the
/// shooter saw them and stopped by walls; rockets are launched. A human's claimed view
/// time must lie in its [`ViewWindow`] or the shot is refused, and one older than the
/// rewind limit is judged at the limit and said to be late; a bot's (which has none) is
/// clamped to the rewind limit.
fn fire_weapons(
    mut commands: Commands,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    params: Res<MoveParams>,
    map: Res<CurrentMap>,
    history: Res<HitboxHistory>,
    mut next_rocket: ResMut<NextRocketId>,
    mut lagcomp: ResMut<LagCompStats>,
    mut events: MessageWriter<CombatEvent>,
    windows: Query<(&PlayerId, &ViewWindow)>,
    held: Query<(&PlayerId, &Held)>,
    mut rockets: Query<&mut Rocket>,
    mut players: Combatants,
) {
    let window_of = |id: PlayerId| windows.iter().find(|(p, _)| **p == id).map(|(_, w)| *w);
    let is_held = |id: PlayerId| held.iter().any(|(p, h)| *p == id && h.0);
    let dt = config.dt();
    let mut shots = Vec::new();
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    for (id, state, cmd, mut arsenal, vitals, ..) in order {
        // A held player's weapon waits with it for the next command.
        if !vitals.alive() || is_held(*id) {
            continue;
        }
        let Some(shot) = step_arsenal(&mut arsenal, &cmd.0, dt) else {
            continue;
        };
        if shot.detonates() {
            detonate_newest(rockets.iter_mut().map(|r| r.into_inner()), *id);
            continue;
        }
        let origin = params.eye_position(&state);
        let forward = aim_direction(cmd.0.yaw, cmd.0.pitch);
        events.write(CombatEvent::Fired {
            shooter: *id,
            weapon: shot.weapon,
            origin,
            dir: forward,
            aim: [angle_steps(cmd.0.yaw), angle_steps(cmd.0.pitch)],
            tick: tick.0,
        });
        if let Some(kind) = shot.projectile() {
            next_rocket.0 = next_rocket.0.wrapping_add(1);
            let rocket = launch_rocket(next_rocket.0, kind, *id, &state, &cmd.0, &params);
            commands.spawn(rocket);
            continue;
        }
        let claimed = cmd.0.view_time();
        let view = match window_of(*id).map(|w| w.judge(claimed)) {
            Some(ViewJudgement::OnTime(view)) => view,
            Some(ViewJudgement::Late { at, excess }) => {
                lagcomp.late = lagcomp.late.saturating_add(1);
                events.write(CombatEvent::ShotLate {
                    shooter: *id,
                    tick: tick.0,
                    excess: (excess / f64::from(config.tick_hz.max(1))) as f32,
                });
                at
            }
            Some(ViewJudgement::Refused) => {
                lagcomp.refused = lagcomp.refused.saturating_add(1);
                events.write(CombatEvent::ShotRefused {
                    shooter: *id,
                    tick: tick.0,
                });
                continue;
            }
            None => clamp_view_time(tick.0, claimed, config.tick_hz),
        };
        lagcomp.judged = lagcomp.judged.saturating_add(1);
        let (pellets, spread_deg) = shot.pellets();
        let spread = spread_deg.to_radians();
        shots.push(PendingShot {
            shooter: *id,
            shot,
            origin,
            dirs: (0..pellets)
                .map(|p| pellet_direction(forward, spread, tick.0, id.0, p))
                .collect(),
            view,
        });
    }
    for shot in shots {
        let boxes = history.rewound(shot.view, config.snapshot_every);
        let dealt = judge_hitscan(&shot, &boxes, &map, &params);
        for (target, damage, zone) in dealt {
            apply_damage(
                &mut players,
                &mut events,
                Blow {
                    shooter: shot.shooter,
                    target,
                    amount: damage,
                    zone,
                    weapon: shot.shot.weapon,
                    seen: shot.view.floor() as u32,
                },
            );
        }
    }
}

/// Damage per target over all of a hitscan shot's pellets against `boxes` (the hitboxes
/// as the shooter saw them), and whether any struck the head. Each pellet stops at the
/// first wall, and at the first body unless the weapon pierces; damage falls off with
/// the distance it travelled.
fn judge_hitscan(
    shot: &PendingShot,
    boxes: &[(PlayerId, Hitbox)],
    map: &CurrentMap,
    params: &MoveParams,
) -> Vec<(PlayerId, f32, HitZone)> {
    let def = shot.shot.weapon.def();
    let mut dealt: Vec<(PlayerId, f32, HitZone)> = Vec::new();
    for dir in &shot.dirs {
        let reach = map
            .world
            .cast_ray(shot.origin, *dir, def.range)
            .map_or(def.range, |(t, _)| t);
        let mut struck: Vec<(f32, PlayerId, HitZone)> = boxes
            .iter()
            .filter(|(id, _)| *id != shot.shooter)
            .filter_map(|(id, hb)| {
                ray_hit(shot.origin, *dir, reach, hb, params).map(|(t, z)| (t, *id, z))
            })
            .collect();
        struck.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !def.pierces {
            struck.truncate(1);
        }
        for (distance, target, zone) in struck {
            let head = if zone == HitZone::Head {
                def.head_multiplier
            } else {
                1.0
            };
            let falloff = def.falloff.map_or(1.0, |f| f.scale(distance));
            let damage = def.damage * head * falloff;
            match dealt.iter_mut().find(|(id, ..)| *id == target) {
                Some(d) => {
                    d.1 += damage;
                    if zone == HitZone::Head {
                        d.2 = HitZone::Head;
                    }
                }
                None => dealt.push((target, damage, zone)),
            }
        }
    }
    dealt
}

/// One hit to deal: who struck whom, how hard and where, with what, in which world.
struct Blow {
    shooter: PlayerId,
    target: PlayerId,
    amount: f32,
    zone: HitZone,
    weapon: WeaponKind,
    /// See [`CombatEvent::Hit`]'s `seen`.
    seen: u32,
}

/// Deals `blow`, and on a kill updates both scores and says so.
fn apply_damage(players: &mut Combatants, events: &mut MessageWriter<CombatEvent>, blow: Blow) {
    let Blow {
        shooter,
        target,
        amount,
        zone,
        weapon,
        seen,
    } = blow;
    let team_of = |players: &Combatants, who: PlayerId| {
        players
            .iter()
            .find(|(id, ..)| **id == who)
            .and_then(|(.., team)| team.copied())
    };
    // Team mates do not hurt each other (but rockets still hurt their owner).
    if shooter != target
        && let Some(team) = team_of(players, shooter)
        && team_of(players, target) == Some(team)
    {
        return;
    }
    // Quad damage multiplies what its holder deals, to themselves too (as in Quake 3).
    let factor = players
        .iter()
        .find(|(id, ..)| **id == shooter)
        .map_or(1.0, |(.., v, _, _)| v.damage_factor());
    let Some((_, _, _, _, mut vitals, mut score, _)) =
        players.iter_mut().find(|(id, ..)| **id == target)
    else {
        return;
    };
    let done = vitals.damage(amount * factor);
    if done.health + done.armor <= 0.0 {
        return;
    }
    events.write(CombatEvent::Hit {
        shooter,
        target,
        damage: done.health + done.armor,
        zone,
        weapon,
        seen,
    });
    if !done.killed {
        return;
    }
    score.deaths += 1;
    if shooter == target {
        score.frags -= 1;
    } else if let Some((.., mut killer, _)) = players.iter_mut().find(|(id, ..)| **id == shooter) {
        killer.frags += 1;
    }
    events.write(CombatEvent::Killed {
        victim: target,
        killer: shooter,
        weapon,
    });
}

/// Moves rockets; one bursts on touching a wall or a player, or at the end of its life,
/// hurting and pushing everyone within its splash radius.
fn fly_rockets(
    mut commands: Commands,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    params: Res<MoveParams>,
    map: Res<CurrentMap>,
    mut events: MessageWriter<CombatEvent>,
    mut rockets: Query<(Entity, &mut Rocket)>,
    mut pushes: Query<(&PlayerId, &mut Pushes)>,
    mut players: Combatants,
) {
    let dt = config.dt();
    // In number order, not the entities': which of two rockets kills a player must not
    // depend on where each was stored (a demo's replay stores them elsewhere).
    let mut flying: Vec<_> = rockets.iter_mut().collect();
    flying.sort_by_key(|(_, rocket)| rocket.id);
    for (entity, mut rocket) in flying {
        let targets: Vec<Hitbox> = players
            .iter()
            .filter(|(id, _, _, _, v, ..)| **id != rocket.owner && v.alive())
            .map(|(_, s, ..)| Hitbox::of(s))
            .collect();
        let Some(at) = fly_rocket(&mut rocket, &map.world, targets, &params, dt) else {
            continue;
        };
        commands.entity(entity).despawn();
        let owner = rocket.owner;
        events.write(CombatEvent::Exploded {
            kind: rocket.kind,
            at,
            tick: tick.0,
            rocket: rocket.id,
            owner,
        });
        let mut hurt: Vec<(PlayerId, f32)> = Vec::new();
        for (id, mut state, ..) in &mut players {
            let Some((damage, push)) = rocket_splash(rocket.kind, at, &state, &map.world, &params)
            else {
                continue;
            };
            state.vel += push;
            if let Some((_, mut count)) = pushes.iter_mut().find(|(p, _)| *p == id) {
                count.count(*id, owner);
            }
            hurt.push((
                *id,
                if *id == owner {
                    damage * SELF_SPLASH
                } else {
                    damage
                },
            ));
        }
        for (target, damage) in hurt {
            apply_damage(
                &mut players,
                &mut events,
                Blow {
                    shooter: owner,
                    target,
                    amount: damage,
                    zone: HitZone::Body,
                    weapon: rocket.kind.weapon(),
                    seen: tick.0,
                },
            );
        }
    }
}

/// Remembers where every living player's hitbox is after this tick.
fn record_hitboxes(
    tick: Res<Tick>,
    mut history: ResMut<HitboxHistory>,
    players: Query<(&PlayerId, &PlayerState, &Vitals)>,
) {
    let boxes = players
        .iter()
        .filter(|(_, _, v)| v.alive())
        .map(|(id, s, _)| (*id, Hitbox::of(s)))
        .collect();
    history.record(tick.0, boxes);
}
