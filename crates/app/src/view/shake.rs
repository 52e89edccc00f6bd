//! Camera shake near explosions and when we are hurt: a [`Shake`] of "trauma" (0 to 1)
//! that explosions add to by their distance and that drains away, turned into a small
//! jitter of the camera's position and roll.
//!
//! The camera module places the camera every frame in `Update`; the shake is added after
//! all of `Update`, just before transforms propagate, and taken off again at the start of
//! the next frame, so it never accumulates even on frames where nothing else moves the
//! camera (dead, between sessions).

use crate::MainCamera;
use bevy::prelude::*;
use bevy::transform::TransformSystems;
use sightline_client::CombatCue;
use sightline_sim::SessionAppExt;

/// How shaken the camera is, 0 to 1; it drains at [`DRAIN_PER_SECOND`].
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct Shake {
    /// Current trauma.
    pub trauma: f32,
}

/// Trauma lost per second.
const DRAIN_PER_SECOND: f32 = 1.4;
/// Farthest an explosion shakes us from, metres.
const SHAKE_RADIUS: f32 = 14.0;
/// Largest offset at full trauma, metres, and roll, radians.
const MAX_OFFSET: f32 = 0.12;
const MAX_ROLL: f32 = 0.05;

impl Shake {
    /// Adds `amount` of trauma, to at most 1.
    pub fn add(&mut self, amount: f32) {
        self.trauma = (self.trauma + amount.max(0.0)).min(1.0);
    }

    /// Drains it over `dt` seconds.
    pub fn drain(&mut self, dt: f32) {
        self.trauma = (self.trauma - DRAIN_PER_SECOND * dt).max(0.0);
    }
}

/// Trauma from an explosion `distance` metres away: most at the centre, none past
/// [`SHAKE_RADIUS`].
pub fn explosion_trauma(distance: f32) -> f32 {
    (1.0 - distance / SHAKE_RADIUS).clamp(0.0, 1.0).powi(2) * 0.9
}

/// The camera's offset and roll at `trauma` and time `t`: trauma squared, so small
/// shakes are subtle and big ones violent; smooth wobbles rather than white noise.
pub fn shake_offset(trauma: f32, t: f32) -> (Vec3, f32) {
    let k = trauma.clamp(0.0, 1.0).powi(2);
    let wobble = |f: f32, p: f32| (t * f + p).sin() * 0.6 + (t * f * 2.3 + p * 1.7).sin() * 0.4;
    (
        Vec3::new(wobble(31.0, 0.0), wobble(27.0, 1.3), wobble(23.0, 2.9)) * MAX_OFFSET * k,
        wobble(19.0, 4.1) * MAX_ROLL * k,
    )
}

/// What the shake last added to the camera, to take off again.
#[derive(Resource, Debug, Default)]
struct Applied(Option<(Vec3, f32)>);

/// Shakes the camera.
pub struct ShakePlugin;

impl Plugin for ShakePlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<Shake>()
            .init_resource::<Applied>()
            .add_systems(PreUpdate, unshake_camera)
            .add_systems(Update, shake_from_cues)
            .add_systems(PostUpdate, shake_camera.before(TransformSystems::Propagate));
    }
}

/// Explosions near the camera and our own hurts add trauma.
fn shake_from_cues(
    mut cues: MessageReader<CombatCue>,
    mut shake: ResMut<Shake>,
    camera: Query<&Transform, With<MainCamera>>,
) {
    let eye = camera.single().map(|t| t.translation).ok();
    for cue in cues.read() {
        match *cue {
            CombatCue::Exploded { at, .. } => {
                if let Some(eye) = eye {
                    shake.add(explosion_trauma(eye.distance(at)));
                }
            }
            CombatCue::Hurt { .. } => shake.add(0.25),
            _ => {}
        }
    }
}

/// Adds this frame's shake to wherever the camera was put.
fn shake_camera(
    time: Res<Time>,
    mut shake: ResMut<Shake>,
    mut applied: ResMut<Applied>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    shake.drain(time.delta_secs());
    let Ok(mut transform) = camera.single_mut() else {
        return;
    };
    if shake.trauma <= 0.0 {
        return;
    }
    let (offset, roll) = shake_offset(shake.trauma, time.elapsed_secs());
    // In the camera's own frame: up is up on screen.
    let moved = transform.rotation * offset;
    transform.translation += moved;
    transform.rotation *= Quat::from_rotation_z(roll);
    applied.0 = Some((moved, roll));
}

/// Takes last frame's shake off again before anything places the camera.
fn unshake_camera(
    mut applied: ResMut<Applied>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    let Some((offset, roll)) = applied.0.take() else {
        return;
    };
    if let Ok(mut transform) = camera.single_mut() {
        transform.rotation *= Quat::from_rotation_z(-roll);
        transform.translation -= offset;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trauma_falls_with_distance_and_drains() {
        assert!(explosion_trauma(0.0) > explosion_trauma(5.0));
        assert_eq!(explosion_trauma(SHAKE_RADIUS), 0.0);
        assert_eq!(explosion_trauma(100.0), 0.0);
        let mut s = Shake::default();
        s.add(0.7);
        s.add(0.7);
        assert_eq!(s.trauma, 1.0, "capped");
        s.drain(0.5);
        assert!((s.trauma - 0.3).abs() < 1e-5);
        s.drain(10.0);
        assert_eq!(s.trauma, 0.0);
    }

    #[test]
    fn offsets_grow_with_trauma_squared_and_stay_bounded() {
        for i in 0..100 {
            let t = i as f32 * 0.037;
            let (full, roll) = shake_offset(1.0, t);
            assert!(full.abs().max_element() <= MAX_OFFSET + 1e-6);
            assert!(roll.abs() <= MAX_ROLL + 1e-6);
            let (half, _) = shake_offset(0.5, t);
            assert!((half * 4.0).distance(full) < 1e-5);
        }
        assert_eq!(shake_offset(0.0, 1.0), (Vec3::ZERO, 0.0));
    }

    #[test]
    fn shaking_and_unshaking_restore_the_camera() {
        let mut app = App::new();
        app.add_plugins(MinimalPlugins);
        app.init_resource::<Applied>()
            .insert_resource(Shake { trauma: 0.8 });
        let start =
            Transform::from_xyz(1.0, 2.0, 3.0).looking_to(Vec3::new(1.0, -0.2, 0.3), Vec3::Y);
        let camera = app.world_mut().spawn((start, MainCamera)).id();
        app.add_systems(Update, (shake_camera, unshake_camera).chain());
        app.update();
        app.update();
        let end = *app.world().get::<Transform>(camera).unwrap();
        assert!(end.translation.distance(start.translation) < 1e-5);
        assert!(end.rotation.dot(start.rotation).abs() > 1.0 - 1e-6);
    }
}
