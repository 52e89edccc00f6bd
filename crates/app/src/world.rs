//! The map as drawn: brushes as lit boxes in their colours, the sun with shadows, point
//! lights, sky and ambient light, and the items spinning on their spots while present.

use bevy::light::{CascadeShadowConfigBuilder, DirectionalLightShadowMap};
use bevy::prelude::*;
use sightline_client::LatestSnapshot;
use sightline_map::{CurrentMap, ItemKind, Rgb};

/// The sky between maps.
const NO_MAP_SKY: Color = Color::srgb(0.05, 0.06, 0.09);

/// Everything spawned for the current map, removed when it changes.
#[derive(Component)]
struct MapVisual;

/// An item spot's item, shown while the server says it is there.
#[derive(Component)]
struct ItemVisual(u8);

/// Draws the map and its items.
pub struct WorldPlugin;

impl Plugin for WorldPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(ClearColor(NO_MAP_SKY))
            .insert_resource(DirectionalLightShadowMap { size: 1024 })
            .add_systems(
                Update,
                (
                    build_map_visuals.run_if(resource_exists_and_changed::<CurrentMap>),
                    // The client forgets the map when a session ends.
                    clear_map_visuals.run_if(resource_removed::<CurrentMap>),
                    show_items,
                ),
            );
    }
}

fn color(rgb: Rgb) -> Color {
    Color::linear_rgb(rgb.0[0], rgb.0[1], rgb.0[2])
}

fn clear_map_visuals(mut commands: Commands, visuals: Query<Entity, With<MapVisual>>) {
    for e in &visuals {
        commands.entity(e).despawn();
    }
    commands.insert_resource(ClearColor(NO_MAP_SKY));
}

/// Brushes become boxes with their colour hints; the sun casts shadows; the sky and
/// ambient colours come from the map.
fn build_map_visuals(
    mut commands: Commands,
    map: Res<CurrentMap>,
    old: Query<Entity, With<MapVisual>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for e in &old {
        commands.entity(e).despawn();
    }
    let def = &map.def;
    for brush in &def.brushes {
        let (center, half, rotation) = brush.oriented_box();
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::from_size(half * 2.0))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: color(brush.color()),
                perceptual_roughness: 0.85,
                ..default()
            })),
            Transform::from_translation(center).with_rotation(rotation),
            MapVisual,
        ));
    }
    // Two shadow cascades over 80 m are plenty for these arenas and keep software
    // renderers (CI's lavapipe) at a usable frame rate.
    commands.spawn((
        DirectionalLight {
            color: color(def.sun.color),
            illuminance: def.sun.illuminance,
            shadow_maps_enabled: true,
            ..default()
        },
        CascadeShadowConfigBuilder {
            num_cascades: 2,
            maximum_distance: 80.0,
            ..default()
        }
        .build(),
        Transform::default().looking_to(def.sun.direction, Vec3::Y),
        MapVisual,
    ));
    for light in &def.lights {
        commands.spawn((
            PointLight {
                color: color(light.color),
                intensity: light.intensity,
                range: light.range,
                ..default()
            },
            Transform::from_translation(light.pos),
            MapVisual,
        ));
    }
    for (i, item) in def.items.iter().enumerate() {
        let color = match item.kind {
            ItemKind::Health => Color::srgb(0.2, 0.9, 0.3),
            ItemKind::Armor => Color::srgb(0.95, 0.8, 0.2),
            ItemKind::Ammo => Color::srgb(0.3, 0.5, 1.0),
        };
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::new(0.4, 0.4, 0.4))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: color,
                emissive: LinearRgba::from(color) * 0.6,
                ..default()
            })),
            Transform::from_translation(item.pos + Vec3::Y * 0.4),
            ItemVisual(i as u8),
            MapVisual,
        ));
    }
    commands.insert_resource(GlobalAmbientLight {
        color: color(def.ambient.color),
        brightness: def.ambient.brightness,
        ..default()
    });
    commands.insert_resource(ClearColor(color(def.sky)));
}

/// Items spin on their spots, and vanish while taken.
fn show_items(
    time: Res<Time>,
    latest: Res<LatestSnapshot>,
    mut items: Query<(&ItemVisual, &mut Visibility, &mut Transform)>,
) {
    let bits = latest.0.as_ref().map_or(0, |s| s.items);
    for (item, mut visibility, mut transform) in &mut items {
        // Spots past the bit mask's 64 are never present rather than a shift overflow.
        let present = 1u64
            .checked_shl(item.0 as u32)
            .is_some_and(|bit| bits & bit != 0);
        visibility.set_if_neq(if present {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
        transform.rotate_y(time.delta_secs() * 1.5);
    }
}
