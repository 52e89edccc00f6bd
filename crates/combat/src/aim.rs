//! Where a player aims: its view angles as a direction.

use bevy::prelude::*;
use sightline_movement::view_vectors;

/// The way a player looks: yaw and pitch to a unit vector.
pub fn aim_direction(yaw: f32, pitch: f32) -> Vec3 {
    let (forward, _) = view_vectors(yaw);
    let (s, c) = (libm::sinf(pitch), libm::cosf(pitch));
    (forward * c + Vec3::Y * s).normalize()
}
