//! The spectator's view: a free camera flown with the movement keys and the mouse, or a
//! followed player's view, through their eyes or from behind them. Fire follows the next
//! player, alternate fire the previous, jump changes the view; the server is told whom
//! we follow ([`Watching`]), and sends what that player's client is sent.

use crate::camera::MainCamera;
use bevy::prelude::*;
use bevy::transform::TransformSystems;
use bevy_egui::egui;
use sightline_client::{LocalInput, RemotePlayer, Roster, Watching};
use sightline_console::{ConsoleCommands, RunCommand};
use sightline_interpolation::{DrawMode, Drawn};
use sightline_map::{CollisionWorld, CurrentMap};
use sightline_movement::{MoveFlags, MoveParams};
use sightline_sim::{Buttons, EndSession, PlayerId, SessionAppExt};

/// How a spectator looks at the game.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ViewMode {
    /// Flown freely.
    #[default]
    Free,
    /// Through the followed player's eyes.
    FirstPerson,
    /// From behind and above the followed player.
    Chase,
}

impl ViewMode {
    /// The next view, as jump steps through them.
    fn next(self) -> Self {
        match self {
            Self::Free => Self::FirstPerson,
            Self::FirstPerson => Self::Chase,
            Self::Chase => Self::Free,
        }
    }

    /// In words, for the line on screen.
    fn label(self) -> &'static str {
        match self {
            Self::Free => "free camera",
            Self::FirstPerson => "first person",
            Self::Chase => "chase camera",
        }
    }
}

/// The spectator's camera.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub struct SpectatorView {
    /// How it looks.
    pub mode: ViewMode,
    /// Where the free camera is (`None`: not placed yet).
    pub free_at: Option<Vec3>,
}

/// How fast the free camera flies, metres a second.
const FLY_SPEED: f32 = 9.0;
/// How far behind and above the followed player the chase camera sits, metres.
const CHASE_BACK: f32 = 3.5;
const CHASE_UP: f32 = 1.2;
/// How far short of a wall behind the followed player the chase camera stops, metres:
/// more than the near clipping plane, so the wall is not cut open.
const CHASE_MARGIN: f32 = 0.25;

/// The spectator's controls and camera.
pub struct SpectatorPlugin;

impl Plugin for SpectatorPlugin {
    fn build(&self, app: &mut App) {
        let mut commands = app
            .world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default);
        commands.register("spec_next", "spectating: follow the next player");
        commands.register("spec_prev", "spectating: follow the previous player");
        commands.register(
            "spec_mode",
            "spectating: change the view (free, first person, chase)",
        );
        app.init_session_resource::<SpectatorView>()
            .add_systems(
                Update,
                (
                    carry_over_seek.run_if(resource_exists::<Carried>),
                    switch_view.run_if(resource_exists::<Watching>),
                )
                    .chain(),
            )
            .add_systems(EndSession, forget_carried)
            .add_systems(
                PostUpdate,
                place_spectator_camera
                    .before(TransformSystems::Propagate)
                    .run_if(resource_exists::<Watching>),
            )
            .add_systems(
                bevy_egui::EguiPrimaryContextPass,
                draw_spectator_line.run_if(resource_exists::<Watching>),
            );
    }
}

/// Fire and alternate fire follow the next and previous player, jump changes the view;
/// so do the console's `spec_next`, `spec_prev` and `spec_mode` (Source's names), which
/// can be bound to keys. The presses are taken here: a spectator sends no commands to
/// carry them.
fn switch_view(
    mut input: ResMut<LocalInput>,
    mut run: MessageReader<RunCommand>,
    mut watching: ResMut<Watching>,
    mut view: ResMut<SpectatorView>,
    players: Query<&PlayerId, With<RemotePlayer>>,
) {
    let pressed = input.pressed;
    input.pressed = Buttons::default();
    input.pressed_slot = 0;
    let present: Vec<PlayerId> = players.iter().copied().collect();
    let commands: Vec<&str> = run.read().map(|c| c.name.as_str()).collect();
    let asked =
        |button: Buttons, command: &str| pressed.contains(button) || commands.contains(&command);
    if asked(Buttons::JUMP, "spec_mode") {
        view.mode = view.mode.next();
        if view.mode == ViewMode::Free {
            watching.follow = None;
        } else if watching.follow.is_none() {
            watching.cycle(&present, 1);
        }
    }
    for (button, command, step) in [
        (Buttons::FIRE, "spec_next", 1),
        (Buttons::ALT_FIRE, "spec_prev", -1),
    ] {
        if asked(button, command) {
            watching.cycle(&present, step);
            if view.mode == ViewMode::Free {
                view.mode = ViewMode::FirstPerson;
            }
        }
    }
    // The one followed left: the free camera takes over where they were.
    if watching.follow.is_some_and(|f| !present.contains(&f)) {
        watching.follow = None;
        view.mode = ViewMode::Free;
    }
}

/// What a demo's seek carries over to the demo played again: the view and the player followed.
#[derive(Resource, Debug, Clone, Copy)]
pub(crate) struct Carried {
    view: SpectatorView,
    follow: Option<PlayerId>,
}

impl Carried {
    /// The view and the player followed now.
    pub(crate) fn from_world(world: &World) -> Self {
        Self {
            view: world
                .get_resource::<SpectatorView>()
                .copied()
                .unwrap_or_default(),
            follow: world.get_resource::<Watching>().and_then(|w| w.follow),
        }
    }
}

/// Once the demo played again has drawn its players, looks as we looked before the
/// seek. It waits for the players: following one not yet drawn would read as that
/// player having left, and drop back to the free camera.
fn carry_over_seek(
    carried: Res<Carried>,
    watching: Option<ResMut<Watching>>,
    players: Query<&PlayerId, With<RemotePlayer>>,
    mut view: ResMut<SpectatorView>,
    mut commands: Commands,
) {
    let Some(mut watching) = watching else {
        return;
    };
    if players.is_empty() {
        return;
    }
    // Seeking to before the followed player joined: `switch_view`, next, finds them
    // gone and gives the free camera, as when a followed player leaves.
    *view = carried.view;
    watching.follow = carried.follow;
    commands.remove_resource::<Carried>();
}

/// A session left before the demo played again drew anyone carries nothing further.
fn forget_carried(mut commands: Commands) {
    commands.remove_resource::<Carried>();
}

/// Where the chase camera sits for a player whose eye is at `eye`, facing `yaw`: behind
/// and above them, or short of the first wall or ceiling in the way (by
/// [`CHASE_MARGIN`]), so it never looks from inside the map's geometry.
fn chase_camera(eye: Vec3, yaw: f32, world: Option<&CollisionWorld>) -> Vec3 {
    let offset = Quat::from_rotation_y(yaw) * Vec3::new(0.0, CHASE_UP, CHASE_BACK);
    let (dir, length) = (offset.normalize_or_zero(), offset.length());
    let reach = world
        .and_then(|w| w.cast_ray(eye, dir, length + CHASE_MARGIN))
        .map_or(length, |(hit, _)| (hit - CHASE_MARGIN).clamp(0.0, length));
    eye + dir * reach
}

/// Places the camera for the view chosen, and hides the followed player's body when
/// looking through their eyes.
fn place_spectator_camera(
    time: Res<Time>,
    input: Res<LocalInput>,
    params: Res<MoveParams>,
    watching: Res<Watching>,
    map: Option<Res<CurrentMap>>,
    mut view: ResMut<SpectatorView>,
    mut players: Query<(&PlayerId, &Drawn, &mut Visibility), With<RemotePlayer>>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    let Ok(mut transform) = camera.single_mut() else {
        return;
    };
    let followed = watching.follow.and_then(|f| {
        players
            .iter()
            .find(|(id, drawn, _)| **id == f && drawn.mode != DrawMode::Unseen)
            .map(|(_, drawn, _)| *drawn)
    });
    match (view.mode, followed) {
        (ViewMode::FirstPerson, Some(d)) => {
            let eye = d.pos + Vec3::Y * params.eye(d.flags.has(MoveFlags::CROUCHED));
            transform.translation = eye;
            transform.rotation = Quat::from_euler(EulerRot::YXZ, d.yaw, d.pitch, 0.0);
            view.free_at = Some(eye);
        }
        (ViewMode::Chase, Some(d)) => {
            let eye = d.pos + Vec3::Y * params.eye(false);
            let at = chase_camera(eye, d.yaw, map.as_deref().map(|m| &*m.world));
            *transform = Transform::from_translation(at).looking_at(eye, Vec3::Y);
            view.free_at = Some(at);
        }
        _ => {
            // Flown where the mouse looks; starts where the last view was.
            let rotation = Quat::from_euler(EulerRot::YXZ, input.yaw, input.pitch, 0.0);
            let mut at = view.free_at.unwrap_or(transform.translation);
            let wish = rotation * Vec3::new(input.right, 0.0, -input.forward);
            let up = f32::from(u8::from(input.buttons.contains(Buttons::JUMP)))
                - f32::from(u8::from(input.buttons.contains(Buttons::CROUCH)));
            at += (wish + Vec3::Y * up).clamp_length_max(1.0) * FLY_SPEED * time.delta_secs();
            transform.translation = at;
            transform.rotation = rotation;
            view.free_at = Some(at);
        }
    }
    for (id, drawn, mut visibility) in &mut players {
        let inside = view.mode == ViewMode::FirstPerson && Some(*id) == watching.follow;
        if inside && drawn.mode != DrawMode::Unseen {
            visibility.set_if_neq(Visibility::Hidden);
        }
    }
}

/// Whom we watch and how, and the keys that change it, at the foot of the screen.
fn draw_spectator_line(
    mut contexts: bevy_egui::EguiContexts,
    watching: Res<Watching>,
    view: Res<SpectatorView>,
    roster: Res<Roster>,
) -> Result {
    let who = match watching.follow {
        Some(id) => format!("watching {} ({})", roster.name(id), view.mode.label()),
        None => format!("spectating ({})", ViewMode::Free.label()),
    };
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("spectator"),
    ));
    let color = egui::Color32::from_white_alpha(230);
    let line = format!("{who}  ·  fire: next player  ·  alt fire: previous  ·  jump: view");
    let galley = painter.layout_no_wrap(line, egui::FontId::proportional(18.0), color);
    let at = egui::pos2(screen.center().x, screen.bottom() - 40.0);
    let rect = egui::Align2::CENTER_CENTER.anchor_size(at, galley.size());
    painter.rect_filled(rect.expand(6.0), 6.0, egui::Color32::from_black_alpha(140));
    painter.galley(rect.min, galley, color);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_camera_stops_short_of_a_wall_behind_the_player() {
        // A wall whose face is at z = 2, behind a player at the origin facing -z.
        let wall = CollisionWorld::from_boxes([(
            Vec3::new(0.0, 1.0, 2.5),
            Vec3::new(10.0, 5.0, 0.5),
            Quat::IDENTITY,
        )]);
        let eye = Vec3::new(0.0, 1.6, 0.0);
        let open = chase_camera(eye, 0.0, None);
        assert!((open - eye - Vec3::new(0.0, CHASE_UP, CHASE_BACK)).length() < 1e-5);
        let walled = chase_camera(eye, 0.0, Some(&wall));
        assert!(walled.z < 2.0 - 0.2 && walled.z > 1.0, "{walled}");
        assert!(walled.y > eye.y, "still above the eye: {walled}");
        // Turned round, the wall is in front: nothing in the way behind.
        let turned = chase_camera(eye, std::f32::consts::PI, Some(&wall));
        assert!((turned.z + CHASE_BACK).abs() < 1e-4, "{turned}");
    }

    #[test]
    fn jump_steps_through_the_views_and_back_to_the_free_camera() {
        let mut mode = ViewMode::Free;
        let mut seen = Vec::new();
        for _ in 0..3 {
            mode = mode.next();
            seen.push(mode);
        }
        assert_eq!(
            seen,
            [ViewMode::FirstPerson, ViewMode::Chase, ViewMode::Free]
        );
    }
}
