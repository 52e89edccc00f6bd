//! What the server measures about itself, and the line it logs every minute.

use crate::{Connection, PlayerSlots};
use bevy::prelude::*;
use sightline_combat::LagCompStats;
use sightline_net::{NetStats, RenetServer};
use sightline_sim::BotControlled;
use std::time::Instant;

/// Seconds between status lines.
const LOG_INTERVAL: f64 = 60.0;

/// Counters over the server's life.
#[derive(Resource, Debug, Default)]
pub struct ServerStats {
    /// Messages dropped because they failed to decode or validate.
    pub malformed_packets: u64,
    /// Messages dropped unread: over a connection's per-frame budget, or from a
    /// connection already refused.
    pub over_budget: u64,
    /// Strikes given (weighted), see [`crate::Offence`].
    pub strikes: u64,
    /// Connections kicked, for strikes or idleness.
    pub kicks: u64,
    /// Commands refused as impossible (a sequence far ahead, an unknown acknowledgement).
    pub refused_commands: u64,
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

/// What the status line reads.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct StatusSources<'w, 's> {
    times: ResMut<'w, TickTimes>,
    server: Res<'w, RenetServer>,
    slots: Res<'w, PlayerSlots>,
    bots: Query<'w, 's, (), With<BotControlled>>,
    connections: Query<'w, 's, &'static Connection>,
    stats: Res<'w, ServerStats>,
    net: Res<'w, NetStats>,
    lagcomp: Res<'w, LagCompStats>,
}

impl StatusSources<'_, '_> {
    /// The status line as `key=value` pairs (for hosts' log tools and for tests), then
    /// a fresh start for the tick times.
    fn line(&mut self) -> String {
        let (mut out, mut inn) = (0.0, 0.0);
        for c in &self.connections {
            out += self.server.bytes_sent_per_sec(c.client_id);
            inn += self.server.bytes_received_per_sec(c.client_id);
        }
        let (p50, p99, max) = self.times.summary_ms().unwrap_or_default();
        self.times.samples_us.clear();
        let (stats, net) = (&*self.stats, &*self.net);
        format!(
            "status: players={} bots={} tick_p50_ms={p50:.3} tick_p99_ms={p99:.3} \
             tick_max_ms={max:.3} out_kBps={:.1} in_kBps={:.1} kicks={} strikes={} \
             malformed={} over_budget={} refused_commands={} refused_shots={} \
             junk_datagrams={} handshakes_refused={} connections_refused={} \
             tokens_issued={} tokens_refused={} token_requests_dropped={}",
            self.slots.len(),
            self.bots.iter().count(),
            out / 1000.0,
            inn / 1000.0,
            stats.kicks,
            stats.strikes,
            stats.malformed_packets,
            stats.over_budget,
            stats.refused_commands,
            self.lagcomp.refused,
            net.junk_datagrams,
            net.handshakes_refused,
            net.connections_refused,
            net.tokens_issued,
            net.tokens_refused,
            net.token_requests_dropped,
        )
    }
}

/// Logs players, tick time, bandwidth and what was refused, once a minute.
pub(crate) fn log_every_minute(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    mut sources: StatusSources,
) {
    let now = time.elapsed_secs_f64();
    if now - *last < LOG_INTERVAL {
        return;
    }
    *last = now;
    info!("{}", sources.line());
}

/// Logs a last status line when the server stops, so even a short run has its figures.
pub(crate) fn log_on_exit(exit: MessageReader<AppExit>, mut sources: StatusSources) {
    if !exit.is_empty() {
        info!("{}", sources.line());
    }
}
