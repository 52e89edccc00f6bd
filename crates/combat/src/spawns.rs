//! Counting the times a player is placed rather than moved, and pushed by explosions.

use bevy::prelude::*;

/// How many times the server has put a player somewhere without moving it there (a
/// respawn, the start of a new match), wrapping. Snapshots carry it, so a client seeing it
/// change knows the jump is a teleport: its own player adopts the server's state without
/// calling it a misprediction, and a remote player is not interpolated across the map.
/// Every player has one (it comes with `Vitals`); the server bumps it wherever it places
/// a player.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SpawnCount(pub u8);

impl SpawnCount {
    /// Counts one more placement.
    pub fn bump(&mut self) {
        self.0 = self.0.wrapping_add(1);
    }
}

/// How many explosions have pushed a player, wrapping. Its own client reads it in each
/// snapshot: a prediction that differs from the server's when the count has changed was
/// pushed, not mispredicted. Every player has one (it comes with `Vitals`).
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pushes(pub u8);
