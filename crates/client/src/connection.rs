//! Connecting: Hello, checking the Welcome, the roster of players, disconnection.

use crate::{LocalPlayer, snapshots::ClientStats};
use bevy::prelude::*;
use sightline_map::{CurrentMap, MapSource, find_map};
use sightline_movement::PlayerState;
use sightline_net::RenetClient;
use sightline_protocol::{
    Channel, ClientMessage, MAX_NAME_LEN, PROTOCOL_VERSION, ServerMessage, Welcome, Wire,
    clean_text, peek_welcome_version,
};
use sightline_sim::{Player, PlayerId, TickConfig};
use std::collections::BTreeMap;

/// The name this client asks the server for (the server may adjust it).
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub struct DesiredName(pub String);

/// What the server told us about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The Welcome message as received.
    pub welcome: Welcome,
}

/// Where the connection stands, for the HUD and for tests.
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub enum ConnectionStatus {
    /// Transport connecting.
    #[default]
    Connecting,
    /// Hello sent; waiting for Welcome.
    AwaitingWelcome,
    /// In the game.
    Connected(ServerInfo),
    /// Gone, and why.
    Disconnected(String),
}

impl ConnectionStatus {
    /// Whether the client is in the game.
    pub fn is_connected(&self) -> bool {
        matches!(self, Self::Connected(_))
    }
}

/// A player as the server announced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterEntry {
    /// Display name.
    pub name: String,
    /// Whether a bot plays it.
    pub bot: bool,
    /// Round trip to the server, milliseconds, once reported.
    pub ping_ms: Option<u16>,
    /// Kills less suicides.
    pub frags: i32,
    /// Deaths.
    pub deaths: u32,
    /// Team in team games (0 red, 1 blue).
    pub team: Option<u8>,
}

/// Everyone in the game, by id.
#[derive(Resource, Debug, Default)]
pub struct Roster(pub BTreeMap<PlayerId, RosterEntry>);

pub(crate) fn in_game(status: Res<ConnectionStatus>, local: Query<(), With<LocalPlayer>>) -> bool {
    status.is_connected() && !local.is_empty()
}

/// Says Hello once the transport is up.
pub(crate) fn send_hello(
    mut client: ResMut<RenetClient>,
    mut status: ResMut<ConnectionStatus>,
    name: Res<DesiredName>,
) {
    if *status == ConnectionStatus::Connecting && client.is_connected() {
        let hello = ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            // The server cleans names too; cleaning here keeps the Hello valid.
            name: clean_text(&name.0, MAX_NAME_LEN),
        };
        client.send_message(Channel::Reliable, hello.encode());
        *status = ConnectionStatus::AwaitingWelcome;
    }
}

/// Gives up on the server with a reason the player can read.
fn leave(client: &mut RenetClient, status: &mut ConnectionStatus, reason: String) {
    error!("{reason}");
    client.disconnect();
    *status = ConnectionStatus::Disconnected(reason);
}

/// Handles Welcome, Refused, joins, leaves and chat.
pub(crate) fn receive_reliable(
    mut commands: Commands,
    mut client: ResMut<RenetClient>,
    mut status: ResMut<ConnectionStatus>,
    mut roster: ResMut<Roster>,
    mut stats: ResMut<ClientStats>,
    mut fixed: ResMut<Time<Fixed>>,
    mut chat: ResMut<crate::ChatLog>,
    mut feed: ResMut<crate::KillFeed>,
    mut combat: ResMut<crate::CombatFeed>,
    mut match_info: ResMut<crate::MatchInfo>,
    buffers: Query<Entity, With<sightline_interpolation::SnapshotBuffer>>,
) {
    while let Some(bytes) = client.receive_message(Channel::Reliable) {
        let msg = match ServerMessage::decode(&bytes) {
            Ok(msg) => msg,
            Err(e) => {
                if let Some(v) = peek_welcome_version(&bytes)
                    && v != PROTOCOL_VERSION
                {
                    let reason = version_mismatch(v);
                    leave(&mut client, &mut status, reason);
                    return;
                }
                stats.malformed += 1;
                debug!("dropped a server message: {e}");
                continue;
            }
        };
        match msg {
            ServerMessage::Welcome(welcome) => {
                if *status != ConnectionStatus::AwaitingWelcome {
                    stats.malformed += 1;
                    continue;
                }
                match accept_welcome(&welcome) {
                    Ok((map, tick)) => {
                        info!(
                            "joined \"{}\" as player {} on {} ({} Hz tick, {} Hz snapshots)",
                            welcome.server_name,
                            welcome.your_id.0,
                            welcome.map_name,
                            welcome.tick_hz,
                            welcome.snapshot_hz
                        );
                        fixed.set_timestep_hz(tick.tick_hz as f64);
                        commands.insert_resource(tick);
                        commands.insert_resource(map);
                        commands.spawn((
                            Player,
                            welcome.your_id,
                            PlayerState::default(),
                            LocalPlayer,
                        ));
                        *status = ConnectionStatus::Connected(ServerInfo { welcome });
                    }
                    Err(reason) => {
                        leave(&mut client, &mut status, reason);
                        return;
                    }
                }
            }
            ServerMessage::Refused { reason } => {
                let reason = format!("server refused the connection: {reason}");
                leave(&mut client, &mut status, reason);
                return;
            }
            ServerMessage::PlayerJoined { id, name, bot } => {
                info!("{name} joined");
                roster.0.insert(
                    id,
                    RosterEntry {
                        name,
                        bot,
                        ping_ms: None,
                        frags: 0,
                        deaths: 0,
                        team: None,
                    },
                );
            }
            ServerMessage::PlayerLeft { id, reason } => {
                if let Some(p) = roster.0.remove(&id) {
                    info!("{} left ({reason})", p.name);
                }
            }
            ServerMessage::Scoreboard(lines) => {
                for line in lines {
                    if let Some(p) = roster.0.get_mut(&line.id) {
                        p.ping_ms = line.ping_ms;
                        p.frags = line.frags;
                        p.deaths = line.deaths;
                        p.team = line.team;
                    }
                }
            }
            ServerMessage::Killed {
                victim,
                killer,
                weapon,
            } => {
                let name = |id| {
                    roster
                        .0
                        .get(&id)
                        .map_or("?".to_string(), |p: &RosterEntry| p.name.clone())
                };
                feed.0.push(crate::KillFeedEntry {
                    killer: name(killer),
                    victim: name(victim),
                    weapon,
                });
            }
            ServerMessage::Match {
                mode,
                fraglimit,
                time_left_s,
                intermission,
            } => {
                let winner = if intermission {
                    match_info.winner.take()
                } else {
                    None
                };
                *match_info = crate::MatchInfo {
                    team_game: mode == 1,
                    fraglimit,
                    time_left_s,
                    intermission,
                    winner,
                };
            }
            ServerMessage::MatchEnded { winner } => {
                info!("{winner}");
                match_info.intermission = true;
                match_info.winner = Some(winner);
            }
            ServerMessage::MapChange { map_name, map_hash } => {
                match load_map(&map_name, map_hash) {
                    Ok(map) => {
                        info!("the server moves to {map_name}");
                        commands.insert_resource(map);
                        for entity in &buffers {
                            commands
                                .entity(entity)
                                .insert(sightline_interpolation::SnapshotBuffer::default());
                        }
                    }
                    Err(reason) => {
                        leave(&mut client, &mut status, reason);
                        return;
                    }
                }
            }
            event @ (ServerMessage::HitConfirm { .. }
            | ServerMessage::Damaged { .. }
            | ServerMessage::Fired { .. }
            | ServerMessage::Exploded { .. }) => combat.0.push(event),
            ServerMessage::Chat { from, text } => {
                let name = roster.0.get(&from).map_or("?", |p| p.name.as_str());
                info!("{name}: {text}");
                chat.0.push((name.to_string(), text));
            }
        }
    }
}

fn version_mismatch(server: u32) -> String {
    format!(
        "cannot join: the server speaks protocol version {server}, this client speaks version \
         {PROTOCOL_VERSION}; use a client and server of the same release"
    )
}

/// Checks a Welcome against what this client has: same protocol, same map file.
fn accept_welcome(w: &Welcome) -> Result<(CurrentMap, TickConfig), String> {
    if w.protocol_version != PROTOCOL_VERSION {
        return Err(version_mismatch(w.protocol_version));
    }
    let tick = TickConfig::new(w.tick_hz, w.snapshot_hz)
        .map_err(|e| format!("server sent an unusable tick configuration: {e}"))?;
    Ok((load_map(&w.map_name, w.map_hash)?, tick))
}

/// Loads the map the server plays and checks it is the same file.
fn load_map(name: &str, hash: u64) -> Result<CurrentMap, String> {
    let map = MapSource::load(&find_map(name))
        .map_err(|e| format!("cannot load map \"{name}\" the server plays: {e}"))?;
    if map.hash != hash {
        return Err(format!(
            "map \"{name}\" differs from the server's copy (local hash {:016x}, server hash {hash:016x}); \
             install the server's version of the map",
            map.hash
        ));
    }
    Ok(CurrentMap::new(map))
}

/// Notices the transport going away (timeout, server shutdown, kick).
pub(crate) fn notice_disconnect(client: Res<RenetClient>, mut status: ResMut<ConnectionStatus>) {
    if client.is_disconnected() && !matches!(*status, ConnectionStatus::Disconnected(_)) {
        let reason = client
            .disconnect_reason()
            .map_or("connection lost".to_string(), |r| r.to_string());
        warn!("disconnected: {reason}");
        *status = ConnectionStatus::Disconnected(reason);
    }
}
