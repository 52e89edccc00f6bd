//! Short-lived sights: rockets in flight with their smoke trail, explosions as a growing
//! fireball, and tracers for hitscan shots (ours predicted, others' from the server).

use bevy::prelude::*;
use sightline_client::CombatCue;
use sightline_interpolation::DrawnProjectiles;
use sightline_map::CurrentMap;
use sightline_sim::{EndSession, despawn_all};

/// A rocket in flight, by projectile number.
#[derive(Component)]
struct RocketVisual(u16);

/// A short-lived effect (explosion, tracer, smoke), removed when its time is up.
#[derive(Component)]
struct Effect {
    until: f64,
    grow: f32,
}

/// Draws combat effects.
pub struct EffectsPlugin;

impl Plugin for EffectsPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, (draw_rockets, spawn_effects, age_effects))
            .add_systems(
                EndSession,
                (despawn_all::<RocketVisual>, despawn_all::<Effect>),
            );
    }
}

/// Rockets where interpolation draws them (in step with the players around them), as
/// small glowing spheres trailing smoke.
fn draw_rockets(
    mut commands: Commands,
    time: Res<Time<Real>>,
    drawn: Res<DrawnProjectiles>,
    mut rockets: Query<(Entity, &RocketVisual, &mut Transform)>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let flying = &drawn.0;
    for (entity, rocket, mut transform) in &mut rockets {
        match flying.iter().find(|(id, _)| *id == rocket.0) {
            Some((_, pos)) => {
                // A puff of smoke where the rocket was: the trail.
                commands.spawn((
                    Mesh3d(meshes.add(Sphere::new(0.08))),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: Color::srgba(0.8, 0.8, 0.8, 0.5),
                        alpha_mode: AlphaMode::Blend,
                        ..default()
                    })),
                    Transform::from_translation(transform.translation),
                    Effect {
                        until: time.elapsed_secs_f64() + 0.5,
                        grow: 0.6,
                    },
                ));
                transform.translation = *pos;
            }
            None => commands.entity(entity).despawn(),
        }
    }
    for &(id, pos) in flying {
        if rockets.iter().any(|(_, r, _)| r.0 == id) {
            continue;
        }
        commands.spawn((
            Mesh3d(meshes.add(Sphere::new(0.12))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: Color::srgb(1.0, 0.6, 0.2),
                emissive: LinearRgba::rgb(8.0, 3.0, 0.5),
                ..default()
            })),
            Transform::from_translation(pos),
            RocketVisual(id),
        ));
    }
}

/// Explosions as a growing fireball; hitscan shots as a brief tracer to the first wall.
fn spawn_effects(
    mut commands: Commands,
    time: Res<Time<Real>>,
    mut cues: MessageReader<CombatCue>,
    map: Option<Res<CurrentMap>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let now = time.elapsed_secs_f64();
    for cue in cues.read() {
        match *cue {
            CombatCue::Exploded { at } => {
                commands.spawn((
                    Mesh3d(meshes.add(Sphere::new(0.5))),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: Color::srgba(1.0, 0.5, 0.1, 0.8),
                        emissive: LinearRgba::rgb(20.0, 8.0, 1.0),
                        alpha_mode: AlphaMode::Blend,
                        ..default()
                    })),
                    Transform::from_translation(at),
                    Effect {
                        until: now + 0.35,
                        grow: 12.0,
                    },
                ));
            }
            // Rockets draw themselves.
            CombatCue::Fired {
                weapon,
                origin,
                dir,
                own,
            } if weapon.def().projectile_speed == 0.0 => {
                // Our own tracer leaves the view model's muzzle, not our eye.
                let origin = if own {
                    origin + dir * 0.6 - Vec3::Y * 0.12
                } else {
                    origin
                };
                let reach = map
                    .as_ref()
                    .and_then(|m| m.world.cast_ray(origin, dir, 100.0))
                    .map_or(100.0, |(t, _)| t);
                commands.spawn((
                    Mesh3d(meshes.add(Cuboid::new(0.02, 0.02, reach))),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: Color::srgb(1.0, 0.9, 0.5),
                        emissive: LinearRgba::rgb(6.0, 5.0, 2.0),
                        unlit: true,
                        ..default()
                    })),
                    Transform::from_translation(origin + dir * reach * 0.5)
                        .looking_to(dir, Vec3::Y),
                    Effect {
                        until: now + 0.06,
                        grow: 0.0,
                    },
                ));
            }
            _ => {}
        }
    }
}

fn age_effects(
    mut commands: Commands,
    time: Res<Time<Real>>,
    mut effects: Query<(Entity, &Effect, &mut Transform)>,
) {
    let now = time.elapsed_secs_f64();
    for (entity, effect, mut transform) in &mut effects {
        if now >= effect.until {
            commands.entity(entity).despawn();
        } else if effect.grow > 0.0 {
            transform.scale += Vec3::splat(effect.grow * time.delta_secs());
        }
    }
}
