//! The server's combat systems: firing with lag compensation, rockets, the state of the
//! living and the dead, and the hitbox history.

use crate::{
    Arsenal, HitZone, Hitbox, HitboxHistory, LagCompStats, Pushes, Team, ViewWindow, Vitals,
    WeaponKind, clamp_view_time, pellet_direction, ray_hit, splash, step_arsenal,
};
use bevy::prelude::*;
use sightline_map::CollisionWorld;
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState, Solid, view_vectors};
use sightline_sim::{CurrentCmd, Held, InputCmd, PlayerId, SimSet, Tick, TickConfig};

/// Seconds a rocket flies before it bursts on its own.
const ROCKET_LIFETIME: f32 = 5.0;
/// Self-damage from your own rockets is scaled by this (rocket jumps hurt, a little).
const SELF_SPLASH: f32 = 0.5;

/// Something that happened in combat, for the network and the logs.
#[derive(Message, Debug, Clone, PartialEq)]
pub enum CombatEvent {
    /// A weapon went off.
    Fired {
        /// Who fired.
        shooter: PlayerId,
        /// With what.
        weapon: WeaponKind,
        /// From where (the eye).
        origin: Vec3,
        /// Which way.
        dir: Vec3,
        /// The tick it happened in.
        tick: u32,
    },
    /// A shot or splash struck a player.
    Hit {
        /// Who fired.
        shooter: PlayerId,
        /// Who was hit.
        target: PlayerId,
        /// Health and armour taken.
        damage: f32,
        /// Where.
        zone: HitZone,
    },
    /// A player died.
    Killed {
        /// Who died.
        victim: PlayerId,
        /// Who killed them (themselves included).
        killer: PlayerId,
        /// With what.
        weapon: WeaponKind,
    },
    /// A rocket burst.
    Exploded {
        /// Where.
        at: Vec3,
        /// The tick it happened in.
        tick: u32,
        /// The rocket's id.
        rocket: u16,
        /// Who fired it.
        owner: PlayerId,
    },
}

/// Frags and deaths.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Score {
    /// Kills of others, less suicides.
    pub frags: i32,
    /// Times died.
    pub deaths: u32,
}

/// A rocket in flight (server-simulated).
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct Rocket {
    /// Projectile number, for snapshots.
    pub id: u16,
    /// Who fired it.
    pub owner: PlayerId,
    /// Where it is.
    pub pos: Vec3,
    /// Its velocity.
    pub vel: Vec3,
    /// Seconds in flight.
    pub age: f32,
}

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
            .add_systems(
                FixedUpdate,
                (
                    tick_vitals,
                    fire_weapons,
                    fly_rockets,
                    crate::items::take_items,
                )
                    .chain()
                    .in_set(SimSet::Combat)
                    .in_set(CombatSystems)
                    .run_if(resource_exists::<CurrentMap>),
            )
            .add_systems(FixedUpdate, record_hitboxes.in_set(SimSet::RecordHistory));
    }
}

#[derive(Resource, Default)]
struct NextRocketId(u16);

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
        v.protection = (v.protection - dt).max(0.0);
        if !v.alive() {
            v.respawn_in = (v.respawn_in - dt).max(0.0);
        }
    }
}

/// The way a player looks: yaw and pitch to a unit vector.
pub fn aim_direction(yaw: f32, pitch: f32) -> Vec3 {
    let (forward, _) = view_vectors(yaw);
    let (s, c) = (libm::sinf(pitch), libm::cosf(pitch));
    (forward * c + Vec3::Y * s).normalize()
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
    weapon: WeaponKind,
    origin: Vec3,
    dirs: Vec<Vec3>,
    view: f64,
}

/// Runs every living player's weapon; hitscan shots are judged against the hitboxes as the
/// shooter saw them and stopped by walls; rockets are launched. A human's claimed view
/// time must lie in its [`ViewWindow`] or the shot is refused; a bot's (which has none)
/// is clamped to the rewind limit.
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
        let def = shot.weapon.def();
        let origin = params.eye_position(&state);
        let forward = aim_direction(cmd.0.yaw, cmd.0.pitch);
        events.write(CombatEvent::Fired {
            shooter: *id,
            weapon: shot.weapon,
            origin,
            dir: forward,
            tick: tick.0,
        });
        if def.projectile_speed > 0.0 {
            next_rocket.0 = next_rocket.0.wrapping_add(1);
            commands.spawn(launch_rocket(next_rocket.0, *id, &state, &cmd.0, &params));
            continue;
        }
        let claimed = cmd.0.view_time();
        let view = match window_of(*id) {
            Some(window) if window.contains(claimed) => claimed,
            Some(_) => {
                lagcomp.refused = lagcomp.refused.saturating_add(1);
                continue;
            }
            None => clamp_view_time(tick.0, claimed, config.tick_hz),
        };
        lagcomp.judged = lagcomp.judged.saturating_add(1);
        let spread = def.spread_deg.to_radians();
        shots.push(PendingShot {
            shooter: *id,
            weapon: shot.weapon,
            origin,
            dirs: (0..def.pellets)
                .map(|p| pellet_direction(forward, spread, tick.0, id.0, p))
                .collect(),
            view,
        });
    }
    for shot in shots {
        let def = shot.weapon.def();
        let boxes = history.rewound(shot.view, config.snapshot_every);
        // Damage per target over all pellets, and whether any struck the head.
        let mut dealt: Vec<(PlayerId, f32, HitZone)> = Vec::new();
        for dir in &shot.dirs {
            let nearest = boxes
                .iter()
                .filter(|(id, _)| *id != shot.shooter)
                .filter_map(|(id, hb)| {
                    ray_hit(shot.origin, *dir, def.range, hb, &params).map(|(t, z)| (t, *id, z))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((distance, target, zone)) = nearest else {
                continue;
            };
            if map.world.cast_ray(shot.origin, *dir, distance).is_some() {
                continue; // a wall stands in the way
            }
            let damage = def.damage
                * if zone == HitZone::Head {
                    def.head_multiplier
                } else {
                    1.0
                };
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
        for (target, damage, zone) in dealt {
            apply_damage(
                &mut players,
                &mut events,
                shot.shooter,
                target,
                damage,
                zone,
                shot.weapon,
            );
        }
    }
}

/// Damages `target`, and on a kill updates both scores and says so.
fn apply_damage(
    players: &mut Combatants,
    events: &mut MessageWriter<CombatEvent>,
    shooter: PlayerId,
    target: PlayerId,
    amount: f32,
    zone: HitZone,
    weapon: WeaponKind,
) {
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
    let Some((_, _, _, _, mut vitals, mut score, _)) =
        players.iter_mut().find(|(id, ..)| **id == target)
    else {
        return;
    };
    let done = vitals.damage(amount);
    if done.health + done.armor <= 0.0 {
        return;
    }
    events.write(CombatEvent::Hit {
        shooter,
        target,
        damage: done.health + done.armor,
        zone,
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

/// A rocket fired by `owner` standing in `state` (after this tick's move) with `cmd`: from
/// half a metre in front of the eye, along the aim. The server's launch and the client's
/// prediction of its own rockets.
pub fn launch_rocket(
    id: u16,
    owner: PlayerId,
    state: &PlayerState,
    cmd: &InputCmd,
    params: &MoveParams,
) -> Rocket {
    let origin = params.eye_position(state);
    let forward = aim_direction(cmd.yaw, cmd.pitch);
    Rocket {
        id,
        owner,
        pos: origin + forward * 0.5,
        vel: forward * WeaponKind::Rockets.def().projectile_speed,
        age: 0.0,
    }
}

/// Flies a rocket for one tick of `dt`: where it bursts, on a wall, on one of `targets`
/// (the hitboxes of the living, its owner left out) or at the end of its life, or `None`
/// while it flies on. Pure, so the client flies its own rockets exactly as the server does.
pub fn fly_rocket(
    rocket: &mut Rocket,
    world: &CollisionWorld,
    targets: impl IntoIterator<Item = Hitbox>,
    params: &MoveParams,
    dt: f32,
) -> Option<Vec3> {
    let step = rocket.vel * dt;
    let length = step.length();
    let dir = step / length.max(1e-6);
    let wall = world.cast_ray(rocket.pos, dir, length).map(|(t, _)| t);
    let body = targets
        .into_iter()
        .filter_map(|hitbox| ray_hit(rocket.pos, dir, length, &hitbox, params).map(|(t, _)| t))
        .min_by(f32::total_cmp);
    let impact = match (wall, body) {
        (Some(w), Some(b)) => Some(w.min(b)),
        (w, b) => w.or(b),
    };
    rocket.age += dt;
    match impact {
        Some(t) => Some(rocket.pos + dir * t),
        None if rocket.age >= ROCKET_LIFETIME => Some(rocket.pos),
        None => {
            rocket.pos += step;
            None
        }
    }
}

/// What a rocket bursting at `at` does to a player in `state`: splash damage (before the
/// owner's own share is taken off) and the push added to its velocity.
pub fn rocket_splash(at: Vec3, state: &PlayerState, params: &MoveParams) -> Option<(f32, Vec3)> {
    let def = WeaponKind::Rockets.def();
    let center = Hitbox::of(state).center(params);
    splash(
        at,
        def.splash_radius,
        def.splash_damage,
        def.knockback,
        center,
    )
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
    for (entity, mut rocket) in &mut rockets {
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
            at,
            tick: tick.0,
            rocket: rocket.id,
            owner,
        });
        let mut hurt: Vec<(PlayerId, f32)> = Vec::new();
        for (id, mut state, ..) in &mut players {
            let Some((damage, push)) = rocket_splash(at, &state, &params) else {
                continue;
            };
            state.vel += push;
            if let Some((_, mut count)) = pushes.iter_mut().find(|(p, _)| *p == id) {
                count.0 = count.0.wrapping_add(1);
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
                owner,
                target,
                damage,
                HitZone::Body,
                WeaponKind::Rockets,
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

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::Quat;

    fn floor() -> CollisionWorld {
        CollisionWorld::from_boxes([(
            Vec3::new(0.0, -0.5, 0.0),
            Vec3::new(50.0, 0.5, 50.0),
            Quat::IDENTITY,
        )])
    }

    #[test]
    fn a_rocket_at_your_feet_bursts_on_the_floor_and_lifts_you() {
        let params = MoveParams::default();
        let me = PlayerState::at(Vec3::ZERO, 0.0);
        let down = InputCmd {
            pitch: -1.5,
            ..default()
        };
        let mut rocket = launch_rocket(1, PlayerId(0), &me, &down, &params);
        let world = floor();
        let mut ticks = 0;
        let at = loop {
            ticks += 1;
            if let Some(at) = fly_rocket(&mut rocket, &world, [], &params, 1.0 / 128.0) {
                break at;
            }
            assert!(ticks < 128, "never burst: {rocket:?}");
        };
        assert!(at.y.abs() < 1e-3, "burst at {at}");
        let (damage, push) = rocket_splash(at, &me, &params).expect("within the splash");
        assert!(damage > 0.0 && push.y > 5.0, "{damage} {push}");
    }

    #[test]
    fn a_rocket_bursts_on_the_first_body_in_its_path_and_ages_out() {
        let params = MoveParams::default();
        let me = PlayerState::at(Vec3::ZERO, 0.0);
        let ahead = Hitbox::of(&PlayerState::at(Vec3::new(0.0, 0.0, -3.0), 0.0));
        let world = CollisionWorld::from_boxes([]);
        let mut rocket = launch_rocket(1, PlayerId(0), &me, &InputCmd::default(), &params);
        let at = (0..64)
            .find_map(|_| fly_rocket(&mut rocket, &world, [ahead], &params, 1.0 / 64.0))
            .expect("hits the body ahead");
        // At eye height it meets the head sphere (0.2 m) of the player 3 m ahead.
        assert!((at.z + 2.8).abs() < 1e-3, "burst at {at}");
        let mut lone = launch_rocket(2, PlayerId(0), &me, &InputCmd::default(), &params);
        let burst =
            (0..64 * 6).find_map(|_| fly_rocket(&mut lone, &world, [], &params, 1.0 / 64.0));
        assert!(burst.is_some() && lone.age >= ROCKET_LIFETIME);
    }
}
