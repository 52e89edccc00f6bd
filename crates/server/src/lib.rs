//! Sightline's authoritative server as a Bevy plugin. The `sightline-server` binary wraps
//! it with a UDP transport and a run loop; tests and the client's offline mode embed it.
//!
//! Per tick, in [`SimSet`] order: each connected player's next buffered command is taken
//! (or the last one repeated), bots decide, everyone moves, and on snapshot ticks every
//! client gets the players it could see or hear ([`Interest`]) with its own
//! acknowledgements, as changes from a snapshot it holds. Once a frame, after the ticks, the
//! reliable messages they and the other systems wrote go out ([`ServerSet::Send`]).

// Modules, bottom up: each uses only those listed before it (and the config below);
// `scripts/module-cycles` checks that none import each other in a circle.

// The counters.
mod stats;
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
mod snapshots;
// Match rules, and sides in team games.
mod rules;
mod teams;
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
// The server on a thread of its own (offline play, the harness).
mod thread;

pub use conduct::{Conduct, KICK_STRIKES, Offence};
pub use connection::{ClientIndex, Connection, ConnectionStage, PlayerSlots};
pub use cvars::{cvar, map_list, server_cvar_registry};
pub use inputs::{
    HOLD_GRACE_SECONDS, HOLD_SHARE, InputBuffer, InputTiming, MAX_BUFFERED_SECONDS,
    MAX_SEQ_AHEAD_SECONDS, Push,
};
pub use interest::{HEAR_RADIUS, Interest, LINGER_SECONDS, REFRESH_TICKS, SIGHT_MARGIN, could_see};
pub use resume::{Departed, DepartedPlayers, RESUME_SECONDS, Resumable};
pub use rules::{INTERMISSION, MatchRules, MatchState};
pub use sightline_combat::GameMode;
pub use snapshots::SnapshotCounter;
pub use spawn::choose_spawn;
pub use stalls::{FrameLag, MAX_STALL_CATCH_UP, STALL_SECONDS, Stalls, TickCost};
pub use stats::{SLICE_BYTES, ServerStats, SnapshotStats, TickTimes};
pub use teams::smaller_team;
pub use thread::ServerThread;

use bevy::prelude::*;
use sightline_combat::{CombatPlugin, CombatSystems};
use sightline_map::CurrentMap;
use sightline_movement::MovementPlugin;
pub use sightline_net::Pacing;
use sightline_net::{RenetReceive, RenetSend, ServerNetPlugin, paced_app};
use sightline_sim::{SimSet, SimulationPlugin, TickConfig};

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
        }
    }
}

/// The one place a server app is assembled: the dedicated server, offline play, the
/// chaos soak (all [`Pacing::RealTime`]) and the in-process stepper ([`Pacing::Manual`])
/// differ only in their clock and their transport, `net`.
pub fn server_app(
    config: ServerConfig,
    map: CurrentMap,
    net: ServerNetPlugin,
    pacing: Pacing,
) -> App {
    let dt = std::time::Duration::from_nanos(1_000_000_000 / config.tick.tick_hz.max(1) as u64);
    let real_time = pacing.is_real_time();
    let mut app = paced_app(pacing, dt);
    if real_time {
        app.add_systems(
            PreUpdate,
            // After the socket is read: the lag covers all the time the datagrams had to
            // arrive.
            stalls::measure_frame_lag
                .after(RenetReceive)
                .before(ServerSet::Receive),
        );
    }
    app.add_plugins((net, ServerPlugin { config, map }));
    app
}

/// Where the players' commands come from, each tick in [`SimSet::ReadInputs`]: every
/// source a set of systems writing players' `CurrentCmd`. Another source, such as a
/// demo's recorded commands, takes one's place with
/// [`CommandSourcesExt::replace_command_source`] and drives the same simulation.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandSource {
    /// Connected players' commands from the network, through their input buffers.
    Network,
    /// The bots' brains.
    Bots,
}

/// Replacing a [`CommandSource`] of a server app.
pub trait CommandSourcesExt {
    /// Stops `source` and runs `systems` in its place, in [`SimSet::ReadInputs`].
    fn replace_command_source<M>(
        &mut self,
        source: CommandSource,
        systems: impl IntoScheduleConfigs<bevy::ecs::system::ScheduleSystem, M>,
    ) -> &mut Self;
}

impl CommandSourcesExt for App {
    fn replace_command_source<M>(
        &mut self,
        source: CommandSource,
        systems: impl IntoScheduleConfigs<bevy::ecs::system::ScheduleSystem, M>,
    ) -> &mut Self {
        self.configure_sets(FixedUpdate, source.run_if(|| false))
            .add_systems(FixedUpdate, systems.in_set(SimSet::ReadInputs))
    }
}

/// Work the server does outside the fixed tick, around renet's receiving and sending.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerSet {
    /// Handshakes, chat, input packets: in `PreUpdate`, after renet has received.
    Receive,
    /// The reliable messages of the frame: in `PostUpdate`, before renet sends.
    Send,
}

/// The authoritative game server. Needs a [`CurrentMap`] and a transport
/// ([`sightline_net::ServerNetPlugin`]).
pub struct ServerPlugin {
    /// How the server is set up.
    pub config: ServerConfig,
    /// The map to play.
    pub map: CurrentMap,
}

impl Plugin for ServerPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(self.config.tick)
            .insert_resource(self.config.clone())
            .insert_resource(self.map.clone())
            .add_plugins((SimulationPlugin, MovementPlugin, CombatPlugin))
            .insert_resource(PlayerSlots::new(self.config.max_players))
            .init_resource::<ClientIndex>()
            .init_resource::<ServerStats>()
            .init_resource::<TickTimes>()
            .init_resource::<SnapshotStats>()
            .init_resource::<MatchState>()
            .init_resource::<DepartedPlayers>()
            .init_resource::<Stalls>()
            .add_message::<outbox::Outgoing>()
            .configure_sets(
                FixedUpdate,
                (CommandSource::Network, CommandSource::Bots).in_set(SimSet::ReadInputs),
            )
            .configure_sets(PreUpdate, ServerSet::Receive.after(RenetReceive))
            .configure_sets(PostUpdate, ServerSet::Send.before(RenetSend))
            .add_observer(sessions::on_server_event)
            .init_resource::<stalls::TickCost>()
            .init_resource::<stalls::FrameLag>()
            .add_systems(Startup, bots::spawn_bots)
            .add_systems(
                PreUpdate,
                (
                    stalls::notice_stalls,
                    datagrams::strike_refused_packets,
                    sessions::handle_reliable_messages,
                    datagrams::receive_datagrams,
                    sessions::drop_refused,
                    resume::expire_departed,
                )
                    .chain()
                    .in_set(ServerSet::Receive),
            )
            .add_systems(
                FixedUpdate,
                (
                    stats::start_tick_timer.before(SimSet::BeginTick),
                    inputs::consume_inputs.in_set(CommandSource::Network),
                    bots::drive_bots.in_set(CommandSource::Bots),
                    (combat::respawn_players, rules::run_match)
                        .chain()
                        .in_set(SimSet::Combat)
                        .after(CombatSystems),
                    rules::freeze_during_intermission
                        .after(SimSet::ReadInputs)
                        .before(SimSet::Move),
                    (interest::refresh_interest, snapshots::send_snapshots)
                        .chain()
                        .in_set(SimSet::BuildSnapshots),
                    stats::end_tick_timer.after(SimSet::BuildSnapshots),
                ),
            )
            .add_systems(
                Update,
                (
                    status::log_every_minute,
                    sessions::broadcast_scoreboard,
                    rules::broadcast_match,
                    combat::send_combat_events,
                ),
            )
            .add_systems(PostUpdate, outbox::send_outgoing.in_set(ServerSet::Send))
            .add_systems(Last, (status::log_on_exit, stalls::allow_catching_up));
    }
}
