//! Practice offline: the dedicated server's own code, run on a thread inside the client
//! and joined over loopback UDP like any other server; and demos, played back by that
//! server's replay and watched as a spectator.

use bevy::prelude::*;
use sightline_map::{CurrentMap, MapSource, find_map};
use sightline_net::{AdmissionLimits, SecureConfig, Security, ServerNetPlugin};
use sightline_server::{
    PLAYBACK_SPECTATORS, PlaybackControl, ServerConfig, ServerThread, open_demo, playback_app,
};
use sightline_sim::TickConfig;
use std::net::SocketAddr;
use std::path::Path;

/// A server running on a thread of this process. Dropping it stops the server.
pub struct EmbeddedServer {
    /// Where it listens (loopback, a free port).
    pub addr: SocketAddr,
    /// The hold on a demo it plays (`None`: a practice server).
    pub playback: Option<PlaybackControl>,
    _thread: ServerThread,
}

impl EmbeddedServer {
    /// Loads `map`, binds a loopback port and starts serving with `bots` bots of `skill`.
    pub fn start(map: &str, bots: u8, skill: sightline_bots::BotSkill) -> Result<Self, String> {
        let source = MapSource::load(&find_map(map)).map_err(|e| e.to_string())?;
        let bind: SocketAddr = "127.0.0.1:0".parse().expect("valid address");
        let config = ServerConfig {
            name: "Practice".into(),
            max_players: bots.saturating_add(1).max(2),
            bots,
            bot_skill: skill,
            rules: Default::default(),
            tick: TickConfig::default(),
            ..Default::default()
        };
        // Secure like any server: its token service listens on loopback only.
        let (net, addr) = ServerNetPlugin::udp(
            bind,
            None,
            config.max_players as usize,
            Security::Secure(SecureConfig::random()),
            AdmissionLimits::default(),
        )
        .map_err(|e| e.to_string())?;
        let thread = ServerThread::spawn(
            "sightline-server",
            config,
            CurrentMap::new(source),
            net,
            |_| {},
        )
        .map_err(|e| format!("cannot start the server thread: {e}"))?;
        info!("practice server for {map} on {addr} with {bots} bots");
        Ok(Self {
            addr,
            playback: None,
            _thread: thread,
        })
    }

    /// Plays the demo at `path` on a server of its own ([`playback_app`]), on loopback,
    /// for this game to watch as a spectator.
    pub fn play_demo(path: &Path) -> Result<Self, String> {
        let (reader, map) = open_demo(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bind: SocketAddr = "127.0.0.1:0".parse().expect("valid address");
        let (net, addr) = ServerNetPlugin::udp(
            bind,
            None,
            usize::from(PLAYBACK_SPECTATORS),
            Security::Secure(SecureConfig::random()),
            AdmissionLimits::default(),
        )
        .map_err(|e| e.to_string())?;
        let control = PlaybackControl::default();
        let hold = control.clone();
        let thread = ServerThread::spawn_app("sightline-demo", move |stop| {
            playback_app(
                reader,
                map,
                net,
                sightline_net::Pacing::RealTime(stop),
                hold,
            )
        })
        .map_err(|e| format!("cannot start the demo's server thread: {e}"))?;
        info!("playing {} on {addr}", path.display());
        Ok(Self {
            addr,
            playback: Some(control),
            _thread: thread,
        })
    }
}
