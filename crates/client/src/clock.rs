//! Clock sync pings: a burst on joining, then one every half second.

use crate::InputPacing;
use crate::sets::{ReceiveStep, playing};
use bevy::prelude::*;
use sightline_interpolation::{ClockSync, ServerClock};
use sightline_net::RenetClient;
use sightline_prediction::RoundTrip;
use sightline_protocol::{Channel, ClientDatagram};
use sightline_sim::SessionAppExt;
use sightline_sim::TickConfig;

/// Pings sent back to back on joining, one per frame.
const BURST: u32 = 5;
/// Seconds between pings after the burst.
const PING_INTERVAL: f64 = 0.5;

/// When the next ping is due.
#[derive(Resource, Debug, Default)]
pub(crate) struct PingSchedule {
    sent: u32,
    last: f64,
}

/// Sends clock-sync pings.
pub(crate) fn send_pings(
    time: Res<Time<Real>>,
    mut schedule: ResMut<PingSchedule>,
    mut client: ResMut<RenetClient>,
) {
    let now = time.elapsed_secs_f64();
    if schedule.sent >= BURST && now - schedule.last < PING_INTERVAL {
        return;
    }
    schedule.sent += 1;
    schedule.last = now;
    let ping = ClientDatagram::Ping {
        client_time_us: (now * 1e6) as u64,
    };
    crate::send_to_server(&mut client, Channel::Unreliable, &ping);
}

/// Records a pong.
pub(crate) fn on_pong(sync: &mut ClockSync, client_time_us: u64, server_time_us: u64, now: f64) {
    sync.add_sample(
        client_time_us as f64 / 1e6,
        server_time_us as f64 / 1e6,
        now,
    );
}

/// Seconds a silence between snapshots is remembered for.
const SILENCE_MEMORY: f64 = 2.0;

/// When snapshots last arrived, and the longest silence between two of them lately: a
/// server that stood still, or our NAT changing our port, holds back every
/// acknowledgement for that long, and prediction waits that much longer before it gives
/// up on its commands.
#[derive(Resource, Debug, Default)]
pub(crate) struct SnapshotSilence {
    last: Option<(u32, f64)>,
    /// The longest recent silence, seconds, and when it ended.
    longest: (f64, f64),
}

impl SnapshotSilence {
    /// Notes a snapshot `seq` seen at `now`.
    pub(crate) fn note(&mut self, seq: u32, now: f64) {
        if let Some((last_seq, at)) = self.last {
            if last_seq == seq {
                return;
            }
            let gap = now - at;
            if gap >= self.recent(now) {
                self.longest = (gap, now);
            }
        }
        self.last = Some((seq, now));
    }

    /// The longest silence that ended within [`SILENCE_MEMORY`] of `now`, seconds.
    fn recent(&self, now: f64) -> f64 {
        let (gap, ended) = self.longest;
        if now - ended <= SILENCE_MEMORY {
            gap
        } else {
            0.0
        }
    }
}

/// Moves the server-clock estimate toward the measured offset.
pub(crate) fn update_server_clock(
    time: Res<Time<Real>>,
    sync: Res<ClockSync>,
    mut clock: ResMut<ServerClock>,
) {
    if let Some(offset) = sync.offset() {
        clock.update(time.elapsed_secs_f64(), offset);
    }
}

/// Tells prediction how long commands normally take to be acknowledged, a recent silence
/// of the server's included.
pub(crate) fn update_round_trip(
    time: Res<Time<Real>>,
    sync: Res<ClockSync>,
    pacing: Res<InputPacing>,
    config: Res<TickConfig>,
    silence: Res<SnapshotSilence>,
    mut round_trip: ResMut<RoundTrip>,
) {
    let now = time.elapsed_secs_f64();
    let queued = pacing.recent_queue() / config.tick_hz as f64;
    round_trip.0 = match (sync.rtt_mean(), sync.rtt_jitter()) {
        // Round-trip jitter is the sum of two legs' jitter: one leg is about 1/sqrt(2).
        (Some(rtt), Some(jitter)) if sync.len() >= 8 => rtt + 3.0 * jitter + queued,
        // Too few pongs to know the jitter: twice what they say.
        (Some(rtt), _) => 2.0 * rtt + queued,
        // None yet: the longest round trip the game is made for, so that a slow link's
        // first commands are not given up on before it is measured (a reset then, on
        // every join, was most of the resets the chaos soak counted).
        (None, _) => UNMEASURED_ROUND_TRIP,
    } as f32
        + silence.recent(now) as f32;
}

/// The round trip prediction allows for before any is measured, seconds.
pub const UNMEASURED_ROUND_TRIP: f64 = 1.0;

/// The server's clock: pinged for, its round trip from the acknowledgements, and the
/// estimate drawing follows.
pub(crate) struct ClockPlugin;

impl Plugin for ClockPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<ClockSync>()
            .init_session_resource::<ServerClock>()
            .init_session_resource::<PingSchedule>()
            .init_session_resource::<SnapshotSilence>()
            .add_systems(
                PreUpdate,
                update_round_trip.in_set(ReceiveStep::Clock).run_if(playing),
            )
            .add_systems(Update, (send_pings, update_server_clock).run_if(playing));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_silence_between_snapshots_is_remembered_for_a_while() {
        let mut s = SnapshotSilence::default();
        for (seq, at) in [(1, 0.0), (2, 0.016), (2, 0.5), (3, 0.031)] {
            s.note(seq, at);
        }
        assert!(s.recent(0.031) < 0.02, "{s:?}");
        // The server stands still for 2.5 s.
        s.note(4, 2.531);
        s.note(5, 2.547);
        assert!((s.recent(2.6) - 2.5).abs() < 1e-9, "{s:?}");
        assert!((s.recent(4.5) - 2.5).abs() < 1e-9, "still within memory");
        assert_eq!(s.recent(4.6), 0.0, "forgotten");
    }
}
