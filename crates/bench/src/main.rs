//! `sightline-bench`: measures what the performance targets are stated in.
//!
//! `cargo run --release -p sightline-bench -- tick` runs the real server (plugins,
//! schedule, bots, movement, snapshot building) on a manual clock and reports the wall
//! time of each fixed tick; `-- movement` times one movement step.

use clap::{Parser, Subcommand};
use sightline_bots::{decide, sense};
use sightline_harness::measure::{Conditions, measure, measure_hits, percentile};
use sightline_harness::soak::{SoakConfig, soak};
use sightline_harness::{Stepper, load_map};
use sightline_movement::{MoveParams, PlayerState, step};
use sightline_server::{ServerConfig, TickTimes};
use sightline_sim::TickConfig;
use std::hint::black_box;
use std::time::Instant;

/// Sightline measurements.
#[derive(Parser)]
#[command(about)]
struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Server tick time with bots: median, p99 and max.
    Tick {
        /// Bot counts to measure, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [8u8, 32, 64])]
        bots: Vec<u8>,
        /// Simulated seconds measured per bot count (after one second of warm-up).
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
        /// Tick rate.
        #[arg(long, default_value_t = 128)]
        tickrate: u32,
        /// Map.
        #[arg(long, default_value = "depot")]
        map: String,
    },
    /// Netcode quality under latency, jitter and loss: prediction corrections, remote
    /// interpolation error, extrapolation, interpolation delay, input buffering, bandwidth.
    Netcode {
        /// Simulated seconds measured per condition (after 3 s of warm-up).
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Clients (each sees the others as remote players).
        #[arg(long, default_value_t = 2)]
        clients: usize,
        /// Map.
        #[arg(long, default_value = "duel")]
        map: String,
    },
    /// Client CPU time per frame outside rendering (networking, prediction,
    /// interpolation, snapshot handling) with bots as remote players.
    Client {
        /// Remote players (bots on the server).
        #[arg(long, default_value_t = 16)]
        remotes: u8,
        /// Simulated seconds measured (after 3 s of warm-up).
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
    },
    /// Hit registration: the share of rifle shots aimed exactly at a moving target as
    /// drawn that the server counts as hits, and of shots aimed just beside it.
    Hits {
        /// Simulated seconds per condition (one shot every 20 ticks).
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
    },
    /// The chaos soak: a real server over UDP with bots, and clients through a bad link
    /// joining and leaving every few seconds, in real time. Exits 1 if a check fails.
    Soak {
        /// Seconds to run.
        #[arg(long, default_value_t = 600.0)]
        seconds: f64,
        /// Seconds before resident memory is taken as the baseline.
        #[arg(long, default_value_t = 60.0)]
        warmup: f64,
        /// Bots on the server.
        #[arg(long, default_value_t = 16)]
        bots: u8,
        /// Clients joining and leaving.
        #[arg(long, default_value_t = 4)]
        clients: usize,
    },
    /// Cost of one movement step.
    Movement {
        /// Steps to time.
        #[arg(long, default_value_t = 200_000)]
        steps: u32,
    },
}

fn main() {
    match Args::parse().what {
        What::Tick {
            bots,
            seconds,
            tickrate,
            map,
        } => {
            let tick = TickConfig::new(tickrate, tickrate / 2).unwrap_or_else(|e| panic!("{e}"));
            println!("server tick, {tickrate} Hz, map {map}, {seconds} s per row\n");
            println!("| bots | median ms | p99 ms | max ms |");
            println!("|---:|---:|---:|---:|");
            for n in bots {
                let (p50, p99, max) = measure_tick(n, tick, &map, seconds);
                println!("| {n} | {p50:.3} | {p99:.3} | {max:.3} |");
            }
        }
        What::Movement { steps } => measure_movement(steps),
        What::Soak {
            seconds,
            warmup,
            bots,
            clients,
        } => {
            let config = SoakConfig {
                seconds,
                warmup,
                bots,
                clients,
                ..Default::default()
            };
            let link = config.link;
            println!(
                "chaos soak: {bots} bots, {clients} clients joining and leaving, each through \
                 {} ms each way, {} ms jitter, {} % loss, {} % duplicated, {} % reordered\n",
                link.latency_ms,
                link.jitter_ms,
                link.loss_pct,
                link.duplicate_pct,
                link.reorder_pct
            );
            let report = soak(&config);
            println!("{report}");
            if !report.passed() {
                std::process::exit(1);
            }
        }
        What::Client { remotes, seconds } => measure_client(remotes, seconds),
        What::Hits { seconds } => hit_report(seconds),
        What::Netcode {
            seconds,
            clients,
            map,
        } => netcode_report(seconds, clients, &map),
    }
}

fn measure_tick(bots: u8, tick: TickConfig, map: &str, seconds: f64) -> (f32, f32, f32) {
    let config = ServerConfig {
        name: "bench".into(),
        max_players: bots.max(1),
        bots,
        bot_skill: sightline_bots::BotSkill::Normal,
        rules: Default::default(),
        tick,
        ..Default::default()
    };
    let mut s = Stepper::new(config, map);
    s.run_for(1.0);
    s.server
        .world_mut()
        .resource_mut::<TickTimes>()
        .samples_us
        .clear();
    s.run_for(seconds);
    s.server
        .world()
        .resource::<TickTimes>()
        .summary_ms()
        .expect("ticks ran")
}

fn measure_movement(steps: u32) {
    let map = load_map("depot");
    let params = MoveParams::default();
    let dt = 1.0 / 128.0;
    // A realistic mix of commands: a bot running, turning, jumping around the map.
    let mut s = PlayerState::at(map.def.spawns[0].pos, map.def.spawns[0].yaw);
    let cmds: Vec<_> = (0..steps)
        .map(|t| {
            let cmd = decide(&s, &sense(&map.world, &s, &params), 7, t, 128)
                .sanitized()
                .expect("bot commands are valid");
            s = step(&s, &cmd, &map.world, &params, dt);
            (s, cmd)
        })
        .collect();
    let start = Instant::now();
    for (state, cmd) in &cmds {
        black_box(step(
            black_box(state),
            black_box(cmd),
            &map.world,
            &params,
            dt,
        ));
    }
    let per = start.elapsed().as_secs_f64() / steps as f64;
    println!(
        "movement step: {:.2} us mean over {steps} steps (bot on depot, 128 Hz)",
        per * 1e6
    );
}

fn netcode_report(seconds: f64, clients: usize, map: &str) {
    println!(
        "netcode quality: {clients} bot-driven clients on {map}, 128 Hz tick, 64 Hz snapshots, \
         {seconds} s per row after 3 s warm-up; jitter and loss apply each way\n"
    );
    println!(
        "| RTT ms | jitter ms | loss % | corrections /min | correction mean / p99 / max mm \
         | interp error mean / p99 / max mm | extrapolated % | auto delay ms | input buffer ms \
         | up B/s | down B/s |"
    );
    println!("|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|");
    for rtt in [0.0, 50.0, 150.0, 300.0] {
        for jitter in [0.0, 20.0] {
            for loss in [0.0, 5.0, 20.0] {
                let c = Conditions {
                    rtt_ms: rtt,
                    jitter_ms: jitter,
                    loss_pct: loss,
                };
                let r = measure(c, clients, map, 3.0, seconds, 1000 + rtt as u64);
                let mm = |m: f64| m * 1000.0;
                println!(
                    "| {rtt} | {jitter} | {loss} | {:.1} | {:.1} / {:.1} / {:.1} | {:.2} / {:.1} / {:.1} \
                     | {:.2} | {:.1} | {:.1} | {:.0} | {:.0} |",
                    r.corrections_per_min,
                    mm(r.correction_mean),
                    mm(r.correction_p99),
                    mm(r.correction_max),
                    mm(r.interp_error_mean),
                    mm(r.interp_error_p99),
                    mm(r.interp_error_max),
                    r.extrapolated_pct,
                    r.interp_delay_ms,
                    r.input_buffer_ms,
                    r.up_bytes_per_s,
                    r.down_bytes_per_s,
                );
            }
        }
    }
}

fn measure_client(remotes: u8, seconds: f64) {
    let config = ServerConfig {
        name: "bench".into(),
        max_players: remotes + 1,
        bots: remotes,
        bot_skill: sightline_bots::BotSkill::Normal,
        rules: Default::default(),
        tick: TickConfig::default(),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "depot");
    s.add_client("measured", 5);
    s.run_for(3.0);
    let steps = (seconds * 128.0) as usize;
    let mut times = Vec::with_capacity(steps);
    for _ in 0..steps {
        s.server.update();
        let start = Instant::now();
        s.clients[0].update();
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| percentile(&times, q);
    println!(
        "client frame without rendering, {remotes} remote players, 128 Hz frames: \
         median {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

fn hit_report(seconds: f64) {
    println!(
        "hit registration: a client fires the rifle at a moving bot, aiming exactly where its \
         screen draws the bot (or 0.5 m beside its centre line); 20 ms jitter each way; \
         {seconds} s per row, a shot every 13 ticks when the target is in view; rewind window {} ms\n",
        sightline_combat::MAX_REWIND * 1000.0
    );
    println!(
        "| RTT ms | loss % | shots | hits on target % | hits beside % | rewind mean / max ms | within window % | refused % |"
    );
    println!("|---:|---:|---:|---:|---:|---|---:|---:|");
    for rtt in [0.0, 50.0, 150.0, 300.0] {
        for loss in [0.0, 5.0] {
            let c = Conditions {
                rtt_ms: rtt,
                jitter_ms: 20.0,
                loss_pct: loss,
            };
            let on = measure_hits(c, false, seconds, 7);
            let off = measure_hits(c, true, seconds, 7);
            println!(
                "| {rtt} | {loss} | {} | {:.1} | {:.1} | {:.0} / {:.0} | {:.0} | {:.1} |",
                on.shots,
                on.hit_pct(),
                off.hit_pct(),
                on.rewind_ms_mean,
                on.rewind_ms_max,
                on.within_window_pct,
                on.refused_pct
            );
        }
    }
}
