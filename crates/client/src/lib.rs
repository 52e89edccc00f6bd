//! Sightline's client core as a Bevy plugin, without rendering: it connects, says Hello,
//! checks the server's Welcome (protocol version, map hash), sends one input command per
//! tick with three redundant predecessors, and applies the snapshots it receives.
//!
//! The `sightline` binary runs it headless with a bot driving the inputs; the windowed
//! client adds rendering, prediction and interpolation on top of the same plugin.

mod clock;
mod connection;
mod input;
mod pacing;
mod snapshots;

pub use connection::{ConnectionStatus, DesiredName, Roster, RosterEntry, ServerInfo};
pub use input::{InputHistory, InputSource, LocalInput};
pub use pacing::{InputPacing, MAX_DILATION, TARGET_MIN_QUEUE};
pub use snapshots::{ClientStats, LatestSnapshot, PlayerSeen};

use bevy::prelude::*;
use sightline_interpolation::InterpolationPlugin;
use sightline_net::{ClockSync, RenetClient, RenetReceive, ServerClock};
use sightline_prediction::{PredictionPlugin, PredictionSet};
use sightline_sim::{SimSet, SimulationPlugin};

/// Forgets everything about the last server: players, map, statistics, prediction and
/// interpolation state. Run before connecting somewhere new.
pub fn reset_session(world: &mut World) {
    let players: Vec<Entity> = world
        .query_filtered::<Entity, With<sightline_sim::Player>>()
        .iter(world)
        .collect();
    for entity in players {
        world.despawn(entity);
    }
    world.remove_resource::<sightline_map::CurrentMap>();
    world.insert_resource(ConnectionStatus::default());
    world.insert_resource(Roster::default());
    world.insert_resource(LatestSnapshot::default());
    world.insert_resource(ClientStats::default());
    world.insert_resource(InputHistory::default());
    world.insert_resource(InputPacing::default());
    world.insert_resource(ChatLog::default());
    world.insert_resource(KillFeed::default());
    world.insert_resource(MatchInfo::default());
    world.insert_resource(CombatFeed::default());
    world.insert_resource(ClockSync::default());
    world.insert_resource(ServerClock::default());
    world.insert_resource(clock::PingSchedule::default());
    world.insert_resource(sightline_prediction::PredictionHistory::default());
    world.insert_resource(sightline_prediction::PredictionStats::default());
    world.insert_resource(sightline_prediction::ServerUpdate::default());
    world.insert_resource(sightline_interpolation::DelayEstimator::default());
    world.insert_resource(sightline_interpolation::StreamClock::default());
    world.insert_resource(sightline_interpolation::RenderTime::default());
    world.insert_resource(sightline_interpolation::InterpolationStats::default());
    world.insert_resource(sightline_sim::Tick::default());
}

/// One line of the kill feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillFeedEntry {
    /// Who killed.
    pub killer: String,
    /// Who died.
    pub victim: String,
    /// Weapon index.
    pub weapon: u8,
}

/// The match as the server last described it.
#[derive(Resource, Debug, Default, Clone, PartialEq, Eq)]
pub struct MatchInfo {
    /// Teams (red and blue) rather than everyone for themselves.
    pub team_game: bool,
    /// Frags that win; 0 for none.
    pub fraglimit: u16,
    /// Seconds left; 0 for no limit.
    pub time_left_s: u16,
    /// Whether the match is over and the next about to start.
    pub intermission: bool,
    /// Who won the match just ended.
    pub winner: Option<String>,
}

/// Deaths announced by the server, oldest first.
#[derive(Resource, Debug, Default)]
pub struct KillFeed(pub Vec<KillFeedEntry>);

/// Combat messages for presentation (hit markers, damage indicators, others' shots,
/// explosions); the game takes them each frame.
#[derive(Resource, Debug, Default)]
pub struct CombatFeed(pub Vec<sightline_protocol::ServerMessage>);

/// Chat lines received, oldest first, with who said them.
#[derive(Resource, Debug, Default)]
pub struct ChatLog(pub Vec<(String, String)>);

/// Marks the player this client controls.
#[derive(Component, Debug, Default, Clone, Copy)]
pub struct LocalPlayer;

/// Marks players controlled by others.
#[derive(Component, Debug, Default, Clone, Copy)]
pub struct RemotePlayer;

/// Client work outside the fixed tick, in `PreUpdate` after renet has received.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientSet {
    /// Handshake, roster, chat and snapshots.
    Receive,
}

/// The client core. Needs a transport ([`sightline_net::ClientNetPlugin`]).
pub struct ClientPlugin {
    /// Name to ask the server for.
    pub name: String,
    /// Where input commands come from.
    pub input: InputSource,
}

impl Plugin for ClientPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins((SimulationPlugin, PredictionPlugin, InterpolationPlugin))
            .insert_resource(DesiredName(self.name.clone()))
            .insert_resource(self.input.clone())
            .init_resource::<ConnectionStatus>()
            .init_resource::<Roster>()
            .init_resource::<LatestSnapshot>()
            .init_resource::<ClientStats>()
            .init_resource::<InputHistory>()
            .init_resource::<ChatLog>()
            .init_resource::<KillFeed>()
            .init_resource::<MatchInfo>()
            .init_resource::<CombatFeed>()
            .init_resource::<LocalInput>()
            .init_resource::<sightline_movement::MoveParams>()
            .init_resource::<ClockSync>()
            .init_resource::<ServerClock>()
            .init_resource::<InputPacing>()
            .init_resource::<clock::PingSchedule>()
            .configure_sets(
                PreUpdate,
                (
                    ClientSet::Receive.after(RenetReceive),
                    PredictionSet::Reconcile,
                )
                    .chain(),
            )
            .add_systems(
                PreUpdate,
                (
                    connection::send_hello,
                    connection::receive_reliable,
                    snapshots::receive_datagrams,
                    snapshots::apply_snapshot,
                    connection::notice_disconnect,
                )
                    .chain()
                    .in_set(ClientSet::Receive)
                    // Per system: a set's condition does not spare its systems' parameter
                    // checks, and between sessions there is no RenetClient.
                    .run_if(resource_exists::<RenetClient>),
            )
            .add_systems(
                Update,
                (
                    clock::send_pings,
                    clock::update_server_clock,
                    pacing::pace_ticks,
                )
                    .run_if(connection::in_game.and_then(resource_exists::<RenetClient>)),
            )
            .add_systems(
                FixedUpdate,
                (
                    input::sample_input.in_set(SimSet::ReadInputs),
                    input::send_inputs.in_set(SimSet::BuildSnapshots),
                )
                    .run_if(connection::in_game.and_then(resource_exists::<RenetClient>)),
            );
    }
}
