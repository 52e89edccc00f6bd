//! `sightline`: the game. Opens a window with the main menu, or joins a server straight
//! away with `--connect`, or plays offline with `--map`. `--headless` runs without a
//! window, a bot at the controls. `+command args` pairs run in the console at start-up.

mod cvars;
mod headless;
mod hud;
mod input;
mod menu;
mod offline;
mod render;
mod session;
mod smoke;
mod sound;

use bevy::prelude::*;
use bevy::window::{PresentMode, WindowResolution};
use clap::{CommandFactory, Parser};
use sightline_client::{ClientPlugin, InputSource};
use sightline_console::{ConsolePlugin, split_plus_commands};
use sightline_net::{
    ClientNetPlugin, ClientSecurity, FakeLinkArgs, LinkConditions, ShutdownPlugin, ShutdownSignal,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Sightline: a multiplayer first-person shooter.
#[derive(Parser, Debug, Clone)]
#[command(
    version,
    about,
    after_help = "Console commands may follow as +name args, e.g. +cl_netgraph 2 +connect host:27015"
)]
pub struct Args {
    /// Run without a window, a bot playing (needs --connect).
    #[arg(long)]
    headless: bool,
    /// Join this server at once, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// Player name.
    #[arg(long)]
    name: Option<String>,
    /// Play offline on this map at once, against bots.
    #[arg(long)]
    map: Option<String>,
    /// Bots in offline play.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(0..=15))]
    bots: u8,
    /// How well offline bots fight: easy, normal or hard.
    #[arg(long, default_value = "normal", value_parser = ["easy", "normal", "hard"])]
    bot_skill: String,
    /// Seed for the bot's choices in --headless and --auto [default: from the name].
    #[arg(long)]
    seed: Option<u64>,
    /// Let a bot walk and look around for you (for checks and demos).
    #[arg(long)]
    auto: bool,
    /// Save a screenshot here a second before --run-seconds ends (the run waits for it
    /// to be saved, up to 30 s longer).
    #[arg(long, value_name = "PATH", requires = "run_seconds")]
    screenshot: Option<PathBuf>,
    /// Quit after this many seconds.
    #[arg(long)]
    run_seconds: Option<f64>,
    /// Window size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720")]
    window: String,
    /// Use this config file instead of the platform's.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// The server's password, for a private server.
    #[arg(long, default_value = "", hide_default_value = true)]
    password: String,
    /// Connect without a connect token, to a server run with --insecure (LAN tests
    /// only: nothing is encrypted or authenticated).
    #[arg(long)]
    insecure: bool,
    #[command(flatten)]
    fake: FakeLinkArgs,
}

impl Args {
    /// How to connect to a server named with --connect or in the menu.
    pub(crate) fn security(&self) -> ClientSecurity {
        if self.insecure {
            ClientSecurity::Insecure
        } else {
            ClientSecurity::Secure {
                password: self.password.clone(),
            }
        }
    }
}

/// How this game connects to remote servers (offline play always uses a token from
/// its own server).
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct RemoteSecurity(pub ClientSecurity);

/// The log filter: renetcode logs an error for every undecodable datagram, which an
/// attacker could turn into a flood of lines; its drops are counted instead.
pub(crate) const LOG_FILTER: &str = "wgpu=error,naga=warn,bevy_render=warn,renetcode=off";

pub(crate) fn usage_error(msg: impl std::fmt::Display) -> ! {
    Args::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

fn parse_window(text: &str) -> Option<(u32, u32)> {
    let (w, h) = text.split_once('x')?;
    let (w, h) = (w.parse().ok()?, h.parse().ok()?);
    ((320..=7680).contains(&w) && (240..=4320).contains(&h)).then_some((w, h))
}

/// A seed for a bot from a name, so the same name walks the same way.
pub(crate) fn seed_for(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn main() -> ExitCode {
    // args_os: std::env::args panics on an argument that is not UTF-8.
    let args = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    let (flags, mut startup) = split_plus_commands(args);
    let args = match Args::try_parse_from(&flags) {
        Ok(a) => a,
        Err(e) => {
            // Same treatment as the server: usage and status 2 for bad flags.
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) {
                e.exit();
            }
            let text = e.render().to_string();
            eprint!("{text}");
            if !text.contains("Usage:") {
                eprintln!("\n{}", Args::command().render_usage());
            }
            return ExitCode::from(2);
        }
    };
    if let Some(s) = args.run_seconds
        && !(s.is_finite() && s > 0.0)
    {
        usage_error("--run-seconds must be a positive number");
    }
    let conditions = args.fake.settings().unwrap_or_else(|e| usage_error(e));
    if args.headless {
        return headless::run(&args, conditions);
    }
    if args.connect.is_some() && args.map.is_some() {
        usage_error("--connect and --map are alternatives: join a server, or play offline");
    }
    let Some((width, height)) = parse_window(&args.window) else {
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

    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: "Sightline".into(),
                    resolution: WindowResolution::new(width, height),
                    present_mode: PresentMode::AutoNoVsync,
                    ..default()
                }),
                ..default()
            })
            .set(bevy::log::LogPlugin {
                filter: LOG_FILTER.into(),
                ..default()
            }),
    )
    .add_plugins((
        bevy_egui::EguiPlugin::default(),
        ClientNetPlugin::deferred(),
        ShutdownPlugin,
        ClientPlugin {
            name: args.name.clone().unwrap_or_default(),
            input: if args.auto {
                InputSource::Bot {
                    seed: args.seed.unwrap_or_else(|| seed_for("auto")),
                }
            } else {
                InputSource::Local
            },
        },
        ConsolePlugin {
            startup,
            config: args.config.clone(),
        },
        sightline_netgraph::NetgraphPlugin,
    ))
    .add_plugins((
        cvars::CvarsPlugin,
        session::SessionPlugin,
        menu::MenuPlugin,
        input::InputPlugin,
        render::RenderPlugin,
        hud::HudPlugin,
        smoke::SmokePlugin,
        sound::SoundPlugin,
    ))
    .insert_resource(signal)
    .insert_resource(LinkConditions(conditions))
    .insert_resource(RemoteSecurity(args.security()))
    .insert_resource(session::StartWith::from_args(&args));
    if let Some(s) = args.run_seconds {
        app.insert_resource(sightline_net::RunFor(std::time::Duration::from_secs_f64(s)));
    }
    if let Some(path) = args.screenshot.clone() {
        app.insert_resource(smoke::ScreenshotAt {
            path,
            at: (args.run_seconds.unwrap_or(5.0) - 1.0).max(0.5),
        });
    }
    match app.run() {
        AppExit::Success => ExitCode::SUCCESS,
        AppExit::Error(_) => ExitCode::FAILURE,
    }
}
