//! What a player can do with keys and buttons: the actions leafwing-input-manager maps
//! keys to, and one table ([`ACTIONS`]) of each action's console command, default key,
//! label and effect, which input (binding and reading them) and the settings (rebinding
//! them) both read.

use bevy::prelude::*;
use leafwing_input_manager::prelude::*;
use sightline_sim::Buttons;

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
    /// The next weapon held (`weapnext`, the wheel down).
    WeaponNext,
    /// The previous weapon held (`weapprev`, the wheel up).
    WeaponPrev,
    /// The weapon held before this one (`lastinv`).
    LastWeapon,
    /// Zoom while held, apart from alternate fire.
    Zoom,
    /// Show the scoreboard while held.
    Scores,
    /// Type a chat line.
    Chat,
    /// Type a chat line to one's own team.
    TeamChat,
    /// Vote yes on the vote running.
    VoteYes,
    /// Vote no on the vote running.
    VoteNo,
    /// In the warmup: ready to start, or no longer.
    Ready,
}

/// What an action does while held or tapped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Effect {
    /// Moves: this much forward and right.
    Move {
        /// Forward (1) or back (-1).
        forward: f32,
        /// Right (1) or left (-1).
        right: f32,
    },
    /// Holds a button of the command.
    Button(Buttons),
    /// Chooses a weapon slot, 1-5.
    Slot(u8),
    /// Chooses the next (1) or previous (-1) weapon held.
    Cycle(i8),
    /// Chooses the weapon held before the one in hand.
    LastWeapon,
    /// Zooms the view while held: a weapon that zooms on alternate fire zooms as that
    /// does (its sight, its accuracy); any other only the view, as Quake 3's `+zoom`.
    Zoom,
    /// The game's own (the scoreboard, chat), read where it is used.
    Game,
}

/// One action: the console command it is bound as (Quake's names), its key by default,
/// what the settings page calls it, and what it does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActionRow {
    /// The action.
    pub action: Action,
    /// The console command `bind` names it by.
    pub command: &'static str,
    /// Its default key, by the console's name for it.
    pub key: &'static str,
    /// What the settings page calls it.
    pub label: &'static str,
    /// What it does.
    pub effect: Effect,
}

/// Every action, one row each: the bindings, the defaults, the settings page and the
/// command sampled from the keys are all read from here.
pub(crate) const ACTIONS: &[ActionRow] = &[
    row(
        Action::Forward,
        "+forward",
        "w",
        "Move forward",
        moving(1.0, 0.0),
    ),
    row(Action::Back, "+back", "s", "Move back", moving(-1.0, 0.0)),
    row(
        Action::MoveLeft,
        "+moveleft",
        "a",
        "Step left",
        moving(0.0, -1.0),
    ),
    row(
        Action::MoveRight,
        "+moveright",
        "d",
        "Step right",
        moving(0.0, 1.0),
    ),
    row(
        Action::Jump,
        "+jump",
        "space",
        "Jump",
        Effect::Button(Buttons::JUMP),
    ),
    row(
        Action::Crouch,
        "+duck",
        "ctrl",
        "Crouch",
        Effect::Button(Buttons::CROUCH),
    ),
    row(
        Action::Attack,
        "+attack",
        "mouse1",
        "Fire",
        Effect::Button(Buttons::FIRE),
    ),
    row(
        Action::Attack2,
        "+attack2",
        "mouse2",
        "Alternate fire",
        Effect::Button(Buttons::ALT_FIRE),
    ),
    row(
        Action::Reload,
        "+reload",
        "r",
        "Reload",
        Effect::Button(Buttons::RELOAD),
    ),
    row(
        Action::Weapon1,
        "weapon 1",
        "1",
        "Weapon 1",
        Effect::Slot(1),
    ),
    row(
        Action::Weapon2,
        "weapon 2",
        "2",
        "Weapon 2",
        Effect::Slot(2),
    ),
    row(
        Action::Weapon3,
        "weapon 3",
        "3",
        "Weapon 3",
        Effect::Slot(3),
    ),
    row(
        Action::Weapon4,
        "weapon 4",
        "4",
        "Weapon 4",
        Effect::Slot(4),
    ),
    row(
        Action::Weapon5,
        "weapon 5",
        "5",
        "Weapon 5",
        Effect::Slot(5),
    ),
    row(
        Action::WeaponNext,
        "weapnext",
        "mwheeldown",
        "Next weapon",
        Effect::Cycle(1),
    ),
    row(
        Action::WeaponPrev,
        "weapprev",
        "mwheelup",
        "Previous weapon",
        Effect::Cycle(-1),
    ),
    row(
        Action::LastWeapon,
        "lastinv",
        "q",
        "Last weapon",
        Effect::LastWeapon,
    ),
    row(Action::Zoom, "+zoom", "z", "Zoom", Effect::Zoom),
    row(Action::Scores, "+scores", "tab", "Scoreboard", Effect::Game),
    row(Action::Chat, "messagemode", "t", "Chat", Effect::Game),
    row(
        Action::TeamChat,
        "messagemode2",
        "y",
        "Team chat",
        Effect::Game,
    ),
    row(Action::VoteYes, "vote yes", "f1", "Vote yes", Effect::Game),
    row(Action::VoteNo, "vote no", "f2", "Vote no", Effect::Game),
    row(Action::Ready, "ready", "f3", "Ready (warmup)", Effect::Game),
];

const fn row(
    action: Action,
    command: &'static str,
    key: &'static str,
    label: &'static str,
    effect: Effect,
) -> ActionRow {
    ActionRow {
        action,
        command,
        key,
        label,
        effect,
    }
}

const fn moving(forward: f32, right: f32) -> Effect {
    Effect::Move { forward, right }
}

impl Action {
    /// Its row in [`ACTIONS`].
    pub(crate) fn row(self) -> &'static ActionRow {
        ACTIONS
            .iter()
            .find(|r| r.action == self)
            .expect("every action has a row")
    }

    /// The console command it is bound as.
    pub(crate) fn command(self) -> &'static str {
        self.row().command
    }

    /// The action a console command is bound as, if it is one.
    pub(crate) fn of_command(command: &str) -> Option<Self> {
        ACTIONS
            .iter()
            .find(|r| r.command == command)
            .map(|r| r.action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_action_has_one_row_command_and_key() {
        let mut actions: Vec<String> = ACTIONS.iter().map(|r| format!("{:?}", r.action)).collect();
        let mut commands: Vec<&str> = ACTIONS.iter().map(|r| r.command).collect();
        let mut keys: Vec<&str> = ACTIONS.iter().map(|r| r.key).collect();
        for list in [&mut commands, &mut keys] {
            let n = list.len();
            list.sort();
            list.dedup();
            assert_eq!(list.len(), n, "{list:?}");
        }
        let n = actions.len();
        actions.sort();
        actions.dedup();
        assert_eq!(actions.len(), n);
        // Every action reaches its row (a variant without one would panic here).
        for r in ACTIONS {
            assert_eq!(r.action.row().command, r.command);
            assert_eq!(Action::of_command(r.command), Some(r.action));
        }
    }
}
