//! The first-person view: the camera at the predicted eye (blended between the last two
//! ticks, plus the fading correction) and the field of view; holding alternate fire with
//! a zooming weapon (rifle, railgun) narrows the field of view by the weapon's share
//! ([`ViewZoom`]). While we are dead the death camera (`deathcam.rs`) has the view
//! instead; a respawn is never blended across. The weapon in view is `viewmodel.rs`'s.

use crate::cvars::cvar;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::prelude::*;
use sightline_client::{LatestSnapshot, LocalInput, dead_in};
use sightline_combat::{AltFire, Arsenal, SpawnCount};
use sightline_console::Cvars;
use sightline_movement::{MoveParams, PlayerState};
use sightline_prediction::{Predicted, VisualOffset};
use sightline_sim::{Buttons, PlayerId, SessionAppExt};

/// The first-person camera.
#[derive(Component)]
pub struct MainCamera;

/// Eye height as drawn: follows the crouch state smoothly.
#[derive(Resource, Debug, Default)]
struct EyeHeight(Option<f32>);

/// The predicted state before the latest tick, for blending between ticks, with the
/// spawn count it belonged to: a state from before a respawn is not blended from.
#[derive(Component, Debug, Default, Clone, Copy)]
struct PreviousState(PlayerState, Option<SpawnCount>);

/// The field of view as a share of `fov`: below 1 while zoomed, eased in and out.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct ViewZoom(pub f32);

impl Default for ViewZoom {
    fn default() -> Self {
        Self(1.0)
    }
}

/// Whether `+zoom` is held (apart from alternate fire).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct ZoomHeld(pub bool);

/// The share of the field of view `+zoom` gives a weapon that does not zoom of its own:
/// a closer look, nothing more (its shots are as wide as ever).
pub const PLAIN_ZOOM: f32 = 0.5;

/// Seconds the zoom takes to get most of the way (about 3 of these to settle).
const ZOOM_EASE_SECONDS: f32 = 0.035;

/// The share of the field of view a weapon's alternate fire asks for: its zoom while
/// held with a zooming weapon, the whole view otherwise.
pub fn zoom_share(alt: AltFire, held: bool) -> f32 {
    match alt {
        AltFire::Zoom { fov_scale, .. } if held => fov_scale.clamp(0.1, 1.0),
        _ => 1.0,
    }
}

/// The share of the field of view for the weapon's alternate fire `alt`, held or not,
/// and `+zoom` held or not: a zooming weapon's sight either way (`+zoom` holds its
/// alternate fire), any other's [`PLAIN_ZOOM`] on `+zoom`.
pub fn view_zoom(alt: AltFire, alt_held: bool, zoom_held: bool) -> f32 {
    match alt {
        AltFire::Zoom { .. } => zoom_share(alt, alt_held || zoom_held),
        _ if zoom_held => PLAIN_ZOOM,
        _ => 1.0,
    }
}

/// Where the camera is placed each frame; the death camera runs after it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CameraSet;

/// The camera: where it is and how wide it sees.
pub struct CameraPlugin;

impl Plugin for CameraPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<EyeHeight>()
            .init_session_resource::<ViewZoom>()
            .init_session_resource::<ZoomHeld>()
            .add_systems(Startup, spawn_camera)
            .add_systems(FixedFirst, remember_previous_state)
            .add_systems(
                Update,
                (
                    place_camera.in_set(CameraSet),
                    (zoom_view, apply_fov).chain(),
                ),
            );
    }
}

fn spawn_camera(mut commands: Commands) {
    commands.spawn((
        Camera3d::default(),
        Tonemapping::AcesFitted,
        Projection::Perspective(PerspectiveProjection {
            fov: 90f32.to_radians(),
            ..default()
        }),
        Transform::from_xyz(0.0, 2.0, 0.0),
        MainCamera,
    ));
}

fn remember_previous_state(
    mut commands: Commands,
    mut players: Query<
        (
            Entity,
            &PlayerState,
            Option<&SpawnCount>,
            Option<&mut PreviousState>,
        ),
        With<Predicted>,
    >,
) {
    for (entity, state, spawn, previous) in &mut players {
        let now = PreviousState(*state, spawn.copied());
        match previous {
            Some(mut p) => *p = now,
            None => {
                commands.entity(entity).insert(now);
            }
        }
    }
}

/// The camera sits at the predicted eye, blended between the last two ticks, plus the
/// fading correction offset; it looks where the mouse last pointed. Not while dead (the
/// death camera has the view), and not blended across a respawn: the first frame after
/// one is at the new spawn.
#[allow(clippy::too_many_arguments)]
fn place_camera(
    time: Res<Time>,
    fixed: Res<Time<Fixed>>,
    params: Res<MoveParams>,
    input: Res<LocalInput>,
    latest: Res<LatestSnapshot>,
    mut eye: ResMut<EyeHeight>,
    player: Query<
        (
            &PlayerId,
            &PlayerState,
            Option<&SpawnCount>,
            Option<&PreviousState>,
            &VisualOffset,
        ),
        With<Predicted>,
    >,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    let (Ok((id, state, spawn, previous, offset)), Ok(mut transform)) =
        (player.single(), camera.single_mut())
    else {
        return;
    };
    // The dead see through the death camera, placed after this from where we left it.
    if dead_in(&latest, *id) {
        return;
    }
    let from = previous
        .filter(|p| p.1 == spawn.copied())
        .map_or(state.pos, |p| p.0.pos);
    let pos = from.lerp(state.pos, fixed.overstep_fraction()) + offset.0;
    // Lower and raise the eye over about a tenth of a second.
    let target = params.eye(state.crouched());
    let current = eye.0.get_or_insert(target);
    *current += (target - *current) * (1.0 - (-time.delta_secs() / 0.05).exp());
    transform.translation = pos + Vec3::Y * *current;
    transform.rotation = Quat::from_euler(EulerRot::YXZ, input.yaw, input.pitch, 0.0);
}

/// Eases the zoom toward what the weapon in hand asks for: zoomed while alternate fire is
/// held with a zooming weapon that is up, alive; the whole view otherwise.
fn zoom_view(
    time: Res<Time>,
    input: Res<LocalInput>,
    latest: Res<LatestSnapshot>,
    player: Query<(&PlayerId, &Arsenal), With<Predicted>>,
    held: Res<ZoomHeld>,
    mut zoom: ResMut<ViewZoom>,
) {
    let target = match player.single() {
        Ok((id, arsenal)) if !dead_in(&latest, *id) && arsenal.switching <= 0.0 => view_zoom(
            arsenal.current.def().alt,
            input.buttons.contains(Buttons::ALT_FIRE),
            held.0,
        ),
        _ => 1.0,
    };
    let eased = zoom.0 + (target - zoom.0) * (1.0 - (-time.delta_secs() / ZOOM_EASE_SECONDS).exp());
    let next = if (eased - target).abs() < 1e-3 {
        target
    } else {
        eased
    };
    zoom.set_if_neq(ViewZoom(next));
}

fn apply_fov(
    cvars: Res<Cvars>,
    zoom: Res<ViewZoom>,
    mut cameras: Query<&mut Projection, With<MainCamera>>,
) {
    if !cvars.is_changed() && !zoom.is_changed() {
        return;
    }
    for mut projection in &mut cameras {
        if let Projection::Perspective(p) = &mut *projection {
            p.fov = (cvars.read(cvar::FOV) as f32 * zoom.0).to_radians();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_combat::WeaponKind;

    /// An app with just the camera's placement, our player standing at `now` with spawn
    /// count `count_now`, last tick at `before` with `count_before`.
    fn placed(before: Vec3, count_before: u8, now: Vec3, count_now: u8) -> Vec3 {
        let mut app = App::new();
        app.init_resource::<Time>()
            .init_resource::<Time<Fixed>>()
            .init_resource::<MoveParams>()
            .init_resource::<LocalInput>()
            .init_resource::<LatestSnapshot>()
            .init_resource::<EyeHeight>()
            .add_systems(Update, place_camera);
        let state = |pos| PlayerState { pos, ..default() };
        app.world_mut().spawn((
            Predicted,
            PlayerId(1),
            state(now),
            SpawnCount(count_now),
            PreviousState(state(before), Some(SpawnCount(count_before))),
            VisualOffset::default(),
        ));
        let camera = app
            .world_mut()
            .spawn((Transform::default(), MainCamera))
            .id();
        app.update();
        let eye = MoveParams::default().eye(false);
        app.world().get::<Transform>(camera).unwrap().translation - Vec3::Y * eye
    }

    #[test]
    fn the_camera_blends_from_the_last_tick_but_never_across_a_respawn() {
        let (old, new) = (Vec3::new(30.0, 0.0, -20.0), Vec3::new(-40.0, 0.0, 25.0));
        // Same life: the blend starts at the last tick's state (no time past it yet).
        assert!(placed(old, 3, new, 3).distance(old) < 1e-4);
        // Respawned: straight at the new spawn, not anywhere between.
        assert!(placed(old, 3, new, 4).distance(new) < 1e-4);
    }

    #[test]
    fn only_a_zooming_weapon_with_alternate_fire_held_narrows_the_view() {
        let zooming: Vec<WeaponKind> = WeaponKind::ALL
            .iter()
            .copied()
            .filter(|w| matches!(w.def().alt, AltFire::Zoom { .. }))
            .collect();
        assert!(zooming.contains(&WeaponKind::Rifle));
        for w in WeaponKind::ALL {
            let alt = w.def().alt;
            assert_eq!(zoom_share(alt, false), 1.0, "{w:?} not held");
            let held = zoom_share(alt, true);
            if zooming.contains(&w) {
                assert!(held > 0.0 && held < 1.0, "{w:?} zooms: {held}");
            } else {
                assert_eq!(held, 1.0, "{w:?} does not zoom");
            }
        }
        // `+zoom`: a zooming weapon's own sight, any other a plain closer look.
        for w in WeaponKind::ALL {
            let alt = w.def().alt;
            let expected = if zooming.contains(&w) {
                zoom_share(alt, true)
            } else {
                PLAIN_ZOOM
            };
            assert_eq!(view_zoom(alt, false, true), expected, "{w:?}");
            assert_eq!(view_zoom(alt, false, false), 1.0, "{w:?}");
        }
        let silly = AltFire::Zoom {
            spread_deg: 0.0,
            fov_scale: 0.0,
        };
        assert_eq!(zoom_share(silly, true), 0.1, "never a zero field of view");
    }
}
