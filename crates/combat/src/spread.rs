//! Deterministic spread: each pellet's direction is a hash of (tick, shooter, pellet), so
//! the client draws its tracers where the server's pellets go.

use bevy::math::Vec3;
use sightline_sim::hash::{hash, unit};

/// Direction of pellet `pellet` of a shot fired at `tick` by `shooter` along `forward`
/// (unit), within a cone of half-angle `spread` radians. Uniform over the cone's disk.
pub fn pellet_direction(forward: Vec3, spread: f32, tick: u32, shooter: u8, pellet: u8) -> Vec3 {
    if spread <= 0.0 {
        return forward;
    }
    let h = hash(
        0x5350_5245_4144,
        tick as u64,
        ((shooter as u64) << 8) | pellet as u64,
    );
    let radius = spread * libm::sqrtf(unit(h));
    let around = std::f32::consts::TAU * unit(h.rotate_left(29));
    // An orthonormal basis around `forward`, built without trigonometry.
    let helper = if forward.y.abs() < 0.9 {
        Vec3::Y
    } else {
        Vec3::X
    };
    let side = forward.cross(helper).normalize();
    let up = side.cross(forward);
    let offset = side * libm::cosf(around) + up * libm::sinf(around);
    (forward * libm::cosf(radius) + offset * libm::sinf(radius)).normalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_deterministic_and_inside_the_cone() {
        let f = Vec3::new(0.3, 0.1, -1.0).normalize();
        let spread = 5f32.to_radians();
        for pellet in 0..50 {
            let d = pellet_direction(f, spread, 1234, 7, pellet);
            assert_eq!(d, pellet_direction(f, spread, 1234, 7, pellet));
            assert!((d.length() - 1.0).abs() < 1e-5);
            assert!(d.angle_between(f) <= spread + 1e-4);
        }
        assert_ne!(
            pellet_direction(f, spread, 1234, 7, 0),
            pellet_direction(f, spread, 1235, 7, 0)
        );
        assert_eq!(pellet_direction(f, 0.0, 1, 1, 1), f);
    }

    #[test]
    fn pellets_fill_the_cone_rather_than_bunching() {
        let spread = 5f32.to_radians();
        let angles: Vec<f32> = (0..500)
            .map(|i| pellet_direction(Vec3::NEG_Z, spread, i, 1, 0).angle_between(Vec3::NEG_Z))
            .collect();
        let outer = angles.iter().filter(|&&a| a > spread * 0.7).count();
        // Uniform over the disk: half the area lies beyond 0.707 of the radius.
        assert!((200..300).contains(&outer), "{outer}");
    }
}
