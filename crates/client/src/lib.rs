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

pub use connection::{ConnectionStatus, Roster, RosterEntry, ServerInfo};
pub use input::{InputHistory, InputSource};
pub use pacing::{InputPacing, MAX_DILATION, TARGET_MIN_QUEUE};
pub use snapshots::{ClientStats, LatestSnapshot, PlayerSeen};

use bevy::prelude::*;
use sightline_interpolation::InterpolationPlugin;
use sightline_net::{ClockSync, RenetReceive, ServerClock};
use sightline_prediction::{PredictionPlugin, PredictionSet};
use sightline_sim::{SimSet, SimulationPlugin};

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
            .insert_resource(connection::PlayerName(self.name.clone()))
            .insert_resource(self.input.clone())
            .init_resource::<ConnectionStatus>()
            .init_resource::<Roster>()
            .init_resource::<LatestSnapshot>()
            .init_resource::<ClientStats>()
            .init_resource::<InputHistory>()
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
                    .in_set(ClientSet::Receive),
            )
            .add_systems(
                Update,
                (
                    clock::send_pings,
                    clock::update_server_clock,
                    pacing::pace_ticks,
                )
                    .run_if(connection::in_game),
            )
            .add_systems(
                FixedUpdate,
                (
                    input::sample_input.in_set(SimSet::ReadInputs),
                    input::send_inputs.in_set(SimSet::BuildSnapshots),
                )
                    .run_if(connection::in_game),
            );
    }
}
