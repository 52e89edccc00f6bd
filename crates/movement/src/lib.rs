//! Player movement, in the manner of Quake 3's `bg_pmove.c`: one pure function,
//! [`step`], turns (player state, input command, collision world, dt) into the next state.
//! The server's tick and the client's prediction replay both call it, so prediction is
//! right because there is only one copy of the rules.
//!
//! All rates and timers are in seconds and metres, so behaviour does not depend on the
//! tick rate; trigonometry uses libm, so every platform computes the same bits. What a
//! tick leaves is put on a grid ([`grid`]), the form snapshots carry exactly.

mod bodies;
pub mod grid;
mod params;
mod pmove;
mod state;

pub use bodies::{Body, MoveWorld, bodies_near, reach};
pub use grid::{GridState, on_grid};
pub use params::MoveParams;
pub use pmove::{moved_by_bodies, step, step_among, view_vectors};
pub use state::{Contacts, MoveFlags, PlayerState, Solid};

use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_sim::{CommandStep, CurrentCmd, Held, PlayerId, SimSet, TickConfig};

/// Runs [`step`] for every player in [`SimSet::Move`] (of a tick, and of a second command's
/// [`CommandStep`]), and puts every player on the grid ([`grid`]) in [`SimSet::Settle`].
#[derive(Default)]
pub struct MovementPlugin;

impl Plugin for MovementPlugin {
    fn build(&self, app: &mut App) {
        let moving = || {
            move_players
                .in_set(SimSet::Move)
                .run_if(resource_exists::<CurrentMap>)
        };
        app.init_resource::<MoveParams>()
            .add_systems(FixedUpdate, moving())
            // A second command starts where the first left the player settled, as the
            // client predicts every command from the grid.
            .add_systems(CommandStep, (settle_players.before(SimSet::Move), moving()))
            .add_systems(FixedUpdate, settle_players.in_set(SimSet::Settle));
    }
}

/// Puts every player's state on the grid, whatever moved it this tick (its command, an
/// explosion, a respawn).
fn settle_players(mut players: Query<&mut PlayerState>) {
    for mut state in &mut players {
        let settled = on_grid(&state);
        state.set_if_neq(settled);
    }
}

/// Moves each player by its current command, in player-id order, each against the map
/// and the other solid players where they stand at that moment: those before it in the
/// order have already made this tick's move, those after it have not. A player that is
/// not [`Solid`] (the dead) passes through everyone and nobody is stopped by it. A
/// [`Held`] player stays where it is, still solid. A move that another body changed is
/// counted in the mover's [`Contacts`], with the nearest body's player.
fn move_players(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    mut players: Query<(
        &PlayerId,
        &CurrentCmd,
        &mut PlayerState,
        &Solid,
        &Held,
        &mut Contacts,
    )>,
) {
    let dt = config.dt();
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    let ids: Vec<PlayerId> = order.iter().map(|(id, ..)| **id).collect();
    let mut bodies: Vec<Option<Body>> = order
        .iter()
        .map(|(_, _, state, solid, ..)| solid.0.then(|| Body::of(state, &params)))
        .collect();
    for (i, (_, cmd, state, solid, held, contacts)) in order.iter_mut().enumerate() {
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
        let moved = step_among(state, &cmd.0, &world, &params, dt);
        if moved_by_bodies(state, &cmd.0, &world, &moved, &params, dt) {
            let me = Body::of(&moved, &params);
            let nearest = bodies
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(j, b)| b.map(|b| (ids[j], me.gap(&b))))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            contacts.count = contacts.count.wrapping_add(1);
            contacts.last = nearest.map(|(id, _)| id);
        }
        **state = moved;
        if solid.0 {
            bodies[i] = Some(Body::of(state, &params));
        }
    }
}

#[cfg(test)]
mod replay;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod plugin_tests {
    use super::*;
    use bevy::ecs::system::RunSystemOnce;
    use sightline_map::MapSource;
    use sightline_sim::InputCmd;
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

    fn run(world: &mut World, ticks: usize) {
        for _ in 0..ticks {
            world.run_system_once(move_players).expect("runs");
        }
    }

    #[test]
    fn the_server_step_blocks_players_on_each_other() {
        let (mut world, [a, b]) = two_runners();
        run(&mut world, 128);
        let params = MoveParams::default();
        let body = |e| Body::of(world.get::<PlayerState>(e).unwrap(), &params);
        let gap = body(a).gap(&body(b));
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
        let params = MoveParams::default();
        let body = |e| Body::of(world.get::<PlayerState>(e).unwrap(), &params);
        let gap = body(a).gap(&body(b));
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
}
