//! Weapons dropped by the dead: a player killed holding a weapon picked up on the map
//! (one not every player spawns with) leaves it where they fell, for anyone to take
//! until its time runs out.

use crate::items::within_reach;
use crate::{Arsenal, CombatEvent, Vitals, WeaponKind};
use bevy::prelude::*;
use sightline_map::{CollisionWorld, CurrentMap};
use sightline_movement::PlayerState;
use sightline_sim::{PlayerId, TickConfig};

/// Seconds a dropped weapon lies before it is gone.
pub const DROP_TIME: f32 = 30.0;
/// Most dropped weapons lying at once; a new one past it replaces the oldest (the
/// snapshot carries no more, see `sightline_protocol::MAX_SNAPSHOT_DROPS`).
pub const MAX_DROPS: usize = 16;
/// How close (horizontally, m) a player must come to take a dropped weapon.
const REACH: f32 = 1.0;
/// How far below a player killed in the air its weapon (or flag) is looked for ground, m.
const FALL_REACH: f32 = 64.0;

/// A weapon lying where its holder died.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct DroppedWeapon {
    /// Drop number, for snapshots.
    pub id: u16,
    /// Which weapon.
    pub weapon: WeaponKind,
    /// Where it lies.
    pub pos: Vec3,
    /// Seconds until it is gone.
    pub left: f32,
}

/// The number the next dropped weapon takes (a demo's keyframe keeps it).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NextDropId(pub u16);

/// Where something let fall at `at` comes to rest: the ground below it (within
/// [`FALL_REACH`]), or `at` itself over nothing. A dropped weapon's place, and a flag's.
pub(crate) fn ground_below(world: &CollisionWorld, at: Vec3) -> Vec3 {
    world
        .cast_ray(at + Vec3::Y * 0.1, Vec3::NEG_Y, FALL_REACH)
        .map_or(at, |(t, _)| at + Vec3::Y * (0.1 - t))
}

/// The weapon a player holding `arsenal` leaves at death: the one in hand, if it is not
/// one every player spawns with.
pub fn dropped_weapon(arsenal: &Arsenal) -> Option<WeaponKind> {
    (!WeaponKind::SPAWNED_WITH.contains(&arsenal.current)).then_some(arsenal.current)
}

/// Drops the weapon of everyone killed this tick where they fell (on the ground below,
/// if they died in the air).
pub(crate) fn drop_weapons_of_the_dead(
    mut commands: Commands,
    map: Res<CurrentMap>,
    mut next: ResMut<NextDropId>,
    mut events: MessageReader<CombatEvent>,
    players: Query<(&PlayerId, &PlayerState, &Arsenal)>,
    lying: Query<(Entity, &DroppedWeapon)>,
) {
    let mut count = lying.iter().count();
    for event in events.read() {
        let CombatEvent::Killed { victim, .. } = event else {
            continue;
        };
        let Some((_, state, arsenal)) = players.iter().find(|(id, ..)| *id == victim) else {
            continue;
        };
        let Some(weapon) = dropped_weapon(arsenal) else {
            continue;
        };
        // The oldest goes; of two as old, the lower number (not where each is stored).
        let oldest = lying
            .iter()
            .min_by(|a, b| (a.1.left.total_cmp(&b.1.left)).then(a.1.id.cmp(&b.1.id)));
        if count >= MAX_DROPS
            && let Some((oldest, _)) = oldest
        {
            commands.entity(oldest).despawn();
            count -= 1;
        }
        let pos = ground_below(&map.world, state.pos);
        next.0 = next.0.wrapping_add(1);
        commands.spawn(DroppedWeapon {
            id: next.0,
            weapon,
            pos,
            left: DROP_TIME,
        });
        count += 1;
    }
}

/// Ages dropped weapons and hands them to the living who walk over them and have a use
/// for them.
pub(crate) fn take_dropped_weapons(
    mut commands: Commands,
    config: Res<TickConfig>,
    mut drops: Query<(Entity, &mut DroppedWeapon)>,
    mut players: Query<(&PlayerId, &PlayerState, &Vitals, &mut Arsenal)>,
) {
    let dt = config.dt();
    // Two players over one weapon in a tick: the lower id takes it; two weapons under
    // one player: the lower number first; wherever each is stored (a demo's replay
    // stores them elsewhere).
    let mut order: Vec<_> = players.iter_mut().collect();
    order.sort_by_key(|(id, ..)| **id);
    let mut lying: Vec<_> = drops.iter_mut().collect();
    lying.sort_by_key(|(_, drop)| drop.id);
    for (entity, mut drop) in lying {
        drop.left -= dt;
        if drop.left <= 0.0 {
            commands.entity(entity).despawn();
            continue;
        }
        for (_, state, vitals, arsenal) in &mut order {
            let near = within_reach(state.pos, drop.pos, REACH);
            if near && vitals.alive() && arsenal.give(drop.weapon) {
                commands.entity(entity).despawn();
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_weapons_found_on_the_map_are_dropped() {
        let mut a = Arsenal::default();
        assert_eq!(dropped_weapon(&a), None, "the rifle stays with the dead");
        a.give(WeaponKind::Railgun);
        a.current = WeaponKind::Railgun;
        assert_eq!(dropped_weapon(&a), Some(WeaponKind::Railgun));
        a.current = WeaponKind::Rockets;
        assert_eq!(dropped_weapon(&a), None);
    }
}
