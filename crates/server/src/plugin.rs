//! The server assembled: `server_app`, the plugin that adds every system in its order,
//! the sets other code can order against, and the command sources a demo can replace.

use crate::{
    ClientIndex, DepartedPlayers, MatchState, PlayerSlots, ServerConfig, ServerStats,
    SnapshotStats, Stalls, TickTimes, bots, combat, datagrams, demo, inputs, interest, outbox,
    resume, rules, sessions, snapshots, spectators, stalls, stats, status,
};
use bevy::prelude::*;
use sightline_combat::{CombatPlugin, CombatSystems};
use sightline_map::CurrentMap;
use sightline_movement::MovementPlugin;
use sightline_net::{Pacing, RenetReceive, RenetSend, ServerNetPlugin, paced_app};
use sightline_sim::{SimSet, SimulationPlugin};

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
            .init_resource::<crate::stats::HostingStats>()
            .init_resource::<TickTimes>()
            .init_resource::<SnapshotStats>()
            .init_resource::<MatchState>()
            .init_resource::<rules::MatchOrders>()
            .init_resource::<DepartedPlayers>()
            .init_resource::<Stalls>()
            .init_resource::<spectators::SpectatorFeed>()
            .add_message::<outbox::Outgoing>()
            .configure_sets(
                FixedUpdate,
                (CommandSource::Network, CommandSource::Bots).in_set(SimSet::ReadInputs),
            )
            .configure_sets(PreUpdate, ServerSet::Receive.after(RenetReceive))
            .configure_sets(PostUpdate, ServerSet::Send.before(RenetSend))
            .add_observer(sessions::on_server_event)
            // At start-up, so the first tick has its bots; then whenever `bots` changes.
            .add_systems(Startup, bots::keep_bot_count)
            // Bots route through the map being played: built at start and on a change.
            .add_systems(
                PreUpdate,
                bots::build_nav_graph.run_if(resource_exists_and_changed::<CurrentMap>),
            )
            .init_resource::<stalls::TickCost>()
            .init_resource::<stalls::FrameLag>()
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
                    (
                        interest::refresh_interest,
                        snapshots::send_snapshots,
                        snapshots::send_weapon_checks,
                        (
                            spectators::keep_world_for_spectators,
                            spectators::send_to_spectators,
                        )
                            .chain()
                            .run_if(|config: Res<ServerConfig>| config.max_spectators > 0),
                    )
                        .chain()
                        .in_set(SimSet::BuildSnapshots),
                    stats::end_tick_timer.after(SimSet::BuildSnapshots),
                    // What was decided, before anyone moves; and what the tick left.
                    demo::record_tick
                        .after(rules::freeze_during_intermission)
                        .before(SimSet::Move)
                        .run_if(resource_exists::<demo::DemoRecorder>),
                    demo::remember_tick_end
                        .after(SimSet::BuildSnapshots)
                        .run_if(resource_exists::<demo::DemoRecorder>),
                ),
            )
            .add_systems(
                Update,
                (
                    bots::keep_bot_count,
                    status::log_every_minute,
                    sessions::broadcast_scoreboard,
                    rules::broadcast_match,
                    combat::send_combat_events,
                ),
            )
            .add_systems(PostUpdate, outbox::send_outgoing.in_set(ServerSet::Send))
            .add_systems(
                Last,
                (
                    status::log_on_exit,
                    stalls::allow_catching_up,
                    demo::finish_on_exit.run_if(resource_exists::<demo::DemoRecorder>),
                ),
            );
    }
}
