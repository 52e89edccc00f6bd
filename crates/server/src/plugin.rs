//! The server assembled: `server_app`, and the plugin that adds one plugin per concern
//! (each in its own module, with its state and its systems) in the sets of `sets`.

use crate::ServerConfig;
use crate::awards::AwardsPlugin;
use crate::bots::BotsPlugin;
use crate::catch_up::CatchUpPlugin;
use crate::changes::ChangesPlugin;
use crate::combat::RespawnPlugin;
use crate::demo::DemoRecordingPlugin;
use crate::roles::RolesPlugin;
use crate::rules::RulesPlugin;
use crate::sessions::SessionsPlugin;
use crate::sets::{CommandSource, ReceiveStep, ServerSet};
use crate::snapshots::SnapshotsPlugin;
use crate::spectators::SpectatorsPlugin;
use crate::stalls::{self, StallsPlugin};
use crate::stats::StatsPlugin;
use crate::status::StatusPlugin;
use crate::votes::VotesPlugin;
use bevy::prelude::*;
use sightline_combat::CombatPlugin;
use sightline_map::CurrentMap;
use sightline_movement::MovementPlugin;
use sightline_net::{RenetReceive, RenetSend, ServerNetPlugin};
use sightline_runtime::{Pacing, paced_app};
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
            .configure_sets(
                FixedUpdate,
                (CommandSource::Network, CommandSource::Bots).in_set(SimSet::ReadInputs),
            )
            .configure_sets(PreUpdate, ServerSet::Receive.after(RenetReceive))
            .configure_sets(
                PreUpdate,
                (
                    ReceiveStep::Stalls,
                    ReceiveStep::Sessions,
                    ReceiveStep::Requests,
                )
                    .chain()
                    .in_set(ServerSet::Receive),
            )
            .configure_sets(PostUpdate, ServerSet::Send.before(RenetSend))
            .add_plugins((SimulationPlugin, MovementPlugin, CombatPlugin))
            .add_plugins((
                StatsPlugin,
                StallsPlugin,
                CatchUpPlugin,
                SessionsPlugin {
                    max_players: self.config.max_players,
                },
                SnapshotsPlugin,
                SpectatorsPlugin,
                RulesPlugin,
                (ChangesPlugin, RolesPlugin, VotesPlugin, AwardsPlugin),
                RespawnPlugin,
                BotsPlugin,
                StatusPlugin,
                DemoRecordingPlugin,
            ));
    }
}
