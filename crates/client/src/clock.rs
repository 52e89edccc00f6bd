//! Clock sync pings: a burst on joining, then one every half second.

use crate::InputPacing;
use bevy::prelude::*;
use sightline_net::{ClockSync, RenetClient, ServerClock};
use sightline_prediction::RoundTrip;
use sightline_protocol::{Channel, ClientDatagram};
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

/// Moves the server-clock estimate toward the measured offset and tells prediction how
/// long commands normally take to be acknowledged.
pub(crate) fn update_server_clock(
    time: Res<Time<Real>>,
    sync: Res<ClockSync>,
    pacing: Res<InputPacing>,
    config: Res<TickConfig>,
    mut clock: ResMut<ServerClock>,
    mut round_trip: ResMut<RoundTrip>,
) {
    if let Some(offset) = sync.offset() {
        clock.update(time.elapsed_secs_f64(), offset);
    }
    if let (Some(rtt), Some(jitter)) = (sync.rtt_mean(), sync.rtt_jitter())
        && sync.len() >= 8
    {
        // Round-trip jitter is the sum of two legs' jitter: one leg is about 1/sqrt(2).
        let queued = pacing.recent_queue() / config.tick_hz as f64;
        round_trip.0 = (rtt + 3.0 * jitter + queued) as f32;
    }
}
