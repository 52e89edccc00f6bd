//! Player movement, in the manner of Quake 3's `bg_pmove.c`: one pure function,
//! [`step`], turns (player state, input command, collision world, dt) into the next state.
//! The server's tick and the client's prediction replay both call it, so prediction is
//! right because there is only one copy of the rules.
//!
//! All rates and timers are in seconds and metres, so behaviour does not depend on the
//! tick rate; trigonometry uses libm, so every platform computes the same bits.

mod bodies;
mod params;
mod pmove;
mod state;

pub use bodies::{Body, MoveWorld, bodies_near, reach};
pub use params::MoveParams;
pub use pmove::{step, step_among, view_vectors};
pub use state::{MoveFlags, PlayerState, Solid};

use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_sim::{CurrentCmd, PlayerId, SimSet, TickConfig};

/// Runs [`step`] for every player in [`SimSet::Move`].
#[derive(Default)]
pub struct MovementPlugin;

impl Plugin for MovementPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<MoveParams>().add_systems(
            FixedUpdate,
            move_players
                .in_set(SimSet::Move)
                .run_if(resource_exists::<CurrentMap>),
        );
    }
}

/// Moves each player by its current command, in player-id order, each against the map
/// and the other solid players where they stand at that moment: those before it in the
/// order have already made this tick's move, those after it have not. A player that is
/// not [`Solid`] (the dead) passes through everyone and nobody is stopped by it.
fn move_players(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    mut players: Query<(&PlayerId, &CurrentCmd, &mut PlayerState, &Solid)>,
) {
    let dt = config.dt();
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    let mut bodies: Vec<Option<Body>> = order
        .iter()
        .map(|(_, _, state, solid)| solid.0.then(|| Body::of(state, &params)))
        .collect();
    for (i, (_, cmd, state, solid)) in order.iter_mut().enumerate() {
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
        **state = step_among(state, &cmd.0, &world, &params, dt);
        if solid.0 {
            bodies[i] = Some(Body::of(state, &params));
        }
    }
}

#[cfg(test)]
mod replay;
#[cfg(test)]
mod tests;
