//! Stopping an app cleanly, through Bevy's `AppExit` so transports can say goodbye: on a
//! signal (Ctrl-C, SIGTERM) or after a set run time (scripted runs and tests).

use bevy::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set from a signal handler; the server exits at its next frame.
#[derive(Resource, Clone, Default)]
pub struct ShutdownSignal(pub Arc<AtomicBool>);

/// Exit after this much real time.
#[derive(Resource, Clone, Copy)]
pub struct RunFor(pub std::time::Duration);

/// Exits the app when the [`ShutdownSignal`] is raised or [`RunFor`] has elapsed.
pub struct ShutdownPlugin;

impl Plugin for ShutdownPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, check_shutdown);
    }
}

fn check_shutdown(
    signal: Option<Res<ShutdownSignal>>,
    run_for: Option<Res<RunFor>>,
    time: Res<Time<Real>>,
    mut exit: MessageWriter<AppExit>,
    mut done: Local<bool>,
) {
    if *done {
        return;
    }
    let signalled = signal.is_some_and(|s| s.0.load(Ordering::Relaxed));
    let timed_out = run_for.is_some_and(|r| time.elapsed() >= r.0);
    if signalled || timed_out {
        info!(
            "shutting down ({})",
            if signalled {
                "signal"
            } else {
                "run time reached"
            }
        );
        *done = true;
        exit.write(AppExit::Success);
    }
}
