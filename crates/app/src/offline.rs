//! Servers inside the game: practice offline (the dedicated server's own code, run on a
//! thread inside the client and joined over loopback UDP like any other server), a game
//! hosted for others on a real port, and demos, played back by that server's replay and
//! watched as a spectator.

use crate::router::PortMapping;
use bevy::prelude::*;
use sightline_map::{CurrentMap, MapSource, find_map};
use sightline_net::{AdmissionLimits, SecureConfig, Security, ServerNetPlugin};
use sightline_query::HEARTBEAT_INTERVAL;
use sightline_server::{
    DemoIndex, Kill, LocalOrders, Outcome, PLAYBACK_SPECTATORS, PlaybackControl, QueryPlugin, Seek,
    ServerConfig, ServerThread, local_orders, open_demo, playback_app, read_demo, verify_demo,
};
use sightline_sim::TickConfig;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

/// A game hosted from the menu: the dedicated server's own code on a thread of the game,
/// on a real port, listed on the LAN (A2S) and, if asked, on master lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSettings {
    /// The server's name in lists.
    pub name: String,
    /// The map.
    pub map: String,
    /// Bots.
    pub bots: u8,
    /// How well they fight.
    pub skill: sightline_bots::BotSkill,
    /// Players at most, the host included.
    pub max_players: u8,
    /// The UDP port (and TCP, for connect tokens).
    pub port: u16,
    /// The password players give ("" for none).
    pub password: String,
    /// Master lists to announce it to (none: LAN only).
    pub masters: Vec<SocketAddr>,
    /// Where to look for the home router to forward the port (UPnP's SSDP address,
    /// `router::SSDP`); `None`: leave the router alone.
    pub upnp: Option<SocketAddr>,
    /// A relay's control address, to be reached through it too (`None`: none).
    pub relay: Option<SocketAddr>,
    /// Without `relay`: a relay asked only to probe the port, to say whether strangers
    /// reach the game directly (`None`: not asked).
    pub probe: Option<SocketAddr>,
}

/// A server running on a thread of this process. Dropping it stops the server.
pub struct EmbeddedServer {
    /// Where this game's own client joins it (loopback).
    pub addr: SocketAddr,
    /// The demo it plays (`None`: a practice server).
    pub playback: Option<DemoPlayback>,
    /// Orders to a practice server (`record`, `stop`); `None` for a demo's playback.
    pub orders: Option<LocalOrders>,
    /// A hosted game's port asked of the home router, given back when this is dropped.
    pub router: Option<PortMapping>,
    /// What a hosted game's relay (and its probe of the port) said.
    pub relay_news: Option<Mutex<mpsc::Receiver<String>>>,
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
        let (orders, inbox) = local_orders();
        let thread = ServerThread::spawn(
            "sightline-server",
            config,
            CurrentMap::new(source),
            net,
            |app| inbox.install(app),
        )
        .map_err(|e| format!("cannot start the server thread: {e}"))?;
        info!("practice server for {map} on {addr} with {bots} bots");
        Ok(Self {
            addr,
            playback: None,
            orders: Some(orders),
            router: None,
            relay_news: None,
            _thread: thread,
        })
    }

    /// Hosts a game for others: the practice server's code on `host`'s port on every
    /// address of this machine, with its password, answering server queries (so the LAN
    /// tab of any game's browser finds it), announcing itself to `host.masters`, asking
    /// the home router to forward the port (`host.upnp`) and registering with a relay
    /// (`host.relay`), which the masters are then told of instead.
    pub fn host(host: &HostSettings) -> Result<Self, String> {
        let source = MapSource::load(&find_map(&host.map)).map_err(|e| e.to_string())?;
        let bind = SocketAddr::from(([0, 0, 0, 0], host.port));
        let config = ServerConfig {
            name: host.name.clone(),
            max_players: host.max_players.max(host.bots.saturating_add(1)).max(2),
            bots: host.bots,
            bot_skill: host.skill,
            tick: TickConfig::default(),
            ..Default::default()
        };
        let mut secure = SecureConfig::random();
        secure.password = (!host.password.is_empty()).then(|| host.password.clone());
        let mut transport = sightline_net::udp_server(
            bind,
            None,
            config.max_players as usize,
            Security::Secure(secure),
            AdmissionLimits::default(),
        )
        .map_err(|e| e.to_string())?;
        let bound = transport
            .socket
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        let (news, heard) = mpsc::channel();
        let relay_news = match (host.relay, host.probe) {
            (Some(relay), _) => {
                transport.use_relay(relay, host.masters.clone(), Some(news));
                Some(Mutex::new(heard))
            }
            (None, Some(relay)) => {
                transport.probe_reachability(relay, Some(news));
                Some(Mutex::new(heard))
            }
            (None, None) => None,
        };
        let net = ServerNetPlugin::from_udp(transport);
        let (orders, inbox) = local_orders();
        let listing = QueryPlugin {
            masters: host.masters.clone(),
            interval: HEARTBEAT_INTERVAL,
        };
        let thread = ServerThread::spawn(
            "sightline-server",
            config,
            CurrentMap::new(source),
            net,
            move |app| {
                inbox.install(app);
                app.add_plugins(listing);
            },
        )
        .map_err(|e| format!("cannot start the server thread: {e}"))?;
        info!(
            "hosting \"{}\" on {} (UDP and TCP port {})",
            host.name,
            host.map,
            bound.port()
        );
        let router = host.upnp.and_then(|ssdp| {
            PortMapping::start(bound.port(), ssdp)
                .map_err(|e| warn!("cannot ask the router for the port: {e}"))
                .ok()
        });
        Ok(Self {
            // The host's own client joins over loopback.
            addr: SocketAddr::from(([127, 0, 0, 1], bound.port())),
            playback: None,
            orders: Some(orders),
            router,
            relay_news,
            _thread: thread,
        })
    }

    /// What the relay said since the last call.
    pub fn relay_news(&self) -> Vec<String> {
        self.relay_news
            .as_ref()
            .and_then(|n| n.lock().ok().map(|n| n.try_iter().collect()))
            .unwrap_or_default()
    }

    /// Plays `demo` on a server of its own ([`playback_app`]), on loopback, for this
    /// game to watch as a spectator: from its start, or from `seek`.
    pub fn play_demo(demo: &DemoPlayback, seek: Option<Seek>) -> Result<Self, String> {
        let path = &demo.path;
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
        let hold = demo.control.clone();
        let thread = ServerThread::spawn_app("sightline-demo", move |stop| {
            playback_app(
                reader,
                map,
                net,
                sightline_runtime::Pacing::RealTime(stop),
                hold,
                seek,
            )
        })
        .map_err(|e| format!("cannot start the demo's server thread: {e}"))?;
        info!("playing {} on {addr}", path.display());
        Ok(Self {
            addr,
            playback: Some(demo.clone()),
            orders: None,
            router: None,
            relay_news: None,
            _thread: thread,
        })
    }
}

/// A demo being watched: the viewer's hold on its playback, and what its timeline
/// shows. Kept when the demo is started again from another tick.
#[derive(Clone)]
pub struct DemoPlayback {
    /// The file.
    pub path: PathBuf,
    /// Paused or running, and how fast.
    pub control: PlaybackControl,
    /// Its ticks and keyframes.
    pub index: Arc<DemoIndex>,
    /// Its kills, once a read-through on a thread of its own has found them (or why it
    /// could not).
    pub kills: Arc<OnceLock<Result<Vec<Kill>, String>>>,
}

impl DemoPlayback {
    /// Opens the demo at `path`: reads where its ticks are, and starts reading it
    /// through for its kills.
    pub fn open(path: &Path) -> Result<Self, String> {
        // The map is checked where the demo is played (`play_demo`); the index needs none.
        let reader = read_demo(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let index = DemoIndex::scan(reader);
        let kills = Arc::new(OnceLock::new());
        let found = kills.clone();
        let file = path.to_path_buf();
        std::thread::Builder::new()
            .name("sightline-demo-kills".into())
            .spawn(move || {
                let _ = found.set(kills_in(&file));
            })
            .map_err(|e| format!("cannot read the demo through: {e}"))?;
        Ok(Self {
            path: path.to_path_buf(),
            control: PlaybackControl::default(),
            index: Arc::new(index),
            kills,
        })
    }
}

/// Every kill in the demo at `path`, found by replaying it headless as `--verify-demo`
/// does; the kills up to where a demo that this build plays another way stops.
fn kills_in(path: &Path) -> Result<Vec<Kill>, String> {
    let (reader, map) = open_demo(path)?;
    let verdict = verify_demo(reader, map)?;
    if let Outcome::Differs { tick, .. } = verdict.outcome {
        info!("the demo's timeline ends at tick {tick}, where this build plays it another way");
    }
    Ok(verdict.kills)
}
