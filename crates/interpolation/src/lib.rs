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

mod buffer;
mod coast;
mod delay;
mod projectiles;

pub use buffer::{DrawMode, MAX_STATES, SnapshotBuffer, lerp_angle, sample};
pub use coast::Coast;
pub use delay::{COVERAGE, DelayEstimator, MAX_DELAY, MIN_DELAY, STARTING_DELAY};
pub use projectiles::{DrawnProjectiles, MAX_TRACKS, ProjectileTracks};

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
#[require(SnapshotBuffer, Drawn, DrawBlend, Coast)]
pub struct Interpolated;

/// How long a jump in what is drawn takes to fade (exponential time constant), seconds.
pub const BLEND_SECONDS: f32 = 0.1;
/// Jumps at least this long (metres) are drawn at once: a teleport, not an error.
pub const BLEND_MAX: f32 = 2.0;

/// What smooths a remote player's drawn path: when newer snapshots show that what was
/// drawn last frame was wrong (an extrapolation that overshot, a late snapshot), the
/// difference is kept as an offset that fades, instead of a pop.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct DrawBlend {
    /// Added to the sampled position, fading with [`BLEND_SECONDS`].
    pub offset: Vec3,
    /// Whether this player has been drawn before.
    started: bool,
}

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

/// How fast the delay in use follows the one wanted, seconds per second: render time
/// runs at most 10 % slow or fast while it changes, never backwards and never in a jump.
pub const DELAY_SLEW: f64 = 0.1;

/// This frame's render time and the delay behind it.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct RenderTime {
    /// Server time remote players are drawn at, seconds; `None` until the clock is known.
    pub server_time: Option<f64>,
    /// Interpolation delay in use, seconds (less `cl_timenudge`): follows `wanted` at
    /// [`DELAY_SLEW`].
    pub delay: f64,
    /// The delay asked for: automatic or `cl_interp`, less `cl_timenudge`.
    pub wanted: f64,
    /// Whether the delay is chosen automatically.
    pub automatic: bool,
    /// Frames in which render time would have gone back (a clock estimate stepping
    /// back, say) and was held instead. Counted, as it should never happen.
    pub held_back: u64,
}

/// Places every projectile at the render time.
fn sample_projectiles(
    render: Res<RenderTime>,
    settings: Res<InterpolationSettings>,
    tracks: Res<ProjectileTracks>,
    mut drawn: ResMut<DrawnProjectiles>,
) {
    if let Some(t) = render.server_time {
        drawn.0 = tracks.sample(t, settings.max_extrapolation as f64);
    }
}

impl RenderTime {
    /// Moves on a frame of `dt` seconds, with the stream clock reading `stream` (if
    /// known) and `wanted` the delay asked for: the delay in use moves towards it by at
    /// most [`DELAY_SLEW`] x `dt`, and render time never goes back.
    pub fn advance(&mut self, stream: Option<f64>, wanted: f64, dt: f64) {
        self.wanted = wanted;
        let Some(stream) = stream else {
            return;
        };
        self.delay = match self.server_time {
            // The first frame with a clock starts at the delay wanted.
            None => wanted,
            Some(_) => {
                let step = DELAY_SLEW * dt.max(0.0);
                self.delay + (wanted - self.delay).clamp(-step, step)
            }
        };
        let mut t = stream - self.delay;
        if let Some(previous) = self.server_time
            && t < previous
        {
            self.held_back += 1;
            t = previous;
        }
        self.server_time = Some(t);
    }
}

impl DrawBlend {
    /// `sampled` as drawn: plus the difference between what was drawn last frame
    /// (`previous`) and what the buffer now says of that moment (`resample`), faded by
    /// `fade`. Differences of [`BLEND_MAX`] or more are dropped (teleports).
    pub fn apply(
        &mut self,
        previous: &Drawn,
        sampled: Drawn,
        fade: f32,
        resample: impl FnOnce(f64) -> Option<Vec3>,
    ) -> Drawn {
        if self.started
            && let Some(known) = resample(previous.time)
        {
            let jump = previous.pos - known;
            self.offset = if jump.is_finite() && jump.length() < BLEND_MAX {
                jump * fade
            } else {
                Vec3::ZERO
            };
        }
        self.started = true;
        Drawn {
            pos: sampled.pos + self.offset,
            ..sampled
        }
    }
}

/// Counters for the netgraph and the netcode report.
#[derive(Resource, Debug, Default, Clone)]
pub struct InterpolationStats {
    /// Player-frames drawn between two snapshots.
    pub interpolated: u64,
    /// Player-frames drawn past the newest snapshot.
    pub extrapolated: u64,
    /// Player-frames held at the end of extrapolation.
    pub held: u64,
    /// Player-frames not drawn: before the player's first snapshot since it came into
    /// view.
    pub unseen: u64,
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
            .init_session_resource::<DelayEstimator>()
            .init_session_resource::<RenderTime>()
            .init_session_resource::<InterpolationStats>()
            .init_session_resource::<StreamClock>()
            .init_resource::<MoveParams>()
            .init_session_resource::<ProjectileTracks>()
            .init_session_resource::<DrawnProjectiles>()
            .add_systems(
                Update,
                (
                    choose_render_time,
                    (sample_remote_players, sample_projectiles),
                )
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
/// and jitter of arrivals, not the one-way latency. The delay in use slews towards the
/// one wanted, so render time never jumps or runs backwards when the delay changes.
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
    let nudge = settings.cl_timenudge_ms as f64 / 1000.0;
    let wanted = if automatic {
        estimator.delay()
    } else {
        settings.cl_interp as f64
    } - nudge;
    render.automatic = automatic;
    render.advance(clock.0.server_time(now), wanted, time.delta_secs_f64());
}

/// Samples every remote player's buffer at the render time, blending out any jump.
fn sample_remote_players(
    time: Res<Time<Real>>,
    render: Res<RenderTime>,
    settings: Res<InterpolationSettings>,
    params: Res<MoveParams>,
    mut stats: ResMut<InterpolationStats>,
    map: Option<Res<sightline_map::CurrentMap>>,
    tick: Option<Res<sightline_sim::TickConfig>>,
    mut players: Query<
        (&SnapshotBuffer, &mut Drawn, &mut DrawBlend, &mut Coast),
        With<Interpolated>,
    >,
) {
    let Some(t) = render.server_time else {
        return;
    };
    let fade = (-time.delta_secs() / BLEND_SECONDS).exp();
    let limit = settings.max_extrapolation as f64;
    let mut any_late = false;
    let dt = tick.map_or(1.0 / 128.0, |c| c.dt());
    for (buffer, mut drawn, mut blend, mut coast) in &mut players {
        let Some(mut d) = sample(buffer, t, limit, params.gravity) else {
            continue;
        };
        // Past the newest snapshot: the movement step, steering as the player last did.
        if let (Some(map), Some((from, newest, intent))) = (map.as_ref(), buffer.newest())
            && t > from
        {
            d.pos = coast.at(
                from,
                &newest,
                &intent,
                t - from,
                limit,
                &map.world,
                &params,
                dt,
            );
        }
        let d = blend.apply(&drawn, d, fade, |at| {
            sample(buffer, at, limit, params.gravity).map(|s| s.pos)
        });
        match d.mode {
            DrawMode::Interpolated => stats.interpolated += 1,
            DrawMode::Extrapolated => stats.extrapolated += 1,
            DrawMode::Held => stats.held += 1,
            DrawMode::Unseen => stats.unseen += 1,
        }
        any_late |= matches!(d.mode, DrawMode::Extrapolated | DrawMode::Held);
        *drawn = d;
    }
    stats.frames += 1;
    stats.frames_extrapolating += u64::from(any_late);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_time_follows_a_changing_delay_without_jumps_or_steps_back() {
        let mut r = RenderTime::default();
        let dt = 1.0 / 60.0;
        let mut previous = f64::MIN;
        for frame in 0..600 {
            let stream = 10.0 + frame as f64 * dt;
            // The delay wanted swings between 20 and 120 ms every second.
            let wanted = if (frame / 60) % 2 == 0 { 0.02 } else { 0.12 };
            r.advance(Some(stream), wanted, dt);
            let t = r.server_time.unwrap();
            assert!(t >= previous, "frame {frame} went back");
            if frame > 0 {
                let step = t - previous;
                assert!(
                    step >= dt * (1.0 - DELAY_SLEW) - 1e-12,
                    "frame {frame}: {step}"
                );
                assert!(
                    step <= dt * (1.0 + DELAY_SLEW) + 1e-12,
                    "frame {frame}: {step}"
                );
            }
            previous = t;
        }
        assert_eq!(r.held_back, 0);
        // A clock estimate stepping back is held, and counted.
        r.advance(Some(previous - 0.5), r.delay, dt);
        assert_eq!(r.server_time, Some(previous));
        assert_eq!(r.held_back, 1);
    }

    fn drawn(x: f32, time: f64, mode: DrawMode) -> Drawn {
        Drawn {
            pos: Vec3::new(x, 0.0, 0.0),
            time,
            mode,
            ..Default::default()
        }
    }

    #[test]
    fn an_overshooting_extrapolation_fades_instead_of_popping() {
        let mut blend = DrawBlend::default();
        let fade = (-(1.0f32 / 60.0) / BLEND_SECONDS).exp();
        // Drawn extrapolated to x = 1.0, then a snapshot shows the player stopped at 0.5.
        let mut shown = blend.apply(
            &drawn(0.0, 0.0, DrawMode::Held),
            drawn(1.0, 1.0, DrawMode::Extrapolated),
            fade,
            |_| None,
        );
        assert_eq!(shown.pos.x, 1.0);
        let mut xs = vec![shown.pos.x];
        for frame in 1..60 {
            let time = 1.0 + frame as f64 / 60.0;
            shown = blend.apply(
                &shown,
                drawn(0.5, time, DrawMode::Interpolated),
                fade,
                |_| Some(Vec3::new(0.5, 0.0, 0.0)),
            );
            xs.push(shown.pos.x);
        }
        let largest_step = xs
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .fold(0.0, f32::max);
        assert!(largest_step < 0.1, "no pop: largest step {largest_step} m");
        assert!(
            (xs[59] - 0.5).abs() < 0.01,
            "settles where the server had it: {}",
            xs[59]
        );
        // A teleport is drawn at once.
        let far = blend.apply(
            &shown,
            drawn(30.0, 2.0, DrawMode::Interpolated),
            fade,
            |_| Some(Vec3::new(30.0, 0.0, 0.0)),
        );
        let after = blend.apply(&far, drawn(30.0, 2.1, DrawMode::Interpolated), fade, |_| {
            Some(Vec3::new(30.0, 0.0, 0.0))
        });
        assert!((after.pos.x - 30.0).abs() < 0.01);
    }
}
