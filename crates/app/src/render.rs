//! Drawing the world: map brushes as lit meshes, sun and sky, players as simple generated
//! characters, and the first-person camera with its view-model weapon. Rendering runs at
//! display rate; the local view is blended between the last two predicted ticks.

use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::light::{CascadeShadowConfigBuilder, DirectionalLightShadowMap};
use bevy::prelude::*;
use sightline_client::{LocalInput, RemotePlayer};
use sightline_console::Cvars;
use sightline_interpolation::{Drawn, InterpolationSet};
use sightline_map::{CurrentMap, Rgb};
use sightline_movement::{MoveFlags, MoveParams, PlayerState};
use sightline_prediction::{Predicted, VisualOffset};
use sightline_sim::PlayerId;

/// The first-person camera.
#[derive(Component)]
pub struct MainCamera;

/// The weapon held in view, shown only while playing.
#[derive(Component)]
struct ViewModel;

/// Everything spawned for the current map, removed when it changes.
#[derive(Component)]
struct MapVisual;

/// The predicted state before the latest tick, for blending between ticks.
#[derive(Component, Debug, Default, Clone, Copy)]
struct PreviousState(PlayerState);

/// A remote player's body has been given meshes.
#[derive(Component)]
struct Dressed;

/// Eye height as drawn: follows the crouch state smoothly.
#[derive(Resource, Debug, Default)]
struct EyeHeight(Option<f32>);

/// Draws the game world.
pub struct RenderPlugin;

impl Plugin for RenderPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<EyeHeight>()
            .insert_resource(ClearColor(Color::srgb(0.05, 0.06, 0.09)))
            .insert_resource(DirectionalLightShadowMap { size: 1024 })
            .add_systems(Startup, spawn_camera)
            .add_systems(FixedFirst, remember_previous_state)
            .add_systems(
                Update,
                (
                    build_map_visuals.run_if(resource_exists_and_changed::<CurrentMap>),
                    clear_map_visuals.run_if(resource_removed::<CurrentMap>),
                    dress_remote_players,
                    place_remote_players.after(InterpolationSet::Sample),
                    place_camera,
                    apply_fov,
                    show_view_model,
                ),
            );
    }
}

fn color(rgb: Rgb) -> Color {
    Color::linear_rgb(rgb.0[0], rgb.0[1], rgb.0[2])
}

fn spawn_camera(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands
        .spawn((
            Camera3d::default(),
            Tonemapping::AcesFitted,
            Projection::Perspective(PerspectiveProjection {
                fov: 90f32.to_radians(),
                ..default()
            }),
            Transform::from_xyz(0.0, 2.0, 0.0),
            MainCamera,
        ))
        .with_children(|camera| {
            // The view-model weapon: a receiver and a barrel, low and to the right.
            let metal = materials.add(StandardMaterial {
                base_color: Color::srgb(0.18, 0.19, 0.22),
                metallic: 0.6,
                perceptual_roughness: 0.4,
                ..default()
            });
            camera
                .spawn((ViewModel, Transform::default(), Visibility::Hidden))
                .with_children(|gun| {
                    gun.spawn((
                        Mesh3d(meshes.add(Cuboid::new(0.045, 0.06, 0.26))),
                        MeshMaterial3d(metal.clone()),
                        Transform::from_xyz(0.16, -0.15, -0.4),
                    ));
                    gun.spawn((
                        Mesh3d(meshes.add(Cylinder::new(0.012, 0.22))),
                        MeshMaterial3d(metal),
                        Transform::from_xyz(0.16, -0.13, -0.62)
                            .with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
                    ));
                });
        });
}

fn clear_map_visuals(mut commands: Commands, visuals: Query<Entity, With<MapVisual>>) {
    for e in &visuals {
        commands.entity(e).despawn();
    }
    commands.insert_resource(ClearColor(Color::srgb(0.05, 0.06, 0.09)));
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
    commands.insert_resource(GlobalAmbientLight {
        color: color(def.ambient.color),
        brightness: def.ambient.brightness,
        ..default()
    });
    commands.insert_resource(ClearColor(color(def.sky)));
}

/// A colour per player id, far apart on the hue circle.
fn player_color(id: PlayerId) -> Color {
    Color::hsl((id.0 as f32 * 137.5) % 360.0, 0.65, 0.5)
}

/// Gives each remote player a body: a capsule, a head and a gun, in its colour.
fn dress_remote_players(
    mut commands: Commands,
    players: Query<(Entity, &PlayerId), (With<RemotePlayer>, Without<Dressed>)>,
    params: Res<MoveParams>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (entity, id) in &players {
        let body = materials.add(StandardMaterial {
            base_color: player_color(*id),
            perceptual_roughness: 0.6,
            ..default()
        });
        let dark = materials.add(Color::srgb(0.1, 0.1, 0.12));
        let half_length = params.stand_height * 0.5 - params.radius;
        commands
            .entity(entity)
            .insert((Transform::default(), Visibility::default(), Dressed))
            .with_children(|p| {
                p.spawn((
                    Mesh3d(meshes.add(Capsule3d::new(params.radius, half_length * 2.0))),
                    MeshMaterial3d(body.clone()),
                    Transform::from_xyz(0.0, params.stand_height * 0.5, 0.0),
                ));
                p.spawn((
                    Mesh3d(meshes.add(Sphere::new(0.17))),
                    MeshMaterial3d(body),
                    Transform::from_xyz(0.0, params.stand_eye, -0.05),
                ));
                p.spawn((
                    Mesh3d(meshes.add(Cuboid::new(0.08, 0.1, 0.5))),
                    MeshMaterial3d(dark),
                    Transform::from_xyz(0.3, params.stand_eye - 0.35, -0.35),
                ));
            });
    }
}

/// Remote players stand where interpolation draws them; crouching squashes them.
fn place_remote_players(
    params: Res<MoveParams>,
    mut players: Query<(&Drawn, &mut Transform), With<RemotePlayer>>,
) {
    for (drawn, mut transform) in &mut players {
        let crouched = drawn.flags.has(MoveFlags::CROUCHED);
        let scale = if crouched {
            params.crouch_height / params.stand_height
        } else {
            1.0
        };
        transform.translation = drawn.pos;
        transform.rotation = Quat::from_rotation_y(drawn.yaw);
        transform.scale = Vec3::new(1.0, scale, 1.0);
    }
}

fn remember_previous_state(
    mut commands: Commands,
    mut players: Query<(Entity, &PlayerState, Option<&mut PreviousState>), With<Predicted>>,
) {
    for (entity, state, previous) in &mut players {
        match previous {
            Some(mut p) => p.0 = *state,
            None => {
                commands.entity(entity).insert(PreviousState(*state));
            }
        }
    }
}

/// The camera sits at the predicted eye, blended between the last two ticks, plus the
/// fading correction offset; it looks where the mouse last pointed.
fn place_camera(
    time: Res<Time>,
    fixed: Res<Time<Fixed>>,
    params: Res<MoveParams>,
    input: Res<LocalInput>,
    source: Res<sightline_client::InputSource>,
    mut eye: ResMut<EyeHeight>,
    player: Query<(&PlayerState, Option<&PreviousState>, &VisualOffset), With<Predicted>>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    let (Ok((state, previous, offset)), Ok(mut transform)) = (player.single(), camera.single_mut())
    else {
        return;
    };
    let from = previous.map_or(state.pos, |p| p.0.pos);
    let pos = from.lerp(state.pos, fixed.overstep_fraction()) + offset.0;
    // Lower and raise the eye over about a tenth of a second.
    let target = params.eye(state.crouched());
    let current = eye.0.get_or_insert(target);
    *current += (target - *current) * (1.0 - (-time.delta_secs() / 0.05).exp());
    let (yaw, pitch) = match *source {
        sightline_client::InputSource::Local => (input.yaw, input.pitch),
        sightline_client::InputSource::Bot { .. } => (state.yaw, state.pitch),
    };
    transform.translation = pos + Vec3::Y * *current;
    transform.rotation = Quat::from_euler(EulerRot::YXZ, yaw, pitch, 0.0);
}

fn apply_fov(cvars: Res<Cvars>, mut cameras: Query<&mut Projection, With<MainCamera>>) {
    if !cvars.is_changed() {
        return;
    }
    for mut projection in &mut cameras {
        if let Projection::Perspective(p) = &mut *projection {
            p.fov = (cvars.number("fov") as f32).to_radians();
        }
    }
}

/// The view-model weapon shows once our player exists.
fn show_view_model(
    player: Query<(), With<Predicted>>,
    mut view_model: Query<&mut Visibility, With<ViewModel>>,
) {
    let wanted = if player.is_empty() {
        Visibility::Hidden
    } else {
        Visibility::Inherited
    };
    for mut v in &mut view_model {
        v.set_if_neq(wanted);
    }
}
