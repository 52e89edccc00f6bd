//! A demo played for people to watch: the replay ([`crate::replay`]) on a server whose
//! only clients are spectators, paced by the viewer (paused, slower, faster) and started
//! from any tick by way of the keyframe before it.

use crate::Spectator;
use crate::demo::format::Record;
use crate::demo::state::Recorded;
use crate::replay::{DemoFile, Outcome, Playback, replay_app};
use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_net::ServerNetPlugin;
use sightline_protocol::{ServerMessage, ServerTextKind};
use sightline_runtime::Pacing;
use sightline_sim::{PlayerId, PlayerName, Tick};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Spectators a demo's playback takes: the game that started it, and room to spare.
pub const PLAYBACK_SPECTATORS: u8 = 4;

/// The slowest a demo plays, times real time.
pub const SLOWEST: f32 = 0.25;
/// The fastest a demo plays, times real time.
pub const FASTEST: f32 = 4.0;

/// Ticks a seek simulates in one frame on its way from the keyframe to the tick asked
/// for: the way there takes a few frames, none of them long.
const CATCH_UP_TICKS: u32 = 64;

/// Where a demo's ticks are: its first and last, and its keyframes (where a seek
/// starts from). Read from the file without simulating it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoIndex {
    /// Ticks a second.
    pub tick_hz: u32,
    /// The first tick played.
    pub first: u32,
    /// The tick after the last one played.
    pub end: u32,
    /// Every keyframe's tick, in order (the first is `first`).
    pub keyframes: Vec<u32>,
    /// Why the file could not be read on, if it could not (with the byte): the index
    /// covers what came before.
    pub unreadable: Option<String>,
}

impl DemoIndex {
    /// Reads the demo through, keeping where its ticks and keyframes are.
    pub fn scan(mut reader: DemoFile) -> Self {
        let mut index = Self {
            tick_hz: reader.header().tick_hz.max(1),
            first: 0,
            end: 0,
            keyframes: Vec::new(),
            unreadable: None,
        };
        loop {
            match reader.next_record() {
                Ok(Some((_, Record::Keyframe(k)))) => {
                    if index.keyframes.is_empty() {
                        index.first = k.tick;
                    }
                    index.keyframes.push(k.tick);
                    index.end = k.tick;
                }
                Ok(Some((_, Record::Tick(_)))) if !index.keyframes.is_empty() => {
                    index.end = index.end.saturating_add(1);
                }
                Ok(Some((_, Record::End(_)))) | Ok(None) => break,
                Ok(Some(_)) => {}
                Err(e) => {
                    index.unreadable = Some(e.to_string());
                    break;
                }
            }
        }
        index
    }

    /// Ticks played.
    pub fn ticks(&self) -> u32 {
        self.end.saturating_sub(self.first)
    }

    /// How to start at `tick` (kept within the demo): from the last keyframe at or
    /// before it.
    pub fn seek(&self, tick: u32) -> Seek {
        let tick = tick.clamp(self.first, self.end.saturating_sub(1).max(self.first));
        let keyframe = self
            .keyframes
            .iter()
            .copied()
            .take_while(|k| *k <= tick)
            .last()
            .unwrap_or(self.first);
        Seek { keyframe, tick }
    }
}

/// Where a playback starts: the keyframe the world is taken from, and the tick it is
/// simulated on to before anyone sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seek {
    /// The keyframe's tick.
    pub keyframe: u32,
    /// The tick shown first.
    pub tick: u32,
}

/// The viewer's hold on a demo's playback, shared with the server thread playing it:
/// paused or running, and how fast.
#[derive(Resource, Debug, Clone)]
pub struct PlaybackControl(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    paused: AtomicBool,
    /// The speed's `f32` bits.
    speed: AtomicU32,
}

impl Default for PlaybackControl {
    fn default() -> Self {
        Self(Arc::new(Shared {
            paused: AtomicBool::new(false),
            speed: AtomicU32::new(1.0f32.to_bits()),
        }))
    }
}

impl PlaybackControl {
    /// Pauses (or resumes) the demo.
    pub fn set_paused(&self, paused: bool) {
        self.0.paused.store(paused, Ordering::Relaxed);
    }

    /// Whether the viewer paused the demo.
    pub fn paused(&self) -> bool {
        self.0.paused.load(Ordering::Relaxed)
    }

    /// Plays the demo at `speed` times real time, kept within [`SLOWEST`]..=[`FASTEST`]
    /// (not a number: as it was); the speed set.
    pub fn set_speed(&self, speed: f32) -> f32 {
        if !speed.is_nan() {
            let speed = speed.clamp(SLOWEST, FASTEST);
            self.0.speed.store(speed.to_bits(), Ordering::Relaxed);
        }
        self.speed()
    }

    /// Times real time the demo plays at while it runs.
    pub fn speed(&self) -> f32 {
        f32::from_bits(self.0.speed.load(Ordering::Relaxed))
    }

    /// Times real time the demo moves at now: its speed, or 0 while paused. The
    /// viewer's drawn world runs on this clock, so it neither waits for snapshots nor
    /// runs past them.
    pub fn rate(&self) -> f32 {
        if self.paused() { 0.0 } else { self.speed() }
    }
}

/// A server that plays the demo `reader` (opened on its `map`) at `pacing` (real time,
/// for the game), for spectators only, through `net`: the game's `playdemo` joins it as
/// one, so a demo is watched with the cameras, HUD, kill feed and scoreboard of a live
/// game. From `seek`'s keyframe (the first without one) it simulates to the tick asked
/// for at once, waits there for its first spectator, shows the world with no spectator
/// delay, runs as `control` says and stops where the demo ends, saying so.
pub fn playback_app(
    reader: DemoFile,
    map: CurrentMap,
    net: ServerNetPlugin,
    pacing: Pacing,
    control: PlaybackControl,
    seek: Option<Seek>,
) -> App {
    let tick_hz = reader.header().tick_hz;
    let mut app = replay_app(reader, map, net, pacing, |config| {
        config.max_spectators = PLAYBACK_SPECTATORS;
        config.spectator_delay = 0.0;
    });
    app.world_mut().resource_mut::<Time<Virtual>>().pause();
    if let Some(seek) = seek {
        app.world_mut().resource_mut::<Playback>().start_at = Some(seek.keyframe);
    }
    app.insert_resource(control)
        .insert_resource(CatchUp(seek.map(|s| s.tick)))
        .add_systems(
            Update,
            (announce_players, catch_up, pace_playback)
                .chain()
                .run_if(resource_exists::<Playback>),
        );
    info!("playing a demo at {tick_hz} Hz for spectators");
    app
}

/// The tick a seek goes on to from its keyframe, until it is there.
#[derive(Resource, Debug)]
struct CatchUp(Option<u32>);

/// On the way to a seek's tick: runs as many ticks next frame as are left (up to
/// [`CATCH_UP_TICKS`]) on the fixed clock itself, with the virtual clock stopped
/// ([`pace_playback`] holds it while a seek is on its way), so it lands on the tick
/// exactly. The first of them starts the world from the keyframe.
fn catch_up(
    tick: Res<Tick>,
    playback: Res<Playback>,
    mut target: ResMut<CatchUp>,
    mut fixed: ResMut<Time<Fixed>>,
) {
    let Some(to) = target.0 else {
        return;
    };
    let left = if playback.started {
        to.saturating_sub(tick.0)
    } else {
        1
    };
    if left == 0 || playback.outcome.is_some() {
        target.0 = None;
        return;
    }
    let step = fixed.timestep();
    fixed.accumulate_overstep(step * left.min(CATCH_UP_TICKS));
}

/// In playback, tells spectators who is in the demo: its players come and go by its
/// records (a keyframe, a join between ticks), not by joining, so nothing else does.
fn announce_players(
    named: Query<(Entity, &PlayerId, &PlayerName, Has<Recorded>), Changed<PlayerName>>,
    mut gone: RemovedComponents<PlayerId>,
    mut known: Local<HashMap<Entity, PlayerId>>,
    mut outbox: MessageWriter<crate::outbox::Outgoing>,
) {
    use crate::outbox::Outgoing;
    for entity in gone.read() {
        if let Some(id) = known.remove(&entity) {
            outbox.write(Outgoing::ToPlaying(ServerMessage::PlayerLeft {
                id,
                reason: "left".into(),
            }));
        }
    }
    for (entity, id, name, bot) in &named {
        known.insert(entity, *id);
        outbox.write(Outgoing::ToPlaying(ServerMessage::PlayerJoined {
            id: *id,
            name: name.0.clone(),
            bot,
        }));
    }
}

/// In playback, the demo waits for its first spectator (and for a seek to arrive), holds
/// still while the viewer pauses it, runs at the viewer's speed and stops where it ends,
/// telling the spectators why.
fn pace_playback(
    spectators: Query<(), With<Spectator>>,
    playback: Res<Playback>,
    control: Res<PlaybackControl>,
    catching_up: Res<CatchUp>,
    mut time: ResMut<Time<Virtual>>,
    mut outbox: MessageWriter<crate::outbox::Outgoing>,
    mut state: Local<(bool, bool)>,
) {
    let (watched, told) = &mut *state;
    *watched |= !spectators.is_empty();
    let ended = playback.outcome.as_ref();
    let run = *watched && ended.is_none() && catching_up.0.is_none() && !control.paused();
    let speed = control.speed();
    if time.relative_speed() != speed {
        time.set_relative_speed(speed);
    }
    if run && time.is_paused() {
        time.unpause();
    } else if !run && !time.is_paused() {
        time.pause();
    }
    if let (Some(outcome), false) = (ended, *told) {
        *told = true;
        let text = match outcome {
            Outcome::Matched => "the demo has ended".to_string(),
            Outcome::Differs { tick, what } => {
                format!(
                    "the demo stops here: this build plays it another way at tick {tick} ({what})"
                )
            }
            Outcome::Unreadable(e) => format!("the demo stops here: {e}"),
        };
        info!("{text}");
        outbox.write(crate::outbox::Outgoing::ToPlaying(
            ServerMessage::ServerText {
                kind: ServerTextKind::Say,
                text,
            },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seek_starts_from_the_last_keyframe_at_or_before_its_tick_within_the_demo() {
        let index = DemoIndex {
            tick_hz: 128,
            first: 100,
            end: 3000,
            keyframes: vec![100, 1380, 2660],
            unreadable: None,
        };
        let seek = |tick| {
            let s = index.seek(tick);
            (s.keyframe, s.tick)
        };
        assert_eq!(seek(0), (100, 100), "before the start: the start");
        assert_eq!(seek(1379), (100, 1379));
        assert_eq!(seek(1380), (1380, 1380));
        assert_eq!(seek(2700), (2660, 2700));
        assert_eq!(seek(u32::MAX), (2660, 2999), "past the end: the last tick");
        assert_eq!(index.ticks(), 2900);
    }

    #[test]
    fn the_speed_is_kept_within_its_bounds_and_a_pause_stops_the_rate() {
        let control = PlaybackControl::default();
        assert_eq!((control.speed(), control.rate()), (1.0, 1.0));
        assert_eq!(control.set_speed(0.01), SLOWEST);
        assert_eq!(control.set_speed(f32::INFINITY), FASTEST);
        assert_eq!(
            control.set_speed(f32::NAN),
            FASTEST,
            "not a number: as it was"
        );
        assert_eq!(control.set_speed(2.0), 2.0);
        control.set_paused(true);
        assert_eq!(control.rate(), 0.0);
    }
}
