//! A player's score: frags and deaths.

use bevy::prelude::*;

/// Frags and deaths.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Score {
    /// Kills of others, less suicides.
    pub frags: i32,
    /// Times died.
    pub deaths: u32,
}
