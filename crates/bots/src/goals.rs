//! Where a bot wants to go when nobody is in view: in capture the flag, where its part
//! in the game takes it ([`flag_goal`]); else what it needs first (health when
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

/// Where a flag is, as a bot sees it (capture the flag).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlagWhere {
    /// On its base.
    Home,
    /// Carried by someone standing here.
    Carried(Vec3),
    /// Lying here.
    Lying(Vec3),
}

/// What a bot knows of the flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlagsSeen {
    /// Its own team's base.
    pub own_base: Vec3,
    /// The enemy's base.
    pub enemy_base: Vec3,
    /// Its own team's flag.
    pub own_flag: FlagWhere,
    /// The enemy's flag.
    pub enemy_flag: FlagWhere,
    /// Whether it carries the enemy's flag itself.
    pub carrying: bool,
}

/// A bot's part in capture the flag, for the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagRole {
    /// Fetches the enemy's flag, or escorts the team mate who has it.
    Attack,
    /// Stays by its own flag, and goes after whoever takes it.
    Defend,
}

/// A bot's part by its place among its team's bots (0 for the first): the first
/// attacks, the second defends, and so on, a third of them defending; so every team
/// with a bot attacks.
pub fn flag_role(rank: usize) -> FlagRole {
    if rank % 3 == 1 {
        FlagRole::Defend
    } else {
        FlagRole::Attack
    }
}

/// Where a bot in capture the flag goes, before anything else: a carrier home; anyone
/// to its own flag lying loose, to send it home; a defender to its base, or after the
/// thief; an attacker to the enemy's flag, or beside the team mate who carries it.
pub fn flag_goal(role: FlagRole, seen: &FlagsSeen) -> Vec3 {
    if seen.carrying {
        return seen.own_base;
    }
    match (seen.own_flag, role) {
        (FlagWhere::Lying(at), _) => return at,
        (FlagWhere::Carried(thief), FlagRole::Defend) => return thief,
        (_, FlagRole::Defend) => return seen.own_base,
        _ => {}
    }
    match seen.enemy_flag {
        FlagWhere::Home => seen.enemy_base,
        FlagWhere::Lying(at) | FlagWhere::Carried(at) => at,
    }
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

    #[test]
    fn bots_fetch_carry_home_return_defend_and_escort() {
        let (own, enemy) = (Vec3::new(-20.0, 0.0, 0.0), Vec3::new(20.0, 0.0, 0.0));
        let seen = FlagsSeen {
            own_base: own,
            enemy_base: enemy,
            own_flag: FlagWhere::Home,
            enemy_flag: FlagWhere::Home,
            carrying: false,
        };
        let spot = Vec3::new(3.0, 0.0, 4.0);
        assert_eq!(flag_goal(FlagRole::Attack, &seen), enemy, "fetch");
        assert_eq!(flag_goal(FlagRole::Defend, &seen), own, "defend");
        let carrying = FlagsSeen {
            carrying: true,
            enemy_flag: FlagWhere::Carried(spot),
            ..seen
        };
        assert_eq!(flag_goal(FlagRole::Attack, &carrying), own, "home with it");
        let escort = FlagsSeen {
            enemy_flag: FlagWhere::Carried(spot),
            ..seen
        };
        assert_eq!(
            flag_goal(FlagRole::Attack, &escort),
            spot,
            "beside the carrier"
        );
        let stolen = FlagsSeen {
            own_flag: FlagWhere::Carried(spot),
            ..seen
        };
        assert_eq!(
            flag_goal(FlagRole::Defend, &stolen),
            spot,
            "after the thief"
        );
        assert_eq!(flag_goal(FlagRole::Attack, &stolen), enemy);
        let loose = FlagsSeen {
            own_flag: FlagWhere::Lying(spot),
            ..seen
        };
        assert_eq!(flag_goal(FlagRole::Attack, &loose), spot, "send it home");
        // A team's first bot attacks, its second defends, a third of them in all.
        let roles: Vec<FlagRole> = (0..6).map(flag_role).collect();
        use FlagRole::*;
        assert_eq!(roles, [Attack, Defend, Attack, Attack, Defend, Attack]);
    }

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
