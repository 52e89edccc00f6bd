//! Movement rules, one test per rule, on small worlds built for each.

use crate::{Body, MoveFlags, MoveParams, MoveWorld, PlayerState, step, step_among};
use bevy::math::{Quat, Vec3};
use sightline_map::test_support::floor_box;
use sightline_map::{CollisionWorld, JumpPad, SKIN};
use sightline_sim::{Buttons, InputCmd};

const P: MoveParams = MoveParams {
    run_speed: 7.0,
    crouch_speed_scale: 0.45,
    ground_accel: 10.0,
    air_accel: 1.5,
    friction: 6.0,
    stop_speed: 2.5,
    gravity: 20.0,
    jump_speed: 6.5,
    step_height: 0.45,
    min_ground_normal_y: 0.7,
    radius: 0.4,
    stand_height: 1.8,
    crouch_height: 1.2,
    stand_eye: 1.6,
    crouch_eye: 1.0,
    max_fall_speed: 40.0,
};

#[test]
fn test_params_match_the_defaults() {
    assert_eq!(P, MoveParams::default());
}

fn floor() -> (Vec3, Vec3, Quat) {
    floor_box(100.0)
}

fn flat_world() -> CollisionWorld {
    CollisionWorld::from_boxes([floor()])
}

/// Forward is -Z at yaw 0.
fn run(forward: f32) -> InputCmd {
    InputCmd {
        forward,
        ..Default::default()
    }
}

fn settle(world: &CollisionWorld, pos: Vec3, hz: f32) -> PlayerState {
    let mut s = PlayerState::at(pos, 0.0);
    for _ in 0..(hz as usize) {
        s = step(&s, &InputCmd::default(), world, &P, 1.0 / hz);
    }
    assert!(s.on_ground(), "did not land: {s:?}");
    s
}

fn simulate(
    world: &CollisionWorld,
    mut s: PlayerState,
    cmd: impl Fn(usize) -> InputCmd,
    ticks: usize,
    hz: f32,
) -> Vec<PlayerState> {
    let mut out = Vec::with_capacity(ticks);
    for i in 0..ticks {
        s = step(&s, &cmd(i), world, &P, 1.0 / hz);
        out.push(s);
    }
    out
}

fn flat_speed(s: &PlayerState) -> f32 {
    Vec3::new(s.vel.x, 0.0, s.vel.z).length()
}

#[test]
fn standing_still_on_the_floor_stays_put() {
    let w = flat_world();
    let s = settle(&w, Vec3::new(0.0, 1.0, 0.0), 128.0);
    let later = simulate(&w, s, |_| InputCmd::default(), 256, 128.0);
    let last = later.last().unwrap();
    assert_eq!(last.pos, s.pos);
    assert!((s.pos.y - 2.0 * SKIN).abs() < 1e-4, "{}", s.pos.y);
}

#[test]
fn ground_acceleration_reaches_but_never_exceeds_run_speed() {
    let w = flat_world();
    let s = settle(&w, Vec3::ZERO, 128.0);
    let states = simulate(&w, s, |_| run(1.0), 256, 128.0);
    let mut last = 0.0;
    for st in &states {
        let v = flat_speed(st);
        assert!(
            v >= last - 1e-4,
            "speed fell while accelerating: {last} -> {v} {st:?}"
        );
        assert!(v <= P.run_speed * 1.0001, "speed {v} above the cap");
        last = v;
    }
    // Top speed is reached within half a second.
    assert!(flat_speed(&states[64]) > 0.99 * P.run_speed);
    assert!(states.last().unwrap().pos.z < -10.0);
}

#[test]
fn friction_stops_a_runner_quickly() {
    let w = flat_world();
    let mut s = settle(&w, Vec3::ZERO, 128.0);
    s.vel = Vec3::new(0.0, 0.0, -P.run_speed);
    let states = simulate(&w, s, |_| InputCmd::default(), 64, 128.0);
    assert_eq!(flat_speed(states.last().unwrap()), 0.0);
    let stop_distance = -states.last().unwrap().pos.z;
    assert!(
        stop_distance > 0.3 && stop_distance < 1.5,
        "{stop_distance}"
    );
}

fn jump_apex(hz: f32) -> f32 {
    let w = flat_world();
    let s = settle(&w, Vec3::ZERO, hz);
    let base = s.pos.y;
    let jump = |i: usize| InputCmd {
        buttons: if i == 0 {
            Buttons::JUMP
        } else {
            Buttons::default()
        },
        ..Default::default()
    };
    let states = simulate(&w, s, jump, hz as usize * 2, hz);
    assert!(states.last().unwrap().on_ground(), "did not land again");
    states.iter().map(|s| s.pos.y).fold(f32::MIN, f32::max) - base
}

fn run_speed_over_one_second(hz: f32) -> f32 {
    let w = flat_world();
    let s = settle(&w, Vec3::ZERO, hz);
    let warm = simulate(&w, s, |_| run(1.0), hz as usize, hz);
    let start = *warm.last().unwrap();
    let timed = simulate(&w, start, |_| run(1.0), hz as usize, hz);
    (timed.last().unwrap().pos - start.pos).length()
}

#[test]
fn jump_height_and_run_speed_agree_across_tick_rates() {
    let expected_apex = P.jump_speed * P.jump_speed / (2.0 * P.gravity);
    for hz in [30.0, 64.0, 128.0] {
        let apex = jump_apex(hz);
        assert!(
            (apex - expected_apex).abs() / expected_apex < 0.01,
            "{hz} Hz: apex {apex} vs {expected_apex}"
        );
        let speed = run_speed_over_one_second(hz);
        assert!(
            (speed - P.run_speed).abs() / P.run_speed < 0.01,
            "{hz} Hz: speed {speed}"
        );
    }
}

#[test]
fn holding_jump_does_not_bunny_hop() {
    let w = flat_world();
    let s = settle(&w, Vec3::ZERO, 128.0);
    let hold = |_| InputCmd {
        buttons: Buttons::JUMP,
        ..Default::default()
    };
    let states = simulate(&w, s, hold, 256, 128.0);
    let takeoffs = states
        .windows(2)
        .filter(|p| p[0].on_ground() && !p[1].on_ground())
        .count()
        + usize::from(!states[0].on_ground());
    assert_eq!(takeoffs, 1);
}

/// Stairs of `rise` m per step, 0.5 m deep, climbing toward -Z from z = -2.
fn stairs(rise: f32) -> CollisionWorld {
    let mut boxes = vec![floor()];
    for i in 0..6 {
        let top = rise * (i + 1) as f32;
        let z0 = -2.0 - 0.5 * i as f32;
        boxes.push((
            Vec3::new(0.0, top * 0.5, z0 - 5.0),
            Vec3::new(2.0, top * 0.5, 5.0),
            Quat::IDENTITY,
        ));
        let _ = z0;
    }
    CollisionWorld::from_boxes(boxes)
}

#[test]
fn walking_climbs_stairs_but_not_walls() {
    let w = stairs(0.3);
    let s = settle(&w, Vec3::ZERO, 128.0);
    let states = simulate(&w, s, |_| run(1.0), 256, 128.0);
    let last = states.last().unwrap();
    assert!(last.pos.y > 1.79, "climbed only to {}", last.pos.y);
    assert!(last.on_ground());

    let wall = stairs(0.6);
    let s = settle(&wall, Vec3::ZERO, 128.0);
    let states = simulate(&wall, s, |_| run(1.0), 256, 128.0);

    let last = states.last().unwrap();
    assert!(last.pos.y < 0.1, "climbed a 0.6 m ledge: {}", last.pos.y);
    assert!(last.pos.z > -2.0 + P.radius - 0.01);
}

fn ramp(deg: f32) -> CollisionWorld {
    // A long slab tilted so it rises toward -Z, starting near z = -1.
    let rot = Quat::from_rotation_x(deg.to_radians());
    let half = Vec3::new(3.0, 0.5, 20.0);
    let center = Vec3::new(0.0, 0.0, -1.0) + rot * Vec3::new(0.0, -0.5, -20.0);
    CollisionWorld::from_boxes([floor(), (center, half, rot)])
}

#[test]
fn walks_up_gentle_slopes_at_full_speed() {
    let w = ramp(30.0);
    let s = settle(&w, Vec3::new(0.0, 0.0, 1.0), 128.0);
    let states = simulate(&w, s, |_| run(1.0), 256, 128.0);
    let last = states.last().unwrap();
    assert!(last.on_ground(), "{last:?}");
    assert!(last.pos.y > 4.0, "only reached {}", last.pos.y);
    let along = last.vel.length();
    assert!((along - P.run_speed).abs() < 0.05, "speed on slope {along}");
}

#[test]
fn slides_off_slopes_steeper_than_45_degrees() {
    let w = ramp(60.0);
    let s = settle(&w, Vec3::new(0.0, 0.0, 1.0), 128.0);
    let states = simulate(&w, s, |_| run(1.0), 384, 128.0);
    let top = states.iter().map(|s| s.pos.y).fold(f32::MIN, f32::max);
    assert!(top < 1.0, "climbed a 60-degree slope to {top}");
    // Dropped onto the steep face from above, the player slides down it.
    let start = PlayerState::at(Vec3::new(0.0, 6.0, -2.5), 0.0);
    let states = simulate(&w, start, |_| InputCmd::default(), 256, 128.0);
    let last = states.last().unwrap();
    assert!(
        last.pos.y < 1.0 && last.pos.z > -2.0,
        "stuck on slope: {last:?}"
    );
}

#[test]
fn running_into_a_wall_slides_along_it() {
    let wall = (
        Vec3::new(0.0, 2.0, -3.0),
        Vec3::new(20.0, 2.0, 0.5),
        Quat::IDENTITY,
    );
    let w = CollisionWorld::from_boxes([floor(), wall]);
    let s = settle(&w, Vec3::ZERO, 128.0);
    // Yaw 30 degrees left of the wall's normal: run into it diagonally.
    let cmd = |_| InputCmd {
        forward: 1.0,
        yaw: 0.5,
        ..Default::default()
    };
    let states = simulate(&w, s, cmd, 256, 128.0);
    let face = -2.5 + P.radius;
    for st in &states {
        assert!(
            st.pos.z >= face - 1e-3,
            "went through the wall: {}",
            st.pos.z
        );
    }
    let last = states.last().unwrap();
    assert!(last.pos.z < face + 0.05, "not against the wall");
    assert!(
        last.pos.x < -5.0,
        "did not slide along the wall: {}",
        last.pos.x
    );
    assert!(last.vel.x < -1.0);
}

#[test]
fn crouching_fits_under_low_ceilings_and_slows_down() {
    // A 1.5 m high tunnel starting at z = -2.
    let roof = (
        Vec3::new(0.0, 2.0, -12.0),
        Vec3::new(3.0, 0.5, 10.0),
        Quat::IDENTITY,
    );
    let w = CollisionWorld::from_boxes([floor(), roof]);
    let s = settle(&w, Vec3::ZERO, 128.0);

    let standing = simulate(&w, s, |_| run(1.0), 256, 128.0);
    assert!(standing.last().unwrap().pos.z > -2.0 + P.radius - 0.01);

    let crouch = |_| InputCmd {
        forward: 1.0,
        buttons: Buttons::CROUCH,
        ..Default::default()
    };
    let crouched = simulate(&w, s, crouch, 256, 128.0);
    let last = *crouched.last().unwrap();
    assert!(last.crouched());
    assert!(
        last.pos.z < -5.0,
        "did not enter the tunnel: {}",
        last.pos.z
    );
    let speed = flat_speed(&last);
    assert!(
        (speed - P.run_speed * P.crouch_speed_scale).abs() < 0.01,
        "{speed}"
    );

    // Releasing crouch inside the tunnel keeps the player crouched.
    let released = simulate(&w, last, |_| InputCmd::default(), 16, 128.0);
    assert!(released.last().unwrap().crouched());
}

#[test]
fn falling_is_capped_at_terminal_speed() {
    let w = flat_world();
    let s = PlayerState::at(Vec3::new(0.0, 500.0, 0.0), 0.0);
    let states = simulate(&w, s, |_| InputCmd::default(), 128 * 4, 128.0);
    assert!(states.iter().all(|s| s.vel.y >= -P.max_fall_speed));
}

/// Two players stepped as the server steps them: `a` first against `b` where it stands,
/// then `b` against `a` where `a` has just moved.
fn step_pair(
    world: &CollisionWorld,
    (a, b): (PlayerState, PlayerState),
    (ca, cb): (&InputCmd, &InputCmd),
    hz: f32,
) -> (PlayerState, PlayerState) {
    let bodies = [Body::of(&b, &P)];
    let a = step_among(
        &a,
        ca,
        &MoveWorld {
            map: world,
            bodies: &bodies,
        },
        &P,
        1.0 / hz,
    );
    let bodies = [Body::of(&a, &P)];
    let b = step_among(
        &b,
        cb,
        &MoveWorld {
            map: world,
            bodies: &bodies,
        },
        &P,
        1.0 / hz,
    );
    (a, b)
}

fn facing(pos: Vec3, yaw: f32) -> PlayerState {
    PlayerState {
        yaw,
        ..settle(&flat_world(), pos, 128.0)
    }
}

fn run_at(yaw: f32, buttons: Buttons) -> InputCmd {
    InputCmd {
        forward: 1.0,
        yaw,
        buttons,
        ..Default::default()
    }
}

/// Yaw that faces +X (positive yaw turns left from -Z).
const EAST: f32 = -std::f32::consts::FRAC_PI_2;
const WEST: f32 = std::f32::consts::FRAC_PI_2;

#[test]
fn two_players_running_into_each_other_stop_without_overlapping() {
    let w = flat_world();
    let mut pair = (
        facing(Vec3::new(-3.0, 0.0, 0.0), EAST),
        facing(Vec3::new(3.0, 0.0, 0.0), WEST),
    );
    let (east, west) = (
        run_at(EAST, Buttons::default()),
        run_at(WEST, Buttons::default()),
    );
    for _ in 0..256 {
        pair = step_pair(&w, pair, (&east, &west), 128.0);
        let gap = Body::of(&pair.0, &P).gap(&Body::of(&pair.1, &P));
        assert!(gap > 0.0, "the capsules overlap by {}", -gap);
        assert!(
            pair.0.pos.x < pair.1.pos.x,
            "they passed through each other"
        );
    }
    let gap = Body::of(&pair.0, &P).gap(&Body::of(&pair.1, &P));
    assert!(gap < 0.02, "they stopped apart: {gap}");
    // Pressed together, neither keeps speed toward the other.
    assert!(pair.0.vel.x < 0.05 && pair.1.vel.x > -0.05, "{pair:?}");
    assert!(pair.0.on_ground() && pair.1.on_ground());
}

#[test]
fn a_fast_player_does_not_tunnel_through_another() {
    // 100 m/s at 20 Hz is 5 m a tick (3.5 after friction), more than a capsule is wide.
    let w = flat_world();
    let still = facing(Vec3::new(0.0, 0.0, 0.0), 0.0);
    let mut fast = facing(Vec3::new(-4.0, 0.0, 0.0), EAST);
    fast.vel = Vec3::new(100.0, 0.0, 0.0);
    let world = MoveWorld {
        map: &w,
        bodies: &[Body::of(&still, &P)],
    };
    let after = step_among(&fast, &InputCmd::default(), &world, &P, 1.0 / 20.0);
    assert!(after.pos.x < still.pos.x, "tunnelled to {}", after.pos.x);
    let gap = Body::of(&after, &P).gap(&Body::of(&still, &P));
    assert!((0.0..0.02).contains(&gap), "gap {gap}");
}

#[test]
fn a_crouched_player_blocks_a_runner_too() {
    let w = flat_world();
    let mut crouched = facing(Vec3::ZERO, 0.0);
    let duck = InputCmd {
        buttons: Buttons::CROUCH,
        ..Default::default()
    };
    crouched = step(&crouched, &duck, &w, &P, 1.0 / 128.0);
    assert!(crouched.crouched());
    let mut pair = (facing(Vec3::new(-3.0, 0.0, 0.0), EAST), crouched);
    let east = run_at(EAST, Buttons::default());
    for _ in 0..256 {
        pair = step_pair(&w, pair, (&east, &duck), 128.0);
        assert!(pair.0.pos.x < pair.1.pos.x - 2.0 * P.radius, "{:?}", pair.0);
    }
    assert!(pair.1.crouched(), "the crouched player stood up");
    // Nor can the runner climb over it: a crouched capsule is taller than a step.
    assert!(pair.0.pos.y < 0.1, "climbed onto it: {:?}", pair.0);
}

#[test]
fn players_stand_on_heads_and_cannot_stand_up_under_one() {
    let w = flat_world();
    let below = facing(Vec3::ZERO, 0.0);
    let mut above = PlayerState::at(Vec3::new(0.0, 3.0, 0.0), 0.0);
    let world = MoveWorld {
        map: &w,
        bodies: &[Body::of(&below, &P)],
    };
    for _ in 0..128 {
        above = step_among(&above, &InputCmd::default(), &world, &P, 1.0 / 128.0);
    }
    assert!(above.on_ground(), "not standing: {above:?}");
    let crown = below.pos.y + P.stand_height;
    assert!((above.pos.y - crown).abs() < 0.02, "{above:?}");
    assert!(above.vel.length() < 1e-3);

    // Crouched under someone's feet, the one below stays crouched.
    let duck = InputCmd {
        buttons: Buttons::CROUCH,
        ..Default::default()
    };
    let low = step(&below, &duck, &w, &P, 1.0 / 128.0);
    let on_top = PlayerState::at(Vec3::new(0.0, P.crouch_height + 0.01, 0.0), 0.0);
    let world = MoveWorld {
        map: &w,
        bodies: &[Body::of(&on_top, &P)],
    };
    let after = step_among(&low, &InputCmd::default(), &world, &P, 1.0 / 128.0);
    assert!(after.crouched(), "stood up into the player above");
}

#[test]
fn body_blocking_is_deterministic_to_the_bit() {
    let w = flat_world();
    let play = || {
        let mut pair = (
            facing(Vec3::new(-3.0, 0.0, 0.3), EAST),
            facing(Vec3::new(3.0, 0.0, -0.2), WEST),
        );
        let mut bits = Vec::new();
        let mut closest = f32::INFINITY;
        for i in 0..512u32 {
            let yaw = EAST + 0.3 * libm::sinf(i as f32 * 0.05);
            let jump = if i % 90 < 3 {
                Buttons::JUMP
            } else {
                Buttons::default()
            };
            let ca = run_at(yaw, jump);
            let cb = InputCmd {
                right: if i > 200 { 0.5 } else { 0.0 },
                ..run_at(WEST, Buttons::default())
            };
            pair = step_pair(&w, pair, (&ca, &cb), 128.0);
            bits.push((pair.0.to_bits(), pair.1.to_bits()));
            closest = closest.min(Body::of(&pair.0, &P).gap(&Body::of(&pair.1, &P)));
        }
        (bits, closest)
    };
    let (first, closest) = play();
    assert_eq!(first, play().0);
    // They did meet: the contact shaped the result.
    assert!((0.0..0.02).contains(&closest), "closest {closest}");
}

#[test]
fn a_jump_pad_throws_whoever_steps_on_it_along_its_launch() {
    let launch = Vec3::new(0.0, 16.0, -12.0);
    let pad = JumpPad {
        min: Vec3::new(-1.0, -0.1, -1.0),
        max: Vec3::new(1.0, 0.3, 1.0),
        launch,
    };
    let world = flat_world().with_pads(vec![pad]);
    let params = MoveParams::default();
    let hz = 128.0;
    let mut s = settle(&world, Vec3::new(0.0, 0.0, 2.0), hz);
    let mut peak = s.pos.y;
    let mut launched_at = None;
    for tick in 0..(2.0 * hz) as usize {
        s = step(&s, &run(1.0), &world, &params, 1.0 / hz);
        peak = peak.max(s.pos.y);
        if launched_at.is_none() && s.vel.y > 10.0 {
            launched_at = Some((tick, s.pos.z));
        }
    }
    let (_, z) = launched_at.expect("walking onto the pad throws the player");
    assert!(z <= 1.0, "thrown from the pad, at z = {z}");
    // 16 m/s up against 20 m/s^2 of gravity: 6.4 m above where the pad last threw the
    // player, at most its 0.3 m top.
    assert!((6.4..6.4 + 0.3).contains(&peak), "peak {peak}");
    assert!(s.flags.has(MoveFlags::ON_GROUND), "and lands");
    assert!(s.pos.z < -15.0, "carried along the launch: {}", s.pos.z);
}
