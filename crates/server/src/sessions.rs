//! The life of a connection: connecting, the handshake that makes it a player (or brings a
//! dropped player back), chat, the scoreboard, leaving, and being dropped when refused,
//! silent or idle.

use crate::ServerConfig;
use crate::changes::{Change, ChangeRequest, LastChanges};
use crate::chat::{self, Speaker};
use crate::conduct::{self, Offence};
use crate::connection::{
    ClientIndex, Connection, ConnectionStage, PlayerKeyOf, PlayerSlots, ping_seconds,
};
use crate::inbox::{AdminInbox, AdminLine, AdminOrigin};
use crate::inputs::InputBuffer;
use crate::interest::Interest;
use crate::names::unique_name;
use crate::outbox::{Outgoing, send_to_playing};
use crate::rate::DownloadRate;
use crate::resume::{Departed, DepartedPlayers, Resumable};
use crate::rules::MatchState;
use crate::sets::{CommandSource, ReceiveStep, ServerSet};
use crate::snapshots::{EventQueue, SnapshotCounter};
use crate::spawn::{choose_spawn, spawns_of};
use crate::spectators::{MatchNews, Spectator};
use crate::stats::ServerStats;
use crate::stream::SnapshotStream;
use crate::teams::team_for_newcomer;
use crate::votes::{VoteAction, VoteRequest};
use crate::wire::send_reliable;
use crate::{datagrams, inputs, resume};
use bevy::ecs::query::QueryData;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use sightline_combat::{Arsenal, Flags, Score, Team, ViewWindow, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::PlayerState;
use sightline_net::{ClientId, DisconnectReason, RenetServer, RenetServerEvent, ServerEvent};
use sightline_protocol::{
    Channel, ClientMessage, MAX_NAME_LEN, PROTOCOL_VERSION, ResumeSecret, ScoreLine, ServerMessage,
    ServerTextKind, TeamChoice, Welcome, Wire, clean_text,
};
use sightline_sim::{BotControlled, Player, PlayerId, PlayerName};

/// How long a connection may take to say Hello, seconds.
const HELLO_TIMEOUT: f64 = 10.0;
/// How long a refused client has to read why before it is dropped, seconds.
const REFUSAL_GRACE: f64 = 1.0;

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
    spectators: Query<&Spectator>,
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
                // Sent now, not through the outbox: a client welcomed later in this frame
                // was never told of this player (and may have been given its id).
                let others = connections.iter().filter(|c| c.client_id != *client_id);
                send_to_playing(&mut server, others, &left);
            } else if let Ok(spectator) = spectators.get(entity) {
                info!("{} stopped watching ({reason})", spectator.name);
            } else {
                info!("client {client_id} disconnected before joining ({reason})");
            }
            commands.entity(entity).despawn();
        }
    }
}

/// A player admitted this frame, whom later Hellos in the frame must not collide with.
struct Admitted {
    id: PlayerId,
    name: String,
    pos: Vec3,
    team: Option<Team>,
}

/// What admitting a player reads and changes.
#[derive(SystemParam)]
pub(crate) struct Admission<'w, 's> {
    commands: Commands<'w, 's>,
    players: PresentPlayers<'w, 's>,
    slots: ResMut<'w, PlayerSlots>,
    departed: ResMut<'w, DepartedPlayers>,
    holders: Query<'w, 's, (Entity, &'static Resumable, &'static PlayerId)>,
    spectators: Query<'w, 's, (), With<Spectator>>,
    leaving: Leaving<'w, 's>,
    index: Res<'w, ClientIndex>,
    config: Res<'w, ServerConfig>,
    map: Res<'w, CurrentMap>,
    flags: Res<'w, Flags>,
}

/// Reads every connection's reliable messages within its per-frame budget: a Hello makes
/// it a player, chat is passed on to everyone, junk and messages out of turn earn strikes.
pub(crate) fn handle_reliable_messages(
    mut server: ResMut<RenetServer>,
    mut connections: Query<(Entity, &mut Connection, Option<&mut Spectator>)>,
    mut admission: Admission,
    mut stats: ResMut<ServerStats>,
    mut outbox: MessageWriter<Outgoing>,
    time: Res<Time<Real>>,
    lag: Res<crate::stalls::FrameLag>,
    mut admin: Option<ResMut<AdminInbox>>,
    (mut changes, mut votes): (MessageWriter<ChangeRequest>, MessageWriter<VoteRequest>),
    state: Res<MatchState>,
) {
    let now = time.elapsed_secs_f64();
    let mut admitted: Vec<Admitted> = Vec::new();
    let mut watching = 0;
    let mut chat: Vec<Outgoing> = Vec::new();

    for (entity, mut conn, mut spectator) in &mut connections {
        if matches!(conn.stage, ConnectionStage::Refused { .. }) {
            continue; // its traffic is discarded unread (see `drop_refused`)
        }
        let mut bytes_left = conduct::FRAME_BYTES;
        let batch = conduct::take_budgeted(
            &mut server,
            conn.client_id,
            Channel::Reliable,
            conduct::frame_reliable(time.delta_secs_f64() + lag.0.as_secs_f64()),
            &mut bytes_left,
        );
        if batch.dropped > 0 {
            stats.over_budget = stats.over_budget.saturating_add(batch.dropped as u64);
            conn.offend(&mut server, Offence::Flood, now, &mut stats);
        }
        for bytes in batch.messages {
            if matches!(conn.stage, ConnectionStage::Refused { .. }) {
                break;
            }
            let msg = match ClientMessage::decode(&bytes) {
                Ok(msg) => msg,
                Err(_) => {
                    conn.offend_malformed(&mut server, bytes.is_empty(), now, &mut stats);
                    continue;
                }
            };
            match (msg, conn.stage) {
                (
                    ClientMessage::Hello {
                        protocol_version,
                        name,
                        resume,
                        player_key,
                    },
                    ConnectionStage::AwaitingHello { .. },
                ) => {
                    if refuse_other_version(&mut conn, &mut server, protocol_version, now) {
                        continue;
                    }
                    let player = admission.admit(
                        &mut server,
                        entity,
                        &mut conn,
                        &name,
                        resume,
                        &admitted,
                        now,
                    );
                    if player.is_some()
                        && let Some(key) = player_key
                    {
                        admission.commands.entity(entity).insert(PlayerKeyOf(key));
                    }
                    admitted.extend(player);
                }
                (
                    ClientMessage::Spectate {
                        protocol_version,
                        name,
                    },
                    ConnectionStage::AwaitingHello { .. },
                ) => {
                    if refuse_other_version(&mut conn, &mut server, protocol_version, now) {
                        continue;
                    }
                    if admission.watch(&mut server, entity, &mut conn, &name, watching, now) {
                        watching += 1;
                    }
                }
                (ClientMessage::Follow { target }, ConnectionStage::Playing)
                    if spectator.is_some() =>
                {
                    if let Some(spectator) = spectator.as_deref_mut() {
                        spectator.follow = target;
                    }
                }
                (
                    ClientMessage::Rate {
                        bytes_per_second,
                        snapshots_per_second,
                    },
                    ConnectionStage::Playing,
                ) => {
                    let stream = SnapshotStream::new(
                        &admission.config.tick,
                        admission.config.max_snapshot_hz,
                        snapshots_per_second,
                        bytes_per_second != 0,
                    );
                    let mut client = admission.commands.entity(entity);
                    client.insert(stream);
                    match bytes_per_second {
                        0 => client.remove::<DownloadRate>(),
                        rate => client.insert(DownloadRate::new(rate)),
                    };
                }
                (ClientMessage::Chat { text, team }, ConnectionStage::Playing) => {
                    let speaker = match admission.players.get(entity) {
                        Ok((&id, .., team)) => Some(Speaker::Player {
                            id,
                            team: team.copied(),
                        }),
                        Err(_) => spectator.as_deref().map(|s| Speaker::Spectator {
                            name: s.name.as_str(),
                        }),
                    };
                    let over = state.intermission.is_some();
                    let Some(line) = speaker.and_then(|s| chat::route(s, &text, team, over)) else {
                        continue;
                    };
                    if conn.allow_chat(now) {
                        log_chat(&line, &admission.players);
                        chat.push(line);
                    } else {
                        stats.refused_requests = stats.refused_requests.saturating_add(1);
                    }
                }
                (ClientMessage::Rename { name }, ConnectionStage::Playing) => {
                    changes.write(ChangeRequest {
                        entity,
                        client: conn.client_id,
                        change: Change::Name(name),
                    });
                }
                (ClientMessage::JoinTeam { choice }, ConnectionStage::Playing) => {
                    // Between watching and playing is a change of role; the rest, of side.
                    let watch = choice == TeamChoice::Spectator;
                    let change = match spectator.is_some() != watch {
                        true => Change::Role(choice),
                        false => Change::Team(choice),
                    };
                    changes.write(ChangeRequest {
                        entity,
                        client: conn.client_id,
                        change,
                    });
                }
                (ClientMessage::Ready, ConnectionStage::Playing) => {
                    changes.write(ChangeRequest {
                        entity,
                        client: conn.client_id,
                        change: Change::Ready,
                    });
                }
                (ClientMessage::CallVote { proposal }, ConnectionStage::Playing) => {
                    votes.write(VoteRequest {
                        entity,
                        client: conn.client_id,
                        what: VoteAction::Call(proposal),
                    });
                }
                (ClientMessage::Vote { yes }, ConnectionStage::Playing) => {
                    votes.write(VoteRequest {
                        entity,
                        client: conn.client_id,
                        what: VoteAction::Cast(yes),
                    });
                }
                (ClientMessage::Rcon { password, command }, ConnectionStage::Playing) => {
                    // Rcon shares chat's allowance: it is as cheap to send.
                    let queued = conn.allow_chat(now)
                        && admin.as_mut().is_some_and(|inbox| {
                            inbox.push(AdminLine {
                                origin: AdminOrigin::Player(conn.client_id),
                                line: command,
                                password: Some(password),
                                from: None,
                            })
                        });
                    if !queued {
                        let text = if admin.is_none() {
                            "remote admin is off on this server"
                        } else {
                            "rcon: too many commands; wait a moment"
                        };
                        let reply = ServerMessage::ServerText {
                            kind: ServerTextKind::Rcon,
                            text: text.into(),
                        };
                        outbox.write(Outgoing::To(conn.client_id, reply));
                    }
                }
                (msg, stage) => {
                    debug!(
                        "ignored {msg:?} from client {} in stage {stage:?}",
                        conn.client_id
                    );
                    conn.offend(&mut server, Offence::Unexpected, now, &mut stats);
                }
            }
        }
    }

    // Announce joins to everyone in the game, the newcomers included (after their
    // Welcome, sent at once).
    outbox.write_batch(admitted.into_iter().map(|p| {
        Outgoing::ToPlaying(ServerMessage::PlayerJoined {
            id: p.id,
            name: p.name,
            bot: false,
        })
    }));
    outbox.write_batch(chat);
}

impl Admission<'_, '_> {
    /// Makes a connection that said Hello a player, new or coming back, and welcomes it;
    /// or refuses it when the server is full.
    fn admit(
        &mut self,
        server: &mut RenetServer,
        entity: Entity,
        conn: &mut Connection,
        name: &str,
        resume: Option<ResumeSecret>,
        admitted: &[Admitted],
        now: f64,
    ) -> Option<Admitted> {
        let back = resume.and_then(|secret| self.come_back(&secret, server, admitted, now));
        let Some(id) = back.as_ref().map(|b| b.id).or_else(|| self.free_slot()) else {
            let most = self.config.max_players.min(crate::MAX_PLAYERS);
            let reason = format!("server is full ({most} players)");
            conn.refuse(server, reason, now);
            return None;
        };
        // A player taken over from a connection still present keeps its own name.
        let taken: Vec<&str> = self
            .players
            .iter()
            .filter(|p| back.as_ref().is_none_or(|b| *p.0 != b.id))
            .map(|p| p.1.0.as_str())
            .chain(admitted.iter().map(|a| a.name.as_str()))
            .collect();
        let wanted = back.as_ref().map_or(name, |b| b.name.as_str());
        let name = unique_name(&clean_text(wanted, MAX_NAME_LEN), &taken);
        let team = match &back {
            Some(b) => b.team,
            None => {
                let teams = self
                    .players
                    .iter()
                    .filter_map(|p| p.4.copied())
                    .chain(admitted.iter().filter_map(|a| a.team));
                team_for_newcomer(&self.config.rules, teams)
            }
        };
        let (state, vitals, arsenal, score) = match &back {
            Some(b) => (b.state, b.vitals, b.arsenal, b.score),
            None => {
                let occupied: Vec<Vec3> = self
                    .players
                    .iter()
                    .map(|p| p.2.pos)
                    .chain(admitted.iter().map(|a| a.pos))
                    .collect();
                let spawns = spawns_of(&self.map.def.spawns, &self.flags, team);
                let spawn = choose_spawn(&spawns, &occupied);
                let (state, vitals, arsenal) = sightline_combat::respawned(spawn);
                (state, vitals, arsenal, Score::default())
            }
        };
        let secret = Resumable::random();
        let mut player = self.commands.entity(entity);
        player.insert((
            player_components(
                id,
                name.clone(),
                (state, vitals, arsenal, score),
                self.config.tick,
                secret,
            ),
            SnapshotCounter::default(),
            // Present from the start, so two changes in one frame see the first.
            LastChanges::default(),
        ));
        if let Some(team) = team {
            player.insert(team);
        }
        conn.stage = ConnectionStage::Playing;
        conn.conduct.last_command_at = now;
        self.send_welcome(server, conn.client_id, Some(id), secret);
        let how = if back.is_some() {
            "came back"
        } else {
            "joined"
        };
        info!(
            "{name} {how} as player {} from client {}",
            id.0, conn.client_id
        );
        Some(Admitted {
            id,
            name,
            pos: state.pos,
            team,
        })
    }

    /// Makes a connection that asked to spectate a spectator and welcomes it, or refuses
    /// it when the spectators' places (less `admitted` this frame) are taken; whether it
    /// was taken.
    fn watch(
        &mut self,
        server: &mut RenetServer,
        entity: Entity,
        conn: &mut Connection,
        name: &str,
        admitted: usize,
        now: f64,
    ) -> bool {
        let max = usize::from(self.config.max_spectators);
        if self.spectators.iter().count() + admitted >= max {
            let reason = match max {
                0 => "this server takes no spectators".to_string(),
                n => format!("no room for spectators ({n})"),
            };
            conn.refuse(server, reason, now);
            return false;
        }
        let name = clean_text(name, MAX_NAME_LEN);
        info!("{name} watches from client {}", conn.client_id);
        self.commands.entity(entity).insert((
            Spectator::new(name),
            LastChanges::default(),
            SnapshotCounter::default(),
            EventQueue::default(),
        ));
        conn.stage = ConnectionStage::Playing;
        conn.conduct.last_command_at = now;
        // A resume secret is part of every Welcome; a spectator's is never honoured.
        self.send_welcome(server, conn.client_id, None, Resumable::random());
        true
    }

    /// The player a secret proves, coming back within the minute: from the departed, or
    /// from a connection the server has not yet noticed is dead (the client timed out
    /// first, or its address changed). A place is claimed once: a holder whose player
    /// was given to another connection earlier this frame (its components go only when
    /// the frame's commands apply) is no longer there to take.
    fn come_back(
        &mut self,
        secret: &ResumeSecret,
        server: &mut RenetServer,
        admitted: &[Admitted],
        now: f64,
    ) -> Option<Departed> {
        self.departed.take(secret, now).or_else(|| {
            let holder = self
                .holders
                .iter()
                .find(|(_, r, id)| r.0 == *secret && !admitted.iter().any(|a| a.id == **id))?
                .0;
            take_over(
                holder,
                &self.leaving,
                &self.index,
                server,
                &mut self.commands,
                now,
            )
        })
    }

    fn free_slot(&mut self) -> Option<PlayerId> {
        free_slot(&mut self.slots, &mut self.departed)
    }

    /// Welcomes a new player (or a spectator: no player), then names everyone already in
    /// the game.
    fn send_welcome(
        &self,
        server: &mut RenetServer,
        client: ClientId,
        id: Option<PlayerId>,
        secret: Resumable,
    ) {
        let present = self.players.iter().map(|p| (*p.0, p.1.0.as_str(), p.3));
        send_welcome(
            server,
            client,
            (&self.config, &self.map),
            (id, secret),
            present,
        );
    }
}

/// A free player id; a full server lets the longest-gone player's place go first.
pub(crate) fn free_slot(
    slots: &mut PlayerSlots,
    departed: &mut DepartedPlayers,
) -> Option<PlayerId> {
    slots.take().or_else(|| {
        let gone = departed.evict_oldest()?;
        slots.release(gone.id);
        slots.take()
    })
}

/// What makes a connection a player, besides its snapshots' numbering and its changes'
/// times (which a connection keeps when it goes from watching to playing): its id, name,
/// place in the world, input and events, and the secret to come back with.
pub(crate) fn player_components(
    id: PlayerId,
    name: String,
    (state, vitals, arsenal, score): (PlayerState, Vitals, Arsenal, Score),
    tick: sightline_sim::TickConfig,
    secret: Resumable,
) -> impl Bundle {
    (
        (Player, id, PlayerName(name), state),
        (
            InputBuffer::new(tick),
            EventQueue::default(),
            Interest::default(),
            ViewWindow::CLOSED,
            crate::catch_up::CatchUp::default(),
        ),
        (vitals, arsenal, score, secret),
    )
}

/// Welcomes a client as the player `id` (or as a spectator: `None`), then names everyone
/// in the game (`present`: id, name, whether a bot) and gives the host's message of the
/// day. Sent at once, not through the outbox: the Welcome must be the first message of
/// the client's session, ahead of whatever the outbox sends everyone in the game this
/// frame.
pub(crate) fn send_welcome<'a>(
    server: &mut RenetServer,
    client: ClientId,
    (config, map): (&ServerConfig, &CurrentMap),
    (id, secret): (Option<PlayerId>, Resumable),
    present: impl Iterator<Item = (PlayerId, &'a str, bool)>,
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
    for (other, name, bot) in present {
        let msg = ServerMessage::PlayerJoined {
            id: other,
            name: name.to_string(),
            bot,
        };
        send_reliable(server, client, &msg);
    }
    if !config.motd.is_empty() {
        let motd = ServerMessage::ServerText {
            kind: ServerTextKind::Motd,
            text: config.motd.clone(),
        };
        send_reliable(server, client, &motd);
    }
}

/// Refuses a client that speaks another protocol version, naming both; whether it did.
fn refuse_other_version(
    conn: &mut Connection,
    server: &mut RenetServer,
    version: u32,
    now: f64,
) -> bool {
    if version == PROTOCOL_VERSION {
        return false;
    }
    let reason = format!(
        "protocol mismatch: server speaks version {PROTOCOL_VERSION}, client speaks version \
         {version}"
    );
    conn.refuse(server, reason, now);
    true
}

/// Writes a chat line to the host's log, its speaker named (chat is rate limited, so
/// this is at most a line a second per connection).
fn log_chat(line: &Outgoing, players: &PresentPlayers) {
    let (Outgoing::ToPlaying(msg) | Outgoing::ToTeam(_, msg) | Outgoing::ToSpectators(msg)) = line
    else {
        return;
    };
    match msg {
        ServerMessage::Chat { from, text, team } => {
            let name = players.iter().find(|p| p.0 == from).map_or("?", |p| &p.1.0);
            let to = if *team { " (team)" } else { "" };
            info!("chat{to} {name}: {text}");
        }
        ServerMessage::SpectatorChat { name, text } => info!("chat (spectator) {name}: {text}"),
        _ => {}
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
        EventQueue,
        Interest,
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
                let reason = format!("kicked: no input for {} seconds", config.idle_kick_seconds);
                conn.kick(&mut server, reason, now, &mut stats);
            }
            ConnectionStage::AwaitingHello { since } if now - since > HELLO_TIMEOUT => {
                conn.refuse(&mut server, "no Hello received in time".into(), now);
            }
            _ => {}
        }
    }
}

/// Sends every client the scoreboard (frags, deaths, and round trips), once a second
/// (spectators each as their late world reaches it).
pub(crate) fn broadcast_scoreboard(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    server: Res<RenetServer>,
    mut news: MatchNews,
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
                (ping_seconds(c, &server) * 1000.0)
                    .round()
                    .clamp(0.0, u16::MAX as f64) as u16
            }),
            frags: score.frags,
            deaths: score.deaths,
            team: team.copied(),
            captures: score.captures.min(u32::from(u8::MAX)) as u8,
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    lines.sort_by_key(|l| l.id);
    news.tell(ServerMessage::Scoreboard(lines));
}

/// The sessions: connections and their slots, what they send (handshakes, chat, inputs),
/// the players they leave behind for a while, and the reliable messages of each frame.
pub(crate) struct SessionsPlugin {
    /// Player slots, bots' included.
    pub(crate) max_players: u8,
}

impl Plugin for SessionsPlugin {
    fn build(&self, app: &mut App) {
        if self.max_players > crate::MAX_PLAYERS {
            warn!(
                "{} player slots asked for; a snapshot describes at most {}, so the server holds {}",
                self.max_players,
                crate::MAX_PLAYERS,
                crate::MAX_PLAYERS
            );
        }
        app.insert_resource(PlayerSlots::new(self.max_players))
            .init_resource::<ClientIndex>()
            .init_resource::<DepartedPlayers>()
            .add_message::<Outgoing>()
            .add_observer(on_server_event)
            .add_systems(
                PreUpdate,
                (
                    datagrams::strike_refused_packets,
                    handle_reliable_messages,
                    datagrams::receive_datagrams,
                    drop_refused,
                    resume::expire_departed,
                )
                    .chain()
                    .in_set(ReceiveStep::Sessions),
            )
            .add_systems(
                FixedUpdate,
                inputs::consume_inputs.in_set(CommandSource::Network),
            )
            .add_systems(Update, broadcast_scoreboard)
            .add_systems(
                PostUpdate,
                crate::outbox::send_outgoing.in_set(ServerSet::Send),
            );
    }
}
