//! Short-lived sights of combat: projectiles in flight (rockets trailing smoke, plasma
//! bolts trailing glow), explosions (a flash of light, a fireball, sparks and smoke, a
//! scorch on the nearest surface), tracers for hitscan shots with sparks and a bullet
//! hole where they strike, and the railgun's lingering beam. Particles and marks are
//! [`crate::scene::particles`]'s; this module says when and where.

use crate::scene::materials::small_sphere;
use crate::scene::particles::{Emit, Mark};
use crate::view::killcam::Killcam;
use bevy::prelude::*;
use sightline_client::{CombatCue, LatestSnapshot};
use sightline_combat::{ProjectileKind, WeaponKind};
use sightline_interpolation::DrawnProjectiles;
use sightline_map::CurrentMap;
use sightline_sim::{EndSession, despawn_all};

/// A projectile in flight, by projectile number, and what it is.
#[derive(Component)]
struct ProjectileVisual {
    id: u16,
    kind: ProjectileKind,
}

/// A short-lived effect (flash, tracer, beam), removed when its time is up. A beam with
/// a `width` narrows to nothing as it goes; a flash of `light` (its intensity) dims.
#[derive(Component)]
struct Effect {
    born: f64,
    until: f64,
    width: Option<f32>,
    light: Option<f32>,
}

/// Shared meshes and materials for effects, made once.
#[derive(Resource)]
struct EffectAssets {
    rocket: Handle<Mesh>,
    rocket_material: Handle<StandardMaterial>,
    plasma: Handle<Mesh>,
    plasma_material: Handle<StandardMaterial>,
    beam: Handle<Mesh>,
    tracer_material: Handle<StandardMaterial>,
    rail_material: Handle<StandardMaterial>,
}

/// Draws combat effects.
pub struct EffectsPlugin;

impl Plugin for EffectsPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Startup, make_effect_assets)
            .add_systems(
                Update,
                (
                    draw_projectiles.after(crate::view::killcam::KillcamSet),
                    spawn_effects,
                    age_effects,
                )
                    .run_if(resource_exists::<EffectAssets>),
            )
            .add_systems(
                EndSession,
                (despawn_all::<ProjectileVisual>, despawn_all::<Effect>),
            );
    }
}

fn make_effect_assets(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    // Unlit materials show their base colour as it is: above 1, they glow and bloom.
    let glowing = |color: LinearRgba| StandardMaterial {
        base_color: Color::LinearRgba(color),
        unlit: true,
        ..default()
    };
    commands.insert_resource(EffectAssets {
        rocket: meshes.add(Capsule3d::new(0.07, 0.3)),
        rocket_material: materials.add(glowing(LinearRgba::rgb(10.0, 4.0, 0.8))),
        plasma: meshes.add(small_sphere(0.1)),
        plasma_material: materials.add(glowing(LinearRgba::rgb(2.0, 6.0, 16.0))),
        // A unit cylinder along Y, stretched along each shot.
        beam: meshes.add(Cylinder::new(0.5, 1.0)),
        tracer_material: materials.add(glowing(LinearRgba::rgb(6.0, 5.0, 2.0))),
        rail_material: materials.add(StandardMaterial {
            base_color: Color::linear_rgb(2.0, 8.0, 16.0),
            unlit: true,
            alpha_mode: AlphaMode::Add,
            ..default()
        }),
    });
}

/// What projectile number `id` is, from the newest snapshot (a rocket if unknown).
fn projectile_kind(latest: &LatestSnapshot, id: u16) -> ProjectileKind {
    latest
        .0
        .as_ref()
        .and_then(|s| s.projectiles.iter().find(|p| p.id == id))
        .map_or(ProjectileKind::Rocket, |p| p.kind)
}

/// The transform of a beam from `from` along unit `dir` for `length` metres, `width` wide.
fn beam_transform(from: Vec3, dir: Vec3, length: f32, width: f32) -> Transform {
    Transform::from_translation(from + dir * length * 0.5)
        .with_rotation(Quat::from_rotation_arc(Vec3::Y, dir))
        .with_scale(Vec3::new(width, length, width))
}

/// Projectiles where interpolation (or the killcam's replay) draws them, in step with the
/// players around them, each leaving its trail. When the killcam starts or ends, those
/// drawn are dropped and drawn afresh: a trail never joins the replay to the live world.
#[allow(clippy::too_many_arguments)]
fn draw_projectiles(
    mut commands: Commands,
    drawn: Res<DrawnProjectiles>,
    latest: Res<LatestSnapshot>,
    killcam: Res<Killcam>,
    mut replaying: Local<bool>,
    assets: Res<EffectAssets>,
    mut emit: MessageWriter<Emit>,
    mut projectiles: Query<(Entity, &ProjectileVisual, &mut Transform)>,
) {
    let flying = &drawn.0;
    if *replaying != killcam.active() {
        *replaying = killcam.active();
        for (entity, ..) in &projectiles {
            commands.entity(entity).despawn();
        }
        return;
    }
    for (entity, projectile, mut transform) in &mut projectiles {
        match flying.iter().find(|(id, _)| *id == projectile.id) {
            Some(&(_, pos)) => {
                let from = transform.translation;
                // Puffs along the way, about one every 15 cm, so the trail is even at
                // any frame rate.
                let steps = ((pos - from).length() / 0.15).ceil().min(12.0) as usize;
                for i in 0..steps {
                    let at = from.lerp(pos, (i as f32 + 0.5) / steps as f32);
                    emit.write(match projectile.kind {
                        ProjectileKind::Rocket => Emit::trail(at),
                        ProjectileKind::Plasma | ProjectileKind::PlasmaBall => {
                            Emit::plasma_trail(at)
                        }
                    });
                }
                if let Some(dir) = (pos - from).try_normalize() {
                    transform.rotation = Quat::from_rotation_arc(Vec3::Y, dir);
                }
                transform.translation = pos;
            }
            None => commands.entity(entity).despawn(),
        }
    }
    for &(id, pos) in flying {
        if projectiles.iter().any(|(_, p, _)| p.id == id) {
            continue;
        }
        let kind = killcam
            .projectile_kind(id)
            .unwrap_or_else(|| projectile_kind(&latest, id));
        let (mesh, material, scale) = match kind {
            ProjectileKind::Rocket => (&assets.rocket, &assets.rocket_material, 1.0),
            ProjectileKind::Plasma => (&assets.plasma, &assets.plasma_material, 1.0),
            ProjectileKind::PlasmaBall => (&assets.plasma, &assets.plasma_material, 2.5),
        };
        let mut entity = commands.spawn((
            Mesh3d(mesh.clone()),
            MeshMaterial3d(material.clone()),
            Transform::from_translation(pos).with_scale(Vec3::splat(scale)),
            ProjectileVisual { id, kind },
            bevy::light::NotShadowCaster,
        ));
        // A plasma ball lights its way; bolts come ten a second and rockets trail smoke,
        // and a light each would cost more than it shows.
        if kind == ProjectileKind::PlasmaBall {
            entity.insert(PointLight {
                color: Color::srgb(0.4, 0.7, 1.0),
                intensity: 30_000.0 * scale,
                range: 4.0 * scale,
                ..default()
            });
        }
    }
}

/// Where the nearest surface within `reach` of `at` lies, and its normal: an explosion's
/// scorch goes there.
fn nearest_surface(map: &CurrentMap, at: Vec3, reach: f32) -> Option<(Vec3, Vec3)> {
    [
        Vec3::NEG_Y,
        Vec3::Y,
        Vec3::X,
        Vec3::NEG_X,
        Vec3::Z,
        Vec3::NEG_Z,
    ]
    .into_iter()
    .filter_map(|d| {
        // From a little inside the burst, so a point on the surface finds it.
        let from = at - d * 0.05;
        map.world
            .cast_ray(from, d, reach)
            .map(|(t, n)| (t, from + d * t, n))
    })
    .min_by(|a, b| a.0.total_cmp(&b.0))
    .map(|(_, p, n)| (p, n))
}

/// Explosions and impacts as particles, light and marks; hitscan shots as a tracer or a
/// beam to the first wall.
#[allow(clippy::too_many_arguments)]
fn spawn_effects(
    mut commands: Commands,
    time: Res<Time<Real>>,
    mut cues: MessageReader<CombatCue>,
    map: Option<Res<CurrentMap>>,
    assets: Res<EffectAssets>,
    mut emit: MessageWriter<Emit>,
    mut marks: MessageWriter<Mark>,
) {
    let now = time.elapsed_secs_f64();
    for cue in cues.read() {
        // Others' muzzles smoke (ours smokes from the view model).
        if let CombatCue::Fired {
            origin,
            dir,
            own: false,
            ..
        } = *cue
        {
            emit.write(Emit::muzzle_smoke(origin + dir * 0.7, dir));
        }
        match *cue {
            CombatCue::Exploded { kind, at } => {
                let big = kind != ProjectileKind::Plasma;
                if big {
                    emit.write_batch(Emit::explosion(at));
                } else {
                    emit.write(Emit::plasma_burst(at));
                }
                let (color, intensity) = match kind {
                    ProjectileKind::Rocket => (Color::srgb(1.0, 0.6, 0.25), 2_000_000.0),
                    ProjectileKind::PlasmaBall => (Color::srgb(0.4, 0.7, 1.0), 800_000.0),
                    ProjectileKind::Plasma => (Color::srgb(0.4, 0.7, 1.0), 80_000.0),
                };
                commands.spawn((
                    PointLight {
                        color,
                        intensity,
                        range: if big { 14.0 } else { 4.0 },
                        ..default()
                    },
                    Transform::from_translation(at),
                    Effect {
                        born: now,
                        until: now + 0.15,
                        width: None,
                        light: Some(intensity),
                    },
                ));
                if let Some((p, n)) = map.as_deref().and_then(|m| nearest_surface(m, at, 1.0)) {
                    marks.write(Mark {
                        at: p,
                        normal: n,
                        scorch: big,
                    });
                }
            }
            // Projectiles draw themselves.
            CombatCue::Fired {
                weapon,
                origin,
                dir,
                own,
            } if weapon.def().is_hitscan() => {
                // Our own shot leaves the view model's muzzle, not our eye.
                let from = if own {
                    origin + dir * 0.6 - Vec3::Y * 0.12
                } else {
                    origin
                };
                let hit = map
                    .as_ref()
                    .and_then(|m| m.world.cast_ray(origin, dir, weapon.def().range));
                let reach_from_eye = hit.map_or(weapon.def().range.min(150.0), |(t, _)| t);
                let end = origin + dir * reach_from_eye;
                let Some(along) = (end - from).try_normalize() else {
                    continue;
                };
                let length = (end - from).length();
                let rail = weapon == WeaponKind::Railgun;
                let width = if rail { 0.06 } else { 0.015 };
                commands.spawn((
                    Mesh3d(assets.beam.clone()),
                    MeshMaterial3d(if rail {
                        assets.rail_material.clone()
                    } else {
                        assets.tracer_material.clone()
                    }),
                    beam_transform(from, along, length, width),
                    Effect {
                        born: now,
                        until: now + if rail { 0.6 } else { 0.05 },
                        width: rail.then_some(width),
                        light: None,
                    },
                    bevy::light::NotShadowCaster,
                ));
                if let Some((_, normal)) = hit {
                    emit.write_batch(Emit::impact(end, normal));
                    marks.write(Mark {
                        at: end,
                        normal,
                        scorch: false,
                    });
                }
            }
            _ => {}
        }
    }
}

/// How wide a thinning effect is at `share` (0 to 1) of its life: full, then narrowing
/// to nothing.
pub fn thinning(share: f32) -> f32 {
    (1.0 - share.clamp(0.0, 1.0)).powi(2)
}

/// Effects go when their time is up; beams thin out as they go.
fn age_effects(
    mut commands: Commands,
    time: Res<Time<Real>>,
    mut effects: Query<(Entity, &Effect, &mut Transform, Option<&mut PointLight>)>,
) {
    let now = time.elapsed_secs_f64();
    for (entity, effect, mut transform, light) in &mut effects {
        if now >= effect.until {
            commands.entity(entity).despawn();
            continue;
        }
        let share = ((now - effect.born) / (effect.until - effect.born)) as f32;
        if let Some(width) = effect.width {
            let w = width * thinning(share);
            transform.scale.x = w;
            transform.scale.z = w;
        }
        if let (Some(mut light), Some(full)) = (light, effect.light) {
            light.intensity = full * thinning(share);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beams_span_from_start_to_end() {
        let dir = Vec3::new(1.0, 0.5, -2.0).normalize();
        let t = beam_transform(Vec3::ONE, dir, 10.0, 0.1);
        // The unit cylinder's ends, at y = -0.5 and 0.5, land on the beam's ends.
        let start = t.transform_point(Vec3::new(0.0, -0.5, 0.0));
        let end = t.transform_point(Vec3::new(0.0, 0.5, 0.0));
        assert!(start.distance(Vec3::ONE) < 1e-4, "{start}");
        assert!(end.distance(Vec3::ONE + dir * 10.0) < 1e-4, "{end}");
    }

    #[test]
    fn thinning_narrows_to_nothing() {
        assert_eq!(thinning(0.0), 1.0);
        assert!(thinning(0.5) < 1.0 && thinning(0.5) > 0.0);
        assert_eq!(thinning(1.0), 0.0);
        assert_eq!(thinning(2.0), 0.0);
    }
}
