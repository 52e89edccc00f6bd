//! Measuring netcode quality: a server and measured clients on the stepper behind link
//! conditioners, compared frame by frame with the server's truth.
//!
//! A [`Scenario`] says who plays and how: the measured clients' frame rates, jitter and
//! clock drift ([`Frames`]), each direction of their links (latency, jitter, loss, bursty
//! or not) and a route change mid-run ([`Link`]), and whether they fight server bots and
//! each other ([`Combat`]). [`run`] plays it and reports per client ([`NetcodeReport`]).
//! The lab baseline ([`measure`], [`Conditions`]) is the original best case: two
//! bot-driven clients that never fire, in lockstep with the server, independent loss and
//! uniform jitter, the same both ways. Hit registration is measured in [`hits`].
//!
//! What is observed, and where:
//! - **corrections, resets**: the client's `PredictionStats`; **server repeats**: the
//!   running total the server reports in snapshots (`InputPacing::repeats`).
//! - **effective input latency**: each command is stamped when the client's frame read
//!   the input that made it, taking a key press to fall uniformly within the frame before
//!   (a seeded draw), on the wall clock; and again when the server's tick took it from the
//!   buffer (the player's `CurrentCmd` changing sequence). Commands the server never
//!   simulated (late ones its repeat stood in for) are not counted.
//! - **input buffer**: by Little's law from the server's `InputBuffer` lengths after each
//!   tick: the mean number of ticks a command waits between the server's frame receiving
//!   it and the tick taking it is the sum of the lengths left after each tick over the
//!   commands taken.
//! - **world age of shots**: for each hitscan shot of a measured client, the server's
//!   tick time less the view time its command carries (what lag compensation rewinds to).
//! - **interpolation**: after every client frame, each remote player's `Drawn` position
//!   against where the server had it at the drawn time; the `RenderTime`'s delay, and
//!   whether its time went backwards since the previous frame.
//! - **bandwidth**: the in-memory links' counts with netcode's and UDP/IP's headers.

pub mod hits;

pub use hits::{HitReport, HitSetup, measure_hits, measure_hits_with};

use crate::player::{PlayerBot, drive_with_bot};
use crate::stepper::{FrameClock, Frames, Stepper, Updated};
use bevy::prelude::*;
use sightline_bots::BotSkill;
use sightline_client::{ClientStats, InputHistory, InputPacing, LocalPlayer};
use sightline_combat::{CombatEvent, HitboxHistory, SpawnCount, Vitals, WeaponKind};
use sightline_interpolation::{DrawMode, Drawn, RenderTime};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
pub use sightline_net::ConditionerSettings;
use sightline_prediction::{CorrectionCauses, PredictionStats};
use sightline_server::{InputBuffer, MatchRules, ServerConfig};
use sightline_sim::hash::{hash, unit};
use sightline_sim::{BotControlled, CurrentCmd, PlayerId, Tick, TickConfig};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Network conditions for a lab measurement: the same both ways, independent loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// Round-trip latency added, milliseconds (half each way).
    pub rtt_ms: f32,
    /// One-way jitter, milliseconds (each packet's delay varies by up to this either way).
    pub jitter_ms: f32,
    /// Loss each way, percent.
    pub loss_pct: f32,
}

impl Conditions {
    /// One direction's settings.
    pub fn one_way(&self) -> ConditionerSettings {
        ConditionerSettings {
            latency_ms: self.rtt_ms / 2.0,
            jitter_ms: self.jitter_ms,
            loss_pct: self.loss_pct,
            ..Default::default()
        }
    }

    /// The link: these settings both ways, no route change.
    pub fn link(&self) -> Link {
        Link {
            up: self.one_way(),
            down: self.one_way(),
            route_change: None,
        }
    }
}

/// A client's link, each direction on its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Client to server.
    pub up: ConditionerSettings,
    /// Server to client.
    pub down: ConditionerSettings,
    /// A change of route during the measured span.
    pub route_change: Option<RouteChange>,
}

impl Link {
    /// Round-trip latency before any route change, milliseconds.
    pub fn rtt_ms(&self) -> f32 {
        self.up.latency_ms + self.down.latency_ms
    }
}

/// The route changes: from `after_seconds` into the measured span, every packet takes
/// `extra_ms` longer each way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteChange {
    /// Seconds after the measurement starts.
    pub after_seconds: f64,
    /// Latency added each way, milliseconds.
    pub extra_ms: f32,
}

/// A fight: server bots, and the measured clients played by [`PlayerBot`]s that fire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Combat {
    /// Bots on the server.
    pub bots: u8,
    /// How well everyone fights.
    pub skill: BotSkill,
}

/// Who plays, where, and over what.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Map.
    pub map: String,
    /// Tick and snapshot rates.
    pub tick: TickConfig,
    /// Every measured client's link (each client's own seeded copy).
    pub link: Link,
    /// The measured clients, one per entry: how their frames come.
    pub clients: Vec<Frames>,
    /// `None`: the clients are driven by their own bot input and never fire, and no bots
    /// are on the server.
    pub combat: Option<Combat>,
    /// Seconds played before measuring.
    pub warmup: f64,
    /// Seconds measured.
    pub seconds: f64,
    /// Makes the run reproducible.
    pub seed: u64,
}

/// The frame rates of the realistic scenario's clients, one client each.
pub const REALISTIC_FPS: [f64; 4] = [30.0, 60.0, 144.0, 240.0];

impl Scenario {
    /// The lab baseline: `clients` bot-driven clients in lockstep with a 128 Hz server
    /// (64 Hz snapshots) on `map`, never firing, under `conditions` both ways.
    pub fn lab(conditions: Conditions, clients: usize, map: &str, seconds: f64, seed: u64) -> Self {
        let tick = TickConfig::new(128, 64).expect("valid rates");
        Self {
            map: map.into(),
            tick,
            link: conditions.link(),
            clients: vec![Frames::lockstep(tick.tick_hz); clients],
            combat: None,
            warmup: 3.0,
            seconds,
            seed,
        }
    }

    /// The realistic scenario: a 128 Hz server (64 Hz snapshots) on `map` with four
    /// bots, and one client at each of [`REALISTIC_FPS`], every frame's length varying by
    /// up to 20 % and clocks running 0.1 % fast or slow (alternately), all fighting.
    pub fn realistic(link: Link, map: &str, seconds: f64, seed: u64) -> Self {
        let tick = TickConfig::new(128, 64).expect("valid rates");
        let clients = REALISTIC_FPS
            .iter()
            .enumerate()
            .map(|(i, &fps)| Frames {
                fps,
                jitter: 0.2,
                drift: if i % 2 == 0 { 0.001 } else { -0.001 },
                seed: hash(seed, i as u64, 0x0066_7073),
            })
            .collect();
        Self {
            map: map.into(),
            tick,
            link,
            clients,
            combat: Some(Combat {
                bots: 4,
                skill: BotSkill::Normal,
            }),
            warmup: 5.0,
            seconds,
            seed,
        }
    }
}

/// What one measurement found, for one client or pooled over several.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetcodeReport {
    /// Frames per second the client ran at (the mean when pooled).
    pub fps: f64,
    /// Prediction corrections per minute per client.
    pub corrections_per_min: f64,
    /// Mean correction size, metres (0 when none).
    pub correction_mean: f64,
    /// 99th percentile correction size, metres.
    pub correction_p99: f64,
    /// Largest correction, metres.
    pub correction_max: f64,
    /// Corrections per minute per client by the cause prediction gave them, in the order
    /// of `CorrectionCauses::as_array`: our own movement mispredicted, our input late (the
    /// server repeated a command), no prediction to compare; and other players' doing: a
    /// collision, knockback, being killed.
    pub corrections_by_cause_per_min: [f64; 6],
    /// Of the corrections, those that came while the server had the player dead, per
    /// minute per client (observed by the harness, whatever their cause).
    pub corrections_while_dead_per_min: f64,
    /// Teleports (respawns) prediction adopted without a correction, per minute per
    /// client.
    pub teleports_per_min: f64,
    /// Times prediction gave up waiting for the server and started over, per client.
    pub resets: f64,
    /// Ticks the server repeated a client's command, per minute per client.
    pub repeats_per_min: f64,
    /// Ticks the server held the player waiting for a late command, per minute (each
    /// delays the player's commands by a tick until pacing drains it, and corrects
    /// nothing).
    pub held_per_min: f64,
    /// Key press to the server simulating the command, milliseconds: mean.
    pub input_latency_ms_mean: f64,
    /// Its 99th percentile.
    pub input_latency_ms_p99: f64,
    /// Mean time a command waits in the server's buffer, milliseconds.
    pub input_buffer_ms: f64,
    /// Hitscan shots fired by the client(s) in the span.
    pub shots: u64,
    /// Age of the world each shot was judged against (server time less the view time its
    /// command carried), milliseconds: mean.
    pub shot_age_ms_mean: f64,
    /// Its 99th percentile.
    pub shot_age_ms_p99: f64,
    /// Mean distance between where a remote player was drawn and where the server had it
    /// at the drawn time, metres.
    pub interp_error_mean: f64,
    /// 99th percentile of that distance, metres.
    pub interp_error_p99: f64,
    /// Largest of that distance, metres.
    pub interp_error_max: f64,
    /// Share of remote-player frames drawn past the newest snapshot, percent.
    pub extrapolated_pct: f64,
    /// Share of the client's frames in which it also drew its own player as a remote
    /// player (a ghost of itself), percent.
    pub self_drawn_pct: f64,
    /// Share of remote-player frames in which a player that had respawned was still drawn
    /// where it fell, left out of the interpolation error (the client holds it there until
    /// a snapshot of the new life arrives, so cannot know the tick between two snapshots
    /// at which it respawned), percent.
    pub respawn_frames_pct: f64,
    /// Interpolation delay over the frames, milliseconds: mean.
    pub interp_delay_ms_mean: f64,
    /// Its 99th percentile.
    pub interp_delay_ms_p99: f64,
    /// Frames whose render time was earlier than the previous frame's, per client.
    pub render_steps_back: f64,
    /// Largest such step back, milliseconds.
    pub render_step_back_max_ms: f64,
    /// Bytes per second per client, client to server, with netcode's and UDP/IP's headers.
    pub up_bytes_per_s: f64,
    /// Bytes per second per client, server to client, with the same headers.
    pub down_bytes_per_s: f64,
}

/// What a scenario found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScenarioReport {
    /// Each measured client, in the scenario's order.
    pub clients: Vec<NetcodeReport>,
    /// All of them pooled.
    pub pooled: NetcodeReport,
    /// Deaths per minute, everyone on the server.
    pub kills_per_min: f64,
    /// Rockets fired per minute, everyone.
    pub rockets_per_min: f64,
    /// Hitscan shots per minute, everyone.
    pub shots_per_min: f64,
    /// Input packets the server dropped because it no longer held the command they were
    /// written against, over the whole run: an honest client never causes one.
    pub unresolved_inputs: u64,
}

/// The nearest-rank `q` quantile (0 to 1) of sorted values, or 0 when there are none.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The mean of `values`, or 0 when there are none.
pub(crate) fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Where each player was after every server tick, and its spawn count (which changes
/// when the server teleports it): (tick time, players); and who is dead now.
#[derive(Default)]
struct Truth(
    Vec<(f64, BTreeMap<PlayerId, (Vec3, SpawnCount)>)>,
    BTreeSet<PlayerId>,
);

/// How long after a respawn a player still drawn where it fell counts as held across
/// the respawn rather than as an error, seconds: long enough for a lost snapshot or two.
const RESPAWN_HOLD: f64 = 0.25;

impl Truth {
    fn record(&mut self, server: &mut App) {
        let w = server.world_mut();
        let tick = w.resource::<Tick>().0;
        let time = tick as f64 / w.resource::<TickConfig>().tick_hz as f64;
        if self.0.last().is_some_and(|(t, _)| *t >= time) {
            return;
        }
        let positions = w
            .query::<(&PlayerId, &PlayerState, &SpawnCount)>()
            .iter(w)
            .map(|(id, st, spawns)| (*id, (st.pos, *spawns)))
            .collect();
        self.0.push((time, positions));
        self.1 = w
            .query::<(&PlayerId, &Vitals)>()
            .iter(w)
            .filter(|(_, v)| !v.alive())
            .map(|(id, _)| *id)
            .collect();
        // Drawn times lie well within the last few seconds.
        if self.0.len() > 4096 {
            self.0.drain(..2048);
        }
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
    humans: Query<(&PlayerId, &CurrentCmd), Without<BotControlled>>,
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
                ..
            } => {
                if weapon == WeaponKind::Rockets {
                    log.rockets += 1;
                } else {
                    log.hitscan += 1;
                }
                let Some((_, cmd)) = humans.iter().find(|(id, _)| **id == shooter) else {
                    continue;
                };
                // The body the shot went for: the rewound one nearest the line of fire,
                // ahead of the muzzle; is a wall closer than it?
                let view = cmd.0.view_time();
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
                    seq: cmd.0.seq,
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
struct Probe {
    /// Its player on the server, once it has joined.
    id: Option<PlayerId>,
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
    /// Whether the span has started.
    measuring: bool,
    /// Newest command sequence seen sampled, and simulated.
    last_sampled: u32,
    last_simulated: u32,
    /// Wall time of each command's key press, seconds, until the server simulates it.
    pressed: HashMap<u32, f64>,
    latencies_ms: Vec<f64>,
    /// Sum of buffer lengths left after ticks that took a command, and those ticks.
    waiting_sum: u64,
    taken: u64,
    shot_ages_ms: Vec<f64>,
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
    last_render: Option<f64>,
    steps_back: u64,
    max_back_ms: f64,
    start_causes: CorrectionCauses,
    start_teleports: u64,
    /// Filled at the end.
    corrections: Vec<f64>,
    causes: CorrectionCauses,
    teleports: u64,
    resets: u64,
    repeats: u32,
    wire: (u64, u64),
}

impl Probe {
    /// Notes the start of the measured span.
    fn start(&mut self, client: &mut App, link: &sightline_net::MemoryClientLink) {
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
        self.start_repeats = w.resource::<InputPacing>().repeats;
        self.start_wire = link.wire_bytes_sent();
        self.measuring = true;
    }

    /// After one of the client's frames: the commands it sampled, its render time and
    /// every remote player as drawn.
    fn observe_client(&mut self, client: &mut App, truth: &Truth) {
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
        }
        let drawn: Vec<(PlayerId, Drawn)> = w
            .query::<(&PlayerId, &Drawn)>()
            .iter(w)
            .map(|(id, d)| (*id, *d))
            .collect();
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
            if d.pos.distance(true_pos) > 1.0 {
                static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                if N.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 10 {
                    eprintln!(
                        "TEMP id {id:?} time {:.4} drawn {:?} true {true_pos:?} mode {:?}",
                        d.time, d.pos, d.mode
                    );
                }
            }
            self.errors.push(d.pos.distance(true_pos) as f64);
        }
    }

    /// After a server tick, this client's player there: whether the tick took a new
    /// command, and how many were left waiting.
    fn observe_server(&mut self, cmd: &CurrentCmd, buffer: &InputBuffer, now: f64) {
        if self.measuring {
            let first = self.holds.map_or(buffer.holds(), |(first, _)| first);
            self.holds = Some((first, buffer.holds()));
        }
        let seq = cmd.0.seq;
        if seq <= self.last_simulated {
            return;
        }
        self.last_simulated = seq;
        if !self.measuring {
            return;
        }
        self.waiting_sum += buffer.len() as u64;
        self.taken += 1;
        if let Some(pressed) = self.pressed.remove(&seq) {
            self.latencies_ms.push((now - pressed) * 1000.0);
        }
        // Commands never simulated (a repeat stood in, or lost) will not come.
        self.pressed.retain(|&s, _| s > seq);
    }

    /// Takes the client's counters at the end of the span.
    fn finish(&mut self, client: &App, link: &sightline_net::MemoryClientLink) {
        let w = client.world();
        let stats = w.resource::<PredictionStats>();
        self.corrections = stats.corrections[self.start_corrections..]
            .iter()
            .map(|&c| c as f64)
            .collect();
        self.resets = stats.resets - self.start_resets;
        let (now, then) = (stats.causes, self.start_causes);
        self.causes = now.since(&then);
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
    fn pooled(probes: &[&Probe], seconds: f64, tick_hz: u32) -> Self {
        let n = probes.len().max(1) as f64;
        let minutes = seconds / 60.0;
        let gather = |f: fn(&Probe) -> &Vec<f64>| {
            let mut v: Vec<f64> = probes.iter().flat_map(|p| f(p).iter().copied()).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let corrections = gather(|p| &p.corrections);
        let latencies = gather(|p| &p.latencies_ms);
        let ages = gather(|p| &p.shot_ages_ms);
        let errors = gather(|p| &p.errors);
        let delays = gather(|p| &p.delays_ms);
        let sum = |f: fn(&Probe) -> u64| probes.iter().map(|p| f(p)).sum::<u64>();
        let (frames, late) = (sum(|p| p.frames), sum(|p| p.late));
        let waiting = sum(|p| p.waiting_sum) as f64 / sum(|p| p.taken).max(1) as f64;
        Self {
            fps: probes.iter().map(|p| p.fps).sum::<f64>() / n,
            corrections_per_min: corrections.len() as f64 / minutes / n,
            correction_mean: mean(&corrections),
            correction_p99: percentile(&corrections, 0.99),
            correction_max: corrections.last().copied().unwrap_or(0.0),
            corrections_by_cause_per_min: probes
                .iter()
                .map(|p| p.causes.as_array())
                .fold([0; 6], |sum, c| std::array::from_fn(|k| sum[k] + c[k]))
                .map(|c| c as f64 / minutes / n),
            corrections_while_dead_per_min: sum(|p| p.dead_corrections) as f64 / minutes / n,
            teleports_per_min: sum(|p| p.teleports) as f64 / minutes / n,
            resets: sum(|p| p.resets) as f64 / n,
            repeats_per_min: sum(|p| p.repeats as u64) as f64 / minutes / n,
            held_per_min: sum(|p| p.holds.map_or(0, |(a, b)| b.wrapping_sub(a)) as u64) as f64
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
            render_steps_back: sum(|p| p.steps_back) as f64 / n,
            render_step_back_max_ms: probes.iter().map(|p| p.max_back_ms).fold(0.0, f64::max),
            up_bytes_per_s: sum(|p| p.wire.0) as f64 / seconds / n,
            down_bytes_per_s: sum(|p| p.wire.1) as f64 / seconds / n,
        }
    }
}

/// A server for `scenario`, its combat logged; with no match limits in a fight, so no
/// intermission interrupts the measurement.
pub(crate) fn scenario_server(scenario: &Scenario) -> Stepper {
    let (bots, skill) = scenario
        .combat
        .map_or((0, BotSkill::Normal), |c| (c.bots, c.skill));
    let rules = if scenario.combat.is_some() {
        MatchRules {
            fraglimit: 0,
            timelimit: 0.0,
            ..Default::default()
        }
    } else {
        MatchRules::default()
    };
    let config = ServerConfig {
        name: "measure".into(),
        max_players: 16,
        bots,
        bot_skill: skill,
        rules,
        tick: scenario.tick,
        ..Default::default()
    };
    let mut s = Stepper::new(config, &scenario.map);
    s.server
        .init_resource::<CombatLog>()
        .add_systems(bevy::app::FixedPostUpdate, log_combat);
    s
}

/// Plays `scenario` and measures it.
pub fn run(scenario: &Scenario) -> ScenarioReport {
    run_on(&mut scenario_server(scenario), scenario)
}

/// Plays `scenario` on `s`, a server from [`scenario_server`], and measures it.
fn run_on(s: &mut Stepper, scenario: &Scenario) -> ScenarioReport {
    let link = scenario.link;
    let mut probes: Vec<Probe> = Vec::new();
    for (i, frames) in scenario.clients.iter().enumerate() {
        let seed = scenario.seed + i as u64;
        let c = s.add_client_with(&format!("m{i}"), seed, link.up, link.down, *frames);
        if let Some(combat) = scenario.combat {
            drive_with_bot(&mut s.clients[c], PlayerBot::new(seed, combat.skill));
        }
        probes.push(Probe {
            seed: hash(scenario.seed, i as u64, 0x7072_6f62),
            fps: frames.fps,
            ..Default::default()
        });
    }
    let mut truth = Truth::default();
    let steps = |secs: f64| (secs * scenario.tick.tick_hz as f64).round() as usize;
    let observe =
        |s: &mut Stepper, which: Updated, probes: &mut [Probe], truth: &mut Truth| match which {
            Updated::Server => {
                truth.record(&mut s.server);
                let now = s.now();
                let w = s.server.world_mut();
                let mut q = w.query::<(&PlayerId, &CurrentCmd, &InputBuffer)>();
                for (id, cmd, buffer) in q.iter(w) {
                    if let Some(p) = probes.iter_mut().find(|p| p.id == Some(*id)) {
                        p.observe_server(cmd, buffer, now);
                    }
                }
                let shots = std::mem::take(&mut w.resource_mut::<CombatLog>().shots);
                for shot in shots {
                    if shot.weapon == WeaponKind::Rockets {
                        continue;
                    }
                    if let Some(p) = probes
                        .iter_mut()
                        .find(|p| p.measuring && p.id == Some(shot.shooter))
                    {
                        p.shot_ages_ms.push(shot.age * 1000.0);
                    }
                }
            }
            Updated::Client(i) => probes[i].observe_client(&mut s.clients[i], truth),
        };
    for _ in 0..steps(scenario.warmup) {
        s.step_with(|s, which| observe(s, which, &mut probes, &mut truth));
    }
    for (i, p) in probes.iter_mut().enumerate() {
        p.start(&mut s.clients[i], &s.links[i]);
    }
    let start_log = {
        let log = s.server.world().resource::<CombatLog>();
        (log.kills, log.rockets, log.hitscan)
    };
    let mut route_changed = false;
    for step in 0..steps(scenario.seconds) {
        if let Some(change) = link.route_change
            && !route_changed
            && step as f64 / scenario.tick.tick_hz as f64 >= change.after_seconds
        {
            route_changed = true;
            let slower = |mut c: ConditionerSettings| {
                c.latency_ms += change.extra_ms;
                c
            };
            for l in &s.links {
                l.set_conditions(slower(link.up), slower(link.down));
            }
        }
        s.step_with(|s, which| observe(s, which, &mut probes, &mut truth));
    }
    for (i, p) in probes.iter_mut().enumerate() {
        p.finish(&s.clients[i], &s.links[i]);
    }
    let hz = scenario.tick.tick_hz;
    let log = s.server.world().resource::<CombatLog>();
    let minutes = scenario.seconds / 60.0;
    ScenarioReport {
        clients: probes
            .iter()
            .map(|p| NetcodeReport::pooled(&[p], scenario.seconds, hz))
            .collect(),
        pooled: NetcodeReport::pooled(&probes.iter().collect::<Vec<_>>(), scenario.seconds, hz),
        kills_per_min: (log.kills - start_log.0) as f64 / minutes,
        rockets_per_min: (log.rockets - start_log.1) as f64 / minutes,
        shots_per_min: (log.hitscan - start_log.2) as f64 / minutes,
        unresolved_inputs: s
            .server
            .world()
            .resource::<sightline_server::ServerStats>()
            .unresolved_inputs,
    }
}

/// The lab baseline: `clients` bot-driven clients that never fire, in lockstep with a
/// 128 Hz server on `map`, for `warmup + seconds` under `conditions` both ways, measured
/// after the warm-up and pooled over the clients.
pub fn measure(
    conditions: Conditions,
    clients: usize,
    map: &str,
    warmup: f64,
    seconds: f64,
    seed: u64,
) -> NetcodeReport {
    let mut scenario = Scenario::lab(conditions, clients, map, seconds, seed);
    scenario.warmup = warmup;
    run(&scenario).pooled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every player's state bits, on the server and as each client predicts its own,
    /// and what crossed each link: packets both ways, and bytes up (snapshots carry the
    /// server's measured CPU time per tick, which varies in its encoded length).
    fn fingerprint(s: &mut Stepper) -> Vec<u32> {
        let mut out = Vec::new();
        let mut states = |w: &mut World, predicted_only: bool| {
            let mut q = w.query::<(
                &PlayerId,
                &PlayerState,
                Has<sightline_prediction::Predicted>,
            )>();
            let mut v: Vec<_> = q
                .iter(w)
                .filter(|(_, _, p)| !predicted_only || *p)
                .map(|(id, st, _)| (*id, *st))
                .collect();
            v.sort_by_key(|(id, _)| *id);
            for (id, st) in v {
                out.push(id.0 as u32);
                out.extend(st.pos.to_array().map(f32::to_bits));
                out.extend(st.vel.to_array().map(f32::to_bits));
            }
        };
        states(s.server.world_mut(), false);
        for c in &mut s.clients {
            states(c.world_mut(), true);
        }
        for l in &s.links {
            let (up, _) = l.wire_bytes_sent();
            let (packets_up, packets_down) = l.packets_sent();
            out.extend([up as u32, packets_up as u32, packets_down as u32]);
        }
        out
    }

    fn fight(seed: u64) -> (Vec<u32>, ScenarioReport) {
        let link = Link {
            up: ConditionerSettings {
                latency_ms: 60.0,
                jitter_ms: 15.0,
                loss_pct: 5.0,
                loss_burst: 3.0,
                ..Default::default()
            },
            down: ConditionerSettings {
                latency_ms: 40.0,
                jitter_ms: 5.0,
                loss_pct: 2.0,
                loss_burst: 2.0,
                ..Default::default()
            },
            route_change: Some(RouteChange {
                after_seconds: 1.0,
                extra_ms: 50.0,
            }),
        };
        let mut scenario = Scenario::realistic(link, "duel", 2.0, seed);
        scenario.clients.truncate(3);
        scenario.warmup = 3.0;
        scenario.combat = Some(Combat {
            bots: 2,
            skill: BotSkill::Hard,
        });
        let mut s = scenario_server(&scenario);
        let report = run_on(&mut s, &scenario);
        (fingerprint(&mut s), report)
    }

    #[test]
    fn a_multi_rate_fight_replays_bit_for_bit() {
        let (a, report) = fight(3);
        let (b, again) = fight(3);
        assert_eq!(a, b, "the same seed played differently");
        let downstream = |r: &ScenarioReport| {
            let mut r = r.clone();
            for c in r.clients.iter_mut().chain([&mut r.pooled]) {
                c.down_bytes_per_s = 0.0;
            }
            r
        };
        assert_eq!(downstream(&report), downstream(&again));
        let (c, _) = fight(4);
        assert_ne!(a, c, "another seed played the same");
        // It was a session worth replaying: everyone joined, commands reached the
        // server through the delays set, and shots were fired.
        assert_eq!(report.clients.len(), 3);
        for r in &report.clients {
            assert!(r.input_latency_ms_mean > 60.0, "{r:#?}");
            assert!(r.input_latency_ms_mean < 500.0, "{r:#?}");
            assert!(r.interp_delay_ms_mean > 0.0, "{r:#?}");
            assert!(r.up_bytes_per_s > 0.0 && r.down_bytes_per_s > 0.0);
        }
        assert!(report.shots_per_min > 0.0, "{report:#?}");
    }

    #[test]
    fn input_latency_is_the_link_plus_the_buffer_plus_at_most_two_ticks() {
        // Lockstep on a clean link of 40 ms each way: a key press waits up to a frame to
        // be read, 40 ms to arrive, up to a tick for the server's frame to receive it, and
        // then its time in the buffer.
        let c = Conditions {
            rtt_ms: 80.0,
            jitter_ms: 0.0,
            loss_pct: 0.0,
        };
        let r = measure(c, 1, "duel", 3.0, 3.0, 9);
        let tick = 1000.0 / 128.0;
        let rest = r.input_latency_ms_mean - 40.0 - r.input_buffer_ms;
        assert!(
            (0.0..=2.0 * tick).contains(&rest),
            "{rest} ms unexplained: {r:#?}"
        );
        assert!(
            r.input_latency_ms_p99 <= r.input_latency_ms_mean + 2.0 * tick,
            "{r:#?}"
        );
        // Every packet carries netcode's 17-19 bytes and UDP/IP's 28 beyond its payload:
        // at 128 input packets a second, over 5.7 kB/s of headers alone.
        assert!(r.up_bytes_per_s > 128.0 * 45.0, "{r:#?}");
        assert_eq!(r.render_steps_back, 0.0, "{r:#?}");
    }
}
