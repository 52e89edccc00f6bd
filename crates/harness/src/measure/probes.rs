//! What a measurement observes: the server's truth, its combat log, and a probe on each
//! measured client, pooled into a report at the end.

use super::report::{NetcodeReport, mean, percentile};
use crate::stepper::FrameClock;
use bevy::prelude::*;
use sightline_client::{ClientStats, InputHistory, InputPacing, LocalPlayer};
use sightline_combat::{CombatEvent, HitboxHistory, SpawnCount, Vitals, WeaponKind};
use sightline_interpolation::{DrawMode, Drawn, RenderTime};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_prediction::{
    Correction, CorrectionCause, CorrectionCauses, Predicted, PredictionStats, VisualOffset,
};
use sightline_server::InputBuffer;
use sightline_sim::hash::{hash, unit};
use sightline_sim::{BotControlled, CurrentCmd, PlayerId, Tick, TickConfig};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Where each player was after every server tick, and its spawn count (which changes
/// when the server teleports it): (tick time, players); and who is dead now. Recorded
/// by [`record_truth`] after each tick, so a server catching up a stall's ticks in one
/// update leaves none out.
#[derive(Resource, Default)]
pub(super) struct Truth(
    Vec<(f64, BTreeMap<PlayerId, (Vec3, SpawnCount)>)>,
    BTreeSet<PlayerId>,
);

/// How far the drawn camera may move in a frame beyond what our own commands moved it
/// before the frame counts as a visible snap, metres.
pub(super) const SNAP_DISTANCE: f32 = 0.05;

/// How long after a respawn a player still drawn where it fell counts as held across
/// the respawn rather than as an error, seconds: long enough for a lost snapshot or two.
const RESPAWN_HOLD: f64 = 0.25;

/// Records the tick's truth: every player's position and spawn count, and who is dead.
pub(super) fn record_truth(
    mut truth: ResMut<Truth>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    players: Query<(&PlayerId, &PlayerState, &SpawnCount, &Vitals)>,
) {
    let time = f64::from(tick.0) / f64::from(config.tick_hz);
    if truth.0.last().is_some_and(|(t, _)| *t >= time) {
        return;
    }
    let positions = players
        .iter()
        .map(|(id, st, spawns, _)| (*id, (st.pos, *spawns)))
        .collect();
    truth.0.push((time, positions));
    truth.1 = players
        .iter()
        .filter(|(.., v)| !v.alive())
        .map(|(id, ..)| *id)
        .collect();
    // Drawn times lie well within the last few seconds.
    if truth.0.len() > 4096 {
        truth.0.drain(..2048);
    }
}

/// What each human player's tick did with its commands, logged after every tick for the
/// probes: the command it ran, the commands left waiting, and the server's running count
/// of its holds.
#[derive(Resource, Default)]
pub(super) struct TickLog(pub Vec<(PlayerId, TickTaken)>);

/// One player's tick, as [`TickLog`] keeps it.
#[derive(Debug, Clone, Copy)]
pub(super) struct TickTaken {
    /// Sequence of the command the tick ran.
    pub seq: u32,
    /// Commands left in the buffer.
    pub waiting: usize,
    /// Ticks the server has held this player so far.
    pub holds: u32,
    /// Commands the server has run as a tick's second so far, repaying holds.
    pub catch_ups: u32,
}

/// Logs what each human player's tick took from its buffer.
pub(super) fn log_ticks(
    mut log: ResMut<TickLog>,
    players: Query<(&PlayerId, &CurrentCmd, &InputBuffer)>,
) {
    for (id, cmd, buffer) in &players {
        log.0.push((
            *id,
            TickTaken {
                seq: cmd.0.seq,
                waiting: buffer.len(),
                holds: buffer.holds(),
                catch_ups: buffer.catch_ups(),
            },
        ));
    }
}

impl Truth {
    /// The players on the server at `time` (in the tick just before it).
    fn players_at(&self, time: f64) -> Vec<PlayerId> {
        let i = self.0.partition_point(|(t, _)| *t <= time);
        i.checked_sub(1)
            .and_then(|i| self.0.get(i))
            .map_or_else(Vec::new, |(_, players)| players.keys().copied().collect())
    }

    /// The server's present: the time of the newest tick recorded, seconds.
    pub(super) fn latest(&self) -> Option<f64> {
        self.0.last().map(|(t, _)| *t)
    }

    /// The server's position of `id` at `time`, between ticks linearly (up to the tick
    /// that teleported it, where it was before), and, if it respawned within
    /// [`RESPAWN_HOLD`] before `time`, where it fell.
    fn at(&self, id: PlayerId, time: f64) -> Option<(Vec3, Option<Vec3>)> {
        let i = self.0.partition_point(|(t, _)| *t <= time);
        let (t0, a) = self.0.get(i.checked_sub(1)?)?;
        let (t1, b) = self.0.get(i)?;
        let ((a, a_spawns), (b, b_spawns)) = (*a.get(&id)?, *b.get(&id)?);
        if a_spawns != b_spawns {
            return Some((a, None));
        }
        let f = ((time - t0) / (t1 - t0)) as f32;
        let fell = self.0[..i]
            .windows(2)
            .rev()
            .take_while(|w| w[1].0 >= time - RESPAWN_HOLD)
            .find_map(|w| match (w[0].1.get(&id), w[1].1.get(&id)) {
                (Some((p, m)), Some((_, n))) if m != n => Some(*p),
                _ => None,
            });
        Some((a.lerp(b, f), fell))
    }
}

/// A human player's hitscan shot or rocket, as the server's combat reported it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShotRecord {
    /// Who fired.
    pub shooter: PlayerId,
    /// With what.
    pub weapon: WeaponKind,
    /// The sequence of the command that fired.
    pub seq: u32,
    /// Server time less the command's view time, seconds.
    pub age: f64,
    /// The command's view time, server seconds.
    pub view_time: f64,
    /// Whether a wall lay between where the shot left and the body it went for (the
    /// player whose rewound body lies nearest the line of fire).
    pub blocked: bool,
    /// Whether it hit anyone.
    pub hit: bool,
}

/// The server's combat, logged each tick for the measurements to read.
#[derive(Resource, Default)]
pub(crate) struct CombatLog {
    /// Shots fired by human players (not bots).
    pub shots: Vec<ShotRecord>,
    /// Deaths, everyone.
    pub kills: u64,
    /// Rockets fired, everyone.
    pub rockets: u64,
    /// Hitscan shots fired, everyone.
    pub hitscan: u64,
}

/// Logs the tick's combat events.
pub(crate) fn log_combat(
    mut events: MessageReader<CombatEvent>,
    mut log: ResMut<CombatLog>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    history: Res<HitboxHistory>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    humans: Query<&PlayerId, Without<BotControlled>>,
) {
    let hz = config.tick_hz as f64;
    let first_of_tick = log.shots.len();
    for e in events.read() {
        match *e {
            CombatEvent::Fired {
                shooter,
                weapon,
                origin,
                dir,
                cmd: (seq, view),
                ..
            } => {
                if weapon == WeaponKind::Rockets {
                    log.rockets += 1;
                } else {
                    log.hitscan += 1;
                }
                if !humans.iter().any(|id| *id == shooter) {
                    continue;
                }
                // The body the shot went for: the rewound one nearest the line of fire,
                // ahead of the muzzle; is a wall closer than it?
                let body = history
                    .rewound(view, config.snapshot_every)
                    .into_iter()
                    .filter(|(id, _)| *id != shooter)
                    .map(|(_, b)| b.feet + Vec3::Y * params.eye(b.crouched) * 0.5 - origin)
                    .filter(|to| to.dot(dir) > 0.0)
                    .min_by(|a, b| {
                        let off = |to: &Vec3| (*to - dir * to.dot(dir)).length();
                        off(a).total_cmp(&off(b))
                    });
                let blocked =
                    body.is_some_and(|to| map.world.cast_ray(origin, dir, to.dot(dir)).is_some());
                log.shots.push(ShotRecord {
                    shooter,
                    weapon,
                    seq,
                    age: tick.0 as f64 / hz - view / hz,
                    view_time: view / hz,
                    blocked,
                    hit: false,
                });
            }
            CombatEvent::Hit { shooter, .. } => {
                if let Some(shot) = log.shots[first_of_tick..]
                    .iter_mut()
                    .rev()
                    .find(|s| s.shooter == shooter)
                {
                    shot.hit = true;
                }
            }
            CombatEvent::Killed { .. } => log.kills += 1,
            _ => {}
        }
    }
}

/// What one measured client's frames and commands showed.
#[derive(Default)]
pub(super) struct Probe {
    /// Its player on the server, once it has joined.
    pub(super) id: Option<PlayerId>,
    /// Seeds the key-press draws.
    seed: u64,
    fps: f64,
    /// Counters at the start of the measured span.
    start_corrections: usize,
    start_resets: u64,
    start_repeats: u32,
    start_wire: (u64, u64),
    /// The server's count of ticks it held this player, at the first and the latest
    /// server tick of the span.
    holds: Option<(u32, u32)>,
    /// The same for its commands run as a tick's second ([`TickTaken::catch_ups`]).
    catch_ups: Option<(u32, u32)>,
    /// The server's count of them at the latest tick, measuring or not.
    last_catch_ups: Option<u32>,
    /// Whether the span has started.
    pub(super) measuring: bool,
    /// Newest command sequence seen sampled, and simulated.
    last_sampled: u32,
    last_simulated: u32,
    /// Wall time of each command's key press, seconds, until the server simulates it.
    pressed: HashMap<u32, f64>,
    latencies_ms: Vec<f64>,
    /// Sum of buffer lengths left after ticks that took a command, and those ticks.
    waiting_sum: u64,
    taken: u64,
    pub(super) shot_ages_ms: Vec<f64>,
    errors: Vec<f64>,
    /// Remote-player frames in which a player that had respawned was still drawn where
    /// it fell: not compared.
    respawn_frames: u64,
    /// Frames in which the client drew its own player as a remote one too.
    ghost_frames: u64,
    /// Corrections counted so far, and those that came while the server had the player
    /// dead.
    corrections_seen: usize,
    dead_corrections: u64,
    /// Frames observed.
    client_frames: u64,
    frames: u64,
    late: u64,
    delays_ms: Vec<f64>,
    /// The server's present less the render time, each frame, milliseconds.
    drawn_lags_ms: Vec<f64>,
    /// Remote players in plain sight at the drawn time but not drawn, by id: since when
    /// (wall time, seconds).
    missing_since: HashMap<PlayerId, f64>,
    /// Remote-player frames in plain sight, and those of them not drawn.
    sight_frames: u64,
    missing_frames: u64,
    /// Players drawn at last after being in plain sight undrawn: how long each was
    /// missing, milliseconds.
    pop_ins_ms: Vec<f64>,
    last_render: Option<f64>,
    steps_back: u64,
    max_back_ms: f64,
    /// What the drawn camera had moved by besides our own commands at the last frame:
    /// the correction offset and the jumps so far (`PredictionStats::jumps`); and the
    /// teleports so far.
    last_view: Option<(Vec3, Vec3, u64)>,
    /// The newest correction, whose offset the camera is still fading.
    fading: Option<Correction>,
    /// Frames in which the drawn camera moved more than [`SNAP_DISTANCE`] beyond what our
    /// own commands moved it: by news, by anything else, and while dead or respawning
    /// (which the death camera shows; not counted in either).
    news_snaps: u64,
    snaps: u64,
    death_snaps: u64,
    start_news: u64,
    start_causes: CorrectionCauses,
    start_teleports: u64,
    /// Filled at the end.
    corrections: Vec<f64>,
    /// The corrections a player sees (all but the stop at death), metres.
    seen: Vec<f64>,
    causes: CorrectionCauses,
    news: u64,
    teleports: u64,
    resets: u64,
    repeats: u32,
    wire: (u64, u64),
}

impl Probe {
    /// A probe whose key-press draws follow `seed`, on a client at `fps`.
    pub(super) fn new(seed: u64, fps: f64) -> Self {
        Self {
            seed,
            fps,
            ..Default::default()
        }
    }

    /// Notes the start of the measured span.
    pub(super) fn start(&mut self, client: &mut App, link: &sightline_net::MemoryClientLink) {
        let w = client.world_mut();
        self.id = w
            .query_filtered::<&PlayerId, With<LocalPlayer>>()
            .iter(w)
            .next()
            .copied();
        assert!(self.id.is_some(), "a measured client has not joined");
        let stats = w.resource::<PredictionStats>();
        self.start_corrections = stats.corrections.len();
        self.corrections_seen = stats.corrections.len();
        self.start_resets = stats.resets;
        self.start_causes = stats.causes;
        self.start_teleports = stats.teleports;
        self.start_news = stats.news;
        self.start_repeats = w.resource::<InputPacing>().repeats;
        self.start_wire = link.wire_bytes_sent();
        self.measuring = true;
    }

    /// After one of the client's frames: the commands it sampled, its render time and
    /// every remote player as drawn.
    pub(super) fn observe_client(&mut self, client: &mut App, truth: &Truth) {
        let w = client.world_mut();
        let clock = *w.resource::<FrameClock>();
        let newest = w.resource::<InputHistory>().last_seq();
        if self.measuring && newest > self.last_sampled {
            // The frame read its input at its start; the key went down some time in the
            // frame before.
            let before = unit(hash(self.seed, clock.count, 0x006b_6579)) as f64;
            let frame = (clock.last_ns - clock.previous_ns) as f64 / 1e9;
            let pressed = clock.last_seconds() - before * frame;
            for seq in self.last_sampled + 1..=newest {
                self.pressed.insert(seq, pressed);
            }
        }
        self.last_sampled = self.last_sampled.max(newest);
        if !self.measuring {
            return;
        }
        self.client_frames += 1;
        let corrections = w.resource::<PredictionStats>().corrections.len();
        if self.id.is_some_and(|id| truth.1.contains(&id)) {
            self.dead_corrections += corrections.saturating_sub(self.corrections_seen) as u64;
        }
        let dead = self.id.is_some_and(|id| truth.1.contains(&id));
        self.watch_camera(w, corrections, dead);
        self.corrections_seen = corrections;
        let render = *w.resource::<RenderTime>();
        if let Some(t) = render.server_time {
            if let Some(previous) = self.last_render
                && t < previous
            {
                self.steps_back += 1;
                self.max_back_ms = self.max_back_ms.max((previous - t) * 1000.0);
            }
            self.last_render = Some(t);
            self.delays_ms.push(render.delay * 1000.0);
            if let Some(present) = truth.latest() {
                self.drawn_lags_ms.push((present - t) * 1000.0);
            }
        }
        let drawn: Vec<(PlayerId, Drawn)> = w
            .query::<(&PlayerId, &Drawn)>()
            .iter(w)
            .map(|(id, d)| (*id, *d))
            .collect();
        if let Some(t) = render.server_time {
            self.look_for_pop_ins(w, truth, t, clock.last_seconds(), &drawn);
        }
        for (id, d) in drawn {
            // Not drawn: never sampled, or not yet in view at the drawn time.
            if d.time == 0.0 || d.mode == DrawMode::Unseen {
                continue;
            }
            // Our own player held as a remote one as well: a ghost, not another player.
            if Some(id) == self.id {
                self.ghost_frames += 1;
                continue;
            }
            self.frames += 1;
            self.late += u64::from(d.mode != DrawMode::Interpolated);
            let Some((true_pos, fell)) = truth.at(id, d.time) else {
                continue;
            };
            // Still drawn where it fell after a respawn: the client holds a player there
            // until it has a snapshot of the new life, so it cannot know the tick between
            // two snapshots (or more, when some are lost) at which the respawn happened.
            if fell.is_some_and(|p| d.pos.distance(p) < d.pos.distance(true_pos)) {
                self.respawn_frames += 1;
                continue;
            }
            self.errors.push(d.pos.distance(true_pos) as f64);
        }
    }

    /// Counts a visible snap when the drawn camera (the predicted position plus the
    /// fading correction offset, as the game draws it) moved this frame more than
    /// [`SNAP_DISTANCE`] beyond what our own commands moved it: that is the offset's
    /// change plus the jumps server states made to the predicted position, since our
    /// commands move the predicted position alone. Each is put down to the newest
    /// correction (the one whose offset is fading, or the one that jumped): news or not;
    /// or to death: the stop at death, while the server has us dead, or the frame we
    /// respawn.
    fn watch_camera(&mut self, w: &mut World, corrections: usize, dead: bool) {
        let stats = w.resource::<PredictionStats>();
        let (jumps, teleports) = (stats.jumps, stats.teleports);
        if corrections > self.corrections_seen {
            self.fading = stats.corrections.iter().last().copied();
        }
        let Some(offset) = w
            .query_filtered::<&VisualOffset, With<Predicted>>()
            .iter(w)
            .next()
            .map(|o| o.0)
        else {
            self.last_view = None;
            return;
        };
        let last = self.last_view.replace((offset, jumps, teleports));
        let Some((last_offset, last_jumps, last_teleports)) = last else {
            return;
        };
        let unexplained = (offset - last_offset) + (jumps - last_jumps);
        if unexplained.length() <= SNAP_DISTANCE {
            return;
        }
        let killed = self
            .fading
            .is_some_and(|c| c.cause == CorrectionCause::Killed);
        *if dead || teleports != last_teleports || killed {
            &mut self.death_snaps
        } else if self.fading.is_some_and(|c| c.news) {
            &mut self.news_snaps
        } else {
            &mut self.snaps
        } += 1;
    }

    /// Notes the remote players in plain sight of our eye at render time `t` (a clear
    /// line to the middle of their body where the server had them then) that the client
    /// does not draw, and those it draws at last after missing: pop-ins. Players that
    /// have just respawned, or are dead, and frames while we are dead, are left out, and
    /// a spell of missing ends when the player dies.
    fn look_for_pop_ins(
        &mut self,
        w: &mut World,
        truth: &Truth,
        t: f64,
        now: f64,
        drawn: &[(PlayerId, Drawn)],
    ) {
        let Some(me) = self.id else { return };
        if truth.1.contains(&me) {
            self.missing_since.clear();
            return;
        }
        let Some(eye) = w
            .query_filtered::<&PlayerState, With<LocalPlayer>>()
            .iter(w)
            .next()
            .map(|s| w.resource::<MoveParams>().eye_position(s))
        else {
            return;
        };
        let middle = w.resource::<MoveParams>().height(false) * 0.5;
        let map = w.resource::<CurrentMap>();
        for id in truth.players_at(t) {
            if id == me {
                continue;
            }
            // A player who died (or left) while missing was not waiting to be drawn
            // through the death: the spell ends there, not at the next life's first frame.
            let alive = (!truth.1.contains(&id)).then(|| truth.at(id, t)).flatten();
            let Some((pos, fell)) = alive else {
                self.missing_since.remove(&id);
                continue;
            };
            let body = pos + Vec3::Y * middle;
            if fell.is_some() || !map.world.is_clear(eye, body - eye) {
                self.missing_since.remove(&id);
                continue;
            }
            self.sight_frames += 1;
            let shown = drawn
                .iter()
                .any(|(d_id, d)| *d_id == id && d.time != 0.0 && d.mode != DrawMode::Unseen);
            if shown {
                if let Some(since) = self.missing_since.remove(&id) {
                    self.pop_ins_ms.push((now - since) * 1000.0);
                }
            } else {
                self.missing_frames += 1;
                self.missing_since.entry(id).or_insert(now);
            }
        }
    }

    /// After a server tick, this client's player there: whether the tick took a new
    /// command, and how many were left waiting; `now` is the wall time of the server's
    /// update that ran the tick.
    pub(super) fn observe_server(&mut self, taken: TickTaken, now: f64) {
        if self.measuring {
            let first = self.holds.map_or(taken.holds, |(first, _)| first);
            self.holds = Some((first, taken.holds));
            let first = self.catch_ups.map_or(taken.catch_ups, |(first, _)| first);
            self.catch_ups = Some((first, taken.catch_ups));
        }
        // A tick that ran two commands ran the one before `seq` as well (a second command
        // is always the next in sequence).
        let twice = self
            .last_catch_ups
            .replace(taken.catch_ups)
            .is_some_and(|last| last != taken.catch_ups);
        if twice {
            self.simulated(taken.seq.wrapping_sub(1), None, now);
        }
        self.simulated(taken.seq, Some(taken.waiting), now);
    }

    /// The server ran our command `seq` in a tick at `now`, leaving `waiting` (for the
    /// tick's last command) in its buffer.
    fn simulated(&mut self, seq: u32, waiting: Option<usize>, now: f64) {
        if seq <= self.last_simulated {
            return;
        }
        self.last_simulated = seq;
        if !self.measuring {
            return;
        }
        if let Some(waiting) = waiting {
            self.waiting_sum += waiting as u64;
            self.taken += 1;
        }
        if let Some(pressed) = self.pressed.remove(&seq) {
            self.latencies_ms.push((now - pressed) * 1000.0);
        }
        // Commands never simulated (a repeat stood in, or lost) will not come.
        self.pressed.retain(|&s, _| s > seq);
    }

    /// Takes the client's counters at the end of the span.
    pub(super) fn finish(&mut self, client: &App, link: &sightline_net::MemoryClientLink) {
        let w = client.world();
        let stats = w.resource::<PredictionStats>();
        let span = &stats.corrections[self.start_corrections..];
        self.corrections = span.iter().map(|c| f64::from(c.size)).collect();
        self.seen = span
            .iter()
            .filter(|c| c.seen())
            .map(|c| f64::from(c.size))
            .collect();
        self.resets = stats.resets - self.start_resets;
        let (now, then) = (stats.causes, self.start_causes);
        self.causes = now.since(&then);
        self.news = stats.news - self.start_news;
        self.teleports = stats.teleports - self.start_teleports;
        self.repeats = w.resource::<InputPacing>().repeats - self.start_repeats;
        let (up, down) = link.wire_bytes_sent();
        self.wire = (up - self.start_wire.0, down - self.start_wire.1);
        assert!(
            w.resource::<ClientStats>().snapshots > 0,
            "a measured client got no snapshots"
        );
    }
}

impl NetcodeReport {
    /// Pools `probes` over a span of `seconds` at `tick_hz`.
    pub(super) fn pooled(probes: &[&Probe], seconds: f64, tick_hz: u32) -> Self {
        let n = probes.len().max(1) as f64;
        let minutes = seconds / 60.0;
        let gather = |f: fn(&Probe) -> &Vec<f64>| {
            let mut v: Vec<f64> = probes.iter().flat_map(|p| f(p).iter().copied()).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let corrections = gather(|p| &p.corrections);
        let seen = gather(|p| &p.seen);
        let latencies = gather(|p| &p.latencies_ms);
        let ages = gather(|p| &p.shot_ages_ms);
        let errors = gather(|p| &p.errors);
        let delays = gather(|p| &p.delays_ms);
        let lags = gather(|p| &p.drawn_lags_ms);
        let pop_ins = gather(|p| &p.pop_ins_ms);
        let sum = |f: fn(&Probe) -> u64| probes.iter().map(|p| f(p)).sum::<u64>();
        let (frames, late) = (sum(|p| p.frames), sum(|p| p.late));
        let waiting = sum(|p| p.waiting_sum) as f64 / sum(|p| p.taken).max(1) as f64;
        Self {
            fps: probes.iter().map(|p| p.fps).sum::<f64>() / n,
            corrections_per_min: corrections.len() as f64 / minutes / n,
            seen_per_min: seen.len() as f64 / minutes / n,
            seen_p99: percentile(&seen, 0.99),
            correction_mean: mean(&corrections),
            correction_p99: percentile(&corrections, 0.99),
            correction_max: corrections.last().copied().unwrap_or(0.0),
            corrections_by_cause_per_min: probes
                .iter()
                .map(|p| p.causes.as_array())
                .fold([0; 6], |sum, c| std::array::from_fn(|k| sum[k] + c[k]))
                .map(|c| c as f64 / minutes / n),
            corrections_while_dead_per_min: sum(|p| p.dead_corrections) as f64 / minutes / n,
            news: sum(|p| p.news),
            client_minutes: minutes * n,
            snaps: sum(|p| p.snaps),
            news_snaps: sum(|p| p.news_snaps),
            death_snaps: sum(|p| p.death_snaps),
            teleports_per_min: sum(|p| p.teleports) as f64 / minutes / n,
            resets: sum(|p| p.resets) as f64 / n,
            repeats_per_min: sum(|p| p.repeats as u64) as f64 / minutes / n,
            held_per_min: sum(|p| p.holds.map_or(0, |(a, b)| b.wrapping_sub(a)) as u64) as f64
                / minutes
                / n,
            caught_up_per_min: sum(|p| p.catch_ups.map_or(0, |(a, b)| b.wrapping_sub(a)) as u64)
                as f64
                / minutes
                / n,
            input_latency_ms_mean: mean(&latencies),
            input_latency_ms_p99: percentile(&latencies, 0.99),
            input_buffer_ms: waiting * 1000.0 / tick_hz as f64,
            shots: ages.len() as u64,
            shot_age_ms_mean: mean(&ages),
            shot_age_ms_p99: percentile(&ages, 0.99),
            interp_error_mean: mean(&errors),
            interp_error_p99: percentile(&errors, 0.99),
            interp_error_max: errors.last().copied().unwrap_or(0.0),
            extrapolated_pct: 100.0 * late as f64 / frames.max(1) as f64,
            self_drawn_pct: 100.0 * sum(|p| p.ghost_frames) as f64
                / sum(|p| p.client_frames).max(1) as f64,
            respawn_frames_pct: 100.0 * sum(|p| p.respawn_frames) as f64 / frames.max(1) as f64,
            interp_delay_ms_mean: mean(&delays),
            interp_delay_ms_p99: percentile(&delays, 0.99),
            drawn_lag_ms_mean: mean(&lags),
            drawn_lag_ms_p99: percentile(&lags, 0.99),
            pop_ins_per_min: pop_ins.len() as f64 / minutes / n,
            pop_in_ms_p99: percentile(&pop_ins, 0.99),
            missing_pct: 100.0 * sum(|p| p.missing_frames) as f64
                / sum(|p| p.sight_frames).max(1) as f64,
            render_steps_back: sum(|p| p.steps_back) as f64 / n,
            render_step_back_max_ms: probes.iter().map(|p| p.max_back_ms).fold(0.0, f64::max),
            up_bytes_per_s: sum(|p| p.wire.0) as f64 / seconds / n,
            down_bytes_per_s: sum(|p| p.wire.1) as f64 / seconds / n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client world with our predicted player at the origin.
    fn client() -> World {
        let mut w = World::new();
        w.init_resource::<PredictionStats>();
        w.spawn((Predicted, PlayerState::default()));
        w
    }

    fn set_offset(w: &mut World, to: Vec3) {
        let mut q = w.query_filtered::<&mut VisualOffset, With<Predicted>>();
        q.single_mut(w).unwrap().0 = to;
    }

    /// One frame's watch, with the corrections counted so far.
    fn frame(p: &mut Probe, w: &mut World, dead: bool) {
        let corrections = w.resource::<PredictionStats>().corrections.len();
        p.watch_camera(w, corrections, dead);
        p.corrections_seen = corrections;
    }

    fn correct(w: &mut World, jump: Vec3, news: bool, absorbed: bool) {
        let mut stats = w.resource_mut::<PredictionStats>();
        stats.corrections.push(Correction {
            size: jump.length(),
            cause: CorrectionCause::Knockback,
            news,
        });
        stats.jumps += jump;
        if absorbed {
            let mut q = w.query_filtered::<&mut VisualOffset, With<Predicted>>();
            q.single_mut(w).unwrap().0 -= jump;
        }
    }

    #[test]
    fn a_snap_is_what_the_camera_did_beyond_our_own_commands_put_down_to_its_cause() {
        let mut w = client();
        let mut p = Probe::default();
        frame(&mut p, &mut w, false);
        // A correction absorbed into the offset moves nothing drawn.
        correct(&mut w, Vec3::X, false, true);
        frame(&mut p, &mut w, false);
        assert_eq!((p.snaps, p.news_snaps), (0, 0));
        // Its fading: a frame taking 40 % of a metre is a snap; 3 cm is not.
        set_offset(&mut w, Vec3::NEG_X * 0.6);
        frame(&mut p, &mut w, false);
        set_offset(&mut w, Vec3::NEG_X * 0.57);
        frame(&mut p, &mut w, false);
        assert_eq!((p.snaps, p.news_snaps), (1, 0));
        // News, jumped to at once (not absorbed): a snap put down to news.
        correct(&mut w, Vec3::Z * 0.5, true, false);
        frame(&mut p, &mut w, false);
        assert_eq!((p.snaps, p.news_snaps), (1, 1));
        // The same while dead is the death camera's.
        correct(&mut w, Vec3::Z * 0.5, false, false);
        frame(&mut p, &mut w, true);
        assert_eq!((p.snaps, p.news_snaps, p.death_snaps), (1, 1, 1));
        // A respawn's teleport too.
        let mut stats = w.resource_mut::<PredictionStats>();
        stats.jumps += Vec3::Y * 20.0;
        stats.teleports += 1;
        frame(&mut p, &mut w, false);
        assert_eq!((p.snaps, p.news_snaps, p.death_snaps), (1, 1, 2));
    }
}
