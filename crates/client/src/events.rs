//! What the server shows this player (deaths, our hits, our hurts, verdicts on our shots):
//! events that ride in every snapshot until we acknowledge one holding them, so a lost
//! datagram delays them by a snapshot, not by a reliable resend. Each is taken once, by
//! its number, and handed to the game as a [`ShownEvent`] when the world we draw reaches
//! its tick: a kill feed line as the victim is drawn falling, a rocket's hit marker as
//! its burst is drawn. Verdicts on our own shots show at once.

use crate::cues::{CombatCue, Timed, tick_seconds};
use crate::sets::{ReceiveStep, in_game, watching};
use crate::stats::ClientStats;
use bevy::prelude::*;
use sightline_interpolation::RenderTime;
use sightline_protocol::{EventSnap, PlayerEvent};
use sightline_sim::SessionAppExt;
use sightline_sim::TickConfig;

/// An event the server showed us, at its moment.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct ShownEvent(pub PlayerEvent);

/// Events taken from snapshots, waiting for their moment.
#[derive(Resource, Debug, Default)]
pub struct EventInbox {
    /// Number of the newest event taken (0: none yet).
    last: u32,
    waiting: Timed<PlayerEvent>,
}

impl EventInbox {
    /// Takes the events of a snapshot not taken before, received at `now` by our clock,
    /// and counts in `stats` those taken and those skipped by a gap in the numbers (the
    /// server gave up on them: we acknowledged nothing for seconds).
    pub fn take(
        &mut self,
        events: &[EventSnap],
        now: f64,
        config: &TickConfig,
        stats: &mut ClientStats,
    ) -> Vec<PlayerEvent> {
        let mut early = Vec::new();
        for e in events {
            if e.seq <= self.last {
                continue;
            }
            let skipped = e.seq - self.last - 1;
            stats.events_missed = stats.events_missed.saturating_add(u64::from(skipped));
            stats.events = stats.events.saturating_add(1);
            self.last = e.seq;
            // A verdict on our own shot is due at once: server time 0 is always drawn.
            let at = if e.event.is_verdict() {
                0.0
            } else {
                tick_seconds(e.tick, config)
            };
            early.extend(self.waiting.push(at, now, e.event));
        }
        early
    }

    /// The events whose moment has come (see [`Timed::take_due`]).
    pub fn take_due(&mut self, render_time: Option<f64>, now: f64) -> Vec<PlayerEvent> {
        self.waiting.take_due(render_time, now)
    }
}

/// Hands on the events whose moment the drawn world has reached.
pub(crate) fn release_events(
    time: Res<Time<Real>>,
    render: Res<RenderTime>,
    mut inbox: ResMut<EventInbox>,
    mut shown: MessageWriter<ShownEvent>,
) {
    for event in inbox.take_due(render.server_time, time.elapsed_secs_f64()) {
        shown.write(ShownEvent(event));
    }
}

/// Our hits, hurts and shot verdicts as combat cues.
pub(crate) fn cue_events(mut shown: MessageReader<ShownEvent>, mut cues: MessageWriter<CombatCue>) {
    for ShownEvent(event) in shown.read() {
        if let Some(cue) = CombatCue::from_event(event) {
            cues.write(cue);
        }
    }
}

/// Counts our shots the server judged late or refused ([`ClientStats`]).
pub(crate) fn count_shot_verdicts(
    mut shown: MessageReader<ShownEvent>,
    mut stats: ResMut<ClientStats>,
) {
    for ShownEvent(event) in shown.read() {
        match *event {
            PlayerEvent::ShotLate { excess_ms } => {
                stats.shots_late = stats.shots_late.saturating_add(1);
                stats.shots_late_ms = stats.shots_late_ms.saturating_add(u64::from(excess_ms));
            }
            PlayerEvent::ShotRefused => {
                stats.shots_refused = stats.shots_refused.saturating_add(1);
            }
            _ => {}
        }
    }
}

/// The events snapshots carry, shown when the drawn world reaches them: as cues, and
/// counted (shot verdicts) once each.
pub(crate) struct EventsPlugin;

impl Plugin for EventsPlugin {
    fn build(&self, app: &mut App) {
        app.add_message::<ShownEvent>()
            .init_session_resource::<EventInbox>()
            .add_systems(
                PreUpdate,
                (cue_events, count_shot_verdicts)
                    .chain()
                    .after(crate::cues::queue_cues)
                    .in_set(ReceiveStep::Cues),
            )
            .add_systems(Update, release_events.run_if(in_game.or_else(watching)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_combat::WeaponKind;
    use sightline_sim::PlayerId;

    fn kill(seq: u32, tick: u32) -> EventSnap {
        EventSnap {
            seq,
            tick,
            event: PlayerEvent::Killed {
                victim: PlayerId(seq as u8),
                killer: PlayerId(9),
                weapon: WeaponKind::Rifle,
            },
        }
    }

    #[test]
    fn events_are_taken_once_counted_through_gaps_and_shown_with_the_drawn_world() {
        let config = TickConfig::new(128, 64).expect("a valid rate");
        let mut stats = ClientStats::default();
        let mut inbox = EventInbox::default();
        let at = |tick| tick_seconds(tick, &config);
        // The same events again in the next snapshot, and one more: taken once.
        assert!(
            inbox
                .take(&[kill(1, 1280), kill(2, 1290)], 0.0, &config, &mut stats)
                .is_empty()
        );
        inbox.take(
            &[kill(1, 1280), kill(2, 1290), kill(3, 1300)],
            0.0,
            &config,
            &mut stats,
        );
        assert_eq!((stats.events, stats.events_missed), (3, 0));
        // Each waits for the drawn world to reach its tick.
        assert!(inbox.take_due(Some(at(1279)), 0.01).is_empty());
        assert_eq!(
            inbox.take_due(Some(at(1290)), 0.02),
            vec![kill(1, 0).event, kill(2, 0).event]
        );
        // A gap: the server gave up on 4 and 5.
        let late = EventSnap {
            event: PlayerEvent::ShotLate { excess_ms: 40 },
            ..kill(6, 1400)
        };
        inbox.take(&[late], 0.03, &config, &mut stats);
        assert_eq!((stats.events, stats.events_missed), (4, 2));
        // A verdict on our own shot does not wait; the kill at 1300 still does.
        assert_eq!(
            inbox.take_due(Some(at(1295)), 0.04),
            vec![PlayerEvent::ShotLate { excess_ms: 40 }]
        );
        assert_eq!(inbox.take_due(Some(at(1300)), 0.05), vec![kill(3, 0).event]);
    }
}
