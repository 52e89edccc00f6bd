//! Measuring netcode quality: a server and bot-driven clients on the manual clock behind
//! a link conditioner, compared tick by tick with the server's truth.

use crate::Stepper;
use bevy::prelude::*;
use sightline_client::{ClientStats, InputPacing};
use sightline_interpolation::{DrawMode, Drawn, RenderTime};
use sightline_movement::PlayerState;
use sightline_net::ConditionerSettings;
use sightline_prediction::PredictionStats;
use sightline_server::ServerConfig;
use sightline_sim::{PlayerId, Tick, TickConfig};
use std::collections::BTreeMap;

/// Network conditions for one measurement.
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
    fn one_way(&self) -> ConditionerSettings {
        ConditionerSettings {
            latency_ms: self.rtt_ms / 2.0,
            jitter_ms: self.jitter_ms,
            loss_pct: self.loss_pct,
            ..Default::default()
        }
    }
}

/// What one measurement found, over the clients after warm-up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetcodeReport {
    /// Prediction corrections per minute per client.
    pub corrections_per_min: f64,
    /// Mean correction size, metres (0 when none).
    pub correction_mean: f64,
    /// 99th percentile correction size, metres.
    pub correction_p99: f64,
    /// Largest correction, metres.
    pub correction_max: f64,
    /// Mean distance between where a remote player was drawn and where the server had it
    /// at the drawn time, metres.
    pub interp_error_mean: f64,
    /// 99th percentile of that distance, metres.
    pub interp_error_p99: f64,
    /// Largest of that distance, metres.
    pub interp_error_max: f64,
    /// Share of remote-player frames drawn past the newest snapshot, percent.
    pub extrapolated_pct: f64,
    /// Automatic interpolation delay at the end, milliseconds.
    pub interp_delay_ms: f64,
    /// Time commands wait in the server's buffer, milliseconds (mean reported minimum).
    pub input_buffer_ms: f64,
    /// Ticks the server repeated a client's command, per minute per client.
    pub repeats_per_min: f64,
    /// Bytes per second per client, client to server.
    pub up_bytes_per_s: f64,
    /// Bytes per second per client, server to client.
    pub down_bytes_per_s: f64,
}

/// The nearest-rank `q` quantile (0 to 1) of sorted values, or 0 when there are none.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The mean of `values`, or 0 when there are none.
fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Where each player was after every server tick: (tick time, positions).
#[derive(Default)]
struct Truth(Vec<(f64, BTreeMap<PlayerId, Vec3>)>);

impl Truth {
    fn record(&mut self, s: &mut Stepper, tick_hz: u32) {
        let w = s.server.world_mut();
        let tick = w.resource::<Tick>().0;
        let time = tick as f64 / tick_hz as f64;
        if self.0.last().is_some_and(|(t, _)| *t >= time) {
            return;
        }
        let positions = w
            .query::<(&PlayerId, &PlayerState)>()
            .iter(w)
            .map(|(id, st)| (*id, st.pos))
            .collect();
        self.0.push((time, positions));
    }

    /// The server's position of `id` at `time`, between ticks linearly.
    fn at(&self, id: PlayerId, time: f64) -> Option<Vec3> {
        let i = self.0.partition_point(|(t, _)| *t <= time);
        let (t0, a) = self.0.get(i.checked_sub(1)?)?;
        let (t1, b) = self.0.get(i)?;
        let f = ((time - t0) / (t1 - t0)) as f32;
        Some(a.get(&id)?.lerp(*b.get(&id)?, f))
    }
}

/// Runs `clients` bot-driven clients for `warmup + seconds` under `conditions` on `map`
/// at 128 Hz with 64 Hz snapshots, measuring after the warm-up.
pub fn measure(
    conditions: Conditions,
    clients: usize,
    map: &str,
    warmup: f64,
    seconds: f64,
    seed: u64,
) -> NetcodeReport {
    let tick = TickConfig::new(128, 64).expect("valid rates");
    let config = ServerConfig {
        name: "measure".into(),
        max_players: 16,
        bots: 0,
        bot_skill: sightline_bots::BotSkill::Normal,
        rules: Default::default(),
        tick,
        ..Default::default()
    };
    let mut s = Stepper::new(config, map);
    let link = conditions.one_way();
    for i in 0..clients {
        s.add_conditioned_client(&format!("m{i}"), seed + i as u64, link, link);
    }
    let mut truth = Truth::default();
    let steps = |secs: f64| (secs * tick.tick_hz as f64).round() as usize;
    for _ in 0..steps(warmup) {
        s.step();
        truth.record(&mut s, tick.tick_hz);
    }
    let start_corrections: Vec<usize> = s
        .clients
        .iter()
        .map(|c| c.world().resource::<PredictionStats>().corrections.len())
        .collect();
    let start_repeats: Vec<u32> = s
        .clients
        .iter()
        .map(|c| c.world().resource::<InputPacing>().repeats)
        .collect();
    let start_bytes: Vec<(u64, u64)> = s.links.iter().map(|l| l.bytes_sent()).collect();
    let start_queue: Vec<(u64, u64)> = s
        .clients
        .iter()
        .map(|c| c.world().resource::<InputPacing>().queue_totals())
        .collect();

    let mut errors = Vec::new();
    let (mut frames, mut late) = (0u64, 0u64);
    for _ in 0..steps(seconds) {
        s.step();
        truth.record(&mut s, tick.tick_hz);
        for c in &mut s.clients {
            let w = c.world_mut();
            let drawn: Vec<(PlayerId, Drawn)> = w
                .query::<(&PlayerId, &Drawn)>()
                .iter(w)
                .map(|(id, d)| (*id, *d))
                .collect();
            for (id, d) in drawn {
                if d.time == 0.0 {
                    continue;
                }
                frames += 1;
                late += u64::from(d.mode != DrawMode::Interpolated);
                if let Some(true_pos) = truth.at(id, d.time) {
                    errors.push(d.pos.distance(true_pos) as f64);
                }
            }
        }
    }

    let minutes = seconds / 60.0;
    let n = clients as f64;
    let mut corrections: Vec<f64> = Vec::new();
    let mut repeats = 0;
    let mut delay = 0.0;
    let mut buffer_ms = 0.0;
    for (i, c) in s.clients.iter().enumerate() {
        let w = c.world();
        let stats = w.resource::<PredictionStats>();
        corrections.extend(
            stats.corrections[start_corrections[i]..]
                .iter()
                .map(|&c| c as f64),
        );
        repeats += w.resource::<InputPacing>().repeats - start_repeats[i];
        delay += w.resource::<RenderTime>().delay / n;
        let (reports, sum) = w.resource::<InputPacing>().queue_totals();
        let (reports, sum) = (reports - start_queue[i].0, sum - start_queue[i].1);
        let mean_queue = sum as f64 / reports.max(1) as f64;
        buffer_ms += mean_queue * 1000.0 / tick.tick_hz as f64 / n;
        assert!(
            w.resource::<ClientStats>().snapshots > 0,
            "client {i} got no snapshots"
        );
    }
    let (mut up, mut down) = (0.0, 0.0);
    for (i, l) in s.links.iter().enumerate() {
        let (u, d) = l.bytes_sent();
        up += (u - start_bytes[i].0) as f64 / seconds / n;
        down += (d - start_bytes[i].1) as f64 / seconds / n;
    }
    corrections.sort_by(f64::total_cmp);
    errors.sort_by(f64::total_cmp);
    NetcodeReport {
        corrections_per_min: corrections.len() as f64 / minutes / n,
        correction_mean: mean(&corrections),
        correction_p99: percentile(&corrections, 0.99),
        correction_max: corrections.last().copied().unwrap_or(0.0),
        interp_error_mean: mean(&errors),
        interp_error_p99: percentile(&errors, 0.99),
        interp_error_max: errors.last().copied().unwrap_or(0.0),
        extrapolated_pct: if frames == 0 {
            0.0
        } else {
            100.0 * late as f64 / frames as f64
        },
        interp_delay_ms: delay * 1000.0,
        input_buffer_ms: buffer_ms,
        repeats_per_min: repeats as f64 / minutes / n,
        up_bytes_per_s: up,
        down_bytes_per_s: down,
    }
}

/// How shots fared in a hit-registration measurement.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HitReport {
    /// Shots fired with the drawn target in clear view.
    pub shots: u32,
    /// Of those, shots the server counted as hits.
    pub hits: u32,
    /// Mean rewind the server needed (server tick minus view time), milliseconds.
    pub rewind_ms_mean: f64,
    /// Largest rewind asked for, milliseconds.
    pub rewind_ms_max: f64,
    /// Share of shots whose view time lay within the rewind window, percent.
    pub within_window_pct: f64,
    /// Share of shots the server refused to judge, their view time outside what the
    /// client could have seen or beyond the rewind window, percent.
    pub refused_pct: f64,
}

impl HitReport {
    /// Hits as a share of shots, percent.
    pub fn hit_pct(&self) -> f64 {
        100.0 * self.hits as f64 / self.shots.max(1) as f64
    }
}

/// Counts the server's combat events and keeps the target alive.
#[derive(Resource, Default)]
struct Tally {
    hits: u32,
    shots: u32,
    rewinds_ms: Vec<f64>,
}

fn tally(
    mut events: MessageReader<sightline_combat::CombatEvent>,
    mut tally: ResMut<Tally>,
    tick: Res<Tick>,
    players: Query<(&PlayerId, &sightline_sim::CurrentCmd), Without<sightline_sim::BotControlled>>,
) {
    // Only the measured client's shots count; the bot shoots back, but that is not measured.
    for e in events.read() {
        match e {
            sightline_combat::CombatEvent::Fired { shooter, .. } => {
                if let Some((_, cmd)) = players.iter().find(|(id, _)| *id == shooter) {
                    tally.shots += 1;
                    let rewind = (tick.0 as f64 - cmd.0.view_time()) / 128.0 * 1000.0;
                    tally.rewinds_ms.push(rewind);
                }
            }
            sightline_combat::CombatEvent::Hit { shooter, .. }
                if players.iter().any(|(id, _)| id == shooter) =>
            {
                tally.hits += 1
            }
            _ => {}
        }
    }
}

/// Nobody dies and nobody runs dry: the measurement is about hits, not rounds.
fn immortal(
    mut players: Query<(
        &mut sightline_combat::Vitals,
        &mut sightline_combat::Arsenal,
    )>,
) {
    for (mut v, mut arsenal) in &mut players {
        v.health = 10_000.0;
        arsenal.ammo[0].reserve = 1000;
    }
}

/// A shooter (a client whose aim the test sets) fires the rifle at a moving bot, aiming at
/// the middle of the bot's body exactly where the shooter's screen draws it, or `beside`
/// it (just clear of the body's edge), whenever the drawn target is in clear view.
pub fn measure_hits(conditions: Conditions, beside: bool, seconds: f64, seed: u64) -> HitReport {
    use sightline_client::{InputSource, LocalInput};
    use sightline_combat::aim_direction;
    use sightline_sim::Buttons;
    let tick = TickConfig::new(128, 64).expect("valid rates");
    let config = ServerConfig {
        name: "measure".into(),
        max_players: 4,
        bots: 1,
        bot_skill: sightline_bots::BotSkill::Normal,
        rules: Default::default(),
        tick,
        ..Default::default()
    };
    let mut s = Stepper::new(config, "duel");
    s.server
        .init_resource::<Tally>()
        .add_systems(bevy::app::FixedPostUpdate, tally)
        .add_systems(bevy::app::FixedPreUpdate, immortal);
    let link = conditions.one_way();
    let shooter = s.add_conditioned_client("shooter", seed, link, link);
    s.clients[shooter].insert_resource(InputSource::Local);
    s.run_for(4.0);
    s.server.world_mut().resource_mut::<Tally>().shots = 0;
    s.server.world_mut().resource_mut::<Tally>().hits = 0;
    s.server
        .world_mut()
        .resource_mut::<Tally>()
        .rewinds_ms
        .clear();
    *s.server
        .world_mut()
        .resource_mut::<sightline_combat::LagCompStats>() = Default::default();

    let params = sightline_movement::MoveParams::default();
    let steps = (seconds * 128.0) as usize;
    for step in 0..steps {
        let w = s.clients[shooter].world_mut();
        let me = w
            .query_filtered::<&PlayerState, bevy::prelude::With<sightline_prediction::Predicted>>()
            .iter(w)
            .next()
            .copied();
        let target = w
            .query_filtered::<&Drawn, bevy::prelude::With<sightline_client::RemotePlayer>>()
            .iter(w)
            .next()
            .copied();
        let mut input = LocalInput::default();
        if let (Some(me), Some(target)) = (me, target)
            && target.time > 0.0
        {
            let eye = me.pos + Vec3::Y * params.eye(me.crouched());
            let mut aim = target.pos + Vec3::Y * 0.9;
            if beside {
                // Just clear of the body capsule's side (radius 0.36 m).
                let side = (aim - eye).cross(Vec3::Y).normalize_or_zero();
                aim += side * 0.5;
            }
            let dir = (aim - eye).normalize();
            let yaw = f32::atan2(-dir.x, -dir.z);
            let pitch = dir.y.asin();
            input.yaw = yaw;
            input.pitch = pitch;
            let map = w.resource::<sightline_map::CurrentMap>().clone();
            let clear = map
                .world
                .cast_ray(eye, aim_direction(yaw, pitch), (aim - eye).length())
                .is_none();
            // A shot every 13 ticks (just over the rifle's interval), when the target is
            // in clear view as drawn.
            if clear && step % 13 == 0 {
                input.buttons = Buttons::FIRE;
            }
        }
        *w.resource_mut::<LocalInput>() = input;
        s.step();
    }
    // Only the shooter's shots can be refused: the bot has no view window.
    let refused = s
        .server
        .world()
        .resource::<sightline_combat::LagCompStats>()
        .refused;
    let tally = s.server.world().resource::<Tally>();
    let window = sightline_combat::MAX_REWIND as f64 * 1000.0;
    let rewinds = &tally.rewinds_ms;
    HitReport {
        shots: tally.shots,
        hits: tally.hits,
        rewind_ms_mean: mean(rewinds),
        rewind_ms_max: rewinds.iter().copied().fold(0.0, f64::max),
        within_window_pct: 100.0 * rewinds.iter().filter(|&&r| r <= window + 1e-6).count() as f64
            / rewinds.len().max(1) as f64,
        refused_pct: 100.0 * refused as f64 / tally.shots.max(1) as f64,
    }
}
