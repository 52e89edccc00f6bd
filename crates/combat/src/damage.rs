//! Health, armour, spawn protection, and splash.

use bevy::prelude::*;

/// Health at spawn.
pub const SPAWN_HEALTH: f32 = 100.0;
/// Most health pickups can give.
pub const MAX_HEALTH: f32 = 200.0;
/// Most armour.
pub const MAX_ARMOR: f32 = 200.0;
/// Seconds between death and respawn.
pub const RESPAWN_DELAY: f32 = 2.0;
/// Seconds after spawning during which no damage is taken.
pub const SPAWN_PROTECTION: f32 = 1.5;
/// Share of damage armour takes while it lasts (as in Quake: two thirds).
const ARMOR_SHARE: f32 = 2.0 / 3.0;
/// Seconds a power-up lasts once taken.
pub const POWER_UP_TIME: f32 = 30.0;
/// Damage multiplier while quad damage lasts (Quake 3's factor).
pub const QUAD_FACTOR: f32 = 3.0;
/// Health a second regeneration gives, up to [`REGEN_HEALTH`].
pub const REGEN_RATE: f32 = 15.0;
/// Most health regeneration brings a player to.
pub const REGEN_HEALTH: f32 = 150.0;

/// A player's health and armour.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
#[require(crate::SpawnCount, crate::Pushes)]
pub struct Vitals {
    /// Hit points; 0 or less is dead.
    pub health: f32,
    /// Armour points.
    pub armor: f32,
    /// Spawn protection left, seconds.
    pub protection: f32,
    /// While dead: seconds until respawn.
    pub respawn_in: f32,
    /// Quad damage left, seconds.
    pub quad: f32,
    /// Regeneration left, seconds.
    pub regen: f32,
}

impl Default for Vitals {
    fn default() -> Self {
        Self::spawned()
    }
}

/// What one hit did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Damage {
    /// Health lost.
    pub health: f32,
    /// Armour lost.
    pub armor: f32,
    /// Whether this hit killed.
    pub killed: bool,
}

impl Vitals {
    /// A freshly spawned player: full health, no armour, protected.
    pub fn spawned() -> Self {
        Self {
            health: SPAWN_HEALTH,
            armor: 0.0,
            protection: SPAWN_PROTECTION,
            respawn_in: 0.0,
            quad: 0.0,
            regen: 0.0,
        }
    }

    /// What this player's damage to others is multiplied by.
    pub fn damage_factor(&self) -> f32 {
        if self.quad > 0.0 { QUAD_FACTOR } else { 1.0 }
    }

    /// Runs the clocks for `dt` seconds: spawn protection and power-ups wear off,
    /// regeneration heals, and the dead wait for their respawn.
    pub fn tick(&mut self, dt: f32) {
        self.protection = (self.protection - dt).max(0.0);
        self.quad = (self.quad - dt).max(0.0);
        if !self.alive() {
            self.respawn_in = (self.respawn_in - dt).max(0.0);
            self.regen = 0.0;
            self.quad = 0.0;
            return;
        }
        if self.regen > 0.0 {
            let step = dt.min(self.regen);
            self.regen -= step;
            if self.health < REGEN_HEALTH {
                self.health = (self.health + REGEN_RATE * step).min(REGEN_HEALTH);
            }
        }
    }

    /// Whether the player is alive.
    pub fn alive(&self) -> bool {
        self.health > 0.0
    }

    /// Applies `amount` of damage: armour takes two thirds while it lasts; nothing happens
    /// to the dead or the spawn-protected.
    pub fn damage(&mut self, amount: f32) -> Damage {
        if !self.alive() || self.protection > 0.0 || amount <= 0.0 {
            return Damage::default();
        }
        let armor = (amount * ARMOR_SHARE).min(self.armor);
        let health = amount - armor;
        self.armor -= armor;
        self.health -= health;
        let killed = !self.alive();
        if killed {
            self.respawn_in = RESPAWN_DELAY;
        }
        Damage {
            health,
            armor,
            killed,
        }
    }
}

/// Splash from an explosion at `at` on a target whose body centre is `target`: damage and
/// knockback both fall off linearly from the full amount at the centre to nothing at
/// `radius`. The knockback pushes away from the explosion (and a little upward, so a
/// player standing on it is lifted rather than pressed into the floor).
pub fn splash(
    at: Vec3,
    radius: f32,
    damage: f32,
    knockback: f32,
    target: Vec3,
) -> Option<(f32, Vec3)> {
    let offset = target - at;
    let distance = offset.length();
    if radius <= 0.0 || distance >= radius {
        return None;
    }
    let scale = 1.0 - distance / radius;
    let away = (offset.normalize_or_zero() + Vec3::Y * 0.3).normalize_or_zero();
    Some((damage * scale, away * knockback * scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn armour_takes_two_thirds_while_it_lasts() {
        let mut v = Vitals {
            armor: 30.0,
            protection: 0.0,
            ..Vitals::spawned()
        };
        let d = v.damage(30.0);
        assert_eq!((d.armor, d.health), (20.0, 10.0));
        let d = v.damage(30.0);
        assert_eq!((d.armor, d.health), (10.0, 20.0), "only 10 armour left");
        assert_eq!((v.health, v.armor), (70.0, 0.0));
    }

    #[test]
    fn death_starts_the_respawn_timer_and_the_dead_take_no_more() {
        let mut v = Vitals {
            protection: 0.0,
            ..Vitals::spawned()
        };
        let d = v.damage(150.0);
        assert!(d.killed && !v.alive());
        assert_eq!(v.respawn_in, RESPAWN_DELAY);
        assert_eq!(v.damage(10.0), Damage::default());
    }

    #[test]
    fn power_ups_wear_off_regeneration_heals_and_death_ends_both() {
        let mut v = Vitals {
            health: 50.0,
            quad: 1.0,
            regen: 2.0,
            protection: 0.0,
            ..Vitals::spawned()
        };
        assert_eq!(v.damage_factor(), QUAD_FACTOR);
        for _ in 0..128 {
            v.tick(1.0 / 128.0);
        }
        assert!(v.quad == 0.0 && v.damage_factor() == 1.0);
        assert!(
            (v.health - (50.0 + REGEN_RATE)).abs() < 1e-3,
            "{}",
            v.health
        );
        v.health = REGEN_HEALTH - 1.0;
        for _ in 0..128 {
            v.tick(1.0 / 128.0);
        }
        assert_eq!(v.health, REGEN_HEALTH, "capped");
        assert_eq!(v.regen, 0.0);
        let mut dead = Vitals {
            health: 0.0,
            quad: 10.0,
            regen: 10.0,
            respawn_in: 1.0,
            ..Vitals::spawned()
        };
        dead.tick(0.5);
        assert_eq!((dead.quad, dead.regen, dead.health), (0.0, 0.0, 0.0));
        assert_eq!(dead.respawn_in, 0.5);
    }

    #[test]
    fn spawn_protection_blocks_damage() {
        let mut v = Vitals::spawned();
        assert_eq!(v.damage(50.0), Damage::default());
        assert_eq!(v.health, SPAWN_HEALTH);
    }

    #[test]
    fn splash_falls_off_linearly_and_pushes_away() {
        let (full, push) =
            splash(Vec3::ZERO, 4.0, 100.0, 10.0, Vec3::new(0.0, 0.0, 0.001)).unwrap();
        assert!(full > 99.9);
        assert!(push.z > 0.0 && push.y > 0.0);
        let (half, half_push) =
            splash(Vec3::ZERO, 4.0, 100.0, 10.0, Vec3::new(2.0, 0.0, 0.0)).unwrap();
        assert!((half - 50.0).abs() < 1e-4);
        assert!((half_push.length() - 5.0).abs() < 1e-4);
        assert!(half_push.x > 0.0);
        assert!(splash(Vec3::ZERO, 4.0, 100.0, 10.0, Vec3::new(4.0, 0.0, 0.0)).is_none());
    }
}
