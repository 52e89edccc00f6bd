//! Player movement, in the manner of Quake 3's `bg_pmove.c`: one pure function,
//! [`step`], turns (player state, input command, collision world, dt) into the next state.
//! The server's tick and the client's prediction replay both call it, so prediction is
//! right because there is only one copy of the rules.
//!
//! All rates and timers are in seconds and metres, so behaviour does not depend on the
//! tick rate; trigonometry uses libm, so every platform computes the same bits.

mod params;
mod pmove;
mod state;

pub use params::MoveParams;
pub use pmove::{step, view_vectors};
pub use state::{MoveFlags, PlayerState};

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

/// Moves each player by its current command, in player-id order.
fn move_players(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    mut players: Query<(&PlayerId, &CurrentCmd, &mut PlayerState)>,
) {
    let dt = config.dt();
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, _, _)| **id);
    for (_, cmd, mut state) in order {
        *state = step(&state, &cmd.0, &map.world, &params, dt);
    }
}

#[cfg(test)]
mod replay;
#[cfg(test)]
mod tests;
