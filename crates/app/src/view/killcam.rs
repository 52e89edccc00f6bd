//! The killcam: when another player kills us, the last moments before the kill are shown
//! again through the killer's eyes while the respawn timer runs, then the death camera
//! takes the view back. Fire or jump skips it (or `killcam_skip`); `cl_killcam 0` turns
//! it off.
//!
//! It replays what the server sent us ([`RecentWorld`]), so it shows the world as our
//! snapshots had it: the killer's view and aim as the server simulated them, everyone we
//! were sent (our own body among them, as the server had it) and the projectiles in
//! flight. Players hidden from us by interest management are not in it. The replay is
//! drawn by the same bodies and effects as the live world: stand-in bodies
//! ([`KillcamGhost`]) are posed from the clip, and the live players are hidden meanwhile.

use crate::camera::MainCamera;
use crate::cvars::cvar;
use crate::session::AppState;
use bevy::prelude::*;
use bevy::transform::TransformSystems;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_client::{
    Clip, LatestSnapshot, LocalInput, LocalPlayer, RecentWorld, RemotePlayer, Roster,
};
use sightline_combat::{ProjectileKind, WeaponKind};
use sightline_console::{ConsoleCommands, Cvars, RunCommand};
use sightline_interpolation::{DrawMode, Drawn, DrawnProjectiles, InterpolationSet};
use sightline_movement::{MoveFlags, MoveParams};
use sightline_protocol::PlayerEvent;
use sightline_sim::{Buttons, EndSession, PlayerId, SessionAppExt, despawn_all};

/// Seconds before the kill that are replayed: what fits in the respawn delay
/// ([`sightline_combat::RESPAWN_DELAY`]) with the kill's moment held after it.
pub const KILLCAM_SECONDS: f64 = 1.4;
/// Seconds the moment of the kill is held before the death camera comes back.
pub const KILLCAM_HOLD: f64 = 0.4;

/// The killcam while it shows.
#[derive(Resource, Debug, Default)]
pub struct Killcam {
    showing: Option<Showing>,
    /// The number of the last death event of ours replayed (or passed over).
    replayed: Option<u32>,
}

/// A replay under way.
#[derive(Debug)]
struct Showing {
    /// The seconds before the kill.
    clip: Clip,
    /// Through whose eyes.
    killer: PlayerId,
    /// With what.
    weapon: WeaponKind,
    /// When it started, real seconds.
    started: f64,
    /// The buttons held when it started: only a new press skips it.
    held: Buttons,
    /// The projectiles drawn this frame and what each is.
    projectiles: Vec<(u16, ProjectileKind)>,
    /// Where the killer's eye was last seen.
    eye: Option<Transform>,
}

impl Killcam {
    /// Whether a replay has the view.
    pub fn active(&self) -> bool {
        self.showing.is_some()
    }

    /// The server time the replay shows at real time `now`: the clip at normal speed
    /// from its start, then its end held.
    pub fn replay_time(&self, now: f64) -> Option<f64> {
        let s = self.showing.as_ref()?;
        Some((s.clip.from + (now - s.started).max(0.0)).min(s.clip.to))
    }

    /// Through whose eyes, and the clip replayed.
    #[cfg(test)]
    pub(crate) fn replaying(&self) -> Option<(PlayerId, &Clip)> {
        self.showing.as_ref().map(|s| (s.killer, &s.clip))
    }

    /// The weapon in the killer's hand at the replay's moment, at real time `now`.
    pub(crate) fn killer_weapon(&self, now: f64) -> Option<WeaponKind> {
        let s = self.showing.as_ref()?;
        Some(s.clip.pose(s.killer, self.replay_time(now)?)?.weapon)
    }

    /// What replayed projectile `id` is.
    pub(crate) fn projectile_kind(&self, id: u16) -> Option<ProjectileKind> {
        let s = self.showing.as_ref()?;
        s.projectiles.iter().find(|p| p.0 == id).map(|p| p.1)
    }
}

/// A stand-in body for a player as the replay shows them.
#[derive(Component, Debug, Clone, Copy)]
pub struct KillcamGhost;

/// What a replayed body shows that the newest snapshot would otherwise say: whether the
/// player lived then, the weapon in hand, and the power-ups.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct Replayed {
    /// Health then, 0 dead.
    pub health: u8,
    /// The weapon in hand then.
    pub weapon: WeaponKind,
    /// [`sightline_protocol::PlayerSnap::kit`] then.
    pub kit: u8,
}

/// Where the killcam poses what it replays: after interpolation, before the bodies and
/// projectiles are placed from it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KillcamSet;

/// Replays the moments before our death from the killer's eyes.
pub struct KillcamPlugin;

impl Plugin for KillcamPlugin {
    fn build(&self, app: &mut App) {
        app.world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default)
            .register("killcam_skip", "skip the killcam, back to the death camera");
        app.init_session_resource::<Killcam>()
            .init_session_resource::<RecentWorld>()
            .add_systems(
                Update,
                (
                    (start_killcam, end_killcam).chain(),
                    (pose_ghosts, replay_projectiles)
                        .after(InterpolationSet::Sample)
                        .in_set(KillcamSet),
                )
                    .chain(),
            )
            .add_systems(
                PostUpdate,
                (hide_live_players, place_killcam_camera)
                    .before(TransformSystems::Propagate)
                    .run_if(|k: Res<Killcam>| k.active()),
            )
            .add_systems(
                EguiPrimaryContextPass,
                draw_killcam_line.run_if(in_state(AppState::Playing)),
            )
            .add_systems(EndSession, despawn_all::<KillcamGhost>);
    }
}

/// Starts a replay when the newest snapshot has us dead and carries the event of another
/// player killing us (events ride every snapshot until acknowledged, so the one that
/// first has us dead has it), if the recent world holds our death and the killer in the
/// seconds before it. Each death is replayed once, however many snapshots carry it.
#[allow(clippy::too_many_arguments)]
fn start_killcam(
    mut commands: Commands,
    time: Res<Time<Real>>,
    cvars: Option<Res<Cvars>>,
    latest: Res<LatestSnapshot>,
    recent: Res<RecentWorld>,
    input: Res<LocalInput>,
    me: Query<&PlayerId, With<LocalPlayer>>,
    mut killcam: ResMut<Killcam>,
) {
    let (Some(snapshot), Ok(me)) = (latest.0.as_ref(), me.single()) else {
        return;
    };
    if killcam.active() || !sightline_client::dead_in(&latest, *me) {
        return;
    }
    let kill = snapshot.events.iter().rev().find_map(|e| match e.event {
        PlayerEvent::Killed {
            victim,
            killer,
            weapon,
        } if victim == *me => Some((e.seq, killer, weapon)),
        _ => None,
    });
    let Some((seq, killer, weapon)) = kill else {
        return;
    };
    if killcam.replayed.is_some_and(|last| last >= seq) {
        return;
    }
    killcam.replayed = Some(seq);
    if killer == *me || !cvars.is_none_or(|c| c.read(cvar::CL_KILLCAM)) {
        return;
    }
    let Some(death) = recent.death_of(*me) else {
        info!("no killcam: our death is not in the snapshots kept");
        return;
    };
    // From the killer's first moment in our snapshots, if it came later: before it,
    // interest management did not send us where they were.
    let mut clip = recent.clip(death - KILLCAM_SECONDS, death);
    match clip.first_seen(killer) {
        Some(seen) if clip.pose(killer, death).is_some() => {
            if seen > clip.from {
                clip = recent.clip(seen, death);
            }
        }
        _ => {
            info!("no killcam: the killer was not in our view when we died");
            return;
        }
    }
    for id in clip.players().filter(|id| *id != killer) {
        // Hidden until the clip poses it.
        commands.spawn((
            KillcamGhost,
            id,
            RemotePlayer,
            Drawn {
                mode: DrawMode::Unseen,
                ..default()
            },
            Transform::default(),
            Visibility::Hidden,
        ));
    }
    info!(
        "killcam: the last {:.2} s from player {}'s eyes",
        clip.to - clip.from,
        killer.0
    );
    killcam.showing = Some(Showing {
        clip,
        killer,
        weapon,
        started: time.elapsed_secs_f64(),
        held: input.buttons,
        projectiles: Vec::new(),
        eye: None,
    });
}

/// Ends the replay when it has run its course, when fire or jump is newly pressed (or
/// `killcam_skip` run, which a key can be bound to), or when we live again.
#[allow(clippy::too_many_arguments)]
fn end_killcam(
    mut commands: Commands,
    mut run: MessageReader<RunCommand>,
    time: Res<Time<Real>>,
    latest: Res<LatestSnapshot>,
    input: Res<LocalInput>,
    me: Query<&PlayerId, With<LocalPlayer>>,
    ghosts: Query<Entity, With<KillcamGhost>>,
    mut killcam: ResMut<Killcam>,
) {
    let asked = run.read().any(|c| c.name == "killcam_skip");
    let Some(showing) = killcam.showing.as_mut() else {
        return;
    };
    let skip = Buttons(Buttons::FIRE.0 | Buttons::JUMP.0);
    let pressed = Buttons(input.buttons.0 & !showing.held.0 & skip.0);
    showing.held = Buttons(showing.held.0 & input.buttons.0);
    let length = showing.clip.to - showing.clip.from + KILLCAM_HOLD;
    let over = time.elapsed_secs_f64() - showing.started > length;
    let alive = me
        .single()
        .is_ok_and(|id| !sightline_client::dead_in(&latest, *id));
    if over || asked || pressed.0 != 0 || alive || me.is_empty() {
        killcam.showing = None;
        for ghost in &ghosts {
            commands.entity(ghost).despawn();
        }
    }
}

/// Poses each stand-in body as the clip has its player at the replay's moment.
fn pose_ghosts(
    time: Res<Time<Real>>,
    killcam: Res<Killcam>,
    mut ghosts: Query<(Entity, &PlayerId, &mut Drawn), With<KillcamGhost>>,
    mut commands: Commands,
) {
    let (Some(showing), Some(t)) = (
        killcam.showing.as_ref(),
        killcam.replay_time(time.elapsed_secs_f64()),
    ) else {
        return;
    };
    for (entity, id, mut drawn) in &mut ghosts {
        let Some(pose) = showing.clip.pose(*id, t) else {
            drawn.mode = DrawMode::Unseen;
            continue;
        };
        let s = pose.state;
        *drawn = Drawn {
            pos: s.pos,
            yaw: s.yaw,
            pitch: s.pitch,
            flags: s.flags,
            mode: DrawMode::Interpolated,
            time: t,
        };
        commands.entity(entity).insert(Replayed {
            health: pose.health,
            weapon: pose.weapon,
            kit: pose.kit,
        });
    }
}

/// The projectiles drawn are the clip's at the replay's moment.
fn replay_projectiles(
    time: Res<Time<Real>>,
    mut killcam: ResMut<Killcam>,
    mut drawn: ResMut<DrawnProjectiles>,
) {
    let Some(t) = killcam.replay_time(time.elapsed_secs_f64()) else {
        return;
    };
    let Some(showing) = killcam.showing.as_mut() else {
        return;
    };
    let flying = showing.clip.projectiles(t);
    drawn.0 = flying.iter().map(|&(id, _, pos)| (id, pos)).collect();
    showing.projectiles = flying.iter().map(|&(id, kind, _)| (id, kind)).collect();
}

/// The live world's players stay hidden behind the replay.
fn hide_live_players(
    mut players: Query<&mut Visibility, (With<RemotePlayer>, Without<KillcamGhost>)>,
) {
    for mut visibility in &mut players {
        visibility.set_if_neq(Visibility::Hidden);
    }
}

/// The camera looks through the killer's eyes as the clip has them.
fn place_killcam_camera(
    time: Res<Time<Real>>,
    mut killcam: ResMut<Killcam>,
    params: Res<MoveParams>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    let t = killcam.replay_time(time.elapsed_secs_f64());
    let (Some(showing), Some(t), Ok(mut transform)) =
        (killcam.showing.as_mut(), t, camera.single_mut())
    else {
        return;
    };
    let eye = &mut showing.eye;
    // Where the killer is missing for a moment, the view stays where it was.
    if let Some(pose) = showing.clip.pose(showing.killer, t) {
        let s = pose.state;
        *eye = Some(Transform {
            translation: s.pos + Vec3::Y * params.eye(s.flags.has(MoveFlags::CROUCHED)),
            rotation: Quat::from_euler(EulerRot::YXZ, s.yaw, s.pitch, 0.0),
            scale: Vec3::ONE,
        });
    }
    if let Some(eye) = eye {
        *transform = *eye;
    }
}

/// "KILLCAM", whose eyes, and how far through, at the top of the screen.
fn draw_killcam_line(
    mut contexts: EguiContexts,
    time: Res<Time<Real>>,
    killcam: Res<Killcam>,
    roster: Res<Roster>,
) -> Result {
    let (Some(showing), Some(t)) = (
        killcam.showing.as_ref(),
        killcam.replay_time(time.elapsed_secs_f64()),
    ) else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("killcam"),
    ));
    let line = format!(
        "KILLCAM  ·  {} with the {}  ·  fire or jump skips",
        roster.name(showing.killer),
        showing.weapon.def().name
    );
    let color = egui::Color32::from_rgb(255, 200, 80);
    let galley = painter.layout_no_wrap(line, egui::FontId::proportional(22.0), color);
    let at = egui::pos2(screen.center().x, screen.top() + 60.0);
    let rect = egui::Align2::CENTER_CENTER.anchor_size(at, galley.size());
    painter.rect_filled(rect.expand(8.0), 6.0, egui::Color32::from_black_alpha(160));
    painter.galley(rect.min, galley, color);
    // How far through the replay, under the line.
    let span = (showing.clip.to - showing.clip.from).max(1e-3);
    let done = ((t - showing.clip.from) / span).clamp(0.0, 1.0) as f32;
    let bar = egui::Rect::from_min_size(
        egui::pos2(rect.left() - 8.0, rect.bottom() + 10.0),
        egui::vec2(rect.width() + 16.0, 4.0),
    );
    painter.rect_filled(bar, 2.0, egui::Color32::from_black_alpha(160));
    let mut filled = bar;
    filled.set_width(bar.width() * done);
    painter.rect_filled(filled, 2.0, color);
    Ok(())
}
