//! Sightline's measurement harness: the whole game in one process, for the end-to-end tests
//! (`tests/`) and the measurements (`sightline-bench`).
//!
//! - [`stepper`]: one server app and any number of client apps on an in-memory network,
//!   advanced together on one manual clock, so a run is exactly reproducible.
//! - [`measure`]: netcode quality (prediction corrections, interpolation error, pacing,
//!   bandwidth) and hit registration behind a link conditioner, on the stepper.
//! - [`soak`]: the chaos soak, a real server over real UDP with clients joining and
//!   leaving through a bad link, in real time.

pub mod measure;
pub mod soak;
pub mod stepper;

pub use stepper::{Stepper, load_map, manual_app};
