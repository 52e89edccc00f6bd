//! Sightline's authoritative game server as a Bevy plugin: the game itself, with nothing
//! of the host's tools. The dedicated server (`sightline-dedicated`) adds those around
//! it; offline play, demos' playback and the tests embed it as it is.
//!
//! Per tick, in [`SimSet`](sightline_sim::SimSet) order: each connected player's next
//! buffered command is taken (or the last one repeated), bots decide ([`CommandSource`]),
//! everyone moves, and on snapshot ticks every client gets the players it could see or
//! hear ([`Interest`]) with its own acknowledgements, as changes from a snapshot it holds.
//! Once a frame, after the ticks, the reliable messages they and the other systems wrote
//! go out ([`ServerSet::Send`]). [`server_app`] assembles it all.

// Modules, bottom up: each uses only those listed before it;
// `scripts/module-cycles` checks that none import each other in a circle.

// What a server is and runs, and how its matches are played; the sets its systems run in.
mod config;
mod sets;
// The counters a host reads, and the distributions it may observe.
mod stats;
// Console lines for the server from its host, and where each came from.
mod inbox;
// The server's own stalls, told from overruns by the tick times.
mod stalls;
// Shared by many: strikes and budgets (which allow for stalls), where players appear,
// their names, encoding and sending at once.
mod conduct;
mod names;
mod spawn;
mod wire;
// One connection (its stage, conduct and slot), the outbox that sends game messages to
// every connection in the game or some of them, and where a chat line goes.
mod chat;
mod connection;
mod outbox;
// Each player's commands (a second one in a tick to repay a held one), which players
// each client is sent, how often and within what rate, and the snapshots that carry them.
mod catch_up;
mod inputs;
mod interest;
mod rate;
mod snapshots;
mod stream;
// Spectators: the world kept for them, and sent to them that much later.
mod spectators;
// Match rules and the awards at a match's end, sides in team games, a player's changes
// of name and side, and votes.
mod awards;
mod changes;
mod roles;
mod rules;
mod teams;
mod votes;
// What clients send: datagrams (inputs, pings), and the sessions' reliable messages (the
// handshake, chat, changes), which may bring back a player kept by resume.
mod datagrams;
mod resume;
mod sessions;
// The rest: combat told to clients, bots, every counter in one table, the status
// line, and the server as server lists see it (A2S queries, master announcements).
mod bots;
mod combat;
mod counters;
mod listing;
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

pub use awards::{MIN_SHOTS_FOR_ACCURACY, MatchRecords, PlayerMatch};
pub use bots::LeavingBot;
pub use catch_up::CatchUp;
pub use changes::CHANGE_INTERVAL;
pub use conduct::{Conduct, KICK_STRIKES, Offence};
pub use config::{
    DEFAULT_IDLE_KICK_SECONDS, DEFAULT_MAX_SPECTATORS, DEFAULT_SPECTATOR_DELAY, MAX_PLAYERS,
    MAX_SPECTATOR_DELAY, MatchRules, ServerConfig, VoteKind, VoteRules,
};
pub use connection::{
    ClientIndex, Connection, ConnectionStage, PlayerKeyOf, PlayerSlots, SWITCH_GRACE, ping_seconds,
};
pub use counters::{Counter, Counters};
pub use inbox::{AdminInbox, AdminLine, AdminOrigin, MAX_PENDING_LINES};
pub use inputs::{
    HOLD_GRACE_SECONDS, HOLD_SHARE, InputBuffer, InputTiming, MAX_BUFFERED_SECONDS,
    MAX_SEQ_AHEAD_SECONDS, Push,
};
pub use interest::{
    HEAR_RADIUS, Interest, LINGER_SECONDS, REFRESH_TICKS, SIGHT_LOOKAHEAD, SIGHT_MARGIN, could_see,
};
pub use listing::{Queries, QueryPlugin};
pub use outbox::Outgoing;
pub use playback::{
    DemoIndex, FASTEST, PLAYBACK_SPECTATORS, PlaybackControl, SLOWEST, Seek, playback_app,
};
pub use plugin::{ServerPlugin, server_app};
pub use rate::{DATAGRAM_OVERHEAD, DownloadRate, MAX_HELD_SNAPSHOTS, MIN_RATE, RATE_SHARE};
pub use replay::{
    DemoFile, Kill, Outcome, Standing, Verdict, check_map, open_demo, read_demo, verify_demo,
};
pub use resume::{Departed, DepartedPlayers, RESUME_SECONDS, Resumable};
pub use rules::{COUNTDOWN, INTERMISSION, MatchOrder, MatchOrders, MatchState, Ready};
pub use sets::{CommandSource, CommandSourcesExt, ServerSet};
pub use sightline_combat::GameMode;
pub use sightline_runtime::Pacing;
pub use snapshots::{EVENT_LIFETIME_S, EventQueue, MAX_QUEUED_EVENTS, SnapshotCounter};
pub use spawn::choose_spawn;
pub use spectators::{MatchNews, Spectator, SpectatorFeed};
pub use stalls::{FrameLag, MAX_STALL_CATCH_UP, STALL_SECONDS, Stalls, TickCost};
pub use stats::{
    HostingStats, Observe, Observers, SLICE_BYTES, ServerStats, SnapshotStats, TickTimes,
};
pub use stream::{FASTER_STREAM_SHARE, SnapshotStream, ticks_between};
pub use teams::{TeamRefusal, smaller_team, switch_team};
pub use thread::{LocalOrder, LocalOrders, OrderInbox, ServerThread, local_orders};
pub use votes::{Admin, MAX_VOTED_FRAGLIMIT, Votes};
