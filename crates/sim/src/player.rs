//! Components every simulated player carries, on server and client alike.

use crate::InputCmd;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// A player's number within a match, stable while it is connected. Also orders players
/// within a tick, so every machine processes them in the same order.
#[derive(
    Component, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct PlayerId(pub u8);

/// Marks a player entity.
#[derive(Component, Debug, Default, Clone, Copy)]
#[require(CurrentCmd, Held)]
pub struct Player;

/// The name players see.
#[derive(Component, Debug, Clone, PartialEq, Eq)]
pub struct PlayerName(pub String);

/// The command this player runs in the current tick, chosen in [`crate::SimSet::ReadInputs`].
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct CurrentCmd(pub InputCmd);

/// Whether this player sits the current tick out: its next command has not arrived, and
/// the server waits for it rather than guess. A guess the client would have to correct;
/// waiting keeps the player's commands running in the order the client predicted them,
/// only a tick later. Nothing of the player's own (movement, weapons) runs while held.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Held(pub bool);

/// Marks a player whose commands come from the bot brain rather than a connection.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct BotControlled {
    /// Seed that makes this bot's choices differ from other bots'.
    pub seed: u64,
}
