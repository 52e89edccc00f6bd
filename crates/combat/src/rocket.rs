//! Rocket physics: launch, flight and burst, pure so the client predicts its own rockets
//! exactly as the server flies them.

use crate::{Hitbox, WeaponKind, aim_direction, ray_hit, splash};
use bevy::prelude::*;
use sightline_map::CollisionWorld;
use sightline_movement::{MoveParams, PlayerState};
use sightline_sim::{InputCmd, PlayerId};

/// Seconds a rocket flies before it bursts on its own.
const ROCKET_LIFETIME: f32 = 5.0;

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

/// How far into the open a burst's line of sight starts: the burst point lies on the
/// surface it struck, where a ray would meet that surface at once. Thinner than any wall,
/// so a target behind the struck wall still finds it in the way.
const BURST_CLEARANCE: f32 = 0.05;

/// What a rocket bursting at `at` does to a player in `state`: splash damage (before the
/// owner's own share is taken off) and the push added to its velocity. Only what the
/// burst can see is hurt: the splash reaches a player if nothing of `world` lies between
/// the burst and their head, the middle of their body or their feet, so a wall or a floor
/// shields whoever is behind it (as Quake 3 traces from the explosion to a body).
pub fn rocket_splash(
    at: Vec3,
    state: &PlayerState,
    world: &CollisionWorld,
    params: &MoveParams,
) -> Option<(f32, Vec3)> {
    let def = WeaponKind::Rockets.def();
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
        let mut rocket = launch_rocket(1, PlayerId(0), &me, &down, &params);
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
        let (damage, push) = rocket_splash(at, &me, &world, &params).expect("within the splash");
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
        assert!(rocket_splash(burst, &in_front, &wall, &params).is_some());
        assert_eq!(rocket_splash(burst, &behind, &wall, &params), None);
        // Without the wall, the same player at the same distance is hurt.
        let open = CollisionWorld::from_boxes([]);
        assert!(rocket_splash(burst, &behind, &open, &params).is_some());
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
        assert!(rocket_splash(Vec3::ZERO, &behind_low_wall, &low, &params).is_some());
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
