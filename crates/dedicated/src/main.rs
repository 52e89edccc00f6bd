//! `sightline-server`: the dedicated server. Parses flags, loads the map, binds UDP, runs.

use bevy::prelude::*;
use clap::{CommandFactory, FromArgMatches, Parser};
use sightline_console::{
    Bindings, Console, ConsoleCommands, CvarKind, Cvars, describe_values, execute_line,
    split_plus_commands,
};
use sightline_dedicated::{
    AdminPlugin, BanList, LogFile, LogFormat, LogOutput, LogRotation, RconListen, RconPlugin,
    RecordsPlugin, StatsDatabase, TelemetryPlugin, TerminalPlugin, add_logging, admin_words,
    config_from_cvars, cvar, leaderboard_page, server_cvar_registry,
};
use sightline_map::{CurrentMap, MapSource, find_map, find_map_by_name};
use sightline_net::{
    AdmissionLimits, FakeLinkArgs, IdentityFileError, LinkConditions, SecureConfig, Security,
    ServerIdentity, ServerNetPlugin, fingerprint, load_key_file,
};
use sightline_runtime::{RunFor, ShutdownSignal};
use sightline_server::demo::DemoRecorder;
use sightline_server::{Outcome, Pacing, QueryPlugin, open_demo, server_app, verify_demo};
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Sightline dedicated server.
///
/// Settings are console variables: each flag below sets one (named in brackets, with its
/// default and range in `help NAME` terms), `+set NAME VALUE` or `+NAME VALUE` sets any,
/// and `+exec FILE` runs a file of console lines. The `+` lines run in order, then the
/// flags, which therefore win.
#[derive(Parser, Debug)]
#[command(
    version,
    about,
    after_help = "Console lines may follow as +name args, e.g. +exec server.cfg +set fraglimit 30"
)]
struct Args {
    /// UDP port to listen on.
    #[arg(long, default_value_t = 27015)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "0.0.0.0")]
    bind: IpAddr,
    /// File holding the key connect tokens are sealed with (64 hexadecimal digits), to
    /// share with a matchmaker that issues tokens for this server [default: a fresh
    /// random key each start, tokens from this server only].
    #[arg(long, value_name = "PATH")]
    key_file: Option<PathBuf>,
    /// File holding this server's identity key (64 hexadecimal digits, readable by its
    /// owner only), made on the first start: clients remember the server by it, as SSH
    /// does, and warn when it changes.
    #[arg(long, value_name = "PATH", default_value = "sightline-identity.key")]
    identity_file: PathBuf,
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
    /// Serve Prometheus metrics on /metrics and a health check on /health over HTTP at
    /// this address, e.g. 127.0.0.1:9100 (keep it off the public internet) [default: off].
    #[arg(long, value_name = "IP:PORT")]
    metrics: Option<SocketAddr>,
    /// Keep players' lifetime statistics in this SQLite file (made if missing); `stats`
    /// and `top` in the console read it, the scoreboard shows each player's lifetime K/D,
    /// and --metrics serves it as JSON on /leaderboard [default: none kept].
    #[arg(long, value_name = "PATH")]
    stats: Option<PathBuf>,
    /// How log lines are written.
    #[arg(long, value_enum, default_value_t)]
    log_format: LogFormat,
    /// Write the log to files named after this path (logs/server.log becomes
    /// logs/server.2026-12-02.log), rotated [default: standard error].
    #[arg(long, value_name = "PATH")]
    log_file: Option<PathBuf>,
    /// How often --log-file starts a new file.
    #[arg(long, value_enum, default_value_t, requires = "log_file")]
    log_rotation: LogRotation,
    /// Most log files kept; older ones are deleted.
    #[arg(long, default_value_t = 14, requires = "log_file")]
    log_keep: usize,
    /// Run as an Agones GameServer: report to the Agones SDK sidecar on localhost at
    /// AGONES_SDK_GRPC_PORT (default 9357) when ready, health pings from the tick, players
    /// in and out, map and mode labels; tokens name the address Agones gives the server
    /// unless --public-address does.
    #[arg(long)]
    agones: bool,
    /// With --agones: once a match ends while the GameServer is Allocated, ask Agones to
    /// shut the server down, so the fleet starts a fresh one.
    #[arg(long, requires = "agones")]
    agones_shutdown_after_match: bool,
    /// Record a demo of the match into this file from the first tick (the console's
    /// `stoprecord` ends it; so do a map change and the server stopping).
    #[arg(long, value_name = "PATH")]
    record: Option<PathBuf>,
    /// Replay a demo headless through this build's simulation, check every checksum and
    /// keyframe it holds, print the first tick, player and field that differ, and exit
    /// (status 0 when it all matches). Needs the demo's map in maps/.
    #[arg(long, value_name = "FILE")]
    verify_demo: Option<PathBuf>,
    #[command(flatten)]
    fake: FakeLinkArgs,
    /// Stop cleanly after this many seconds (for tests and scripted runs).
    #[arg(long)]
    run_seconds: Option<f64>,
}

/// The flags that set cvars, one row each: the flag and the cvar it sets. A flag's help,
/// range and default are its cvar's own, from the cvar table; `--master` may be given
/// again and again, its values joined as `sv_masters` lists them.
const CVAR_FLAGS: &[(&str, &str)] = &[
    ("map", cvar::MAP.name()),
    ("max-players", cvar::MAXPLAYERS.name()),
    ("tickrate", cvar::SV_TICKRATE.name()),
    ("snapshot-rate", cvar::SV_SNAPSHOTRATE.name()),
    ("max-snapshot-rate", cvar::SV_MAXSNAPSHOTRATE.name()),
    ("name", cvar::SV_HOSTNAME.name()),
    ("bots", cvar::BOTS.name()),
    ("bot-skill", cvar::BOT_SKILL.name()),
    ("mode", cvar::MODE.name()),
    ("fraglimit", cvar::FRAGLIMIT.name()),
    ("capturelimit", cvar::CAPTURELIMIT.name()),
    ("timelimit", cvar::TIMELIMIT.name()),
    ("team-force-balance", cvar::G_TEAMFORCEBALANCE.name()),
    ("auto-balance", cvar::G_AUTOBALANCE.name()),
    ("friendly-fire", cvar::G_FRIENDLYFIRE.name()),
    ("overtime", cvar::G_OVERTIME.name()),
    ("warmup", cvar::SV_WARMUP.name()),
    ("min-players", cvar::SV_MINPLAYERS.name()),
    ("allow-vote", cvar::G_ALLOWVOTE.name()),
    ("votes", cvar::G_VOTES.name()),
    ("vote-time", cvar::G_VOTETIME.name()),
    ("vote-cooldown", cvar::G_VOTECOOLDOWN.name()),
    ("maps", cvar::SV_MAPLIST.name()),
    ("password", cvar::SV_PASSWORD.name()),
    ("max-per-address", cvar::SV_MAX_PER_ADDRESS.name()),
    ("idle-kick", cvar::SV_IDLE_KICK.name()),
    ("max-spectators", cvar::SV_MAX_SPECTATORS.name()),
    ("spectator-delay", cvar::SV_SPECTATOR_DELAY.name()),
    ("rcon-password", cvar::RCON_PASSWORD.name()),
    ("rcon-port", cvar::RCON_PORT.name()),
    ("motd", cvar::SV_MOTD.name()),
    ("master", cvar::SV_MASTERS.name()),
    ("master-interval", cvar::SV_MASTER_INTERVAL.name()),
    ("relay", cvar::SV_RELAY.name()),
    ("ban-file", cvar::SV_BANFILE.name()),
];

/// The whole command line: [`Args`]'s flags, and a flag for each row of [`CVAR_FLAGS`]
/// with its cvar's help.
fn command() -> clap::Command {
    let cvars = server_cvar_registry();
    CVAR_FLAGS
        .iter()
        .fold(Args::command(), |command, (flag, name)| {
            let def = &cvars
                .get(name)
                .expect("every flag's cvar is a server cvar")
                .def;
            let action = match *flag {
                "master" => clap::ArgAction::Append,
                _ => clap::ArgAction::Set,
            };
            command.arg(
                clap::Arg::new(*flag)
                    .long(*flag)
                    .value_name(value_name(&def.kind))
                    .action(action)
                    .help(format!("{} [{name}: {}]", def.help, describe_values(def))),
            )
        })
}

/// What a flag's value is called in `--help`.
fn value_name(kind: &CvarKind) -> &'static str {
    match kind {
        CvarKind::Bool => "0|1",
        CvarKind::Int { .. } => "N",
        CvarKind::Float { .. } => "X",
        CvarKind::Text { .. } => "TEXT",
        CvarKind::Choice { .. } => "WORD",
    }
}

/// The command line read: the flags of [`Args`], and the cvars the others set, as
/// (flag, cvar, value) for those given.
fn parse_from(
    flags: Vec<String>,
) -> Result<(Args, Vec<(String, &'static str, String)>), clap::Error> {
    let matches = command().try_get_matches_from(flags)?;
    let args = Args::from_arg_matches(&matches)?;
    let set = CVAR_FLAGS
        .iter()
        .filter_map(|(flag, name)| {
            let values: Vec<&String> = matches.get_many::<String>(flag)?.collect();
            let joined = values
                .iter()
                .map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(",");
            Some((format!("--{flag}"), *name, joined))
        })
        .collect();
    Ok((args, set))
}

/// Prints a usage error and exits with status 2.
fn usage_error(message: impl std::fmt::Display) -> ! {
    command()
        .error(clap::error::ErrorKind::ValueValidation, message)
        .exit()
}

/// The config file run at start-up when no `+exec` names one, if it exists.
const DEFAULT_CONFIG: &str = "server.cfg";

/// The config file the server runs: the first `+exec`'s, or [`DEFAULT_CONFIG`] (run
/// first when present and no `+exec` is given). `writeconfig` writes there, and the bans
/// are kept beside it.
fn config_file(lines: &mut Vec<String>) -> PathBuf {
    let exec = lines.iter().find_map(|line| {
        let words = sightline_console::parse_line(line).into_iter().next()?;
        match words.as_slice() {
            [cmd, file] if cmd.eq_ignore_ascii_case("exec") => Some(PathBuf::from(file)),
            _ => None,
        }
    });
    exec.unwrap_or_else(|| {
        let default = PathBuf::from(DEFAULT_CONFIG);
        if default.is_file() {
            lines.insert(0, format!("exec {DEFAULT_CONFIG}"));
        }
        default
    })
}

/// The server's cvars: the defaults, then the `+` lines in order (what they print goes
/// to standard error), then the flags given. `map NAME` among the lines (`+map duel`,
/// as in Quake) names the map to start on.
fn settings(flags: &[(String, &'static str, String)], lines: &[String]) -> Cvars {
    let mut cvars = server_cvar_registry();
    let mut console = Console::default();
    let mut commands = ConsoleCommands::default();
    commands.register("map", "map NAME: the map to start on");
    for line in lines {
        let outcome = execute_line(
            line,
            &mut cvars,
            &mut Bindings::default(),
            &commands,
            &mut console,
        );
        for command in outcome.commands {
            match command.args.as_slice() {
                [name] => {
                    if let Err(e) = cvars.set_handle(cvar::MAP, name) {
                        console.print(format!("error: map: {e}"));
                    }
                }
                _ => console.print("usage: map NAME"),
            }
        }
    }
    // Before the start, every setting takes effect at the start: the console's reminder
    // that some wait for a restart is for a running server.
    for line in console
        .lines()
        .filter(|l| !l.ends_with("takes effect after a restart"))
    {
        eprintln!("{line}");
    }
    for (variable, name, value) in environment_settings(&cvars, std::env::vars_os()) {
        if let Err(e) = cvars.set(&name, &value) {
            usage_error(format!("environment variable {variable}: {e}"));
        }
    }
    for (flag, name, value) in flags {
        if let Err(e) = cvars.set(name, value) {
            usage_error(format!("{flag}: {e}"));
        }
    }
    cvars
}

/// Environment variables that set cvars, as (variable, cvar, value): `SIGHTLINE_` and the
/// cvar's name in capitals (`SIGHTLINE_SV_HOSTNAME`, `SIGHTLINE_RCON_PASSWORD`), how
/// containers and orchestrators pass settings. A value that is not UTF-8 is refused.
fn environment_settings(
    cvars: &Cvars,
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(String, String, String)> {
    let vars: Vec<_> = vars.collect();
    let mut found = Vec::new();
    for cvar in cvars.iter() {
        let variable = format!("{ENV_PREFIX}{}", cvar.def.name.to_ascii_uppercase());
        let Some((_, value)) = vars.iter().find(|(k, _)| k.to_str() == Some(&variable)) else {
            continue;
        };
        let Some(value) = value.to_str() else {
            usage_error(format!("environment variable {variable} is not UTF-8"));
        };
        found.push((variable, cvar.def.name.to_string(), value.to_string()));
    }
    found.sort();
    found
}

/// What environment variables that set cvars start with.
const ENV_PREFIX: &str = "SIGHTLINE_";

fn main() -> ExitCode {
    // args_os: std::env::args panics on an argument that is not UTF-8.
    let (flags, mut lines) =
        split_plus_commands(std::env::args_os().map(|a| a.to_string_lossy().into_owned()));
    let config_path = config_file(&mut lines);
    let (args, cvar_flags) =
        parse_from(flags).unwrap_or_else(|e| sightline_runtime::exit_with_usage(e, &command()));
    if let Some(path) = &args.verify_demo {
        return verify(path);
    }
    if let Some(s) = args.run_seconds
        && !(s.is_finite() && s > 0.0)
    {
        usage_error("--run-seconds must be a positive number");
    }
    let cvars = settings(&cvar_flags, &lines);
    let config = match config_from_cvars(&cvars) {
        Ok(config) => config,
        Err(e) => usage_error(e),
    };
    let tick = config.tick;
    // Every map of the rotation must load now, not when its turn comes.
    for name in &config.rules.rotation {
        if let Err(e) = find_map_by_name(name).and_then(|path| MapSource::load(&path)) {
            eprintln!("error: {}: {e}", cvar::SV_MAPLIST.name());
            return ExitCode::FAILURE;
        }
    }
    let conditions = match args.fake.settings() {
        Ok(c) => c,
        Err(e) => usage_error(e),
    };
    let map_name = cvars.read(cvar::MAP);
    let first_map = config.rules.rotation.first().unwrap_or(&map_name);
    let map = match MapSource::load(&find_map(first_map)) {
        Ok(m) => CurrentMap::new(m),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let password = cvars.read(cvar::SV_PASSWORD);
    if args.insecure && !password.is_empty() {
        usage_error("--insecure takes no password: nothing would check it");
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
        // Only the token service shows the identity; without it none is kept.
        let identity = if args.no_token_service {
            ServerIdentity::random()
        } else {
            match ServerIdentity::load_or_create(&args.identity_file) {
                Ok(identity) => identity,
                Err(IdentityFileError::CannotWrite(e)) => {
                    // Printed: the log starts with the app.
                    eprintln!(
                        "warning: cannot keep the server's identity key ({e}): using one for \
                         this run only, so clients that remember this server will see its key \
                         change"
                    );
                    ServerIdentity::random()
                }
                Err(IdentityFileError::Unusable(e)) => {
                    eprintln!("error: --identity-file {e}");
                    return ExitCode::FAILURE;
                }
            }
        };
        Security::Secure(SecureConfig {
            key,
            identity,
            password: (!password.is_empty()).then(|| password.clone()),
            issue_tokens: !args.no_token_service,
        })
    };
    let security_fingerprint = match &security {
        Security::Secure(config) => fingerprint(&config.identity.public_key()),
        Security::Insecure => String::new(),
    };
    let limits = AdmissionLimits {
        max_per_address: cvars.read(cvar::SV_MAX_PER_ADDRESS) as usize,
    };
    // Before the socket: the address Agones gives the server is the one tokens name.
    let agones = match args
        .agones
        .then(|| {
            sightline_dedicated::AgonesSettings::from_env(args.agones_shutdown_after_match)
                .and_then(|settings| sightline_dedicated::AgonesPlugin::connect(&settings))
        })
        .transpose()
    {
        Ok(agones) => agones,
        Err(e) => {
            eprintln!("error: --agones: {e}");
            return ExitCode::FAILURE;
        }
    };
    let public_address = args
        .public_address
        .or_else(|| agones.as_ref().and_then(|a| a.public_address()));
    let bind = SocketAddr::new(args.bind, args.port);
    let reached = resolve_masters(&cvars, bind.is_ipv4()).and_then(|masters| {
        let relay = match cvars.read(cvar::SV_RELAY).trim() {
            "" => None,
            relay => Some(resolve(
                relay,
                sightline_net::DEFAULT_RELAY_PORT,
                bind.is_ipv4(),
                "relay",
            )?),
        };
        Ok((masters, relay))
    });
    let (masters, relay) = match reached {
        Ok(reached) => reached,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let net = sightline_net::udp_server(
        bind,
        public_address,
        // Spectators connect beside the players, within their own limit.
        usize::from(config.max_players) + usize::from(config.max_spectators),
        security,
        limits,
    )
    .map_err(|e| e.to_string())
    .and_then(|mut transport| {
        if let Some(relay) = relay {
            info!("reached through the relay at {relay} too");
            transport.use_relay(relay, masters.clone(), None);
        }
        let local = (transport.socket.local_addr())
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        Ok((ServerNetPlugin::from_udp(transport), local))
    });
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

    let mut app = server_app(config.clone(), map.clone(), net, Pacing::RealTime(signal));
    // Nothing the network does is logged per packet: it is counted instead. The console's
    // output goes to whoever typed the line (the terminal prints it), not to the log too.
    let log = LogOutput {
        format: args.log_format,
        file: args
            .log_file
            .as_deref()
            .map(|path| LogFile::at(path, args.log_rotation, args.log_keep)),
    };
    let filter = format!(
        "{},{},console=warn",
        bevy::log::DEFAULT_FILTER,
        sightline_net::TRANSPORT_LOG_FILTER
    );
    if let Err(e) = add_logging(&mut app, log, filter) {
        eprintln!("error: --log-file: {e}");
        return ExitCode::FAILURE;
    }
    app.insert_resource(LinkConditions(conditions));
    if let Some(s) = args.run_seconds {
        app.insert_resource(RunFor(Duration::from_secs_f64(s)));
    }
    if let Err(e) = add_hosting(&mut app, &args, cvars, &config_path, local, masters) {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    if let Some(agones) = agones {
        app.add_plugins(agones);
    }
    if let Some(path) = &args.record {
        match DemoRecorder::start(path, &config, &map, 1) {
            Ok(recorder) => {
                info!("recording the demo {}", path.display());
                app.insert_resource(recorder);
            }
            Err(e) => {
                eprintln!("error: --record: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let admission = if args.insecure {
        "INSECURE (no tokens, no encryption)".to_string()
    } else if args.no_token_service {
        "tokens from the matchmaker only".to_string()
    } else {
        format!(
            "connect tokens over TCP {local} (identity key {}){}",
            security_fingerprint,
            if password.is_empty() {
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

/// `--verify-demo`: replays the demo at `path` on its map and says whether it matches.
fn verify(path: &Path) -> ExitCode {
    let fail = |e: String| {
        eprintln!("{}: {e}", path.display());
        ExitCode::FAILURE
    };
    let (reader, map) = match open_demo(path) {
        Ok(opened) => opened,
        Err(e) => return fail(e),
    };
    let header = reader.header().clone();
    let verdict = match verify_demo(reader, map) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let seconds = f64::from(verdict.ticks) / f64::from(header.tick_hz.max(1));
    let checked = format!(
        "{} ticks ({seconds:.1} s) on {} replayed; checksums compared: {}, keyframes \
         compared after the first: {}",
        verdict.ticks, header.map_name, verdict.checksums, verdict.keyframes
    );
    // The match as the replay played it: the kills in order, then the standings.
    let tick_hz = f64::from(header.tick_hz.max(1));
    let name = |id: sightline_sim::PlayerId| {
        verdict
            .standings
            .iter()
            .find(|s| s.id == id)
            .map_or_else(|| format!("player {}", id.0), |s| s.name.clone())
    };
    for kill in &verdict.kills {
        let at = f64::from(kill.tick.wrapping_sub(header.start_tick)) / tick_hz;
        let how = kill.weapon.def().name;
        let line = if kill.killer == kill.victim {
            format!("{} killed themselves ({how})", name(kill.victim))
        } else {
            format!("{} killed {} ({how})", name(kill.killer), name(kill.victim))
        };
        println!("{:>2}:{:04.1} {line}", (at / 60.0) as u32, at % 60.0);
    }
    for s in &verdict.standings {
        println!(
            "{:>4} frags {:>4} deaths  {}",
            s.score.frags, s.score.deaths, s.name
        );
    }
    match verdict.outcome {
        Outcome::Matched => {
            let ended = verdict
                .ended
                .map_or("the file ends without its last record".into(), |r| {
                    format!("recording ended: {r}")
                });
            println!("{}: matches: {checked}; {ended}", path.display());
            ExitCode::SUCCESS
        }
        Outcome::Differs { tick, what } => fail(format!(
            "differs before tick {tick}: {what} ({checked} up to there)"
        )),
        Outcome::Unreadable(e) => fail(format!("{e} ({checked} up to there)")),
    }
}

/// The master lists of `sv_masters`, resolved to addresses of the server's family.
fn resolve_masters(cvars: &Cvars, ipv4: bool) -> Result<Vec<SocketAddr>, String> {
    sightline_dedicated::map_list(&cvars.read(cvar::SV_MASTERS))
        .iter()
        .map(|master| resolve(master, sightline_query::DEFAULT_MASTER_PORT, ipv4, "master"))
        .collect()
}

/// `name` (HOST or HOST:PORT, `default_port` if none) resolved to an address of the
/// server's family; `what` names it in the error.
fn resolve(name: &str, default_port: u16, ipv4: bool, what: &str) -> Result<SocketAddr, String> {
    let target = match name.parse::<std::net::IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, default_port).to_string(),
        Err(_) if name.contains(':') => name.to_string(),
        Err(_) => format!("{name}:{default_port}"),
    };
    target
        .to_socket_addrs()
        .map_err(|e| format!("{what} {name}: {e}"))?
        .find(|a| a.is_ipv4() == ipv4)
        .ok_or_else(|| format!("{what} {name}: no address of this server's IP family"))
}

/// The host's side of the server: its console (on the terminal, over Source RCON and
/// from players with the rcon password) with the ban list, and its answers to server
/// queries and `masters`. An error stops the server: a ban file that cannot be read
/// at all (never silently unbanning everyone; its lines that do not read are only
/// skipped, see [`BanList::load`]), an RCON port that cannot be had.
fn add_hosting(
    app: &mut App,
    args: &Args,
    cvars: Cvars,
    config_path: &Path,
    local: SocketAddr,
    masters: Vec<SocketAddr>,
) -> Result<(), String> {
    let ban_file = match cvars.read(cvar::SV_BANFILE) {
        path if !path.is_empty() => PathBuf::from(path),
        _ => config_path.with_file_name("bans.txt"),
    };
    let bans = BanList::load(&ban_file)?;
    let rcon_port = match cvars.read(cvar::RCON_PORT) as u16 {
        0 => local.port(),
        port => port,
    };
    let shares_token_port = rcon_port == local.port() && !args.insecure && !args.no_token_service;
    let listen = if shares_token_port {
        RconListen::Shared
    } else {
        let at = SocketAddr::new(args.bind, rcon_port);
        RconListen::Own(
            TcpListener::bind(at)
                .map_err(|e| format!("cannot listen for RCON on TCP {at}: {e}"))?,
        )
    };
    let interval = Duration::from_secs_f64(cvars.read(cvar::SV_MASTER_INTERVAL));
    if !masters.is_empty() {
        info!(
            "announcing to {} master list(s) every {interval:?}",
            masters.len()
        );
    }
    if !cvars.read(cvar::RCON_PASSWORD).is_empty() {
        info!("remote admin (Source RCON) on TCP port {rcon_port}");
    }
    let mut pages = Vec::new();
    if let Some(path) = &args.stats {
        let database = StatsDatabase::open(path)?;
        info!(
            "statistics in {} (schema version {})",
            database.path().display(),
            database.schema_version()
        );
        pages.push(("/leaderboard", leaderboard_page(path)?));
        app.add_plugins(RecordsPlugin::new(database));
    }
    if let Some(at) = args.metrics {
        let listener =
            TcpListener::bind(at).map_err(|e| format!("cannot serve metrics on TCP {at}: {e}"))?;
        info!("metrics on http://{at}/metrics, health on http://{at}/health");
        app.add_plugins(TelemetryPlugin::new(listener, pages));
    }
    let words = admin_words(&cvars);
    app.add_plugins((
        AdminPlugin {
            cvars,
            bans,
            config_file: config_path.to_path_buf(),
        },
        TerminalPlugin { words },
        RconPlugin::new(listen),
        QueryPlugin { masters, interval },
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_lines_run_in_order_then_the_flags_win() {
        let dir = std::env::temp_dir().join(format!("sightline-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("server.cfg");
        std::fs::write(
            &file,
            "// a host's file\nsv_hostname \"Friday night\"\nfraglimit 40\nmode TDM\nbots 3\n",
        )
        .unwrap();
        let (flags, lines) = split_plus_commands(
            [
                "sightline-server",
                "+exec",
                file.to_str().unwrap(),
                "+set",
                "bots",
                "5",
                "--fraglimit",
                "7",
            ]
            .map(String::from),
        );
        let cvars = settings(&parse_from(flags).unwrap().1, &lines);
        let config = config_from_cvars(&cvars).unwrap();
        assert_eq!(config.name, "Friday night");
        assert_eq!(config.rules.fraglimit, 7, "the flag wins over the file");
        assert_eq!(config.bots, 5, "a later line wins over the file");
        assert!(config.rules.mode.teams());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_sample_config_starts_a_server() {
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/server.cfg");
        let (flags, lines) =
            split_plus_commands(["sightline-server", "+exec", sample].map(String::from));
        let cvars = settings(&parse_from(flags).unwrap().1, &lines);
        let config = config_from_cvars(&cvars).expect("the sample's settings go together");
        for name in &config.rules.rotation {
            find_map_by_name(name)
                .and_then(|path| MapSource::load(&path))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(!config.rules.rotation.is_empty());
    }

    #[test]
    fn environment_variables_set_cvars_by_their_names_in_capitals() {
        let vars = [
            ("SIGHTLINE_SV_HOSTNAME", "Box"),
            ("SIGHTLINE_FRAGLIMIT", "30"),
            ("SIGHTLINE_BINARIES", "/elsewhere"),
            ("sightline_bots", "3"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let found = environment_settings(&server_cvar_registry(), vars.into_iter());
        let expected = [
            ("SIGHTLINE_FRAGLIMIT", "fraglimit", "30"),
            ("SIGHTLINE_SV_HOSTNAME", "sv_hostname", "Box"),
        ]
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
        assert_eq!(found, expected);
    }

    #[test]
    fn the_hosting_guide_lists_every_flag_as_the_command_line_has_it() {
        let cvars = server_cvar_registry();
        let mut table =
            String::from("| flag [variable] | values (default) | what it does |\n|---|---|---|\n");
        for arg in command().get_arguments() {
            let Some(long) = arg.get_long() else {
                continue;
            };
            let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
            let row = match CVAR_FLAGS.iter().find(|(flag, _)| *flag == long) {
                Some((_, name)) => {
                    let def = &cvars.get(name).expect("a server cvar").def;
                    (
                        format!("`--{long}` [`{name}`]"),
                        describe_values(def),
                        def.help.to_string(),
                    )
                }
                None => {
                    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                    let defaults: Vec<String> = arg
                        .get_default_values()
                        .iter()
                        .map(|v| v.to_string_lossy().into_owned())
                        .collect();
                    let values = match (arg.get_action().takes_values(), defaults.is_empty()) {
                        (false, _) => "off".to_string(),
                        (true, true) => "none".to_string(),
                        (true, false) => defaults.join(", "),
                    };
                    (format!("`--{long}`"), values, help)
                }
            };
            table += &format!("| {} | {} | {} |\n", row.0, cell(&row.1), cell(&row.2));
        }
        let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/HOSTING.md");
        sightline_console::check_doc(&doc, "server-flags", &table).unwrap();
    }

    #[test]
    fn every_server_cvar_has_one_flag_and_the_master_flag_repeats() {
        let cvars = server_cvar_registry();
        let mut names: Vec<&str> = CVAR_FLAGS.iter().map(|(_, name)| *name).collect();
        for name in &names {
            assert!(cvars.get(name).is_some(), "a flag sets unknown {name}");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), cvar::server_cvars().len());
        command().debug_assert();
        let flags = [
            "sightline-server",
            "--bots",
            "2",
            "--master",
            "a:1",
            "--master",
            "b:2",
        ];
        let (_, set) = parse_from(flags.map(String::from).to_vec()).unwrap();
        assert_eq!(
            set,
            [
                ("--bots".to_string(), cvar::BOTS.name(), "2".to_string()),
                (
                    "--master".to_string(),
                    cvar::SV_MASTERS.name(),
                    "a:1,b:2".to_string()
                ),
            ]
        );
    }
}
