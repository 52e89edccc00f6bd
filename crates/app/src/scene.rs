//! The world as drawn: the map and its sky and surfaces, the flags, other players' bodies and weapons, the view model, and the effects and particles of combat; a frame over a second logged with what it drew.

pub(crate) mod character;
pub(crate) mod effects;
pub(crate) mod flags;
pub(crate) mod long_frames;
pub(crate) mod materials;
pub(crate) mod particles;
pub(crate) mod players;
pub(crate) mod sky;
pub(crate) mod viewmodel;
pub(crate) mod weapon_models;
pub(crate) mod world;
