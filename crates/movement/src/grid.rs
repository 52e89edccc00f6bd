//! The grid player states lie on between ticks, and their integer form on the wire.
//!
//! At the end of every tick the server puts each player's state on a grid: positions in
//! 1/1024 m, velocities in 1/256 m/s (within about 128 m/s either way), view angles in
//! 1/65536 of a turn. The client's prediction puts each tick it predicts on the same grid
//! ([`on_grid`]), so the two still agree bit for bit, and a snapshot carries the state as
//! small integers ([`GridState`]) that decode to the very floats the server holds (to the
//! player's own client; everyone else is shown its view angles and velocity on a coarser
//! step, which they only draw and extrapolate from).
//!
//! Why nobody sees it: a position moves at most half a millimetre, a tenth of the 5 mm
//! skin that keeps players off walls (so snapping never pushes one into a wall) and far
//! below a pixel at any distance a player is drawn; a velocity changes by at most 1/512
//! m/s, 0.015 mm over a 128 Hz tick; an angle by 1/131072 of a turn, 0.003 degrees, a
//! twentieth of a pixel at a 90 degree field of view on a 1920-pixel-wide screen. The
//! movement step itself ([`crate::step`]) works in full floats within a tick; only what
//! a tick leaves behind is snapped, as Quake 3 snaps origins.

use crate::{MoveFlags, PlayerState};
use bevy::prelude::*;
use sightline_sim::{MAX_PITCH_STEPS, angle_of_steps, angle_steps};

/// Grid steps per metre of position.
pub const POS_STEPS: f32 = 1024.0;
/// Grid steps per m/s of velocity.
pub const VEL_STEPS: f32 = 256.0;
pub use sightline_sim::ANGLE_STEPS;
/// Farthest a position reaches from the origin on any axis, metres: an `f32` holds every
/// step up to there exactly.
pub const MAX_COORD: f32 = (1u32 << 23) as f32 / POS_STEPS;
/// Fastest a velocity component may be, m/s: what an `i16` of steps holds.
pub const MAX_SPEED: f32 = i16::MAX as f32 / VEL_STEPS;

/// A player's state on the grid, as integers: what a snapshot carries.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GridState {
    /// Position, in 1/[`POS_STEPS`] m (within +-2^23).
    pub pos: [i32; 3],
    /// Velocity, in 1/[`VEL_STEPS`] m/s.
    pub vel: [i16; 3],
    /// Yaw, in 1/[`ANGLE_STEPS`] turns (a half turn either way).
    pub yaw: i16,
    /// Pitch, in 1/[`ANGLE_STEPS`] turns.
    pub pitch: i16,
}

impl GridState {
    /// The nearest grid state: positions clamped to [`MAX_COORD`], velocities to
    /// [`MAX_SPEED`], yaw wrapped into a half turn either way, pitch within the last step
    /// short of the tilt limit.
    pub fn of(s: &PlayerState) -> Self {
        // `as` saturates, and turns NaN into 0: nothing here can overflow.
        let pos = |v: f32| (v.clamp(-MAX_COORD, MAX_COORD) * POS_STEPS).round() as i32;
        let vel = |v: f32| (v * VEL_STEPS).round() as i16;
        Self {
            pos: s.pos.to_array().map(pos),
            vel: s.vel.to_array().map(vel),
            yaw: angle_steps(s.yaw),
            // Never past the view's tilt limit, which is not itself a step.
            pitch: angle_steps(s.pitch).clamp(-MAX_PITCH_STEPS, MAX_PITCH_STEPS),
        }
    }

    /// The state it stands for, with movement bits `flags`.
    pub fn state(&self, flags: MoveFlags) -> PlayerState {
        PlayerState {
            pos: Vec3::from_array(self.pos.map(|k| k as f32 / POS_STEPS)),
            vel: Vec3::from_array(self.vel.map(|k| k as f32 / VEL_STEPS)),
            yaw: angle_of_steps(self.yaw),
            pitch: angle_of_steps(self.pitch),
            flags,
        }
    }

    /// Whether every position step is within +-2^23, where `f32` holds them exactly.
    pub fn in_range(&self) -> bool {
        self.pos.iter().all(|k| k.unsigned_abs() <= 1 << 23)
    }
}

/// `s` on the grid: what every tick leaves a player in.
pub fn on_grid(s: &PlayerState) -> PlayerState {
    GridState::of(s).state(s.flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_round_trips_exactly_and_snapping_is_idempotent() {
        let s = PlayerState {
            pos: Vec3::new(12.345_678, -0.004_9, 8191.9),
            vel: Vec3::new(7.777, -300.0, 0.001),
            yaw: std::f32::consts::PI,
            pitch: -1.2,
            flags: MoveFlags(MoveFlags::ON_GROUND),
        };
        let g = on_grid(&s);
        assert_eq!(on_grid(&g), g, "already on the grid");
        assert_eq!(GridState::of(&g), GridState::of(&s));
        assert_eq!(
            GridState::of(&g).state(g.flags),
            g,
            "the wire form decodes exactly"
        );
        assert!((g.pos - s.pos).abs().max_element() <= 0.5 / POS_STEPS);
        assert_eq!(
            g.vel.y,
            -MAX_SPEED - 1.0 / VEL_STEPS,
            "clamped to an i16 of steps"
        );
        assert_eq!(g.yaw, -std::f32::consts::PI, "+pi and -pi are one step");
        assert_eq!(g.flags, s.flags);
        // Every angle step comes back as itself; a pitch past the tilt limit comes back
        // at the limit.
        for k in i16::MIN..=i16::MAX {
            let g = GridState {
                yaw: k,
                pitch: k,
                ..Default::default()
            };
            let back = GridState::of(&g.state(MoveFlags::default()));
            assert_eq!(back.yaw, k);
            assert_eq!(back.pitch, k.clamp(-MAX_PITCH_STEPS, MAX_PITCH_STEPS));
        }
        let nan = PlayerState {
            pos: Vec3::NAN,
            ..s
        };
        assert_eq!(GridState::of(&nan).pos, [0; 3], "NaN cannot overflow");
    }
}
