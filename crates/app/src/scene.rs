//! The world as drawn: the map and its sky and surfaces, other players' bodies and weapons, the view model, and the effects and particles of combat.

pub(crate) mod character;
pub(crate) mod effects;
pub(crate) mod materials;
pub(crate) mod particles;
pub(crate) mod players;
pub(crate) mod sky;
pub(crate) mod viewmodel;
pub(crate) mod weapon_models;
pub(crate) mod world;
