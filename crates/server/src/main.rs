//! `sightline-server`: the dedicated server. Parses flags, loads the map, binds UDP, runs.

use bevy::log::LogPlugin;
use bevy::prelude::*;
use clap::{CommandFactory, Parser};
use sightline_map::{CurrentMap, MapSource, find_map};
use sightline_net::{
    AdmissionLimits, FakeLinkArgs, LinkConditions, RunFor, SecureConfig, Security, ServerNetPlugin,
    ShutdownSignal, load_key_file,
};
use sightline_server::{GameMode, MatchRules, Pacing, ServerConfig, server_app};
use sightline_sim::TickConfig;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Sightline dedicated server.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// UDP port to listen on.
    #[arg(long, default_value_t = 27015)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "0.0.0.0")]
    bind: IpAddr,
    /// Map name (looked up in maps/) or path to a .ron map file.
    #[arg(long, default_value = "duel")]
    map: String,
    /// Most players at once, bots included.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u8).range(1..=64))]
    max_players: u8,
    /// Simulation ticks per second (20-128).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(20..=128))]
    tickrate: u32,
    /// Snapshots per second; must divide the tick rate [default: half the tick rate, or
    /// the tick rate when that is odd].
    #[arg(long)]
    snapshot_rate: Option<u32>,
    /// Server name shown to players.
    #[arg(long, default_value = "Sightline server")]
    name: String,
    /// Bots to add.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=64))]
    bots: u8,
    /// How well bots fight: easy, normal or hard.
    #[arg(long, value_enum, default_value_t = sightline_bots::BotSkill::Normal)]
    bot_skill: sightline_bots::BotSkill,
    /// Game mode: dm (everyone for themselves) or tdm (red against blue).
    #[arg(long, value_enum, default_value_t = GameMode::Deathmatch)]
    mode: GameMode,
    /// Frags that win a match (a player's, or a team's); 0 for none.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(0..=1000))]
    fraglimit: u16,
    /// Minutes a match lasts at most; 0 for no limit.
    #[arg(long, default_value_t = 10.0)]
    timelimit: f32,
    /// Maps to play in turn, one match each, comma-separated [default: --map only].
    #[arg(long, value_delimiter = ',')]
    maps: Vec<String>,
    /// Password players must give to join; empty for a public server.
    #[arg(long, default_value = "", hide_default_value = true)]
    password: String,
    /// File holding the key connect tokens are sealed with (64 hexadecimal digits), to
    /// share with a matchmaker that issues tokens for this server [default: a fresh
    /// random key each start, tokens from this server only].
    #[arg(long, value_name = "PATH")]
    key_file: Option<PathBuf>,
    /// Hand out no tokens over TCP: only a matchmaker holding --key-file's key does.
    #[arg(long, requires = "key_file")]
    no_token_service: bool,
    /// The address tokens name as this server's (what a matchmaker seals into its
    /// tokens) [default: --bind and --port].
    #[arg(long, value_name = "IP:PORT")]
    public_address: Option<SocketAddr>,
    /// Accept connections without connect tokens or encryption: for tests on a LAN
    /// only, since anyone can then occupy slots from forged addresses.
    #[arg(long, conflicts_with_all = ["password", "key_file", "no_token_service"])]
    insecure: bool,
    /// Most connections from one IP address.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=64))]
    max_per_address: u8,
    /// Seconds without any input after which a player is kicked; 0 never kicks.
    #[arg(long, default_value_t = sightline_server::DEFAULT_IDLE_KICK_SECONDS)]
    idle_kick: f32,
    #[command(flatten)]
    fake: FakeLinkArgs,
    /// Stop cleanly after this many seconds (for tests and scripted runs).
    #[arg(long)]
    run_seconds: Option<f64>,
}

fn main() -> ExitCode {
    let args: Args = sightline_net::parse_args();
    let snapshot_hz = args
        .snapshot_rate
        .unwrap_or(if args.tickrate.is_multiple_of(2) {
            args.tickrate / 2
        } else {
            args.tickrate
        });
    let tick = match TickConfig::new(args.tickrate, snapshot_hz) {
        Ok(t) => t,
        Err(e) => Args::command()
            .error(clap::error::ErrorKind::ValueValidation, e)
            .exit(),
    };
    if let Some(s) = args.run_seconds
        && !(s.is_finite() && s > 0.0)
    {
        Args::command()
            .error(
                clap::error::ErrorKind::ValueValidation,
                "--run-seconds must be a positive number",
            )
            .exit();
    }
    if !(args.timelimit.is_finite() && (0.0..=1440.0).contains(&args.timelimit)) {
        Args::command()
            .error(
                clap::error::ErrorKind::ValueValidation,
                "--timelimit must be minutes from 0 (none) to 1440",
            )
            .exit();
    }
    // Every map of the rotation must load now, not when its turn comes.
    for name in &args.maps {
        if let Err(e) = MapSource::load(&find_map(name)) {
            eprintln!("error: --maps: {e}");
            return ExitCode::FAILURE;
        }
    }
    if args.bots > args.max_players {
        Args::command()
            .error(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "--bots {} exceeds --max-players {}",
                    args.bots, args.max_players
                ),
            )
            .exit();
    }
    let conditions = match args.fake.settings() {
        Ok(c) => c,
        Err(e) => Args::command()
            .error(clap::error::ErrorKind::ValueValidation, e)
            .exit(),
    };
    let name = sightline_protocol::clean_text(&args.name, sightline_protocol::MAX_SERVER_NAME_LEN);

    let first_map = args.maps.first().unwrap_or(&args.map);
    let map = match MapSource::load(&find_map(first_map)) {
        Ok(m) => CurrentMap::new(m),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !(args.idle_kick.is_finite() && (0.0..=86_400.0).contains(&args.idle_kick)) {
        Args::command()
            .error(
                clap::error::ErrorKind::ValueValidation,
                "--idle-kick must be seconds from 0 (never) to 86400",
            )
            .exit();
    }
    if args.password.len() > sightline_protocol::MAX_PASSWORD_LEN {
        Args::command()
            .error(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "--password is at most {} bytes",
                    sightline_protocol::MAX_PASSWORD_LEN
                ),
            )
            .exit();
    }
    let security = if args.insecure {
        warn!("--insecure: connections are neither authenticated nor encrypted");
        Security::Insecure
    } else {
        let key = match &args.key_file {
            Some(path) => match load_key_file(path) {
                Ok(key) => key,
                Err(e) => {
                    eprintln!("error: --key-file {e}");
                    return ExitCode::FAILURE;
                }
            },
            None => SecureConfig::random().key,
        };
        Security::Secure(SecureConfig {
            key,
            password: (!args.password.is_empty()).then(|| args.password.clone()),
            issue_tokens: !args.no_token_service,
        })
    };
    let limits = AdmissionLimits {
        max_per_address: args.max_per_address as usize,
    };
    let bind = SocketAddr::new(args.bind, args.port);
    let net = ServerNetPlugin::udp(
        bind,
        args.public_address,
        args.max_players as usize,
        security,
        limits,
    );
    let (net, local) = match net {
        Ok(n) => n,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };

    let signal = ShutdownSignal::default();
    let flag = signal.0.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("warning: cannot install the Ctrl-C/SIGTERM handler: {e}");
    }

    let config = ServerConfig {
        name,
        max_players: args.max_players,
        bots: args.bots,
        bot_skill: args.bot_skill,
        rules: MatchRules {
            mode: args.mode,
            fraglimit: args.fraglimit as i32,
            timelimit: args.timelimit * 60.0,
            rotation: args.maps.clone(),
        },
        tick,
        idle_kick_seconds: args.idle_kick,
    };
    let mut app = server_app(config.clone(), map.clone(), net, Pacing::RealTime(signal));
    // Nothing the network does is logged per packet: it is counted instead.
    app.add_plugins(LogPlugin {
        filter: format!(
            "{},{}",
            bevy::log::DEFAULT_FILTER,
            sightline_net::TRANSPORT_LOG_FILTER
        ),
        ..Default::default()
    })
    .insert_resource(LinkConditions(conditions));
    if let Some(s) = args.run_seconds {
        app.insert_resource(RunFor(Duration::from_secs_f64(s)));
    }
    let admission = if args.insecure {
        "INSECURE (no tokens, no encryption)".to_string()
    } else if args.no_token_service {
        "tokens from the matchmaker only".to_string()
    } else {
        format!(
            "connect tokens over TCP {local}{}",
            if args.password.is_empty() {
                ""
            } else {
                ", password required"
            }
        )
    };
    info!(
        "\"{}\" on {local}: map {} ({} brushes, hash {:016x}), {} Hz tick, {} Hz snapshots, \
         {} bots, up to {} players, {admission}",
        config.name,
        map.def.name,
        map.world.len(),
        map.hash,
        tick.tick_hz,
        tick.snapshot_hz(),
        config.bots,
        config.max_players
    );
    match app.run() {
        AppExit::Success => ExitCode::SUCCESS,
        AppExit::Error(_) => ExitCode::FAILURE,
    }
}
