//! What the graph gathers: the client's statistics sampled every frame, the text rebuilt
//! at 10 Hz.

use crate::{History, RateMeter, SnapshotBar};
use bevy::prelude::*;
use sightline_client::{ClientStats, InputHistory, InputPacing, LatestSnapshot};
use sightline_interpolation::{ClockSync, ServerClock};
use sightline_interpolation::{InterpolationStats, RenderTime};
use sightline_net::RenetClient;
use sightline_prediction::PredictionStats;

/// Graph samples kept.
pub(crate) const GRAPH_LEN: usize = 180;
/// Seconds between text refreshes.
const TEXT_PERIOD: f64 = 0.1;

/// Everything the graph has gathered.
#[derive(Resource, Debug)]
pub struct Netgraph {
    /// The text lines, refreshed at 10 Hz.
    pub text: Vec<String>,
    /// One bar per snapshot.
    pub bars: History<SnapshotBar>,
    /// Prediction correction per frame, millimetres (0 when none).
    pub corrections: History<f32>,
    /// Round trip per frame, milliseconds.
    pub pings: History<f32>,
    snapshots: RateMeter,
    commands: RateMeter,
    reconciliations: RateMeter,
    last_text: f64,
    last_seq: u32,
    last_received: u64,
    last_corrections: usize,
    last_extrapolating: u64,
    frame_ms: f32,
}

impl Default for Netgraph {
    fn default() -> Self {
        Self {
            text: Vec::new(),
            bars: History::new(GRAPH_LEN),
            corrections: History::new(GRAPH_LEN),
            pings: History::new(GRAPH_LEN),
            snapshots: RateMeter::default(),
            commands: RateMeter::default(),
            reconciliations: RateMeter::default(),
            last_text: 0.0,
            last_seq: 0,
            last_received: 0,
            last_corrections: 0,
            last_extrapolating: 0,
            frame_ms: 0.0,
        }
    }
}

/// Samples the client's statistics every frame; rebuilds the text at 10 Hz.
pub(crate) fn gather(
    time: Res<Time<Real>>,
    mut graph: ResMut<Netgraph>,
    stats: Res<ClientStats>,
    latest: Res<LatestSnapshot>,
    inputs: Res<InputHistory>,
    pacing: Res<InputPacing>,
    prediction: Res<PredictionStats>,
    interp: Res<InterpolationStats>,
    render: Res<RenderTime>,
    sync: Res<ClockSync>,
    clock: Res<ServerClock>,
    client: Option<Res<RenetClient>>,
) {
    let now = time.elapsed_secs_f64();
    let g = &mut *graph;
    g.frame_ms = g.frame_ms * 0.9 + time.delta_secs() * 1000.0 * 0.1;
    g.snapshots.record(now, stats.snapshots);
    g.commands.record(now, inputs.last_seq() as u64);
    g.reconciliations.record(now, prediction.reconciliations);
    let ping_ms = sync.rtt_mean().unwrap_or(0.0) as f32 * 1000.0;
    g.pings.push(ping_ms);
    let new_corrections =
        &prediction.corrections[g.last_corrections.min(prediction.corrections.len())..];
    g.corrections
        .push(new_corrections.iter().map(|c| c.size).fold(0.0, f32::max) * 1000.0);
    g.last_corrections = prediction.corrections.len();
    if let Some(snapshot) = latest.0.as_ref()
        && snapshot.seq != g.last_seq
    {
        // Snapshots numbered since the last bar but never received (several may arrive in
        // one frame; only those that never came count).
        let numbered = snapshot.seq.saturating_sub(g.last_seq) as u64;
        // Saturating: the client's counters start again at zero in a new session.
        let received = (stats.snapshots + stats.stale_snapshots).saturating_sub(g.last_received);
        let lost = numbered.saturating_sub(received) as u32;
        g.last_received = stats.snapshots + stats.stale_snapshots;
        let extrapolated = interp.frames_extrapolating > g.last_extrapolating;
        g.bars.push(SnapshotBar {
            ping_ms,
            lost: if g.last_seq == 0 { 0 } else { lost },
            extrapolated,
        });
        g.last_seq = snapshot.seq;
        g.last_extrapolating = interp.frames_extrapolating;
    }
    if now - g.last_text < TEXT_PERIOD {
        return;
    }
    g.last_text = now;
    let ms = |s: f64| s * 1000.0;
    let (kb_in, kb_out) = client.map_or((0.0, 0.0), |c| {
        (
            c.bytes_received_per_sec() / 1000.0,
            c.bytes_sent_per_sec() / 1000.0,
        )
    });
    let server_tick = latest
        .0
        .as_ref()
        .map_or(0.0, |s| s.server_tick_us as f64 / 1000.0);
    g.text = vec![
        format!(
            "ping {:.0} ms (jitter {:.1} ms)",
            ping_ms,
            ms(sync.rtt_jitter().unwrap_or(0.0))
        ),
        format!(
            "snapshots {:.0}/s, loss {:.1} %",
            g.snapshots.per_second(),
            stats.snapshot_loss() * 100.0
        ),
        format!(
            "interp {:.1} ms ({}), extrapolating {:.1} % of frames",
            ms(render.delay),
            if render.automatic {
                "auto"
            } else {
                "cl_interp"
            },
            100.0 * interp.frames_extrapolating as f64 / interp.frames.max(1) as f64
        ),
        format!(
            "commands {:.0}/s, waiting at server {:.1} (pace x{:.3}), held {}, repeated {}",
            g.commands.per_second(),
            pacing.mean_queue(),
            pacing.factor,
            pacing.held,
            pacing.repeats
        ),
        format!(
            "shots judged late {} (mean {:.0} ms behind), refused {}",
            stats.shots_late,
            stats.shots_late_ms as f64 / stats.shots_late.max(1) as f64,
            stats.shots_refused
        ),
        format!(
            "reconcile {:.1}/s, last correction {:.1} mm",
            g.reconciliations.per_second(),
            prediction.last_correction * 1000.0
        ),
        format!("clock offset {:.1} ms", ms(clock.offset().unwrap_or(0.0))),
        format!("in {kb_in:.1} kB/s, out {kb_out:.1} kB/s"),
        format!(
            "server tick {server_tick:.2} ms, frame {:.1} ms ({:.0} fps)",
            g.frame_ms,
            1000.0 / g.frame_ms.max(0.001)
        ),
    ];
}
