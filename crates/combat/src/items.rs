//! Items on the map's item spots: health, armour, ammunition, weapons and power-ups,
//! each back some seconds after it is taken.

use crate::{Arsenal, MAX_ARMOR, POWER_UP_TIME, SPAWN_HEALTH, Vitals, WeaponKind};
use bevy::prelude::*;
use sightline_map::{CurrentMap, ItemKind};
use sightline_movement::PlayerState;
use sightline_sim::{PlayerId, TickConfig};

/// How close (horizontally, m) a player must come to take an item.
const REACH: f32 = 1.0;

/// Whether feet at `feet` are within `reach` (horizontally, and 1.5 m up or down) of
/// something lying at `at`: how an item, a dropped weapon or a flag is touched.
pub(crate) fn within_reach(feet: Vec3, at: Vec3, reach: f32) -> bool {
    let d = feet - at;
    Vec2::new(d.x, d.z).length() < reach && d.y.abs() < 1.5
}

/// An item spot and whether its item is there.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct ItemSpot {
    /// Index in the map's item list (the bit in snapshots).
    pub index: u8,
    /// What it holds.
    pub kind: ItemKind,
    /// Where.
    pub pos: Vec3,
    /// Seconds until it is back; 0 when it is there.
    pub respawn_in: f32,
}

/// Seconds an item takes to come back.
pub fn respawn_time(kind: ItemKind) -> f32 {
    match kind {
        ItemKind::Health => 20.0,
        ItemKind::Armor => 25.0,
        ItemKind::Ammo => 15.0,
        ItemKind::Railgun | ItemKind::Plasma => 10.0,
        ItemKind::Quad | ItemKind::Regeneration => 60.0,
    }
}

/// Gives a player what an item holds; returns false (and changes nothing) when the player
/// has no use for it, so the item stays for someone who does.
pub fn pick_up(kind: ItemKind, vitals: &mut Vitals, arsenal: &mut Arsenal) -> bool {
    match kind {
        ItemKind::Health if vitals.health < SPAWN_HEALTH => {
            vitals.health = (vitals.health + 25.0).min(SPAWN_HEALTH);
            true
        }
        ItemKind::Armor if vitals.armor < MAX_ARMOR => {
            vitals.armor = (vitals.armor + 50.0).min(MAX_ARMOR);
            true
        }
        ItemKind::Ammo => {
            let mut used = false;
            let owned = arsenal.owned;
            for w in WeaponKind::ALL.into_iter().filter(|w| owned & w.bit() != 0) {
                let ammo = &mut arsenal.ammo[w.index()];
                if ammo.reserve < w.def().reserve {
                    ammo.reserve = w.def().reserve;
                    used = true;
                }
            }
            used
        }
        ItemKind::Railgun => arsenal.give(WeaponKind::Railgun),
        ItemKind::Plasma => arsenal.give(WeaponKind::Plasma),
        // A power-up is always taken: it starts its time over.
        ItemKind::Quad => {
            vitals.quad = POWER_UP_TIME;
            true
        }
        ItemKind::Regeneration => {
            vitals.regen = POWER_UP_TIME;
            true
        }
        _ => false,
    }
}

/// Puts the map's items on their spots.
pub(crate) fn spawn_items(mut commands: Commands, map: Res<CurrentMap>) {
    spawn_items_for(&mut commands, &map);
}

/// Puts `map`'s items on their spots (after a map change, the old ones despawned first).
pub fn spawn_items_for(commands: &mut Commands, map: &CurrentMap) {
    for (i, item) in map.def.items.iter().enumerate().take(64) {
        commands.spawn(ItemSpot {
            index: i as u8,
            kind: item.kind,
            pos: item.pos,
            respawn_in: 0.0,
        });
    }
}

/// Counts down taken items and hands out the ones players walk into.
pub(crate) fn take_items(
    config: Res<TickConfig>,
    mut spots: Query<&mut ItemSpot>,
    mut players: Query<(&PlayerId, &PlayerState, &mut Vitals, &mut Arsenal)>,
) {
    let dt = config.dt();
    // Two players reaching an item in one tick: the lower id takes it, wherever each is
    // stored (a demo's replay stores them elsewhere).
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    for mut spot in &mut spots {
        if spot.respawn_in > 0.0 {
            spot.respawn_in = (spot.respawn_in - dt).max(0.0);
            continue;
        }
        for (_, state, vitals, arsenal) in &mut order {
            let near = within_reach(state.pos, spot.pos, REACH);
            if near && vitals.alive() && pick_up(spot.kind, vitals, arsenal) {
                spot.respawn_in = respawn_time(spot.kind);
                break;
            }
        }
    }
}

/// Which items are on their spots, as bits by index.
pub fn items_present(spots: impl IntoIterator<Item = ItemSpot>) -> u64 {
    spots
        .into_iter()
        .filter(|s| s.respawn_in <= 0.0)
        .fold(0, |bits, s| bits | (1u64 << s.index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_only_taken_by_those_who_need_them() {
        let mut v = Vitals::spawned();
        let mut a = Arsenal::default();
        assert!(!pick_up(ItemKind::Health, &mut v, &mut a), "full health");
        v.health = 90.0;
        assert!(pick_up(ItemKind::Health, &mut v, &mut a));
        assert_eq!(v.health, 100.0, "capped at spawn health");
        assert!(pick_up(ItemKind::Armor, &mut v, &mut a));
        assert_eq!(v.armor, 50.0);
        assert!(!pick_up(ItemKind::Ammo, &mut v, &mut a), "full ammunition");
        a.ammo[0].reserve = 3;
        assert!(pick_up(ItemKind::Ammo, &mut v, &mut a));
        assert_eq!(a.ammo[0].reserve, WeaponKind::Rifle.def().reserve);
    }

    #[test]
    fn weapons_are_picked_up_once_and_power_ups_always() {
        let mut v = Vitals::spawned();
        let mut a = Arsenal::default();
        assert!(!a.owns(WeaponKind::Railgun), "not a spawn weapon");
        assert!(pick_up(ItemKind::Railgun, &mut v, &mut a));
        assert!(a.owns(WeaponKind::Railgun));
        let rail = WeaponKind::Railgun.def();
        assert_eq!(a.ammo[WeaponKind::Railgun.index()].magazine, rail.magazine);
        assert!(
            !pick_up(ItemKind::Railgun, &mut v, &mut a),
            "nothing to add"
        );
        a.ammo[WeaponKind::Railgun.index()].reserve = 0;
        assert!(
            pick_up(ItemKind::Railgun, &mut v, &mut a),
            "tops the reserve up"
        );
        // Ammunition refills only weapons held.
        a.ammo[WeaponKind::Plasma.index()].reserve = 0;
        a.ammo[0].reserve = 0;
        assert!(pick_up(ItemKind::Ammo, &mut v, &mut a));
        assert_eq!(a.ammo[WeaponKind::Plasma.index()].reserve, 0);
        assert!(pick_up(ItemKind::Quad, &mut v, &mut a));
        assert!(
            pick_up(ItemKind::Quad, &mut v, &mut a),
            "again, for more time"
        );
        assert_eq!(v.quad, POWER_UP_TIME);
        assert!(pick_up(ItemKind::Regeneration, &mut v, &mut a));
        assert!(ItemKind::Quad.is_power_up() && !ItemKind::Plasma.is_power_up());
    }

    #[test]
    fn presence_bits_follow_the_index() {
        let spot = |index, respawn_in| ItemSpot {
            index,
            kind: ItemKind::Ammo,
            pos: Vec3::ZERO,
            respawn_in,
        };
        assert_eq!(
            items_present([spot(0, 0.0), spot(1, 3.0), spot(5, 0.0)]),
            0b100001
        );
    }
}
