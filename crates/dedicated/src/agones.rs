//! The server as an Agones GameServer (`--agones`): it tells the Agones SDK sidecar when it
//! is ready, that it is alive (from the tick, so a hung tick stops the pings and Agones
//! restarts it), which players are in, which map and mode it plays, and, once an allocated
//! match is over and the fleet wants it so, that it is done.
//!
//! The SDK is async (tonic over gRPC): it runs on a thread of its own with a small tokio
//! runtime. The tick only puts calls on channels, never waits on one; the thread makes
//! them in order and logs what fails.

use agones::Sdk;
use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_runtime::TakeOnce;
use sightline_server::{Connection, ConnectionStage, MatchState, ServerConfig};
use sightline_sim::{PlayerId, SimSet};
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often the tick pings the sidecar. Agones counts a GameServer unhealthy after
/// `failureThreshold` periods of `periodSeconds` without a ping (`deploy/agones/` asks for
/// 3 of 5 s), so a ping a second leaves room for a slow tick or two but not a hung one.
pub const HEALTH_INTERVAL: Duration = Duration::from_secs(1);

/// The Agones list (beta Counters and Lists) of the players in the game, by the client id
/// their connect token names: what the GameServer spec declares, with the capacity of the
/// server's player slots, and what allocations can select on.
pub const PLAYERS_LIST: &str = "players";

/// How long the server waits at start-up for the sidecar to answer before giving up.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The name of the GameServer port players connect to (`deploy/agones/`'s manifests).
pub const GAME_PORT_NAME: &str = "game";

/// The SDK's own default port, when `AGONES_SDK_GRPC_PORT` is not set.
const DEFAULT_SDK_PORT: u16 = 9357;

/// Longest a single call to the sidecar may take before it is given up and logged.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How the server reaches Agones and what it does at a match's end.
#[derive(Debug, Clone)]
pub struct AgonesSettings {
    /// The sidecar's gRPC port on localhost.
    pub port: u16,
    /// Longest wait for the sidecar at start-up.
    pub connect_timeout: Duration,
    /// Ask to be shut down when a match ends while allocated (`--agones-shutdown-after-match`):
    /// the fleet then puts a fresh server in its place for the next allocation.
    pub shutdown_after_match: bool,
}

impl AgonesSettings {
    /// The settings Agones gives the container: the port in `AGONES_SDK_GRPC_PORT` (the
    /// SDK's default, 9357, when unset). A port that is not a port is an error, not the
    /// default: a server that silently talks to the wrong port is never marked ready.
    pub fn from_env(shutdown_after_match: bool) -> Result<Self, String> {
        let port = match std::env::var("AGONES_SDK_GRPC_PORT") {
            Ok(text) => text
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| {
                    format!("AGONES_SDK_GRPC_PORT={text:?} is not a port number (1-65535)")
                })?,
            Err(std::env::VarError::NotPresent) => DEFAULT_SDK_PORT,
            Err(e) => return Err(format!("AGONES_SDK_GRPC_PORT: {e}")),
        };
        Ok(Self {
            port,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            shutdown_after_match,
        })
    }
}

/// What the server has heard from and told Agones, for the host and for tests.
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub struct AgonesStatus {
    /// The GameServer's state as last watched (`Ready`, `Allocated`, `Shutdown`...); empty
    /// before the first word from the sidecar.
    pub state: String,
    /// Whether `Ready` has been sent.
    pub ready: bool,
    /// Whether `Shutdown` has been sent.
    pub shutdown: bool,
}

/// A call to the sidecar, made in order on the SDK's thread.
#[derive(Debug)]
enum SdkCall {
    Label(&'static str, String),
    Ready,
    Shutdown,
    PlayerIn(String),
    PlayerOut(String),
}

/// The tick's side of the SDK thread: channels that never block.
#[derive(Resource)]
struct AgonesLink {
    calls: mpsc::UnboundedSender<SdkCall>,
    pings: mpsc::Sender<()>,
    /// The GameServer state the watch last reported.
    watched: Arc<Mutex<String>>,
    shutdown_after_match: bool,
}

impl AgonesLink {
    fn call(&self, call: SdkCall) {
        // Closed only when the SDK thread has gone, which it has logged.
        self.calls.send(call).ok();
    }
}

/// Adds the Agones integration; made by [`AgonesPlugin::connect`], which has already
/// reached the sidecar.
pub struct AgonesPlugin {
    address: Option<SocketAddr>,
    link: TakeOnce<AgonesLink>,
}

impl AgonesPlugin {
    /// Starts the SDK's thread and waits for the sidecar to answer: an error, saying what
    /// to check, when it does not within `settings.connect_timeout`.
    pub fn connect(settings: &AgonesSettings) -> Result<Self, String> {
        let (calls, call_rx) = mpsc::unbounded_channel();
        // A few pings of slack: more queued than that means the thread is behind, and
        // a ping dropped then changes nothing.
        let (pings, ping_rx) = mpsc::channel(4);
        let watched = Arc::new(Mutex::new(String::new()));
        let (connected, outcome) = std::sync::mpsc::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the Agones SDK's runtime: {e}"))?;
        let thread_watched = Arc::clone(&watched);
        let (port, limit) = (settings.port, settings.connect_timeout);
        std::thread::Builder::new()
            .name("agones-sdk".into())
            .spawn(move || {
                runtime.block_on(run_sdk(
                    port,
                    limit,
                    connected,
                    call_rx,
                    ping_rx,
                    thread_watched,
                ))
            })
            .map_err(|e| format!("cannot start the Agones SDK's thread: {e}"))?;
        // The thread gives up at `limit` for the sidecar and again for the address; the
        // margin only covers a thread that died.
        match outcome.recv_timeout(limit * 2 + Duration::from_secs(5)) {
            Ok(Ok(address)) => Ok(Self {
                address,
                link: TakeOnce::new(AgonesLink {
                    calls,
                    pings,
                    watched,
                    shutdown_after_match: settings.shutdown_after_match,
                }),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the Agones SDK's thread stopped before connecting".into()),
        }
    }
}

impl AgonesPlugin {
    /// Where players reach this server, as Agones reported it at start-up: the node's
    /// address and the host port of the GameServer's port named [`GAME_PORT_NAME`]. It is
    /// what a matchmaker seals into tokens, so it is the server's public address.
    pub fn public_address(&self) -> Option<SocketAddr> {
        self.address
    }
}

impl Plugin for AgonesPlugin {
    fn build(&self, app: &mut App) {
        let link = self.link.take("AgonesPlugin");
        app.insert_resource(link)
            .init_resource::<AgonesStatus>()
            // At the end of each tick: only a tick that finished says the server is alive.
            .add_systems(FixedUpdate, report_tick.after(SimSet::BuildSnapshots));
    }
}

/// What [`report_tick`] remembers between ticks.
#[derive(Default)]
struct Reported {
    labels: Option<(String, String)>,
    last_ping: Option<Instant>,
    players: BTreeSet<u64>,
    matches_finished: u32,
}

/// A label value Kubernetes accepts: at most 63 of `[A-Za-z0-9-_.]`, starting and ending
/// with a letter or digit. Map names are the host's to choose; anything else becomes `-`.
fn label_value(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    cleaned
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// Once per tick: the labels when the map or mode changed, `Ready` after the first tick,
/// a health ping each [`HEALTH_INTERVAL`], players in and out, and `Shutdown` at the end of
/// an allocated match when asked for.
fn report_tick(
    link: Res<AgonesLink>,
    mut status: ResMut<AgonesStatus>,
    config: Res<ServerConfig>,
    map: Res<CurrentMap>,
    matches: Res<MatchState>,
    // Players only: a spectator holds no player's place.
    connections: Query<&Connection, With<PlayerId>>,
    mut reported: Local<Reported>,
) {
    let watched = link.watched.lock().expect("poisoned").clone();
    if watched != status.state {
        info!("agones: the GameServer is {watched}");
        status.state = watched;
    }
    // Labels first, so a server is never Ready without saying what it plays.
    let labels = (
        label_value(&map.def.name),
        config.rules.mode.keyword().to_string(),
    );
    if reported.labels.as_ref() != Some(&labels) {
        link.call(SdkCall::Label("map", labels.0.clone()));
        link.call(SdkCall::Label("mode", labels.1.clone()));
        reported.labels = Some(labels);
    }
    if !status.ready {
        // The map is loaded and a tick has run: players can join.
        link.call(SdkCall::Ready);
        status.ready = true;
        info!("agones: ready");
    }
    let now = Instant::now();
    if reported
        .last_ping
        .is_none_or(|at| now.duration_since(at) >= HEALTH_INTERVAL)
    {
        // Full only when the SDK's thread is behind; the next tick tries again.
        if link.pings.try_send(()).is_ok() {
            reported.last_ping = Some(now);
        }
    }
    let playing: BTreeSet<u64> = connections
        .iter()
        .filter(|c| c.stage == ConnectionStage::Playing)
        .map(|c| c.client_id)
        .collect();
    for gone in reported.players.difference(&playing) {
        link.call(SdkCall::PlayerOut(gone.to_string()));
    }
    for new in playing.difference(&reported.players) {
        link.call(SdkCall::PlayerIn(new.to_string()));
    }
    reported.players = playing;
    if matches.finished != reported.matches_finished {
        reported.matches_finished = matches.finished;
        // Without the flag the fleet decides when an allocated server is done.
        if link.shutdown_after_match && !status.shutdown {
            if status.state == "Allocated" {
                info!("agones: the match is over; asking the fleet to shut this server down");
                link.call(SdkCall::Shutdown);
                status.shutdown = true;
            } else {
                // A Ready server's match (bots playing on an empty server) ends no session.
                info!(
                    "agones: a match ended while {}: not allocated, so staying up",
                    status.state
                );
            }
        }
    }
}

/// Words for an SDK error: the gRPC status or transport failure it wraps, not only its
/// kind.
fn describe(e: &agones::errors::Error) -> String {
    use agones::errors::Error;
    match e {
        Error::Rpc(status) => format!("{:?}: {}", status.code(), status.message()),
        Error::Transport(t) => {
            let mut text = t.to_string();
            let mut source = std::error::Error::source(t);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
        other => other.to_string(),
    }
}

/// The SDK's thread: connects (reporting how on `connected`), then makes the calls in
/// order, forwards the pings to the SDK's health stream and watches the GameServer, until
/// the server drops its side.
async fn run_sdk(
    port: u16,
    limit: Duration,
    connected: std::sync::mpsc::Sender<Result<Option<SocketAddr>, String>>,
    mut calls: mpsc::UnboundedReceiver<SdkCall>,
    pings: mpsc::Receiver<()>,
    watched: Arc<Mutex<String>>,
) {
    // The SDK itself retries for 30 s; a host wants to hear sooner that nothing is there.
    let sdk = match tokio::time::timeout(limit, Sdk::new_with_host(None, Some(port), None)).await {
        Ok(Ok(sdk)) => sdk,
        Ok(Err(e)) => {
            let e = format!(
                "cannot reach the Agones SDK on port {port}: {}",
                describe(&e)
            );
            connected.send(Err(e)).ok();
            return;
        }
        Err(_) => {
            let e = format!(
                "no Agones SDK server answered on localhost:{port} within {limit:?}: --agones \
                 runs in a GameServer pod, whose sidecar serves the SDK \
                 (AGONES_SDK_GRPC_PORT names its port)"
            );
            connected.send(Err(e)).ok();
            return;
        }
    };
    let address = game_address(&mut sdk.clone(), limit).await;
    connected.send(Ok(address)).ok();
    tokio::spawn(forward_pings(sdk.clone(), pings));
    tokio::spawn(watch_state(sdk.clone(), watched));
    let mut sdk = sdk;
    while let Some(call) = calls.recv().await {
        let what = format!("{call:?}");
        let done = tokio::time::timeout(CALL_TIMEOUT, make_call(&mut sdk, call)).await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!("agones: {what} failed: {}", describe(&e)),
            Err(_) => warn!("agones: {what} had no answer within {CALL_TIMEOUT:?}"),
        }
    }
}

/// The GameServer's address and game port, asked until Agones has filled them in (it does
/// once the pod has a node and a host port), for up to `limit`.
async fn game_address(sdk: &mut Sdk, limit: Duration) -> Option<SocketAddr> {
    let start = Instant::now();
    loop {
        if let Ok(gs) = sdk.get_gameserver().await
            && let Some(status) = gs.status
        {
            let port = status
                .ports
                .iter()
                // A TCPUDP port may be reported per protocol.
                .find(|p| p.name == GAME_PORT_NAME || p.name == "game-udp")
                .and_then(|p| u16::try_from(p.port).ok());
            if let (Ok(ip), Some(port)) = (status.address.parse::<IpAddr>(), port) {
                return Some(SocketAddr::new(ip, port));
            }
        }
        if start.elapsed() >= limit {
            warn!(
                "agones: the GameServer reports no address with a port named \
                 {GAME_PORT_NAME:?}; tokens must name --public-address"
            );
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn make_call(sdk: &mut Sdk, call: SdkCall) -> agones::errors::Result<()> {
    match call {
        SdkCall::Label(key, value) => sdk.set_label(key, value).await,
        SdkCall::Ready => sdk.ready().await,
        SdkCall::Shutdown => sdk.shutdown().await,
        SdkCall::PlayerIn(id) => {
            sdk.beta()
                .clone()
                .append_list_value(PLAYERS_LIST, &id)
                .await
        }
        SdkCall::PlayerOut(id) => {
            sdk.beta()
                .clone()
                .delete_list_value(PLAYERS_LIST, &id)
                .await
        }
    }
}

/// Passes each of the tick's pings to the SDK's health stream, opening a new stream when
/// the old one has closed (the sidecar restarted, say).
async fn forward_pings(sdk: Sdk, mut pings: mpsc::Receiver<()>) {
    let mut health = sdk.health_check();
    while pings.recv().await.is_some() {
        if health.send(()).await.is_err() {
            warn!("agones: the health stream closed; opening another");
            health = sdk.health_check();
            health.send(()).await.ok();
        }
    }
}

/// Keeps `watched` at the GameServer's state, watching again a second after a watch ends.
async fn watch_state(mut sdk: Sdk, watched: Arc<Mutex<String>>) {
    loop {
        match sdk.watch_gameserver().await {
            Ok(mut stream) => loop {
                match stream.message().await {
                    Ok(Some(gs)) => {
                        if let Some(state) = gs.status.map(|s| s.state) {
                            *watched.lock().expect("poisoned") = state;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        warn!("agones: watching the GameServer: {e}");
                        break;
                    }
                }
            },
            Err(e) => warn!("agones: cannot watch the GameServer: {}", describe(&e)),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_ones_kubernetes_takes() {
        assert_eq!(label_value("duel"), "duel");
        assert_eq!(label_value("My Map (v2)"), "My-Map--v2");
        assert_eq!(label_value("__x__"), "x");
        assert_eq!(label_value(&"a".repeat(100)).len(), 63);
        assert_eq!(label_value("é"), "");
    }
}
