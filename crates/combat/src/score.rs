//! A player's score: frags, deaths and flags captured.

use bevy::prelude::*;

/// Frags, deaths and captures.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Score {
    /// Kills of others, less suicides.
    pub frags: i32,
    /// Times died.
    pub deaths: u32,
    /// Enemy flags brought home (capture the flag).
    pub captures: u32,
}
