//! Sightline's measurement harness: the whole game in one process, for the end-to-end tests
//! (`tests/`) and the measurements (`sightline-bench`).
//!
//! - [`stepper`]: one server app and any number of client apps on an in-memory network,
//!   advanced on one simulated wall clock, each client at its own frame rate (or in
//!   lockstep with the server), so a run is exactly reproducible.
//! - [`measure`]: netcode quality (prediction corrections and resets, input latency and
//!   buffering, interpolation error and delay, render time, bandwidth) behind link
//!   conditioners, in the lab baseline and in a realistic fight, on the stepper; and
//!   hit registration ([`measure::hits`]), a shooter aiming where its screen draws a
//!   moving target.
//! - [`realtime`]: a real server over UDP on loopback on a thread of its own.
//! - [`soak`]: the chaos soak, a real server over real UDP with clients joining and
//!   leaving through a bad link, in real time.
//! - [`load`]: the load test, a real server over real UDP with as many bot-driven clients
//!   as players, measuring tick time, bandwidth and snapshot sizes.
//! - [`hosting`]: floods of the hosting surfaces (A2S, the master list, RCON, metrics)
//!   from hosts of their own, and the hosting load test: the real server binary and an
//!   honest player under all of them at once.

// Modules, bottom up: each uses only those above it (`scripts/module-cycles` checks that
// none import each other in a circle).
pub mod stepper;

pub mod measure;

pub mod realtime;

pub mod soak;

pub mod load;

pub mod hosting;

pub use stepper::{FrameClock, Frames, Stepper, Updated, load_map, manual_app};
