//! Sightline's client core as a Bevy plugin, without rendering: it connects, says Hello,
//! checks the server's Welcome (protocol version, map hash), makes one input command per
//! tick and sends each frame's with every earlier one the server has not acknowledged,
//! and applies the snapshots it receives.
//!
//! The `sightline` binary runs it headless with a bot driving the inputs; the windowed
//! client adds rendering, prediction and interpolation on top of the same plugin.

mod clock;
mod combat;
mod connection;
mod cues;
mod input;
mod pacing;
mod reconnect;
mod snapshots;
mod stats;
mod status;

pub use combat::dead_in;
pub use connection::{DesiredName, Roster, RosterEntry};
pub use cues::{CombatCue, MAX_CUE_WAIT, MAX_TIMED_CUES, TimedCues};
pub use input::{
    CommandRate, InputHistory, InputSource, LocalInput, MIN_REDUNDANCY_SECONDS, REDUNDANCY_FRAMES,
};
pub use pacing::{InputPacing, MAX_DILATION, SETTLE_LIMIT, SHORT_SHARE, TARGET_MIN_QUEUE};
pub use reconnect::{RESUME_WINDOW_SECONDS, Reconnect, backoff_seconds};
pub use snapshots::LatestSnapshot;
pub use stats::{ClientStats, EarlierSessions, PlayerSeen};
pub use status::{ConnectionStatus, ServerInfo};

use bevy::app::RunFixedMainLoopSystems;
use bevy::prelude::*;
use sightline_interpolation::InterpolationPlugin;
use sightline_net::{ClockSync, RenetClient, RenetReceive, ServerClock};
use sightline_prediction::{PredictionPlugin, PredictionSet};
use sightline_protocol::SnapshotHistory;
use sightline_sim::{EndSession, SessionAppExt, SimSet, SimulationPlugin};
use std::collections::VecDeque;

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

/// One line of the kill feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillFeedEntry {
    /// Who killed.
    pub killer: String,
    /// Who died.
    pub victim: String,
    /// With which weapon.
    pub weapon: sightline_combat::WeaponKind,
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

/// Kill feed lines kept; the HUD shows the newest few.
pub const MAX_KILL_FEED: usize = 32;
/// Chat lines kept; the HUD shows the newest few.
pub const MAX_CHAT_LOG: usize = 64;

/// Appends to a queue of at most `cap` items, dropping the oldest to make room: every
/// queue the server fills must stay bounded, whatever it sends.
fn push_bounded<T>(queue: &mut VecDeque<T>, cap: usize, item: T) {
    while queue.len() >= cap {
        queue.pop_front();
    }
    queue.push_back(item);
}

/// Deaths announced by the server, oldest first, at most [`MAX_KILL_FEED`].
#[derive(Resource, Debug, Default)]
pub struct KillFeed(pub VecDeque<KillFeedEntry>);

impl KillFeed {
    /// Adds a line, forgetting the oldest beyond [`MAX_KILL_FEED`].
    pub fn push(&mut self, entry: KillFeedEntry) {
        push_bounded(&mut self.0, MAX_KILL_FEED, entry);
    }
}

/// Chat lines received, oldest first, with who said them; at most [`MAX_CHAT_LOG`].
#[derive(Resource, Debug, Default)]
pub struct ChatLog(pub VecDeque<(String, String)>);

impl ChatLog {
    /// Adds a line, forgetting the oldest beyond [`MAX_CHAT_LOG`].
    pub fn push(&mut self, name: String, text: String) {
        push_bounded(&mut self.0, MAX_CHAT_LOG, (name, text));
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
            .insert_resource(self.input.clone())
            .init_resource::<ConnectionStatus>()
            .init_resource::<Roster>()
            .init_resource::<LatestSnapshot>()
            .init_resource::<SnapshotHistory>()
            .init_resource::<ClientStats>()
            .init_resource::<InputHistory>()
            .init_resource::<CommandRate>()
            .init_resource::<ChatLog>()
            .init_resource::<KillFeed>()
            .init_resource::<MatchInfo>()
            .init_resource::<LocalInput>()
            .init_resource::<sightline_movement::MoveParams>()
            .init_resource::<ClockSync>()
            .init_resource::<ServerClock>()
            .init_resource::<InputPacing>()
            .init_resource::<clock::PingSchedule>()
            .init_resource::<Reconnect>()
            .init_resource::<EarlierSessions>()
            .init_resource::<RecentFrames>()
            .add_message::<CombatCue>()
            .init_resource::<TimedCues>()
            .reset_on_session_end::<TimedCues>()
            .reset_on_session_end::<ConnectionStatus>()
            .reset_on_session_end::<Roster>()
            .reset_on_session_end::<LatestSnapshot>()
            .reset_on_session_end::<SnapshotHistory>()
            .reset_on_session_end::<ClientStats>()
            .reset_on_session_end::<InputHistory>()
            .reset_on_session_end::<ChatLog>()
            .reset_on_session_end::<KillFeed>()
            .reset_on_session_end::<MatchInfo>()
            .reset_on_session_end::<ClockSync>()
            .reset_on_session_end::<ServerClock>()
            .reset_on_session_end::<InputPacing>()
            .reset_on_session_end::<clock::PingSchedule>()
            .reset_on_session_end::<Reconnect>()
            .add_systems(
                EndSession,
                (connection::forget_map, stats::remember_session),
            )
            .add_systems(Startup, keep_up_with_slow_frames)
            .add_systems(Last, limit_catch_up_to_the_frame_rate)
            .add_systems(PreUpdate, reconnect::retry_connection.before(RenetReceive))
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
                    stats::count_refused_packets,
                    connection::send_hello,
                    connection::receive_reliable,
                    snapshots::receive_datagrams,
                    snapshots::apply_snapshot,
                    connection::notice_disconnect,
                    reconnect::allow_standby,
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
                    cues::release_timed_cues,
                )
                    .run_if(connection::in_game.and_then(resource_exists::<RenetClient>)),
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

/// Longest frame whose time the fixed tick catches up on in full (Bevy's default is a
/// quarter second). A client must make one command per server tick however slowly it
/// draws, or the server runs short; half a second is what an input packet can carry
/// ([`sightline_protocol::MAX_PACKET_CMDS`]) and half what the server buffers, so down to
/// about 2 frames a second the commands still keep pace. Slower than that, time is lost.
pub const MAX_FRAME_CATCH_UP: std::time::Duration = std::time::Duration::from_millis(500);

/// The least time a long frame catches up on, whatever the frame rate.
pub const MIN_FRAME_CATCH_UP: std::time::Duration = std::time::Duration::from_millis(100);

fn keep_up_with_slow_frames(mut time: ResMut<Time<Virtual>>) {
    time.set_max_delta(MAX_FRAME_CATCH_UP);
}

/// Real frame times of the last frames, newest last.
#[derive(Resource, Debug, Default)]
struct RecentFrames(std::collections::VecDeque<f64>);

/// Frames [`RecentFrames`] keeps.
const RECENT_FRAMES: usize = 32;

/// What the next frame may catch up on: four of this client's usual frames, within
/// [`MIN_FRAME_CATCH_UP`] and [`MAX_FRAME_CATCH_UP`], so a client that always draws
/// slowly still makes a command per server tick, but a hitch (a frame far longer than
/// usual: the process paused, the disk stalled) is not caught up in a burst of commands
/// the server would then run half a second late, each one pulling prediction back. The
/// hitch costs the commands of its time instead, which the server covers as it covers
/// any gap, and one correction.
fn limit_catch_up_to_the_frame_rate(
    real: Res<Time<Real>>,
    mut frames: ResMut<RecentFrames>,
    mut virt: ResMut<Time<Virtual>>,
) {
    frames.0.push_back(real.delta_secs_f64());
    if frames.0.len() > RECENT_FRAMES {
        frames.0.pop_front();
    }
    virt.set_max_delta(catch_up_limit(&frames.0));
}

/// Four of the usual (median) frames of `frames`, within [`MIN_FRAME_CATCH_UP`] and
/// [`MAX_FRAME_CATCH_UP`].
fn catch_up_limit(frames: &std::collections::VecDeque<f64>) -> std::time::Duration {
    let mut sorted: Vec<f64> = frames.iter().copied().collect();
    sorted.sort_by(f64::total_cmp);
    let usual = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let limit = (4.0 * usual).clamp(
        MIN_FRAME_CATCH_UP.as_secs_f64(),
        MAX_FRAME_CATCH_UP.as_secs_f64(),
    );
    std::time::Duration::from_secs_f64(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hitch_is_not_caught_up_but_a_slow_client_is() {
        let ms = |frames: &[f64]| catch_up_limit(&frames.iter().copied().collect()).as_millis();
        let mut steady = vec![1.0 / 60.0; 31];
        steady.push(1.0);
        assert_eq!(
            ms(&steady),
            100,
            "a second's hitch at 60 fps catches up 0.1 s"
        );
        assert_eq!(ms(&[0.3; 32]), 500, "3 fps catches up what it must");
        assert_eq!(ms(&[0.1; 32]), 400);
        assert_eq!(ms(&[]), 100);
    }

    #[test]
    fn feeds_keep_only_their_newest_entries() {
        let mut chat = ChatLog::default();
        let mut kills = KillFeed::default();
        for i in 0..10_000u32 {
            chat.push("p".into(), i.to_string());
            kills.push(KillFeedEntry {
                killer: i.to_string(),
                victim: "v".into(),
                weapon: sightline_combat::WeaponKind::Rifle,
            });
        }
        assert_eq!(chat.0.len(), MAX_CHAT_LOG);
        assert_eq!(kills.0.len(), MAX_KILL_FEED);
        assert_eq!(chat.0.back().map(|l| l.1.as_str()), Some("9999"));
        let oldest_kept = 10_000 - MAX_KILL_FEED;
        assert_eq!(kills.0[0].killer, oldest_kept.to_string());
    }
}
