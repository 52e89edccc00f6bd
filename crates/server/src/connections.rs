//! Connections: the handshake, joining and leaving, and chat.

use crate::conduct::{self, Conduct, Offence};
use crate::inputs::InputBuffer;
use crate::resume::{Departed, DepartedPlayers, Resumable};
use crate::snapshots::SnapshotCounter;
use crate::{ServerConfig, ServerStats, choose_spawn};
use bevy::ecs::query::QueryData;
use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use sightline_combat::{Arsenal, Score, Team, ViewWindow, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::PlayerState;
use sightline_net::{ClientId, DisconnectReason, RenetServer, RenetServerEvent, ServerEvent};
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
    /// Messages from it that failed to decode (saturating).
    pub malformed: u32,
    /// Its strikes and budgets.
    pub conduct: Conduct,
    chat_tokens: f32,
    chat_updated: f64,
}

impl Connection {
    fn new(client_id: ClientId, now: f64) -> Self {
        Self {
            client_id,
            stage: ConnectionStage::AwaitingHello { since: now },
            malformed: 0,
            conduct: Conduct::new(now),
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

/// Encodes a message to send. One above its cap would be refused by every peer; it can
/// only come from a server bug, so it is dropped with a warning instead of sent.
pub(crate) fn encoded(msg: &impl Wire) -> Option<Vec<u8>> {
    match msg.encode() {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            warn!("a message was not sent: {e}");
            None
        }
    }
}

/// Sends a reliable message to one client.
pub(crate) fn send_reliable(server: &mut RenetServer, client: ClientId, msg: &ServerMessage) {
    if let Some(bytes) = encoded(msg) {
        server.send_message(client, Channel::Reliable, bytes);
    }
}

/// Sends a reliable message to every client that is in the game.
pub(crate) fn send_to_playing<'a>(
    server: &mut RenetServer,
    connections: impl IntoIterator<Item = &'a Connection>,
    msg: &ServerMessage,
) {
    let Some(bytes) = encoded(msg) else {
        return;
    };
    for c in connections {
        if c.stage == ConnectionStage::Playing {
            server.send_message(c.client_id, Channel::Reliable, bytes.clone());
        }
    }
}

/// What a player leaves behind on disconnecting, to come back to.
#[derive(QueryData)]
pub(crate) struct LeavingPlayer {
    id: &'static PlayerId,
    name: &'static PlayerName,
    score: &'static Score,
    team: Option<&'static Team>,
    state: &'static PlayerState,
    vitals: &'static Vitals,
    arsenal: &'static Arsenal,
    secret: Option<&'static Resumable>,
}

/// Players as the disconnect handler and the take-over read them.
type Leaving<'w, 's> = Query<'w, 's, LeavingPlayer>;

/// Reacts to renet's connect and disconnect events. A player whose connection dropped
/// (anything but a kick) keeps their slot for a while, to come back to.
pub(crate) fn on_server_event(
    event: On<RenetServerEvent>,
    mut commands: Commands,
    mut index: ResMut<ClientIndex>,
    mut slots: ResMut<PlayerSlots>,
    mut departed: ResMut<DepartedPlayers>,
    mut server: ResMut<RenetServer>,
    time: Res<Time<Real>>,
    connections: Query<&Connection>,
    players: Leaving,
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
            if let Ok(player) = players.get(entity) {
                let (id, name) = (*player.id, player.name.0.clone());
                let kicked = matches!(reason, DisconnectReason::DisconnectedByServer);
                match record_of(player, time.elapsed_secs_f64()) {
                    Some(record) if !kicked => departed.0.push(record),
                    _ => slots.release(id),
                }
                info!("{name} left ({reason})");
                let left = ServerMessage::PlayerLeft {
                    id,
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
    mut departed: ResMut<DepartedPlayers>,
    holders: Query<(Entity, &Resumable)>,
    leaving: Leaving,
    index: Res<ClientIndex>,
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
        if matches!(conn.stage, ConnectionStage::Refused { .. }) {
            continue; // its traffic is discarded unread (see `receive_datagrams`)
        }
        let mut bytes_left = conduct::FRAME_BYTES;
        let batch = conduct::take_budgeted(
            &mut server,
            conn.client_id,
            Channel::Reliable,
            conduct::FRAME_RELIABLE,
            &mut bytes_left,
        );
        if batch.dropped > 0 {
            stats.over_budget = stats.over_budget.saturating_add(batch.dropped as u64);
            offend(&mut server, &mut conn, Offence::Flood, now, &mut stats);
        }
        for bytes in batch.messages {
            if matches!(conn.stage, ConnectionStage::Refused { .. }) {
                break;
            }
            let msg = match ClientMessage::decode(&bytes) {
                Ok(msg) => msg,
                Err(_) => {
                    offend_malformed(&mut server, &mut conn, bytes.is_empty(), now, &mut stats);
                    continue;
                }
            };
            match (msg, conn.stage) {
                (
                    ClientMessage::Hello {
                        protocol_version,
                        name,
                        resume,
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
                    // A player coming back within the minute, proven by their secret: from
                    // the departed, or from a connection the server has not yet noticed
                    // is dead (the client timed out first).
                    let back = resume.and_then(|secret| {
                        departed.take(&secret, now).or_else(|| {
                            let holder = holders.iter().find(|(_, r)| r.0 == secret)?.0;
                            take_over(holder, &leaving, &index, &mut server, &mut commands, now)
                        })
                    });
                    let id = match &back {
                        Some(record) => Some(record.id),
                        // A full server lets the longest-gone player's place go first.
                        None => slots.take().or_else(|| {
                            let gone = departed.evict_oldest()?;
                            slots.release(gone.id);
                            slots.take()
                        }),
                    };
                    let Some(id) = id else {
                        let reason = format!("server is full ({} players)", config.max_players);
                        refuse(&mut server, &mut conn, reason, now);
                        continue;
                    };
                    let taken: Vec<&str> = players
                        .iter()
                        .map(|p| p.1.0.as_str())
                        .chain(joined.iter().map(|j| j.1.as_str()))
                        .collect();
                    let wanted = back.as_ref().map_or(name.as_str(), |b| b.name.as_str());
                    let name = unique_name(&clean_text(wanted, MAX_NAME_LEN), &taken);
                    let occupied: Vec<Vec3> = players
                        .iter()
                        .map(|p| p.2.pos)
                        .chain(joined.iter().map(|j| j.2))
                        .collect();
                    let (state, vitals, arsenal, score) = match &back {
                        Some(b) => (b.state, b.vitals, b.arsenal, b.score),
                        None => {
                            let spawn = choose_spawn(&map.def.spawns, &occupied);
                            (
                                PlayerState::at(spawn.pos, spawn.yaw),
                                Vitals::spawned(),
                                Arsenal::default(),
                                Score::default(),
                            )
                        }
                    };
                    let secret = Resumable::random();
                    commands.entity(entity).insert((
                        Player,
                        id,
                        PlayerName(name.clone()),
                        state,
                        InputBuffer::new(config.tick),
                        SnapshotCounter::default(),
                        ViewWindow::CLOSED,
                        vitals,
                        arsenal,
                        score,
                        secret,
                    ));
                    let teams = players
                        .iter()
                        .filter_map(|p| p.4.copied())
                        .chain(joined_teams.iter().copied());
                    let team = match &back {
                        Some(b) => b.team,
                        None => crate::rules::team_for_newcomer(&config, teams),
                    };
                    if let Some(team) = team {
                        commands.entity(entity).insert(team);
                        joined_teams.push(team);
                    }
                    conn.stage = ConnectionStage::Playing;
                    conn.conduct.last_command_at = now;
                    send_welcome(
                        &mut server,
                        conn.client_id,
                        id,
                        secret,
                        &config,
                        &map,
                        &players,
                    );
                    info!(
                        "{name} {} as player {} from client {}",
                        if back.is_some() {
                            "came back"
                        } else {
                            "joined"
                        },
                        id.0,
                        conn.client_id
                    );
                    joined.push((id, name, state.pos));
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
                    debug!(
                        "ignored {msg:?} from client {} in stage {stage:?}",
                        conn.client_id
                    );
                    offend(&mut server, &mut conn, Offence::Unexpected, now, &mut stats);
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

/// Records an offence; past the threshold the connection is told why and kicked.
pub(crate) fn offend(
    server: &mut RenetServer,
    conn: &mut Connection,
    offence: Offence,
    now: f64,
    stats: &mut ServerStats,
) {
    stats.strikes = stats.strikes.saturating_add(u64::from(offence.weight()));
    if let Some(reason) = conn.conduct.strike(offence, now) {
        stats.kicks = stats.kicks.saturating_add(1);
        refuse(server, conn, reason, now);
    }
}

/// Moves a player still held by an older connection to the one that proved their secret:
/// the old connection is dropped without leaving a record, and its player returned as
/// departed for the new one to take.
fn take_over(
    entity: Entity,
    leaving: &Leaving,
    index: &ClientIndex,
    server: &mut RenetServer,
    commands: &mut Commands,
    now: f64,
) -> Option<Departed> {
    let record = record_of(leaving.get(entity).ok()?, now)?;
    if let Some((client, _)) = index.0.iter().find(|(_, e)| **e == entity) {
        server.disconnect(*client);
    }
    // Without a player, its disconnection leaves no record and frees no slot.
    commands.entity(entity).remove::<(
        Player,
        PlayerId,
        PlayerName,
        Resumable,
        InputBuffer,
        SnapshotCounter,
        ViewWindow,
        Team,
    )>();
    Some(record)
}

/// What a human player leaves behind to come back to (`None` for a bot, which has no
/// secret).
fn record_of(player: LeavingPlayerItem, at: f64) -> Option<Departed> {
    Some(Departed {
        secret: player.secret?.0,
        id: *player.id,
        name: player.name.0.clone(),
        team: player.team.copied(),
        score: *player.score,
        state: *player.state,
        vitals: *player.vitals,
        arsenal: *player.arsenal,
        at,
    })
}

/// Counts a message that failed to decode, and strikes its sender.
pub(crate) fn offend_malformed(
    server: &mut RenetServer,
    conn: &mut Connection,
    empty: bool,
    now: f64,
    stats: &mut ServerStats,
) {
    conn.malformed = conn.malformed.saturating_add(1);
    stats.malformed_packets = stats.malformed_packets.saturating_add(1);
    let offence = if empty {
        Offence::Empty
    } else {
        Offence::Malformed
    };
    offend(server, conn, offence, now, stats);
}

/// Counts a command no honest client could send, and strikes its sender.
pub(crate) fn refuse_command(
    server: &mut RenetServer,
    conn: &mut Connection,
    now: f64,
    stats: &mut ServerStats,
) {
    stats.refused_commands = stats.refused_commands.saturating_add(1);
    offend(server, conn, Offence::ImpossibleInput, now, stats);
}

pub(crate) fn refuse(server: &mut RenetServer, conn: &mut Connection, reason: String, now: f64) {
    info!("refused client {}: {reason}", conn.client_id);
    send_reliable(server, conn.client_id, &ServerMessage::Refused { reason });
    conn.stage = ConnectionStage::Refused { at: now };
}

fn send_welcome(
    server: &mut RenetServer,
    client: ClientId,
    id: PlayerId,
    secret: Resumable,
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
        resume: secret.0,
    });
    send_reliable(server, client, &welcome);
    for (other, name, _, bot, _) in players {
        let msg = ServerMessage::PlayerJoined {
            id: *other,
            name: name.0.clone(),
            bot,
        };
        send_reliable(server, client, &msg);
    }
}

/// `wanted`, or `wanted (2)`, `wanted (3)`... whichever is free, where a name is taken
/// when one in use looks like it (the same [`sightline_protocol::name_key`]: "ALICE" or a
/// Cyrillic "аlice" is not free beside "alice"). "player" if empty or reserved
/// ([`sightline_protocol::is_reserved_name`]): a host expects nobody to speak as "Server",
/// and "Server (2)" would still read as the server.
fn unique_name(wanted: &str, taken: &[&str]) -> String {
    let reserved = sightline_protocol::is_reserved_name(wanted);
    let base = if wanted.is_empty() || reserved {
        "player"
    } else {
        wanted
    };
    let taken: Vec<String> = taken
        .iter()
        .map(|t| sightline_protocol::name_key(t))
        .collect();
    let free = |name: &str| !taken.contains(&sightline_protocol::name_key(name));
    if free(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| {
            let suffix = format!(" ({n})");
            let mut cut = base.len().min(MAX_NAME_LEN - suffix.len());
            while !base.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}{suffix}", base[..cut].trim_end())
        })
        // Suffixes differ in their digits, which keys keep apart, so one of the first
        // `taken.len() + 1` is free.
        .find(|candidate| free(candidate))
        .expect("some suffix is free")
}

/// Disconnects refused clients after they had time to read why, clients that never
/// said Hello, and players from whom no command has come for too long.
pub(crate) fn drop_refused(
    mut server: ResMut<RenetServer>,
    mut connections: Query<&mut Connection>,
    mut stats: ResMut<ServerStats>,
    config: Res<ServerConfig>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed_secs_f64();
    for mut conn in &mut connections {
        match conn.stage {
            ConnectionStage::Refused { at } => {
                // What it sends now is discarded unread.
                let dropped = conduct::discard_all(&mut server, conn.client_id);
                stats.over_budget = stats.over_budget.saturating_add(dropped as u64);
                if now - at > REFUSAL_GRACE {
                    server.disconnect(conn.client_id);
                }
            }
            ConnectionStage::Playing if conn.conduct.idle(now, config.idle_kick_seconds) => {
                stats.kicks = stats.kicks.saturating_add(1);
                let reason = format!("kicked: no input for {} seconds", config.idle_kick_seconds);
                refuse(&mut server, &mut conn, reason, now);
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
        // A cut that ends on a space leaves no double space before the suffix.
        let spaced = format!("{} yyyy", "x".repeat(MAX_NAME_LEN - 5));
        assert_eq!(
            unique_name(&spaced, &[spaced.as_str()]),
            format!("{} (2)", "x".repeat(MAX_NAME_LEN - 5))
        );
    }

    #[test]
    fn names_that_look_alike_are_taken() {
        let taken = ["alice"];
        for alike in [
            "alice",
            "ALICE",
            "Alice",
            "\u{430}lice",
            "\u{FF41}\u{FF4C}\u{FF49}\u{FF43}\u{FF45}",
        ] {
            assert_eq!(
                unique_name(alike, &taken),
                format!("{alike} (2)"),
                "{alike:?}"
            );
        }
        // The suffixed names are compared by key as well.
        assert_eq!(unique_name("BOB", &["bob", "Bob (2)"]), "BOB (3)");
        assert_eq!(unique_name("B0b", &["bob"]), "B0b (2)");
        assert_eq!(unique_name("Bot 1", &["B0t l"]), "Bot 1 (2)");
        assert_eq!(unique_name("alicia", &taken), "alicia");
    }

    #[test]
    fn reserved_names_fall_back_to_the_default() {
        for reserved in [
            "Server",
            "server",
            "ADMIN",
            "Console",
            "System",
            "Sightline",
            "Adm1n",
        ] {
            assert_eq!(unique_name(reserved, &[]), "player", "{reserved:?}");
        }
        assert_eq!(unique_name("Server", &["player"]), "player (2)");
        assert_eq!(unique_name("Servers", &[]), "Servers");
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
