//! The death camera: from the moment the newest snapshot has us dead until it has us
//! alive again, the view falls to the floor where the server has our body, then turns to
//! look at whoever killed us, over a line naming them, their weapon and the health they
//! have left.
//!
//! While it shows, the camera ignores the predicted player and its fading correction:
//! the client predicted on for a round trip after the server had us dead, and the
//! correction that follows would otherwise swing the view back across the floor. The
//! fall starts where the camera was last drawn, so the view never jumps. On respawn the
//! server's new spawn count makes prediction take the new state, and the ordinary camera
//! snaps to it (see `camera.rs`).

use crate::session::AppState;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_client::{LatestSnapshot, LocalPlayer, RemotePlayer, Roster, ShownEvent};
use sightline_combat::WeaponKind;
use sightline_interpolation::Drawn;
use sightline_movement::MoveParams;
use sightline_protocol::PlayerEvent;
use sightline_sim::{PlayerId, SessionAppExt};

/// Seconds the view takes to fall to the floor.
pub const FALL_SECONDS: f32 = 0.6;
/// Seconds after death when the view starts turning toward the killer.
pub const TURN_START_SECONDS: f32 = 0.8;
/// Seconds the turn takes.
pub const TURN_SECONDS: f32 = 0.7;
/// Eye height above the feet once fallen: a body on the floor.
pub const LYING_EYE: f32 = 0.35;
/// How far the view tips sideways while falling, radians.
pub const FALL_ROLL: f32 = 0.35;

/// Where the view was when we died.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeathStart {
    /// The camera's position as last drawn alive.
    pub eye: Vec3,
    /// Its yaw.
    pub yaw: f32,
    /// Its pitch.
    pub pitch: f32,
}

/// Who killed us, as the server's Killed event said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Killer {
    /// The killer (ourselves for a suicide).
    pub id: PlayerId,
    /// The weapon.
    pub weapon: WeaponKind,
}

/// The death camera's state for this session.
#[derive(Resource, Debug, Default)]
pub struct DeathView {
    /// Since when (real seconds) we are dead, and where the view was; `None` alive.
    dead: Option<(f64, DeathStart)>,
    /// The last Killed event about us, kept until the next life.
    killer: Option<Killer>,
}

impl DeathView {
    /// Whether the death camera has the view.
    pub fn active(&self) -> bool {
        self.dead.is_some()
    }
}

/// Eases from 0 to 1 over `t` in 0..1, slow at both ends.
fn smoothstep(t: f32) -> f32 {
    let t = t.clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// The yaw and pitch that look from `from` toward `to` (the camera looks along -Z,
/// turned by yaw about +Y, then pitched about +X); `None` when they are the same point.
pub fn look_angles(from: Vec3, to: Vec3) -> Option<(f32, f32)> {
    let d = to - from;
    let flat = Vec2::new(d.x, d.z).length();
    if d.length_squared() < 1e-6 {
        return None;
    }
    Some((f32::atan2(-d.x, -d.z), f32::atan2(d.y, flat)))
}

/// The death camera's position and rotation `t` seconds after death: it falls from
/// `start` to [`LYING_EYE`] above `body` (the feet, as the server has them) over
/// [`FALL_SECONDS`], speeding up like a fall, tipping sideways; from
/// [`TURN_START_SECONDS`] it turns, the short way round, to look at `killer` (their eye),
/// when there is one to look at.
pub fn death_pose(t: f32, start: &DeathStart, body: Vec3, killer: Option<Vec3>) -> (Vec3, Quat) {
    let t = t.max(0.0);
    let fall = (t / FALL_SECONDS).min(1.0);
    // Gravity's ease-in: distance grows with the square of time.
    let pos = start.eye.lerp(body + Vec3::Y * LYING_EYE, fall * fall);
    let roll = FALL_ROLL * smoothstep(fall);
    let (mut yaw, mut pitch) = (start.yaw, start.pitch);
    if let Some((to_yaw, to_pitch)) = killer.and_then(|k| look_angles(pos, k)) {
        let turn = smoothstep((t - TURN_START_SECONDS) / TURN_SECONDS);
        yaw += sightline_sim::wrap_angle(to_yaw - start.yaw) * turn;
        pitch += (to_pitch - start.pitch) * turn;
    }
    (pos, Quat::from_euler(EulerRot::YXZ, yaw, pitch, roll))
}

/// The line under the death camera: who killed us with what, and their health left.
pub fn death_line(killer: Option<(&str, WeaponKind, Option<u8>)>, suicide: bool) -> String {
    match killer {
        None => "You died".to_string(),
        Some((_, weapon, _)) if suicide => {
            format!("You killed yourself with the {}", weapon.def().name)
        }
        Some((name, weapon, health)) => {
            let mut line = format!("{name} killed you with the {}", weapon.def().name);
            match health {
                Some(0) => line.push_str(&format!("  ·  {name} is dead too")),
                Some(h) => line.push_str(&format!("  ·  {name} has {h} health left")),
                None => {}
            }
            line
        }
    }
}

/// Takes the view while we are dead.
pub struct DeathCamPlugin;

impl Plugin for DeathCamPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<DeathView>()
            .add_systems(
                Update,
                (note_killer, follow_life, place_death_camera)
                    .chain()
                    .after(crate::camera::CameraSet),
            )
            .add_systems(
                EguiPrimaryContextPass,
                draw_death_line.run_if(in_state(AppState::Playing)),
            );
    }
}

/// Remembers who killed us from the server's event.
fn note_killer(
    mut shown: MessageReader<ShownEvent>,
    me: Query<&PlayerId, With<LocalPlayer>>,
    mut view: ResMut<DeathView>,
) {
    let Ok(me) = me.single() else {
        shown.clear();
        return;
    };
    for ShownEvent(event) in shown.read() {
        if let PlayerEvent::Killed {
            victim,
            killer,
            weapon,
        } = *event
            && victim == *me
        {
            view.killer = Some(Killer { id: killer, weapon });
        }
    }
}

/// Starts the death camera when the newest snapshot has us dead, from where the camera
/// was last drawn, and ends it when a snapshot has us alive.
fn follow_life(
    time: Res<Time<Real>>,
    latest: Res<LatestSnapshot>,
    me: Query<&PlayerId, With<LocalPlayer>>,
    camera: Query<&Transform, With<crate::camera::MainCamera>>,
    mut view: ResMut<DeathView>,
) {
    let dead = me
        .single()
        .is_ok_and(|id| sightline_client::dead_in(&latest, *id));
    match (dead, view.dead.is_some()) {
        (true, false) => {
            let Ok(transform) = camera.single() else {
                return;
            };
            let (yaw, pitch, _) = transform.rotation.to_euler(EulerRot::YXZ);
            let start = DeathStart {
                eye: transform.translation,
                yaw,
                pitch,
            };
            view.dead = Some((time.elapsed_secs_f64(), start));
            info!("death camera: dead, until the server respawns us");
        }
        (false, true) => {
            *view = DeathView::default();
            info!("death camera: respawned");
        }
        _ => {}
    }
}

/// Where a player is drawn (others interpolated) or, failing that, where the newest
/// snapshot has them.
fn position_of(
    id: PlayerId,
    latest: &LatestSnapshot,
    drawn: &Query<(&PlayerId, &Drawn), With<RemotePlayer>>,
) -> Option<Vec3> {
    drawn
        .iter()
        .find(|(p, _)| **p == id)
        .map(|(_, d)| d.pos)
        .or_else(|| {
            let snap = latest.0.as_ref()?;
            let p = snap.players.iter().find(|p| p.id == id)?;
            Some(p.state().pos)
        })
}

/// Sets the camera from [`death_pose`] while we are dead.
fn place_death_camera(
    time: Res<Time<Real>>,
    view: Res<DeathView>,
    latest: Res<LatestSnapshot>,
    params: Res<MoveParams>,
    me: Query<&PlayerId, With<LocalPlayer>>,
    drawn: Query<(&PlayerId, &Drawn), With<RemotePlayer>>,
    mut camera: Query<&mut Transform, With<crate::camera::MainCamera>>,
) {
    let (Some((since, start)), Ok(me), Ok(mut transform)) =
        (view.dead, me.single(), camera.single_mut())
    else {
        return;
    };
    // The body where the server has it (it may still be flying from a rocket).
    let body = position_of(*me, &latest, &drawn).unwrap_or(start.eye - Vec3::Y * params.eye(false));
    let killer = view
        .killer
        .filter(|k| k.id != *me)
        .and_then(|k| position_of(k.id, &latest, &drawn))
        .map(|feet| feet + Vec3::Y * params.eye(false));
    let t = (time.elapsed_secs_f64() - since) as f32;
    let (pos, rotation) = death_pose(t, &start, body, killer);
    transform.translation = pos;
    transform.rotation = rotation;
}

/// The line naming the killer, low in the middle of the screen.
fn draw_death_line(
    mut contexts: EguiContexts,
    view: Res<DeathView>,
    latest: Res<LatestSnapshot>,
    roster: Res<Roster>,
    me: Query<&PlayerId, With<LocalPlayer>>,
) -> Result {
    if !view.active() {
        return Ok(());
    }
    let Ok(me) = me.single() else {
        return Ok(());
    };
    let killer = view.killer.map(|k| {
        let health = latest
            .0
            .as_ref()
            .and_then(|s| s.players.iter().find(|p| p.id == k.id))
            .map(|p| p.health);
        (roster.name(k.id), k.weapon, health)
    });
    let suicide = view.killer.is_some_and(|k| k.id == *me);
    let line = death_line(killer, suicide);
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("deathcam"),
    ));
    let color = egui::Color32::from_rgb(255, 110, 90);
    let galley = painter.layout_no_wrap(line, egui::FontId::proportional(26.0), color);
    let at = egui::pos2(screen.center().x, screen.bottom() - screen.height() * 0.22);
    let rect = egui::Align2::CENTER_CENTER.anchor_size(at, galley.size());
    painter.rect_filled(rect.expand(8.0), 6.0, egui::Color32::from_black_alpha(150));
    painter.galley(rect.min, galley, color);
    let hint = painter.layout_no_wrap(
        "respawning...".to_string(),
        egui::FontId::proportional(16.0),
        egui::Color32::from_white_alpha(200),
    );
    let hint_rect =
        egui::Align2::CENTER_TOP.anchor_size(egui::pos2(at.x, rect.bottom() + 14.0), hint.size());
    painter.rect_filled(
        hint_rect.expand(4.0),
        4.0,
        egui::Color32::from_black_alpha(120),
    );
    painter.galley(hint_rect.min, hint, egui::Color32::from_white_alpha(200));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: DeathStart = DeathStart {
        eye: Vec3::new(1.0, 1.7, 2.0),
        yaw: 0.5,
        pitch: -0.2,
    };
    const BODY: Vec3 = Vec3::new(1.5, 0.0, 2.0);

    fn forward(rotation: Quat) -> Vec3 {
        rotation * Vec3::NEG_Z
    }

    #[test]
    fn the_pose_starts_where_the_view_was() {
        let (pos, rotation) = death_pose(0.0, &START, BODY, Some(Vec3::new(9.0, 1.7, 9.0)));
        assert!(pos.distance(START.eye) < 1e-6);
        let expected = Quat::from_euler(EulerRot::YXZ, START.yaw, START.pitch, 0.0);
        assert!(rotation.angle_between(expected) < 1e-5);
    }

    #[test]
    fn the_view_falls_faster_and_faster_to_the_body_on_the_floor() {
        let height = |t: f32| death_pose(t, &START, BODY, None).0.y;
        let floor = BODY.y + LYING_EYE;
        let quarter = START.eye.y - height(FALL_SECONDS * 0.25);
        let second_quarter = height(FALL_SECONDS * 0.25) - height(FALL_SECONDS * 0.5);
        assert!(second_quarter > quarter, "a fall speeds up");
        let (pos, _) = death_pose(FALL_SECONDS, &START, BODY, None);
        assert!(pos.distance(BODY + Vec3::Y * LYING_EYE) < 1e-5);
        assert!((height(60.0) - floor).abs() < 1e-5, "and stays there");
        // Monotonic: never bounces up.
        let mut last = START.eye.y;
        for i in 1..=30 {
            let h = height(i as f32 * 0.05);
            assert!(h <= last + 1e-6);
            last = h;
        }
    }

    #[test]
    fn without_a_killer_the_view_keeps_its_direction_and_tips_over() {
        let (_, rotation) = death_pose(5.0, &START, BODY, None);
        let (yaw, pitch, roll) = rotation.to_euler(EulerRot::YXZ);
        assert!((yaw - START.yaw).abs() < 1e-5);
        assert!((pitch - START.pitch).abs() < 1e-5);
        assert!((roll - FALL_ROLL).abs() < 1e-5);
    }

    #[test]
    fn after_the_turn_the_view_looks_at_the_killer() {
        let killer = Vec3::new(-6.0, 3.0, 8.0);
        let before = death_pose(TURN_START_SECONDS, &START, BODY, Some(killer)).1;
        assert!(before.angle_between(death_pose(TURN_START_SECONDS, &START, BODY, None).1) < 1e-5);
        let t = TURN_START_SECONDS + TURN_SECONDS;
        let (pos, rotation) = death_pose(t, &START, BODY, Some(killer));
        let to_killer = (killer - pos).normalize();
        assert!(
            forward(rotation).angle_between(to_killer) < 1e-3,
            "{:?} against {to_killer:?}",
            forward(rotation)
        );
        // Half way through the turn it is between the two directions.
        let (_, mid) = death_pose(
            TURN_START_SECONDS + TURN_SECONDS / 2.0,
            &START,
            BODY,
            Some(killer),
        );
        let start_dir = forward(Quat::from_euler(EulerRot::YXZ, START.yaw, START.pitch, 0.0));
        assert!(forward(mid).angle_between(to_killer) < start_dir.angle_between(to_killer));
    }

    #[test]
    fn the_turn_goes_the_short_way_round() {
        // Facing yaw 3.0, the killer at yaw -3.0: 0.28 rad apart across ±π, not 6.
        let start = DeathStart {
            yaw: 3.0,
            pitch: 0.0,
            ..START
        };
        let body = start.eye - Vec3::Y * (start.eye.y - LYING_EYE);
        let lying = body + Vec3::Y * LYING_EYE;
        let killer = lying + Vec3::new(-(-3.0f32).sin(), 0.0, -(-3.0f32).cos()) * 10.0;
        let mut previous = 3.0f32;
        for i in 0..=20 {
            let t = TURN_START_SECONDS + TURN_SECONDS * i as f32 / 20.0;
            let (yaw, _, _) = death_pose(t, &start, body, Some(killer))
                .1
                .to_euler(EulerRot::YXZ);
            let step = sightline_sim::wrap_angle(yaw - previous).abs();
            assert!(step < 0.1, "a step of {step} rad at {t} s");
            previous = yaw;
        }
        assert!(sightline_sim::wrap_angle(previous - -3.0).abs() < 1e-3);
    }

    #[test]
    fn looking_at_the_same_point_is_no_direction() {
        assert_eq!(look_angles(Vec3::ONE, Vec3::ONE), None);
        let (yaw, pitch) = look_angles(Vec3::ZERO, Vec3::NEG_Z).unwrap();
        assert!(yaw.abs() < 1e-6 && pitch.abs() < 1e-6);
        let (_, up) = look_angles(Vec3::ZERO, Vec3::new(0.0, 1.0, -1.0)).unwrap();
        assert!((up - std::f32::consts::FRAC_PI_4).abs() < 1e-6);
    }

    #[test]
    fn the_line_names_the_killer_their_weapon_and_their_health() {
        let rifle = WeaponKind::Rifle.def().name;
        assert_eq!(
            death_line(Some(("Ana", WeaponKind::Rifle, Some(42))), false),
            format!("Ana killed you with the {rifle}  ·  Ana has 42 health left")
        );
        assert!(death_line(Some(("Ana", WeaponKind::Rifle, Some(0))), false).ends_with("dead too"));
        assert!(!death_line(Some(("Ana", WeaponKind::Rifle, None)), false).contains("health"));
        assert_eq!(
            death_line(Some(("me", WeaponKind::Rockets, Some(0))), true),
            format!(
                "You killed yourself with the {}",
                WeaponKind::Rockets.def().name
            )
        );
        assert_eq!(death_line(None, false), "You died");
    }
}
