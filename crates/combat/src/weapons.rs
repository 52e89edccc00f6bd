//! Weapons as data.

use crate::ProjectileKind;
use serde::{Deserialize, Serialize};

/// The weapons there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum WeaponKind {
    /// Automatic hitscan rifle.
    #[default]
    Rifle,
    /// Pump shotgun: several hitscan pellets in a cone.
    Shotgun,
    /// Rocket launcher: slow projectiles with splash damage and knockback.
    Rockets,
    /// Railgun: a shot that charges for a moment, then pierces every body along its line.
    Railgun,
    /// Plasma gun: an automatic stream of fast bolts with a small splash.
    Plasma,
}

impl WeaponKind {
    /// Every weapon, in slot order.
    pub const ALL: [WeaponKind; 5] = [
        WeaponKind::Rifle,
        WeaponKind::Shotgun,
        WeaponKind::Rockets,
        WeaponKind::Railgun,
        WeaponKind::Plasma,
    ];

    /// The weapons a player (re)spawns holding; the rest are picked up on the map.
    pub const SPAWNED_WITH: [WeaponKind; 3] =
        [WeaponKind::Rifle, WeaponKind::Shotgun, WeaponKind::Rockets];

    /// Its definition.
    pub fn def(self) -> &'static WeaponDef {
        &WEAPONS[self as usize]
    }

    /// The weapon in a slot (1-based), if any.
    pub fn in_slot(slot: u8) -> Option<WeaponKind> {
        Self::ALL.into_iter().find(|w| w.def().slot == slot)
    }

    /// Index for per-weapon arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its bit in a set of weapons ([`crate::Arsenal::owned`]).
    pub fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl ProjectileKind {
    /// The weapon that fires it.
    pub fn weapon(self) -> WeaponKind {
        match self {
            ProjectileKind::Rocket => WeaponKind::Rockets,
            ProjectileKind::Plasma | ProjectileKind::PlasmaBall => WeaponKind::Plasma,
        }
    }
}

/// What a weapon's alternate fire (the second mouse button) does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AltFire {
    /// Held: the view zooms in by `fov_scale` and shots spread by `spread_deg` instead.
    Zoom {
        /// Cone half-angle while zoomed, degrees.
        spread_deg: f32,
        /// Field of view while zoomed, as a share of the normal one.
        fov_scale: f32,
    },
    /// Both barrels at once: two rounds, twice the pellets in a cone wider by `spread`,
    /// and the next shot waits `cooldown` times the usual interval.
    Double {
        /// Spread multiplier.
        spread: f32,
        /// Fire interval multiplier.
        cooldown: f32,
    },
    /// Pressed: the owner's newest projectile in flight bursts where it is.
    Detonate,
    /// A heavier projectile for `rounds` rounds, the next shot waiting `cooldown` seconds.
    Heavy {
        /// What it launches.
        projectile: ProjectileKind,
        /// Rounds it takes.
        rounds: u16,
        /// Seconds until the next shot.
        cooldown: f32,
    },
}

/// Hitscan damage falling off with distance: full up to `start` metres, then linearly
/// down to `min` (a share of full damage) at `end` and beyond.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Falloff {
    /// Distance of full damage, metres.
    pub start: f32,
    /// Distance from which damage is at its least, metres.
    pub end: f32,
    /// The least share of full damage.
    pub min: f32,
}

impl Falloff {
    /// The share of full damage a hit at `distance` metres does.
    pub fn scale(&self, distance: f32) -> f32 {
        // Not past the start, or not a number: full damage.
        if distance.partial_cmp(&self.start) != Some(std::cmp::Ordering::Greater) {
            return 1.0;
        }
        let t = ((distance - self.start) / (self.end - self.start).max(1e-3)).min(1.0);
        1.0 + (self.min - 1.0) * t
    }
}

/// How a weapon behaves. Times in seconds, distances in metres, damage in hit points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeaponDef {
    /// Which weapon.
    pub kind: WeaponKind,
    /// Name shown on the HUD and in the kill feed.
    pub name: &'static str,
    /// Slot key, 1-5.
    pub slot: u8,
    /// Time between shots.
    pub fire_interval: f32,
    /// Damage per pellet (hitscan) or direct hit (projectile).
    pub damage: f32,
    /// Damage multiplier for a head hit.
    pub head_multiplier: f32,
    /// Farthest hitscan reach.
    pub range: f32,
    /// Cone half-angle of spread, degrees.
    pub spread_deg: f32,
    /// Pellets per shot.
    pub pellets: u8,
    /// Rounds per magazine.
    pub magazine: u16,
    /// Spare rounds carried at spawn.
    pub reserve: u16,
    /// Time to reload.
    pub reload_time: f32,
    /// Time to bring the weapon up.
    pub switch_time: f32,
    /// The projectile it launches, if not hitscan.
    pub projectile: Option<ProjectileKind>,
    /// What the alternate fire does.
    pub alt: AltFire,
    /// Hitscan damage falloff with distance, if any.
    pub falloff: Option<Falloff>,
    /// Seconds the trigger must be held before the shot leaves (0: at once); letting go
    /// sooner fires nothing.
    pub charge_time: f32,
    /// Whether a hitscan shot goes through bodies, hurting each along its line up to the
    /// first wall.
    pub pierces: bool,
}

impl WeaponDef {
    /// Whether its shots are hitscan (it launches no projectile).
    pub fn is_hitscan(&self) -> bool {
        self.projectile.is_none()
    }
}

/// Every weapon's definition, in [`WeaponKind`] order.
pub const WEAPONS: [WeaponDef; 5] = [
    WeaponDef {
        kind: WeaponKind::Rifle,
        name: "rifle",
        slot: 1,
        fire_interval: 0.1,
        damage: 20.0,
        head_multiplier: 2.0,
        range: 250.0,
        spread_deg: 0.6,
        pellets: 1,
        magazine: 30,
        reserve: 90,
        reload_time: 1.8,
        switch_time: 0.35,
        projectile: None,
        alt: AltFire::Zoom {
            spread_deg: 0.05,
            fov_scale: 0.5,
        },
        falloff: Some(Falloff {
            start: 30.0,
            end: 90.0,
            min: 0.6,
        }),
        charge_time: 0.0,
        pierces: false,
    },
    WeaponDef {
        kind: WeaponKind::Shotgun,
        name: "shotgun",
        slot: 2,
        fire_interval: 0.9,
        damage: 9.0,
        head_multiplier: 1.5,
        range: 60.0,
        spread_deg: 5.0,
        pellets: 11,
        magazine: 8,
        reserve: 24,
        reload_time: 2.4,
        switch_time: 0.4,
        projectile: None,
        alt: AltFire::Double {
            spread: 1.4,
            cooldown: 1.6,
        },
        falloff: Some(Falloff {
            start: 8.0,
            end: 30.0,
            min: 0.35,
        }),
        charge_time: 0.0,
        pierces: false,
    },
    WeaponDef {
        kind: WeaponKind::Rockets,
        name: "rocket launcher",
        slot: 3,
        fire_interval: 0.8,
        damage: 100.0,
        head_multiplier: 1.0,
        range: 0.0,
        spread_deg: 0.0,
        pellets: 1,
        magazine: 5,
        reserve: 15,
        reload_time: 2.0,
        switch_time: 0.45,
        projectile: Some(ProjectileKind::Rocket),
        alt: AltFire::Detonate,
        falloff: None,
        charge_time: 0.0,
        pierces: false,
    },
    WeaponDef {
        kind: WeaponKind::Railgun,
        name: "railgun",
        slot: 4,
        fire_interval: 1.5,
        damage: 90.0,
        head_multiplier: 1.5,
        range: 500.0,
        spread_deg: 0.0,
        pellets: 1,
        magazine: 5,
        reserve: 10,
        reload_time: 2.2,
        switch_time: 0.5,
        projectile: None,
        alt: AltFire::Zoom {
            spread_deg: 0.0,
            fov_scale: 0.35,
        },
        falloff: None,
        charge_time: 0.35,
        pierces: true,
    },
    WeaponDef {
        kind: WeaponKind::Plasma,
        name: "plasma gun",
        slot: 5,
        fire_interval: 0.09,
        damage: 0.0,
        head_multiplier: 1.0,
        range: 0.0,
        spread_deg: 0.0,
        pellets: 1,
        magazine: 50,
        reserve: 100,
        reload_time: 2.0,
        switch_time: 0.35,
        projectile: Some(ProjectileKind::Plasma),
        alt: AltFire::Heavy {
            projectile: ProjectileKind::PlasmaBall,
            rounds: 5,
            cooldown: 0.9,
        },
        falloff: None,
        charge_time: 0.0,
        pierces: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_kind_order_with_distinct_slots() {
        for (i, w) in WEAPONS.iter().enumerate() {
            assert_eq!(w.kind.index(), i);
            assert_eq!(WeaponKind::in_slot(w.slot), Some(w.kind));
            assert!(w.fire_interval > 0.0 && w.magazine > 0 && w.pellets > 0);
        }
        assert_eq!(WeaponKind::in_slot(6), None);
    }

    #[test]
    fn falloff_is_full_then_linear_then_floored() {
        let f = Falloff {
            start: 10.0,
            end: 30.0,
            min: 0.5,
        };
        assert_eq!(f.scale(0.0), 1.0);
        assert_eq!(f.scale(10.0), 1.0);
        assert!((f.scale(20.0) - 0.75).abs() < 1e-6);
        assert_eq!(f.scale(30.0), 0.5);
        assert_eq!(f.scale(1000.0), 0.5);
        assert_eq!(f.scale(f32::NAN), 1.0, "no distance, no falloff");
    }
}
