//! Other players: a [`crate::scene::character`] body each, in the player's colour (their team's
//! in team games), standing where interpolation draws them and animated from how they
//! move (stride, strafe, crouch, jump and land), what they do (fire, switch weapons) and
//! whether they live (a fall backwards on death), with the weapon they hold, a flash at
//! its muzzle when they fire and a glow while a power-up runs; and, in team games, a name
//! plate over each team-mate.

use crate::MainCamera;
use crate::scene::character::{self, BodyPaint, HAND_REST, Motion, PELVIS_REST, Rig};
use crate::view::killcam::Replayed;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_client::{CombatCue, LatestSnapshot, RemotePlayer, Roster};
use sightline_combat::{Team, WeaponKind};
use sightline_interpolation::{DrawMode, Drawn, InterpolationSet};
use sightline_map::CurrentMap;
use sightline_movement::{MoveFlags, MoveParams};
use sightline_prediction::Predicted;
use sightline_protocol::{KIT_QUAD, KIT_REGEN};
use sightline_sim::PlayerId;

/// A remote player's body has been given meshes.
#[derive(Component)]
struct Dressed;

/// The materials of a remote player's body recoloured for its team in team games: its
/// clothes and its visor.
#[derive(Component)]
struct BodyMaterial {
    clothes: Handle<StandardMaterial>,
    visor: Handle<StandardMaterial>,
}

/// How a remote player has been moving, for its animation.
#[derive(Component, Debug, Default)]
struct Tracker {
    /// Where it was drawn last frame.
    last_pos: Option<Vec3>,
    /// Its velocity over the ground, smoothed.
    vel: Vec3,
    /// What the animation is driven by.
    motion: Motion,
    /// The weapon in its hand as drawn (changes halfway through a switch).
    shown: Option<WeaponKind>,
    /// The weapon the server says it holds.
    held: Option<WeaponKind>,
    /// The power-ups running, as [`sightline_protocol::PlayerSnap::kit`] bits, as last
    /// shown.
    power_ups: u8,
}

/// Farthest a name plate shows, metres.
const NAME_PLATE_RANGE: f32 = 60.0;
/// A move further than this in one frame is a teleport (a respawn), not running.
const TELEPORT: f32 = 3.0;

/// Draws the other players.
pub struct PlayersPlugin;

impl Plugin for PlayersPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            Update,
            (
                dress_remote_players,
                tint_by_team.run_if(resource_changed::<Roster>),
                (
                    place_remote_players,
                    track_motion,
                    note_remote_shots,
                    animate_bodies,
                    show_held_weapon,
                    glow_with_power_ups,
                )
                    .chain()
                    .after(InterpolationSet::Sample)
                    .after(crate::view::killcam::KillcamSet),
            )
                // Commands queued for a player in the frame its session ends would land
                // after its despawn.
                .after(crate::session::SessionSystems),
        )
        .add_systems(EguiPrimaryContextPass, draw_name_plates);
    }
}

/// A colour per player id, far apart on the hue circle.
fn player_color(id: PlayerId) -> Color {
    Color::hsl((id.0 as f32 * 137.5) % 360.0, 0.65, 0.5)
}

/// A team's colour.
fn team_color(team: Team) -> Color {
    match team {
        Team::Red => Color::srgb(0.85, 0.2, 0.15),
        Team::Blue => Color::srgb(0.15, 0.35, 0.9),
    }
}

/// The visor's glow for clothes of `color`: a brighter, lighter shade of it.
fn visor_material(color: Color) -> StandardMaterial {
    let glow = LinearRgba::from(color.mix(&Color::WHITE, 0.5));
    StandardMaterial {
        base_color: Color::BLACK,
        emissive: glow * 5.0,
        ..default()
    }
}

/// Gives each remote player a body.
fn dress_remote_players(
    mut commands: Commands,
    players: Query<(Entity, &PlayerId), (With<RemotePlayer>, Without<Dressed>)>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (entity, id) in &players {
        let color = player_color(*id);
        let paint = BodyPaint {
            clothes: materials.add(StandardMaterial {
                base_color: color,
                perceptual_roughness: 0.6,
                ..default()
            }),
            dark: materials.add(StandardMaterial {
                base_color: Color::srgb(0.09, 0.09, 0.1),
                perceptual_roughness: 0.7,
                ..default()
            }),
            visor: materials.add(visor_material(color)),
        };
        let rig = character::build_body(&mut commands, entity, &paint, &mut meshes, &mut materials);
        // A body placed before it was dressed (the killcam's stand-ins) stays where it is.
        commands
            .entity(entity)
            .insert_if_new((Transform::default(), Visibility::default()));
        commands.entity(entity).insert((
            Dressed,
            BodyMaterial {
                clothes: paint.clothes,
                visor: paint.visor,
            },
            rig,
            Tracker::default(),
        ));
    }
}

/// Remote players stand where interpolation draws them, facing their view. One that has
/// just come into view shows once the drawn world reaches its first snapshot.
fn place_remote_players(
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
        transform.translation = drawn.pos;
        transform.rotation = Quat::from_rotation_y(drawn.yaw);
    }
}

/// Eases `current` toward `target` with time constant `tau` over `dt`.
fn ease(current: f32, target: f32, dt: f32, tau: f32) -> f32 {
    current + (target - current) * (1.0 - (-dt / tau).exp())
}

/// The way a velocity `vel` goes in the frame of a player facing `yaw`: x right, y
/// forward; zero for a standstill.
fn heading(vel: Vec3, yaw: f32) -> Vec2 {
    let flat = Vec3::new(vel.x, 0.0, vel.z);
    let Some(dir) = flat.try_normalize() else {
        return Vec2::ZERO;
    };
    let forward = Quat::from_rotation_y(yaw) * Vec3::NEG_Z;
    let right = Quat::from_rotation_y(yaw) * Vec3::X;
    Vec2::new(dir.dot(right), dir.dot(forward))
}

/// Movement, crouching, jumps, landings, weapon switches and deaths as the animation
/// needs them.
fn track_motion(
    time: Res<Time>,
    latest: Res<LatestSnapshot>,
    mut players: Query<(&PlayerId, &Drawn, &mut Tracker, Option<&Replayed>), With<RemotePlayer>>,
) {
    let dt = time.delta_secs();
    if dt <= 0.0 {
        return;
    }
    for (id, drawn, mut tracker, replayed) in &mut players {
        // A body the killcam replays lives and holds what it did then.
        let snap = replayed.copied().or_else(|| {
            let s = latest.0.as_ref()?;
            let p = s.players.iter().find(|p| p.id == *id)?;
            Some(Replayed {
                health: p.health,
                weapon: p.weapon,
                kit: p.kit,
            })
        });
        let tracker = &mut *tracker;
        let m = &mut tracker.motion;
        match tracker.last_pos {
            Some(last) if last.distance(drawn.pos) < TELEPORT => {
                let vel = (drawn.pos - last) / dt;
                let k = 1.0 - (-dt / 0.08).exp();
                tracker.vel += (vel - tracker.vel) * k;
            }
            _ => tracker.vel = Vec3::ZERO,
        }
        tracker.last_pos = Some(drawn.pos);
        m.speed = Vec2::new(tracker.vel.x, tracker.vel.z).length();
        m.heading = heading(tracker.vel, drawn.yaw);
        m.phase = character::advance_phase(m.phase, m.speed, dt);
        let crouched = drawn.flags.has(MoveFlags::CROUCHED);
        m.crouch = ease(m.crouch, if crouched { 1.0 } else { 0.0 }, dt, 0.06);
        let airborne = !drawn.flags.has(MoveFlags::ON_GROUND);
        if m.airborne && !airborne {
            m.since_land = 0.0;
        }
        m.airborne = airborne;
        m.since_land += dt;
        m.since_fire += dt;
        m.since_switch += dt;
        m.pitch = drawn.pitch;
        let Some(snap) = snap else {
            continue;
        };
        m.since_death = if snap.health == 0 {
            Some(m.since_death.map_or(0.0, |t| t + dt))
        } else {
            None
        };
        if tracker.held.is_some_and(|w| w != snap.weapon) {
            m.since_switch = 0.0;
            m.switch_time = snap.weapon.def().switch_time;
        }
        tracker.held = Some(snap.weapon);
        // The new weapon comes into the hand at the bottom of the switch.
        if tracker.shown.is_none() || m.since_switch >= m.switch_time * 0.5 {
            tracker.shown = Some(snap.weapon);
        }
    }
}

/// Others' shots kick their weapons: the shot's origin is the shooter's eye, where the
/// shooter is drawn (shots are shown when the drawn world reaches their tick).
fn note_remote_shots(
    params: Res<MoveParams>,
    mut cues: MessageReader<CombatCue>,
    mut players: Query<(&Drawn, &mut Tracker), With<RemotePlayer>>,
) {
    for cue in cues.read() {
        let CombatCue::Fired {
            origin, own: false, ..
        } = *cue
        else {
            continue;
        };
        let eye = |d: &Drawn| d.pos + Vec3::Y * params.eye(d.flags.has(MoveFlags::CROUCHED));
        if let Some((_, mut tracker)) = players
            .iter_mut()
            .filter(|(d, _)| eye(d).distance(origin) < 1.5)
            .min_by(|a, b| {
                eye(a.0)
                    .distance(origin)
                    .total_cmp(&eye(b.0).distance(origin))
            })
        {
            tracker.motion.since_fire = 0.0;
        }
    }
}

/// Turns each body's joints to its pose.
fn animate_bodies(
    params: Res<MoveParams>,
    bodies: Query<(&Tracker, &Rig)>,
    mut joints: Query<&mut Transform, Without<Rig>>,
) {
    for (tracker, rig) in &bodies {
        let pose = character::pose(&tracker.motion, params.run_speed);
        let mut set = |entity: Entity, f: &dyn Fn(&mut Transform)| {
            if let Ok(mut t) = joints.get_mut(entity) {
                f(&mut t);
            }
        };
        set(rig.body, &|t| {
            t.rotation = Quat::from_rotation_x(pose.fall);
            // Falling flat, the body settles onto the floor rather than hanging over it.
            t.translation.y = -0.25 * (pose.fall / std::f32::consts::FRAC_PI_2);
        });
        set(rig.pelvis, &|t| {
            t.translation = PELVIS_REST - Vec3::Y * pose.hip_drop;
        });
        set(rig.torso, &|t| {
            t.rotation = Quat::from_rotation_x(-pose.lean)
        });
        // The aim pivot undoes the lean so the weapon points where the player looks.
        set(rig.aim, &|t| {
            t.rotation = Quat::from_rotation_x(pose.aim_pitch + pose.lean);
        });
        set(rig.hand, &|t| {
            t.translation = HAND_REST + Vec3::Z * pose.kick
        });
        for side in 0..2 {
            set(rig.hips[side], &|t| t.rotation = pose.hips[side]);
            set(rig.knees[side], &|t| t.rotation = pose.knees[side]);
        }
    }
}

/// The weapon a body holds is the one shown, flashing just after a shot; the others are
/// hidden.
fn show_held_weapon(bodies: Query<(&Tracker, &Rig)>, mut models: Query<&mut Visibility>) {
    let shown = |on: bool| {
        if on {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        }
    };
    for (tracker, rig) in &bodies {
        let flashing = tracker.motion.since_fire < character::FLASH_SECONDS;
        for &(weapon, model, flash) in &rig.weapons {
            let held = tracker.shown == Some(weapon);
            if let Ok(mut v) = models.get_mut(model) {
                v.set_if_neq(shown(held));
            }
            if let Ok(mut v) = models.get_mut(flash) {
                v.set_if_neq(shown(held && flashing));
            }
        }
    }
}

/// The glow of a body whose power-ups are `kit`: blue under quad damage, red while
/// regenerating, none without either.
fn power_up_glow(kit: u8) -> LinearRgba {
    if kit & KIT_QUAD != 0 {
        LinearRgba::rgb(0.4, 0.7, 4.0)
    } else if kit & KIT_REGEN != 0 {
        LinearRgba::rgb(3.0, 0.4, 0.5)
    } else {
        LinearRgba::BLACK
    }
}

/// Bodies glow while a power-up runs (their material changed only when that changes).
fn glow_with_power_ups(
    latest: Res<LatestSnapshot>,
    mut bodies: Query<(&PlayerId, &BodyMaterial, &mut Tracker, Option<&Replayed>)>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (id, body, mut tracker, replayed) in &mut bodies {
        let kit = replayed.map(|r| r.kit).or_else(|| {
            let s = latest.0.as_ref()?;
            Some(s.players.iter().find(|p| p.id == *id)?.kit)
        });
        let Some(kit) = kit else {
            continue;
        };
        let power_ups = kit & (KIT_QUAD | KIT_REGEN);
        if power_ups == tracker.power_ups {
            continue;
        }
        tracker.power_ups = power_ups;
        if let Some(mut material) = materials.get_mut(&body.clothes) {
            material.emissive = power_up_glow(power_ups);
        }
    }
}

/// In team games bodies wear their team's colour: red or blue, the visor a lighter shade.
fn tint_by_team(
    roster: Res<Roster>,
    bodies: Query<(&PlayerId, &BodyMaterial)>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (id, body) in &bodies {
        let Some(team) = roster.0.get(id).and_then(|p| p.team) else {
            continue;
        };
        let color = team_color(team);
        if let Some(mut material) = materials.get_mut(&body.clothes) {
            material.base_color = color;
        }
        if let Some(mut material) = materials.get_mut(&body.visor) {
            *material = visor_material(color);
        }
    }
}

/// Whether a name plate shows for a player on `their` team, seen by us on `ours`: only
/// team-mates, in team games.
fn plate_shows(ours: Option<Team>, their: Option<Team>) -> bool {
    ours.is_some() && ours == their
}

/// Team-mates' names over their heads: white in plain sight, dimmer behind walls.
fn draw_name_plates(
    mut contexts: EguiContexts,
    roster: Res<Roster>,
    map: Option<Res<CurrentMap>>,
    me: Query<&PlayerId, With<Predicted>>,
    camera: Query<(&Camera, &GlobalTransform), With<MainCamera>>,
    players: Query<
        (&PlayerId, &GlobalTransform, &InheritedVisibility, &Tracker),
        With<RemotePlayer>,
    >,
) -> Result {
    let Ok(my_id) = me.single() else {
        return Ok(());
    };
    let ours = roster.0.get(my_id).and_then(|p| p.team);
    if ours.is_none() {
        return Ok(());
    }
    let Ok((camera, view)) = camera.single() else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Background,
        egui::Id::new("name plates"),
    ));
    for (id, at, visible, tracker) in &players {
        let Some(entry) = roster.0.get(id) else {
            continue;
        };
        if !visible.get() || tracker.motion.since_death.is_some() || !plate_shows(ours, entry.team)
        {
            continue;
        }
        let head = at.translation() + Vec3::Y * 2.0;
        let distance = head.distance(view.translation());
        if distance > NAME_PLATE_RANGE {
            continue;
        }
        let Ok(screen) = camera.world_to_viewport(view, head) else {
            continue;
        };
        let seen = map.as_ref().is_none_or(|m| {
            m.world
                .is_clear(view.translation(), head - view.translation())
        });
        let alpha = if seen { 230 } else { 120 };
        let size = (16.0 - distance * 0.1).max(11.0);
        let color = team_color(entry.team.unwrap_or(Team::Red)).to_srgba();
        let tint = egui::Color32::from_rgba_unmultiplied(
            (color.red * 255.0 + 120.0).min(255.0) as u8,
            (color.green * 255.0 + 120.0).min(255.0) as u8,
            (color.blue * 255.0 + 120.0).min(255.0) as u8,
            alpha,
        );
        painter.text(
            egui::pos2(screen.x, screen.y),
            egui::Align2::CENTER_BOTTOM,
            &entry.name,
            egui::FontId::proportional(size),
            tint,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_is_in_the_players_own_frame() {
        // Facing -Z (yaw 0): moving -Z is forward, +X is right.
        assert!(heading(Vec3::NEG_Z * 5.0, 0.0).distance(Vec2::Y) < 1e-5);
        assert!(heading(Vec3::X, 0.0).distance(Vec2::X) < 1e-5);
        // Facing +X (yaw -90 degrees: turned right), moving +X is forward.
        let yaw = -std::f32::consts::FRAC_PI_2;
        assert!(heading(Vec3::X * 3.0, yaw).distance(Vec2::Y) < 1e-5);
        assert_eq!(
            heading(Vec3::Y * 4.0, 0.0),
            Vec2::ZERO,
            "falling straight down"
        );
    }

    #[test]
    fn easing_approaches_without_overshoot() {
        let mut x = 0.0;
        for _ in 0..100 {
            let next = ease(x, 1.0, 0.016, 0.06);
            assert!(next >= x && next <= 1.0);
            x = next;
        }
        assert!(x > 0.99);
        assert_eq!(ease(0.3, 1.0, 0.0, 0.06), 0.3);
    }

    #[test]
    fn power_ups_glow_quad_first() {
        assert_eq!(power_up_glow(0), LinearRgba::BLACK);
        assert!(power_up_glow(KIT_QUAD).blue > 1.0);
        assert!(power_up_glow(KIT_REGEN).red > 1.0);
        assert_eq!(power_up_glow(KIT_QUAD | KIT_REGEN), power_up_glow(KIT_QUAD));
        // Weapon bits do not glow.
        assert_eq!(power_up_glow(0b11), LinearRgba::BLACK);
    }

    #[test]
    fn name_plates_only_for_team_mates() {
        assert!(plate_shows(Some(Team::Red), Some(Team::Red)));
        assert!(!plate_shows(Some(Team::Red), Some(Team::Blue)));
        assert!(!plate_shows(None, None), "free-for-all has no team-mates");
        assert!(!plate_shows(Some(Team::Blue), None));
    }
}
