//! Other players' bodies: a capsule, a head and a gun in each player's colour (their
//! team's in team games), standing where interpolation draws them.

use bevy::prelude::*;
use sightline_client::{RemotePlayer, Roster};
use sightline_combat::Team;
use sightline_interpolation::{DrawMode, Drawn, InterpolationSet};
use sightline_movement::{MoveFlags, MoveParams};
use sightline_sim::PlayerId;

/// A remote player's body has been given meshes.
#[derive(Component)]
struct Dressed;

/// The material of a remote player's body, recoloured for its team in team games.
#[derive(Component)]
struct BodyMaterial(Handle<StandardMaterial>);

/// Draws the other players.
pub struct PlayersPlugin;

impl Plugin for PlayersPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            Update,
            (
                dress_remote_players,
                tint_by_team.run_if(resource_changed::<Roster>),
                place_remote_players.after(InterpolationSet::Sample),
            ),
        );
    }
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

/// Remote players stand where interpolation draws them; crouching squashes them. One
/// that has just come into view shows once the drawn world reaches its first snapshot.
fn place_remote_players(
    params: Res<MoveParams>,
    mut players: Query<(&Drawn, &mut Transform, Option<&mut Visibility>), With<RemotePlayer>>,
) {
    for (drawn, mut transform, visibility) in &mut players {
        if let Some(mut visibility) = visibility {
            visibility.set_if_neq(if drawn.mode == DrawMode::Unseen {
                Visibility::Hidden
            } else {
                Visibility::Inherited
            });
        }
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

/// In team games bodies wear their team's colour: red or blue.
fn tint_by_team(
    roster: Res<Roster>,
    bodies: Query<(&PlayerId, &BodyMaterial)>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (id, body) in &bodies {
        let Some(team) = roster.0.get(id).and_then(|p| p.team) else {
            continue;
        };
        if let Some(mut material) = materials.get_mut(&body.0) {
            material.base_color = match team {
                Team::Red => Color::srgb(0.85, 0.2, 0.15),
                Team::Blue => Color::srgb(0.15, 0.35, 0.9),
            };
        }
    }
}
