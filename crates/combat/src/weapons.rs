//! Weapons as data.

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
}

impl WeaponKind {
    /// Every weapon, in slot order.
    pub const ALL: [WeaponKind; 3] = [WeaponKind::Rifle, WeaponKind::Shotgun, WeaponKind::Rockets];

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
    /// Projectile speed, m/s; 0 for hitscan.
    pub projectile_speed: f32,
    /// Splash radius; 0 for none.
    pub splash_radius: f32,
    /// Splash damage at the centre, falling off linearly to 0 at the radius.
    pub splash_damage: f32,
    /// Speed given to a player at the centre of the splash, m/s, falling off likewise.
    pub knockback: f32,
}

/// Every weapon's definition, in [`WeaponKind`] order.
pub const WEAPONS: [WeaponDef; 3] = [
    WeaponDef {
        kind: WeaponKind::Rifle,
        name: "rifle",
        slot: 1,
        fire_interval: 0.1,
        damage: 20.0,
        head_multiplier: 2.0,
        range: 250.0,
        spread_deg: 0.0,
        pellets: 1,
        magazine: 30,
        reserve: 90,
        reload_time: 1.8,
        switch_time: 0.35,
        projectile_speed: 0.0,
        splash_radius: 0.0,
        splash_damage: 0.0,
        knockback: 0.0,
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
        projectile_speed: 0.0,
        splash_radius: 0.0,
        splash_damage: 0.0,
        knockback: 0.0,
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
        projectile_speed: 28.0,
        splash_radius: 3.5,
        splash_damage: 100.0,
        knockback: 11.0,
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
        assert_eq!(WeaponKind::in_slot(5), None);
    }
}
