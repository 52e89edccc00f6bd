//! Measuring hit registration: a client (the shooter, aimed by the harness) fires the
//! rifle, zoomed, at a server bot where the shooter's screen draws it, and the server says
//! whether each shot hit.
//!
//! The lab version ([`measure_hits`]) is the original best case: the shooter stands
//! still, in lockstep with the server. [`HitSetup::moving`] is the realistic one: the
//! shooter strafes while aiming, at its own frame rate with jittery frames and a drifting
//! clock, over a link of its own. Either way the target is a bot fighting back (strafing
//! while it faces the shooter) that cannot die, and the shooter aims from its predicted
//! eye at the middle of the target's body as drawn (its `Drawn` component), or 0.5 m
//! beside the body's centre line (0.14 m clear of its edge), whenever the drawn target is
//! in clear view.

use super::{CombatLog, Conditions, Link, Scenario, ShotRecord, mean, percentile, scenario_server};
use crate::stepper::{FrameClock, Frames};
use bevy::prelude::*;
use sightline_bots::hash;
use sightline_client::{Autopilot, InputHistory, LocalInput, RemotePlayer};
use sightline_combat::{Arsenal, LagCompStats, MAX_REWIND, Vitals, aim_direction};
use sightline_interpolation::{DrawMode, Drawn};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_prediction::{Predicted, PredictionSet};
use sightline_sim::{Buttons, PlayerId, TickConfig};

/// How a hit-registration run is set up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HitSetup {
    /// The shooter's link.
    pub link: Link,
    /// How the shooter's frames come.
    pub frames: Frames,
    /// Whether the shooter strafes while shooting.
    pub moving: bool,
    /// Aim 0.5 m beside the target's centre line instead of at it.
    pub beside: bool,
    /// Seconds measured (after 4 s of warm-up).
    pub seconds: f64,
    /// Makes the run reproducible.
    pub seed: u64,
}

impl HitSetup {
    /// The lab version: a shooter standing still, in lockstep with a 128 Hz server.
    pub fn lab(conditions: Conditions, beside: bool, seconds: f64, seed: u64) -> Self {
        Self {
            link: conditions.link(),
            frames: Frames::lockstep(128),
            moving: false,
            beside,
            seconds,
            seed,
        }
    }

    /// A shooter strafing while it shoots, at `fps` frames per second varying by up to
    /// 20 % a frame, its clock 0.1 % fast.
    pub fn moving(link: Link, fps: f64, beside: bool, seconds: f64, seed: u64) -> Self {
        Self {
            link,
            frames: Frames {
                fps,
                jitter: 0.2,
                drift: 0.001,
                seed: hash(seed, 0, 0x6869_7473),
            },
            moving: true,
            beside,
            seconds,
            seed,
        }
    }
}

/// How shots fared in a hit-registration measurement.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HitReport {
    /// Shots fired with the drawn target in clear view.
    pub shots: u32,
    /// Of those, shots the server counted as hits.
    pub hits: u32,
    /// Shots with a wall between where they left (the shooter's eye at the tick that
    /// fired, which a moving shooter has carried on from where it aimed) and the body.
    pub blocked: u32,
    /// Hits among the shots not blocked.
    pub hits_unblocked: u32,
    /// Mean rewind the server needed (server tick minus view time), milliseconds.
    pub rewind_ms_mean: f64,
    /// Largest rewind asked for, milliseconds.
    pub rewind_ms_max: f64,
    /// Share of shots whose view time lay within the rewind window, percent.
    pub within_window_pct: f64,
    /// Share of shots judged late, their view time honest but older than the rewind
    /// window: judged against the oldest world allowed, the shooter told so, percent.
    pub late_pct: f64,
    /// Share of shots the server refused to judge, their view time outside what the
    /// client could have seen, percent.
    pub refused_pct: f64,
    /// For each shot, the drawn target's time the shooter aimed at less the view time
    /// its command carried, in the shooter's frames: mean of the magnitudes.
    pub frame_delay_mean: f64,
    /// The largest magnitude, frames.
    pub frame_delay_max: f64,
}

impl HitReport {
    /// Hits as a share of shots, percent.
    pub fn hit_pct(&self) -> f64 {
        100.0 * self.hits as f64 / self.shots.max(1) as f64
    }

    /// Shots blocked by a wall, as a share of shots, percent.
    pub fn blocked_pct(&self) -> f64 {
        100.0 * self.blocked as f64 / self.shots.max(1) as f64
    }

    /// Hits as a share of the shots not blocked by a wall, percent.
    pub fn hit_pct_unblocked(&self) -> f64 {
        let clear = self.shots - self.blocked;
        100.0 * self.hits_unblocked as f64 / clear.max(1) as f64
    }

    /// Several runs' reports as one: their shots together, each mean and share weighted
    /// by its run's shots, the largest of the largest.
    pub fn pooled(runs: &[HitReport]) -> HitReport {
        let shots: u32 = runs.iter().map(|r| r.shots).sum();
        let weighted = |f: fn(&HitReport) -> f64| {
            let sum: f64 = runs.iter().map(|r| f(r) * f64::from(r.shots)).sum();
            sum / f64::from(shots.max(1))
        };
        let largest = |f: fn(&HitReport) -> f64| runs.iter().map(f).fold(0.0, f64::max);
        HitReport {
            shots,
            hits: runs.iter().map(|r| r.hits).sum(),
            blocked: runs.iter().map(|r| r.blocked).sum(),
            hits_unblocked: runs.iter().map(|r| r.hits_unblocked).sum(),
            rewind_ms_mean: weighted(|r| r.rewind_ms_mean),
            rewind_ms_max: largest(|r| r.rewind_ms_max),
            within_window_pct: weighted(|r| r.within_window_pct),
            late_pct: weighted(|r| r.late_pct),
            refused_pct: weighted(|r| r.refused_pct),
            frame_delay_mean: weighted(|r| r.frame_delay_mean),
            frame_delay_max: largest(|r| r.frame_delay_max),
        }
    }
}

/// Nobody dies and nobody runs dry: the measurement is about hits, not rounds.
fn immortal(mut players: Query<(&mut Vitals, &mut Arsenal)>) {
    for (mut v, mut arsenal) in &mut players {
        v.health = 10_000.0;
        arsenal.ammo[0].reserve = 1000;
    }
}

/// Ticks between shots: just over the rifle's interval.
const SHOT_TICKS: f64 = 13.0;

/// The harness's hand on the shooter's mouse, and what it aimed at.
#[derive(Resource, Debug, Default)]
struct Marksman {
    moving: bool,
    beside: bool,
    seed: u64,
    /// Wall time of the latest press, seconds.
    last_press: f64,
    /// While the trigger is held: the newest command sequence when it was pressed; it
    /// is released once a command has been sampled with it.
    holding: Option<u32>,
    /// Each frame with a target: (newest command sequence before the frame's ticks, the
    /// drawn target's server time).
    aimed: Vec<(u32, f64)>,
}

/// Aims at the drawn target from the predicted eye, strafing if moving, and pulls the
/// trigger every [`SHOT_TICKS`] ticks while the target is in clear view, holding it until
/// a command has carried it (a frame may run no tick).
#[allow(clippy::too_many_arguments)]
fn aim_and_fire(
    clock: Res<FrameClock>,
    config: Res<TickConfig>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    history: Res<InputHistory>,
    mut marksman: ResMut<Marksman>,
    mut input: ResMut<LocalInput>,
    me: Query<(&PlayerId, &PlayerState), With<Predicted>>,
    remotes: Query<(&PlayerId, &Drawn), With<RemotePlayer>>,
) {
    let mut next = LocalInput {
        pressed: input.pressed,
        pressed_slot: input.pressed_slot,
        ..Default::default()
    };
    let now = clock.last_seconds();
    if marksman.moving {
        // Strafe one way, then the other, changing every 0.4-1 s.
        let window = (now / 0.7) as u64;
        next.right = if hash(marksman.seed, window, 1).is_multiple_of(2) {
            1.0
        } else {
            -1.0
        };
        next.forward = (hash(marksman.seed, window, 2) % 3) as f32 * 0.5 - 0.5;
    }
    let seq = history.last_seq();

    if marksman.holding.is_some_and(|at| seq > at) {
        marksman.holding = None;
    }
    // The target: the one other player (a client may also hold its own player as a
    // remote one, if a snapshot came before its Welcome).
    let me = me.single().ok();
    let target = remotes
        .iter()
        .find(|(id, _)| me.is_some_and(|(own, _)| own != *id))
        .map(|(_, d)| *d);
    // Only a target the screen draws: one not yet come into view at the drawn time (the
    // server has just begun to send it) is not there to aim at.
    if let (Some((_, me)), Some(target)) = (me, target)
        && target.time > 0.0
        && target.mode != DrawMode::Unseen
    {
        let eye = params.eye_position(me);
        let mut aim = target.pos + Vec3::Y * 0.9;
        if marksman.beside {
            // Just clear of the body capsule's side (radius 0.36 m).
            let side = (aim - eye).cross(Vec3::Y).normalize_or_zero();
            aim += side * 0.5;
        }
        let dir = (aim - eye).normalize();
        next.yaw = f32::atan2(-dir.x, -dir.z);
        next.pitch = dir.y.asin();
        let clear = map
            .world
            .cast_ray(
                eye,
                aim_direction(next.yaw, next.pitch),
                (aim - eye).length(),
            )
            .is_none();
        let interval = SHOT_TICKS / config.tick_hz as f64;
        if clear && marksman.holding.is_none() && now - marksman.last_press >= interval {
            marksman.holding = Some(seq);
            marksman.last_press = now;
        }
        if !clear {
            marksman.holding = None;
        }
        // Zoomed (alternate fire): the rifle's tight cone, so its hip spread is not
        // counted as a miss of the netcode's.
        if marksman.holding.is_some() {
            next.buttons = Buttons::FIRE.with(Buttons::ALT_FIRE);
        }

        marksman.aimed.push((seq, target.time));
    } else {
        next.yaw = input.yaw;
        next.pitch = input.pitch;
        marksman.holding = None;
    }
    *input = next;
}

/// The lab hit measurement: a shooter standing still in lockstep with the server, under
/// `conditions` both ways, aiming at the target (or `beside` it).
pub fn measure_hits(conditions: Conditions, beside: bool, seconds: f64, seed: u64) -> HitReport {
    measure_hits_with(&HitSetup::lab(conditions, beside, seconds, seed))
}

/// A hit-registration measurement as `setup` says.
pub fn measure_hits_with(setup: &HitSetup) -> HitReport {
    let scenario = Scenario {
        map: "duel".into(),
        tick: TickConfig::new(128, 64).expect("valid rates"),
        update_rate: sightline_client::DEFAULT_UPDATE_RATE,
        link: setup.link,
        clients: Vec::new(),
        combat: Some(super::Combat {
            bots: 1,
            // In the lab the shooter stands still: an easy bot keeps to hitscan weapons
            // and to the ground, so no rocket knocks the shooter off its spot.
            skill: if setup.moving {
                sightline_bots::BotSkill::Normal
            } else {
                sightline_bots::BotSkill::Easy
            },
        }),
        trouble: super::Trouble::default(),
        warmup: 4.0,
        seconds: setup.seconds,
        seed: setup.seed,
    };
    let mut s = scenario_server(&scenario);
    s.server.add_systems(bevy::app::FixedPreUpdate, immortal);
    let shooter = s.add_client_with(
        "shooter",
        setup.seed,
        setup.link.up,
        setup.link.down,
        setup.frames,
    );
    // The marksman, not the autopilot, is at the controls.
    s.clients[shooter]
        .world_mut()
        .remove_resource::<Autopilot>();
    s.clients[shooter]
        .insert_resource(Marksman {
            moving: setup.moving,
            beside: setup.beside,
            seed: setup.seed,
            ..Default::default()
        })
        .add_systems(
            PreUpdate,
            aim_and_fire
                .after(PredictionSet::Reconcile)
                .run_if(resource_exists::<CurrentMap>),
        );
    s.run_for(scenario.warmup);
    {
        let w = s.server.world_mut();
        *w.resource_mut::<CombatLog>() = CombatLog::default();
        *w.resource_mut::<LagCompStats>() = LagCompStats::default();
        s.clients[shooter]
            .world_mut()
            .resource_mut::<Marksman>()
            .aimed
            .clear();
    }
    s.run_for(setup.seconds);
    // Only the shooter's shots are logged and can be refused: the bot has no view window.
    let w = s.server.world();
    let LagCompStats { late, refused, .. } = *w.resource::<LagCompStats>();
    let log = w.resource::<CombatLog>();
    let shots: &[ShotRecord] = &log.shots;
    let rewinds: Vec<f64> = shots.iter().map(|s| s.age * 1000.0).collect();
    let window = MAX_REWIND as f64 * 1000.0;
    let aimed = &s.clients[shooter].world().resource::<Marksman>().aimed;
    let frame = 1.0 / setup.frames.fps;
    let mut delays: Vec<f64> = shots
        .iter()
        .filter_map(|shot| {
            // The frame whose ticks sampled the command: the last one begun before it.
            let i = aimed.partition_point(|(before, _)| *before < shot.seq);
            let (_, drawn) = aimed.get(i.checked_sub(1)?)?;
            Some(((drawn - shot.view_time) / frame).abs())
        })
        .collect();
    delays.sort_by(f64::total_cmp);
    HitReport {
        shots: shots.len() as u32,
        hits: shots.iter().filter(|s| s.hit).count() as u32,
        blocked: shots.iter().filter(|s| s.blocked).count() as u32,
        hits_unblocked: shots.iter().filter(|s| s.hit && !s.blocked).count() as u32,
        rewind_ms_mean: mean(&rewinds),
        rewind_ms_max: rewinds.iter().copied().fold(0.0, f64::max),
        within_window_pct: 100.0 * rewinds.iter().filter(|&&r| r <= window + 1e-6).count() as f64
            / rewinds.len().max(1) as f64,
        late_pct: 100.0 * late as f64 / shots.len().max(1) as f64,
        refused_pct: 100.0 * refused as f64 / shots.len().max(1) as f64,
        frame_delay_mean: mean(&delays),
        frame_delay_max: percentile(&delays, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_runs_weigh_each_by_its_shots() {
        let run = |shots, hits, blocked, rewind, late| HitReport {
            shots,
            hits,
            blocked,
            hits_unblocked: hits,
            rewind_ms_mean: rewind,
            rewind_ms_max: rewind * 2.0,
            within_window_pct: 100.0 - late,
            late_pct: late,
            refused_pct: 0.0,
            frame_delay_mean: 0.5,
            frame_delay_max: 1.0,
        };
        let pooled =
            HitReport::pooled(&[run(100, 90, 10, 60.0, 0.0), run(300, 297, 0, 100.0, 4.0)]);
        assert_eq!((pooled.shots, pooled.hits, pooled.blocked), (400, 387, 10));
        assert!((pooled.hit_pct_unblocked() - 100.0 * 387.0 / 390.0).abs() < 1e-9);
        assert!((pooled.rewind_ms_mean - 90.0).abs() < 1e-9);
        assert_eq!(pooled.rewind_ms_max, 200.0);
        assert!((pooled.late_pct - 3.0).abs() < 1e-9);
        assert_eq!(HitReport::pooled(&[]).shots, 0);
    }
}
