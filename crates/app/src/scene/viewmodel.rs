//! The weapon in our hands, in first person: one model per weapon
//! ([`crate::scene::weapon_models`]) under the camera, the one in hand shown, moved by the
//! view: a bob in step with our stride, a sway that lags behind the mouse, a dip on
//! landing, recoil on each shot, a tilt down and back up through a reload, lowered and
//! raised on a switch, drawn in toward the middle while zoomed, a muzzle flash with its
//! light and a wisp of smoke, and the railgun's charge glowing at its muzzle.

use crate::MainCamera;
use crate::camera::ViewZoom;
use crate::scene::character::{advance_phase, land_dip};
use crate::scene::materials::small_sphere;
use crate::scene::particles::Emit;
use crate::scene::weapon_models::{self, model};
use crate::view::killcam::Killcam;
use bevy::prelude::*;
use sightline_client::{CombatCue, LatestSnapshot, dead_in};
use sightline_combat::{Arsenal, WeaponKind};
use sightline_movement::{MoveParams, PlayerState};
use sightline_prediction::Predicted;
use sightline_sim::{PlayerId, SessionAppExt};
use std::f32::consts::{PI, TAU};

/// Where the hand rests in the camera's space.
const HAND: Vec3 = Vec3::new(0.12, -0.12, -0.27);
/// Where it moves while fully zoomed: in toward the middle.
const HAND_ZOOMED: Vec3 = Vec3::new(0.03, -0.08, -0.27);
/// The models' scale in view: full size would fill half the screen at arm's length.
const VIEW_SCALE: f32 = 0.5;
/// How long our muzzle flash shows, seconds.
const FLASH_SECONDS: f32 = 0.05;

/// The weapon models' root, under the camera.
#[derive(Component)]
struct HeldWeapon;

/// One weapon's model under the root.
#[derive(Component)]
struct WeaponView(WeaponKind);

/// The muzzle flash.
#[derive(Component)]
struct MuzzleFlashView;

/// The railgun's charge at its muzzle.
#[derive(Component)]
struct ChargeGlow;

/// What moves the weapon, kept between frames.
#[derive(Resource, Debug)]
struct Handling {
    /// Stride phase of the bob.
    phase: f32,
    /// How much the bob shows, eased with our speed.
    bob: f32,
    /// The sway's offset, eased toward where the mouse pulls it.
    sway: Vec2,
    /// Our view last frame.
    last_view: Option<(f32, f32)>,
    /// On the ground last frame.
    grounded: bool,
    /// Seconds since we landed, fired.
    since_land: f32,
    since_fire: f32,
    /// The weapon that fired last.
    fired: WeaponKind,
}

impl Default for Handling {
    fn default() -> Self {
        Self {
            phase: 0.0,
            bob: 0.0,
            sway: Vec2::ZERO,
            last_view: None,
            grounded: true,
            since_land: 1.0,
            since_fire: 1.0,
            fired: WeaponKind::Rifle,
        }
    }
}

/// Draws our weapon.
pub struct ViewModelPlugin;

impl Plugin for ViewModelPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<Handling>().add_systems(
            Update,
            (
                build_view_models,
                (note_own_shots, handle_weapon, show_flash_and_charge).chain(),
            ),
        );
    }
}

/// The bob's offset at stride `phase` with `amount` (0 standing to 1 at a run): side to
/// side once a stride, up and down twice.
pub fn bob_offset(phase: f32, amount: f32) -> Vec3 {
    let a = amount.clamp(0.0, 1.5);
    Vec3::new(
        (phase * TAU).sin() * 0.012 * a,
        -(phase * TAU).cos().abs() * 0.01 * a,
        0.0,
    )
}

/// Where the sway pulls the weapon for a turn of `d_yaw` and `d_pitch` radians over `dt`
/// seconds: against the turn, bounded.
pub fn sway_target(d_yaw: f32, d_pitch: f32, dt: f32) -> Vec2 {
    if dt <= 0.0 {
        return Vec2::ZERO;
    }
    (Vec2::new(d_yaw, -d_pitch) / dt * 0.006).clamp(Vec2::splat(-0.03), Vec2::splat(0.03))
}

/// How hard each weapon kicks: back (metres) and up (radians), and how long it lasts.
pub fn kick_of(weapon: WeaponKind) -> (f32, f32, f32) {
    match weapon {
        WeaponKind::Rifle => (0.025, 0.04, 0.09),
        WeaponKind::Shotgun => (0.07, 0.16, 0.3),
        WeaponKind::Rockets => (0.08, 0.1, 0.35),
        WeaponKind::Railgun => (0.09, 0.14, 0.45),
        WeaponKind::Plasma => (0.015, 0.02, 0.07),
    }
}

/// The share (0 to 1) of a kick lasting `length` left `since` seconds after the shot.
pub fn kick_share(since: f32, length: f32) -> f32 {
    let left = (1.0 - since / length.max(1e-3)).clamp(0.0, 1.0);
    left * left * (3.0 - 2.0 * left)
}

/// A reload's lowering (metres) and roll (radians) at `progress` (0 to 1): down and
/// tilted in the middle, back at the ends.
pub fn reload_pose(progress: f32) -> (f32, f32) {
    let p = progress.clamp(0.0, 1.0);
    let arc = (p * PI).sin();
    (0.1 * arc, 0.7 * arc)
}

/// How far the weapon is lowered while being brought up, `left` seconds of a
/// `switch_time` switch to go: all the way down at the start.
pub fn switch_drop(left: f32, switch_time: f32) -> f32 {
    let share = (left / switch_time.max(1e-3)).clamp(0.0, 1.0);
    0.3 * share * share
}

/// The models, once the camera is there: one per weapon, hidden until in hand.
fn build_view_models(
    mut commands: Commands,
    cameras: Query<Entity, Added<MainCamera>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for camera in &cameras {
        let root = commands
            .spawn((
                HeldWeapon,
                Transform::from_translation(HAND).with_scale(Vec3::splat(VIEW_SCALE)),
                Visibility::Hidden,
                ChildOf(camera),
            ))
            .id();
        for weapon in WeaponKind::ALL {
            commands
                .spawn((
                    WeaponView(weapon),
                    Transform::default(),
                    Visibility::Hidden,
                    ChildOf(root),
                ))
                .with_children(|p| {
                    weapon_models::spawn_parts(p, weapon, &mut meshes, &mut materials);
                });
        }
        commands.spawn((
            MuzzleFlashView,
            Mesh3d(meshes.add(small_sphere(0.04))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: Color::linear_rgb(30.0, 18.0, 6.0),
                unlit: true,
                alpha_mode: AlphaMode::Add,
                ..default()
            })),
            PointLight {
                color: Color::srgb(1.0, 0.8, 0.5),
                intensity: 60_000.0,
                range: 7.0,
                ..default()
            },
            Transform::default(),
            Visibility::Hidden,
            bevy::light::NotShadowCaster,
            ChildOf(root),
        ));
        commands.spawn((
            ChargeGlow,
            Mesh3d(meshes.add(small_sphere(0.03))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: Color::linear_rgb(2.0, 9.0, 18.0),
                unlit: true,
                alpha_mode: AlphaMode::Add,
                ..default()
            })),
            Transform::default(),
            Visibility::Hidden,
            bevy::light::NotShadowCaster,
            ChildOf(root),
        ));
    }
}

/// Our own (predicted) shots kick the weapon and light the muzzle.
fn note_own_shots(mut cues: MessageReader<CombatCue>, mut handling: ResMut<Handling>) {
    for cue in cues.read() {
        if let CombatCue::Fired {
            weapon, own: true, ..
        } = *cue
        {
            handling.since_fire = 0.0;
            handling.fired = weapon;
        }
    }
}

/// Shows the weapon in hand and moves it: bob, sway, landing, recoil, reload, switch and
/// zoom; during the killcam, the killer's.
#[allow(clippy::too_many_arguments)]
fn handle_weapon(
    time: Res<Time>,
    real: Res<Time<Real>>,
    killcam: Res<Killcam>,
    params: Res<MoveParams>,
    latest: Res<LatestSnapshot>,
    zoom: Option<Res<ViewZoom>>,
    mut handling: ResMut<Handling>,
    player: Query<(&PlayerId, &PlayerState, &Arsenal), With<Predicted>>,
    mut root: Query<(&mut Transform, &mut Visibility), With<HeldWeapon>>,
    mut views: Query<(&WeaponView, &mut Visibility), Without<HeldWeapon>>,
) {
    let Ok((mut transform, mut visibility)) = root.single_mut() else {
        return;
    };
    // The killcam looks through the killer's eyes: their weapon, held still.
    if let Some(weapon) = killcam.killer_weapon(real.elapsed_secs_f64()) {
        visibility.set_if_neq(Visibility::Inherited);
        for (view, mut v) in &mut views {
            v.set_if_neq(if view.0 == weapon {
                Visibility::Inherited
            } else {
                Visibility::Hidden
            });
        }
        *transform = Transform::from_translation(HAND);
        return;
    }
    let Ok((id, state, arsenal)) = player.single() else {
        visibility.set_if_neq(Visibility::Hidden);
        return;
    };
    if dead_in(&latest, *id) {
        visibility.set_if_neq(Visibility::Hidden);
        return;
    }
    visibility.set_if_neq(Visibility::Inherited);
    for (view, mut v) in &mut views {
        v.set_if_neq(if view.0 == arsenal.current {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
    }
    let dt = time.delta_secs();
    let h = &mut *handling;
    // Bob with the stride while on the ground.
    let speed = Vec2::new(state.vel.x, state.vel.z).length();
    let grounded = state.on_ground();
    h.phase = advance_phase(h.phase, speed, dt);
    let target = if grounded {
        speed / params.run_speed.max(0.1)
    } else {
        0.0
    };
    h.bob += (target - h.bob) * (1.0 - (-dt / 0.1).exp());
    if grounded && !h.grounded {
        h.since_land = 0.0;
    }
    h.grounded = grounded;
    h.since_land += dt;
    h.since_fire += dt;
    // Sway against the turn.
    let view = (state.yaw, state.pitch);
    let pull = h.last_view.map_or(Vec2::ZERO, |(yaw, pitch)| {
        let d_yaw = (view.0 - yaw + PI).rem_euclid(TAU) - PI;
        sway_target(d_yaw, view.1 - pitch, dt)
    });
    h.last_view = Some(view);
    h.sway += (pull - h.sway) * (1.0 - (-dt / 0.08).exp());
    let (back, up, length) = kick_of(h.fired);
    let kick = kick_share(h.since_fire, length);
    let def = arsenal.current.def();
    let (reload_drop, reload_roll) = if arsenal.reloading > 0.0 {
        reload_pose(1.0 - arsenal.reloading / def.reload_time.max(1e-3))
    } else {
        (0.0, 0.0)
    };
    let zoomed = zoom.map_or(0.0, |z| ((1.0 - z.0) * 3.0).clamp(0.0, 1.0));
    let rest = HAND.lerp(HAND_ZOOMED, zoomed);
    let drop = land_dip(h.since_land) * 0.4
        + reload_drop
        + switch_drop(arsenal.switching, def.switch_time);
    transform.translation = rest
        + bob_offset(h.phase, h.bob * (1.0 - zoomed * 0.8))
        + Vec3::new(h.sway.x, h.sway.y - drop, back * kick);
    transform.rotation = Quat::from_euler(
        EulerRot::YXZ,
        h.sway.x * 2.0,
        up * kick - reload_drop * 2.0,
        reload_roll,
    );
}

/// The flash shows briefly at the weapon's muzzle after each shot, smoking; the
/// railgun's charge grows there while its trigger is held.
fn show_flash_and_charge(
    handling: Res<Handling>,
    player: Query<&Arsenal, With<Predicted>>,
    mut flash: Query<
        (&mut Transform, &mut Visibility, &GlobalTransform),
        (With<MuzzleFlashView>, Without<ChargeGlow>),
    >,
    mut charge: Query<(&mut Transform, &mut Visibility), With<ChargeGlow>>,
    mut emit: MessageWriter<Emit>,
    mut smoked: Local<bool>,
) {
    let Ok(arsenal) = player.single() else {
        return;
    };
    let muzzle = model(arsenal.current).muzzle;
    if let Ok((mut t, mut v, at)) = flash.single_mut() {
        t.translation = muzzle + Vec3::NEG_Z * 0.03;
        let on = handling.since_fire < FLASH_SECONDS;
        v.set_if_neq(if on {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
        if on && !*smoked {
            emit.write(Emit::muzzle_smoke(at.translation(), at.forward().into()));
        }
        *smoked = on;
    }
    if let Ok((mut t, mut v)) = charge.single_mut() {
        let time = arsenal.current.def().charge_time;
        let share = if time > 0.0 {
            (arsenal.charge / time).clamp(0.0, 1.0)
        } else {
            0.0
        };
        t.translation = muzzle;
        t.scale = Vec3::splat(0.3 + share * 1.2);
        v.set_if_neq(if share > 0.0 {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bob_is_still_when_standing_and_bounded_running() {
        assert_eq!(bob_offset(0.3, 0.0), Vec3::ZERO);
        for i in 0..50 {
            let o = bob_offset(i as f32 / 50.0, 1.0);
            assert!(o.x.abs() <= 0.012 + 1e-6 && o.y <= 0.0 && o.y >= -0.01 - 1e-6);
        }
        // Up and down twice a stride: the same height half a stride apart.
        assert!((bob_offset(0.1, 1.0).y - bob_offset(0.6, 1.0).y).abs() < 1e-6);
    }

    #[test]
    fn sway_pulls_against_the_turn_and_is_bounded() {
        let right = sway_target(-0.01, 0.0, 0.016);
        assert!(
            right.x < 0.0,
            "turning right (yaw falls) pulls the weapon left: {right}"
        );
        let fast = sway_target(10.0, 10.0, 0.016);
        assert_eq!(fast.abs().max_element(), 0.03);
        assert_eq!(sway_target(1.0, 1.0, 0.0), Vec2::ZERO);
    }

    #[test]
    fn kicks_fade_and_heavier_weapons_kick_harder() {
        for w in WeaponKind::ALL {
            let (_, _, length) = kick_of(w);
            assert_eq!(kick_share(0.0, length), 1.0);
            assert_eq!(kick_share(length, length), 0.0);
            assert!(kick_share(length * 0.5, length) < 1.0);
        }
        assert!(kick_of(WeaponKind::Railgun).0 > kick_of(WeaponKind::Rifle).0);
    }

    #[test]
    fn reloads_and_switches_lower_the_weapon_and_bring_it_back() {
        assert_eq!(reload_pose(0.0).0, 0.0);
        assert!(reload_pose(1.0).0.abs() < 1e-6);
        assert!(reload_pose(0.5).0 > 0.09);
        assert!(reload_pose(0.5).1 > 0.5);
        assert_eq!(switch_drop(0.0, 0.35), 0.0);
        assert!((switch_drop(0.35, 0.35) - 0.3).abs() < 1e-6);
        assert!(switch_drop(0.1, 0.35) < switch_drop(0.2, 0.35));
    }
}
