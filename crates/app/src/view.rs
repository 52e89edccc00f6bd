//! How the world reaches the screen: the death and kill cameras, the renderer's quality and resolution, the view's shake and vignette, and where a frame's time goes (`cl_showfps`).

pub(crate) mod deathcam;
pub(crate) mod frame_cost;
pub(crate) mod graphics;
pub(crate) mod killcam;
pub(crate) mod resolution;
pub(crate) mod shake;
pub(crate) mod vignette;
