//! The combat messages: what happened in a tick's fighting, for the network and the logs.

use crate::{FlagNews, HitZone, Team, WeaponKind};
use bevy::prelude::*;
use sightline_sim::PlayerId;

/// Something that happened in combat, for the network and the logs.
#[derive(Message, Debug, Clone, PartialEq)]
pub enum CombatEvent {
    /// A weapon went off.
    Fired {
        /// Who fired.
        shooter: PlayerId,
        /// With what.
        weapon: WeaponKind,
        /// From where (the eye).
        origin: Vec3,
        /// Which way.
        dir: Vec3,
        /// The aim as yaw and pitch in angle steps ([`sightline_sim::angle_steps`]):
        /// exactly the command's, whose angles lie on that grid, so `dir` follows from it.
        aim: [i16; 2],
        /// The tick it happened in.
        tick: u32,
        /// The command that fired: its number and the view time it claimed, fractional
        /// ticks (a bot's is its own reckoning). Kept here because the player's current
        /// command may be another by the end of the tick (a second one run to repay a
        /// held tick, or silenced by a death later in the tick).
        cmd: (u32, f64),
    },
    /// A shot or splash struck a player.
    Hit {
        /// Who fired.
        shooter: PlayerId,
        /// Who was hit.
        target: PlayerId,
        /// Health and armour taken.
        damage: f32,
        /// Where.
        zone: HitZone,
        /// With what.
        weapon: WeaponKind,
        /// The tick of the world it was judged in: for a hitscan shot the view its
        /// shooter saw (lag compensation rewinds to it), for splash the burst's.
        seen: u32,
    },
    /// A hitscan shot whose view time was honest but older than the rewind limit: judged
    /// against the oldest world allowed, so its shooter had to lead by `excess`.
    ShotLate {
        /// Who fired.
        shooter: PlayerId,
        /// The tick it was fired in.
        tick: u32,
        /// How far the view lay behind the oldest world allowed, seconds.
        excess: f32,
    },
    /// A hitscan shot with a view time no honest client could claim: not judged.
    ShotRefused {
        /// Who fired.
        shooter: PlayerId,
        /// The tick it was fired in.
        tick: u32,
    },
    /// A player died.
    Killed {
        /// Who died.
        victim: PlayerId,
        /// Who killed them (themselves included).
        killer: PlayerId,
        /// With what.
        weapon: WeaponKind,
    },
    /// A projectile burst.
    Exploded {
        /// What burst.
        kind: crate::ProjectileKind,
        /// Where.
        at: Vec3,
        /// The tick it happened in.
        tick: u32,
        /// The rocket's id.
        rocket: u16,
        /// Who fired it.
        owner: PlayerId,
    },
    /// A flag changed hands or place (capture the flag).
    Flag {
        /// Whose flag.
        team: Team,
        /// What happened to it.
        news: FlagNews,
        /// Who did it; none when it went home by itself.
        by: Option<PlayerId>,
    },
}
