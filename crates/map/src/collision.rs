//! The static collision world built from a map, and the few queries movement needs.
//!
//! Colliders live in a Rapier `ColliderSet` with its BVH; no rigid bodies and no physics
//! step, because players are moved by Sightline's own movement code, which only asks
//! "how far can this capsule go?" and "is this spot free?".

use crate::{JumpPad, MapDef};
use bevy::math::{Quat, Vec3};
use bevy_rapier3d::rapier::parry::query::{DefaultQueryDispatcher, ShapeCastOptions};
use bevy_rapier3d::rapier::parry::shape::Capsule;
use bevy_rapier3d::rapier::prelude::{
    BroadPhaseBvh, ColliderBuilder, ColliderSet, IntegrationParameters, Pose, QueryFilter,
    QueryPipeline, Ray, RigidBodySet,
};

/// Gap a moving capsule keeps from surfaces, in metres. Casting to a small distance
/// rather than to contact keeps the next cast from starting inside a wall.
pub const SKIN: f32 = 0.005;

/// Where a cast shape stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CastHit {
    /// Fraction of the requested motion travelled before touching, 0..=1.
    pub fraction: f32,
    /// Surface normal at the contact, pointing out of the surface.
    pub normal: Vec3,
    /// The contact point on the surface, at the time of impact.
    pub point: Vec3,
}

/// Rapier colliders for a map's brushes, ready for queries.
pub struct CollisionWorld {
    colliders: ColliderSet,
    bodies: RigidBodySet,
    broad_phase: BroadPhaseBvh,
    pads: Vec<JumpPad>,
}

impl CollisionWorld {
    /// Builds one cuboid collider per brush, and keeps the jump pads.
    pub fn from_map(map: &MapDef) -> Self {
        Self::from_boxes(map.brushes.iter().map(|b| b.oriented_box()))
            .with_pads(map.jump_pads.clone())
    }

    /// The same world with these jump pads.
    pub fn with_pads(self, pads: Vec<JumpPad>) -> Self {
        Self { pads, ..self }
    }

    /// The launch velocity of the jump pad whose box holds `feet`, if any (the first in
    /// the map's order).
    pub fn pad_at(&self, feet: Vec3) -> Option<Vec3> {
        self.pads.iter().find(|p| p.holds(feet)).map(|p| p.launch)
    }

    /// Builds a world from oriented boxes given as (centre, half extents, rotation).
    pub fn from_boxes(boxes: impl IntoIterator<Item = (Vec3, Vec3, Quat)>) -> Self {
        let mut colliders = ColliderSet::new();
        let mut broad_phase = BroadPhaseBvh::new();
        let params = IntegrationParameters::default();
        for (center, half, rotation) in boxes {
            let collider = ColliderBuilder::cuboid(half.x, half.y, half.z)
                .position(Pose::from_parts(center, rotation))
                .build();
            let aabb = collider.compute_aabb();
            let handle = colliders.insert(collider);
            broad_phase.set_aabb(&params, handle, aabb);
        }
        Self {
            colliders,
            bodies: RigidBodySet::new(),
            broad_phase,
            pads: Vec::new(),
        }
    }

    /// Number of colliders.
    pub fn len(&self) -> usize {
        self.colliders.len()
    }

    /// Whether the world holds no colliders.
    pub fn is_empty(&self) -> bool {
        self.colliders.is_empty()
    }

    fn queries(&self) -> QueryPipeline<'_> {
        self.broad_phase.as_query_pipeline(
            &DefaultQueryDispatcher,
            &self.bodies,
            &self.colliders,
            QueryFilter::default(),
        )
    }

    /// Sweeps an upright capsule standing at `feet` along `motion`; returns where it first
    /// comes within [`SKIN`] of a surface. Contacts the capsule is already leaving are
    /// ignored, so a player resting against a wall can walk away from it.
    pub fn cast_capsule(
        &self,
        feet: Vec3,
        radius: f32,
        height: f32,
        motion: Vec3,
    ) -> Option<CastHit> {
        let (pose, capsule) = capsule_at(feet, radius, height);
        let options = ShapeCastOptions {
            max_time_of_impact: 1.0,
            target_distance: SKIN,
            stop_at_penetration: false,
            compute_impact_geometry_on_penetration: true,
        };
        self.queries()
            .cast_shape(&pose, motion, &capsule, options)
            .map(|(_, hit)| CastHit {
                fraction: hit.time_of_impact.clamp(0.0, 1.0),
                normal: hit.normal1,
                point: hit.witness1,
            })
    }

    /// Whether an upright capsule standing at `feet` would overlap any brush. Surfaces
    /// within [`SKIN`] do not count, so a player resting on the floor fits.
    pub fn capsule_overlaps(&self, feet: Vec3, radius: f32, height: f32) -> bool {
        let (pose, capsule) = capsule_at(feet + Vec3::Y * SKIN, radius - SKIN, height - 2.0 * SKIN);
        self.queries()
            .intersect_shape(pose, &capsule)
            .next()
            .is_some()
    }

    /// Whether nothing of the map lies on the segment from `from` to `from + offset`: a
    /// line of sight.
    pub fn is_clear(&self, from: Vec3, offset: Vec3) -> bool {
        let length = offset.length();
        length < 1e-3 || self.cast_ray(from, offset / length, length).is_none()
    }

    /// Casts a ray; returns the distance to the first surface and its normal.
    pub fn cast_ray(&self, origin: Vec3, dir: Vec3, max_dist: f32) -> Option<(f32, Vec3)> {
        let ray = Ray::new(origin, dir);
        self.queries()
            .cast_ray_and_get_normal(&ray, max_dist, true)
            .map(|(_, hit)| (hit.time_of_impact, hit.normal))
    }
}

fn capsule_at(feet: Vec3, radius: f32, height: f32) -> (Pose, Capsule) {
    let half = height * 0.5;
    let pose = Pose::from_translation(feet + Vec3::Y * half);
    (pose, Capsule::new_y((half - radius).max(0.0), radius))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor_and_wall() -> CollisionWorld {
        CollisionWorld::from_boxes([
            // Floor: top at y = 0.
            (
                Vec3::new(0.0, -0.5, 0.0),
                Vec3::new(10.0, 0.5, 10.0),
                Quat::IDENTITY,
            ),
            // Wall: face at x = 2.
            (
                Vec3::new(2.5, 1.0, 0.0),
                Vec3::new(0.5, 1.0, 10.0),
                Quat::IDENTITY,
            ),
        ])
    }

    #[test]
    fn capsule_falls_onto_the_floor_and_keeps_the_skin() {
        let w = floor_and_wall();
        let hit = w
            .cast_capsule(
                Vec3::new(0.0, 1.0, 0.0),
                0.4,
                1.8,
                Vec3::new(0.0, -2.0, 0.0),
            )
            .expect("floor hit");
        let stop = 1.0 - 2.0 * hit.fraction;
        assert!((stop - SKIN).abs() < 1e-3, "stopped at {stop}");
        assert!(hit.normal.y > 0.99, "{:?}", hit.normal);
    }

    #[test]
    fn capsule_is_stopped_by_the_wall() {
        let w = floor_and_wall();
        let hit = w
            .cast_capsule(Vec3::new(0.0, 0.1, 0.0), 0.4, 1.8, Vec3::new(4.0, 0.0, 0.0))
            .expect("wall hit");
        let x = 4.0 * hit.fraction;
        assert!((x - (2.0 - 0.4 - SKIN)).abs() < 1e-3, "stopped at {x}");
        assert!(hit.normal.x < -0.99);
    }

    #[test]
    fn moving_away_from_a_touching_wall_is_free() {
        let w = floor_and_wall();
        let feet = Vec3::new(2.0 - 0.4 - SKIN * 0.5, 0.1, 0.0);
        assert!(
            w.cast_capsule(feet, 0.4, 1.8, Vec3::new(-1.0, 0.0, 0.0))
                .is_none()
        );
    }

    #[test]
    fn overlap_test_ignores_resting_contact() {
        let w = floor_and_wall();
        assert!(!w.capsule_overlaps(Vec3::new(0.0, SKIN, 0.0), 0.4, 1.8));
        assert!(w.capsule_overlaps(Vec3::new(2.0, 0.1, 0.0), 0.4, 1.8));
        assert!(w.capsule_overlaps(Vec3::new(0.0, -0.3, 0.0), 0.4, 1.8));
    }

    #[test]
    fn ray_finds_the_wall() {
        let w = floor_and_wall();
        let (d, n) = w.cast_ray(Vec3::new(0.0, 1.0, 0.0), Vec3::X, 10.0).unwrap();
        assert!((d - 2.0).abs() < 1e-4);
        assert!(n.x < -0.99);
        assert!(
            w.cast_ray(Vec3::new(0.0, 1.0, 0.0), -Vec3::X, 5.0)
                .is_none()
        );
    }
}
