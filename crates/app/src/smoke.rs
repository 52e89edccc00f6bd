//! Verification hooks: a screenshot at a set time (`--screenshot PATH --run-seconds N`),
//! so CI can start the game as a person would and check what it shows, and at exit how
//! play went and how fast frames came while playing (`scripts/report fps` reads it).

use crate::view::frame_cost::{FrameCost, Split, describe_split, median_split};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use sightline_runtime::RunFor;
use sightline_sim::quantile;
use std::path::PathBuf;
use std::time::Duration;

/// Save a screenshot of the window to `path` once `at` seconds have passed.
#[derive(Resource, Debug, Clone)]
pub struct ScreenshotAt {
    /// Where to save it (PNG).
    pub path: PathBuf,
    /// When, in seconds since start.
    pub at: f64,
}

/// Takes the screenshot when its time comes.
pub struct SmokePlugin;

impl Plugin for SmokePlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            Update,
            (take_screenshot, wait_for_screenshot)
                .chain()
                .run_if(resource_exists::<ScreenshotAt>),
        )
        .init_resource::<PlayFrames>()
        .add_systems(
            Last,
            (record_play_frame, report_frame_rate, report_play)
                .chain()
                .after(crate::view::frame_cost::measure_frame),
        );
    }
}

fn take_screenshot(
    mut commands: Commands,
    time: Res<Time<Real>>,
    shot: Res<ScreenshotAt>,
    mut taken: Local<bool>,
) {
    if *taken || time.elapsed_secs_f64() < shot.at {
        return;
    }
    *taken = true;
    info!("taking a screenshot to {}", shot.path.display());
    // An old file would look like this one already saved (see `wait_for_screenshot`).
    let _ = std::fs::remove_file(&shot.path);
    commands
        .spawn(Screenshot::primary_window())
        .observe(save_to_disk(shot.path.clone()));
}

/// How long past its time a screenshot may take before the run ends without it.
const SCREENSHOT_GRACE_SECS: f64 = 30.0;

/// Holds off a `--run-seconds` exit until the screenshot is on disk: a busy machine may
/// draw a frame a second, and the readback lands a few frames after the request. The
/// exit stays two seconds ahead, or three frames when frames are slower than that (at
/// 0.7 frames a second one frame took 2.5 s and skipped past a two-second lead).
fn wait_for_screenshot(
    time: Res<Time<Real>>,
    shot: Res<ScreenshotAt>,
    run_for: Option<ResMut<RunFor>>,
) {
    let Some(mut run_for) = run_for else {
        return;
    };
    let now = time.elapsed_secs_f64();
    if shot.path.exists() || now > shot.at + SCREENSHOT_GRACE_SECS {
        return;
    }
    let lead = (3.0 * time.delta_secs_f64()).max(2.0);
    let later = Duration::from_secs_f64(now + lead);
    if run_for.0 < later {
        run_for.0 = later;
    }
}

/// Logs, when the game exits, how play went: commands sent, whether input pacing
/// settled, how often the server had to repeat a command, how far our player got, and
/// how many predictions were corrected. The windowed smoke test reads it: at the few
/// frames a second of software rendering the game must still play.
fn report_play(
    exits: MessageReader<AppExit>,
    status: Res<sightline_client::ConnectionStatus>,
    history: Res<sightline_client::InputHistory>,
    pacing: Res<sightline_client::InputPacing>,
    stats: Res<sightline_client::ClientStats>,
    prediction: Res<sightline_prediction::PredictionStats>,
) {
    if exits.is_empty() {
        return;
    }
    let sightline_client::ConnectionStatus::Connected(info) = &*status else {
        info!("played: not connected at exit");
        return;
    };
    let travelled = info
        .welcome
        .your_id
        .and_then(|id| stats.seen.get(&id))
        .map_or(0.0, |s| s.farthest);
    info!(
        "played: {} commands; input pacing {}; the server repeated {} of them; our player got {travelled:.1} m from where it was first seen; {} predictions corrected",
        history.last_seq(),
        if pacing.has_settled() {
            "settled"
        } else {
            "never settled"
        },
        pacing.repeats,
        prediction.corrections.len()
    );
}

/// Seconds after joining before frames count as play: the world's first frames build
/// meshes, textures and pipelines, and no player sees them as play.
const SETTLE_SECS: f64 = 3.0;

/// Most frame times kept (hours at a few hundred frames a second).
const MAX_PLAY_FRAMES: usize = 1 << 21;

/// Most frames' splits kept (half an hour at 144 frames a second; 40 bytes each).
const MAX_PLAY_SPLITS: usize = 1 << 18;
/// How long each frame took while playing, from `SETTLE_SECS` after joining, and where
/// its time went.
#[derive(Resource, Debug, Default)]
struct PlayFrames {
    joined_at: Option<f64>,
    seconds: Vec<f32>,
    splits: Vec<Split>,
}

fn record_play_frame(
    time: Res<Time<Real>>,
    status: Res<sightline_client::ConnectionStatus>,
    cost: Option<Res<FrameCost>>,
    mut frames: ResMut<PlayFrames>,
) {
    if !matches!(*status, sightline_client::ConnectionStatus::Connected(_)) {
        frames.joined_at = None;
        return;
    }
    let now = time.elapsed_secs_f64();
    let joined_at = *frames.joined_at.get_or_insert(now);
    if now - joined_at >= SETTLE_SECS && frames.seconds.len() < MAX_PLAY_FRAMES {
        frames.seconds.push(time.delta_secs());
        if let Some(cost) = cost.filter(|_| frames.splits.len() < MAX_PLAY_SPLITS) {
            frames.splits.push(cost.latest);
        }
    }
}

/// Frame rate and frame-time percentiles of `seconds` (one entry a frame): `None`
/// without frames.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameSummary {
    /// Frames.
    pub frames: usize,
    /// Seconds they took.
    pub seconds: f64,
    /// Frames a second over the whole span.
    pub fps: f64,
    /// Median frame time, ms.
    pub median_ms: f64,
    /// 95th percentile frame time, ms.
    pub p95_ms: f64,
    /// 99th percentile frame time, ms (the "1 % low" frame rate is 1000 / this).
    pub p99_ms: f64,
    /// The longest frame, ms.
    pub max_ms: f64,
}

/// Summarises frame times.
pub fn summarise(seconds: &[f32]) -> Option<FrameSummary> {
    if seconds.is_empty() {
        return None;
    }
    let sorted = quantile::sorted(seconds.iter().map(|&s| f64::from(s)));
    let total: f64 = sorted.iter().sum();
    // Nearest rank: the smallest time that at least `q` of the frames do not exceed.
    let at = |q: f64| quantile::nearest_rank(&sorted, q).unwrap_or(0.0) * 1000.0;
    Some(FrameSummary {
        frames: sorted.len(),
        seconds: total,
        fps: sorted.len() as f64 / total.max(1e-9),
        median_ms: at(0.5),
        p95_ms: at(0.95),
        p99_ms: at(0.99),
        max_ms: at(1.0),
    })
}

/// Logs how many frames were drawn, and how fast, when the game exits: over the whole
/// run, and while playing.
fn report_frame_rate(
    exits: MessageReader<AppExit>,
    time: Res<Time<Real>>,
    frames: Res<bevy::diagnostic::FrameCount>,
    play: Res<PlayFrames>,
) {
    if exits.is_empty() {
        return;
    }
    let secs = time.elapsed_secs_f64();
    info!(
        "rendered {} frames in {secs:.1} s: {:.1} frames per second",
        frames.0,
        frames.0 as f64 / secs.max(0.001)
    );
    match summarise(&play.seconds) {
        Some(s) => info!(
            "frames in play: {} in {:.1} s, {:.1} fps; frame time median {:.1} ms, 95th percentile {:.1} ms, 99th percentile {:.1} ms, longest {:.1} ms",
            s.frames, s.seconds, s.fps, s.median_ms, s.p95_ms, s.p99_ms, s.max_ms
        ),
        None => info!("frames in play: none (never in a match long enough)"),
    }
    if let Some(split) = median_split(&play.splits) {
        info!("frame split in play, medians: {}", describe_split(&split));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_times_summarise_to_rate_and_percentiles() {
        assert_eq!(summarise(&[]), None);
        // 98 frames of 20 ms and two hitches of 200 ms.
        let mut times = vec![0.02f32; 98];
        times.extend([0.2, 0.2]);
        let s = summarise(&times).unwrap();
        assert_eq!(s.frames, 100);
        assert!((s.seconds - 2.36).abs() < 1e-4, "{s:?}");
        assert!((s.fps - 100.0 / 2.36).abs() < 1e-2, "{s:?}");
        assert!((s.median_ms - 20.0).abs() < 1e-3, "{s:?}");
        assert!((s.p95_ms - 20.0).abs() < 1e-3, "{s:?}");
        assert!((s.p99_ms - 200.0).abs() < 1e-3, "{s:?}");
        assert!((s.max_ms - 200.0).abs() < 1e-3, "{s:?}");
    }
}
