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
//! The `sightline` binary runs it headless with a bot driving the inputs, or in a window
//! (`sightline-app`), which adds drawing, sound, the HUD and the console.

mod catch_up;
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
mod snapshots;
mod spectate;
mod stats;
mod status;

pub use catch_up::{MAX_FRAME_CATCH_UP, MIN_FRAME_CATCH_UP};
pub use connection::{DesiredName, StatsKey};
pub use cues::{CombatCue, MAX_CUE_WAIT, MAX_TIMED_CUES, Timed, TimedCue, TimedCues};
pub use events::{EventInbox, ShownEvent};
pub use feeds::{ChatLog, KillFeed, KillFeedEntry, MAX_CHAT_LOG, MAX_KILL_FEED, MatchInfo};
pub use inbound::FromServer;
pub use input::{
    CommandRate, InputHistory, InputSource, LocalInput, MIN_REDUNDANCY_SECONDS, REDUNDANCY_FRAMES,
};
pub use pacing::{
    InputPacing, MAX_DILATION, MAX_DRIFT, OUTAGE_REPORTS, SETTLE_LIMIT, SHORT_SHARE,
    TARGET_MIN_QUEUE,
};
pub use rate::DownloadRate;
pub use recent::{Clip, ClipPose, MAX_GAP, MAX_RECENT, RECENT_SECONDS, RecentWorld};
pub use reconnect::{RESUME_WINDOW_SECONDS, Reconnect, backoff_seconds};
pub use roster::{Roster, RosterEntry};
pub use snapshots::{LatestSnapshot, dead_in};
pub use stats::{ClientStats, EarlierSessions, PlayerSeen};
pub use status::{ConnectionStatus, JoinAs, ServerInfo, Watching};

use bevy::app::RunFixedMainLoopSystems;
use bevy::prelude::*;
use sightline_interpolation::InterpolationPlugin;
use sightline_net::{
    ClientNetPlugin, ClockSync, Pacing, RenetClient, RenetReceive, ServerClock, paced_app,
};
use sightline_prediction::{PredictionPlugin, PredictionSet};
use sightline_protocol::SnapshotHistory;
use sightline_sim::{EndSession, SessionAppExt, SimSet, SimulationPlugin};

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
            .init_resource::<StatsKey>()
            .insert_resource(self.input.clone())
            .init_resource::<JoinAs>()
            .init_session_resource::<ConnectionStatus>()
            .init_session_resource::<Roster>()
            .init_session_resource::<LatestSnapshot>()
            .init_session_resource::<SnapshotHistory>()
            .init_session_resource::<ClientStats>()
            .init_session_resource::<InputHistory>()
            .init_resource::<CommandRate>()
            .init_resource::<DownloadRate>()
            .init_session_resource::<rate::RateTold>()
            .init_session_resource::<ChatLog>()
            .init_session_resource::<KillFeed>()
            .init_session_resource::<MatchInfo>()
            .init_resource::<LocalInput>()
            .init_resource::<sightline_movement::MoveParams>()
            .init_session_resource::<ClockSync>()
            .init_session_resource::<ServerClock>()
            .init_session_resource::<InputPacing>()
            .init_session_resource::<clock::PingSchedule>()
            .init_session_resource::<clock::SnapshotSilence>()
            .init_session_resource::<Reconnect>()
            .init_resource::<EarlierSessions>()
            .init_resource::<catch_up::RecentFrames>()
            .add_message::<CombatCue>()
            .init_session_resource::<TimedCues>()
            .add_message::<ShownEvent>()
            .init_session_resource::<EventInbox>()
            .add_systems(
                EndSession,
                (
                    connection::forget_map,
                    stats::remember_session,
                    spectate::stop_watching,
                ),
            )
            .add_systems(Startup, catch_up::keep_up_with_slow_frames)
            .add_systems(Last, catch_up::limit_catch_up_to_the_frame_rate)
            .add_systems(PreUpdate, reconnect::retry_connection.before(RenetReceive))
            .configure_sets(
                PreUpdate,
                (
                    ClientSet::Receive.after(RenetReceive),
                    PredictionSet::Reconcile,
                )
                    .chain(),
            )
            .add_message::<FromServer>()
            .add_systems(
                PreUpdate,
                (
                    (
                        stats::count_refused_packets,
                        connection::send_hello,
                        connection::decode_reliable,
                    )
                        .chain()
                        // Per system: a set's condition does not spare its systems'
                        // parameter checks, and between sessions there is no RenetClient.
                        .run_if(resource_exists::<RenetClient>),
                    // What the server said, from the network or a demo.
                    (
                        connection::take_welcome,
                        connection::change_map,
                        roster::update_roster,
                        feeds::record_kills,
                        feeds::record_chat,
                        feeds::follow_match,
                        cues::queue_cues,
                        events::cue_events,
                        events::count_shot_verdicts,
                    )
                        .chain(),
                    (
                        snapshots::receive_datagrams,
                        snapshots::apply_snapshot,
                        // Before prediction reconciles with the snapshot just applied: the
                        // first after an outage must find the silence in its patience.
                        (snapshots::note_snapshot_silence, clock::update_round_trip)
                            .chain()
                            .run_if(connection::in_game),
                        connection::notice_disconnect,
                        reconnect::allow_standby,
                    )
                        .chain()
                        .run_if(resource_exists::<RenetClient>),
                )
                    .chain()
                    .in_set(ClientSet::Receive),
            )
            .add_systems(
                Update,
                (
                    clock::send_pings,
                    rate::tell_rate,
                    clock::update_server_clock,
                    pacing::pace_ticks,
                )
                    .run_if(connection::in_game.and_then(resource_exists::<RenetClient>)),
            )
            .add_systems(
                Update,
                (
                    // Where the shooters are drawn this frame places their shots.
                    cues::release_timed_cues
                        .after(sightline_interpolation::InterpolationSet::Sample),
                    events::release_events,
                )
                    .run_if(connection::in_game.or_else(spectate::watching)),
            )
            .add_systems(
                Update,
                (spectate::acknowledge_snapshots, spectate::tell_follow)
                    .run_if(spectate::watching.and_then(resource_exists::<RenetClient>)),
            )
            .add_systems(
                FixedUpdate,
                (
                    input::sample_input.in_set(SimSet::ReadInputs),
                    combat::predict_own_shots.after(SimSet::Move),
                )
                    .run_if(connection::in_game.and_then(resource_exists::<RenetClient>)),
            )
            .add_systems(
                RunFixedMainLoop,
                input::send_inputs
                    .in_set(RunFixedMainLoopSystems::AfterFixedMainLoop)
                    .run_if(connection::in_game.and_then(resource_exists::<RenetClient>)),
            );
    }
}
