//! The status line: players, tick times, bandwidth and what was refused, logged every
//! minute and when the server stops.

use crate::connection::PlayerSlots;
use crate::counters::Counters;
use crate::spectators::Spectator;
use crate::stalls::Stalls;
use crate::stats::TickTimes;
use bevy::prelude::*;
use sightline_net::NetStats;
use sightline_sim::BotControlled;

/// Seconds between status lines.
const LOG_INTERVAL: f64 = 60.0;

/// What the status line reads.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct StatusSources<'w, 's> {
    times: ResMut<'w, TickTimes>,
    slots: Res<'w, PlayerSlots>,
    bots: Query<'w, 's, (), With<BotControlled>>,
    spectators: Query<'w, 's, (), With<Spectator>>,
    counters: Counters<'w>,
    net: Res<'w, NetStats>,
    stalls: Res<'w, Stalls>,
    real: Res<'w, Time<Real>>,
    /// When the last line was written, and the socket's byte counts then.
    last: Local<'s, (f64, u64, u64)>,
}

impl StatusSources<'_, '_> {
    /// The status line as `key=value` pairs (for hosts' log tools and for tests): who
    /// plays, the tick's times, the bandwidth, the longest stall, then every counter
    /// with a status key ([`Counters`]); then a fresh start for the tick times.
    fn line(&mut self) -> String {
        // Since the last line, as the socket counted it.
        let now = self.real.elapsed_secs_f64();
        let (then, sent, received) = *self.last;
        let seconds = (now - then).max(1e-3);
        let out = self.net.sent_bytes.saturating_sub(sent) as f64 / seconds;
        let inn = self.net.received_bytes.saturating_sub(received) as f64 / seconds;
        *self.last = (now, self.net.sent_bytes, self.net.received_bytes);
        let (p50, p99, max) = self.times.summary_ms().unwrap_or_default();
        let (cpu_p50, cpu_p99, _) = self.times.cpu_summary_ms().unwrap_or_default();
        self.times.clear();
        let mut line = format!(
            "status: players={} bots={} spectators={} tick_p50_ms={p50:.3} tick_p99_ms={p99:.3} \
             tick_max_ms={max:.3} tick_cpu_p50_ms={cpu_p50:.3} \
             tick_cpu_p99_ms={cpu_p99:.3} out_kBps={:.1} in_kBps={:.1} stall_max_ms={:.0} \
             skipped_ms={:.0}",
            self.slots.len(),
            self.bots.iter().count(),
            self.spectators.iter().count(),
            out / 1000.0,
            inn / 1000.0,
            self.stalls.longest * 1000.0,
            self.stalls.skipped * 1000.0,
        );
        for counter in self.counters.all() {
            if let Some(key) = counter.key {
                line += &format!(" {key}={}", counter.value);
            }
        }
        line
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

/// The status line: once a minute, and once more on the way out.
pub(crate) struct StatusPlugin;

impl Plugin for StatusPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, log_every_minute)
            .add_systems(Last, log_on_exit);
    }
}
