//! Where a bot wants to go when nobody is in view: what it needs first (health when
//! hurt), then what makes it stronger (power-ups, weapons it lacks, armour), then a
//! round of the map's items. What a bot wants, and how far it goes for it, is part of its
//! skill.

use crate::BotSkill;
use bevy::math::Vec3;
use sightline_combat::WeaponKind;
use sightline_map::ItemKind;
use sightline_sim::hash::hash;

/// An item spot as a bot knows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItemSeen {
    /// What it holds.
    pub kind: ItemKind,
    /// Where.
    pub pos: Vec3,
    /// Whether the item is there now.
    pub present: bool,
}

/// What a bot knows of itself when choosing where to go.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Needs {
    /// Feet position.
    pub pos: Vec3,
    /// Health.
    pub health: f32,
    /// Armour.
    pub armor: f32,
    /// Weapons held ([`WeaponKind::bit`]s).
    pub owned: u8,
}

/// Health under which a bot goes for health first.
pub const HURT: f32 = 50.0;

/// Places worth going to, most wanted first (the caller takes the first it has a route
/// to). An easy bot only looks for health when hurt and otherwise wanders; a normal one
/// takes what is near and what it lacks; a hard one goes for power-ups and weapons first
/// wherever they are, and does rounds of the items.
pub fn goals(
    needs: &Needs,
    items: &[ItemSeen],
    skill: BotSkill,
    seed: u64,
    window: u64,
) -> Vec<Vec3> {
    let reach = match skill {
        BotSkill::Easy => 0.0,
        BotSkill::Normal => 25.0,
        BotSkill::Hard => f32::INFINITY,
    };
    let lacks = |w: WeaponKind| needs.owned & w.bit() == 0;
    let mut ranked: Vec<(u32, f32, Vec3)> = items
        .iter()
        .filter(|i| i.present)
        .filter_map(|i| {
            let distance = i.pos.distance(needs.pos);
            let rank = match i.kind {
                ItemKind::Health if needs.health < HURT => 0,
                ItemKind::Quad | ItemKind::Regeneration if distance < reach => 1,
                ItemKind::Railgun if lacks(WeaponKind::Railgun) && distance < reach => 2,
                ItemKind::Plasma if lacks(WeaponKind::Plasma) && distance < reach => 2,
                ItemKind::Armor if needs.armor < 50.0 && distance < reach => 3,
                _ => return None,
            };
            Some((rank, distance, i.pos))
        })
        .collect();
    ranked.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut wanted: Vec<Vec3> = ranked.into_iter().map(|(_, _, pos)| pos).collect();
    // Otherwise a round of the items: one chosen afresh every few windows.
    if skill != BotSkill::Easy && !items.is_empty() {
        let pick = hash(seed, window / 4, 9) as usize % items.len();
        wanted.push(items[pick].pos);
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_combat::Arsenal;

    fn spawn_weapons() -> u8 {
        Arsenal::spawned().owned
    }

    fn item(kind: ItemKind, x: f32) -> ItemSeen {
        ItemSeen {
            kind,
            pos: Vec3::new(x, 0.0, 0.0),
            present: true,
        }
    }

    #[test]
    fn the_hurt_go_for_health_and_the_skilled_for_power() {
        let items = [
            item(ItemKind::Quad, 40.0),
            item(ItemKind::Health, 30.0),
            item(ItemKind::Railgun, 10.0),
            item(ItemKind::Ammo, 5.0),
        ];
        let fit = Needs {
            pos: Vec3::ZERO,
            health: 100.0,
            armor: 0.0,
            owned: spawn_weapons(),
        };
        let hurt = Needs {
            health: 30.0,
            ..fit
        };
        let first = |n: &Needs, skill| goals(n, &items, skill, 1, 0).first().copied();
        assert_eq!(first(&hurt, BotSkill::Easy), Some(items[1].pos));
        assert_eq!(first(&hurt, BotSkill::Hard), Some(items[1].pos));
        // Fit: a hard bot goes for the quad across the map; a normal one takes the
        // railgun near it; an easy one wanders.
        assert_eq!(first(&fit, BotSkill::Hard), Some(items[0].pos));
        assert_eq!(first(&fit, BotSkill::Normal), Some(items[2].pos));
        assert_eq!(first(&fit, BotSkill::Easy), None);
        // With the railgun held, it is no longer wanted.
        let armed = Needs {
            owned: fit.owned | WeaponKind::Railgun.bit(),
            ..fit
        };
        assert_ne!(first(&armed, BotSkill::Normal), Some(items[2].pos));
        // Items taken are not goals.
        let gone = [ItemSeen {
            present: false,
            ..items[0]
        }];
        assert_eq!(goals(&fit, &gone, BotSkill::Hard, 1, 0), vec![gone[0].pos]);
    }
}
