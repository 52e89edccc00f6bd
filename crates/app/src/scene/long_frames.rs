//! A frame that takes over a second is logged with what the frame before it drew: the
//! particles (and how many were close to the eye, where one covers much of the screen),
//! the effects' lights and the marks on the walls. Rendering runs a frame behind the
//! main world, so a slow draw shows as the next frame's length; the census kept is the
//! one taken before it. Per-pixel cost is what a software renderer or a weak GPU feels,
//! and what the log names is where to look first.

use super::particles::{Look, Particle};
use crate::camera::MainCamera;
use bevy::diagnostic::DiagnosticsStore;
use bevy::platform::time::Instant;
use bevy::prelude::*;

/// A frame longer than this is logged, seconds.
const LONG_FRAME: f32 = 1.0;
/// Particles nearer the eye than this, metres, are counted apart: each covers much of the
/// screen.
const NEAR: f32 = 2.0;

/// What one frame drew that costs per pixel.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FrameCensus {
    /// Particles shown.
    pub particles: usize,
    /// Of them, nearer the eye than [`NEAR`].
    pub near: usize,
    /// Of those, smoke (blended and lit, the dearest per pixel).
    pub near_smoke: usize,
    /// Point lights.
    pub lights: usize,
}

/// Counts, and logs long frames.
pub(crate) struct LongFramesPlugin;

impl Plugin for LongFramesPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<FrameCensus>()
            .add_systems(Last, (log_a_long_frame, take_census).chain())
            .add_systems(Last, log_slow_passes);
    }
}

/// Counts what this frame draws, for the next frame to log if it turns out long.
fn take_census(
    mut census: ResMut<FrameCensus>,
    camera: Query<&GlobalTransform, With<MainCamera>>,
    particles: Query<(&Particle, &GlobalTransform, &ViewVisibility)>,
    lights: Query<&ViewVisibility, With<PointLight>>,
) {
    let eye = camera.single().map(|t| t.translation()).ok();
    let mut next = FrameCensus {
        lights: lights.iter().filter(|v| v.get()).count(),
        ..default()
    };
    for (particle, at, visible) in &particles {
        if !visible.get() {
            continue;
        }
        next.particles += 1;
        if eye.is_some_and(|eye| eye.distance(at.translation()) < NEAR + particle.current_size()) {
            next.near += 1;
            next.near_smoke += usize::from(particle.look == Look::Smoke);
        }
    }
    census.set_if_neq(next);
}

/// Logs a frame over [`LONG_FRAME`], with the census of the frame before it (the one the
/// renderer was drawing meanwhile).
fn log_a_long_frame(time: Res<Time<Real>>, census: Res<FrameCensus>) {
    let took = time.delta_secs();
    if took <= LONG_FRAME {
        return;
    }
    let FrameCensus {
        particles,
        near,
        near_smoke,
        lights,
    } = *census;
    warn!(
        "a frame took {took:.1} s; the frame before it drew {particles} particles ({near} \
         within {NEAR} m of the eye, {near_smoke} of them smoke) and {lights} point lights"
    );
}

/// Logs a render pass whose measured time (GPU where the adapter has timestamps, else CPU)
/// was over [`LONG_FRAME`]: the measurement arrives a few frames after the pass ran.
fn log_slow_passes(store: Option<Res<DiagnosticsStore>>, mut seen: Local<Option<Instant>>) {
    let Some(store) = store else {
        return;
    };
    let since = *seen;
    let mut newest = since;
    for diagnostic in store.iter() {
        let path = diagnostic.path().as_str();
        if !path.starts_with("render/") || !path.contains("elapsed_") {
            continue;
        }
        for m in diagnostic.measurements() {
            if since.is_some_and(|t| m.time <= t) {
                continue;
            }
            newest = Some(newest.map_or(m.time, |t| t.max(m.time)));
            if m.value > f64::from(LONG_FRAME) * 1000.0 {
                warn!("{path}: {:.1} s", m.value / 1000.0);
            }
        }
    }
    *seen = newest;
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::ecs::system::RunSystemOnce;

    fn particle(look: Look, size: f32) -> Particle {
        Particle {
            vel: Vec3::ZERO,
            age: 0.0,
            life: 1.0,
            size,
            grow: 1.0,
            gravity: 0.0,
            drag: 0.0,
            look,
        }
    }

    #[test]
    fn the_census_counts_what_is_shown_and_what_is_near_the_eye() {
        let mut world = World::new();
        world.init_resource::<FrameCensus>();
        world.spawn((MainCamera, GlobalTransform::IDENTITY));
        let at = |x: f32| GlobalTransform::from_translation(Vec3::new(x, 0.0, 0.0));
        world.spawn((particle(Look::Smoke, 0.5), at(1.0), ViewVisibility::VISIBLE));
        world.spawn((particle(Look::Spark, 0.1), at(1.5), ViewVisibility::VISIBLE));
        // A big puff whose edge reaches within two metres.
        world.spawn((particle(Look::Smoke, 2.0), at(3.5), ViewVisibility::VISIBLE));
        world.spawn((particle(Look::Fire, 0.3), at(20.0), ViewVisibility::VISIBLE));
        // Pooled and hidden: not drawn.
        world.spawn((particle(Look::Smoke, 0.5), at(0.5), ViewVisibility::HIDDEN));
        world.spawn((PointLight::default(), ViewVisibility::VISIBLE));
        world.spawn((PointLight::default(), ViewVisibility::HIDDEN));
        world.run_system_once(take_census).expect("runs");
        assert_eq!(
            *world.resource::<FrameCensus>(),
            FrameCensus {
                particles: 4,
                near: 3,
                near_smoke: 2,
                lights: 1,
            }
        );
    }
}
