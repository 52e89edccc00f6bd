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
