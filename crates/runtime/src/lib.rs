//! What every Sightline app stands on, below the game and the transports: how its clock
//! runs and how it stops ([`paced_app`], [`Pacing`], [`ShutdownPlugin`]), the value a
//! plugin was made with and hands to the app once ([`TakeOnce`]), and the command line
//! read the same way by every binary ([`parse_args`]).

// The app's clock and its end; then what plugins and binaries share.
mod cli;
mod shutdown;
mod take_once;

pub use cli::{exit_with_usage, parse_args, parse_args_from};
pub use shutdown::{Pacing, RunFor, ShutdownPlugin, ShutdownSignal, paced_app};
pub use take_once::TakeOnce;
