//! What a player is as they (re)spawn: the one definition the server's joins, respawns,
//! new matches and bots, and the client's prediction of its own weapons, all use.

use crate::{Arsenal, Vitals};
use bevy::prelude::*;
use sightline_map::SpawnPoint;
use sightline_movement::PlayerState;

/// How many times the server has put a player somewhere without moving it there (a
/// respawn, the start of a new match), wrapping. Snapshots carry it, so a client seeing it
/// change knows the jump is a teleport: its own player adopts the server's state without
/// calling it a misprediction, and a remote player is not interpolated across the map.
/// Every player has one (it comes with [`Vitals`]); the server bumps it wherever it places
/// a player.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SpawnCount(pub u8);

impl SpawnCount {
    /// Counts one more placement.
    pub fn bump(&mut self) {
        self.0 = self.0.wrapping_add(1);
    }
}

/// A player spawning at `at`: standing there facing its way, at full health under spawn
/// protection, with the starting weapons ([`Arsenal::spawned`]).
pub fn respawned(at: SpawnPoint) -> (PlayerState, Vitals, Arsenal) {
    (
        PlayerState::at(at.pos, at.yaw),
        Vitals::spawned(),
        Arsenal::spawned(),
    )
}
