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

/// How many explosions have pushed a player, wrapping: its own, and other players'. Its
/// own client reads them in each snapshot: a prediction that differs from the server's
/// after another's explosion was pushed, not mispredicted; after its own (which it
/// predicts), the misprediction is its own. Every player has one (it comes with
/// `Vitals`).
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pushes {
    /// By the player's own explosions.
    pub own: u8,
    /// By other players' explosions.
    pub others: u8,
}

impl Pushes {
    /// Counts a push by an explosion of `owner`'s, on player `me`.
    pub fn count(&mut self, me: sightline_sim::PlayerId, owner: sightline_sim::PlayerId) {
        let count = if me == owner {
            &mut self.own
        } else {
            &mut self.others
        };
        *count = count.wrapping_add(1);
    }
}
