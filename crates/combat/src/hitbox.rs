//! Hitboxes: a body capsule and a head sphere per player, and exact ray tests against them.

use bevy::math::Vec3;
use sightline_movement::{MoveParams, PlayerState};

/// Radius of the head sphere, m.
const HEAD_RADIUS: f32 = 0.2;
/// Radius of the body capsule, m (a little inside the movement hull).
const BODY_RADIUS: f32 = 0.36;

/// Where a shot struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HitZone {
    /// The head sphere.
    Head,
    /// The body capsule.
    Body,
}

/// A player's hitbox at one moment: where the feet are and whether it crouches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hitbox {
    /// Feet position.
    pub feet: Vec3,
    /// Crouched (lower head, shorter body).
    pub crouched: bool,
}

impl Hitbox {
    /// The hitbox of a player state.
    pub fn of(state: &PlayerState) -> Self {
        Self {
            feet: state.pos,
            crouched: state.crouched(),
        }
    }

    /// Centre of the head sphere.
    pub fn head(&self, p: &MoveParams) -> Vec3 {
        self.feet + Vec3::Y * p.eye(self.crouched)
    }

    /// The body capsule's segment ends.
    pub fn body(&self, p: &MoveParams) -> (Vec3, Vec3) {
        let top = p.eye(self.crouched) - HEAD_RADIUS - BODY_RADIUS * 0.5;
        (
            self.feet + Vec3::Y * BODY_RADIUS,
            self.feet + Vec3::Y * top.max(BODY_RADIUS),
        )
    }

    /// The middle of the body, where splash is measured to.
    pub fn center(&self, p: &MoveParams) -> Vec3 {
        let (a, b) = self.body(p);
        (a + b) * 0.5
    }

    /// Linear blend toward `other` (crouch snaps at the halfway point).
    pub fn lerp(&self, other: &Hitbox, t: f32) -> Hitbox {
        Hitbox {
            feet: self.feet.lerp(other.feet, t),
            crouched: if t < 0.5 {
                self.crouched
            } else {
                other.crouched
            },
        }
    }
}

/// Distance along a unit ray to a sphere, if it hits within `max`.
pub fn ray_sphere(origin: Vec3, dir: Vec3, center: Vec3, radius: f32, max: f32) -> Option<f32> {
    let oc = origin - center;
    let b = oc.dot(dir);
    let c = oc.length_squared() - radius * radius;
    if c > 0.0 && b > 0.0 {
        return None;
    }
    let disc = b * b - c;
    if disc < 0.0 {
        return None;
    }
    let t = (-b - disc.sqrt()).max(0.0);
    (t <= max).then_some(t)
}

/// Distance along a unit ray to a capsule (segment `a`-`b`, `radius`), if within `max`.
pub fn ray_capsule(
    origin: Vec3,
    dir: Vec3,
    a: Vec3,
    b: Vec3,
    radius: f32,
    max: f32,
) -> Option<f32> {
    let axis = b - a;
    let len_sq = axis.length_squared();
    if len_sq < 1e-12 {
        return ray_sphere(origin, dir, a, radius, max);
    }
    // The infinite cylinder first, then the end caps.
    let ao = origin - a;
    let axis_dir = axis / len_sq.sqrt();
    let d_perp = dir - axis_dir * dir.dot(axis_dir);
    let o_perp = ao - axis_dir * ao.dot(axis_dir);
    let qa = d_perp.length_squared();
    let qb = 2.0 * d_perp.dot(o_perp);
    let qc = o_perp.length_squared() - radius * radius;
    let mut best: Option<f32> = None;
    if qa > 1e-12 {
        let disc = qb * qb - 4.0 * qa * qc;
        if disc >= 0.0 {
            let t = ((-qb - disc.sqrt()) / (2.0 * qa)).max(0.0);
            let along = (ao + dir * t).dot(axis_dir);
            if t <= max && (0.0..=len_sq.sqrt()).contains(&along) && (qc > 0.0 || t == 0.0) {
                best = Some(t);
            }
        }
    }
    for cap in [a, b] {
        if let Some(t) = ray_sphere(origin, dir, cap, radius, max) {
            best = Some(best.map_or(t, |b: f32| b.min(t)));
        }
    }
    best
}

/// The nearest part of `hitbox` a unit ray strikes within `max`: (distance, zone).
pub fn ray_hit(
    origin: Vec3,
    dir: Vec3,
    max: f32,
    hitbox: &Hitbox,
    p: &MoveParams,
) -> Option<(f32, HitZone)> {
    let head =
        ray_sphere(origin, dir, hitbox.head(p), HEAD_RADIUS, max).map(|t| (t, HitZone::Head));
    let (a, b) = hitbox.body(p);
    let body = ray_capsule(origin, dir, a, b, BODY_RADIUS, max).map(|t| (t, HitZone::Body));
    match (head, body) {
        (Some(h), Some(b)) => Some(if h.0 <= b.0 { h } else { b }),
        (h, b) => h.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> MoveParams {
        MoveParams::default()
    }

    #[test]
    fn rays_hit_spheres_at_the_surface_and_miss_beside_them() {
        let t = ray_sphere(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z, Vec3::ZERO, 1.0, 10.0).unwrap();
        assert!((t - 4.0).abs() < 1e-5);
        assert!(
            ray_sphere(
                Vec3::new(1.01, 0.0, 5.0),
                Vec3::NEG_Z,
                Vec3::ZERO,
                1.0,
                10.0
            )
            .is_none()
        );
        assert!(
            ray_sphere(Vec3::new(0.0, 0.0, 5.0), Vec3::Z, Vec3::ZERO, 1.0, 10.0).is_none(),
            "behind"
        );
        assert!(
            ray_sphere(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z, Vec3::ZERO, 1.0, 3.0).is_none(),
            "too far"
        );
        assert_eq!(
            ray_sphere(Vec3::ZERO, Vec3::X, Vec3::ZERO, 1.0, 3.0),
            Some(0.0),
            "inside"
        );
    }

    #[test]
    fn rays_hit_capsule_sides_and_caps() {
        let (a, b) = (Vec3::ZERO, Vec3::new(0.0, 2.0, 0.0));
        let side = ray_capsule(Vec3::new(5.0, 1.0, 0.0), Vec3::NEG_X, a, b, 0.5, 10.0).unwrap();
        assert!((side - 4.5).abs() < 1e-5);
        let top = ray_capsule(Vec3::new(0.0, 5.0, 0.0), Vec3::NEG_Y, a, b, 0.5, 10.0).unwrap();
        assert!((top - 2.5).abs() < 1e-5);
        assert!(ray_capsule(Vec3::new(5.0, 2.6, 0.0), Vec3::NEG_X, a, b, 0.5, 10.0).is_none());
        let grazing = ray_capsule(Vec3::new(5.0, 2.45, 0.0), Vec3::NEG_X, a, b, 0.5, 10.0);
        assert!(grazing.is_some(), "the rounded top");
    }

    #[test]
    fn head_shots_and_body_shots_are_told_apart() {
        let hb = Hitbox {
            feet: Vec3::ZERO,
            crouched: false,
        };
        let head = ray_hit(Vec3::new(0.0, 1.6, 10.0), Vec3::NEG_Z, 50.0, &hb, &p()).unwrap();
        assert_eq!(head.1, HitZone::Head);
        let body = ray_hit(Vec3::new(0.0, 0.9, 10.0), Vec3::NEG_Z, 50.0, &hb, &p()).unwrap();
        assert_eq!(body.1, HitZone::Body);
        assert!(
            ray_hit(Vec3::new(0.0, 1.95, 10.0), Vec3::NEG_Z, 50.0, &hb, &p()).is_none(),
            "over the head"
        );
        assert!(
            ray_hit(Vec3::new(0.5, 1.0, 10.0), Vec3::NEG_Z, 50.0, &hb, &p()).is_none(),
            "beside"
        );
        // Crouched, the head is lower: the standing head height misses.
        let low = Hitbox {
            feet: Vec3::ZERO,
            crouched: true,
        };
        assert!(ray_hit(Vec3::new(0.0, 1.6, 10.0), Vec3::NEG_Z, 50.0, &low, &p()).is_none());
        assert_eq!(
            ray_hit(Vec3::new(0.0, 1.0, 10.0), Vec3::NEG_Z, 50.0, &low, &p())
                .unwrap()
                .1,
            HitZone::Head
        );
    }
}
