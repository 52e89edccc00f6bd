//! Measuring netcode quality: a server and measured clients on the stepper behind link
//! conditioners, compared frame by frame with the server's truth.
//!
//! A [`Scenario`] says who plays and how: the measured clients' frame rates, jitter and
//! clock drift ([`Frames`](crate::stepper::Frames)), each direction of their links (latency, jitter, loss, bursty
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
mod probes;
mod report;
mod scenario;

pub use hits::{HitReport, HitSetup, measure_hits, measure_hits_with};
pub(crate) use probes::{CombatLog, ShotRecord};
use probes::{Probe, TickLog, Truth, log_combat, log_ticks, record_truth};
pub(crate) use report::mean;
pub use report::{
    NetcodeReport, RareEvents, ScenarioReport, SeededReport, percentile, rate_interval,
};
pub use scenario::{
    Combat, Conditions, HITCHES_MS, Link, REALISTIC_FPS, RouteChange, STALL_MS, Scenario, Trouble,
};

use crate::stepper::{Stepper, Updated};
use sightline_bots::BotSkill;
use sightline_client::{Autopilot, UpdateRate};
use sightline_combat::WeaponKind;
pub use sightline_net::ConditionerSettings;
use sightline_server::{MatchRules, ServerConfig};
use sightline_sim::hash::{hash, unit};
use std::time::Duration;

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
        .init_resource::<Truth>()
        .init_resource::<TickLog>()
        .add_systems(
            bevy::app::FixedPostUpdate,
            (log_combat, record_truth, log_ticks),
        );
    s
}

/// Plays `scenario` and measures it.
pub fn run(scenario: &Scenario) -> ScenarioReport {
    run_on(&mut scenario_server(scenario), scenario)
}

/// Plays `scenario` with each of `seeds` in turn, and pools each client over them.
pub fn run_seeds(scenario: &Scenario, seeds: &[u64]) -> SeededReport {
    let mut probes: Vec<Vec<Probe>> = Vec::new();
    let mut reports = Vec::new();
    for &seed in seeds {
        let scenario = Scenario {
            seed,
            ..scenario.clone()
        };
        let (report, played) = play(&mut scenario_server(&scenario), &scenario);
        for (j, p) in played.into_iter().enumerate() {
            if probes.len() <= j {
                probes.push(Vec::new());
            }
            probes[j].push(p);
        }
        reports.push(report);
    }
    let hz = scenario.tick.tick_hz;
    SeededReport {
        clients: probes
            .iter()
            .map(|p| NetcodeReport::pooled(&p.iter().collect::<Vec<_>>(), scenario.seconds, hz))
            .collect(),
        seeds: reports,
    }
}

/// Plays `scenario` on `s`, a server from [`scenario_server`], and measures it.
fn run_on(s: &mut Stepper, scenario: &Scenario) -> ScenarioReport {
    play(s, scenario).0
}

/// [`run_on`], giving back the probes as well.
fn play(s: &mut Stepper, scenario: &Scenario) -> (ScenarioReport, Vec<Probe>) {
    let link = scenario.link;
    let mut probes: Vec<Probe> = Vec::new();
    for (i, frames) in scenario.clients.iter().enumerate() {
        let seed = scenario.seed + i as u64;
        let c = s.add_client_with(&format!("m{i}"), seed, link.up, link.down, *frames);
        s.clients[c].insert_resource(UpdateRate(scenario.update_rate));
        if let Some(combat) = scenario.combat {
            s.clients[c].insert_resource(Autopilot::fighting(seed, combat.skill));
        }
        probes.push(Probe::new(
            hash(scenario.seed, i as u64, 0x7072_6f62),
            frames.fps,
        ));
    }
    let steps = |secs: f64| (secs * scenario.tick.tick_hz as f64).round() as usize;
    let observe = |s: &mut Stepper, which: Updated, probes: &mut [Probe]| match which {
        Updated::Server => {
            let now = s.now();
            let w = s.server.world_mut();
            for (id, taken) in std::mem::take(&mut w.resource_mut::<TickLog>().0) {
                if let Some(p) = probes.iter_mut().find(|p| p.id == Some(id)) {
                    p.observe_server(taken, now);
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
        Updated::Client(i) => {
            probes[i].observe_client(&mut s.clients[i], s.server.world().resource::<Truth>())
        }
    };
    for _ in 0..steps(scenario.warmup) {
        s.step_with(|s, which| observe(s, which, &mut probes));
    }
    for (i, p) in probes.iter_mut().enumerate() {
        p.start(&mut s.clients[i], &s.links[i]);
    }
    let start_log = {
        let log = s.server.world().resource::<CombatLog>();
        (log.kills, log.rockets, log.hitscan)
    };
    let mut conditions = (link.up, link.down);
    let mut route_changed = false;
    let mut dark = false;
    let mut made = Made::default();
    for step in 0..steps(scenario.seconds) {
        let t = step as f64 / scenario.tick.tick_hz as f64;
        if let Some(change) = link.route_change
            && t >= change.after_seconds
            && !route_changed
        {
            route_changed = true;
            let slower = |mut c: ConditionerSettings| {
                c.latency_ms = (c.latency_ms + change.extra_ms).max(0.0);
                c
            };
            conditions = (slower(link.up), slower(link.down));
            if !dark {
                set_links(s, conditions);
            }
        }
        let out = scenario
            .trouble
            .outages
            .iter()
            .flatten()
            .any(|&(at, length)| (at..at + length).contains(&t));
        if out != dark {
            dark = out;
            if dark {
                let none = |c: ConditionerSettings| ConditionerSettings {
                    loss_pct: 100.0,
                    outage_ms: 0.0,
                    ..c
                };
                set_links(s, (none(conditions.0), none(conditions.1)));
                made.outages += 1;
            } else {
                set_links(s, conditions);
            }
        }
        made.trouble(s, scenario, step as u64);
        s.step_with(|s, which| observe(s, which, &mut probes));
    }
    for (i, p) in probes.iter_mut().enumerate() {
        p.finish(&s.clients[i], &s.links[i]);
    }
    let hz = scenario.tick.tick_hz;
    let log = s.server.world().resource::<CombatLog>();
    let minutes = scenario.seconds / 60.0;
    let report = ScenarioReport {
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
        hitches: made.hitches,
        stalls: made.stalls,
        outages: made.outages,
    };
    (report, probes)
}

/// Sets every client's link.
fn set_links(s: &Stepper, (up, down): (ConditionerSettings, ConditionerSettings)) {
    for l in &s.links {
        l.set_conditions(up, down);
    }
}

/// The trouble made so far.
#[derive(Default)]
struct Made {
    hitches: u64,
    stalls: u64,
    outages: u64,
}

impl Made {
    /// Before measured step `step`: each measured client hitches, and the server stalls,
    /// with the chance a step has at the scenario's rates; lengths drawn from the seed.
    fn trouble(&mut self, s: &mut Stepper, scenario: &Scenario, step: u64) {
        let trouble = &scenario.trouble;
        let dt = s.dt.as_secs_f64();
        let draw = |salt: u64| unit(hash(scenario.seed, step, salt)) as f64;
        if trouble.hitch_every_s > 0.0 {
            for i in 0..scenario.clients.len() {
                let salt = 0x6869_7400 + i as u64;
                if draw(salt) < dt / trouble.hitch_every_s {
                    let which = hash(scenario.seed, step, salt + 0x100) % HITCHES_MS.len() as u64;
                    s.hitch_client(i, Duration::from_millis(HITCHES_MS[which as usize]));
                    self.hitches += 1;
                }
            }
        }
        if trouble.stall_every_s > 0.0 && draw(0x7374_616c) < dt / trouble.stall_every_s {
            let (short, long) = STALL_MS;
            let ms = short + ((long - short) as f64 * draw(0x7374_616d)).round() as u64;
            s.stall_server(Duration::from_millis(ms));
            self.stalls += 1;
        }
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
    use bevy::prelude::*;
    use sightline_movement::PlayerState;
    use sightline_sim::PlayerId;

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
        // server through the delays set, and shots were fired (rifle or rockets: which
        // weapon the bots take in two seconds is chance).
        assert_eq!(report.clients.len(), 3);
        for r in &report.clients {
            assert!(r.input_latency_ms_mean > 60.0, "{r:#?}");
            assert!(r.input_latency_ms_mean < 500.0, "{r:#?}");
            assert!(r.interp_delay_ms_mean > 0.0, "{r:#?}");
            assert!(r.up_bytes_per_s > 0.0 && r.down_bytes_per_s > 0.0);
        }
        assert!(
            report.shots_per_min + report.rockets_per_min > 0.0,
            "{report:#?}"
        );
    }

    /// A bad day: every measured client's frames hitch, the server stalls, and the link
    /// goes dark for a second. The trouble is made as asked, and no honest client is
    /// reset, struck or sent back to reconnect for it.
    #[test]
    fn hitches_stalls_and_a_dark_second_cost_nobody_a_reset_or_a_strike() {
        let way = ConditionerSettings {
            latency_ms: 40.0,
            jitter_ms: 5.0,
            ..Default::default()
        };
        let link = Link {
            up: way,
            down: way,
            route_change: None,
        };
        let mut scenario = Scenario::realistic(link, "duel", 8.0, 5);
        scenario.clients.truncate(2);
        scenario.warmup = 3.0;
        scenario.trouble = Trouble {
            hitch_every_s: 2.0,
            stall_every_s: 1.5,
            outages: [Some((4.0, 1.0)), None],
        };
        let mut s = scenario_server(&scenario);
        let r = run_on(&mut s, &scenario);
        assert!(r.hitches >= 2, "{r:#?}");
        assert!(r.stalls >= 2, "{r:#?}");
        assert_eq!(r.outages, 1, "{r:#?}");
        for c in &r.clients {
            assert_eq!(c.resets, 0.0, "{c:#?}");
        }
        let stats = s.server.world().resource::<sightline_server::ServerStats>();
        assert_eq!((stats.strikes, stats.refused_commands), (0, 0));
        for c in &s.clients {
            let sessions = c.world().resource::<sightline_client::EarlierSessions>();
            assert_eq!(sessions.sessions, 0, "a client reconnected");
        }
    }

    /// Played with several seeds, each client's rates are the mean over the runs, and
    /// each run's own figure lies within the spread.
    #[test]
    fn seeded_runs_pool_to_the_mean_of_their_rates() {
        let c = Conditions {
            rtt_ms: 60.0,
            jitter_ms: 10.0,
            loss_pct: 5.0,
        };
        let scenario = Scenario::lab(c, 1, "duel", 3.0, 0);
        let r = run_seeds(&scenario, &[1, 2]);
        assert_eq!(r.seeds.len(), 2);
        let per_run: Vec<f64> = r
            .seeds
            .iter()
            .map(|s| s.clients[0].up_bytes_per_s)
            .collect();
        assert_ne!(per_run[0], per_run[1], "the seeds played alike");
        let pooled = r.clients[0].up_bytes_per_s;
        assert!((pooled - (per_run[0] + per_run[1]) / 2.0).abs() < 1e-6);
        let (lo, hi) = r.spread(0, |c| c.up_bytes_per_s);
        assert_eq!(
            (lo, hi),
            (per_run[0].min(per_run[1]), per_run[0].max(per_run[1]))
        );
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
        // Every packet carries netcode's 17-19 bytes and UDP/IP's 28 beyond its payload,
        // and commands besides: at `cl_cmdrate`'s default of 64 input packets a second,
        // over 2.9 kB/s of headers alone, and under what a packet every frame would take.
        let packets = f64::from(sightline_client::CommandRate::DEFAULT.0);
        assert!(r.up_bytes_per_s > packets * 45.0, "{r:#?}");
        assert!(r.up_bytes_per_s < 128.0 * 90.0, "{r:#?}");
        assert_eq!(r.render_steps_back, 0.0, "{r:#?}");
    }
}
