//! Keyboard and mouse to input commands, through leafwing-input-manager and the console's
//! key bindings. Sampled just before each fixed tick, so commands carry the newest input.

use crate::camera::{ViewZoom, ZoomHeld};
pub use crate::controls::actions::Action;
use crate::controls::actions::{ACTIONS, Effect};
use crate::controls::overlays::{GameMenu, SettingsPage};
pub use crate::controls::overlays::{MouseLook, TextFocus};
use crate::cvars::cvar;
use crate::session::AppState;
use bevy::app::RunFixedMainLoopSystems;
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll};
use bevy::prelude::*;
use bevy::window::{CursorGrabMode, CursorOptions, PrimaryWindow};
use leafwing_input_manager::prelude::*;
use sightline_client::{Autopilot, LocalInput};
use sightline_combat::{AltFire, Arsenal, WeaponKind};
use sightline_console::{Bindings, Console, Cvars};
use sightline_movement::PlayerState;
use sightline_prediction::Predicted;
use sightline_sim::{Buttons, MAX_PITCH_DEG, SessionAppExt};

/// Binds `key` to `command` as the settings page's key capture does: the key leaves
/// whatever it did before, and the keys that ran `command` until now are unbound, so one
/// press replaces the binding (as `unbind` and `bind` typed in the console would).
pub(crate) fn rebind(bindings: &mut Bindings, command: &str, key: &str) {
    let old: Vec<String> = bindings.keys_for(command).map(str::to_string).collect();
    for k in old {
        bindings.unbind(&k);
    }
    bindings.bind(key, command);
}

/// Puts the game's own keys back: every binding of a game action goes, and the defaults
/// return; bindings of other commands stay.
pub(crate) fn restore_default_bindings(bindings: &mut Bindings) {
    let actions: Vec<String> = bindings
        .iter()
        .filter(|(_, c)| Action::of_command(c).is_some())
        .map(|(k, _)| k.to_string())
        .collect();
    for k in actions {
        bindings.unbind(&k);
    }
    for row in ACTIONS {
        bindings.bind(row.key, row.command);
    }
}

/// A key or button by the name the console uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// A key on the keyboard.
    Key(KeyCode),
    /// A mouse button.
    Mouse(MouseButton),
    /// The mouse wheel turned up (away from the player).
    WheelUp,
    /// The mouse wheel turned down.
    WheelDown,
}

/// Every key and button `bind` knows, by its name (Quake's where it has one). Escape and
/// the backquote are missing on purpose: they open the menu and the console.
const KEY_NAMES: &[(&str, Input)] = &[
    ("a", Input::Key(KeyCode::KeyA)),
    ("b", Input::Key(KeyCode::KeyB)),
    ("c", Input::Key(KeyCode::KeyC)),
    ("d", Input::Key(KeyCode::KeyD)),
    ("e", Input::Key(KeyCode::KeyE)),
    ("f", Input::Key(KeyCode::KeyF)),
    ("g", Input::Key(KeyCode::KeyG)),
    ("h", Input::Key(KeyCode::KeyH)),
    ("i", Input::Key(KeyCode::KeyI)),
    ("j", Input::Key(KeyCode::KeyJ)),
    ("k", Input::Key(KeyCode::KeyK)),
    ("l", Input::Key(KeyCode::KeyL)),
    ("m", Input::Key(KeyCode::KeyM)),
    ("n", Input::Key(KeyCode::KeyN)),
    ("o", Input::Key(KeyCode::KeyO)),
    ("p", Input::Key(KeyCode::KeyP)),
    ("q", Input::Key(KeyCode::KeyQ)),
    ("r", Input::Key(KeyCode::KeyR)),
    ("s", Input::Key(KeyCode::KeyS)),
    ("t", Input::Key(KeyCode::KeyT)),
    ("u", Input::Key(KeyCode::KeyU)),
    ("v", Input::Key(KeyCode::KeyV)),
    ("w", Input::Key(KeyCode::KeyW)),
    ("x", Input::Key(KeyCode::KeyX)),
    ("y", Input::Key(KeyCode::KeyY)),
    ("z", Input::Key(KeyCode::KeyZ)),
    ("0", Input::Key(KeyCode::Digit0)),
    ("1", Input::Key(KeyCode::Digit1)),
    ("2", Input::Key(KeyCode::Digit2)),
    ("3", Input::Key(KeyCode::Digit3)),
    ("4", Input::Key(KeyCode::Digit4)),
    ("5", Input::Key(KeyCode::Digit5)),
    ("6", Input::Key(KeyCode::Digit6)),
    ("7", Input::Key(KeyCode::Digit7)),
    ("8", Input::Key(KeyCode::Digit8)),
    ("9", Input::Key(KeyCode::Digit9)),
    ("f1", Input::Key(KeyCode::F1)),
    ("f2", Input::Key(KeyCode::F2)),
    ("f3", Input::Key(KeyCode::F3)),
    ("f4", Input::Key(KeyCode::F4)),
    ("f5", Input::Key(KeyCode::F5)),
    ("f6", Input::Key(KeyCode::F6)),
    ("f7", Input::Key(KeyCode::F7)),
    ("f8", Input::Key(KeyCode::F8)),
    ("f9", Input::Key(KeyCode::F9)),
    ("f10", Input::Key(KeyCode::F10)),
    ("f11", Input::Key(KeyCode::F11)),
    ("f12", Input::Key(KeyCode::F12)),
    ("space", Input::Key(KeyCode::Space)),
    ("tab", Input::Key(KeyCode::Tab)),
    ("enter", Input::Key(KeyCode::Enter)),
    ("backspace", Input::Key(KeyCode::Backspace)),
    ("shift", Input::Key(KeyCode::ShiftLeft)),
    ("rshift", Input::Key(KeyCode::ShiftRight)),
    ("ctrl", Input::Key(KeyCode::ControlLeft)),
    ("rctrl", Input::Key(KeyCode::ControlRight)),
    ("alt", Input::Key(KeyCode::AltLeft)),
    ("ralt", Input::Key(KeyCode::AltRight)),
    ("capslock", Input::Key(KeyCode::CapsLock)),
    ("up", Input::Key(KeyCode::ArrowUp)),
    ("down", Input::Key(KeyCode::ArrowDown)),
    ("left", Input::Key(KeyCode::ArrowLeft)),
    ("right", Input::Key(KeyCode::ArrowRight)),
    ("ins", Input::Key(KeyCode::Insert)),
    ("del", Input::Key(KeyCode::Delete)),
    ("home", Input::Key(KeyCode::Home)),
    ("end", Input::Key(KeyCode::End)),
    ("pgup", Input::Key(KeyCode::PageUp)),
    ("pgdn", Input::Key(KeyCode::PageDown)),
    ("semicolon", Input::Key(KeyCode::Semicolon)),
    ("apostrophe", Input::Key(KeyCode::Quote)),
    ("comma", Input::Key(KeyCode::Comma)),
    ("period", Input::Key(KeyCode::Period)),
    ("slash", Input::Key(KeyCode::Slash)),
    ("minus", Input::Key(KeyCode::Minus)),
    ("equals", Input::Key(KeyCode::Equal)),
    ("lbracket", Input::Key(KeyCode::BracketLeft)),
    ("rbracket", Input::Key(KeyCode::BracketRight)),
    ("backslash", Input::Key(KeyCode::Backslash)),
    ("kp_0", Input::Key(KeyCode::Numpad0)),
    ("kp_1", Input::Key(KeyCode::Numpad1)),
    ("kp_2", Input::Key(KeyCode::Numpad2)),
    ("kp_3", Input::Key(KeyCode::Numpad3)),
    ("kp_4", Input::Key(KeyCode::Numpad4)),
    ("kp_5", Input::Key(KeyCode::Numpad5)),
    ("kp_6", Input::Key(KeyCode::Numpad6)),
    ("kp_7", Input::Key(KeyCode::Numpad7)),
    ("kp_8", Input::Key(KeyCode::Numpad8)),
    ("kp_9", Input::Key(KeyCode::Numpad9)),
    ("mouse1", Input::Mouse(MouseButton::Left)),
    ("mouse2", Input::Mouse(MouseButton::Right)),
    ("mouse3", Input::Mouse(MouseButton::Middle)),
    ("mouse4", Input::Mouse(MouseButton::Back)),
    ("mouse5", Input::Mouse(MouseButton::Forward)),
    ("mwheelup", Input::WheelUp),
    ("mwheeldown", Input::WheelDown),
];

/// Looks up a key name as typed in `bind` (case-insensitive).
pub(crate) fn input_named(name: &str) -> Option<Input> {
    KEY_NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, input)| *input)
}

/// The name `bind` knows a key or button by, for the settings page's key capture.
pub(crate) fn name_of(input: Input) -> Option<&'static str> {
    KEY_NAMES
        .iter()
        .find(|(_, i)| *i == input)
        .map(|(name, _)| *name)
}

/// Builds leafwing's input map from the console's bindings.
pub fn input_map(bindings: &Bindings) -> InputMap<Action> {
    let mut map = InputMap::default();
    for (key, command) in bindings.iter() {
        let Some(action) = Action::of_command(command) else {
            continue;
        };
        match input_named(key) {
            Some(Input::Key(k)) => {
                map.insert(action, k);
            }
            Some(Input::Mouse(b)) => {
                map.insert(action, b);
            }
            Some(Input::WheelUp) => {
                map.insert(action, MouseScrollDirection::UP);
            }
            Some(Input::WheelDown) => {
                map.insert(action, MouseScrollDirection::DOWN);
            }
            None => warn!("bind {key}: no such key"),
        }
    }
    map
}

/// The entity holding the player's input map and action state.
#[derive(Component)]
pub struct Controls;

/// Turns keys and mouse into [`LocalInput`].
pub struct InputPlugin;

impl Plugin for InputPlugin {
    fn build(&self, app: &mut App) {
        let mut bindings = app
            .world_mut()
            .get_resource_or_insert_with(Bindings::default);
        for row in ACTIONS {
            bindings.bind(row.key, row.command);
        }
        app.add_plugins(InputManagerPlugin::<Action>::default())
            .init_resource::<MouseLook>()
            .init_resource::<TextFocus>()
            .add_systems(Startup, spawn_controls)
            .init_session_resource::<WeaponMemory>()
            .add_systems(
                Update,
                (
                    rebuild_input_map,
                    face_spawn_direction,
                    grab_cursor,
                    remember_weapons,
                ),
            )
            .add_systems(
                RunFixedMainLoop,
                sample_local_input
                    .in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop)
                    // With the autopilot at the controls, the keyboard is not.
                    .run_if(not(resource_exists::<Autopilot>)),
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

/// Grabs the cursor while playing; the console, chat, the menus and the demo's controls
/// free it (Escape opens the game menu), a click or the menu's Resume takes it back.
fn grab_cursor(
    state: Res<State<AppState>>,
    console: Res<Console>,
    focus: Res<TextFocus>,
    menu: Res<GameMenu>,
    settings: Res<SettingsPage>,
    demo_ui: Res<crate::playback::DemoUi>,
    mouse: Res<ButtonInput<MouseButton>>,
    mut look: ResMut<MouseLook>,
    mut cursor: Query<&mut CursorOptions, With<PrimaryWindow>>,
) {
    let playing = *state.get() == AppState::Playing
        && !console.open
        && !focus.0
        && !menu.open
        && !settings.open
        && !demo_ui.open;
    let wanted = if !playing {
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
    (keys, mouse, wheel): (&ButtonInput<KeyCode>, &ButtonInput<MouseButton>, f32),
) -> bool {
    bindings
        .keys_for(action.command())
        .any(|name| match input_named(name) {
            Some(Input::Key(k)) => keys.just_pressed(k),
            Some(Input::Mouse(b)) => mouse.just_pressed(b),
            // A turn of the wheel is a tap: it has no "held".
            Some(Input::WheelUp) => wheel > 0.0,
            Some(Input::WheelDown) => wheel < 0.0,
            None => false,
        })
}

/// The weapon in hand before the one now, for `lastinv`: follows our predicted arsenal.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct WeaponMemory {
    /// The weapon in hand as last seen.
    held: Option<WeaponKind>,
    /// The one before it.
    previous: Option<WeaponKind>,
}

impl WeaponMemory {
    /// `now` is in hand.
    fn see(&mut self, now: WeaponKind) {
        if self.held != Some(now) {
            self.previous = self.held.or(self.previous);
            self.held = Some(now);
        }
    }
}

/// Notes each change of the weapon in hand.
fn remember_weapons(own: Query<&Arsenal, With<Predicted>>, mut memory: ResMut<WeaponMemory>) {
    if let Ok(arsenal) = own.single() {
        memory.see(arsenal.current);
    }
}

/// The slot a weapon-choosing effect asks for, given our arsenal, the slot already asked
/// for and not yet carried (0: none), and what was held before; 0 for none.
fn slot_for(effect: Effect, arsenal: &Arsenal, pending: u8, memory: &WeaponMemory) -> u8 {
    let wanted = match effect {
        // From the weapon on its way up, so two turns of the wheel go two weapons on.
        Effect::Cycle(step) => {
            let from = WeaponKind::in_slot(pending).unwrap_or(arsenal.current);
            arsenal.cycled(from, step)
        }
        Effect::LastWeapon => memory.previous.filter(|w| arsenal.owns(*w)),
        _ => None,
    };
    wanted.map_or(0, |w| w.def().slot)
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
    zoom: Res<ViewZoom>,
    cvars: Res<Cvars>,
    bindings: Res<Bindings>,
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    (scroll, own, memory, mut zoom_held): (
        Res<AccumulatedMouseScroll>,
        Query<&Arsenal, With<Predicted>>,
        Res<WeaponMemory>,
        ResMut<ZoomHeld>,
    ),
    mut input: ResMut<LocalInput>,
) {
    if look.0 {
        // Zoomed in, the mouse turns the view less, in step with the narrower view.
        let sensitivity = cvars.read(cvar::SENSITIVITY) as f32 * zoom.0;
        let scale = (DEGREES_PER_COUNT * sensitivity).to_radians();
        input.yaw = sightline_sim::wrap_angle(input.yaw - motion.delta.x * scale);
        let max = MAX_PITCH_DEG.to_radians();
        // m_invert: moving the mouse forward looks down.
        let vertical = if cvars.read(cvar::M_INVERT) {
            -motion.delta.y
        } else {
            motion.delta.y
        };
        input.pitch = (input.pitch - vertical * scale).clamp(-max, max);
    }
    if !look.0 {
        // Typing in the console or chat, or in a menu: stand still, keep looking.
        *input = LocalInput {
            yaw: input.yaw,
            pitch: input.pitch,
            ..default()
        };
        zoom_held.set_if_neq(ZoomHeld(false));
        return;
    }
    let raw = (&*keys, &*mouse, scroll.delta.y);
    let down = |a: Action| actions.pressed(&a) || tapped(a, &bindings, raw);
    let arsenal = own.single().ok();
    let mut zooming = false;
    let (mut forward, mut right) = (0.0, 0.0);
    let (mut buttons, mut pressed) = (Buttons::default(), Buttons::default());
    let (mut weapon_slot, mut slot) = (0, 0);
    for row in ACTIONS {
        let held = actions.pressed(&row.action);
        match row.effect {
            Effect::Move {
                forward: f,
                right: r,
            } if held => {
                forward += f;
                right += r;
            }
            Effect::Button(bit) => {
                if held {
                    buttons = buttons.with(bit);
                }
                if down(row.action) {
                    pressed = pressed.with(bit);
                }
            }
            // The first slot held (or tapped), as the keys 1-5 go.
            Effect::Slot(n) => {
                if held && weapon_slot == 0 {
                    weapon_slot = n;
                }
                if slot == 0 && down(row.action) {
                    slot = n;
                }
            }
            // Chosen from the weapons held: a tap each (the wheel has no "held").
            Effect::Cycle(_) | Effect::LastWeapon => {
                if slot == 0
                    && down(row.action)
                    && let Some(arsenal) = arsenal
                {
                    slot = slot_for(row.effect, arsenal, input.pressed_slot, &memory);
                }
            }
            Effect::Zoom => zooming |= held,
            Effect::Game | Effect::Move { .. } => {}
        }
    }
    // A weapon that zooms on alternate fire zooms as that does, its accuracy with it.
    if zooming && arsenal.is_some_and(|a| matches!(a.current.def().alt, AltFire::Zoom { .. })) {
        buttons = buttons.with(Buttons::ALT_FIRE);
    }
    zoom_held.set_if_neq(ZoomHeld(zooming));
    input.forward = forward;
    input.right = right;
    input.buttons = buttons;
    input.weapon_slot = weapon_slot;
    input.press(pressed, slot);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wheel_and_lastinv_choose_among_the_weapons_held() {
        use WeaponKind::*;
        let arsenal = Arsenal::spawned();
        let slot = |w: WeaponKind| w.def().slot;
        let mut memory = WeaponMemory::default();
        let next = Effect::Cycle(1);
        assert_eq!(slot_for(next, &arsenal, 0, &memory), slot(Shotgun));
        // A second turn before the first reached a command goes on from it.
        assert_eq!(
            slot_for(next, &arsenal, slot(Shotgun), &memory),
            slot(Rockets)
        );
        assert_eq!(
            slot_for(Effect::Cycle(-1), &arsenal, 0, &memory),
            slot(Rockets)
        );
        // Nothing held before: lastinv does nothing; then the one before this.
        assert_eq!(slot_for(Effect::LastWeapon, &arsenal, 0, &memory), 0);
        for w in [Rifle, Rifle, Shotgun, Rockets] {
            memory.see(w);
        }
        assert_eq!(memory.previous, Some(Shotgun));
        assert_eq!(
            slot_for(Effect::LastWeapon, &arsenal, 0, &memory),
            slot(Shotgun)
        );
        // One no longer held (a respawn takes picked-up weapons) is not asked for.
        memory.see(Plasma);
        memory.see(Rifle);
        assert_eq!(slot_for(Effect::LastWeapon, &arsenal, 0, &memory), 0);
        assert!(matches!(input_named("MWheelUp"), Some(Input::WheelUp)));
        assert_eq!(name_of(Input::WheelDown), Some("mwheeldown"));
    }

    #[test]
    fn default_bindings_cover_every_action_and_name_real_keys() {
        let mut bindings = Bindings::default();
        for row in ACTIONS {
            assert!(input_named(row.key).is_some(), "{}", row.key);
            bindings.bind(row.key, row.command);
        }
        for row in ACTIONS {
            assert!(
                bindings.keys_for(row.command).next().is_some(),
                "{:?} unbound",
                row.action
            );
        }
        let map = input_map(&bindings);
        assert!(map.get(&Action::Jump).is_some());
        assert!(input_named("nosuchkey").is_none());
        assert!(matches!(input_named("W"), Some(Input::Key(KeyCode::KeyW))));
    }

    #[test]
    fn every_key_name_parses_back_to_its_key_and_names_are_unique() {
        for (name, input) in KEY_NAMES {
            assert_eq!(input_named(name), Some(*input), "{name}");
            assert_eq!(name_of(*input), Some(*name), "{name}");
            // The config file holds `bind NAME "..."`: a name must be one plain word.
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}"
            );
        }
        assert_eq!(input_named("MOUSE4"), Some(Input::Mouse(MouseButton::Back)));
        assert_eq!(input_named("F12"), Some(Input::Key(KeyCode::F12)));
        assert_eq!(input_named("RShift"), Some(Input::Key(KeyCode::ShiftRight)));
        // Escape and the backquote open the menu and the console: never bindable.
        assert_eq!(name_of(Input::Key(KeyCode::Escape)), None);
        assert_eq!(name_of(Input::Key(KeyCode::Backquote)), None);
        assert_eq!(input_named(""), None);
        assert_eq!(input_named("mouse9"), None);
    }

    #[test]
    fn rebinding_replaces_the_commands_keys_and_takes_the_key_from_its_old_command() {
        let mut bindings = Bindings::default();
        for row in ACTIONS {
            bindings.bind(row.key, row.command);
        }
        bindings.bind("up", "+jump");
        rebind(&mut bindings, "+jump", "mouse4");
        assert_eq!(bindings.keys_for("+jump").collect::<Vec<_>>(), ["mouse4"]);
        assert_eq!(bindings.get("space"), None);
        // W moved to fire: forward loses it.
        rebind(&mut bindings, "+attack", "w");
        assert_eq!(bindings.get("w"), Some("+attack"));
        assert_eq!(bindings.get("mouse1"), None);
        assert_eq!(bindings.keys_for("+forward").count(), 0);
        let map = input_map(&bindings);
        assert_eq!(
            map.get_buttonlike(&Action::Attack).map(Vec::len),
            Some(1),
            "fire has exactly its new key"
        );
        bindings.bind("f9", "say hello");
        restore_default_bindings(&mut bindings);
        assert_eq!(bindings.get("w"), Some("+forward"));
        assert_eq!(bindings.get("mouse1"), Some("+attack"));
        assert_eq!(bindings.get("mouse4"), None);
        assert_eq!(bindings.get("f9"), Some("say hello"));
    }
}
