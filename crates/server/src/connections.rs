//! Connections: the handshake, joining and leaving, and chat.

use crate::inputs::InputBuffer;
use crate::snapshots::SnapshotCounter;
use crate::{ServerConfig, ServerStats, choose_spawn};
use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use sightline_combat::{Arsenal, Score, Team, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::PlayerState;
use sightline_net::{ClientId, RenetServer, RenetServerEvent, ServerEvent};
use sightline_protocol::{
    Channel, ClientMessage, MAX_CHAT_LEN, MAX_NAME_LEN, PROTOCOL_VERSION, ScoreLine, ServerMessage,
    Welcome, Wire, clean_text,
};
use sightline_sim::{BotControlled, Player, PlayerId, PlayerName};
use std::collections::BTreeSet;

/// How long a connection may take to say Hello, seconds.
const HELLO_TIMEOUT: f64 = 10.0;
/// How long a refused client has to read why before it is dropped, seconds.
const REFUSAL_GRACE: f64 = 1.0;
/// Chat lines a player may send in a burst, and lines regained per second.
const CHAT_BURST: f32 = 5.0;
const CHAT_PER_SECOND: f32 = 1.0;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConnectionStage {
    /// Connected at this time, waiting for Hello.
    AwaitingHello {
        /// When it connected, real seconds.
        since: f64,
    },
    /// Welcomed and in the game.
    Playing,
    /// Told why it may not play; dropped shortly after.
    Refused {
        /// When, real seconds.
        at: f64,
    },
}

/// One network connection; once playing, the same entity is its player.
#[derive(Component, Debug)]
pub struct Connection {
    /// renet's id for it.
    pub client_id: ClientId,
    /// Where it is in its life.
    pub stage: ConnectionStage,
    /// Messages from it that failed to decode.
    pub malformed: u32,
    chat_tokens: f32,
    chat_updated: f64,
}

impl Connection {
    fn new(client_id: ClientId, now: f64) -> Self {
        Self {
            client_id,
            stage: ConnectionStage::AwaitingHello { since: now },
            malformed: 0,
            chat_tokens: CHAT_BURST,
            chat_updated: now,
        }
    }

    fn allow_chat(&mut self, now: f64) -> bool {
        let regained = (now - self.chat_updated) as f32 * CHAT_PER_SECOND;
        self.chat_tokens = (self.chat_tokens + regained).min(CHAT_BURST);
        self.chat_updated = now;
        if self.chat_tokens >= 1.0 {
            self.chat_tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Finds a connection's entity by renet id.
#[derive(Resource, Default)]
pub struct ClientIndex(pub HashMap<ClientId, Entity>);

/// Player ids in use, bots included, up to the server's limit.
#[derive(Resource, Debug)]
pub struct PlayerSlots {
    max: u8,
    used: BTreeSet<u8>,
}

impl PlayerSlots {
    /// Room for `max` players.
    pub fn new(max: u8) -> Self {
        Self {
            max,
            used: BTreeSet::new(),
        }
    }

    /// Takes the lowest free id, if any.
    pub fn take(&mut self) -> Option<PlayerId> {
        let id = (0..self.max).find(|i| !self.used.contains(i))?;
        self.used.insert(id);
        Some(PlayerId(id))
    }

    /// Frees an id.
    pub fn release(&mut self, id: PlayerId) {
        self.used.remove(&id.0);
    }

    /// Players present.
    pub fn len(&self) -> usize {
        self.used.len()
    }

    /// Whether nobody is present.
    pub fn is_empty(&self) -> bool {
        self.used.is_empty()
    }
}

/// What the handshake needs to know of the players already in the game.
type PresentPlayers<'w, 's> = Query<
    'w,
    's,
    (
        &'static PlayerId,
        &'static PlayerName,
        &'static PlayerState,
        Has<BotControlled>,
        Option<&'static Team>,
    ),
>;

/// Sends a reliable message to every client that is in the game.
pub(crate) fn send_to_playing<'a>(
    server: &mut RenetServer,
    connections: impl IntoIterator<Item = &'a Connection>,
    msg: &ServerMessage,
) {
    let bytes = msg.encode();
    for c in connections {
        if c.stage == ConnectionStage::Playing {
            server.send_message(c.client_id, Channel::Reliable, bytes.clone());
        }
    }
}

/// Reacts to renet's connect and disconnect events.
pub(crate) fn on_server_event(
    event: On<RenetServerEvent>,
    mut commands: Commands,
    mut index: ResMut<ClientIndex>,
    mut slots: ResMut<PlayerSlots>,
    mut server: ResMut<RenetServer>,
    time: Res<Time<Real>>,
    connections: Query<&Connection>,
    players: Query<(&PlayerId, &PlayerName)>,
) {
    match &event.0 {
        ServerEvent::ClientConnected { client_id } => {
            let now = time.elapsed_secs_f64();
            let entity = commands.spawn(Connection::new(*client_id, now)).id();
            index.0.insert(*client_id, entity);
            info!("client {client_id} connected");
        }
        ServerEvent::ClientDisconnected { client_id, reason } => {
            let Some(entity) = index.0.remove(client_id) else {
                return;
            };
            if let Ok((id, name)) = players.get(entity) {
                slots.release(*id);
                info!("{} left ({reason})", name.0);
                let left = ServerMessage::PlayerLeft {
                    id: *id,
                    reason: reason.to_string(),
                };
                let others = connections.iter().filter(|c| c.client_id != *client_id);
                send_to_playing(&mut server, others, &left);
            } else {
                info!("client {client_id} disconnected before joining ({reason})");
            }
            commands.entity(entity).despawn();
        }
    }
}

/// Reads Hello and Chat messages from every connection.
pub(crate) fn handle_reliable_messages(
    mut commands: Commands,
    mut server: ResMut<RenetServer>,
    mut connections: Query<(Entity, &mut Connection)>,
    players: PresentPlayers,
    mut slots: ResMut<PlayerSlots>,
    mut stats: ResMut<ServerStats>,
    config: Res<ServerConfig>,
    map: Res<CurrentMap>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed_secs_f64();
    let mut joined: Vec<(PlayerId, String, Vec3)> = Vec::new();
    let mut joined_teams: Vec<Team> = Vec::new();
    let mut chat: Vec<ServerMessage> = Vec::new();

    for (entity, mut conn) in &mut connections {
        while let Some(bytes) = server.receive_message(conn.client_id, Channel::Reliable) {
            let msg = match ClientMessage::decode(&bytes) {
                Ok(msg) => msg,
                Err(e) => {
                    conn.malformed += 1;
                    stats.malformed_packets += 1;
                    debug!("dropped a message from client {}: {e}", conn.client_id);
                    continue;
                }
            };
            match (msg, conn.stage) {
                (
                    ClientMessage::Hello {
                        protocol_version,
                        name,
                    },
                    ConnectionStage::AwaitingHello { .. },
                ) => {
                    if protocol_version != PROTOCOL_VERSION {
                        let reason = format!(
                            "protocol mismatch: server speaks version {PROTOCOL_VERSION}, \
                             client speaks version {protocol_version}"
                        );
                        refuse(&mut server, &mut conn, reason, now);
                        continue;
                    }
                    let Some(id) = slots.take() else {
                        let reason = format!("server is full ({} players)", config.max_players);
                        refuse(&mut server, &mut conn, reason, now);
                        continue;
                    };
                    let taken: Vec<&str> = players
                        .iter()
                        .map(|p| p.1.0.as_str())
                        .chain(joined.iter().map(|j| j.1.as_str()))
                        .collect();
                    let name = unique_name(&clean_text(&name, MAX_NAME_LEN), &taken);
                    let occupied: Vec<Vec3> = players
                        .iter()
                        .map(|p| p.2.pos)
                        .chain(joined.iter().map(|j| j.2))
                        .collect();
                    let spawn = choose_spawn(&map.def.spawns, &occupied);
                    let buffer = InputBuffer::new(config.tick);
                    commands.entity(entity).insert((
                        Player,
                        id,
                        PlayerName(name.clone()),
                        PlayerState::at(spawn.pos, spawn.yaw),
                        buffer,
                        SnapshotCounter::default(),
                        Vitals::spawned(),
                        Arsenal::default(),
                        Score::default(),
                    ));
                    let teams = players
                        .iter()
                        .filter_map(|p| p.4.copied())
                        .chain(joined_teams.iter().copied());
                    if let Some(team) = crate::rules::team_for_newcomer(&config, teams) {
                        commands.entity(entity).insert(team);
                        joined_teams.push(team);
                    }
                    conn.stage = ConnectionStage::Playing;
                    send_welcome(&mut server, conn.client_id, id, &config, &map, &players);
                    info!(
                        "{name} joined as player {} from client {}",
                        id.0, conn.client_id
                    );
                    joined.push((id, name, spawn.pos));
                }
                (ClientMessage::Chat { text }, ConnectionStage::Playing) => {
                    let Ok((from, name, ..)) = players.get(entity) else {
                        continue;
                    };
                    let text = clean_text(&text, MAX_CHAT_LEN);
                    if text.is_empty() || !conn.allow_chat(now) {
                        continue;
                    }
                    info!("chat {}: {text}", name.0);
                    chat.push(ServerMessage::Chat { from: *from, text });
                }
                (msg, stage) => {
                    conn.malformed += 1;
                    stats.malformed_packets += 1;
                    debug!(
                        "ignored {msg:?} from client {} in stage {stage:?}",
                        conn.client_id
                    );
                }
            }
        }
    }

    // Announce joins to everyone in the game, the newcomers included.
    let conns: Vec<&Connection> = connections.iter().map(|(_, c)| c).collect();
    for (id, name, _) in joined {
        let msg = ServerMessage::PlayerJoined {
            id,
            name,
            bot: false,
        };
        send_to_playing(&mut server, conns.iter().copied(), &msg);
    }
    for msg in chat {
        send_to_playing(&mut server, conns.iter().copied(), &msg);
    }
}

fn refuse(server: &mut RenetServer, conn: &mut Connection, reason: String, now: f64) {
    info!("refused client {}: {reason}", conn.client_id);
    server.send_message(
        conn.client_id,
        Channel::Reliable,
        ServerMessage::Refused { reason }.encode(),
    );
    conn.stage = ConnectionStage::Refused { at: now };
}

fn send_welcome(
    server: &mut RenetServer,
    client: ClientId,
    id: PlayerId,
    config: &ServerConfig,
    map: &CurrentMap,
    players: &PresentPlayers,
) {
    let welcome = ServerMessage::Welcome(Welcome {
        protocol_version: PROTOCOL_VERSION,
        tick_hz: config.tick.tick_hz,
        snapshot_hz: config.tick.snapshot_hz(),
        server_name: config.name.clone(),
        map_name: map.def.name.clone(),
        map_hash: map.hash,
        your_id: id,
    });
    server.send_message(client, Channel::Reliable, welcome.encode());
    for (other, name, _, bot, _) in players {
        let msg = ServerMessage::PlayerJoined {
            id: *other,
            name: name.0.clone(),
            bot,
        };
        server.send_message(client, Channel::Reliable, msg.encode());
    }
}

/// `wanted`, or `wanted (2)`, `wanted (3)`... whichever is free; "player" if empty.
fn unique_name(wanted: &str, taken: &[&str]) -> String {
    let base = if wanted.is_empty() { "player" } else { wanted };
    if !taken.contains(&base) {
        return base.to_string();
    }
    (2..)
        .map(|n| {
            let suffix = format!(" ({n})");
            let mut cut = base.len().min(MAX_NAME_LEN - suffix.len());
            while !base.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}{suffix}", &base[..cut])
        })
        .find(|candidate| !taken.contains(&candidate.as_str()))
        .expect("some suffix is free")
}

/// Disconnects refused clients after they had time to read why, and clients that never
/// said Hello.
pub(crate) fn drop_refused(
    mut server: ResMut<RenetServer>,
    mut connections: Query<&mut Connection>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed_secs_f64();
    for mut conn in &mut connections {
        match conn.stage {
            ConnectionStage::Refused { at } if now - at > REFUSAL_GRACE => {
                server.disconnect(conn.client_id);
            }
            ConnectionStage::AwaitingHello { since } if now - since > HELLO_TIMEOUT => {
                refuse(
                    &mut server,
                    &mut conn,
                    "no Hello received in time".into(),
                    now,
                );
            }
            _ => {}
        }
    }
}

/// Sends every client the scoreboard (frags, deaths, and round trips), once a second.
pub(crate) fn broadcast_scoreboard(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    mut server: ResMut<RenetServer>,
    connections: Query<&Connection>,
    players: Query<(&PlayerId, &Score, Option<&Connection>, Option<&Team>)>,
) {
    let now = time.elapsed_secs_f64();
    if now - *last < 1.0 {
        return;
    }
    *last = now;
    let mut lines: Vec<ScoreLine> = players
        .iter()
        .map(|(id, score, conn, team)| ScoreLine {
            id: *id,
            ping_ms: conn.map(|c| {
                (server.rtt(c.client_id) * 1000.0)
                    .round()
                    .clamp(0.0, u16::MAX as f64) as u16
            }),
            frags: score.frags,
            deaths: score.deaths,
            team: team.map(|t| t.0),
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    lines.sort_by_key(|l| l.id);
    send_to_playing(
        &mut server,
        connections.iter(),
        &ServerMessage::Scoreboard(lines),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hand_out_the_lowest_free_id_up_to_the_limit() {
        let mut slots = PlayerSlots::new(2);
        assert_eq!(slots.take(), Some(PlayerId(0)));
        assert_eq!(slots.take(), Some(PlayerId(1)));
        assert_eq!(slots.take(), None);
        slots.release(PlayerId(0));
        assert_eq!(slots.take(), Some(PlayerId(0)));
        assert_eq!(slots.len(), 2);
    }

    #[test]
    fn names_are_made_unique() {
        assert_eq!(unique_name("ann", &[]), "ann");
        assert_eq!(unique_name("ann", &["ann"]), "ann (2)");
        assert_eq!(unique_name("ann", &["ann", "ann (2)"]), "ann (3)");
        assert_eq!(unique_name("", &[]), "player");
        let long = "x".repeat(MAX_NAME_LEN);
        let made = unique_name(&long, &[long.as_str()]);
        assert!(made.len() <= MAX_NAME_LEN && made.ends_with(" (2)"));
    }

    #[test]
    fn chat_is_rate_limited() {
        let mut c = Connection::new(1, 0.0);
        let sent = (0..10).filter(|_| c.allow_chat(0.0)).count();
        assert_eq!(sent, CHAT_BURST as usize);
        assert!(!c.allow_chat(0.5));
        assert!(c.allow_chat(1.6));
    }
}
