//! What this client has received and seen, for tests, the netgraph and the exit summary.

use crate::InputPacing;
use crate::sets::ReceiveStep;
use bevy::prelude::*;
use sightline_interpolation::ClockSync;
use sightline_net::RenetClient;
use sightline_net::UdpClientTransport;
use sightline_prediction::{CorrectionCauses, PredictionStats};
use sightline_sim::{EndSession, SessionAppExt};
use sightline_sim::{PlayerId, TickConfig};
use std::collections::{BTreeMap, VecDeque};

/// How far each player has been seen to travel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayerSeen {
    /// Where it was first seen.
    pub first: Vec3,
    /// Farthest it has been from there, m.
    pub farthest: f32,
}

/// What this client has received, for tests and the status line.
#[derive(Resource, Debug, Default)]
pub struct ClientStats {
    /// Snapshots accepted.
    pub snapshots: u64,
    /// Bytes of the snapshot datagrams received, as encoded (what `rate` governs, less
    /// the headers).
    pub snapshot_bytes: u64,
    /// Snapshots that arrived after a newer one (dropped).
    pub stale_snapshots: u64,
    /// Messages that failed to decode or validate (dropped).
    pub malformed: u64,
    /// Snapshots sent as changes from one this client no longer keeps (dropped; the
    /// server sends the next against a newer one).
    pub unresolved: u64,
    /// Every player seen in snapshots.
    pub seen: BTreeMap<PlayerId, PlayerSeen>,
    /// Our hitscan shots the server judged late (our view older than it rewinds).
    pub shots_late: u64,
    /// The sum of the late shots' excesses, milliseconds.
    pub shots_late_ms: u64,
    /// Our hitscan shots the server refused unjudged.
    pub shots_refused: u64,
    /// Events the server showed us (deaths, hits, hurts, verdicts), each counted once.
    pub events: u64,
    /// Events the server gave up on before we acknowledged them (a gap in their numbers).
    pub events_missed: u64,
    /// Sequence numbers of recent snapshots received, for the loss estimate.
    recent: VecDeque<u32>,
}

/// Snapshots remembered for the loss estimate.
const LOSS_WINDOW: usize = 256;

impl ClientStats {
    /// Notes a snapshot's sequence number.
    pub(crate) fn note_snapshot(&mut self, seq: u32) {
        self.recent.push_back(seq);
        if self.recent.len() > LOSS_WINDOW {
            self.recent.pop_front();
        }
    }

    /// Fraction of recent snapshots that never arrived: the downstream loss, taken as an
    /// estimate of the loss both ways.
    pub fn snapshot_loss(&self) -> f64 {
        let (Some(min), Some(max)) = (self.recent.iter().min(), self.recent.iter().max()) else {
            return 0.0;
        };
        let expected = (max - min + 1) as f64;
        (1.0 - self.recent.len() as f64 / expected).max(0.0)
    }

    /// Players seen to move more than `metres` from where they were first seen.
    pub fn players_moved(&self, metres: f32) -> usize {
        self.seen.values().filter(|p| p.farthest > metres).count()
    }

    /// A one-line summary.
    pub fn summary(&self) -> String {
        format!(
            "snapshots={} stale={} malformed={} unresolved={} players_seen={} players_moved={}",
            self.snapshots,
            self.stale_snapshots,
            self.malformed,
            self.unresolved,
            self.seen.len(),
            self.players_moved(1.0)
        )
    }

    /// The summary with what prediction, input pacing and clock sync saw, so a run over a
    /// real network can be judged as the netcode report judges the harness's:
    /// `corrections` (visible ones) and of those `own`, `late`, `other`, `collision`,
    /// `knockback` and `killed` by cause (`CorrectionCause`); `resets` (the server stopped answering and prediction started
    /// over); `teleports` (respawns adopted); `weapon_checks` (the server's word on our
    /// weapons, once a second, compared with the prediction) and `desyncs` (checks that
    /// found them out of step other than by a pick-up, then resynchronised); `repeats` (ticks the server repeated a
    /// command of ours for lack of one); `holds` (ticks it held our player waiting for a
    /// late one instead, which costs no correction); `queue_min` (the fewest commands waiting when the
    /// server's ticks took one, averaged over its reports, counting the one taken) and
    /// `buffer_min_ms` (so the least time a command waited there, in ms: the client cannot
    /// see the mean wait); `rtt_ms` and `rtt_jitter_ms` (clock-sync pings). A key press
    /// reaches the server's simulation after about half a frame, half the round trip and
    /// the buffer.
    ///
    /// Counts cover the whole run: `earlier` holds the sessions a reconnection ended,
    /// and `sessions` and `reconnects` say how many there were. Players seen, the queue
    /// and the round trip are the last session's.
    pub fn summary_with(
        &self,
        earlier: &EarlierSessions,
        prediction: &PredictionStats,
        pacing: &InputPacing,
        sync: &ClockSync,
        tick: &TickConfig,
    ) -> String {
        let mut run = earlier.clone();
        run.add(self, prediction, pacing);
        let causes = run.causes;
        let queue = pacing.mean_queue();
        let ms = |s: Option<f64>| s.map_or(0.0, |s| s * 1000.0);
        format!(
            "snapshots={} stale={} malformed={} unresolved={} players_seen={} players_moved={} \
             corrections={} corrections_seen={} own={} late={} other={} collision={} \
             knockback={} killed={} \
             resets={} teleports={} repeats={} holds={} sessions={} reconnects={} \
             shots_late={} shots_refused={} events={} events_missed={} \
             weapon_checks={} desyncs={} queue_min={queue:.2} buffer_min_ms={:.1} rtt_ms={:.1} rtt_jitter_ms={:.1}",
            run.snapshots,
            run.stale_snapshots,
            run.malformed,
            run.unresolved,
            self.seen.len(),
            self.players_moved(1.0),
            run.corrections,
            causes.seen(),
            causes.own,
            causes.late,
            causes.other,
            causes.collision,
            causes.knockback,
            causes.killed,
            run.resets,
            run.teleports,
            run.repeats,
            run.holds,
            run.sessions + 1,
            run.reconnects,
            run.shots_late,
            run.shots_refused,
            run.events,
            run.events_missed,
            run.weapon_checks,
            run.desyncs,
            (queue - 1.0).max(0.0) * 1000.0 / tick.tick_hz as f64,
            ms(sync.rtt_mean()),
            ms(sync.rtt_jitter()),
        )
    }
}

/// The counts of the sessions this run already ended, kept across them: a reconnection
/// starts every session statistic afresh, and a summary of the run must not lose what
/// happened before it.
#[derive(Resource, Debug, Default, Clone)]
pub struct EarlierSessions {
    /// Sessions ended.
    pub sessions: u64,
    /// Reconnection tries made.
    pub reconnects: u64,
    /// Snapshots accepted, stale, malformed (with the transport's refused packets) and
    /// unresolved ([`ClientStats`]).
    pub snapshots: u64,
    /// See `snapshots`.
    pub stale_snapshots: u64,
    /// See `snapshots`.
    pub malformed: u64,
    /// See `snapshots`.
    pub unresolved: u64,
    /// Visible corrections, and by cause.
    pub corrections: u64,
    /// See `corrections`.
    pub causes: CorrectionCauses,
    /// Prediction resets and teleports.
    pub resets: u64,
    /// See `resets`.
    pub teleports: u64,
    /// Commands the server repeated for want of ours.
    pub repeats: u64,
    /// Ticks the server held our player waiting for a command of ours.
    pub holds: u64,
    /// Our shots judged late, and refused ([`ClientStats`]).
    pub shots_late: u64,
    /// See `shots_late`.
    pub shots_refused: u64,
    /// Events shown, and missed ([`ClientStats`]).
    pub events: u64,
    /// See `events`.
    pub events_missed: u64,
    /// The server's checks of our weapons compared, and of those the desyncs
    /// ([`PredictionStats`]).
    pub weapon_checks: u64,
    /// See `weapon_checks`.
    pub desyncs: u64,
}

impl EarlierSessions {
    /// Adds one session's counts.
    fn add(&mut self, stats: &ClientStats, prediction: &PredictionStats, pacing: &InputPacing) {
        self.snapshots += stats.snapshots;
        self.stale_snapshots += stats.stale_snapshots;
        self.malformed += stats.malformed;
        self.unresolved += stats.unresolved;
        self.corrections += prediction.corrections.len() as u64;
        self.causes = self.causes.plus(&prediction.causes);
        self.resets += prediction.resets;
        self.teleports += prediction.teleports;
        self.repeats += u64::from(pacing.repeats);
        self.holds += u64::from(pacing.held);
        self.shots_late += stats.shots_late;
        self.shots_refused += stats.shots_refused;
        self.events += stats.events;
        self.events_missed += stats.events_missed;
        self.weapon_checks += prediction.weapon_checks;
        self.desyncs += prediction.desyncs;
    }
}

/// Folds the ending session's counts into [`EarlierSessions`] (in [`EndSession`], whose
/// resets apply after it).
///
/// [`EndSession`]: sightline_sim::EndSession
pub(crate) fn remember_session(
    mut earlier: ResMut<EarlierSessions>,
    stats: Res<ClientStats>,
    prediction: Res<PredictionStats>,
    pacing: Res<InputPacing>,
) {
    earlier.sessions += 1;
    earlier.add(&stats, &prediction, &pacing);
}

/// Counts the renet packets the transport refused as malformed messages, each frame, so
/// every summary and graph that shows malformed input shows them too.
pub(crate) fn count_refused_packets(
    transport: Option<Res<UdpClientTransport>>,
    mut stats: ResMut<ClientStats>,
    mut seen: Local<u64>,
) {
    let refused = transport.map_or(0, |t| t.refused().0);
    if refused < *seen {
        *seen = 0; // a new transport
    }
    stats.malformed += refused - *seen;
    *seen = refused;
}

/// The client's own counters, kept across sessions.
pub(crate) struct StatsPlugin;

impl Plugin for StatsPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<ClientStats>()
            .init_resource::<EarlierSessions>()
            .add_systems(EndSession, remember_session)
            .add_systems(
                PreUpdate,
                count_refused_packets
                    .in_set(ReceiveStep::Transport)
                    .run_if(resource_exists::<RenetClient>),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_prediction::{Correction, CorrectionCause};

    #[test]
    fn a_summary_counts_the_sessions_a_reconnection_ended() {
        let mut earlier = EarlierSessions::default();
        let mut stats = ClientStats {
            snapshots: 100,
            malformed: 1,
            ..Default::default()
        };
        let mut prediction = PredictionStats::default();
        prediction.corrections.push(Correction {
            size: 0.3,
            cause: CorrectionCause::Own,
            news: false,
        });
        prediction.causes.count(CorrectionCause::Late);
        prediction.resets = 1;
        let pacing = InputPacing::default();
        earlier.sessions += 1;
        earlier.add(&stats, &prediction, &pacing);
        earlier.reconnects = 1;
        // The next session starts afresh.
        stats.snapshots = 50;
        stats.malformed = 0;
        let fresh = PredictionStats::default();
        let summary = stats.summary_with(
            &earlier,
            &fresh,
            &pacing,
            &ClockSync::default(),
            &TickConfig::default(),
        );
        for field in [
            "snapshots=150",
            "malformed=1",
            "corrections=1",
            "late=1",
            "resets=1",
            "sessions=2",
            "reconnects=1",
        ] {
            assert!(summary.contains(field), "{field} in {summary}");
        }
    }
}
