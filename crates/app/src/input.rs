//! Keyboard and mouse to input commands, through leafwing-input-manager and the console's
//! key bindings. Sampled just before each fixed tick, so commands carry the newest input.

use crate::cvars::cvar;
use crate::session::AppState;
use bevy::app::RunFixedMainLoopSystems;
use bevy::input::mouse::AccumulatedMouseMotion;
use bevy::prelude::*;
use bevy::window::{CursorGrabMode, CursorOptions, PrimaryWindow};
use leafwing_input_manager::prelude::*;
use sightline_client::LocalInput;
use sightline_console::{Bindings, Console, Cvars};
use sightline_movement::PlayerState;
use sightline_prediction::Predicted;
use sightline_sim::{Buttons, MAX_PITCH_DEG};

/// What a player can do with keys and buttons.
#[derive(Actionlike, PartialEq, Eq, Clone, Copy, Hash, Debug, Reflect)]
pub enum Action {
    /// Move forward.
    Forward,
    /// Move back.
    Back,
    /// Step left.
    MoveLeft,
    /// Step right.
    MoveRight,
    /// Jump.
    Jump,
    /// Crouch.
    Crouch,
    /// Fire.
    Attack,
    /// Alternate fire.
    Attack2,
    /// Reload.
    Reload,
    /// Weapon slot 1.
    Weapon1,
    /// Weapon slot 2.
    Weapon2,
    /// Weapon slot 3.
    Weapon3,
    /// Weapon slot 4.
    Weapon4,
    /// Weapon slot 5.
    Weapon5,
    /// Show the scoreboard while held.
    Scores,
    /// Type a chat line.
    Chat,
}

/// The console command each action is bound as (Quake's names).
const ACTION_COMMANDS: &[(Action, &str)] = &[
    (Action::Forward, "+forward"),
    (Action::Back, "+back"),
    (Action::MoveLeft, "+moveleft"),
    (Action::MoveRight, "+moveright"),
    (Action::Jump, "+jump"),
    (Action::Crouch, "+duck"),
    (Action::Attack, "+attack"),
    (Action::Attack2, "+attack2"),
    (Action::Reload, "+reload"),
    (Action::Weapon1, "weapon 1"),
    (Action::Weapon2, "weapon 2"),
    (Action::Weapon3, "weapon 3"),
    (Action::Weapon4, "weapon 4"),
    (Action::Weapon5, "weapon 5"),
    (Action::Scores, "+scores"),
    (Action::Chat, "messagemode"),
];

/// The default bindings: WASD, space, ctrl, mouse buttons, R, 1-5, Tab, T.
const DEFAULT_BINDINGS: &[(&str, &str)] = &[
    ("w", "+forward"),
    ("s", "+back"),
    ("a", "+moveleft"),
    ("d", "+moveright"),
    ("space", "+jump"),
    ("ctrl", "+duck"),
    ("mouse1", "+attack"),
    ("mouse2", "+attack2"),
    ("r", "+reload"),
    ("1", "weapon 1"),
    ("2", "weapon 2"),
    ("3", "weapon 3"),
    ("4", "weapon 4"),
    ("5", "weapon 5"),
    ("tab", "+scores"),
    ("t", "messagemode"),
];

/// A key or button by the name the console uses.
enum Input {
    Key(KeyCode),
    Mouse(MouseButton),
}

/// Looks up a key name as typed in `bind` (case-insensitive).
fn input_named(name: &str) -> Option<Input> {
    let name = name.to_ascii_lowercase();
    let key = |k| Some(Input::Key(k));
    if name.len() == 1 {
        let c = name.chars().next()?;
        return match c {
            'a'..='z' => {
                let codes = [
                    KeyCode::KeyA,
                    KeyCode::KeyB,
                    KeyCode::KeyC,
                    KeyCode::KeyD,
                    KeyCode::KeyE,
                    KeyCode::KeyF,
                    KeyCode::KeyG,
                    KeyCode::KeyH,
                    KeyCode::KeyI,
                    KeyCode::KeyJ,
                    KeyCode::KeyK,
                    KeyCode::KeyL,
                    KeyCode::KeyM,
                    KeyCode::KeyN,
                    KeyCode::KeyO,
                    KeyCode::KeyP,
                    KeyCode::KeyQ,
                    KeyCode::KeyR,
                    KeyCode::KeyS,
                    KeyCode::KeyT,
                    KeyCode::KeyU,
                    KeyCode::KeyV,
                    KeyCode::KeyW,
                    KeyCode::KeyX,
                    KeyCode::KeyY,
                    KeyCode::KeyZ,
                ];
                key(codes[(c as u8 - b'a') as usize])
            }
            '0'..='9' => {
                let codes = [
                    KeyCode::Digit0,
                    KeyCode::Digit1,
                    KeyCode::Digit2,
                    KeyCode::Digit3,
                    KeyCode::Digit4,
                    KeyCode::Digit5,
                    KeyCode::Digit6,
                    KeyCode::Digit7,
                    KeyCode::Digit8,
                    KeyCode::Digit9,
                ];
                key(codes[(c as u8 - b'0') as usize])
            }
            _ => None,
        };
    }
    match name.as_str() {
        "space" => key(KeyCode::Space),
        "tab" => key(KeyCode::Tab),
        "enter" => key(KeyCode::Enter),
        "shift" => key(KeyCode::ShiftLeft),
        "ctrl" => key(KeyCode::ControlLeft),
        "alt" => key(KeyCode::AltLeft),
        "up" => key(KeyCode::ArrowUp),
        "down" => key(KeyCode::ArrowDown),
        "left" => key(KeyCode::ArrowLeft),
        "right" => key(KeyCode::ArrowRight),
        "f1" => key(KeyCode::F1),
        "f2" => key(KeyCode::F2),
        "f3" => key(KeyCode::F3),
        "f4" => key(KeyCode::F4),
        "f5" => key(KeyCode::F5),
        "f6" => key(KeyCode::F6),
        "mouse1" => Some(Input::Mouse(MouseButton::Left)),
        "mouse2" => Some(Input::Mouse(MouseButton::Right)),
        "mouse3" => Some(Input::Mouse(MouseButton::Middle)),
        _ => None,
    }
}

/// Builds leafwing's input map from the console's bindings.
pub fn input_map(bindings: &Bindings) -> InputMap<Action> {
    let mut map = InputMap::default();
    for (key, command) in bindings.iter() {
        let Some((action, _)) = ACTION_COMMANDS.iter().find(|(_, c)| *c == command) else {
            continue;
        };
        match input_named(key) {
            Some(Input::Key(k)) => {
                map.insert(*action, k);
            }
            Some(Input::Mouse(b)) => {
                map.insert(*action, b);
            }
            None => warn!("bind {key}: no such key"),
        }
    }
    map
}

/// The entity holding the player's input map and action state.
#[derive(Component)]
pub struct Controls;

/// Whether the mouse steers the view (cursor grabbed) or is free (menus, Escape).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MouseLook(pub bool);

/// Whether a text box in the game (chat) has the keyboard: the mouse is freed and keys
/// do not move the player. The console has its own flag.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TextFocus(pub bool);

/// Turns keys and mouse into [`LocalInput`].
pub struct InputPlugin;

impl Plugin for InputPlugin {
    fn build(&self, app: &mut App) {
        let mut bindings = app
            .world_mut()
            .get_resource_or_insert_with(Bindings::default);
        for (key, command) in DEFAULT_BINDINGS {
            bindings.bind(key, command);
        }
        app.add_plugins(InputManagerPlugin::<Action>::default())
            .init_resource::<MouseLook>()
            .init_resource::<TextFocus>()
            .add_systems(Startup, spawn_controls)
            .add_systems(
                Update,
                (rebuild_input_map, face_spawn_direction, grab_cursor),
            )
            .add_systems(
                RunFixedMainLoop,
                sample_local_input.in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop),
            );
    }
}

fn spawn_controls(mut commands: Commands) {
    commands.spawn((
        Controls,
        InputMap::<Action>::default(),
        ActionState::<Action>::default(),
    ));
}

fn rebuild_input_map(
    bindings: Res<Bindings>,
    mut maps: Query<&mut InputMap<Action>, With<Controls>>,
) {
    if !bindings.is_changed() {
        return;
    }
    for mut map in &mut maps {
        *map = input_map(&bindings);
    }
}

/// On joining, look where the spawn point faces.
fn face_spawn_direction(
    spawned: Query<&PlayerState, Added<Predicted>>,
    mut input: ResMut<LocalInput>,
) {
    if let Ok(state) = spawned.single() {
        input.yaw = state.yaw;
        input.pitch = 0.0;
    }
}

/// Grabs the cursor while playing; Escape frees it, a click takes it back.
fn grab_cursor(
    state: Res<State<AppState>>,
    console: Res<Console>,
    focus: Res<TextFocus>,
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    mut look: ResMut<MouseLook>,
    mut cursor: Query<&mut CursorOptions, With<PrimaryWindow>>,
) {
    let playing = *state.get() == AppState::Playing && !console.open && !focus.0;
    let wanted = if !playing || keys.just_pressed(KeyCode::Escape) {
        false
    } else if mouse.just_pressed(MouseButton::Left) {
        true
    } else {
        look.0 || state.is_changed()
    };
    look.set_if_neq(MouseLook(wanted));
    if let Ok(mut options) = cursor.single_mut() {
        let grab = if wanted {
            CursorGrabMode::Locked
        } else {
            CursorGrabMode::None
        };
        if options.grab_mode != grab {
            options.grab_mode = grab;
            options.visible = !wanted;
        }
    }
}

/// Quake's mouse scale: 0.022 degrees per count at sensitivity 1.
const DEGREES_PER_COUNT: f32 = 0.022;

/// Whether a key or button bound to `action` went down this frame. Leafwing reads
/// whether a key is down when the frame is sampled, so a tap that begins and ends within
/// one frame never shows as pressed there; the raw input still saw it go down.
fn tapped(
    action: Action,
    bindings: &Bindings,
    keys: &ButtonInput<KeyCode>,
    mouse: &ButtonInput<MouseButton>,
) -> bool {
    let Some((_, command)) = ACTION_COMMANDS.iter().find(|(a, _)| *a == action) else {
        return false;
    };
    bindings
        .keys_for(command)
        .any(|name| match input_named(name) {
            Some(Input::Key(k)) => keys.just_pressed(k),
            Some(Input::Mouse(b)) => mouse.just_pressed(b),
            None => false,
        })
}

/// Reads keys and mouse into [`LocalInput`] just before the fixed ticks run. Presses of
/// jump, fire, alternate fire, reload and the weapon keys are also latched
/// ([`LocalInput::press`]) until a command carries them, so a tap that falls between two
/// commands, or within one frame, is not lost.
#[allow(clippy::too_many_arguments)]
fn sample_local_input(
    actions: Single<&ActionState<Action>, With<Controls>>,
    motion: Res<AccumulatedMouseMotion>,
    look: Res<MouseLook>,
    cvars: Res<Cvars>,
    bindings: Res<Bindings>,
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    mut input: ResMut<LocalInput>,
) {
    if look.0 {
        let scale = (DEGREES_PER_COUNT * cvars.read(cvar::SENSITIVITY) as f32).to_radians();
        input.yaw = sightline_sim::wrap_angle(input.yaw - motion.delta.x * scale);
        let max = MAX_PITCH_DEG.to_radians();
        input.pitch = (input.pitch - motion.delta.y * scale).clamp(-max, max);
    }
    if !look.0 {
        // Typing in the console or chat, or in a menu: stand still, keep looking.
        *input = LocalInput {
            yaw: input.yaw,
            pitch: input.pitch,
            ..default()
        };
        return;
    }
    let held = |a: Action| if actions.pressed(&a) { 1.0 } else { 0.0 };
    input.forward = held(Action::Forward) - held(Action::Back);
    input.right = held(Action::MoveRight) - held(Action::MoveLeft);
    let down = |a: Action| actions.pressed(&a) || tapped(a, &bindings, &keys, &mouse);
    let mut buttons = Buttons::default();
    let mut pressed = Buttons::default();
    for (action, bit) in [
        (Action::Jump, Buttons::JUMP),
        (Action::Crouch, Buttons::CROUCH),
        (Action::Attack, Buttons::FIRE),
        (Action::Attack2, Buttons::ALT_FIRE),
        (Action::Reload, Buttons::RELOAD),
    ] {
        if actions.pressed(&action) {
            buttons = buttons.with(bit);
        }
        if down(action) {
            pressed = pressed.with(bit);
        }
    }
    input.buttons = buttons;
    let slots = [
        Action::Weapon1,
        Action::Weapon2,
        Action::Weapon3,
        Action::Weapon4,
        Action::Weapon5,
    ];
    input.weapon_slot = slots
        .iter()
        .position(|a| actions.pressed(a))
        .map_or(0, |i| i as u8 + 1);
    let slot = slots
        .iter()
        .position(|a| down(*a))
        .map_or(0, |i| i as u8 + 1);
    input.press(pressed, slot);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_bindings_cover_every_action_and_name_real_keys() {
        let mut bindings = Bindings::default();
        for (key, command) in DEFAULT_BINDINGS {
            assert!(input_named(key).is_some(), "{key}");
            bindings.bind(key, command);
        }
        for (action, command) in ACTION_COMMANDS {
            assert!(
                bindings.keys_for(command).next().is_some(),
                "{action:?} unbound"
            );
        }
        let map = input_map(&bindings);
        assert!(map.get(&Action::Jump).is_some());
        assert!(input_named("nosuchkey").is_none());
        assert!(matches!(input_named("W"), Some(Input::Key(KeyCode::KeyW))));
    }
}
