//! Choosing where a player appears.

use bevy::math::Vec3;
use sightline_combat::{Flags, Team};
use sightline_map::SpawnPoint;

/// The spawn points a player of `team` may use: in capture the flag, those at least as
/// near its own base as the enemy's (so a side starts by its flag); all of them
/// otherwise.
pub fn spawns_of(spawns: &[SpawnPoint], flags: &Flags, team: Option<Team>) -> Vec<SpawnPoint> {
    let (Some(own), Some(theirs)) = (
        team.and_then(|t| flags.base(t)),
        team.and_then(|t| flags.base(t.other())),
    ) else {
        return spawns.to_vec();
    };
    let near: Vec<SpawnPoint> = spawns
        .iter()
        .filter(|s| s.pos.distance(own) <= s.pos.distance(theirs) + 0.5)
        .copied()
        .collect();
    if near.is_empty() {
        spawns.to_vec()
    } else {
        near
    }
}

/// The spawn point farthest from every other player (ties go to the earliest listed),
/// so nobody appears on top of someone else. Deterministic for the same inputs.
pub fn choose_spawn(spawns: &[SpawnPoint], others: &[Vec3]) -> SpawnPoint {
    let clearance = |s: &SpawnPoint| {
        others
            .iter()
            .map(|o| o.distance_squared(s.pos))
            .fold(f32::INFINITY, f32::min)
    };
    let mut best = spawns[0];
    let mut best_clearance = clearance(&best);
    for s in &spawns[1..] {
        let c = clearance(s);
        if c > best_clearance {
            best = *s;
            best_clearance = c;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f32) -> SpawnPoint {
        SpawnPoint {
            pos: Vec3::new(x, 0.0, 0.0),
            yaw: 0.0,
        }
    }

    #[test]
    fn in_capture_the_flag_a_side_spawns_by_its_base() {
        let spawns = [at(-20.0), at(-5.0), at(0.0), at(5.0), at(20.0)];
        let flags = Flags::on(Some(sightline_map::FlagBases {
            red: Vec3::new(-25.0, 0.0, 0.0),
            blue: Vec3::new(25.0, 0.0, 0.0),
        }));
        let xs = |team| -> Vec<f32> {
            spawns_of(&spawns, &flags, team)
                .iter()
                .map(|s| s.pos.x)
                .collect()
        };
        assert_eq!(xs(Some(Team::Red)), [-20.0, -5.0, 0.0]);
        assert_eq!(xs(Some(Team::Blue)), [0.0, 5.0, 20.0]);
        assert_eq!(xs(None).len(), 5, "no side: anywhere");
        assert_eq!(
            spawns_of(&spawns, &Flags::default(), Some(Team::Red)).len(),
            5
        );
    }

    #[test]
    fn picks_the_spawn_farthest_from_everyone() {
        let spawns = [at(0.0), at(10.0), at(20.0)];
        assert_eq!(choose_spawn(&spawns, &[]).pos.x, 0.0);
        assert_eq!(choose_spawn(&spawns, &[Vec3::ZERO]).pos.x, 20.0);
        assert_eq!(
            choose_spawn(&spawns, &[Vec3::ZERO, Vec3::new(19.0, 0.0, 0.0)])
                .pos
                .x,
            10.0
        );
    }
}
