//! Render time: the server time remote players are drawn at this frame, behind the
//! snapshot stream's clock by the interpolation delay, never jumping or going back.

use crate::ServerClock;
use crate::{DelayEstimator, InterpolationSettings};
use bevy::prelude::*;

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

/// The clock snapshots' arrivals and render time are measured on: real time, or real
/// time run faster, slower or stopped ([`Self::rate`]) when the stream is a demo played
/// at another speed, so the drawn world keeps pace with the stream without waiting for
/// it or running past it.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct StreamTime {
    /// Seconds of stream a real second brings: 1 live, a demo's speed, 0 while paused.
    pub rate: f64,
    elapsed: f64,
    delta: f64,
}

impl Default for StreamTime {
    fn default() -> Self {
        Self {
            rate: 1.0,
            elapsed: 0.0,
            delta: 0.0,
        }
    }
}

impl StreamTime {
    /// Seconds since the app started, on this clock.
    pub fn elapsed(&self) -> f64 {
        self.elapsed
    }

    /// Seconds this frame took, on this clock.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// Moves on a frame of `real` seconds at the rate set.
    pub fn advance(&mut self, real: f64) {
        self.delta = real.max(0.0) * self.rate.max(0.0);
        self.elapsed += self.delta;
    }
}

/// Moves the stream's clock on with the real one.
pub(crate) fn advance_stream_time(real: Res<Time<Real>>, mut stream: ResMut<StreamTime>) {
    stream.advance(real.delta_secs_f64());
}

/// The snapshot stream's clock: server time as snapshots arrive, i.e. client time minus
/// the mean lateness of snapshots, slewed so it never runs backwards.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct StreamClock(pub ServerClock);

/// Render time = stream time now - delay + nudge. The delay is measured against the
/// arrival of snapshots (not the true server clock), so it only has to cover the spacing
/// and jitter of arrivals, not the one-way latency. The delay in use slews towards the
/// one wanted, so render time never jumps or runs backwards when the delay changes.
pub(crate) fn choose_render_time(
    time: Res<StreamTime>,
    mut clock: ResMut<StreamClock>,
    settings: Res<InterpolationSettings>,
    estimator: Res<DelayEstimator>,
    mut render: ResMut<RenderTime>,
) {
    let now = time.elapsed();
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
    render.advance(clock.0.server_time(now), wanted, time.delta());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_clock_runs_at_its_rate_and_stops_at_zero() {
        let mut t = StreamTime::default();
        t.advance(0.5);
        t.rate = 4.0;
        t.advance(0.25);
        assert_eq!((t.elapsed(), t.delta()), (1.5, 1.0));
        t.rate = 0.0;
        t.advance(3.0);
        assert_eq!((t.elapsed(), t.delta()), (1.5, 0.0));
        t.rate = 0.25;
        t.advance(2.0);
        assert_eq!(t.elapsed(), 2.0);
    }

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
}
