//! Practice offline: the dedicated server's own code, run on a thread inside the client
//! and joined over loopback UDP like any other server.

use bevy::prelude::*;
use sightline_map::{CurrentMap, MapSource, find_map};
use sightline_net::{AdmissionLimits, SecureConfig, Security, ServerNetPlugin};
use sightline_server::{ServerConfig, ServerThread};
use sightline_sim::TickConfig;
use std::net::SocketAddr;

/// A server running on a thread of this process. Dropping it stops the server.
pub struct EmbeddedServer {
    /// Where it listens (loopback, a free port).
    pub addr: SocketAddr,
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
            _thread: thread,
        })
    }
}
