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

    /// Its place in [`Team::ALL`] and in per-team arrays.
    pub fn index(self) -> usize {
        match self {
            Team::Red => 0,
            Team::Blue => 1,
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

/// Free-for-all, teams, or capture the flag. With the `clap` feature it is a
/// command-line value (`dm`, `tdm`, `ctf`).
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
    /// Red against blue for each other's flag, on a map with flag bases; a capture
    /// scores, frags do not.
    #[cfg_attr(feature = "clap", value(name = "ctf"))]
    CaptureTheFlag,
}

impl GameMode {
    /// Whether players are in teams.
    pub fn teams(self) -> bool {
        self != GameMode::Deathmatch
    }

    /// Every mode, in the order `mode` lists them.
    pub const ALL: [GameMode; 3] = [
        GameMode::Deathmatch,
        GameMode::TeamDeathmatch,
        GameMode::CaptureTheFlag,
    ];

    /// Whether it is played for flags, and so only on maps with flag bases.
    pub fn flags(self) -> bool {
        self == GameMode::CaptureTheFlag
    }

    /// Its short name, as the `mode` setting spells it: `dm` or `tdm`.
    pub fn keyword(self) -> &'static str {
        match self {
            GameMode::Deathmatch => "dm",
            GameMode::TeamDeathmatch => "tdm",
            GameMode::CaptureTheFlag => "ctf",
        }
    }
}

/// What a shot or a burst does to a team mate (the host's `g_friendlyfire`).
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
pub enum FriendlyFire {
    /// Nothing: team mates cannot hurt each other.
    #[default]
    Off,
    /// As to anyone; a team kill costs the killer a frag.
    On,
    /// The team mate is spared and the shooter takes half of it, as Xonotic's mirror
    /// damage: careless fire costs the careless.
    Reflect,
}

impl FriendlyFire {
    /// Share of the damage a [`FriendlyFire::Reflect`] shooter takes.
    pub const REFLECTED_SHARE: f32 = 0.5;

    /// The keyword `g_friendlyfire` takes.
    pub fn keyword(self) -> &'static str {
        match self {
            FriendlyFire::Off => "off",
            FriendlyFire::On => "on",
            FriendlyFire::Reflect => "reflect",
        }
    }

    /// Who takes how much of `amount` dealt by `shooter` to `target`, team mates when
    /// `mates`: `None` when nobody does.
    pub fn redirect<T: PartialEq + Copy>(
        self,
        mates: bool,
        shooter: T,
        target: T,
        amount: f32,
    ) -> Option<(T, f32)> {
        if !mates || shooter == target {
            return Some((target, amount));
        }
        match self {
            FriendlyFire::Off => None,
            FriendlyFire::On => Some((target, amount)),
            FriendlyFire::Reflect => Some((shooter, amount * Self::REFLECTED_SHARE)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn friendly_fire_spares_hurts_or_turns_back_on_the_shooter() {
        assert_eq!(FriendlyFire::Off.redirect(true, 1, 2, 40.0), None);
        assert_eq!(FriendlyFire::On.redirect(true, 1, 2, 40.0), Some((2, 40.0)));
        assert_eq!(
            FriendlyFire::Reflect.redirect(true, 1, 2, 40.0),
            Some((1, 20.0))
        );
        for ff in [FriendlyFire::Off, FriendlyFire::On, FriendlyFire::Reflect] {
            assert_eq!(ff.redirect(false, 1, 2, 40.0), Some((2, 40.0)), "foes");
            assert_eq!(ff.redirect(true, 1, 1, 40.0), Some((1, 40.0)), "oneself");
        }
    }
}
