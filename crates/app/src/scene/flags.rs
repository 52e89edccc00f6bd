//! The flags of capture the flag as drawn: each a pole with a glowing cloth in its
//! team's colour, standing on its base, lying where it fell, or on the back of the
//! player who carries it, where interpolation draws that player. Where it is comes from
//! the newest snapshot: the client never shows a flag taken that the server has not.

use bevy::prelude::*;
use sightline_client::{LatestSnapshot, RemotePlayer};
use sightline_combat::{Team, base_of};
use sightline_map::CurrentMap;
use sightline_protocol::FlagSpot;
use sightline_sim::{EndSession, PlayerId, despawn_all};

/// A team's flag.
#[derive(Component)]
struct FlagVisual(Team);

/// How high the pole stands, m.
const POLE: f32 = 1.6;
/// Where a carried flag rides: up from the carrier's feet, and behind it, m.
const ON_BACK: (f32, f32) = (0.5, 0.35);

/// Draws the flags.
pub struct FlagsPlugin;

impl Plugin for FlagsPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, place_flags)
            .add_systems(EndSession, despawn_all::<FlagVisual>);
    }
}

/// The team's colour, bright enough to glow.
fn glow(team: Team) -> LinearRgba {
    match team {
        Team::Red => LinearRgba::rgb(4.0, 0.3, 0.2),
        Team::Blue => LinearRgba::rgb(0.3, 0.8, 5.0),
    }
}

/// Where a flag is drawn and which way it faces: its base, where it lies, or on its
/// carrier's back; `None` when it is not to be drawn (its carrier not drawn, or ours).
pub(crate) fn flag_place(
    spot: FlagSpot,
    base: Vec3,
    carrier: impl Fn(PlayerId) -> Option<Transform>,
) -> Option<Transform> {
    match spot {
        FlagSpot::Home => Some(Transform::from_translation(base)),
        FlagSpot::Dropped(pos) => Some(
            Transform::from_translation(Vec3::from_array(pos))
                .with_rotation(Quat::from_rotation_z(0.35)),
        ),
        FlagSpot::Carried(id) => carrier(id).map(|t| {
            let back = t.rotation * Vec3::Z * ON_BACK.1;
            Transform::from_translation(t.translation + Vec3::Y * ON_BACK.0 + back)
                .with_rotation(t.rotation * Quat::from_rotation_x(-0.2))
        }),
    }
}

/// Spawns the two flags the first time capture the flag is seen, and puts each where
/// the newest snapshot says it is.
fn place_flags(
    mut commands: Commands,
    latest: Res<LatestSnapshot>,
    map: Option<Res<CurrentMap>>,
    carriers: Query<(&PlayerId, &Transform, &Visibility), With<RemotePlayer>>,
    mut flags: Query<(&FlagVisual, &mut Transform, &mut Visibility), Without<RemotePlayer>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let spots = latest.0.as_ref().and_then(|s| s.flags);
    let bases = map.as_ref().and_then(|m| m.def.flags);
    let (Some(spots), Some(bases)) = (spots, bases) else {
        for (_, _, mut visibility) in &mut flags {
            visibility.set_if_neq(Visibility::Hidden);
        }
        return;
    };
    if flags.is_empty() {
        spawn_flags(&mut commands, &mut meshes, &mut materials);
        return;
    }
    let carrier = |id: PlayerId| {
        carriers
            .iter()
            .find(|(p, _, v)| **p == id && **v != Visibility::Hidden)
            .map(|(_, t, _)| *t)
    };
    for (flag, mut transform, mut visibility) in &mut flags {
        let team = flag.0;
        match flag_place(spots[team.index()], base_of(&bases, team), carrier) {
            Some(place) => {
                *transform = place;
                visibility.set_if_neq(Visibility::Inherited);
            }
            None => {
                visibility.set_if_neq(Visibility::Hidden);
            }
        }
    }
}

/// A pole and a cloth for each team, hidden until placed.
fn spawn_flags(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
) {
    let pole = meshes.add(Cuboid::new(0.05, POLE, 0.05));
    let cloth = meshes.add(Cuboid::new(0.7, 0.45, 0.04));
    let metal = materials.add(StandardMaterial {
        base_color: Color::srgb(0.75, 0.75, 0.78),
        metallic: 0.8,
        perceptual_roughness: 0.35,
        ..default()
    });
    for team in Team::ALL {
        let colour = materials.add(StandardMaterial {
            base_color: Color::from(glow(team) * 0.25),
            emissive: glow(team),
            ..default()
        });
        commands
            .spawn((FlagVisual(team), Transform::default(), Visibility::Hidden))
            .with_children(|p| {
                p.spawn((
                    Mesh3d(pole.clone()),
                    MeshMaterial3d(metal.clone()),
                    Transform::from_xyz(0.0, POLE / 2.0, 0.0),
                ));
                p.spawn((
                    Mesh3d(cloth.clone()),
                    MeshMaterial3d(colour),
                    Transform::from_xyz(0.37, POLE - 0.25, 0.0),
                ));
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_stands_on_its_base_lies_where_it_fell_or_rides_its_carrier() {
        let base = Vec3::new(-26.0, 0.05, 5.0);
        let none = |_| None;
        assert_eq!(
            flag_place(FlagSpot::Home, base, none).unwrap().translation,
            base
        );
        let lying = flag_place(FlagSpot::Dropped([1.0, 0.0, 2.0]), base, none).unwrap();
        assert_eq!(lying.translation, Vec3::new(1.0, 0.0, 2.0));
        let carrier = Transform::from_xyz(3.0, 0.0, 4.0);
        let carried = flag_place(FlagSpot::Carried(PlayerId(2)), base, |id| {
            (id == PlayerId(2)).then_some(carrier)
        })
        .unwrap();
        assert!(carried.translation.distance(carrier.translation) < 1.0);
        assert!(carried.translation.y > carrier.translation.y);
        assert_eq!(
            flag_place(FlagSpot::Carried(PlayerId(5)), base, none),
            None,
            "a carrier not drawn (or our own player) carries it out of sight"
        );
    }
}
