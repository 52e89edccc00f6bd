//! What is drawn over the world for the player to read and use: the HUD, chat, the main menu, the server browser and the settings.

pub(crate) mod browser;
pub(crate) mod chat;
pub(crate) mod hud;
pub(crate) mod menu;
pub(crate) mod settings;
