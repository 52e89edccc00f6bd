//! The shipped maps' routes, flown by the same movement and rocket functions the server
//! runs and the client predicts with: spire's jump pads land on the spire, its ledge is a
//! rocket jump away and beyond a plain jump.

use bevy::prelude::*;
use sightline_combat::{ProjectileAct, ProjectileKind};
use sightline_harness::load_map;
use sightline_movement::{MoveParams, PlayerState};
use sightline_prediction::{OtherPlayers, TickWorld, predict_tick};
use sightline_sim::{Buttons, InputCmd, PlayerId};

const HZ: f32 = 128.0;

/// Runs `cmd_at(tick)` for `seconds` from `state` on `map`, with our rockets flying and
/// pushing us; the states after each tick.
fn run(
    map: &str,
    mut state: PlayerState,
    seconds: f32,
    cmd_at: impl Fn(usize) -> (InputCmd, ProjectileAct),
) -> Vec<PlayerState> {
    let map = load_map(map);
    let params = MoveParams::default();
    let others = OtherPlayers::default();
    let world = TickWorld {
        map: &map.world,
        params: &params,
        dt: 1.0 / HZ,
        others: &others,
        me: PlayerId(1),
    };
    let mut rockets = Vec::new();
    (0..(seconds * HZ) as usize)
        .map(|tick| {
            let (mut cmd, act) = cmd_at(tick);
            cmd.seq = tick as u32 + 1;
            state = predict_tick(&world, &state, &cmd, act, &mut rockets).state;
            state
        })
        .collect()
}

/// Facing +X (yaw 0 faces -Z, 90 degrees faces -X).
const EAST: f32 = -std::f32::consts::FRAC_PI_2;

#[test]
fn spire_jump_pads_throw_a_walker_onto_the_spire() {
    for (z, yaw) in [(17.0, 0.0), (-17.0, std::f32::consts::PI)] {
        let start = PlayerState::at(Vec3::new(0.0, 0.0, z), yaw);
        let walk = InputCmd {
            forward: 1.0,
            yaw,
            ..default()
        };
        let path = run("spire", start, 3.0, |tick| {
            // Walk onto the pad, then let go.
            let cmd = if tick < 64 {
                walk
            } else {
                InputCmd { yaw, ..default() }
            };
            (cmd, ProjectileAct::None)
        });
        let end = path.last().unwrap();
        assert!(
            end.pos.y > 5.9 && end.pos.x.abs() < 3.0 && end.pos.z.abs() < 3.0,
            "from z = {z}: ended at {}",
            end.pos
        );
    }
}

#[test]
fn spire_ledge_is_a_rocket_jump_away_and_beyond_a_jump() {
    let start = PlayerState::at(Vec3::new(21.2, 0.0, 0.0), EAST);
    // Running at the ledge, looking at the feet, jumping on tick 20.
    const LEAP: usize = 20;
    let runs_at_it = |tick: usize| InputCmd {
        forward: 1.0,
        yaw: EAST,
        pitch: -1.5,
        buttons: if tick == LEAP {
            Buttons::JUMP
        } else {
            Buttons::default()
        },
        ..default()
    };
    // A running jump at the ledge stops at its face.
    let jump = run("spire", start, 2.0, |tick| {
        (runs_at_it(tick), ProjectileAct::None)
    });
    let top = jump.iter().map(|s| s.pos.y).fold(0.0, f32::max);
    assert!(top < 1.5, "a plain jump reached {top} m");
    assert!(
        jump.last().unwrap().pos.x < 23.0,
        "and stays below the ledge"
    );
    // A rocket at the feet as the jump leaves lifts the player onto it.
    let rocket_jump = run("spire", start, 2.0, |tick| {
        let act = if tick == LEAP {
            ProjectileAct::Launch(ProjectileKind::Rocket)
        } else {
            ProjectileAct::None
        };
        (runs_at_it(tick), act)
    });
    let end = rocket_jump.last().unwrap();
    assert!(
        end.pos.y > 3.1 && end.pos.x > 23.0,
        "the rocket jump ended at {}",
        end.pos
    );
}
