//! What the server counts and measures about itself.

use bevy::prelude::*;
use sightline_net::Connectionless;
use sightline_sim::{SimSet, quantile};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Something that takes one measurement: a host's histogram.
pub type Observe = Arc<dyn Fn(f64) + Send + Sync>;

/// Where the distributions the tick measures go, one value at a time: present only
/// where a host exports them (the dedicated server's Prometheus histograms), so the game
/// knows nothing of the exporter.
#[derive(Resource, Clone)]
pub struct Observers {
    /// Each fixed tick's wall-clock time, seconds.
    pub tick_seconds: Observe,
    /// Each snapshot's encoded size, bytes.
    pub snapshot_bytes: Observe,
}

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
    /// Chat lines, renames and team changes refused: over a player's allowance, or not
    /// allowed (a spectator renaming, a side that would make the teams uneven).
    pub refused_requests: u64,
    /// Datagrams of a role the connection just left, dropped: input from a player gone
    /// to watch, acknowledgements from a spectator come to play (see `roles`).
    pub switch_leftovers: u64,
    /// Input packets dropped because the command they were written against is not held:
    /// their acknowledged snapshot is no longer remembered, or the command is older than
    /// the last `INPUT_BASE_SPAN` received, or was never received.
    pub unresolved_inputs: u64,
    /// Ticks a player was held waiting for a late command, in all players.
    pub holds: u64,
    /// Commands run as a tick's second, repaying a tick their player was held, in all
    /// players.
    pub catch_ups: u64,
    /// Commands the server could not run as sent: ticks it repeated a player's last
    /// command over a gap, or skipped commands to catch up, in all players.
    pub repeats: u64,
}

/// What the host's side counted over the server's life: server queries (A2S, masters)
/// and remote admin. Zero on a server without them (offline play, the harness).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HostingStats {
    /// Connectionless datagrams answered.
    pub queries: u64,
    /// Connectionless datagrams dropped unanswered (malformed, unknown, over a budget).
    pub queries_dropped: u64,
    /// Wrong rcon passwords (over TCP and in game).
    pub rcon_wrong: u64,
    /// Addresses locked out for wrong rcon passwords.
    pub rcon_lockouts: u64,
    /// RCON connections refused (too many, remote admin off) or closed for bad packets.
    pub rcon_refused: u64,
    /// Lines of the ban file skipped at start-up because they did not read (see
    /// `BanList::skipped` in `sightline-dedicated`).
    pub ban_lines_skipped: u64,
}

impl HostingStats {
    /// Connectionless datagrams dropped unanswered: those the server refused, and those
    /// past the transport's per-frame limit that never reached it.
    pub fn queries_dropped_in_all(&self, connectionless: Option<&Connectionless>) -> u64 {
        self.queries_dropped + connectionless.map_or(0, |c| c.dropped)
    }
}

/// renet sends an unreliable message longer than this in slices, one datagram each: a
/// snapshot over it is lost if any slice is.
pub const SLICE_BYTES: usize = 1200;

/// What the snapshots sent so far weighed.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotStats {
    /// Snapshots sent.
    pub sent: u64,
    /// Their encoded bytes, in all (renet's and netcode's headers not included).
    pub bytes: u64,
    /// The largest, bytes.
    pub largest: usize,
    /// Those over [`SLICE_BYTES`], sent in slices.
    pub sliced: u64,
    /// Player entries they carried, in all, and of those the players that were moving.
    pub players: u64,
    /// See `players`.
    pub moving: u64,
    /// Events dropped unacknowledged: their client acknowledged no snapshot for the
    /// events' lifetime (3 s), or more were queued for it than are kept.
    pub events_expired: u64,
    /// Player entries held back for their client's `rate` (of `players`).
    pub held: u64,
}

impl SnapshotStats {
    /// Counts one snapshot of `bytes` carrying `players` entries, `moving` of them moving.
    pub fn count(&mut self, bytes: usize, players: usize, moving: usize) {
        self.sent += 1;
        self.bytes += bytes as u64;
        self.largest = self.largest.max(bytes);
        self.sliced += u64::from(bytes > SLICE_BYTES);
        self.players += players as u64;
        self.moving += moving as u64;
    }
}

/// Duration of each fixed tick since the last status line, in microseconds: on the wall
/// clock (what players feel) and in the process's CPU time (the server's own work, which
/// another process taking the CPU does not inflate).
#[derive(Resource, Debug, Default)]
pub struct TickTimes {
    started: Option<(Instant, Option<Duration>)>,
    /// Wall-clock durations collected so far.
    pub samples_us: Vec<f32>,
    /// CPU time the whole process spent during each of those ticks, where the platform
    /// has a process CPU clock (empty elsewhere).
    pub cpu_samples_us: Vec<f32>,
    /// The latest wall-clock duration, kept when the samples are taken away.
    last_us: f32,
}

impl TickTimes {
    /// The latest tick's duration, microseconds.
    pub fn last_us(&self) -> u32 {
        self.last_us as u32
    }

    /// (median, 99th percentile, max) of the wall-clock samples, in milliseconds.
    pub fn summary_ms(&self) -> Option<(f32, f32, f32)> {
        summary_ms(&self.samples_us)
    }

    /// (median, 99th percentile, max) of the CPU-time samples, in milliseconds.
    pub fn cpu_summary_ms(&self) -> Option<(f32, f32, f32)> {
        summary_ms(&self.cpu_samples_us)
    }

    /// Drops the samples, for a fresh start (the latest duration is kept).
    pub fn clear(&mut self) {
        self.samples_us.clear();
        self.cpu_samples_us.clear();
    }
}

/// (median, 99th percentile, max) of samples in microseconds, in milliseconds.
fn summary_ms(samples_us: &[f32]) -> Option<(f32, f32, f32)> {
    if samples_us.is_empty() {
        return None;
    }
    let sorted = quantile::sorted(samples_us.iter().map(|&us| f64::from(us)));
    let at = |q: f64| quantile::quantile(&sorted, q).map(|us| (us / 1000.0) as f32);
    Some((at(0.5)?, at(0.99)?, at(1.0)?))
}

/// CPU time used by every thread of this process so far.
#[cfg(unix)]
fn process_cpu_time() -> Option<Duration> {
    use rustix::time::{ClockId, clock_gettime};
    let t = clock_gettime(ClockId::ProcessCPUTime);
    let secs = u64::try_from(t.tv_sec).ok()?;
    let nanos = u32::try_from(t.tv_nsec).ok()?;
    Some(Duration::new(secs, nanos))
}

/// No process CPU clock here: ticks are measured on the wall clock only.
#[cfg(not(unix))]
fn process_cpu_time() -> Option<Duration> {
    None
}

/// Starts timing a tick, before anything else in it.
pub(crate) fn start_tick_timer(mut times: ResMut<TickTimes>) {
    times.started = Some((Instant::now(), process_cpu_time()));
}

/// Records the tick's duration, once its snapshots are sent.
pub(crate) fn end_tick_timer(mut times: ResMut<TickTimes>, observers: Option<Res<Observers>>) {
    if let Some((start, cpu_start)) = times.started.take() {
        let elapsed = start.elapsed();
        let us = elapsed.as_secs_f32() * 1e6;
        times.last_us = us;
        times.samples_us.push(us);
        if let (Some(then), Some(now)) = (cpu_start, process_cpu_time()) {
            let cpu = now.saturating_sub(then);
            times.cpu_samples_us.push(cpu.as_secs_f32() * 1e6);
        }
        if let Some(observers) = observers {
            (observers.tick_seconds)(elapsed.as_secs_f64());
        }
    }
}

/// The server's counters and tick times: kept each tick, read by the status line and the
/// host's tools.
pub(crate) struct StatsPlugin;

impl Plugin for StatsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<ServerStats>()
            .init_resource::<HostingStats>()
            .init_resource::<TickTimes>()
            .init_resource::<SnapshotStats>()
            .add_systems(
                FixedUpdate,
                (
                    start_tick_timer.before(SimSet::BeginTick),
                    end_tick_timer.after(SimSet::BuildSnapshots),
                ),
            );
    }
}
