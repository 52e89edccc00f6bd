//! Past the newest snapshot, a remote player is carried on by the movement step itself,
//! steering as its latest command did (snapshots carry that command's movement part), so
//! it runs along walls, down stairs and off ledges as the server will move it, instead of
//! sliding along its velocity through whatever is in the way.

use bevy::prelude::*;
use sightline_map::CollisionWorld;
use sightline_movement::{MoveParams, PlayerState, step};
use sightline_sim::InputCmd;

/// A remote player's path past its newest snapshot, one state per tick, worked out as far
/// as it has been needed and kept until a newer snapshot arrives.
#[derive(Component, Debug, Default, Clone)]
pub struct Coast {
    /// Server time of the state the path starts from.
    from: Option<f64>,
    /// The path: the newest state, then the state after each further tick.
    ticks: Vec<PlayerState>,
}

impl Coast {
    /// Where the player is `ahead` seconds (at most `limit`) after `start`, the newest
    /// state (server time `from`), steering by `intent`: the movement step run tick by
    /// tick of `dt` against the map, the last partial tick blended.
    #[allow(clippy::too_many_arguments)]
    pub fn at(
        &mut self,
        from: f64,
        start: &PlayerState,
        intent: &InputCmd,
        ahead: f64,
        limit: f64,
        world: &CollisionWorld,
        params: &MoveParams,
        dt: f32,
    ) -> Vec3 {
        if self.from != Some(from) {
            self.from = Some(from);
            self.ticks.clear();
            self.ticks.push(*start);
        }
        let ahead = ahead.clamp(0.0, limit.max(0.0));
        let ticks = ahead / dt as f64;
        let whole = ticks.floor() as usize;
        // Bounded by the limit: at most limit / dt steps, ever, per snapshot.
        while self.ticks.len() < whole + 2 {
            let last = self.ticks[self.ticks.len() - 1];
            self.ticks.push(step(&last, intent, world, params, dt));
        }
        let f = (ticks - whole as f64) as f32;
        self.ticks[whole].pos.lerp(self.ticks[whole + 1].pos, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_movement::MoveFlags;

    fn floor_and_wall() -> CollisionWorld {
        CollisionWorld::from_boxes([
            (
                Vec3::new(0.0, -0.5, 0.0),
                Vec3::new(50.0, 0.5, 50.0),
                Quat::IDENTITY,
            ),
            (
                Vec3::new(3.0, 2.0, 0.0),
                Vec3::new(0.5, 2.0, 50.0),
                Quat::IDENTITY,
            ),
        ])
    }

    #[test]
    fn a_player_running_at_a_wall_stops_at_it_rather_than_passing_through() {
        let world = floor_and_wall();
        let params = MoveParams::default();
        let dt = 1.0 / 128.0;
        // Running at 8 m/s towards the wall 2.5 m away, steering straight at it.
        let start = PlayerState {
            pos: Vec3::new(0.0, 0.0, 0.0),
            vel: Vec3::new(8.0, 0.0, 0.0),
            // Yaw turning left from -Z: -pi/2 looks down +X.
            yaw: -std::f32::consts::FRAC_PI_2,
            flags: MoveFlags(MoveFlags::ON_GROUND),
            ..Default::default()
        };
        let intent = InputCmd {
            forward: 1.0,
            yaw: start.yaw,
            ..Default::default()
        };
        let mut coast = Coast::default();
        let at = coast.at(1.0, &start, &intent, 0.5, 0.5, &world, &params, dt);
        let along_velocity = start.pos.x + start.vel.x * 0.5;
        assert!(along_velocity > 3.0, "velocity alone goes into the wall");
        assert!(at.x < 2.5 && at.x > 1.5, "stopped by the wall: {at}");
        // The path is kept: asking again, or for less, costs no steps and agrees.
        let steps = coast.ticks.len();
        assert_eq!(
            coast.at(1.0, &start, &intent, 0.5, 0.5, &world, &params, dt),
            at
        );
        coast.at(1.0, &start, &intent, 0.1, 0.5, &world, &params, dt);
        assert_eq!(coast.ticks.len(), steps);
        // A newer snapshot starts a new path; the limit bounds it.
        coast.at(2.0, &start, &intent, 99.0, 0.1, &world, &params, dt);
        assert!(coast.ticks.len() <= (0.1 / dt as f64) as usize + 2);
    }
}
