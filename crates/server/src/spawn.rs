//! Choosing where a player appears.

use bevy::math::Vec3;
use sightline_map::SpawnPoint;

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
