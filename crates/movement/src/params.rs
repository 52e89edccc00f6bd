//! Movement tuning, in SI units.

use crate::PlayerState;
use bevy::prelude::*;

/// Tunable movement constants: metres, seconds and radians throughout.
///
/// The defaults follow Quake 3's feel scaled to metres (one Quake unit is about 2.5 cm),
/// slightly slower and with a little more air control.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct MoveParams {
    /// Top running speed on the ground, m/s.
    pub run_speed: f32,
    /// Speed multiplier while crouched.
    pub crouch_speed_scale: f32,
    /// Ground acceleration, in multiples of the wish speed per second.
    pub ground_accel: f32,
    /// Air acceleration, in multiples of the wish speed per second.
    pub air_accel: f32,
    /// Ground friction, per second.
    pub friction: f32,
    /// Below this speed friction acts as if the player moved this fast, so it stops
    /// rather than creeping, m/s.
    pub stop_speed: f32,
    /// Downward acceleration, m/s^2.
    pub gravity: f32,
    /// Upward speed given by a jump, m/s.
    pub jump_speed: f32,
    /// Highest ledge walked onto without jumping, m.
    pub step_height: f32,
    /// Lowest normal Y of a surface that counts as ground (cos 45.5 degrees).
    pub min_ground_normal_y: f32,
    /// Capsule radius, m.
    pub radius: f32,
    /// Standing capsule height, m.
    pub stand_height: f32,
    /// Crouched capsule height, m.
    pub crouch_height: f32,
    /// Eye height standing, m above the feet.
    pub stand_eye: f32,
    /// Eye height crouched, m above the feet.
    pub crouch_eye: f32,
    /// Terminal falling speed, m/s.
    pub max_fall_speed: f32,
}

impl Default for MoveParams {
    fn default() -> Self {
        Self {
            run_speed: 7.0,
            crouch_speed_scale: 0.45,
            ground_accel: 10.0,
            air_accel: 1.5,
            friction: 6.0,
            stop_speed: 2.5,
            gravity: 20.0,
            jump_speed: 6.5,
            step_height: 0.45,
            min_ground_normal_y: 0.7,
            radius: 0.4,
            stand_height: 1.8,
            crouch_height: 1.2,
            stand_eye: 1.6,
            crouch_eye: 1.0,
            max_fall_speed: 40.0,
        }
    }
}

impl MoveParams {
    /// Capsule height for the given crouch state.
    pub fn height(&self, crouched: bool) -> f32 {
        if crouched {
            self.crouch_height
        } else {
            self.stand_height
        }
    }

    /// Eye height for the given crouch state.
    pub fn eye(&self, crouched: bool) -> f32 {
        if crouched {
            self.crouch_eye
        } else {
            self.stand_eye
        }
    }

    /// Where a player in state `s` sees from: its feet raised to its eye height.
    pub fn eye_position(&self, s: &PlayerState) -> Vec3 {
        s.pos + Vec3::Y * self.eye(s.crouched())
    }
}
