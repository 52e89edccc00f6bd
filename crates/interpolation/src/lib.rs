//! Snapshot interpolation for remote players and projectiles. Each remote player keeps a
//! short buffer of its states keyed by server time; it is drawn at *render time* =
//! estimated server time now - interpolation delay (+ `cl_timenudge`), between the two
//! states around that moment. When the next state is late the player is carried on by the
//! movement step, steering as its latest command did ([`Coast`]), for at most
//! [`InterpolationSettings::max_extrapolation`], then held; when a
//! snapshot then shows the drawn path was wrong, the difference fades ([`DrawBlend`])
//! rather than pops. Rockets are sampled at the same render time ([`ProjectileTracks`]).
//!
//! The delay is chosen automatically (`cl_interp 0`) as the 99th percentile, over the
//! last four seconds, of what each snapshot needed to be in hand in time (its gap after
//! the one before, plus how late it came), and a small margin. The delay in use follows
//! the one wanted at [`DELAY_SLEW`], so render time never jumps or goes back.
//!
//! Render time follows the client's estimate of the server's clock ([`ServerClock`]),
//! kept from pings NTP-style ([`ClockSync`]): here, on the client's side, not in the
//! transports.

mod buffer;
mod clock;
mod coast;
mod delay;
mod draw;
mod projectiles;
mod render_time;

pub use buffer::{DrawMode, Drawn, MAX_STATES, SnapshotBuffer, between, lerp_angle, sample};
pub use clock::{CLOCK_WINDOW, ClockSync, SLEW_RATE, STEP_THRESHOLD, ServerClock};
pub use coast::Coast;
pub use delay::{COVERAGE, DelayEstimator, MAX_DELAY, MIN_DELAY, STARTING_DELAY};
pub use draw::{BLEND_MAX, BLEND_SECONDS, DrawBlend, Interpolated, InterpolationStats};
pub use projectiles::{DrawnProjectiles, MAX_TRACKS, ProjectileTracks};
pub use render_time::{DELAY_SLEW, RenderTime, StreamClock, StreamTime};

use bevy::prelude::*;
use sightline_movement::MoveParams;
use sightline_sim::SessionAppExt;

/// Player-facing interpolation settings, set from the console.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct InterpolationSettings {
    /// `cl_interp`: interpolation delay in seconds; 0 chooses it automatically. (The
    /// console's cvar bounds it to what lag compensation honours,
    /// `sightline_combat::MAX_INTERP_DELAY`.)
    pub cl_interp: f32,
    /// `cl_timenudge`: shift render time by this many milliseconds (the cvar bounds it to
    /// -30..=30); negative
    /// draws remote players closer to the present, at the risk of extrapolating more.
    pub cl_timenudge_ms: f32,
    /// Longest extrapolation before holding still, seconds.
    pub max_extrapolation: f32,
}

impl Default for InterpolationSettings {
    fn default() -> Self {
        Self {
            cl_interp: 0.0,
            cl_timenudge_ms: 0.0,
            max_extrapolation: 0.1,
        }
    }
}

/// Where interpolation runs.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InterpolationSet {
    /// Choose the render time and sample every buffer (in `Update`).
    Sample,
}

/// Draws [`Interpolated`] players between snapshots.
pub struct InterpolationPlugin;

impl Plugin for InterpolationPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<InterpolationSettings>()
            .init_session_resource::<DelayEstimator>()
            .init_session_resource::<RenderTime>()
            .init_session_resource::<InterpolationStats>()
            .init_session_resource::<StreamClock>()
            .init_resource::<MoveParams>()
            // Not of a session: it runs on between them, as the real clock does.
            .init_resource::<StreamTime>()
            .init_session_resource::<ProjectileTracks>()
            .init_session_resource::<DrawnProjectiles>()
            .add_systems(
                First,
                render_time::advance_stream_time.after(bevy::time::TimeSystems),
            )
            .add_systems(
                Update,
                (
                    render_time::choose_render_time,
                    (draw::sample_remote_players, draw::sample_projectiles),
                )
                    .chain()
                    .in_set(InterpolationSet::Sample),
            );
    }
}
