//! What each weapon looks like, as a list of primitive parts: the same model is held in
//! first person (`viewmodel`) and by other players' bodies (`character`). A model points
//! down -Z with the hand at its origin; its muzzle is at [`WeaponModel::muzzle`].

use bevy::prelude::*;
use sightline_combat::WeaponKind;
use std::f32::consts::FRAC_PI_2;

/// A part's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A box of this size.
    Box(Vec3),
    /// A cylinder along Z: radius, length.
    Tube(f32, f32),
    /// A sphere of this radius.
    Ball(f32),
}

/// What a part is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Paint {
    /// Dark gun metal.
    Metal,
    /// Black grips and stocks.
    Grip,
    /// The weapon's own colour.
    Accent,
    /// Glowing in the weapon's colour.
    Glow,
}

/// One part: its shape, where its centre sits, its paint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Part {
    /// Shape.
    pub shape: Shape,
    /// Centre, in the model's space.
    pub at: Vec3,
    /// Paint.
    pub paint: Paint,
}

/// A weapon's model.
#[derive(Debug, Clone, PartialEq)]
pub struct WeaponModel {
    /// Its parts.
    pub parts: Vec<Part>,
    /// Where its shots leave.
    pub muzzle: Vec3,
    /// Its colour (the accent and the glow).
    pub accent: Color,
}

const fn part(shape: Shape, x: f32, y: f32, z: f32, paint: Paint) -> Part {
    Part {
        shape,
        at: Vec3::new(x, y, z),
        paint,
    }
}

/// The model of `weapon`.
pub fn model(weapon: WeaponKind) -> WeaponModel {
    use Paint::*;
    use Shape::*;
    match weapon {
        WeaponKind::Rifle => WeaponModel {
            parts: vec![
                part(Box(Vec3::new(0.055, 0.085, 0.4)), 0.0, 0.02, -0.12, Metal),
                part(Tube(0.013, 0.26), 0.0, 0.035, -0.44, Metal),
                part(Box(Vec3::new(0.035, 0.13, 0.06)), 0.0, -0.08, -0.15, Grip),
                part(Box(Vec3::new(0.04, 0.1, 0.05)), 0.0, -0.06, 0.02, Grip),
                part(Box(Vec3::new(0.045, 0.08, 0.2)), 0.0, 0.0, 0.17, Accent),
                part(Box(Vec3::new(0.02, 0.03, 0.08)), 0.0, 0.08, -0.1, Metal),
                part(Box(Vec3::new(0.062, 0.012, 0.22)), 0.0, 0.045, -0.16, Glow),
            ],
            muzzle: Vec3::new(0.0, 0.035, -0.59),
            accent: Color::srgb(0.85, 0.55, 0.2),
        },
        WeaponKind::Shotgun => WeaponModel {
            parts: vec![
                part(Tube(0.018, 0.5), -0.019, 0.04, -0.36, Metal),
                part(Tube(0.018, 0.5), 0.019, 0.04, -0.36, Metal),
                part(Box(Vec3::new(0.08, 0.06, 0.16)), 0.0, 0.0, -0.3, Accent),
                part(Box(Vec3::new(0.075, 0.09, 0.22)), 0.0, 0.03, -0.02, Metal),
                part(Box(Vec3::new(0.04, 0.11, 0.05)), 0.0, -0.06, 0.05, Grip),
                part(Box(Vec3::new(0.055, 0.09, 0.24)), 0.0, 0.0, 0.2, Accent),
                part(Box(Vec3::new(0.078, 0.012, 0.1)), 0.0, 0.08, -0.05, Glow),
            ],
            muzzle: Vec3::new(0.0, 0.04, -0.62),
            accent: Color::srgb(0.55, 0.3, 0.15),
        },
        WeaponKind::Rockets => WeaponModel {
            parts: vec![
                part(Tube(0.065, 0.72), 0.0, 0.06, -0.14, Accent),
                part(Tube(0.075, 0.05), 0.0, 0.06, -0.49, Glow),
                part(Tube(0.078, 0.08), 0.0, 0.06, 0.22, Metal),
                part(Box(Vec3::new(0.04, 0.12, 0.05)), 0.0, -0.05, -0.05, Grip),
                part(Box(Vec3::new(0.03, 0.05, 0.12)), 0.0, 0.15, -0.1, Metal),
            ],
            muzzle: Vec3::new(0.0, 0.06, -0.52),
            accent: Color::srgb(0.85, 0.3, 0.15),
        },
        WeaponKind::Railgun => WeaponModel {
            parts: vec![
                part(Box(Vec3::new(0.07, 0.1, 0.5)), 0.0, 0.02, -0.08, Metal),
                part(Tube(0.016, 0.5), 0.0, 0.03, -0.5, Metal),
                part(Tube(0.036, 0.025), 0.0, 0.03, -0.38, Glow),
                part(Tube(0.036, 0.025), 0.0, 0.03, -0.5, Glow),
                part(Tube(0.036, 0.025), 0.0, 0.03, -0.62, Glow),
                part(Box(Vec3::new(0.012, 0.02, 0.5)), 0.03, 0.06, -0.5, Accent),
                part(Box(Vec3::new(0.012, 0.02, 0.5)), -0.03, 0.06, -0.5, Accent),
                part(Box(Vec3::new(0.04, 0.12, 0.05)), 0.0, -0.07, 0.0, Grip),
                part(Box(Vec3::new(0.05, 0.09, 0.18)), 0.0, 0.0, 0.24, Grip),
            ],
            muzzle: Vec3::new(0.0, 0.03, -0.76),
            accent: Color::srgb(0.2, 0.75, 1.0),
        },
        WeaponKind::Plasma => WeaponModel {
            parts: vec![
                part(Box(Vec3::new(0.1, 0.11, 0.34)), 0.0, 0.02, -0.1, Accent),
                part(Tube(0.035, 0.2), 0.0, 0.1, -0.08, Glow),
                part(Tube(0.028, 0.12), 0.0, 0.02, -0.33, Metal),
                part(Box(Vec3::new(0.012, 0.012, 0.1)), 0.03, 0.05, -0.4, Metal),
                part(Box(Vec3::new(0.012, 0.012, 0.1)), -0.03, 0.05, -0.4, Metal),
                part(Box(Vec3::new(0.012, 0.012, 0.1)), 0.0, -0.01, -0.4, Metal),
                part(Ball(0.022), 0.0, 0.02, -0.42, Glow),
                part(Box(Vec3::new(0.04, 0.12, 0.05)), 0.0, -0.08, 0.0, Grip),
            ],
            muzzle: Vec3::new(0.0, 0.02, -0.46),
            accent: Color::srgb(0.55, 0.35, 1.0),
        },
    }
}

/// The mesh of a shape.
pub fn mesh(shape: Shape) -> Mesh {
    match shape {
        Shape::Box(size) => Cuboid::from_size(size).into(),
        Shape::Tube(radius, length) => Cylinder::new(radius, length).mesh().resolution(12).into(),
        Shape::Ball(radius) => Sphere::new(radius).mesh().uv(12, 8),
    }
}

/// How a shape is turned: tubes lie along Z (Bevy's cylinders stand along Y).
pub fn rotation(shape: Shape) -> Quat {
    match shape {
        Shape::Tube(..) => Quat::from_rotation_x(FRAC_PI_2),
        _ => Quat::IDENTITY,
    }
}

/// The material of a paint on a weapon of colour `accent`.
pub fn material(paint: Paint, accent: Color) -> StandardMaterial {
    match paint {
        Paint::Metal => StandardMaterial {
            base_color: Color::srgb(0.16, 0.17, 0.19),
            metallic: 0.8,
            perceptual_roughness: 0.35,
            ..default()
        },
        Paint::Grip => StandardMaterial {
            base_color: Color::srgb(0.05, 0.05, 0.055),
            perceptual_roughness: 0.8,
            ..default()
        },
        Paint::Accent => StandardMaterial {
            base_color: accent,
            metallic: 0.3,
            perceptual_roughness: 0.5,
            ..default()
        },
        Paint::Glow => StandardMaterial {
            base_color: accent,
            emissive: LinearRgba::from(accent) * 4.0,
            ..default()
        },
    }
}

/// Spawns `weapon`'s model under `parent`, its parts sharing `meshes` and `materials`
/// made here; returns nothing, the parts being children of the given entity.
pub fn spawn_parts(
    parent: &mut ChildSpawnerCommands,
    weapon: WeaponKind,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
) {
    let model = model(weapon);
    let paints: Vec<(Paint, Handle<StandardMaterial>)> =
        [Paint::Metal, Paint::Grip, Paint::Accent, Paint::Glow]
            .into_iter()
            .map(|p| (p, materials.add(material(p, model.accent))))
            .collect();
    for part in &model.parts {
        let paint = paints
            .iter()
            .find(|(p, _)| *p == part.paint)
            .map(|(_, m)| m.clone())
            .unwrap_or_default();
        parent.spawn((
            Mesh3d(meshes.add(mesh(part.shape))),
            MeshMaterial3d(paint),
            Transform::from_translation(part.at).with_rotation(rotation(part.shape)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_weapon_has_a_model_with_its_muzzle_in_front() {
        for weapon in WeaponKind::ALL {
            let m = model(weapon);
            assert!(m.parts.len() >= 4, "{weapon:?}");
            // The muzzle is the front of the model: no part reaches much past it.
            let front = m
                .parts
                .iter()
                .map(|p| {
                    let half = match p.shape {
                        Shape::Box(s) => s.z / 2.0,
                        Shape::Tube(_, l) => l / 2.0,
                        Shape::Ball(r) => r,
                    };
                    p.at.z - half
                })
                .fold(f32::MAX, f32::min);
            assert!(
                (front - m.muzzle.z).abs() < 0.05,
                "{weapon:?}: {front} vs {}",
                m.muzzle.z
            );
            assert!(m.parts.iter().any(|p| p.paint == Paint::Glow), "{weapon:?}");
        }
    }

    #[test]
    fn tubes_lie_along_z() {
        let along = rotation(Shape::Tube(0.1, 1.0)) * Vec3::Y;
        assert!(along.z.abs() > 0.999);
        assert_eq!(rotation(Shape::Box(Vec3::ONE)), Quat::IDENTITY);
    }
}
