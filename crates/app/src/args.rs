//! The game's command line, and what follows from it before any app exists.

use bevy::prelude::*;
use clap::{CommandFactory, Parser};
use sightline_net::{ClientSecurity, FakeLinkArgs};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Sightline: a multiplayer first-person shooter.
#[derive(Parser, Debug, Clone)]
#[command(
    version,
    about,
    after_help = "Console commands may follow as +name args, e.g. +cl_netgraph 2 +connect host:27015"
)]
pub struct Args {
    /// Run without a window, a bot playing (needs --connect, --quick-play or --host).
    #[arg(long)]
    pub headless: bool,
    /// With --headless: host a game for others on this port (UDP and TCP) as the menu's
    /// Host a game does (--map, --bots, --bot-skill, --password), and play in it.
    #[arg(
        long,
        value_name = "PORT",
        requires = "headless",
        conflicts_with_all = ["connect", "quick_play", "spectate"]
    )]
    pub host: Option<u16>,
    /// With --host: be reached through the relay at HOST or HOST:PORT too (port 27960 if
    /// none), as the menu's Also through a relay does.
    #[arg(long, value_name = "HOST:PORT", requires = "host")]
    pub relay: Option<String>,
    /// Join this server at once, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,
    /// Watch --connect's server as a spectator instead of playing: no player, the game
    /// shown a few seconds behind (the server's sv_spectator_delay).
    #[arg(long, requires = "connect")]
    pub spectate: bool,
    /// Join whatever server the matchmaker service at URL finds (quick play):
    /// https://HOST or https://HOST:PORT (the menu's is the cvar cl_matchmaker).
    #[arg(long, value_name = "URL", conflicts_with_all = ["connect", "map", "demo"])]
    pub quick_play: Option<String>,
    /// Trust this certificate authority (PEM) for the matchmaker instead of the public
    /// ones: a community's own.
    #[arg(long, value_name = "PATH")]
    pub matchmaker_ca: Option<PathBuf>,
    /// Watch a demo (a server's recording, .sldemo) with the spectator's cameras.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["connect", "map", "headless"])]
    pub demo: Option<std::path::PathBuf>,
    /// Player name.
    #[arg(long)]
    pub name: Option<String>,
    /// Play offline on this map at once, against bots.
    #[arg(long)]
    pub map: Option<String>,
    /// Bots in offline play.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(0..=15))]
    pub bots: u8,
    /// How well offline bots fight: easy, normal or hard.
    #[arg(long, value_enum, default_value_t = sightline_bots::BotSkill::Normal)]
    pub bot_skill: sightline_bots::BotSkill,
    /// Seed for the bot's choices in --headless and --auto [default: from the name].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Let a bot walk and look around for you (for checks and demos).
    #[arg(long)]
    pub auto: bool,
    /// Save a screenshot here a second before --run-seconds ends (the run waits for it
    /// to be saved, up to 30 s longer).
    #[arg(long, value_name = "PATH", requires = "run_seconds")]
    pub screenshot: Option<PathBuf>,
    /// Quit after this many seconds.
    #[arg(long)]
    pub run_seconds: Option<f64>,
    /// Window size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720")]
    pub window: String,
    /// Use this config file instead of the platform's.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The server's password, for a private server.
    #[arg(long, default_value = "", hide_default_value = true)]
    pub password: String,
    /// Connect without a connect token, to a server run with --insecure (LAN tests
    /// only: nothing is encrypted or authenticated).
    #[arg(long)]
    pub insecure: bool,
    /// With --headless: the player's key for servers' lifetime statistics, 32
    /// hexadecimal digits (the windowed game keeps its own in `cl_guid`) [default: none,
    /// so no statistics are kept].
    #[arg(long, value_name = "HEX", value_parser = parse_guid, requires = "headless")]
    pub guid: Option<sightline_protocol::PlayerKey>,
    /// A fake bad link (`--fake-lag` and friends).
    #[command(flatten)]
    pub fake: FakeLinkArgs,
}

impl Args {
    /// How to connect to a server named with --connect or in the menu.
    pub fn security(&self) -> ClientSecurity {
        if self.insecure {
            ClientSecurity::Insecure
        } else {
            ClientSecurity::Secure {
                password: self.password.clone(),
                known_servers: self.known_servers(),
            }
        }
    }
}

impl Args {
    /// `--matchmaker-ca`'s certificates, or exits with usage.
    pub fn matchmaker_ca(&self) -> Option<Vec<u8>> {
        let path = self.matchmaker_ca.as_ref()?;
        match std::fs::read(path) {
            Ok(pem) => Some(pem),
            Err(e) => usage_error(format!("--matchmaker-ca {}: {e}", path.display())),
        }
    }

    /// The file of servers' identity keys, beside the config file: `known_servers` in
    /// the folder of --config, or of the platform's config.
    fn known_servers(&self) -> Option<PathBuf> {
        let config = self
            .config
            .clone()
            .or_else(sightline_console::config_path)?;
        Some(config.parent()?.join("known_servers"))
    }
}

/// How this game connects to remote servers (offline play always uses a token from
/// its own server).
#[derive(Resource, Debug, Clone, Default)]
pub struct RemoteSecurity(pub ClientSecurity);

/// The log filter: quiet renderer crates, and nothing the network can trigger per packet
/// (the transport's drops are counted instead: [`sightline_net::TRANSPORT_LOG_FILTER`]).
pub const LOG_FILTER: &str = "wgpu=error,naga=warn,bevy_render=warn,renetcode=off,renet=error";

/// Prints `msg` with the usage and exits with status 2.
pub fn usage_error(msg: impl std::fmt::Display) -> ! {
    Args::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

/// `WIDTHxHEIGHT` within sensible bounds.
pub fn parse_window(text: &str) -> Option<(u32, u32)> {
    let (w, h) = text.split_once('x')?;
    let (w, h) = (w.parse().ok()?, h.parse().ok()?);
    ((320..=7680).contains(&w) && (240..=4320).contains(&h)).then_some((w, h))
}

/// A seed for a bot from a name, so the same name walks the same way.
pub fn seed_for(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// The first address `HOST:PORT` resolves to, if any.
pub fn lookup(target: &str) -> Option<SocketAddr> {
    target.to_socket_addrs().ok().and_then(|mut a| a.next())
}

/// Resolves `HOST:PORT` or exits with usage.
pub fn resolve(target: &str) -> SocketAddr {
    match lookup(target) {
        Some(a) => a,
        None => usage_error(format!("cannot resolve {target}: expected HOST:PORT")),
    }
}

/// `--guid`: a player key as 32 hexadecimal digits.
fn parse_guid(text: &str) -> Result<sightline_protocol::PlayerKey, String> {
    parse_key(text).ok_or_else(|| "expected 32 hexadecimal digits".into())
}

/// A key written as 32 hexadecimal digits.
pub(crate) fn parse_key(text: &str) -> Option<sightline_protocol::PlayerKey> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; 16];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod key_tests {
    use super::parse_key;

    #[test]
    fn keys_are_32_hexadecimal_digits() {
        let key = parse_key("00112233445566778899aabbccddEEFF").expect("a key");
        assert_eq!(key[0], 0x00);
        assert_eq!(key[15], 0xff);
        for bad in [
            "",
            "0011",
            "00112233445566778899aabbccddeefg",
            "é0112233445566778899aabbccddeef",
        ] {
            assert_eq!(parse_key(bad), None, "{bad:?}");
        }
    }
}
