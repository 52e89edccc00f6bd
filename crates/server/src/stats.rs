//! What the server measures about itself, and the line it logs every minute.

use crate::{Connection, PlayerSlots};
use bevy::prelude::*;
use sightline_net::RenetServer;
use sightline_sim::BotControlled;
use std::time::Instant;

/// Seconds between status lines.
const LOG_INTERVAL: f64 = 60.0;

/// Counters over the server's life.
#[derive(Resource, Debug, Default)]
pub struct ServerStats {
    /// Messages dropped because they failed to decode or validate.
    pub malformed_packets: u64,
}

/// Wall-clock duration of each fixed tick since the last status line, in microseconds.
#[derive(Resource, Debug, Default)]
pub struct TickTimes {
    started: Option<Instant>,
    /// Durations collected so far.
    pub samples_us: Vec<f32>,
}

impl TickTimes {
    /// The latest tick's duration, microseconds.
    pub fn last_us(&self) -> u32 {
        self.samples_us.last().map_or(0, |&us| us as u32)
    }

    /// (median, 99th percentile, max) of the samples, in milliseconds.
    pub fn summary_ms(&self) -> Option<(f32, f32, f32)> {
        if self.samples_us.is_empty() {
            return None;
        }
        let mut sorted = self.samples_us.clone();
        sorted.sort_by(f32::total_cmp);
        let at = |q: f32| sorted[((sorted.len() - 1) as f32 * q).round() as usize] / 1000.0;
        Some((at(0.5), at(0.99), at(1.0)))
    }
}

pub(crate) fn start_tick_timer(mut times: ResMut<TickTimes>) {
    times.started = Some(Instant::now());
}

pub(crate) fn end_tick_timer(mut times: ResMut<TickTimes>) {
    if let Some(start) = times.started.take() {
        times.samples_us.push(start.elapsed().as_secs_f32() * 1e6);
    }
}

/// Logs players, tick time and bandwidth once a minute.
pub(crate) fn log_every_minute(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    mut times: ResMut<TickTimes>,
    server: Res<RenetServer>,
    slots: Res<PlayerSlots>,
    bots: Query<(), With<BotControlled>>,
    connections: Query<&Connection>,
    stats: Res<ServerStats>,
) {
    let now = time.elapsed_secs_f64();
    if now - *last < LOG_INTERVAL {
        return;
    }
    *last = now;
    let (mut out, mut inn) = (0.0, 0.0);
    for c in &connections {
        out += server.bytes_sent_per_sec(c.client_id);
        inn += server.bytes_received_per_sec(c.client_id);
    }
    let (p50, p99, max) = times.summary_ms().unwrap_or_default();
    let bots = bots.iter().count();
    info!(
        "status: {} players ({} bots), tick p50 {p50:.3} ms p99 {p99:.3} ms max {max:.3} ms, \
         out {:.1} kB/s, in {:.1} kB/s, malformed {}",
        slots.len(),
        bots,
        out / 1000.0,
        inn / 1000.0,
        stats.malformed_packets
    );
    times.samples_us.clear();
}
