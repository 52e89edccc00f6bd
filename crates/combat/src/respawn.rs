//! What a player is as they (re)spawn: the one definition the server's joins, respawns,
//! new matches and bots, and the client's prediction of its own weapons, all use.

use crate::{Arsenal, Vitals};
use sightline_map::SpawnPoint;
use sightline_movement::PlayerState;

/// A player spawning at `at`: standing there facing its way, at full health under spawn
/// protection, with the starting weapons ([`Arsenal::spawned`]).
pub fn respawned(at: SpawnPoint) -> (PlayerState, Vitals, Arsenal) {
    (
        PlayerState::at(at.pos, at.yaw),
        Vitals::spawned(),
        Arsenal::spawned(),
    )
}
