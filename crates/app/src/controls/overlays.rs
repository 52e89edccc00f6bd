//! What is open over the world and who has the mouse and keyboard: the game menu, the
//! settings, a text box, mouse look. Their own modules draw and run them; the rest of the
//! game (input, the HUD) only asks, so this sits below all of them.

use crate::controls::actions::Action;
use bevy::prelude::*;

/// Whether the game menu (Escape while playing) is open.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GameMenu {
    /// Open: drawn, and the mouse is free.
    pub open: bool,
}

/// Whether the settings are open, on which page, and which action waits for a key.
#[derive(Resource, Debug, Default)]
pub struct SettingsPage {
    /// Open: drawn in place of the menu that opened it.
    pub open: bool,
    pub(crate) tab: Tab,
    pub(crate) capture: Option<Action>,
}

impl SettingsPage {
    /// Whether the page waits for a key to bind (Escape then cancels that, nothing else).
    pub fn capturing(&self) -> bool {
        self.open && self.capture.is_some()
    }
}

/// The pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Tab {
    #[default]
    Video,
    Audio,
    Controls,
    Crosshair,
    Network,
}

impl Tab {
    pub(crate) const ALL: [Self; 5] = [
        Self::Video,
        Self::Audio,
        Self::Controls,
        Self::Crosshair,
        Self::Network,
    ];

    /// The page called `name` (its title, in any case).
    pub(crate) fn named(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.title().eq_ignore_ascii_case(name))
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::Video => "Video",
            Self::Audio => "Audio",
            Self::Controls => "Controls",
            Self::Crosshair => "Crosshair",
            Self::Network => "Network",
        }
    }
}

/// Whether the mouse steers the view (cursor grabbed) or is free (menus, Escape).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MouseLook(pub bool);

/// Whether a text box in the game (chat) has the keyboard: the mouse is freed and keys
/// do not move the player. The console has its own flag.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TextFocus(pub bool);
