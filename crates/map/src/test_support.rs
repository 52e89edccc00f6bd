//! Map fixtures for tests, built once here so every crate's tests use the same ones.
//! Behind the `test-support` feature: no game code uses it.

use crate::CollisionWorld;
use bevy::math::{Quat, Vec3};

/// Map names a hostile server (or client) might send to make the other side open
/// something other than a map in the maps folder: paths out of it, a device, a drive,
/// nothing, a file name.
pub const HOSTILE_MAP_NAMES: [&str; 6] = [
    "../../etc/passwd",
    "/dev/zero",
    "duel/../duel",
    "C:\\x",
    "",
    "duel.ron",
];

/// A floor's box for [`CollisionWorld::from_boxes`]: 1 m thick, its top at y = 0,
/// reaching `half` metres from the origin along x and z.
pub fn floor_box(half: f32) -> (Vec3, Vec3, Quat) {
    (
        Vec3::new(0.0, -0.5, 0.0),
        Vec3::new(half, 0.5, half),
        Quat::IDENTITY,
    )
}

/// An open floor and nothing else: 100 m square, its top at y = 0.
pub fn open_floor() -> CollisionWorld {
    CollisionWorld::from_boxes([floor_box(50.0)])
}
