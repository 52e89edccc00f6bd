//! `sightline`: the game. Opens a window with the main menu, or joins a server straight
//! away with `--connect`, or plays offline with `--map`. `--headless` runs without a
//! window, a bot at the controls. `+command args` pairs run in the console at start-up.

use sightline_app::{
    Args, GamePlugins, ScreenshotAt, parse_window, run_headless, usage_error, windowed_app,
};
use sightline_console::split_plus_commands;
use sightline_runtime::{ShutdownPlugin, ShutdownSignal};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

fn main() -> ExitCode {
    // args_os: std::env::args panics on an argument that is not UTF-8.
    let args = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    let (flags, mut startup) = split_plus_commands(args);
    let args: Args = sightline_runtime::parse_args_from(flags);
    if let Some(s) = args.run_seconds
        && !(s.is_finite() && s > 0.0)
    {
        usage_error("--run-seconds must be a positive number");
    }
    if args.headless {
        let conditions = args.fake.settings().unwrap_or_else(|e| usage_error(e));
        return run_headless(&args, conditions);
    }
    if args.connect.is_some() && args.map.is_some() {
        usage_error("--connect and --map are alternatives: join a server, or play offline");
    }
    let Some(size) = parse_window(&args.window) else {
        usage_error(format!(
            "--window {}: expected WIDTHxHEIGHT, e.g. 1280x720",
            args.window
        ));
    };

    if let Some(name) = &args.name {
        // After the config file, before the other +commands.
        startup.insert(0, format!("name {}", sightline_console::quote(name)));
    }
    let signal = ShutdownSignal::default();
    let flag = signal.0.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("warning: cannot install the Ctrl-C handler: {e}");
    }

    let mut app = windowed_app(GamePlugins::from_args(&args, startup), size);
    app.add_plugins(ShutdownPlugin).insert_resource(signal);
    if let Some(s) = args.run_seconds {
        app.insert_resource(sightline_runtime::RunFor(
            std::time::Duration::from_secs_f64(s),
        ));
    }
    if let Some(path) = args.screenshot.clone() {
        app.insert_resource(ScreenshotAt {
            path,
            at: (args.run_seconds.unwrap_or(5.0) - 1.0).max(0.5),
        });
    }
    match app.run() {
        bevy::app::AppExit::Success => ExitCode::SUCCESS,
        bevy::app::AppExit::Error(_) => ExitCode::FAILURE,
    }
}
