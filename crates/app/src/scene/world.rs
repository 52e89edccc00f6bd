//! The map as drawn: brushes as textured boxes in their colours (their surfaces from
//! [`crate::scene::materials`]), the sun with shadows, point lights, ambient light, and the items
//! spinning and bobbing over a glowing pad while present, weapons dropped by the dead
//! spinning where they lie, and glowing wisps rising from jump pads the way they throw.
//! The sky is [`crate::scene::sky`]'s.

use crate::scene::materials::{METRES_PER_TILE, SurfaceTextures, box_mesh, surface_for};
use crate::scene::particles::{Emit, Look};
use crate::scene::weapon_models;
use bevy::light::{CascadeShadowConfigBuilder, DirectionalLightShadowMap};
use bevy::prelude::*;
use sightline_client::LatestSnapshot;
use sightline_map::{CurrentMap, ItemKind, Rgb};
use sightline_sim::{EndSession, despawn_all};

/// The sky between maps.
const NO_MAP_SKY: Color = Color::srgb(0.05, 0.06, 0.09);

/// Everything spawned for the current map, removed when it changes.
#[derive(Component)]
struct MapVisual;

/// An item spot's item, shown while the server says it is there.
#[derive(Component)]
struct ItemVisual(u8);

/// A weapon dropped by a dead player, by drop number.
#[derive(Component)]
struct DropVisual(u16);

/// Seconds between wisps from each jump pad.
const WISP_EVERY: f32 = 0.12;

/// How high an item floats over its spot, and how far it bobs, metres.
const ITEM_HEIGHT: f32 = 0.5;
const ITEM_BOB: f32 = 0.08;

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
                    show_drops,
                    pad_wisps,
                ),
            )
            .add_systems(EndSession, despawn_all::<DropVisual>);
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
    textures: Res<SurfaceTextures>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for e in &old {
        commands.entity(e).despawn();
    }
    let def = &map.def;
    // One material per surface and colour: maps repeat a handful of colours.
    let mut made: Vec<(
        crate::scene::materials::Surface,
        [u32; 3],
        Handle<StandardMaterial>,
    )> = Vec::new();
    for brush in &def.brushes {
        let (center, half, rotation) = brush.oriented_box();
        let rgb = brush.color().0;
        let surface = surface_for(rgb, half);
        let key = rgb.map(f32::to_bits);
        let material = match made.iter().find(|(s, k, _)| *s == surface && *k == key) {
            Some((.., m)) => m.clone(),
            None => {
                let m = materials.add(textures.material(surface, color(brush.color())));
                made.push((surface, key, m.clone()));
                m
            }
        };
        commands.spawn((
            Mesh3d(meshes.add(box_mesh(half, METRES_PER_TILE))),
            MeshMaterial3d(material),
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
        let (color, shape) = item_look(item.kind);
        let glow = materials.add(StandardMaterial {
            base_color: color,
            emissive: LinearRgba::from(color) * 2.0,
            ..default()
        });
        // A pad on the floor marks the spot while the item is away.
        commands.spawn((
            Mesh3d(meshes.add(Cylinder::new(0.45, 0.04))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: Color::srgb(0.12, 0.12, 0.14),
                emissive: LinearRgba::from(color) * 0.4,
                metallic: 0.6,
                perceptual_roughness: 0.4,
                ..default()
            })),
            Transform::from_translation(item.pos + Vec3::Y * 0.02),
            MapVisual,
        ));
        commands
            .spawn((
                Transform::from_translation(item.pos + Vec3::Y * ITEM_HEIGHT),
                Visibility::default(),
                ItemVisual(i as u8),
                MapVisual,
            ))
            .with_children(|item| {
                for (size, offset) in shape {
                    item.spawn((
                        Mesh3d(meshes.add(Cuboid::from_size(size))),
                        MeshMaterial3d(glow.clone()),
                        Transform::from_translation(offset),
                    ));
                }
            });
    }
    commands.insert_resource(GlobalAmbientLight {
        color: color(def.ambient.color),
        brightness: def.ambient.brightness,
        ..default()
    });
    commands.insert_resource(ClearColor(color(def.sky)));
}

/// An item's colour and its shape, as boxes (size, offset): a cross for health, a plate
/// for armour, a crate for ammunition.
fn item_look(kind: ItemKind) -> (Color, Vec<(Vec3, Vec3)>) {
    match kind {
        ItemKind::Health => (
            Color::srgb(0.2, 0.9, 0.3),
            vec![
                (Vec3::new(0.42, 0.14, 0.14), Vec3::ZERO),
                (Vec3::new(0.14, 0.42, 0.14), Vec3::ZERO),
            ],
        ),
        ItemKind::Armor => (
            Color::srgb(0.95, 0.8, 0.2),
            vec![
                (Vec3::new(0.4, 0.45, 0.08), Vec3::ZERO),
                (Vec3::new(0.24, 0.12, 0.1), Vec3::new(0.0, 0.26, 0.0)),
            ],
        ),
        ItemKind::Ammo => (
            Color::srgb(0.3, 0.5, 1.0),
            vec![
                (Vec3::new(0.4, 0.25, 0.3), Vec3::ZERO),
                (Vec3::new(0.3, 0.06, 0.2), Vec3::new(0.0, 0.155, 0.0)),
            ],
        ),
        // Weapons lie as their silhouettes: a long barrel, a squat coil.
        ItemKind::Railgun => (
            Color::srgb(0.3, 0.85, 1.0),
            vec![
                (Vec3::new(0.1, 0.14, 0.8), Vec3::ZERO),
                (Vec3::new(0.16, 0.05, 0.5), Vec3::new(0.0, 0.1, 0.05)),
            ],
        ),
        ItemKind::Plasma => (
            Color::srgb(0.55, 0.4, 1.0),
            vec![
                (Vec3::new(0.2, 0.2, 0.5), Vec3::ZERO),
                (Vec3::new(0.26, 0.26, 0.1), Vec3::new(0.0, 0.0, -0.12)),
                (Vec3::new(0.26, 0.26, 0.1), Vec3::new(0.0, 0.0, 0.08)),
            ],
        ),
        // Power-ups are bigger and brighter: worth fighting over, seen from afar.
        ItemKind::Quad => (
            Color::srgb(0.35, 0.45, 1.0),
            vec![
                (Vec3::splat(0.42), Vec3::ZERO),
                (Vec3::new(0.56, 0.1, 0.1), Vec3::ZERO),
                (Vec3::new(0.1, 0.56, 0.1), Vec3::ZERO),
            ],
        ),
        ItemKind::Regeneration => (
            Color::srgb(1.0, 0.25, 0.3),
            vec![
                (Vec3::new(0.5, 0.17, 0.17), Vec3::ZERO),
                (Vec3::new(0.17, 0.5, 0.17), Vec3::ZERO),
                (Vec3::new(0.17, 0.17, 0.5), Vec3::ZERO),
            ],
        ),
    }
}

/// An item's height over its resting height at `secs`: a slow bob, each spot (`phase`)
/// out of step with the others.
fn item_bob(secs: f32, phase: f32) -> f32 {
    (secs * 2.0 + phase).sin() * ITEM_BOB
}

/// Items spin and bob over their spots, and vanish while taken.
fn show_items(
    time: Res<Time>,
    map: Option<Res<CurrentMap>>,
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
        if let Some(spot) = map.as_ref().and_then(|m| m.def.items.get(item.0 as usize)) {
            let bob = item_bob(time.elapsed_secs(), item.0 as f32 * 1.7);
            transform.translation.y = spot.pos.y + ITEM_HEIGHT + bob;
        }
    }
}

/// Weapons dropped by the dead, as the newest snapshot lists them: each drawn as its
/// model, spinning a little over the floor.
fn show_drops(
    mut commands: Commands,
    time: Res<Time>,
    latest: Res<LatestSnapshot>,
    mut drops: Query<(Entity, &DropVisual, &mut Transform)>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let listed = latest.0.as_ref().map_or(&[][..], |s| &s.drops[..]);
    for (entity, drop, mut transform) in &mut drops {
        match listed.iter().find(|d| d.id == drop.0) {
            Some(d) => {
                transform.translation = Vec3::from_array(d.pos) + Vec3::Y * 0.3;
                transform.rotate_y(time.delta_secs() * 2.0);
            }
            None => commands.entity(entity).despawn(),
        }
    }
    for d in listed {
        if drops.iter().any(|(_, v, _)| v.0 == d.id) {
            continue;
        }
        commands
            .spawn((
                DropVisual(d.id),
                Transform::from_translation(Vec3::from_array(d.pos) + Vec3::Y * 0.3),
                Visibility::default(),
            ))
            .with_children(|p| {
                weapon_models::spawn_parts(p, d.weapon, &mut meshes, &mut materials);
            });
    }
}

/// Where wisp `n` of a jump pad from `min` to `max` starts: spread over the pad's top in
/// a fixed scatter, so the pad glows all over without a random source.
fn wisp_start(min: Vec3, max: Vec3, n: u32) -> Vec3 {
    let golden = 0.618_034;
    let u = (n as f32 * golden).fract();
    let v = (n as f32 * golden * golden + 0.31).fract();
    Vec3::new(
        min.x + (max.x - min.x) * u,
        max.y.min(min.y + 0.1),
        min.z + (max.z - min.z) * v,
    )
}

/// Jump pads breathe glowing wisps along the way they throw.
fn pad_wisps(
    time: Res<Time>,
    map: Option<Res<CurrentMap>>,
    mut emit: MessageWriter<Emit>,
    mut clock: Local<(f32, u32)>,
) {
    let Some(map) = map else {
        return;
    };
    clock.0 += time.delta_secs();
    // At most a few per frame, however long the frame.
    let mut budget = 4;
    while clock.0 >= WISP_EVERY && budget > 0 {
        clock.0 -= WISP_EVERY;
        budget -= 1;
        clock.1 = clock.1.wrapping_add(1);
        for pad in &map.def.jump_pads {
            emit.write(Emit {
                look: Look::Plasma,
                at: wisp_start(pad.min, pad.max, clock.1),
                dir: pad.launch.normalize_or(Vec3::Y),
                count: 1,
                speed: 2.5,
                spread: 0.1,
                life: 0.9,
                size: 0.06,
                grow: 0.3,
                gravity: 0.0,
                drag: 0.5,
            });
        }
    }
    clock.0 = clock.0.min(WISP_EVERY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wisps_start_on_the_pad_and_spread_over_it() {
        let (min, max) = (Vec3::new(-1.2, -0.1, 11.0), Vec3::new(1.2, 0.3, 13.4));
        let starts: Vec<Vec3> = (0..40).map(|n| wisp_start(min, max, n)).collect();
        for p in &starts {
            assert!(
                p.x >= min.x && p.x <= max.x && p.z >= min.z && p.z <= max.z,
                "{p}"
            );
            assert!((p.y - 0.0).abs() < 1e-6, "on the pad's floor: {p}");
        }
        // Spread: both halves of the pad get wisps, each way.
        assert!(starts.iter().any(|p| p.x < 0.0) && starts.iter().any(|p| p.x > 0.0));
        assert!(starts.iter().any(|p| p.z < 12.2) && starts.iter().any(|p| p.z > 12.2));
    }

    #[test]
    fn items_bob_within_their_range_and_out_of_step() {
        for i in 0..200 {
            let t = i as f32 * 0.05;
            assert!(item_bob(t, 0.0).abs() <= ITEM_BOB + 1e-6);
        }
        assert!((item_bob(1.0, 0.0) - item_bob(1.0, 1.7)).abs() > 1e-3);
    }
}
