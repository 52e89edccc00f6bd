//! How the world reaches the screen: the death and kill cameras, the renderer's quality and resolution, the view's shake and vignette, and long frames logged with what they drew.

pub(crate) mod deathcam;
pub(crate) mod graphics;
pub(crate) mod killcam;
pub(crate) mod long_frames;
pub(crate) mod resolution;
pub(crate) mod shake;
pub(crate) mod vignette;
