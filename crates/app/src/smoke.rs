//! Verification hooks: a screenshot at a set time (`--screenshot PATH --run-seconds N`),
//! so CI can start the game as a person would and check what it shows.

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use std::path::PathBuf;

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
            take_screenshot.run_if(resource_exists::<ScreenshotAt>),
        )
        .add_systems(Last, report_frame_rate);
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
    commands
        .spawn(Screenshot::primary_window())
        .observe(save_to_disk(shot.path.clone()));
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
