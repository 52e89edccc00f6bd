//! Snapshot interpolation for remote players. Each remote player keeps a short buffer of
//! its states keyed by server time; it is drawn at *render time* = estimated server time
//! now - interpolation delay (+ `cl_timenudge`), between the two states around that
//! moment. When the next state is late it is extrapolated along its velocity for at most
//! [`InterpolationSettings::max_extrapolation`], then held.
//!
//! The delay is chosen automatically (`cl_interp 0`) as the mean snapshot interval plus
//! one standard deviation of arrival jitter and a small margin: just enough to have a
//! snapshot on each side most of the time, and no more.

mod buffer;
mod delay;

pub use buffer::{DrawMode, MAX_STATES, SnapshotBuffer, lerp_angle, sample};
pub use delay::{DelayEstimator, MAX_DELAY, MIN_DELAY, STARTING_DELAY};

use bevy::prelude::*;
use sightline_movement::{MoveFlags, MoveParams};
use sightline_net::ServerClock;
use sightline_sim::SessionAppExt;

/// Player-facing interpolation settings, set from the console.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct InterpolationSettings {
    /// `cl_interp`: interpolation delay in seconds; 0 chooses it automatically. (The
    /// console's cvar bounds it to 0-0.25 s, what lag compensation honours.)
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

/// Marks a player drawn by interpolation.
#[derive(Component, Debug, Default, Clone, Copy)]
#[require(SnapshotBuffer, Drawn)]
pub struct Interpolated;

/// Where an interpolated player is drawn this frame.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct Drawn {
    /// Feet position.
    pub pos: Vec3,
    /// View yaw.
    pub yaw: f32,
    /// View pitch.
    pub pitch: f32,
    /// Movement bits of the nearer state.
    pub flags: MoveFlags,
    /// How the position was found.
    pub mode: DrawMode,
    /// The server time it represents, seconds.
    pub time: f64,
}

/// This frame's render time and the delay behind it.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct RenderTime {
    /// Server time remote players are drawn at, seconds; `None` until the clock is known.
    pub server_time: Option<f64>,
    /// Interpolation delay in use, seconds.
    pub delay: f64,
    /// Whether the delay is chosen automatically.
    pub automatic: bool,
}

/// Counters for the netgraph and the netcode report.
#[derive(Resource, Debug, Default, Clone)]
pub struct InterpolationStats {
    /// Player-frames drawn between two snapshots.
    pub interpolated: u64,
    /// Player-frames drawn past the newest snapshot.
    pub extrapolated: u64,
    /// Player-frames held at the end of extrapolation or before the first snapshot.
    pub held: u64,
    /// Frames in which any remote player was extrapolated or held.
    pub frames_extrapolating: u64,
    /// Frames drawn.
    pub frames: u64,
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
            .init_resource::<DelayEstimator>()
            .init_resource::<RenderTime>()
            .init_resource::<InterpolationStats>()
            .init_resource::<StreamClock>()
            .init_resource::<MoveParams>()
            .reset_on_session_end::<DelayEstimator>()
            .reset_on_session_end::<RenderTime>()
            .reset_on_session_end::<InterpolationStats>()
            .reset_on_session_end::<StreamClock>()
            .add_systems(
                Update,
                (choose_render_time, sample_remote_players)
                    .chain()
                    .in_set(InterpolationSet::Sample),
            );
    }
}

/// The snapshot stream's clock: server time as snapshots arrive, i.e. client time minus
/// the mean lateness of snapshots, slewed so it never runs backwards.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct StreamClock(pub ServerClock);

/// Render time = stream time now - delay + nudge. The delay is measured against the
/// arrival of snapshots (not the true server clock), so it only has to cover the spacing
/// and jitter of arrivals, not the one-way latency.
fn choose_render_time(
    time: Res<Time<Real>>,
    mut clock: ResMut<StreamClock>,
    settings: Res<InterpolationSettings>,
    estimator: Res<DelayEstimator>,
    mut render: ResMut<RenderTime>,
) {
    let now = time.elapsed_secs_f64();
    if let Some(lateness) = estimator.mean_lateness() {
        clock.0.update(now, -lateness);
    }
    let automatic = settings.cl_interp == 0.0;
    let delay = if automatic {
        estimator.delay()
    } else {
        settings.cl_interp as f64
    };
    let nudge = settings.cl_timenudge_ms as f64 / 1000.0;
    *render = RenderTime {
        server_time: clock.0.server_time(now).map(|t| t - delay + nudge),
        delay,
        automatic,
    };
}

/// Samples every remote player's buffer at the render time.
fn sample_remote_players(
    render: Res<RenderTime>,
    settings: Res<InterpolationSettings>,
    params: Res<MoveParams>,
    mut stats: ResMut<InterpolationStats>,
    mut players: Query<(&SnapshotBuffer, &mut Drawn), With<Interpolated>>,
) {
    let Some(t) = render.server_time else {
        return;
    };
    let mut any_late = false;
    for (buffer, mut drawn) in &mut players {
        let Some(d) = sample(buffer, t, settings.max_extrapolation as f64, params.gravity) else {
            continue;
        };
        match d.mode {
            DrawMode::Interpolated => stats.interpolated += 1,
            DrawMode::Extrapolated => stats.extrapolated += 1,
            DrawMode::Held => stats.held += 1,
        }
        any_late |= d.mode != DrawMode::Interpolated;
        *drawn = d;
    }
    stats.frames += 1;
    stats.frames_extrapolating += u64::from(any_late);
}
