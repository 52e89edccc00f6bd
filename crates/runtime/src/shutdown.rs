//! How an app's clock runs and how it stops: the one place the base of every server and
//! client app is put together ([`paced_app`]), and stopping cleanly, through Bevy's
//! `AppExit` so transports can say goodbye, on a signal (Ctrl-C, SIGTERM) or after a set
//! run time (scripted runs and tests).

use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How an app's clock advances.
pub enum Pacing {
    /// In real time, in Bevy's run loop (one frame per period the app is built with),
    /// stopping on the signal, Ctrl-C or a [`RunFor`]. Call `run` on the app.
    RealTime(ShutdownSignal),
    /// In real time, the caller calling `update` (after `finish` and `cleanup`): a
    /// harness driving many apps from one thread.
    Stepped,
    /// By hand: each `update` advances the clock by exactly this much, so a test or a
    /// measurement is reproducible.
    Manual(Duration),
}

impl Pacing {
    /// Whether the clock is the real one.
    pub fn is_real_time(&self) -> bool {
        !matches!(self, Self::Manual(_))
    }
}

/// A bare app with its clock paced as asked; `frame` is the run loop's period in
/// [`Pacing::RealTime`]. Transports and game plugins are added on top.
pub fn paced_app(pacing: Pacing, frame: Duration) -> App {
    let mut app = App::new();
    match pacing {
        Pacing::RealTime(signal) => {
            app.add_plugins((
                MinimalPlugins.set(ScheduleRunnerPlugin::run_loop(frame)),
                ShutdownPlugin,
            ))
            .insert_resource(signal);
        }
        Pacing::Stepped => {
            app.add_plugins((TaskPoolPlugin::default(), bevy::time::TimePlugin));
        }
        Pacing::Manual(step) => {
            app.add_plugins((TaskPoolPlugin::default(), bevy::time::TimePlugin))
                .insert_resource(TimeUpdateStrategy::ManualDuration(step));
        }
    }
    app
}

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
