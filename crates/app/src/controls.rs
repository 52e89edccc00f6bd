//! What the player touches: the actions keys map to, keyboard and mouse turned into commands, and who has the mouse and keyboard (the world, a menu, a text box).

pub(crate) mod actions;
pub(crate) mod input;
pub(crate) mod overlays;
