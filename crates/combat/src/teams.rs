//! Teams and game modes: what the match is played as. They travel on the wire as these
//! enums, so a value outside them is refused when decoded.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// A player's team in team games; absent in free-for-all.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Team {
    /// Red.
    Red,
    /// Blue.
    Blue,
}

impl Team {
    /// Both teams.
    pub const ALL: [Team; 2] = [Team::Red, Team::Blue];

    /// The team's name, for the HUD and announcements.
    pub fn name(self) -> &'static str {
        match self {
            Team::Red => "Red",
            Team::Blue => "Blue",
        }
    }

    /// The team it plays against.
    pub fn other(self) -> Team {
        match self {
            Team::Red => Team::Blue,
            Team::Blue => Team::Red,
        }
    }
}

/// Free-for-all or teams. With the `clap` feature it is a command-line value (`dm`,
/// `tdm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum GameMode {
    /// Everyone for themselves.
    #[default]
    #[cfg_attr(feature = "clap", value(name = "dm"))]
    Deathmatch,
    /// Red against blue; teams balanced on joining; no friendly fire.
    #[cfg_attr(feature = "clap", value(name = "tdm"))]
    TeamDeathmatch,
}

impl GameMode {
    /// Whether players are in teams.
    pub fn teams(self) -> bool {
        self == GameMode::TeamDeathmatch
    }

    /// Its short name, as the `mode` setting spells it: `dm` or `tdm`.
    pub fn keyword(self) -> &'static str {
        match self {
            GameMode::Deathmatch => "dm",
            GameMode::TeamDeathmatch => "tdm",
        }
    }
}
