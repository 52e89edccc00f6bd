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
use sightline_sim::{CommandStep, SimSet};

/// Puts every player on the grid ([`grid`]) at the end of each tick ([`SimSet::Settle`]),
/// and before a second command's [`CommandStep`] (which starts where the first left the
/// player settled, as the client predicts every command from the grid). The moves
/// themselves are each player's command, run with its weapon by
/// `sightline_combat::player_command`.
#[derive(Default)]
pub struct MovementPlugin;

impl Plugin for MovementPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<MoveParams>()
            .add_systems(CommandStep, settle_players.before(SimSet::Move))
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

#[cfg(test)]
mod replay;
#[cfg(test)]
mod tests;
