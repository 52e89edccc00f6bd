//! Other players as obstacles: upright capsules, swept against analytically.
//!
//! Two upright capsules touch when the distance between their vertical core segments is
//! the sum of their radii. Moving one against the other is therefore a point (the mover's
//! bottom sphere centre) swept against one upright capsule: the other's segment stretched
//! down by the mover's segment length, with the summed radius. That is a ray against a
//! cylinder and two spheres, a few multiplications and one square root, all IEEE-exact, so
//! the server and every client agree on the bits.

use crate::{MoveParams, PlayerState};
use bevy::math::{Vec2, Vec3};
use sightline_map::{CollisionWorld, SKIN};

/// Another player's upright capsule, standing at `feet`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Body {
    /// Feet position (the bottom of the capsule), m.
    pub feet: Vec3,
    /// Capsule radius, m.
    pub radius: f32,
    /// Capsule height, feet to crown, m.
    pub height: f32,
}

impl Body {
    /// The capsule of a player in `state` (crouched or standing).
    pub fn of(state: &PlayerState, params: &MoveParams) -> Self {
        Self::at(state.pos, params.radius, params.height(state.crouched()))
    }

    /// A capsule of `radius` and `height` standing at `feet`.
    pub fn at(feet: Vec3, radius: f32, height: f32) -> Self {
        Self {
            feet,
            radius,
            height,
        }
    }

    /// The heights of the bottom and top sphere centres.
    fn core(&self) -> (f32, f32) {
        let bottom = self.feet.y + self.radius;
        (
            bottom,
            (self.feet.y + self.height - self.radius).max(bottom),
        )
    }

    /// Distance between the two capsules' surfaces (negative when they overlap).
    pub fn gap(&self, other: &Body) -> f32 {
        let (a0, a1) = self.core();
        let (b0, b1) = other.core();
        let vertical = (a0 - b1).max(b0 - a1).max(0.0);
        let flat = Vec2::new(self.feet.x - other.feet.x, self.feet.z - other.feet.z);
        Vec2::new(flat.length(), vertical).length() - self.radius - other.radius
    }
}

/// Where a sweep stopped, against the map or a body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Contact {
    /// Fraction of the requested motion travelled, 0..=1.
    pub fraction: f32,
    /// Surface normal at the contact, pointing toward the mover.
    pub normal: Vec3,
    /// The contact point on the surface.
    pub point: Vec3,
    /// Another player rather than the map.
    pub body: bool,
}

/// What a player moves through: the map's brushes and the capsules of the other players
/// near it (see [`reach`]). With no bodies it is the map alone.
#[derive(Clone, Copy)]
pub struct MoveWorld<'a> {
    /// The map.
    pub map: &'a CollisionWorld,
    /// Other players' capsules, never the mover's own.
    pub bodies: &'a [Body],
}

impl<'a> MoveWorld<'a> {
    /// The map alone, nobody else in it.
    pub fn map(map: &'a CollisionWorld) -> Self {
        Self { map, bodies: &[] }
    }

    /// Sweeps an upright capsule at `feet` along `motion`; the first contact within
    /// [`SKIN`] of the map or a body. A tie goes to the map, then to the earliest body, so
    /// the answer never depends on more than the order it was given.
    pub(crate) fn cast_capsule(
        &self,
        feet: Vec3,
        radius: f32,
        height: f32,
        motion: Vec3,
    ) -> Option<Contact> {
        let mut best = self
            .map
            .cast_capsule(feet, radius, height, motion)
            .map(|hit| Contact {
                fraction: hit.fraction,
                normal: hit.normal,
                point: hit.point,
                body: false,
            });
        let mover = Body::at(feet, radius, height);
        for body in self.bodies {
            if let Some(hit) = sweep(&mover, motion, body)
                && best.is_none_or(|b| hit.fraction < b.fraction)
            {
                best = Some(hit);
            }
        }
        best
    }

    /// How much of `motion` (0..=1) an upright capsule at `feet` can travel before it
    /// comes within [`SKIN`] of the map or a body: 1 when nothing is in the way.
    pub fn travel(&self, feet: Vec3, radius: f32, height: f32, motion: Vec3) -> f32 {
        self.cast_capsule(feet, radius, height, motion)
            .map_or(1.0, |hit| hit.fraction)
    }

    /// Whether an upright capsule at `feet` would overlap a brush or a body. Resting
    /// contact (within [`SKIN`]) does not count.
    pub(crate) fn capsule_overlaps(&self, feet: Vec3, radius: f32, height: f32) -> bool {
        let mover = Body::at(feet, radius, height);
        self.map.capsule_overlaps(feet, radius, height)
            || self.bodies.iter().any(|b| mover.gap(b) < -SKIN)
    }
}

/// How far from a player's capsule another capsule can be and still be touched in one step
/// of `dt`: its speed after a tick's acceleration, a jump and gravity, plus a step up, the
/// ground probe and standing up. Bodies farther than this can be left out of a
/// [`MoveWorld`] without changing the result.
pub fn reach(state: &PlayerState, params: &MoveParams, dt: f32) -> f32 {
    let speed = state.vel.length()
        + params.jump_speed
        + (params.run_speed * params.ground_accel + params.gravity) * dt;
    speed * dt + params.step_height + (params.stand_height - params.crouch_height).max(0.0) + 0.1
}

/// The bodies in `bodies` within [`reach`] of a player in `state`, in their given order.
pub fn bodies_near(
    state: &PlayerState,
    params: &MoveParams,
    dt: f32,
    bodies: impl IntoIterator<Item = Body>,
) -> Vec<Body> {
    let me = Body::of(state, params);
    let reach = reach(state, params, dt);
    bodies.into_iter().filter(|b| me.gap(b) < reach).collect()
}

/// Sweeps `mover` along `motion` against `body`: the first time it comes within [`SKIN`]
/// of it. A mover already that close (or overlapping) is stopped at once when moving
/// closer and passes freely when moving apart, so two players who end up inside each
/// other (a spawn, a stale estimate) can always separate.
fn sweep(mover: &Body, motion: Vec3, body: &Body) -> Option<Contact> {
    let (m0, m1) = mover.core();
    let (b0, b1) = body.core();
    let length = m1 - m0;
    // The mover's bottom sphere centre against the body's core stretched down by the
    // mover's core length, with both radii.
    let start = Vec3::new(mover.feet.x, m0, mover.feet.z);
    let low = b0 - length;
    let radius = mover.radius + body.radius + SKIN;
    let axis = Vec2::new(body.feet.x, body.feet.z);
    let closest = |p: Vec3| Vec3::new(axis.x, p.y.clamp(low, b1), axis.y);

    let away = start - closest(start);
    if away.length_squared() < radius * radius {
        let normal = away.try_normalize()?;
        if motion.dot(normal) >= 0.0 {
            return None;
        }
        return Some(contact(mover, body, start, normal, 0.0));
    }

    let mut first: Option<f32> = None;
    let mut consider = |t: f32| {
        if (0.0..=1.0).contains(&t) && first.is_none_or(|f| t < f) {
            first = Some(t);
        }
    };
    // The side: a circle in the horizontal plane, where the height lies along the core.
    let flat = Vec2::new(start.x, start.z) - axis;
    let flat_motion = Vec2::new(motion.x, motion.z);
    if let Some(t) = first_root(
        flat_motion.length_squared(),
        flat.dot(flat_motion),
        flat.length_squared() - radius * radius,
    ) {
        let y = start.y + motion.y * t;
        if (low..=b1).contains(&y) {
            consider(t);
        }
    }
    // The two ends: spheres.
    for end in [low, b1] {
        let centre = Vec3::new(axis.x, end, axis.y);
        let offset = start - centre;
        if let Some(t) = first_root(
            motion.length_squared(),
            offset.dot(motion),
            offset.length_squared() - radius * radius,
        ) {
            consider(t);
        }
    }
    let t = first?;
    let at = start + motion * t;
    let normal = (at - closest(at)).try_normalize()?;
    // Grazing: touching while moving along or away from the surface is no contact.
    if motion.dot(normal) >= 0.0 {
        return None;
    }
    Some(contact(mover, body, at, normal, t))
}

/// The smaller root of `a t^2 + 2 b t + c = 0` when the motion enters the surface (`b < 0`
/// with `c > 0` outside), if real.
fn first_root(a: f32, b: f32, c: f32) -> Option<f32> {
    if a <= 1e-12 || b >= 0.0 {
        return None;
    }
    let disc = b * b - a * c;
    if disc < 0.0 {
        return None;
    }
    Some((-b - disc.sqrt()) / a)
}

/// The contact of `mover` (its bottom sphere centre at `at`) with `body` along `normal`.
fn contact(mover: &Body, body: &Body, at: Vec3, normal: Vec3, fraction: f32) -> Contact {
    let (b0, b1) = body.core();
    let top = at.y + (mover.core().1 - mover.core().0);
    // The nearest point of the body's core to the mover's core, pushed out to its skin.
    let y = if at.y > b1 {
        b1
    } else if top < b0 {
        b0
    } else {
        0.5 * (at.y.max(b0) + top.min(b1))
    };
    Contact {
        fraction,
        normal,
        point: Vec3::new(body.feet.x, y, body.feet.z) + normal * body.radius,
        body: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(x: f32, z: f32) -> Body {
        Body::at(Vec3::new(x, 0.0, z), 0.4, 1.8)
    }

    #[test]
    fn gap_between_capsules() {
        let a = standing(0.0, 0.0);
        assert!((a.gap(&standing(1.0, 0.0)) - 0.2).abs() < 1e-6);
        assert!(a.gap(&standing(0.5, 0.0)) < 0.0);
        // One standing on the other's head: 1.8 m up, touching.
        let above = Body::at(Vec3::new(0.0, 1.8, 0.0), 0.4, 1.8);
        assert!(a.gap(&above).abs() < 1e-6);
    }

    #[test]
    fn a_sweep_stops_a_skin_short_of_the_other_capsule() {
        let mover = standing(0.0, 0.0);
        let hit = sweep(&mover, Vec3::X * 4.0, &standing(3.0, 0.0)).expect("hits");
        let stopped = Body::at(mover.feet + Vec3::X * 4.0 * hit.fraction, 0.4, 1.8);
        assert!((stopped.gap(&standing(3.0, 0.0)) - SKIN).abs() < 1e-5);
        assert!((hit.normal - Vec3::NEG_X).length() < 1e-6);
        assert!(!hit.point.is_nan() && hit.body);
    }

    #[test]
    fn sweeps_miss_what_they_pass_and_leave_what_they_touch() {
        let mover = standing(0.0, 0.0);
        assert!(sweep(&mover, Vec3::X * 4.0, &standing(3.0, 0.9)).is_none());
        assert!(sweep(&mover, Vec3::NEG_X * 4.0, &standing(3.0, 0.0)).is_none());
        // Overlapping: moving deeper stops at once, moving apart is free.
        let inside = standing(0.5, 0.0);
        assert_eq!(
            sweep(&mover, Vec3::X, &inside).map(|c| c.fraction),
            Some(0.0)
        );
        assert!(sweep(&mover, Vec3::NEG_X, &inside).is_none());
    }

    #[test]
    fn falling_onto_a_head_lands_on_the_top_sphere() {
        let mover = Body::at(Vec3::new(0.0, 4.0, 0.0), 0.4, 1.8);
        let hit = sweep(&mover, Vec3::NEG_Y * 4.0, &standing(0.0, 0.0)).expect("lands");
        let feet = 4.0 - 4.0 * hit.fraction;
        assert!((feet - 1.8 - SKIN).abs() < 1e-5, "{feet}");
        assert!((hit.normal - Vec3::Y).length() < 1e-6);
    }
}
