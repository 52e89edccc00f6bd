//! Verification hooks: a screenshot at a set time (`--screenshot PATH --run-seconds N`),
//! so CI can start the game as a person would and check what it shows.

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use sightline_net::RunFor;
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
        .add_systems(Last, (report_frame_rate, report_play));
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
/// exit stays two seconds ahead so that no single slow frame can skip past it.
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
    let later = Duration::from_secs_f64(now + 2.0);
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
    let travelled = stats
        .seen
        .get(&info.welcome.your_id)
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

/// Logs how many frames were drawn, and how fast, when the game exits.
fn report_frame_rate(
    exits: MessageReader<AppExit>,
    time: Res<Time<Real>>,
    frames: Res<bevy::diagnostic::FrameCount>,
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
}
