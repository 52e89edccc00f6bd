//! `--headless`: the client without a window, a bot at the controls (or, with
//! `--spectate`, watching), printing a summary
//! (what it received, and what prediction, input pacing and clock sync saw: see
//! `ClientStats::summary_with`).

use crate::args::{Args, LOG_FILTER, resolve, seed_for, usage_error};
use crate::offline::{EmbeddedServer, HostSettings};
use bevy::log::LogPlugin;
use bevy::prelude::*;
use sightline_client::{
    Autopilot, ClientPlugin, ClientStats, ConnectionStatus, EarlierSessions, InputPacing,
    InputSource, JoinAs, StatsKey, client_app,
};
use sightline_interpolation::ClockSync;
use sightline_matchmaker::QuickPlay;
use sightline_net::{ClientNetPlugin, ConditionerSettings, LinkConditions, udp_client_with_token};
use sightline_prediction::PredictionStats;
use sightline_runtime::{Pacing, RunFor, ShutdownSignal};
use sightline_sim::TickConfig;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The client's statistics and, if it failed, why; filled in on exit.
#[derive(Resource, Clone, Default)]
struct Outcome(Arc<Mutex<Option<(String, Option<String>)>>>);

/// Runs the game without a window, a bot playing, until told to stop; prints a summary.
pub fn run(args: &Args, conditions: ConditionerSettings) -> ExitCode {
    let mut hosted = None;
    let (addr, net) = match (&args.quick_play, args.connect.as_deref(), args.host) {
        (Some(url), ..) => quick_play(url, args.matchmaker_ca()),
        (None, Some(target), _) => {
            let addr = resolve(target);
            (
                addr,
                ClientNetPlugin::udp(addr, &args.security()).map_err(|e| e.to_string()),
            )
        }
        (None, None, Some(port)) => match host(args, port) {
            Ok(server) => {
                let addr = server.addr;
                hosted = Some(Hosted(server));
                (
                    addr,
                    ClientNetPlugin::udp(addr, &args.security()).map_err(|e| e.to_string()),
                )
            }
            Err(e) => (SocketAddr::from(([0, 0, 0, 0], 0)), Err(e)),
        },
        (None, None, None) => {
            usage_error("--headless needs --connect HOST:PORT, --quick-play URL or --host PORT")
        }
    };
    let net = match net {
        Ok(n) => n,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let name = args.name.clone().unwrap_or_else(|| "player".into());
    let seed = args.seed.unwrap_or_else(|| seed_for(&name));
    let signal = ShutdownSignal::default();
    let flag = signal.0.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("warning: cannot install the Ctrl-C handler: {e}");
    }
    let outcome = Outcome::default();
    let mut app = client_app(
        net,
        ClientPlugin {
            name: name.clone(),
            input: InputSource::Autopilot(Autopilot::new(seed)),
        },
        Pacing::RealTime(signal),
    );
    app.add_plugins(LogPlugin {
        filter: LOG_FILTER.into(),
        ..Default::default()
    })
    .insert_resource(LinkConditions(conditions))
    .insert_resource(StatsKey(args.guid))
    .insert_resource(match args.spectate {
        true => JoinAs::Spectator,
        false => JoinAs::Player,
    })
    .insert_resource(outcome.clone())
    .add_systems(Update, quit_when_disconnected)
    .add_systems(Last, report_on_exit);
    if let Some(s) = args.run_seconds {
        app.insert_resource(RunFor(Duration::from_secs_f64(s)));
    }
    if let Some(hosted) = hosted {
        app.insert_resource(hosted)
            .add_systems(Update, print_hosting_news);
    }
    info!("connecting to {addr} as {name}");
    app.run();

    // The runner takes the app's world with it, so the report comes out through a cell.
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

/// The game this headless player hosts (`--host`); dropping it stops the server.
#[derive(Resource)]
struct Hosted(EmbeddedServer);

/// Hosts a game for others on `port` as the menu does, from the flags.
fn host(args: &Args, port: u16) -> Result<EmbeddedServer, String> {
    let relay = args
        .relay
        .as_deref()
        .map(|r| {
            crate::ui::browser::resolve_host(r, sightline_net::DEFAULT_RELAY_PORT)
                .map_err(|e| format!("--relay {r}: {e}"))
        })
        .transpose()?;
    let name = args.name.as_deref().unwrap_or("player");
    let settings = HostSettings {
        name: format!("{name}'s game"),
        map: args.map.clone().unwrap_or_else(|| "duel".into()),
        bots: args.bots,
        skill: args.bot_skill,
        max_players: args.bots.saturating_add(4),
        port,
        password: args.password.clone(),
        masters: Vec::new(),
        upnp: None,
        relay,
        probe: None,
    };
    EmbeddedServer::host(&settings)
}

/// Says on standard error what the relay said of the hosted game (where players join,
/// and whether they could reach it directly).
fn print_hosting_news(hosted: Res<Hosted>) {
    for line in hosted.0.relay_news() {
        eprintln!("{line}");
    }
}

/// A connection to the server the matchmaker at `url` finds, with its token.
fn quick_play(url: &str, ca_pem: Option<Vec<u8>>) -> (SocketAddr, Result<ClientNetPlugin, String>) {
    let ask = QuickPlay {
        url: url.to_string(),
        ca_pem,
    };
    let ticket = match ask.ask() {
        Ok(t) => t,
        Err(e) => {
            return (
                SocketAddr::from(([0, 0, 0, 0], 0)),
                Err(format!("quick play: {e}")),
            );
        }
    };
    eprintln!(
        "quick play: {} ({}), client id {}",
        ticket.address, ticket.game_server, ticket.client_id
    );
    let net = ticket.connect_token().and_then(|token| {
        udp_client_with_token(ticket.address, token)
            .map(ClientNetPlugin::from_transport)
            .map_err(|e| e.to_string())
    });
    (ticket.address, net)
}

#[allow(clippy::too_many_arguments)]
fn report_on_exit(
    exits: MessageReader<AppExit>,
    stats: Res<ClientStats>,
    earlier: Res<EarlierSessions>,
    prediction: Res<PredictionStats>,
    pacing: Res<InputPacing>,
    sync: Res<ClockSync>,
    tick: Res<TickConfig>,
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
    let summary = stats.summary_with(&earlier, &prediction, &pacing, &sync, &tick);
    *outcome.0.lock().expect("poisoned") = Some((summary, failure));
}

/// A headless client has nothing to show once the server is gone.
fn quit_when_disconnected(status: Res<ConnectionStatus>, mut exit: MessageWriter<AppExit>) {
    if matches!(*status, ConnectionStatus::Disconnected(_)) {
        exit.write(AppExit::error());
    }
}
