//! A player's body, built from primitive meshes (helmeted head with a visor, torso,
//! two-part arms and legs, the weapon held), and its procedural animation: legs that
//! stride with the speed over the ground and swing the way the player moves (forward,
//! back or sideways), crouching on bent knees, tucking in the air, dipping on landing,
//! recoil when firing, the weapon lowered and raised on a switch, and a fall backwards
//! on death, with a flash at the muzzle as it fires. The maths are pure functions of a
//! [`Motion`]; `players` feeds them and moves the joints.

use crate::scene::weapon_models;
use bevy::prelude::*;
use sightline_combat::WeaponKind;
use std::f32::consts::{PI, TAU};

/// Metres covered in one full stride (both legs).
pub const STRIDE: f32 = 1.8;
/// Largest swing of a leg from upright, radians.
const MAX_SWING: f32 = 0.6;
/// Length of the thigh and of the shin, metres.
pub const THIGH: f32 = 0.45;
/// Length of the shin, metres.
pub const SHIN: f32 = 0.45;
/// How far the hips drop when fully crouched, metres.
pub const CROUCH_DROP: f32 = 0.42;
/// Seconds a landing's dip lasts.
const LAND_SECONDS: f32 = 0.3;
/// Seconds a shot's recoil lasts.
const RECOIL_SECONDS: f32 = 0.18;
/// Seconds a muzzle flash shows.
pub const FLASH_SECONDS: f32 = 0.06;
/// Seconds a death's fall takes.
const FALL_SECONDS: f32 = 0.6;

/// What the animation is driven by: a player's movement and actions as last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Motion {
    /// Horizontal speed over the ground, m/s.
    pub speed: f32,
    /// The way it moves in its own frame: x right, y forward (unit, or zero standing).
    pub heading: Vec2,
    /// Stride phase, 0 to 1.
    pub phase: f32,
    /// How crouched, 0 standing to 1 crouched (eased).
    pub crouch: f32,
    /// Off the ground.
    pub airborne: bool,
    /// Seconds since it last landed.
    pub since_land: f32,
    /// Seconds since it last fired.
    pub since_fire: f32,
    /// Seconds since it began a weapon switch, and the switch's length.
    pub since_switch: f32,
    /// The switch's length, seconds.
    pub switch_time: f32,
    /// Seconds since it died, while dead.
    pub since_death: Option<f32>,
    /// View pitch, radians (positive looks up).
    pub pitch: f32,
}

impl Default for Motion {
    fn default() -> Self {
        Self {
            speed: 0.0,
            heading: Vec2::ZERO,
            phase: 0.0,
            crouch: 0.0,
            airborne: false,
            since_land: LAND_SECONDS,
            since_fire: RECOIL_SECONDS,
            since_switch: 1.0,
            switch_time: 0.35,
            since_death: None,
            pitch: 0.0,
        }
    }
}

/// The stride phase after moving at `speed` for `dt` seconds.
pub fn advance_phase(phase: f32, speed: f32, dt: f32) -> f32 {
    (phase + speed.max(0.0) * dt / STRIDE).rem_euclid(1.0)
}

/// How far the legs swing at `speed`, radians: none standing, growing to [`MAX_SWING`]
/// at a run (`run_speed`).
pub fn swing_amount(speed: f32, run_speed: f32) -> f32 {
    if speed < 0.3 {
        return 0.0;
    }
    (speed / run_speed.max(0.1)).min(1.2) * MAX_SWING
}

/// The hip and knee angles (radians, the knee bending back) that lower the hips by
/// `drop` metres with the foot kept under the hip.
pub fn crouch_angles(drop: f32) -> (f32, f32) {
    // Equal thigh and shin: the hip sits 2 L cos(a) above the foot.
    let legs = THIGH + SHIN;
    let cos = ((legs - drop.clamp(0.0, legs * 0.9)) / legs).clamp(-1.0, 1.0);
    let hip = cos.acos();
    (hip, 2.0 * hip)
}

/// Extra drop of the hips after a landing, metres: sharp at once, gone by
/// [`LAND_SECONDS`].
pub fn land_dip(since_land: f32) -> f32 {
    let left = (1.0 - since_land / LAND_SECONDS).clamp(0.0, 1.0);
    0.12 * left * left
}

/// The weapon's kick after a shot, 0 to 1: full at once, easing back.
pub fn recoil(since_fire: f32) -> f32 {
    let left = (1.0 - since_fire / RECOIL_SECONDS).clamp(0.0, 1.0);
    left * left
}

/// How lowered the weapon is during a switch, 0 to 1: down over the first half, back up
/// over the second.
pub fn switch_lower(since_switch: f32, switch_time: f32) -> f32 {
    let t = since_switch / switch_time.max(0.01);
    if (0.0..1.0).contains(&t) {
        (t * PI).sin()
    } else {
        0.0
    }
}

/// How far the body has fallen backwards after death, radians: speeding up like a
/// toppling post, flat at a quarter turn.
pub fn death_fall(since_death: f32) -> f32 {
    let t = (since_death / FALL_SECONDS).clamp(0.0, 1.0);
    t * t * PI / 2.0
}

/// Joint angles for one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// How far the hips sit below standing, metres.
    pub hip_drop: f32,
    /// Forward lean of the torso, radians.
    pub lean: f32,
    /// Each leg's turn at the hip (left, right).
    pub hips: [Quat; 2],
    /// Each knee's bend, radians, about the hip's swing axis.
    pub knees: [Quat; 2],
    /// The weapon's pitch (the aim, less a switch's lowering, plus recoil).
    pub aim_pitch: f32,
    /// How far the weapon is pulled back by recoil, metres.
    pub kick: f32,
    /// The whole body's fall backwards, radians.
    pub fall: f32,
}

/// The pose for `motion` with `run_speed` the speed of a full run.
pub fn pose(motion: &Motion, run_speed: f32) -> Pose {
    let swing = if motion.airborne {
        0.0
    } else {
        swing_amount(motion.speed, run_speed)
    };
    // Legs swing in the plane of movement: about the axis across it (model front is -Z).
    let moving = Vec3::new(motion.heading.x, 0.0, -motion.heading.y);
    let axis = Vec3::Y.cross(moving).try_normalize().unwrap_or(Vec3::NEG_X);
    let wave = (motion.phase * TAU).sin();
    let forward_going = (motion.phase * TAU).cos();
    // A leg bends its knee while it swings forward (recovering), straight while planted.
    let knee_of = |side: f32| swing * 1.3 * (-forward_going * side).max(0.0);
    let hip_drop_crouch = CROUCH_DROP * motion.crouch;
    let (crouch_hip, crouch_knee) = crouch_angles(hip_drop_crouch);
    // In the air the legs tuck; crouching bends them toward the front (knees forward).
    let tuck = if motion.airborne { 0.5 } else { 0.0 };
    let bend_hip = crouch_hip + tuck;
    let bend_knee = crouch_knee + tuck * 1.6;
    let leg = |side: f32| {
        Quat::from_axis_angle(axis, swing * wave * side) * Quat::from_rotation_x(bend_hip)
    };
    let knee =
        |side: f32| Quat::from_rotation_x(-bend_knee) * Quat::from_axis_angle(axis, knee_of(side));
    let lower = switch_lower(motion.since_switch, motion.switch_time);
    let kick = recoil(motion.since_fire);
    Pose {
        hip_drop: hip_drop_crouch
            + land_dip(motion.since_land)
            // A little bounce in each step.
            + swing * 0.05 * (motion.phase * TAU * 2.0).cos().abs(),
        lean: 0.35 * motion.crouch + 0.1 * (swing / MAX_SWING) * motion.heading.y,
        hips: [leg(1.0), leg(-1.0)],
        knees: [knee(1.0), knee(-1.0)],
        aim_pitch: motion.pitch.clamp(-1.3, 1.3) - lower * 0.9 + kick * 0.25,
        kick: kick * 0.08,
        fall: motion.since_death.map_or(0.0, death_fall),
    }
}

/// The joints of one body, for the animation to turn.
#[derive(Component, Debug, Clone)]
pub struct Rig {
    /// Everything above the feet: falls on death.
    pub body: Entity,
    /// The hips: drop when crouching.
    pub pelvis: Entity,
    /// The torso: leans.
    pub torso: Entity,
    /// The shoulders' pivot: turns with the aim; holds the arms and weapon.
    pub aim: Entity,
    /// Where the weapon sits on the aim pivot: kicks back.
    pub hand: Entity,
    /// The left and right hip joints.
    pub hips: [Entity; 2],
    /// The left and right knee joints.
    pub knees: [Entity; 2],
    /// One model per weapon, in [`WeaponKind::ALL`] order, under the hand, each with
    /// its muzzle flash.
    pub weapons: Vec<(WeaponKind, Entity, Entity)>,
}

/// Height of the hip joints over the feet, standing.
pub const HIP_HEIGHT: f32 = THIGH + SHIN + 0.02;
/// Height of the aim pivot (the shoulders) over the hips.
const SHOULDERS_OVER_HIPS: f32 = 0.5;

/// The materials of one body: `clothes` in the player's colour (recoloured for teams).
pub struct BodyPaint {
    /// Torso, upper arms, helmet.
    pub clothes: Handle<StandardMaterial>,
    /// Trousers and boots.
    pub dark: Handle<StandardMaterial>,
    /// The visor.
    pub visor: Handle<StandardMaterial>,
}

/// Builds a body under `root` (placed at the feet, facing -Z): returns its [`Rig`].
pub fn build_body(
    commands: &mut Commands,
    root: Entity,
    paint: &BodyPaint,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
) -> Rig {
    let mut mesh = |m: Mesh| meshes.add(m);
    let limb = |radius: f32, length: f32| -> Mesh { Capsule3d::new(radius, length).into() };
    let part = |commands: &mut Commands,
                parent: Entity,
                mesh: Handle<Mesh>,
                material: &Handle<StandardMaterial>,
                at: Vec3| {
        commands
            .spawn((
                Mesh3d(mesh),
                MeshMaterial3d(material.clone()),
                Transform::from_translation(at),
                ChildOf(parent),
            ))
            .id()
    };
    let pivot = |commands: &mut Commands, parent: Entity, at: Vec3| {
        commands
            .spawn((
                Transform::from_translation(at),
                Visibility::default(),
                ChildOf(parent),
            ))
            .id()
    };
    let body = pivot(commands, root, Vec3::ZERO);
    let pelvis = pivot(commands, body, Vec3::Y * HIP_HEIGHT);
    let hips_mesh = mesh(Cuboid::new(0.34, 0.16, 0.2).into());
    part(commands, pelvis, hips_mesh, &paint.dark, Vec3::ZERO);
    // Legs: thigh from the hip joint, shin from the knee, a boot at the foot.
    let thigh_mesh = mesh(limb(0.075, THIGH - 0.15));
    let shin_mesh = mesh(limb(0.065, SHIN - 0.13));
    let boot_mesh = mesh(Cuboid::new(0.12, 0.08, 0.24).into());
    let mut hips = [Entity::PLACEHOLDER; 2];
    let mut knees = [Entity::PLACEHOLDER; 2];
    for (i, x) in [-0.1f32, 0.1].into_iter().enumerate() {
        let hip = pivot(commands, pelvis, Vec3::new(x, -0.02, 0.0));
        part(
            commands,
            hip,
            thigh_mesh.clone(),
            &paint.dark,
            Vec3::Y * -THIGH / 2.0,
        );
        let knee = pivot(commands, hip, Vec3::Y * -THIGH);
        part(
            commands,
            knee,
            shin_mesh.clone(),
            &paint.dark,
            Vec3::Y * -SHIN / 2.0,
        );
        part(
            commands,
            knee,
            boot_mesh.clone(),
            &paint.dark,
            Vec3::new(0.0, -SHIN + 0.02, -0.05),
        );
        hips[i] = hip;
        knees[i] = knee;
    }
    // Torso, leaning from the hips, with the head on top.
    let torso = pivot(commands, pelvis, Vec3::Y * 0.06);
    let chest = mesh(Cuboid::new(0.42, 0.48, 0.24).into());
    part(commands, torso, chest, &paint.clothes, Vec3::Y * 0.26);
    let belt = mesh(Cuboid::new(0.36, 0.06, 0.22).into());
    part(commands, torso, belt, &paint.dark, Vec3::Y * 0.02);
    let helmet = mesh(Sphere::new(0.14).mesh().uv(16, 10));
    part(
        commands,
        torso,
        helmet,
        &paint.clothes,
        Vec3::new(0.0, 0.66, 0.0),
    );
    let visor = mesh(Cuboid::new(0.2, 0.06, 0.06).into());
    part(
        commands,
        torso,
        visor,
        &paint.visor,
        Vec3::new(0.0, 0.67, -0.115),
    );
    let neck = mesh(Cylinder::new(0.06, 0.1).into());
    part(commands, torso, neck, &paint.dark, Vec3::Y * 0.53);
    // The aim pivot at the shoulders carries the arms and the weapon.
    let aim = pivot(commands, torso, Vec3::Y * SHOULDERS_OVER_HIPS);
    let hand = pivot(commands, aim, HAND_REST);
    let upper = mesh(limb(0.06, 0.2));
    let fore = mesh(limb(0.05, 0.18));
    // Arms reach from the shoulders to the grip (right) and the fore-end (left).
    for (shoulder, grip) in [
        (Vec3::new(0.25, 0.0, 0.0), Vec3::new(0.12, -0.2, -0.3)),
        (Vec3::new(-0.25, 0.0, 0.0), Vec3::new(0.08, -0.14, -0.52)),
    ] {
        let elbow =
            shoulder + (grip - shoulder) * 0.45 + Vec3::new(shoulder.x.signum() * 0.06, -0.1, 0.0);
        for (from, to, m, material) in [
            (shoulder, elbow, upper.clone(), &paint.clothes),
            (elbow, grip, fore.clone(), &paint.dark),
        ] {
            let dir = (to - from).normalize_or(Vec3::NEG_Y);
            commands.spawn((
                Mesh3d(m),
                MeshMaterial3d(material.clone()),
                Transform::from_translation((from + to) / 2.0)
                    .with_rotation(Quat::from_rotation_arc(Vec3::Y, dir)),
                ChildOf(aim),
            ));
        }
    }
    let flash_mesh = meshes.add(Sphere::new(0.06).mesh().ico(1).expect("a small ico sphere"));
    // Unlit: the colour shows as it is, bright enough to bloom.
    let flash_material = materials.add(StandardMaterial {
        base_color: Color::linear_rgb(20.0, 12.0, 4.0),
        unlit: true,
        ..default()
    });
    let weapons = WeaponKind::ALL
        .into_iter()
        .map(|w| {
            let model = commands
                .spawn((Transform::default(), Visibility::Hidden, ChildOf(hand)))
                .with_children(|p| weapon_models::spawn_parts(p, w, meshes, materials))
                .id();
            let flash = commands
                .spawn((
                    Mesh3d(flash_mesh.clone()),
                    MeshMaterial3d(flash_material.clone()),
                    Transform::from_translation(weapon_models::model(w).muzzle),
                    Visibility::Hidden,
                    bevy::light::NotShadowCaster,
                    ChildOf(model),
                ))
                .id();
            (w, model, flash)
        })
        .collect();
    Rig {
        body,
        pelvis,
        torso,
        aim,
        hand,
        hips,
        knees,
        weapons,
    }
}

/// The hand's resting place on the aim pivot.
pub const HAND_REST: Vec3 = Vec3::new(0.12, -0.14, -0.32);
/// Where the hips' pivot sits standing.
pub const PELVIS_REST: Vec3 = Vec3::new(0.0, HIP_HEIGHT, 0.0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stride_follows_the_speed_over_the_ground() {
        assert_eq!(advance_phase(0.25, 0.0, 1.0), 0.25, "standing still");
        // One stride's length at any speed is one cycle.
        let mut phase = 0.0;
        for _ in 0..100 {
            phase = advance_phase(phase, 6.0, STRIDE / 6.0 / 100.0);
        }
        assert!(!(1e-3..=1.0 - 1e-3).contains(&phase), "{phase}");
        assert!(
            (advance_phase(0.9, STRIDE, 0.2) - 0.1).abs() < 1e-5,
            "wraps"
        );
        assert!((0.0..1.0).contains(&advance_phase(0.5, -3.0, 1.0)));
    }

    #[test]
    fn legs_swing_more_the_faster_and_not_at_all_standing() {
        assert_eq!(swing_amount(0.0, 7.0), 0.0);
        assert_eq!(swing_amount(0.2, 7.0), 0.0);
        assert!(swing_amount(3.0, 7.0) < swing_amount(7.0, 7.0));
        assert_eq!(swing_amount(7.0, 7.0), MAX_SWING);
        assert!(swing_amount(100.0, 7.0) <= MAX_SWING * 1.2 + 1e-6);
    }

    #[test]
    fn crouching_bends_the_knees_to_lower_the_hips() {
        assert_eq!(crouch_angles(0.0), (0.0, 0.0));
        let (hip, knee) = crouch_angles(CROUCH_DROP);
        assert!((knee - 2.0 * hip).abs() < 1e-6);
        // The bent leg's height is what was asked for.
        let height = THIGH * hip.cos() + SHIN * (knee - hip).cos();
        assert!(
            (THIGH + SHIN - height - CROUCH_DROP).abs() < 1e-4,
            "{height}"
        );
        let m = Motion {
            crouch: 1.0,
            ..default()
        };
        let p = pose(&m, 7.0);
        assert!((p.hip_drop - CROUCH_DROP).abs() < 1e-5);
        assert!(p.lean > 0.0);
    }

    #[test]
    fn landing_dips_then_recovers() {
        assert!(land_dip(0.0) > 0.1);
        assert!(land_dip(0.1) < land_dip(0.0));
        assert_eq!(land_dip(LAND_SECONDS), 0.0);
        assert_eq!(land_dip(5.0), 0.0);
    }

    #[test]
    fn recoil_switch_and_death_curves() {
        assert_eq!(recoil(0.0), 1.0);
        assert_eq!(recoil(RECOIL_SECONDS), 0.0);
        assert!(switch_lower(0.175, 0.35) > 0.99, "lowest halfway");
        assert_eq!(switch_lower(0.0, 0.35), 0.0);
        assert_eq!(switch_lower(0.5, 0.35), 0.0, "up again after");
        assert_eq!(death_fall(0.0), 0.0);
        assert!(death_fall(0.3) < PI / 4.0, "speeding up");
        assert!((death_fall(2.0) - PI / 2.0).abs() < 1e-6);
    }

    #[test]
    fn running_swings_the_legs_opposite_and_sideways_when_strafing() {
        let run = Motion {
            speed: 7.0,
            heading: Vec2::Y,
            phase: 0.25,
            ..default()
        };
        let p = pose(&run, 7.0);
        let foot = |q: Quat| q * Vec3::NEG_Y;
        // Forward running: feet apart along Z, opposite ways.
        let (l, r) = (foot(p.hips[0]), foot(p.hips[1]));
        assert!(l.z * r.z < 0.0 && l.z.abs() > 0.3, "{l} {r}");
        assert!(l.x.abs() < 1e-4);
        let strafe = Motion {
            heading: Vec2::X,
            ..run
        };
        let p = pose(&strafe, 7.0);
        let (l, r) = (foot(p.hips[0]), foot(p.hips[1]));
        assert!(l.x * r.x < 0.0 && l.x.abs() > 0.3, "{l} {r}");
        // Standing: legs straight down.
        let p = pose(&Motion::default(), 7.0);
        assert!(foot(p.hips[0]).distance(Vec3::NEG_Y) < 1e-5);
    }
}
