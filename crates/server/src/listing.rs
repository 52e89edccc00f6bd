//! The server seen from outside its games: Valve's A2S queries (info, players, rules) on
//! the game's UDP port, so server lists, panels and the game's own browser (its LAN tab
//! too) can read it; and its announcements to master lists, answering each master's
//! challenge. Both ride the transport's connectionless datagrams ([`Connectionless`]),
//! which never reach netcode and never cost a strike. The dedicated server and a game
//! hosted from the game's menu both list themselves this way.

use crate::config::ServerConfig;
use crate::connection::Connection;
use crate::rules::MatchState;
use crate::stats::HostingStats;
use bevy::prelude::*;
use sightline_combat::Score;
use sightline_map::CurrentMap;
use sightline_net::{Connectionless, UdpServerTransport};
use sightline_protocol::PROTOCOL_VERSION;
use sightline_query::{
    Announcer, Answer, PlayerInfo, QuerySource, Responder, ServerInfo, is_connectionless,
};
use sightline_sim::{BotControlled, PlayerName};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Answers queries, and announces the server to `masters` every `interval`.
pub struct QueryPlugin {
    /// Master lists to announce to (none: unlisted).
    pub masters: Vec<SocketAddr>,
    /// Time between announcements.
    pub interval: Duration,
}

/// The responder and the announcer.
#[derive(Resource)]
pub struct Queries {
    responder: Responder,
    announcer: Option<Announcer>,
    /// The transport's relay generation last announced.
    relay_generation: u64,
}

impl Plugin for QueryPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Queries {
            responder: Responder::new(),
            announcer: (!self.masters.is_empty())
                .then(|| Announcer::new(self.masters.clone(), self.interval)),
            relay_generation: 0,
        })
        .add_systems(Update, (answer_queries, announce).chain());
    }
}

/// What a query reads of the server, gathered only when a query came.
struct View {
    info: ServerInfo,
    players: Vec<PlayerInfo>,
    rules: Vec<(String, String)>,
}

impl QuerySource for View {
    fn info(&self) -> ServerInfo {
        self.info.clone()
    }
    fn players(&self) -> Vec<PlayerInfo> {
        self.players.clone()
    }
    fn rules(&self) -> Vec<(String, String)> {
        self.rules.clone()
    }
}

/// What [`answer_queries`] reads to describe the server.
#[derive(bevy::ecs::system::SystemParam)]
struct ServerFacts<'w, 's> {
    config: Res<'w, ServerConfig>,
    map: Res<'w, CurrentMap>,
    state: Res<'w, MatchState>,
    transport: Option<Res<'w, UdpServerTransport>>,
    time: Res<'w, Time<Real>>,
    players: Query<
        'w,
        's,
        (
            &'static PlayerName,
            &'static Score,
            Option<&'static Connection>,
            Has<BotControlled>,
        ),
    >,
}

impl ServerFacts<'_, '_> {
    fn view(&self) -> View {
        let now = self.time.elapsed_secs_f64();
        let players: Vec<PlayerInfo> = self
            .players
            .iter()
            .map(|(name, score, conn, _)| PlayerInfo {
                name: name.0.clone(),
                score: score.frags,
                duration: (now - conn.map_or(0.0, |c| c.connected_at)) as f32,
            })
            .collect();
        let bots = self.players.iter().filter(|p| p.3).count();
        let password = self
            .transport
            .as_ref()
            .is_some_and(|t| t.password_protected());
        let rules = &self.config.rules;
        let left = if rules.timelimit > 0.0 {
            (rules.timelimit - self.state.elapsed).max(0.0)
        } else {
            0.0
        };
        View {
            info: ServerInfo {
                name: self.config.name.clone(),
                map: self.map.def.name.clone(),
                players: players.len().min(255) as u8,
                max_players: self.config.max_players,
                bots: bots.min(255) as u8,
                password,
                version: env!("CARGO_PKG_VERSION").into(),
                keywords: rules.mode.keyword().into(),
                port: self
                    .transport
                    .as_ref()
                    .map_or(0, |t| t.public_addr().port()),
                ..ServerInfo::default()
            },
            players,
            rules: vec![
                ("mode".into(), rules.mode.keyword().into()),
                ("fraglimit".into(), rules.fraglimit.to_string()),
                ("timelimit".into(), (rules.timelimit / 60.0).to_string()),
                ("time_left".into(), format!("{left:.0}")),
                ("sv_tickrate".into(), self.config.tick.tick_hz.to_string()),
                ("protocol".into(), PROTOCOL_VERSION.to_string()),
                ("sv_password".into(), u8::from(password).to_string()),
            ],
        }
    }
}

/// Answers this frame's A2S queries and masters' challenges.
fn answer_queries(
    mut datagrams: ResMut<Connectionless>,
    mut queries: ResMut<Queries>,
    mut stats: ResMut<HostingStats>,
    facts: ServerFacts,
) {
    if datagrams.inbox.is_empty() {
        return;
    }
    let now = Instant::now();
    let inbox = std::mem::take(&mut datagrams.inbox);
    let mut view: Option<View> = None;
    for (from, bytes) in &inbox {
        let queries = &mut *queries;
        if let Some(announcer) = &mut queries.announcer
            && let Some(reply) = announcer.answer(*from, bytes, PROTOCOL_VERSION)
        {
            datagrams.send(*from, reply);
            stats.queries += 1;
            continue;
        }
        if !is_connectionless(bytes) {
            stats.queries_dropped += 1;
            continue;
        }
        let view = view.get_or_insert_with(|| facts.view());
        // The port the asker dialled: a browser joins that port of the address it asked.
        if let Some(transport) = &facts.transport {
            view.info.port = transport.port_for(*from);
        }
        match queries.responder.answer(*from, bytes, now, view) {
            Answer::Replies(replies) => {
                stats.queries += 1;
                for reply in replies {
                    datagrams.send(*from, reply);
                }
            }
            Answer::Dropped(_) => stats.queries_dropped += 1,
        }
    }
    datagrams.inbox = inbox;
}

/// Sends the heartbeats that are due, and at once when a relay gave the server a new
/// address (the transport sends them to the masters through the relay).
fn announce(
    mut datagrams: ResMut<Connectionless>,
    mut queries: ResMut<Queries>,
    transport: Option<Res<UdpServerTransport>>,
) {
    let generation = transport.map_or(0, |t| t.relay_generation());
    let queries = &mut *queries;
    if let Some(announcer) = &mut queries.announcer {
        if generation != queries.relay_generation {
            queries.relay_generation = generation;
            announcer.announce_now();
        }
        for (to, bytes) in announcer.due(Instant::now()) {
            datagrams.send(to, bytes);
        }
    }
}
