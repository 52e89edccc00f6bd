//! Sightline's client core as a Bevy plugin, without rendering: it connects, says Hello,
//! checks the server's Welcome (protocol version, map hash), makes one input command per
//! tick and sends each frame's with every earlier one the server has not acknowledged,
//! predicts its own player and interpolates the others from the snapshots it receives.
//! What the server says reliably is decoded once into [`FromServer`] messages, which the
//! connection, the [`Roster`], the feeds ([`KillFeed`], [`ChatLog`], [`MatchInfo`]) and
//! the combat cues each read; the events snapshots carry (deaths, hits, hurts) become
//! [`ShownEvent`] messages when the drawn world reaches them. A demo or a spectator's
//! relay can write the same messages.
//!
//! The `sightline` binary runs it headless with the [`Autopilot`] at the controls, or in a window
//! (`sightline-app`), which adds drawing, sound, the HUD and the console.

mod autopilot;
mod catch_up;
mod changes;
mod clock;
mod combat;
mod connection;
mod cues;
mod events;
mod feeds;
mod inbound;
mod input;
mod pacing;
mod rate;
mod recent;
mod reconnect;
mod roster;
mod sets;
mod snapshots;
mod spectate;
mod stats;
mod status;

pub use autopilot::Autopilot;
pub use catch_up::{MAX_FRAME_CATCH_UP, MIN_FRAME_CATCH_UP};
pub use connection::{DesiredName, StatsKey};
pub use cues::{CombatCue, MAX_CUE_WAIT, MAX_TIMED_CUES, Timed, TimedCue, TimedCues};
pub use events::{EventInbox, ShownEvent};
pub use feeds::{
    ChatLog, FlagHeard, Ignored, KillFeed, KillFeedEntry, MAX_CHAT_LOG, MAX_IGNORED, MAX_KILL_FEED,
    MatchInfo, VoteInfo, flag_line,
};
pub use inbound::FromServer;
pub use input::{CommandRate, InputHistory, LocalInput, MIN_REDUNDANCY_SECONDS, REDUNDANCY_FRAMES};
pub use pacing::{
    InputPacing, MAX_DILATION, MAX_DRIFT, OUTAGE_REPORTS, REPORT_SPAN, SETTLE_LIMIT, SHORT_SHARE,
    TARGET_MIN_QUEUE,
};
pub use rate::{DEFAULT_UPDATE_RATE, DownloadRate, UpdateRate};
pub use recent::{Clip, ClipPose, MAX_GAP, MAX_RECENT, RECENT_SECONDS, RecentWorld};
pub use reconnect::{RESUME_WINDOW_SECONDS, Reconnect, backoff_seconds};
pub use roster::{Roster, RosterEntry};
pub use sets::{ClientSet, LocalPlayer, RemotePlayer};
pub use snapshots::{LatestSnapshot, dead_in};
pub use stats::{ClientStats, EarlierSessions, PlayerSeen};
pub use status::{ConnectionStatus, JoinAs, ServerInfo, Watching};

use autopilot::AutopilotPlugin;
use bevy::prelude::*;
use catch_up::CatchUpPlugin;
use changes::ChangesPlugin;
use clock::ClockPlugin;
use combat::OwnShotsPlugin;
use connection::ConnectionPlugin;
use cues::CuesPlugin;
use events::EventsPlugin;
use feeds::FeedsPlugin;
use input::InputPlugin;
use pacing::PacingPlugin;
use rate::RatePlugin;
use reconnect::ReconnectPlugin;
use roster::RosterPlugin;
use sets::ReceiveStep;
use sightline_interpolation::InterpolationPlugin;
use sightline_net::{ClientNetPlugin, RenetClient, RenetReceive};
use sightline_prediction::{PredictionPlugin, PredictionSet};
use sightline_runtime::{Pacing, paced_app};
use sightline_sim::SimulationPlugin;
use snapshots::SnapshotsPlugin;
use spectate::SpectatePlugin;
use stats::StatsPlugin;

/// The one place a client app without a window is assembled, beside the server's
/// `server_app`: the headless binary ([`Pacing::RealTime`]), the harness's soak, load
/// test and stepper, and the tests differ only in their clock and their transport, `net`.
/// (The game window adds the same [`ClientPlugin`] to Bevy's default plugins.)
pub fn client_app(net: ClientNetPlugin, client: ClientPlugin, pacing: Pacing) -> App {
    // Polls at the fastest tick rate a server may use; the fixed tick adapts on Welcome.
    let frame = std::time::Duration::from_secs_f64(1.0 / f64::from(sightline_sim::MAX_TICK_HZ));
    let mut app = paced_app(pacing, frame);
    app.add_plugins((net, client));
    app
}

/// Sends a message to the server. One above its cap (a bug here, since everything the
/// client sends is bounded where it is made) is dropped with a warning: the server would
/// refuse it and count it against this client.
pub fn send_to_server(
    client: &mut RenetClient,
    channel: sightline_protocol::Channel,
    msg: &impl sightline_protocol::Wire,
) {
    match msg.encode() {
        Ok(bytes) => client.send_message(channel, bytes),
        Err(e) => warn!("a message was not sent: {e}"),
    }
}

/// Who keeps [`LocalInput`] up to date, the one input every command is sampled from.
#[derive(Debug, Clone, PartialEq)]
pub enum InputSource {
    /// The [`Autopilot`] (the headless client, `--auto`, soak and load tests).
    Autopilot(Autopilot),
    /// A person: the windowed client's keyboard and mouse.
    Local,
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
            .configure_sets(
                PreUpdate,
                (
                    ClientSet::Receive.after(RenetReceive),
                    PredictionSet::Reconcile,
                )
                    .chain(),
            )
            .configure_sets(
                PreUpdate,
                (
                    ReceiveStep::Transport,
                    ReceiveStep::Welcome,
                    ReceiveStep::Roster,
                    ReceiveStep::Feeds,
                    ReceiveStep::Cues,
                    ReceiveStep::Snapshots,
                    ReceiveStep::Clock,
                    ReceiveStep::Disconnect,
                    ReceiveStep::Standby,
                )
                    .chain()
                    .in_set(ClientSet::Receive),
            )
            .add_plugins((
                ConnectionPlugin {
                    name: self.name.clone(),
                },
                // Commands sampled from LocalInput, and the bot that can write it.
                (InputPlugin, AutopilotPlugin),
                StatsPlugin,
                RosterPlugin,
                FeedsPlugin,
                CuesPlugin,
                EventsPlugin,
                SnapshotsPlugin,
                ClockPlugin,
                PacingPlugin,
                (RatePlugin, ChangesPlugin),
                OwnShotsPlugin,
                ReconnectPlugin,
                SpectatePlugin,
                CatchUpPlugin,
            ));
        if let InputSource::Autopilot(pilot) = &self.input {
            app.insert_resource(pilot.clone());
        }
    }
}
