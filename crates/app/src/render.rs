//! Drawing the world: map brushes as lit meshes, sun and sky, players as simple generated
//! characters, and the first-person camera with its view-model weapon. Rendering runs at
//! display rate; the local view is blended between the last two predicted ticks.

use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::light::{CascadeShadowConfigBuilder, DirectionalLightShadowMap};
use bevy::prelude::*;
use sightline_client::LatestSnapshot;
use sightline_client::{LocalInput, RemotePlayer};
use sightline_console::Cvars;
use sightline_interpolation::{Drawn, InterpolationSet};
use sightline_map::{CurrentMap, ItemKind, Rgb};
use sightline_movement::{MoveFlags, MoveParams, PlayerState};
use sightline_prediction::{Predicted, VisualOffset};
use sightline_protocol::ServerMessage;
use sightline_sim::PlayerId;

/// The first-person camera.
#[derive(Component)]
pub struct MainCamera;

/// An item spot's item, shown while the server says it is there.
#[derive(Component)]
struct ItemVisual(u8);

/// A rocket in flight, by projectile number.
#[derive(Component)]
struct RocketVisual(u16);

/// A short-lived effect (explosion, tracer), removed when its time is up.
#[derive(Component)]
struct Effect {
    until: f64,
    grow: f32,
}

/// Until when (real seconds) our own muzzle flash shows.
#[derive(Resource, Debug, Default)]
struct MuzzleFlash(f64);

/// The flash at the view-model's muzzle.
#[derive(Component)]
struct FlashVisual;

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

/// The material of a remote player's body, recoloured for its team in team games.
#[derive(Component)]
struct BodyMaterial(Handle<StandardMaterial>);

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
            .init_resource::<MuzzleFlash>()
            .add_systems(FixedFirst, remember_previous_state)
            .add_systems(
                FixedUpdate,
                predict_own_shots.after(sightline_sim::SimSet::Move),
            )
            .add_systems(
                Update,
                (
                    build_map_visuals.run_if(resource_exists_and_changed::<CurrentMap>),
                    clear_map_visuals.run_if(resource_removed::<CurrentMap>),
                    dress_remote_players,
                    tint_by_team.run_if(resource_changed::<sightline_client::Roster>),
                    place_remote_players.after(InterpolationSet::Sample),
                    place_camera,
                    apply_fov,
                    show_view_model,
                    show_muzzle_flash,
                    show_items,
                    draw_rockets,
                    spawn_effects,
                    age_effects,
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
                        Mesh3d(meshes.add(Sphere::new(0.035))),
                        MeshMaterial3d(materials.add(StandardMaterial {
                            base_color: Color::srgb(1.0, 0.8, 0.4),
                            emissive: LinearRgba::rgb(30.0, 18.0, 6.0),
                            unlit: true,
                            ..default()
                        })),
                        PointLight {
                            color: Color::srgb(1.0, 0.8, 0.5),
                            intensity: 40_000.0,
                            range: 6.0,
                            ..default()
                        },
                        Transform::from_xyz(0.16, -0.13, -0.76),
                        Visibility::Hidden,
                        FlashVisual,
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
            .insert((
                Transform::default(),
                Visibility::default(),
                Dressed,
                BodyMaterial(body.clone()),
            ))
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

/// Items spin on their spots, and vanish while taken.
fn show_items(
    time: Res<Time>,
    latest: Res<LatestSnapshot>,
    mut items: Query<(&ItemVisual, &mut Visibility, &mut Transform)>,
) {
    let bits = latest.0.as_ref().map_or(0, |s| s.items);
    for (item, mut visibility, mut transform) in &mut items {
        let present = bits & (1u64 << item.0) != 0;
        visibility.set_if_neq(if present {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
        transform.rotate_y(time.delta_secs() * 1.5);
    }
}

/// Rockets from the newest snapshot, as small glowing spheres.
fn draw_rockets(
    mut commands: Commands,
    time: Res<Time<Real>>,
    latest: Res<LatestSnapshot>,
    mut rockets: Query<(Entity, &RocketVisual, &mut Transform)>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let flying = latest.0.as_ref().map_or(&[][..], |s| &s.projectiles[..]);
    for (entity, rocket, mut transform) in &mut rockets {
        match flying.iter().find(|p| p.id == rocket.0) {
            Some(p) => {
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
                transform.translation = Vec3::from_array(p.pos);
            }
            None => commands.entity(entity).despawn(),
        }
    }
    for p in flying {
        if rockets.iter().any(|(_, r, _)| r.0 == p.id) {
            continue;
        }
        commands.spawn((
            Mesh3d(meshes.add(Sphere::new(0.12))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: Color::srgb(1.0, 0.6, 0.2),
                emissive: LinearRgba::rgb(8.0, 3.0, 0.5),
                ..default()
            })),
            Transform::from_translation(Vec3::from_array(p.pos)),
            RocketVisual(p.id),
        ));
    }
}

/// Explosions as a growing fireball; other players' shots as a brief tracer.
fn spawn_effects(
    mut commands: Commands,
    time: Res<Time<Real>>,
    mut pending: ResMut<crate::hud::PendingEffects>,
    map: Option<Res<CurrentMap>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let now = time.elapsed_secs_f64();
    for msg in pending.0.drain(..) {
        match msg {
            ServerMessage::Exploded { at } => {
                commands.spawn((
                    Mesh3d(meshes.add(Sphere::new(0.5))),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: Color::srgba(1.0, 0.5, 0.1, 0.8),
                        emissive: LinearRgba::rgb(20.0, 8.0, 1.0),
                        alpha_mode: AlphaMode::Blend,
                        ..default()
                    })),
                    Transform::from_translation(Vec3::from_array(at)),
                    Effect {
                        until: now + 0.35,
                        grow: 12.0,
                    },
                ));
            }
            ServerMessage::Fired { origin, dir, .. } => {
                let origin = Vec3::from_array(origin);
                let dir = Vec3::from_array(dir).normalize_or_zero();
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

/// Our own shots answer at once: the client runs the same weapon state machine as the
/// server on its own commands, for the muzzle flash and tracer only (hits are the
/// server's to decide).
fn predict_own_shots(
    mut commands: Commands,
    time: Res<Time<Real>>,
    config: Res<sightline_sim::TickConfig>,
    params: Res<MoveParams>,
    latest: Res<LatestSnapshot>,
    mut flash: ResMut<MuzzleFlash>,
    mut effects: ResMut<crate::hud::PendingEffects>,
    mut sounds: ResMut<crate::sound::PendingSounds>,
    mut player: Query<
        (
            Entity,
            &PlayerId,
            &PlayerState,
            &sightline_sim::CurrentCmd,
            Option<&mut sightline_combat::Arsenal>,
        ),
        With<Predicted>,
    >,
) {
    let Ok((entity, id, state, cmd, arsenal)) = player.single_mut() else {
        return;
    };
    let Some(mut arsenal) = arsenal else {
        commands
            .entity(entity)
            .insert(sightline_combat::Arsenal::default());
        return;
    };
    let alive = latest
        .0
        .as_ref()
        .and_then(|s| s.players.iter().find(|p| p.id == *id))
        .is_none_or(|p| p.health > 0);
    if !alive {
        // Back with fresh weapons after respawning, as on the server.
        *arsenal = sightline_combat::Arsenal::default();
        return;
    }
    let Some(shot) = sightline_combat::step_arsenal(&mut arsenal, &cmd.0, config.dt()) else {
        return;
    };
    flash.0 = time.elapsed_secs_f64() + 0.05;
    sounds
        .0
        .push(crate::sound::Cue::Shot(shot.weapon, state.pos));
    if shot.weapon.def().projectile_speed == 0.0 {
        let origin = state.pos + Vec3::Y * params.eye(state.crouched());
        let dir = sightline_combat::aim_direction(cmd.0.yaw, cmd.0.pitch);
        effects.0.push(ServerMessage::Fired {
            shooter: *id,
            weapon: shot.weapon.index() as u8,
            origin: (origin + dir * 0.6 - Vec3::Y * 0.12).to_array(),
            dir: dir.to_array(),
        });
    }
}

fn show_muzzle_flash(
    time: Res<Time<Real>>,
    flash: Res<MuzzleFlash>,
    mut visuals: Query<&mut Visibility, With<FlashVisual>>,
) {
    let on = time.elapsed_secs_f64() < flash.0;
    for mut v in &mut visuals {
        v.set_if_neq(if on {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
    }
}

/// In team games bodies wear their team's colour: red or blue.
fn tint_by_team(
    roster: Res<sightline_client::Roster>,
    bodies: Query<(&PlayerId, &BodyMaterial)>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (id, body) in &bodies {
        let Some(team) = roster.0.get(id).and_then(|p| p.team) else {
            continue;
        };
        if let Some(mut material) = materials.get_mut(&body.0) {
            material.base_color = if team == 0 {
                Color::srgb(0.85, 0.2, 0.15)
            } else {
                Color::srgb(0.15, 0.35, 0.9)
            };
        }
    }
}
