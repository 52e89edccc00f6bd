//! The sets the server's systems run in, which other code orders against or replaces.

use bevy::prelude::*;
use sightline_sim::SimSet;

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

/// The steps of [`ServerSet::Receive`], in order: the server's own stalls are noticed
/// before anyone is struck for what arrived during one.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ReceiveStep {
    /// Whether the last frame stalled.
    Stalls,
    /// Packets and messages from the sessions.
    Sessions,
    /// What the sessions asked for: renames, changes of side, votes.
    Requests,
}
