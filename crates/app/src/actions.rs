//! What a player can do with keys and buttons: the actions leafwing-input-manager maps
//! keys to, shared by input (which binds and reads them) and the settings (which rebind
//! them).

use bevy::prelude::*;
use leafwing_input_manager::prelude::*;

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
