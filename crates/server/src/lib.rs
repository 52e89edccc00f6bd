//! Sightline's authoritative server as a Bevy plugin. The `sightline-server` binary wraps
//! it with a UDP transport and a run loop; tests and the client's offline mode embed it.
//!
//! Per tick, in [`SimSet`](sightline_sim::SimSet) order: each connected player's next
//! buffered command is taken (or the last one repeated), bots decide ([`CommandSource`]),
//! everyone moves, and on snapshot ticks every client gets the players it could see or
//! hear ([`Interest`]) with its own acknowledgements, as changes from a snapshot it holds.
//! Once a frame, after the ticks, the reliable messages they and the other systems wrote
//! go out ([`ServerSet::Send`]). [`server_app`] assembles it all.

// Modules, bottom up: each uses only those listed before it (and the config below);
// `scripts/module-cycles` checks that none import each other in a circle.

// Prometheus's registry and the distributions the tick observes, then the counters.
mod metrics;
mod stats;
// Console lines for the server from its host, and where each came from.
mod inbox;
// The server's own stalls, told from overruns by the tick times.
mod stalls;
// Shared by many: strikes and budgets (which allow for stalls), where players appear,
// encoding and sending at once.
mod conduct;
mod spawn;
mod wire;
// One connection (its stage, conduct and slot), and the outbox that sends game messages
// to every connection in the game.
mod connection;
mod outbox;
// Each player's commands, which players each client is sent, and the snapshots that
// carry them.
mod inputs;
mod interest;
mod rate;
mod snapshots;
// Spectators: the world kept for them, and sent to them that much later.
mod spectators;
// Match rules, and sides in team games.
mod rules;
mod teams;
// Players' lifetime statistics, written to SQLite by a thread of their own.
mod records;
// What clients send: datagrams (inputs, pings), and the sessions' reliable messages (the
// handshake, chat), which may bring back a player kept by resume.
mod datagrams;
mod resume;
mod sessions;
// The rest: combat told to clients, bots, the status line, and the host's settings as
// console variables.
mod bots;
mod combat;
mod cvars;
mod status;
// Demos: recording the commands each tick, and replaying them through the same systems.
pub mod demo;
// The server assembled, and on a thread of its own (offline play, the harness).
mod plugin;
mod thread;
// A demo replayed through that server, checked against what the game wrote, and played
// for spectators to watch.
mod playback;
mod replay;
// What only a dedicated server adds for its host: the bans kept on disk,
mod bans;
// the console's commands, and where its lines come from (the terminal, Source RCON);
// server queries and master announcements.
mod admin;
mod query;
mod rcon;
mod terminal;
// Running as an Agones GameServer (`--agones`).
mod agones;
// What operators' tools read: metrics and health over HTTP, and the log's shape and place.
mod logs;
mod telemetry;

pub use admin::{
    AdminPlugin, AdminSet, PasswordCheck, RCON_FAILURES_BEFORE_LOCKOUT, RCON_LOCKOUT,
    RCON_WRONG_BURST, RCON_WRONG_PER_SECOND, RconLockout, ServerCvars, admin_words, config_text,
};
pub use agones::{
    AgonesPlugin, AgonesSettings, AgonesStatus, DEFAULT_CONNECT_TIMEOUT, GAME_PORT_NAME,
    HEALTH_INTERVAL, PLAYERS_LIST,
};
pub use bans::{Ban, BanList, MAX_BAN_FILE_BYTES, MAX_BANS};
pub use conduct::{Conduct, KICK_STRIKES, Offence};
pub use connection::{ClientIndex, Connection, ConnectionStage, PlayerSlots};
pub use cvars::{cvar, map_list, server_cvar_registry};
pub use inbox::{AdminInbox, AdminLine, AdminOrigin, MAX_PENDING_LINES};
pub use inputs::{
    HOLD_GRACE_SECONDS, HOLD_SHARE, InputBuffer, InputTiming, MAX_BUFFERED_SECONDS,
    MAX_SEQ_AHEAD_SECONDS, Push,
};
pub use interest::{
    HEAR_RADIUS, Interest, LINGER_SECONDS, REFRESH_TICKS, SIGHT_LOOKAHEAD, SIGHT_MARGIN, could_see,
};
pub use logs::{LogFile, LogFormat, LogOutput, LogRotation, add_logging};
pub use metrics::{JsonPage, Metrics};
pub use playback::{
    DemoIndex, FASTEST, PLAYBACK_SPECTATORS, PlaybackControl, SLOWEST, Seek, playback_app,
};
pub use plugin::{CommandSource, CommandSourcesExt, ServerPlugin, ServerSet, server_app};
pub use query::{Queries, QueryPlugin};
pub use rate::{DATAGRAM_OVERHEAD, DownloadRate, MAX_HELD_SNAPSHOTS, MIN_RATE, RATE_SHARE};
pub use rcon::{
    ANSWER_CHUNK, AUTH_DEADLINE, MAX_CONNECTIONS, MAX_PER_HOST, MAX_REQUEST_SIZE,
    MAX_UNAUTHENTICATED, MAX_UNSENT, MAX_WAITING, RconListen, RconPacket, RconPlugin, RconSession,
    SERVERDATA_AUTH, SERVERDATA_AUTH_RESPONSE, SERVERDATA_EXECCOMMAND, SERVERDATA_RESPONSE_VALUE,
    UNAUTHENTICATED, admit_rcon,
};
pub use records::{
    Career, MAX_TOP, RecordsPlugin, STATS_FLUSH_SECONDS, STATS_QUEUE, StatsDatabase, StatsQuery,
    StatsQuestions, StatsWriter, TopRow, leaderboard_page,
};
pub use replay::{
    DemoFile, Kill, Outcome, Standing, Verdict, check_map, open_demo, read_demo, verify_demo,
};
pub use resume::{Departed, DepartedPlayers, RESUME_SECONDS, Resumable};
pub use rules::{INTERMISSION, MatchOrder, MatchOrders, MatchRules, MatchState};
pub use sightline_combat::GameMode;
pub use snapshots::{EVENT_LIFETIME_S, EventQueue, MAX_QUEUED_EVENTS, SnapshotCounter};
pub use spawn::choose_spawn;
pub use spectators::{
    DEFAULT_MAX_SPECTATORS, DEFAULT_SPECTATOR_DELAY, MAX_SPECTATOR_DELAY, Spectator, SpectatorFeed,
};
pub use stalls::{FrameLag, MAX_STALL_CATCH_UP, STALL_SECONDS, Stalls, TickCost};
pub use stats::{HostingStats, SLICE_BYTES, ServerStats, SnapshotStats, TickTimes};
pub use teams::smaller_team;
pub use telemetry::{
    HEALTH_TICK_TIMEOUT, MAX_REQUEST_BYTES, MAX_REQUESTS_PER_SECOND, RequestHead, Telemetry,
    TelemetryPlugin, parse_request_head,
};
pub use terminal::TerminalPlugin;
pub use thread::{LocalOrder, LocalOrders, OrderInbox, ServerThread, local_orders};

use bevy::prelude::*;
pub use sightline_net::Pacing;
use sightline_sim::TickConfig;

/// Default for [`ServerConfig::idle_kick_seconds`].
pub const DEFAULT_IDLE_KICK_SECONDS: f32 = 30.0;

/// What a server is and runs.
#[derive(Resource, Clone)]
pub struct ServerConfig {
    /// Name shown to players.
    pub name: String,
    /// Most players at once, bots included.
    pub max_players: u8,
    /// Bots to add at start.
    pub bots: u8,
    /// How well the bots fight.
    pub bot_skill: sightline_bots::BotSkill,
    /// How matches are played.
    pub rules: MatchRules,
    /// Tick and snapshot rates.
    pub tick: TickConfig,
    /// Seconds without a command after which a player is kicked; 0 never kicks. A
    /// playing client sends a command every tick, even standing still, so silence means
    /// a broken or hostile client holding a slot.
    pub idle_kick_seconds: f32,
    /// Message of the day, shown to each player on joining; empty for none.
    pub motd: String,
    /// Most spectators at once, beside the players (0: none taken).
    pub max_spectators: u8,
    /// How far behind the game spectators are shown it, seconds (at most
    /// [`MAX_SPECTATOR_DELAY`]).
    pub spectator_delay: f32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            name: "Sightline server".into(),
            max_players: 16,
            bots: 0,
            bot_skill: sightline_bots::BotSkill::Normal,
            rules: MatchRules::default(),
            tick: TickConfig::default(),
            idle_kick_seconds: DEFAULT_IDLE_KICK_SECONDS,
            motd: String::new(),
            max_spectators: DEFAULT_MAX_SPECTATORS,
            spectator_delay: DEFAULT_SPECTATOR_DELAY,
        }
    }
}
