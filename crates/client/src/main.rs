//! `sightline`: the game client. For now it runs headless, with a bot at the controls;
//! the windowed client arrives with rendering.

use bevy::app::ScheduleRunnerPlugin;
use bevy::log::LogPlugin;
use bevy::prelude::*;
use clap::{CommandFactory, Parser};
use sightline_client::{ClientPlugin, ClientStats, ConnectionStatus, InputSource};
use sightline_net::{
    ClientNetPlugin, FakeLinkArgs, LinkConditions, RunFor, ShutdownPlugin, ShutdownSignal,
};
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sightline game client.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Run without a window, a bot playing (for servers' soak tests and CI).
    #[arg(long)]
    headless: bool,
    /// Server to join, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// Player name.
    #[arg(long, default_value = "player")]
    name: String,
    /// Seed for the headless bot's choices [default: derived from the name].
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    fake: FakeLinkArgs,
    /// Quit after this many seconds.
    #[arg(long)]
    run_seconds: Option<f64>,
}

fn usage_error(msg: impl std::fmt::Display) -> ! {
    Args::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

fn main() -> ExitCode {
    let args: Args = sightline_net::parse_args();
    if !args.headless {
        usage_error("this build has no windowed mode yet; run with --headless --connect HOST:PORT");
    }
    let Some(target) = args.connect.as_deref() else {
        usage_error("--headless needs --connect HOST:PORT");
    };
    let addr: SocketAddr = match target.to_socket_addrs().ok().and_then(|mut a| a.next()) {
        Some(a) => a,
        None => usage_error(format!(
            "cannot resolve --connect {target}: expected HOST:PORT"
        )),
    };
    if let Some(s) = args.run_seconds
        && !(s.is_finite() && s > 0.0)
    {
        usage_error("--run-seconds must be a positive number");
    }
    let conditions = args.fake.settings().unwrap_or_else(|e| usage_error(e));
    let net = match ClientNetPlugin::udp(addr) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let seed = args.seed.unwrap_or_else(|| {
        sightline_bots::hash(0x636c_6965, args.name.len() as u64, name_hash(&args.name))
    });

    let signal = ShutdownSignal::default();
    let flag = signal.0.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("warning: cannot install the Ctrl-C handler: {e}");
    }

    let outcome = Outcome::default();
    let mut app = App::new();
    app.add_plugins((
        // Poll at the fastest tick rate a server may use; the fixed tick adapts on Welcome.
        MinimalPlugins.set(ScheduleRunnerPlugin::run_loop(Duration::from_secs_f64(
            1.0 / 128.0,
        ))),
        LogPlugin::default(),
        net,
        ShutdownPlugin,
        ClientPlugin {
            name: args.name.clone(),
            input: InputSource::Bot { seed },
        },
    ))
    .insert_resource(signal)
    .insert_resource(LinkConditions(conditions))
    .insert_resource(outcome.clone())
    .add_systems(Update, quit_when_disconnected)
    .add_systems(Last, report_on_exit);
    if let Some(s) = args.run_seconds {
        app.insert_resource(RunFor(Duration::from_secs_f64(s)));
    }
    info!("connecting to {addr} as {}", args.name);
    app.run();

    // The runner takes the app's world with it, so the exit report comes out through a cell.
    let report = outcome.0.lock().expect("poisoned").take();
    let Some((summary, failure)) = report else {
        eprintln!("error: the client stopped without a report");
        return ExitCode::FAILURE;
    };
    println!("summary: {summary}");
    match failure {
        None => ExitCode::SUCCESS,
        Some(reason) => {
            eprintln!("error: {reason}");
            ExitCode::FAILURE
        }
    }
}

/// The client's statistics and, if it failed, why; filled in on exit.
#[derive(Resource, Clone, Default)]
struct Outcome(Arc<Mutex<Option<(String, Option<String>)>>>);

fn report_on_exit(
    exits: MessageReader<AppExit>,
    stats: Res<ClientStats>,
    status: Res<ConnectionStatus>,
    outcome: Res<Outcome>,
) {
    if exits.is_empty() {
        return;
    }
    let failure = match &*status {
        ConnectionStatus::Connected(_) => None,
        ConnectionStatus::Disconnected(reason) => Some(reason.clone()),
        other => Some(format!("never joined the server (last state: {other:?})")),
    };
    *outcome.0.lock().expect("poisoned") = Some((stats.summary(), failure));
}

fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// A headless client has nothing to show once the server is gone.
fn quit_when_disconnected(status: Res<ConnectionStatus>, mut exit: MessageWriter<AppExit>) {
    if matches!(*status, ConnectionStatus::Disconnected(_)) {
        exit.write(AppExit::error());
    }
}
