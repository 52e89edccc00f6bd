//! The status line: players, tick times, bandwidth and what was refused, logged every
//! minute and when the server stops.

use crate::connection::PlayerSlots;
use crate::spectators::Spectator;
use crate::stalls::Stalls;
use crate::stats::{HostingStats, ServerStats, SnapshotStats, TickTimes};
use bevy::prelude::*;
use sightline_combat::LagCompStats;
use sightline_net::{Connectionless, NetStats};
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
    stats: Res<'w, ServerStats>,
    hosting: Res<'w, HostingStats>,
    connectionless: Option<Res<'w, Connectionless>>,
    net: Res<'w, NetStats>,
    lagcomp: Res<'w, LagCompStats>,
    snapshots: Res<'w, SnapshotStats>,
    stalls: Res<'w, Stalls>,
    real: Res<'w, Time<Real>>,
    /// When the last line was written, and the socket's byte counts then.
    last: Local<'s, (f64, u64, u64)>,
}

impl StatusSources<'_, '_> {
    /// The status line as `key=value` pairs (for hosts' log tools and for tests), then
    /// a fresh start for the tick times.
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
        let (stats, net) = (&*self.stats, &*self.net);
        format!(
            "status: players={} bots={} spectators={} tick_p50_ms={p50:.3} tick_p99_ms={p99:.3} \
             tick_max_ms={max:.3} tick_cpu_p50_ms={cpu_p50:.3} \
             tick_cpu_p99_ms={cpu_p99:.3} out_kBps={:.1} in_kBps={:.1} kicks={} strikes={} \
             malformed={} malformed_bundles={} bad_packets={} ack_stalls={} resends_held={} \
             over_budget={} refused_commands={} holds={} repeats={} \
             unresolved_inputs={} late_shots={} refused_shots={} events_expired={} \
             held_for_rate={} junk_datagrams={} handshakes_refused={} connections_refused={} \
             tokens_issued={} tokens_refused={} token_requests_dropped={} \
             stalls={} stall_max_ms={:.0} ticks_caught_up={} skipped_ms={:.0} \
             queries={} queries_dropped={} rcon_wrong={} rcon_lockouts={} rcon_refused={} \
             ban_lines_skipped={}",
            self.slots.len(),
            self.bots.iter().count(),
            self.spectators.iter().count(),
            out / 1000.0,
            inn / 1000.0,
            stats.kicks,
            stats.strikes,
            stats.malformed_packets,
            net.malformed_bundles,
            net.bad_packets,
            net.ack_stalls,
            net.resends_held,
            stats.over_budget,
            stats.refused_commands,
            stats.holds,
            stats.repeats,
            stats.unresolved_inputs,
            self.lagcomp.late,
            self.lagcomp.refused,
            self.snapshots.events_expired,
            self.snapshots.held,
            net.junk_datagrams,
            net.handshakes_refused,
            net.connections_refused,
            net.tokens_issued,
            net.tokens_refused,
            net.token_requests_dropped,
            self.stalls.count,
            self.stalls.longest * 1000.0,
            self.stalls.ticks_caught_up,
            self.stalls.skipped * 1000.0,
            self.hosting.queries,
            self.hosting
                .queries_dropped_in_all(self.connectionless.as_deref()),
            self.hosting.rcon_wrong,
            self.hosting.rcon_lockouts,
            self.hosting.rcon_refused,
            self.hosting.ban_lines_skipped,
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
