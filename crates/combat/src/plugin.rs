//! The server's combat systems and their plugin: each player's command (its move and its
//! weapon), shots judged with lag compensation, flying rockets, the state of the living
//! and the dead, the flags, and the hitbox history.

use crate::{
    Arsenal, CombatEvent, FlagNews, FlagToucher, Flags, FriendlyFire, HitZone, Hitbox,
    HitboxHistory, LagCompStats, NextDropId, ProjectileAct, Pushes, Rocket, Score, Shot, Team,
    ViewJudgement, ViewWindow, Vitals, WeaponKind, aim_direction, clamp_view_time, detonate_newest,
    fly_rocket, pellet_direction, player_command, ray_hit, rocket_splash, step_flags,
};
use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_movement::{Body, Contacts, MoveParams, MoveWorld, PlayerState, Solid, bodies_near};
use sightline_sim::{
    CommandStep, CurrentCmd, Held, InputCmd, PlayerId, SimSet, Tick, TickConfig, angle_steps,
};

/// Self-damage from your own rockets is scaled by this (rocket jumps hurt, a little).
const SELF_SPLASH: f32 = 0.5;

/// The combat systems, for ordering against (they run in [`SimSet::Combat`]).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CombatSystems;

/// Server-side players and combat: each command run ([`player_command`]), firing, rockets,
/// damage and deaths.
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
            .init_resource::<FriendlyFire>()
            .init_resource::<crate::Flags>()
            .add_message::<CombatEvent>()
            .add_systems(
                Startup,
                crate::items::spawn_items.run_if(resource_exists::<CurrentMap>),
            )
            .init_resource::<FiredShots>()
            // Every command of a tick, and a second command in a tick (repaying a held
            // one): its player is silenced if dead (perhaps killed by the tick's first),
            // runs it, and what it fired is carried out. The world's part (rockets
            // flying, pick-ups) is the tick's, once.
            .add_systems(
                FixedUpdate,
                (
                    silence_the_dead
                        .after(SimSet::ReadInputs)
                        .before(SimSet::Move),
                    run_commands
                        .in_set(SimSet::Move)
                        .run_if(resource_exists::<CurrentMap>),
                ),
            )
            .add_systems(
                CommandStep,
                (
                    silence_the_dead
                        .after(SimSet::ReadInputs)
                        .before(SimSet::Move),
                    run_commands
                        .in_set(SimSet::Move)
                        .run_if(resource_exists::<CurrentMap>),
                    resolve_shots
                        .in_set(SimSet::Combat)
                        .in_set(CombatSystems)
                        .run_if(resource_exists::<CurrentMap>),
                ),
            )
            .add_systems(
                FixedUpdate,
                (
                    tick_vitals,
                    resolve_shots,
                    fly_rockets,
                    crate::drops::drop_weapons_of_the_dead,
                    crate::items::take_items,
                    crate::drops::take_dropped_weapons,
                    run_flags,
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

/// What this tick's commands fired, in player-id order, with the command and where its
/// move left the shooter: written by [`run_commands`], taken by [`resolve_shots`].
#[derive(Resource, Debug, Default)]
pub(crate) struct FiredShots(Vec<Fired>);

#[derive(Debug)]
struct Fired {
    shooter: PlayerId,
    cmd: InputCmd,
    state: PlayerState,
    shot: Shot,
}

/// A player's parts a command steps.
type Commanded<'a> = (
    &'a PlayerId,
    &'a CurrentCmd,
    &'a mut PlayerState,
    &'a Solid,
    &'a Held,
    &'a mut Contacts,
    Option<&'a mut Arsenal>,
    Option<&'a Vitals>,
);

/// Runs each player's current command ([`player_command`]) in player-id order, each
/// against the map and the other solid players where they stand at that moment: those
/// before it in the order have already made this tick's move, those after it have not. A
/// player that is not [`Solid`] (the dead) passes through everyone and nobody is stopped
/// by it. A [`Held`] player stays where it is, still solid, its weapon waiting with it; the
/// dead's weapons wait too. A move that another body changed is counted in the mover's
/// [`Contacts`], with the nearest body's player. What the weapons fired is left for
/// [`resolve_shots`].
fn run_commands(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    mut fired: ResMut<FiredShots>,
    mut players: Query<Commanded>,
) {
    let dt = config.dt();
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    let ids: Vec<PlayerId> = order.iter().map(|(id, ..)| **id).collect();
    let mut bodies: Vec<Option<Body>> = order
        .iter()
        .map(|(_, _, state, solid, ..)| solid.0.then(|| Body::of(state, &params)))
        .collect();
    for (i, (id, cmd, state, solid, held, contacts, arsenal, vitals)) in
        order.iter_mut().enumerate()
    {
        if held.0 {
            continue;
        }
        let others = if solid.0 {
            let others = bodies
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, b)| *b);
            bodies_near(state, &params, dt, others)
        } else {
            Vec::new()
        };
        let world = MoveWorld {
            map: &map.world,
            bodies: &others,
        };
        let armed = vitals.is_none_or(|v| v.alive());
        let weapons = arsenal.as_mut().filter(|_| armed).map(|a| &mut **a);
        let out = player_command(state, &cmd.0, weapons, &world, &params, dt);
        if out.contact {
            let me = Body::of(&out.state, &params);
            let nearest = bodies
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(j, b)| b.map(|b| (ids[j], me.gap(&b))))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            contacts.count = contacts.count.wrapping_add(1);
            contacts.last = nearest.map(|(id, _)| id);
        }
        **state = out.state;
        if solid.0 {
            bodies[i] = Some(Body::of(state, &params));
        }
        if let Some(shot) = out.shot {
            fired.0.push(Fired {
                shooter: **id,
                cmd: cmd.0,
                state: out.state,
                shot,
            });
        }
    }
}

/// Carries out what this tick's commands fired ([`FiredShots`]): hitscan shots are judged
/// against the hitboxes as the shooter saw them and stopped by walls; rockets are launched
/// or burst. A human's claimed view time must lie in its [`ViewWindow`] or the shot is
/// refused, and one older than the rewind limit is judged at the limit and said to be
/// late; a bot's (which has none) is clamped to the rewind limit.
fn resolve_shots(
    mut commands: Commands,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    params: Res<MoveParams>,
    map: Res<CurrentMap>,
    history: Res<HitboxHistory>,
    mut fired: ResMut<FiredShots>,
    mut next_rocket: ResMut<NextRocketId>,
    mut lagcomp: ResMut<LagCompStats>,
    mut events: MessageWriter<CombatEvent>,
    ff: Res<FriendlyFire>,
    windows: Query<(&PlayerId, &ViewWindow)>,
    mut rockets: Query<&mut Rocket>,
    mut players: Combatants,
) {
    let window_of = |id: PlayerId| windows.iter().find(|(p, _)| **p == id).map(|(_, w)| *w);
    let mut shots = Vec::new();
    for Fired {
        shooter: id,
        cmd,
        state,
        shot,
    } in fired.0.drain(..)
    {
        let act = ProjectileAct::of(Some(shot));
        if act == ProjectileAct::Detonate {
            detonate_newest(rockets.iter_mut().map(|r| r.into_inner()), id);
            continue;
        }
        let origin = params.eye_position(&state);
        let forward = aim_direction(cmd.yaw, cmd.pitch);
        events.write(CombatEvent::Fired {
            shooter: id,
            weapon: shot.weapon,
            origin,
            dir: forward,
            aim: [angle_steps(cmd.yaw), angle_steps(cmd.pitch)],
            tick: tick.0,
            cmd: (cmd.seq, cmd.view_time()),
        });
        if let Some(rocket) = act.launched(next_rocket.0.wrapping_add(1), id, &state, &cmd, &params)
        {
            next_rocket.0 = rocket.id;
            commands.spawn(rocket);
            continue;
        }
        let claimed = cmd.view_time();
        let view = match window_of(id).map(|w| w.judge(claimed)) {
            Some(ViewJudgement::OnTime(view)) => view,
            Some(ViewJudgement::Late { at, excess }) => {
                lagcomp.late = lagcomp.late.saturating_add(1);
                events.write(CombatEvent::ShotLate {
                    shooter: id,
                    tick: tick.0,
                    excess: (excess / f64::from(config.tick_hz.max(1))) as f32,
                });
                at
            }
            Some(ViewJudgement::Refused) => {
                lagcomp.refused = lagcomp.refused.saturating_add(1);
                events.write(CombatEvent::ShotRefused {
                    shooter: id,
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
            shooter: id,
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
                *ff,
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
fn apply_damage(
    players: &mut Combatants,
    events: &mut MessageWriter<CombatEvent>,
    ff: FriendlyFire,
    blow: Blow,
) {
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
    // Team mates hurt each other as the host chose (rockets always hurt their owner).
    let mates = team_of(players, shooter).is_some_and(|t| team_of(players, target) == Some(t));
    let Some((target, amount)) = ff.redirect(mates, shooter, target, amount) else {
        return;
    };
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
        // A team kill costs a frag, as a suicide does.
        killer.frags += if mates { -1 } else { 1 };
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
    ff: Res<FriendlyFire>,
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
                *ff,
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

/// The flags' tick on the server: [`step_flags`] over the living and the dead, a
/// capture counted to its carrier, every change told as a [`CombatEvent::Flag`].
fn run_flags(
    config: Res<TickConfig>,
    map: Res<CurrentMap>,
    mut flags: ResMut<Flags>,
    mut players: Query<(&PlayerId, &PlayerState, &Vitals, &Team, &mut Score)>,
    mut events: MessageWriter<CombatEvent>,
) {
    if !flags.active() {
        return;
    }
    let mut touchers: Vec<FlagToucher> = players
        .iter()
        .map(|(id, state, vitals, team, _)| FlagToucher {
            id: *id,
            team: *team,
            pos: state.pos,
            alive: vitals.alive(),
        })
        .collect();
    touchers.sort_by_key(|p| p.id);
    let ground = |at| crate::drops::ground_below(&map.world, at);
    for (team, news, by) in step_flags(&mut flags, &touchers, config.dt(), ground) {
        if news == FlagNews::Captured
            && let Some((.., mut score)) = players.iter_mut().find(|p| Some(*p.0) == by)
        {
            score.captures = score.captures.saturating_add(1);
        }
        events.write(CombatEvent::Flag { team, news, by });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::ecs::system::RunSystemOnce;
    use sightline_map::MapSource;
    use sightline_sim::Buttons;
    use std::path::Path;

    fn duel() -> CurrentMap {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../maps/duel.ron");
        CurrentMap::new(MapSource::load(&path).unwrap_or_else(|e| panic!("{e}")))
    }

    /// Two players 1.2 m apart on the duel floor, each running at the other.
    fn two_runners() -> (World, [Entity; 2]) {
        let mut world = World::new();
        world.insert_resource(duel());
        world.insert_resource(MoveParams::default());
        world.insert_resource(TickConfig::default());
        world.init_resource::<FiredShots>();
        let runner = |id: u8, x: f32, yaw: f32| {
            (
                PlayerId(id),
                CurrentCmd(InputCmd {
                    forward: 1.0,
                    yaw,
                    ..Default::default()
                }),
                PlayerState::at(Vec3::new(x, 0.0, -8.0), yaw),
                Held(false),
            )
        };
        let half_pi = std::f32::consts::FRAC_PI_2;
        let a = world.spawn(runner(2, -0.6, -half_pi)).id();
        let b = world.spawn(runner(1, 0.6, half_pi)).id();
        (world, [a, b])
    }

    /// The gap between the bodies of `a` and `b` as they stand.
    fn gap(world: &World, a: Entity, b: Entity) -> f32 {
        let params = MoveParams::default();
        let body = |e| Body::of(world.get::<PlayerState>(e).unwrap(), &params);
        body(a).gap(&body(b))
    }

    fn run(world: &mut World, ticks: usize) {
        for _ in 0..ticks {
            world.run_system_once(run_commands).expect("runs");
        }
    }

    /// A freshly spawned player's vitals, its spawn protection run out.
    fn unprotected() -> Vitals {
        Vitals {
            protection: 0.0,
            ..Vitals::spawned()
        }
    }

    /// A rifle blow of `amount` from player 1 to player 2, both red, under `ff`: what
    /// each is left with, and the shooter's frags.
    fn blow_between_mates(ff: FriendlyFire, amount: f32) -> (Vitals, Vitals, i32) {
        let mut world = World::new();
        world.init_resource::<Messages<CombatEvent>>();
        let mate = |id: u8| {
            (
                PlayerId(id),
                PlayerState::default(),
                CurrentCmd::default(),
                Arsenal::spawned(),
                unprotected(),
                Score::default(),
                Team::Red,
            )
        };
        let (a, b) = (world.spawn(mate(1)).id(), world.spawn(mate(2)).id());
        world
            .run_system_once(
                move |mut players: Combatants, mut events: MessageWriter<CombatEvent>| {
                    let blow = Blow {
                        shooter: PlayerId(1),
                        target: PlayerId(2),
                        amount,
                        zone: HitZone::Body,
                        weapon: WeaponKind::Rifle,
                        seen: 0,
                    };
                    apply_damage(&mut players, &mut events, ff, blow);
                },
            )
            .expect("runs");
        let vitals = |e| *world.get::<Vitals>(e).unwrap();
        (vitals(a), vitals(b), world.get::<Score>(a).unwrap().frags)
    }

    #[test]
    fn team_mates_hurt_each_other_only_as_the_host_chose() {
        let full = unprotected();
        let (a, b, _) = blow_between_mates(FriendlyFire::Off, 40.0);
        assert_eq!((a, b), (full, full), "off: nobody is hurt");
        let (a, b, _) = blow_between_mates(FriendlyFire::On, 40.0);
        assert_eq!(a, full);
        assert!(b.health + b.armor < full.health + full.armor, "on: {b:?}");
        let (_, b, frags) = blow_between_mates(FriendlyFire::On, 1000.0);
        assert!(!b.alive());
        assert_eq!(frags, -1, "a team kill costs a frag");
        let (a, b, _) = blow_between_mates(FriendlyFire::Reflect, 40.0);
        assert_eq!(b, full, "reflect: the mate is spared");
        let lost = (full.health + full.armor) - (a.health + a.armor);
        assert!((lost - 20.0).abs() < 1e-3, "the shooter takes half: {lost}");
    }

    #[test]
    fn the_server_step_blocks_players_on_each_other() {
        let (mut world, [a, b]) = two_runners();
        run(&mut world, 128);
        let gap = gap(&world, a, b);
        assert!((0.0..0.02).contains(&gap), "gap {gap}");
    }

    #[test]
    fn a_move_another_body_changed_is_counted_with_whom() {
        let (mut world, [a, b]) = two_runners();
        run(&mut world, 2);
        let contacts = |w: &World, e| *w.get::<Contacts>(e).unwrap();
        assert_eq!(contacts(&world, a).count, 0, "apart, nobody touches");
        run(&mut world, 126);
        // Pressed together for most of a second, each counts the other.
        let (ca, cb) = (contacts(&world, a), contacts(&world, b));
        assert!(ca.count > 50 && cb.count > 50, "{ca:?} {cb:?}");
        assert_eq!(ca.last, Some(PlayerId(1)));
        assert_eq!(cb.last, Some(PlayerId(2)));
        // The dead touch nobody.
        let (mut world, [a, b]) = two_runners();
        world.get_mut::<Solid>(b).unwrap().0 = false;
        run(&mut world, 128);
        assert_eq!(contacts(&world, a).count, 0);
        assert_eq!(contacts(&world, b).count, 0);
    }

    #[test]
    fn a_held_player_stays_put_and_still_blocks() {
        let (mut world, [a, b]) = two_runners();
        let start = *world.get::<PlayerState>(b).unwrap();
        world.get_mut::<Held>(b).unwrap().0 = true;
        run(&mut world, 128);
        assert_eq!(
            *world.get::<PlayerState>(b).unwrap(),
            start,
            "held: not stepped"
        );
        let gap = gap(&world, a, b);
        assert!((0.0..0.02).contains(&gap), "gap {gap}");
    }

    #[test]
    fn the_dead_pass_through_and_are_passed_through() {
        let (mut world, [a, b]) = two_runners();
        world.get_mut::<Solid>(b).unwrap().0 = false;
        run(&mut world, 128);
        let x = |e| world.get::<PlayerState>(e).unwrap().pos.x;
        assert!(x(a) > 3.0 && x(b) < -3.0, "{} {}", x(a), x(b));
    }

    #[test]
    fn the_living_fire_from_where_they_moved_and_the_dead_and_held_do_not() {
        let (mut world, [a, b]) = two_runners();
        let fire = |world: &mut World, e: Entity| {
            world.entity_mut(e).insert(Arsenal::spawned());
            world.get_mut::<CurrentCmd>(e).unwrap().0.buttons = Buttons::FIRE;
        };
        fire(&mut world, a);
        fire(&mut world, b);
        world.entity_mut(b).insert(Vitals {
            health: 0.0,
            ..Vitals::spawned()
        });
        run(&mut world, 1);
        let fired = &world.resource::<FiredShots>().0;
        assert_eq!(fired.len(), 1, "the dead do not fire: {fired:?}");
        assert_eq!(fired[0].shooter, PlayerId(2));
        assert_eq!(fired[0].state, *world.get::<PlayerState>(a).unwrap());
        let full = Arsenal::spawned().ammo[WeaponKind::Rifle.index()].magazine;
        let magazine =
            |w: &World, e| w.get::<Arsenal>(e).unwrap().ammo[WeaponKind::Rifle.index()].magazine;
        assert_eq!(magazine(&world, a), full - 1);
        assert_eq!(magazine(&world, b), full, "nor do their weapons step");

        world.resource_mut::<FiredShots>().0.clear();
        world.get_mut::<Held>(a).unwrap().0 = true;
        run(&mut world, 1);
        assert!(world.resource::<FiredShots>().0.is_empty(), "held: waits");
        assert_eq!(magazine(&world, a), full - 1);
    }
}
