//! Sightline's dedicated server: the game (`sightline-server`) with what only a host adds
//! around it. The `sightline-server` binary (main.rs) reads the host's flags and
//! settings into the game's [`ServerConfig`](sightline_server::ServerConfig) and adds the
//! plugins below; nothing in the game depends on them.

// Modules, bottom up: each uses only those listed before it;
// `scripts/module-cycles` checks that none import each other in a circle.

// Prometheus's registry and the distributions the game observes.
mod metrics;
// Players' lifetime statistics, written to SQLite by a thread of their own.
mod records;
// The host's settings as console variables, and the bans kept on disk.
mod bans;
mod cvars;
// The console's commands, and where its lines come from (the terminal, Source RCON).
// (Server queries and master announcements are the game's own: sightline-server's
// QueryPlugin, which a game hosted from the menu uses too.)
mod admin;
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
pub use cvars::{config_from_cvars, cvar, map_list, server_cvar_registry};
pub use logs::{LogFile, LogFormat, LogOutput, LogRotation, add_logging};
pub use metrics::{JsonPage, Metrics};
pub use rcon::{
    ANSWER_CHUNK, AUTH_DEADLINE, MAX_CONNECTIONS, MAX_PER_HOST, MAX_UNAUTHENTICATED, MAX_UNSENT,
    MAX_WAITING, RconListen, RconPlugin, RconSession, UNAUTHENTICATED, admit_rcon,
};
pub use records::{
    Career, MAX_TOP, RecordsPlugin, STATS_FLUSH_SECONDS, STATS_QUEUE, StatsDatabase, StatsQuery,
    StatsQuestions, StatsWriter, TopRow, leaderboard_page,
};
pub use telemetry::{
    HEALTH_TICK_TIMEOUT, MAX_REQUEST_BYTES, MAX_REQUESTS_PER_SECOND, RequestHead, Telemetry,
    TelemetryPlugin, operated_plugins, parse_request_head,
};
pub use terminal::TerminalPlugin;
