//! Projectile physics (rockets and plasma): launch, flight and burst, pure so the client
//! predicts its own projectiles exactly as the server flies them.

use crate::{Hitbox, aim_direction, ray_hit, splash};
use bevy::prelude::*;
use sightline_map::CollisionWorld;
use sightline_movement::grid::POS_STEPS;
use sightline_movement::{MoveParams, PlayerState};
use sightline_sim::{InputCmd, PlayerId};

/// Seconds a projectile flies before it bursts on its own.
const ROCKET_LIFETIME: f32 = 5.0;

/// Grid steps per metre of a projectile's position: the players' millimetre. Every tick
/// leaves a projectile on this grid and snapshots carry it so, so a client flies anyone's
/// rocket on from a snapshot exactly as the server does.
pub const PROJECTILE_POS_STEPS: f32 = POS_STEPS;
/// Grid steps per m/s of a projectile's velocity: fine enough that carrying a baseline
/// along it for half a second lands within a step of where the rocket is.
pub const PROJECTILE_VEL_STEPS: f32 = 256.0;
/// Largest projectile position on the grid, in steps either way: every step up to it
/// is exact in an f32 (16 km), so a value read is written back the same.
pub const MAX_PROJECTILE_POS_STEPS: i64 = 1 << 24;
/// Largest projectile velocity on the grid, in steps either way (4 km/s).
pub const MAX_PROJECTILE_VEL_STEPS: i64 = 1 << 20;

/// A projectile's position and velocity in grid steps, each rounded to the nearest
/// (halves away from zero) and clamped to the grid's range; NaN goes to 0.
pub fn projectile_steps(pos: [f32; 3], vel: [f32; 3]) -> [i64; 6] {
    let on = |v: f32, per: f32, limit: i64| {
        let steps = f64::from(v) * f64::from(per);
        if steps.is_nan() {
            0
        } else {
            steps.round().clamp(-limit as f64, limit as f64) as i64
        }
    };
    std::array::from_fn(|i| match i {
        0..3 => on(pos[i], PROJECTILE_POS_STEPS, MAX_PROJECTILE_POS_STEPS),
        _ => on(vel[i - 3], PROJECTILE_VEL_STEPS, MAX_PROJECTILE_VEL_STEPS),
    })
}

/// The position and velocity at grid `steps` (exact when each is within its limit).
pub fn projectile_at_steps(steps: &[i64; 6]) -> ([f32; 3], [f32; 3]) {
    (
        std::array::from_fn(|i| steps[i] as f32 / PROJECTILE_POS_STEPS),
        std::array::from_fn(|i| steps[i + 3] as f32 / PROJECTILE_VEL_STEPS),
    )
}

/// The projectiles there are.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum ProjectileKind {
    /// The rocket launcher's rocket.
    #[default]
    Rocket,
    /// The plasma gun's bolt.
    Plasma,
    /// The plasma gun's alternate fire: a slow, heavy ball.
    PlasmaBall,
}

impl ProjectileKind {
    /// Every kind, in wire order.
    pub const ALL: [ProjectileKind; 3] = [
        ProjectileKind::Rocket,
        ProjectileKind::Plasma,
        ProjectileKind::PlasmaBall,
    ];

    /// How it flies and bursts.
    pub const fn def(self) -> &'static ProjectileDef {
        match self {
            ProjectileKind::Rocket => &ProjectileDef {
                speed: 28.0,
                splash_radius: 3.5,
                splash_damage: 100.0,
                knockback: 11.0,
            },
            ProjectileKind::Plasma => &ProjectileDef {
                speed: 55.0,
                splash_radius: 0.9,
                splash_damage: 18.0,
                knockback: 2.6,
            },
            ProjectileKind::PlasmaBall => &ProjectileDef {
                speed: 20.0,
                splash_radius: 2.6,
                splash_damage: 75.0,
                knockback: 7.0,
            },
        }
    }

    /// Its number on the wire.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// How a projectile flies and bursts. A direct hit is a burst at the body: the splash's
/// full damage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProjectileDef {
    /// Speed, m/s.
    pub speed: f32,
    /// Splash radius, metres.
    pub splash_radius: f32,
    /// Splash damage at the centre, falling off linearly to 0 at the radius.
    pub splash_damage: f32,
    /// Speed given to a player at the centre of the splash, m/s, falling off likewise.
    pub knockback: f32,
}

/// A projectile in flight (server-simulated; the client flies its own the same way).
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct Rocket {
    /// Projectile number, for snapshots.
    pub id: u16,
    /// What it is.
    pub kind: ProjectileKind,
    /// Who fired it.
    pub owner: PlayerId,
    /// Where it is.
    pub pos: Vec3,
    /// Its velocity.
    pub vel: Vec3,
    /// Seconds in flight.
    pub age: f32,
    /// Set by its owner's detonation: it bursts where it is on its next tick.
    pub detonate: bool,
}

impl Rocket {
    /// This rocket with its position and velocity on the grid
    /// ([`PROJECTILE_POS_STEPS`], [`PROJECTILE_VEL_STEPS`]): what launching and every
    /// tick of flight leave it in.
    pub fn on_grid(self) -> Self {
        let (pos, vel) =
            projectile_at_steps(&projectile_steps(self.pos.to_array(), self.vel.to_array()));
        Self {
            pos: Vec3::from_array(pos),
            vel: Vec3::from_array(vel),
            ..self
        }
    }
}

/// A projectile of `kind` fired by `owner` standing in `state` (after this tick's move)
/// with `cmd`: from half a metre in front of the eye, along the aim. The server's launch
/// and the client's prediction of its own projectiles.
pub fn launch_rocket(
    id: u16,
    kind: ProjectileKind,
    owner: PlayerId,
    state: &PlayerState,
    cmd: &InputCmd,
    params: &MoveParams,
) -> Rocket {
    let origin = params.eye_position(state);
    let forward = aim_direction(cmd.yaw, cmd.pitch);
    Rocket {
        id,
        kind,
        owner,
        pos: origin + forward * 0.5,
        vel: forward * kind.def().speed,
        age: 0.0,
        detonate: false,
    }
    .on_grid()
}

/// Flies a rocket for one tick of `dt`: where it bursts, on a wall, on one of `targets`
/// (the hitboxes of the living, its owner left out), at the end of its life or where it
/// is when detonated ([`Rocket::detonate`]), or `None` while it flies on (to a point on
/// the grid, [`Rocket::on_grid`]). Pure, so the client flies rockets exactly as the
/// server does.
pub fn fly_rocket(
    rocket: &mut Rocket,
    world: &CollisionWorld,
    targets: impl IntoIterator<Item = Hitbox>,
    params: &MoveParams,
    dt: f32,
) -> Option<Vec3> {
    if rocket.detonate {
        return Some(rocket.pos);
    }
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
            *rocket = rocket.on_grid();
            None
        }
    }
}

/// How far into the open a burst's line of sight starts: the burst point lies on the
/// surface it struck, where a ray would meet that surface at once. Thinner than any wall,
/// so a target behind the struck wall still finds it in the way.
const BURST_CLEARANCE: f32 = 0.05;

/// What a projectile of `kind` bursting at `at` does to a player in `state`: splash damage (before the
/// owner's own share is taken off) and the push added to its velocity. Only what the
/// burst can see is hurt: the splash reaches a player if nothing of `world` lies between
/// the burst and their head, the middle of their body or their feet, so a wall or a floor
/// shields whoever is behind it (as Quake 3 traces from the explosion to a body).
pub fn rocket_splash(
    kind: ProjectileKind,
    at: Vec3,
    state: &PlayerState,
    world: &CollisionWorld,
    params: &MoveParams,
) -> Option<(f32, Vec3)> {
    let def = kind.def();
    let hitbox = Hitbox::of(state);
    let center = hitbox.center(params);
    let hit = splash(
        at,
        def.splash_radius,
        def.splash_damage,
        def.knockback,
        center,
    )?;
    let (feet, _) = hitbox.body(params);
    let seen = [center, hitbox.head(params), feet]
        .into_iter()
        .any(|point| burst_sees(world, at, point));
    seen.then_some(hit)
}

/// Marks the newest of `owner`'s projectiles in `rockets` (the least flown) to burst on
/// its next tick: the rocket launcher's alternate fire. Returns whether there was one.
pub fn detonate_newest<'a>(
    rockets: impl IntoIterator<Item = &'a mut Rocket>,
    owner: PlayerId,
) -> bool {
    let newest = rockets
        .into_iter()
        .filter(|r| r.owner == owner && !r.detonate)
        .min_by(|a, b| a.age.total_cmp(&b.age).then(b.id.cmp(&a.id)));
    newest.map(|r| r.detonate = true).is_some()
}

/// Whether nothing of `world` lies between a burst at `at` and `point`.
fn burst_sees(world: &CollisionWorld, at: Vec3, point: Vec3) -> bool {
    let offset = point - at;
    let length = offset.length();
    if length <= BURST_CLEARANCE {
        return true;
    }
    let dir = offset / length;
    world.is_clear(at + dir * BURST_CLEARANCE, dir * (length - BURST_CLEARANCE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_map::test_support::open_floor;

    #[test]
    fn a_rocket_at_your_feet_bursts_on_the_floor_and_lifts_you() {
        let params = MoveParams::default();
        let me = PlayerState::at(Vec3::ZERO, 0.0);
        let down = InputCmd {
            pitch: -1.5,
            ..default()
        };
        let mut rocket = launch_rocket(1, ProjectileKind::Rocket, PlayerId(0), &me, &down, &params);
        let world = open_floor();
        let mut ticks = 0;
        let at = loop {
            ticks += 1;
            if let Some(at) = fly_rocket(&mut rocket, &world, [], &params, 1.0 / 128.0) {
                break at;
            }
            assert!(ticks < 128, "never burst: {rocket:?}");
        };
        assert!(at.y.abs() < 1e-3, "burst at {at}");
        let (damage, push) = rocket_splash(ProjectileKind::Rocket, at, &me, &world, &params)
            .expect("within the splash");
        assert!(damage > 0.0 && push.y > 5.0, "{damage} {push}");
    }

    #[test]
    fn a_wall_between_the_burst_and_a_player_stops_the_splash() {
        let params = MoveParams::default();
        // A wall 0.5 m thick, its near face at x = 1, from the floor to 3 m up.
        let wall = CollisionWorld::from_boxes([(
            Vec3::new(1.25, 1.5, 0.0),
            Vec3::new(0.25, 1.5, 5.0),
            Quat::IDENTITY,
        )]);
        let burst = Vec3::new(1.0, 1.0, 0.0);
        let in_front = PlayerState::at(Vec3::new(0.0, 0.0, 0.0), 0.0);
        let behind = PlayerState::at(Vec3::new(2.0, 0.0, 0.0), 0.0);
        assert!(rocket_splash(ProjectileKind::Rocket, burst, &in_front, &wall, &params).is_some());
        assert_eq!(
            rocket_splash(ProjectileKind::Rocket, burst, &behind, &wall, &params),
            None
        );
        // Without the wall, the same player at the same distance is hurt.
        let open = CollisionWorld::from_boxes([]);
        assert!(rocket_splash(ProjectileKind::Rocket, burst, &behind, &open, &params).is_some());
        // Behind a wall 0.6 m high, a burst on the ground still sees the head.
        let low = CollisionWorld::from_boxes([(
            Vec3::new(1.25, 0.3, 0.0),
            Vec3::new(0.25, 0.3, 5.0),
            Quat::IDENTITY,
        )]);
        let behind_low_wall = PlayerState::at(Vec3::new(2.0, 0.0, 0.0), 0.0);
        assert!(!burst_sees(
            &low,
            Vec3::ZERO,
            Hitbox::of(&behind_low_wall).center(&params)
        ));
        assert!(
            rocket_splash(
                ProjectileKind::Rocket,
                Vec3::ZERO,
                &behind_low_wall,
                &low,
                &params
            )
            .is_some()
        );
    }

    #[test]
    fn a_rocket_bursts_on_the_first_body_in_its_path_and_ages_out() {
        let params = MoveParams::default();
        let me = PlayerState::at(Vec3::ZERO, 0.0);
        let ahead = Hitbox::of(&PlayerState::at(Vec3::new(0.0, 0.0, -3.0), 0.0));
        let world = CollisionWorld::from_boxes([]);
        let mut rocket = launch_rocket(
            1,
            ProjectileKind::Rocket,
            PlayerId(0),
            &me,
            &InputCmd::default(),
            &params,
        );
        let at = (0..64)
            .find_map(|_| fly_rocket(&mut rocket, &world, [ahead], &params, 1.0 / 64.0))
            .expect("hits the body ahead");
        // At eye height it meets the head sphere (0.2 m) of the player 3 m ahead.
        assert!((at.z + 2.8).abs() < 1e-3, "burst at {at}");
        let mut lone = launch_rocket(
            2,
            ProjectileKind::Rocket,
            PlayerId(0),
            &me,
            &InputCmd::default(),
            &params,
        );
        let burst =
            (0..64 * 6).find_map(|_| fly_rocket(&mut lone, &world, [], &params, 1.0 / 64.0));
        assert!(burst.is_some() && lone.age >= ROCKET_LIFETIME);
    }

    #[test]
    fn a_detonation_bursts_the_owners_newest_projectile_where_it_is() {
        let params = MoveParams::default();
        let me = PlayerState::at(Vec3::ZERO, 0.0);
        let world = CollisionWorld::from_boxes([]);
        let cmd = InputCmd::default();
        let mut older = launch_rocket(1, ProjectileKind::Rocket, PlayerId(0), &me, &cmd, &params);
        older.age = 0.5;
        let newer = launch_rocket(2, ProjectileKind::Rocket, PlayerId(0), &me, &cmd, &params);
        let theirs = launch_rocket(3, ProjectileKind::Rocket, PlayerId(1), &me, &cmd, &params);
        let mut rockets = [older, newer, theirs];
        assert!(detonate_newest(rockets.iter_mut(), PlayerId(0)));
        assert_eq!(
            rockets.iter().map(|r| r.detonate).collect::<Vec<_>>(),
            [false, true, false]
        );
        let at = fly_rocket(&mut rockets[1], &world, [], &params, 1.0 / 128.0);
        assert_eq!(
            at,
            Some(newer.pos),
            "bursts where it was, without flying on"
        );
        assert!(!detonate_newest(rockets[2..].iter_mut(), PlayerId(0)));
    }

    #[test]
    fn launch_and_flight_leave_a_rocket_on_the_grid_that_snapshots_carry_exactly() {
        let params = MoveParams::default();
        let me = PlayerState::at(Vec3::new(0.123_456, 0.0, -3.210_987), 0.0);
        let cmd = InputCmd {
            yaw: 0.377,
            pitch: 0.123,
            ..default()
        };
        let mut rocket = launch_rocket(1, ProjectileKind::Rocket, PlayerId(0), &me, &cmd, &params);
        let world = CollisionWorld::from_boxes([]);
        for _ in 0..20 {
            assert_eq!(rocket.on_grid(), rocket, "off the grid: {rocket:?}");
            let steps = projectile_steps(rocket.pos.to_array(), rocket.vel.to_array());
            let (pos, vel) = projectile_at_steps(&steps);
            assert_eq!(
                (Vec3::from_array(pos), Vec3::from_array(vel)),
                (rocket.pos, rocket.vel)
            );
            assert_eq!(
                fly_rocket(&mut rocket, &world, [], &params, 1.0 / 128.0),
                None
            );
        }
        // Within half a step of where it would be off the grid.
        let speed = (rocket.vel.length() - ProjectileKind::Rocket.def().speed).abs();
        assert!(speed < 0.01, "{speed}");
    }
}
