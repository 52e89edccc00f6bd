//! `sightline-bench`: measures what the performance targets are stated in.
//!
//! `cargo run --release -p sightline-bench -- tick` runs the real server (plugins,
//! schedule, bots, movement, snapshot building) on a manual clock and reports the wall
//! time of each fixed tick; `-- movement` times one movement step; `-- netcode` and
//! `-- hits` print the netcode and hit-registration tables of docs/NETCODE.md (`--lab` for the
//! lockstep baseline).

use clap::{Parser, Subcommand};
use sightline_bots::{decide, sense};
use sightline_dedicated::operated_plugins;
use sightline_harness::load::{HostTools, LoadConfig, LoadReport, load};
use sightline_harness::measure::hits::{HitReport, HitSetup, measure_hits_with};
use sightline_harness::measure::{
    ConditionerSettings, Conditions, Link, NetcodeReport, REALISTIC_FPS, RouteChange, Scenario,
    ScenarioReport, Trouble, percentile, rate_interval, run, run_seeds,
};
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
    /// Netcode quality under latency, jitter and loss: prediction corrections and resets,
    /// server repeats, input latency and buffering, the age of the world shots are judged
    /// against, remote interpolation error and delay, extrapolation, render time stepping
    /// back, bandwidth. By default a fight with server bots and clients at 30, 60, 144 and
    /// 240 fps with jittery frames and drifting clocks over realistic links; `--lab` for
    /// the lockstep baseline.
    Netcode {
        /// Simulated seconds measured per condition (after the warm-up).
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// The lab baseline: bot-driven clients that never fire, in lockstep with the
        /// server, independent loss, the same both ways.
        #[arg(long)]
        lab: bool,
        /// Clients in the lab baseline (each sees the others as remote players).
        #[arg(long, default_value_t = 2)]
        clients: usize,
        /// Map.
        #[arg(long, default_value = "duel")]
        map: String,
        /// Runs per row of the realistic table, each with its own seed, splitting
        /// `--seconds` between them.
        #[arg(long, default_value_t = 3)]
        seeds: u64,
        /// Only these rows of the realistic table, counted from 0 (all when absent).
        #[arg(long, value_delimiter = ',')]
        links: Vec<usize>,
        /// Snapshot rate against freshness instead: the realistic fight on its clean and
        /// its lossy 150 ms link with 64 and with 128 snapshots a second.
        #[arg(long)]
        freshness: bool,
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
    /// Hit registration: the share of rifle shots aimed exactly at a strafing target as
    /// drawn that the server counts as hits, and of shots aimed just beside it, from a
    /// moving shooter at 60 and 144 fps; `--lab` for a shooter standing still in lockstep.
    Hits {
        /// Simulated seconds per condition (a shot every 13 ticks while the target is in
        /// view).
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// The lab baseline: the shooter stands still, in lockstep with the server.
        #[arg(long)]
        lab: bool,
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
    /// A real server over real UDP on loopback with that many bot-driven clients in this
    /// process, in real time: server tick time with snapshots, bandwidth per client each
    /// way with headers, snapshot sizes.
    Load {
        /// Players (clients) per row; `--players` alone skips the loopback rows.
        #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [16usize, 32, 64])]
        players: Vec<usize>,
        /// Seconds measured per row, after everyone has joined and 3 s of play.
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
        /// Map.
        #[arg(long, default_value = "depot")]
        map: String,
        /// Frames a second each client draws (it sends an input packet a frame).
        #[arg(long, default_value_t = 60.0)]
        fps: f64,
        /// Players per row run again behind a realistic link (150 ms round trip, 20 ms
        /// jitter, 5 % loss in outages of 60-140 ms, both ways), once at each of
        /// `--realistic-fps`; `--realistic` alone skips them.
        #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [16usize])]
        realistic: Vec<usize>,
        /// The clients' frame rates in the rows behind the realistic link.
        #[arg(long, value_delimiter = ',', default_values_t = [60.0f64, 144.0])]
        realistic_fps: Vec<f64>,
        /// Players per row run again with every client at `cl_cmdrate 30` (an input
        /// packet every other frame), on loopback and behind the realistic link;
        /// `--cmdrate-30` alone skips them.
        #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [16usize])]
        cmdrate_30: Vec<usize>,
        /// Players per row run again as a host operates the server: Prometheus metrics
        /// scraped every second and lifetime statistics in SQLite, every client keyed;
        /// `--operated` alone skips them.
        #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [64usize])]
        operated: Vec<usize>,
    },
    /// The hosting surfaces flooded from one host each (A2S with a valid challenge, RCON
    /// connections that stall, metrics scrapes) at once against the real server binary,
    /// with an honest player, browser, admin and scraper beside them: what each flood
    /// got, what the honest askers got, the tick and the player's snapshots.
    Hosting {
        /// Folder holding the `sightline-server` and `sightline` binaries (as built by
        /// `cargo build --release -p sightline-dedicated -p sightline-app --bins`).
        #[arg(long)]
        binaries: std::path::PathBuf,
        /// Seconds the floods run.
        #[arg(long, default_value_t = 20)]
        seconds: u32,
        /// A2S_INFO a second from the flooding host.
        #[arg(long, default_value_t = 5_000)]
        a2s: u32,
        /// Metrics requests a second from the flooding host.
        #[arg(long, default_value_t = 1_000)]
        metrics: u32,
    },
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
        What::Hosting {
            binaries,
            seconds,
            a2s,
            metrics,
        } => {
            use sightline_harness::hosting::{HostingLoadConfig, HostingReport, hosting_load};
            let report = hosting_load(&HostingLoadConfig {
                server: binaries.join("sightline-server"),
                client: binaries.join("sightline"),
                seconds,
                a2s_per_second: a2s,
                rcon_hosts: 4,
                metrics_per_second: metrics,
            });
            println!(
                "hosting surfaces flooded, {seconds} s: the real server (64 Hz, 2 bots, duel) and an \
                 honest headless player; each flood from one host of the player's own /24; an \
                 honest browser asks A2S_INFO every 250 ms, an admin logs in over RCON and runs \
                 status every second, a scraper asks /metrics every second, all from 127.0.0.1\n"
            );
            println!("{}\n{}", HostingReport::header(), report.row());
        }
        What::Load {
            players,
            seconds,
            map,
            fps,
            realistic,
            realistic_fps,
            cmdrate_30,
            operated,
        } => load_report(
            &players,
            &[&realistic[..], &cmdrate_30[..], &operated[..]],
            &realistic_fps,
            seconds,
            &map,
            fps,
        ),
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
        What::Hits { seconds, lab } => {
            if lab {
                lab_hit_report(seconds)
            } else {
                hit_report(seconds)
            }
        }
        What::Netcode {
            seconds,
            lab,
            clients,
            map,
            seeds,
            links,
            freshness,
        } => {
            if lab {
                lab_netcode_report(seconds, clients, &map)
            } else if freshness {
                freshness_report(seconds, &map)
            } else {
                netcode_report(seconds, seeds, &map, &links)
            }
        }
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
    s.server.world_mut().resource_mut::<TickTimes>().clear();
    s.run_for(seconds);
    s.server
        .world()
        .resource::<TickTimes>()
        .summary_ms()
        .expect("ticks ran")
}

/// Bytes a second of the load test's slow line, and the `rate` its second row sets.
const SLOW_LINE: u32 = 10_000;

/// `extra`: the players of the rows behind a realistic link (once at each of
/// `realistic_fps`, and behind a slow line without and with a `rate` to match it), at
/// `cl_cmdrate 30`, and operated (metrics and statistics on).
fn load_report(
    players: &[usize],
    [realistic, cmdrate_30, operated]: &[&[usize]; 3],
    realistic_fps: &[f64],
    seconds: f64,
    map: &str,
    fps: f64,
) {
    let bots = LoadConfig::default().bots;
    println!(
        "load over real UDP on loopback, in a fight: a 128 Hz server (each client sent the 128 \
         snapshots a second it asks for by default) on \
         {map} with {bots} bots, and one client per player in this process, each played by \
         a bot that aims at what it draws and fires rifles and rockets, at up to {fps} fps \
         unless the row says otherwise; joining one every 100 ms; {seconds} s measured per \
         row after everyone joined and 3 s of play\n"
    );
    println!("{}", LoadReport::HEADER);
    let lossy = way(75.0, 20.0, 5.0, OUTAGE_MS);
    let clean = ConditionerSettings::default();
    // A slow line: 10 kB/s each way behind 60 ms, its router queueing 100 ms.
    let slow = ConditionerSettings {
        capacity_bps: SLOW_LINE as f32,
        ..way(30.0, 0.0, 0.0, 0.0)
    };
    // The game's default command rate, but for the rows that name another.
    let cmds = LoadConfig::default().cmd_rate;
    let rows = (players.iter().map(|&n| (n, clean, fps, cmds, 0, false)))
        .chain(realistic.iter().flat_map(|&n| {
            realistic_fps
                .iter()
                .map(move |&f| (n, lossy, f, cmds, 0, false))
        }))
        .chain(cmdrate_30.iter().map(|&n| (n, clean, fps, 30, 0, false)))
        .chain(cmdrate_30.iter().map(|&n| (n, lossy, fps, 30, 0, false)))
        .chain(realistic.iter().map(|&n| (n, slow, fps, cmds, 0, false)))
        .chain(
            realistic
                .iter()
                .map(|&n| (n, slow, fps, cmds, SLOW_LINE, false)),
        )
        .chain(operated.iter().map(|&n| (n, clean, fps, cmds, 0, true)));
    for (n, link, fps, cmd_rate, rate, operated) in rows {
        let report = load(&LoadConfig {
            players: n,
            seconds,
            fps,
            map: map.into(),
            link,
            cmd_rate,
            rate,
            operated: operated.then_some(HostTools(operated_plugins)),
            ..Default::default()
        });
        if report.server_panicked || report.joined < n {
            eprintln!("{n} players: only {} joined", report.joined);
        }
        println!("{report}");
    }
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

fn mm(m: f64) -> f64 {
    m * 1000.0
}

/// One direction's settings: latency, jitter and loss, as outages in time of 0.6 to 1.4
/// times `outage_ms` (a link that is out loses what any client sends, however often it
/// sends).
fn way(latency_ms: f32, jitter_ms: f32, loss_pct: f32, outage_ms: f32) -> ConditionerSettings {
    ConditionerSettings {
        latency_ms,
        jitter_ms,
        loss_pct,
        outage_ms,
        ..Default::default()
    }
}

/// The same settings both ways.
fn both(rtt_ms: f32, jitter_ms: f32, loss_pct: f32, outage_ms: f32) -> Link {
    let w = way(rtt_ms / 2.0, jitter_ms, loss_pct, outage_ms);
    Link {
        up: w,
        down: w,
        route_change: None,
    }
}

/// A link as the tables name it.
fn describe(link: &Link) -> String {
    let mut text = if link.up == link.down {
        format!(
            "{} ms, {}, {}",
            link.rtt_ms(),
            link.up.describe_jitter(),
            link.up.describe_loss()
        )
    } else {
        let one = |w: &ConditionerSettings| {
            format!(
                "{} ms, {}, {}",
                w.latency_ms,
                w.describe_jitter(),
                w.describe_loss()
            )
        };
        format!("up {}; down {}", one(&link.up), one(&link.down))
    };
    let (dup, reorder) = (link.up.duplicate_pct, link.up.reorder_pct);
    if dup > 0.0 || reorder > 0.0 {
        text += &format!(", {dup} % duplicated, {reorder} % reordered");
    }
    if let Some(change) = link.route_change {
        text += &format!(
            "; {:+} ms at {} s",
            2.0 * change.extra_ms,
            change.after_seconds
        );
    }
    text
}

/// A row of the realistic table: the link, and what else goes wrong.
#[derive(Clone, Copy)]
struct Row {
    link: Link,
    trouble: Trouble,
}

impl Row {
    fn on(link: Link) -> Self {
        Self {
            link,
            trouble: Trouble::default(),
        }
    }

    /// How the tables name it.
    fn describe(&self) -> String {
        let mut text = describe(&self.link);
        if self.trouble.is_any() {
            text += "; ";
            text += &self.trouble.describe();
        }
        text
    }
}

/// The realistic rows, in table order, for runs of `seconds` each.
fn realistic_rows(seconds: f64) -> Vec<Row> {
    let mut asymmetric = both(150.0, 20.0, 5.0, OUTAGE_MS);
    asymmetric.up = way(100.0, 30.0, 5.0, OUTAGE_MS);
    asymmetric.down = way(50.0, 10.0, 1.0, SHORT_OUTAGE_MS);
    let mut route = both(150.0, 20.0, 1.0, SHORT_OUTAGE_MS);
    route.route_change = Some(RouteChange {
        after_seconds: (seconds / 2.0).round(),
        extra_ms: 50.0,
    });
    // A route that gets shorter: commands and snapshots overtake their predecessors.
    let mut shorter = both(250.0, 20.0, 1.0, SHORT_OUTAGE_MS);
    shorter.route_change = Some(RouteChange {
        after_seconds: (seconds / 2.0).round(),
        extra_ms: -50.0,
    });
    let mut spiky = both(150.0, 10.0, 1.0, SHORT_OUTAGE_MS);
    for w in [&mut spiky.up, &mut spiky.down] {
        w.jitter_tail_ms = 5.0;
    }
    // A bad day: a messy link, the client's frames hitching and the server stalling.
    let mut messy = both(150.0, 20.0, 1.0, SHORT_OUTAGE_MS);
    for w in [&mut messy.up, &mut messy.down] {
        w.duplicate_pct = 1.0;
        w.reorder_pct = 1.0;
    }
    let bad_day = Row {
        link: messy,
        trouble: Trouble {
            hitch_every_s: 20.0,
            stall_every_s: 15.0,
            ..Default::default()
        },
    };
    // A Wi-Fi roam and a tunnel: the link dark for a second, and later for three.
    let dark = Row {
        link: both(50.0, 5.0, 0.0, 0.0),
        trouble: Trouble {
            outages: [
                Some(((seconds / 3.0).round(), 1.0)),
                Some(((seconds * 2.0 / 3.0).round(), 3.0)),
            ],
            ..Default::default()
        },
    };
    let mut rows: Vec<Row> = [
        both(20.0, 0.0, 0.0, 0.0),
        both(50.0, 5.0, 1.0, SHORT_OUTAGE_MS),
        both(150.0, 20.0, 0.0, 0.0),
        both(150.0, 20.0, 5.0, OUTAGE_MS),
        asymmetric,
        route,
        both(300.0, 20.0, 5.0, OUTAGE_MS),
        shorter,
        spiky,
    ]
    .into_iter()
    .map(Row::on)
    .collect();
    rows.extend([bad_day, dark]);
    rows
}

/// Mean outage of the lossy links, ms: spells of 60-140 ms, a few snapshots' worth.
const OUTAGE_MS: f32 = 100.0;
/// Mean outage of the lightly lossy links, ms: spells of 24-56 ms, a snapshot or three.
const SHORT_OUTAGE_MS: f32 = 40.0;

fn netcode_report(seconds: f64, seeds: u64, map: &str, only: &[usize]) {
    let fps: Vec<String> = REALISTIC_FPS.iter().map(|f| f.to_string()).collect();
    let span = (seconds / seeds.max(1) as f64).round();
    println!(
        "netcode in a fight: on {map}, a 128 Hz server (each client sent the 128 snapshots a \
         second it asks for by default) with 4 bots and one \
         client at each of {} fps, every frame's length varying by up to 20 % and each \
         client's clock 0.1 % fast or slow, all fighting (the clients played by a bot that \
         sees what the client draws, with rifle and rockets); each row {seeds} runs of \
         {span} s with different seeds, each after 5 s of warm-up, pooled, with the lowest \
         and highest run in brackets; latency is the round trip, jitter and loss apply each \
         way\n",
        fps.join(", ")
    );
    let mut rows = Vec::new();
    for (i, row) in realistic_rows(span).iter().enumerate() {
        if !only.is_empty() && !only.contains(&i) {
            continue;
        }
        let mut scenario = Scenario::realistic(row.link, map, span, 0);
        scenario.trouble = row.trouble;
        let seeds: Vec<u64> = (0..seeds)
            .map(|k| 2000 + i as u64 * 10 + k * 1000)
            .collect();
        rows.push((row.describe(), run_seeds(&scenario, &seeds)));
    }
    println!("own player and input:\n");
    println!(
        "| link | fps | corrections seen / all /min | own / late input / unpredicted /min \
         | player / knockback / killed /min | while dead /min | seen p99 / all p99 / max mm | resets \
         | server repeats /min | held / repaid ticks /min | input latency mean / p99 ms \
         | input buffer ms | shot world age mean / p99 ms |"
    );
    println!("|---|---:|---:|---|---|---:|---|---:|---:|---:|---|---:|---|");
    for (label, r) in &rows {
        for (j, c) in r.clients.iter().enumerate() {
            let [own, late, other, ..] = c.corrections_by_cause_per_min;
            let own_of = |k: usize| move |c: &NetcodeReport| c.corrections_by_cause_per_min[k];
            println!(
                "| {label} | {:.0} | {} / {:.1} | {} / {} / {other:.1} | {} | {:.1} | {:.0} / {:.0} / {:.0} | {:.0} | {:.1} | {} / {:.1} | {:.1} / {:.1} | {:.1} | {} / {:.0} |",
                c.fps,
                spread(c.seen_per_min, r.spread(j, |c| c.seen_per_min), 1),
                c.corrections_per_min,
                spread(own, r.spread(j, own_of(0)), 1),
                spread(late, r.spread(j, own_of(1)), 1),
                others(c),
                c.corrections_while_dead_per_min,
                mm(c.seen_p99),
                mm(c.correction_p99),
                mm(c.correction_max),
                // Resets over all the runs together: the target is none in any.
                c.resets * seeds as f64,
                c.repeats_per_min,
                spread(c.held_per_min, r.spread(j, |c| c.held_per_min), 1),
                c.caught_up_per_min,
                c.input_latency_ms_mean,
                c.input_latency_ms_p99,
                c.input_buffer_ms,
                spread(c.shot_age_ms_mean, r.spread(j, |c| c.shot_age_ms_mean), 0),
                c.shot_age_ms_p99,
            );
        }
    }
    println!("\nwhat the player sees:\n");
    println!(
        "| link | client-minutes | visible snaps /min, 95 % interval | the same at {} fps \
         | news: snaps / corrections /min | snaps while dead or respawning /min |",
        fps.join(" / ")
    );
    println!("|---|---:|---|---|---|---:|");
    for (label, r) in &rows {
        let all = NetcodeReport::rare_events(&r.clients);
        let (rate, lo, hi) = rate_interval(all.snaps, all.minutes);
        let per_fps: Vec<String> = r
            .clients
            .iter()
            .map(|c| format!("{:.1}", rate_interval(c.snaps, c.client_minutes).0))
            .collect();
        let per_min = |n: u64| rate_interval(n, all.minutes).0;
        println!(
            "| {label} | {:.0} | {rate:.2} ({lo:.2}-{hi:.2}) | {} | {:.2} / {:.2} | {:.1} |",
            all.minutes,
            per_fps.join(" / "),
            per_min(all.news_snaps),
            per_min(all.news),
            per_min(all.death_snaps),
        );
    }
    println!("\nother players and bandwidth:\n");
    println!(
        "| link | fps | interp error mean / p99 / max mm | extrapolated % | held past a respawn % \
         | interp delay mean / p99 ms | drawn lag mean / p99 ms | pop-ins /min | missing p99 ms \
         | in sight, not drawn % | render steps back | up B/s | down B/s |"
    );
    println!("|---|---:|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|");
    for (label, r) in &rows {
        for (j, c) in r.clients.iter().enumerate() {
            println!(
                "| {label} | {:.0} | {:.2} / {:.1} / {:.0} | {:.2} | {:.2} | {:.1} / {:.1} | {} / {:.0} | {} | {:.0} | {:.2} | {} | {:.0} | {} |",
                c.fps,
                mm(c.interp_error_mean),
                mm(c.interp_error_p99),
                mm(c.interp_error_max),
                c.extrapolated_pct,
                c.respawn_frames_pct,
                c.interp_delay_ms_mean,
                c.interp_delay_ms_p99,
                spread(c.drawn_lag_ms_mean, r.spread(j, |c| c.drawn_lag_ms_mean), 0),
                c.drawn_lag_ms_p99,
                spread(c.pop_ins_per_min, r.spread(j, |c| c.pop_ins_per_min), 1),
                c.pop_in_ms_p99,
                c.missing_pct,
                steps_back(c),
                c.up_bytes_per_s,
                spread(c.down_bytes_per_s, r.spread(j, |c| c.down_bytes_per_s), 0),
            );
        }
    }
    println!("\nthe fights:\n");
    println!(
        "| link | kills /min | rockets /min | hitscan shots /min | frames drawing our own player \
         as a remote one too % | client hitches / server stalls / dark spells made |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    for (label, r) in &rows {
        let runs = r.seeds.len().max(1) as f64;
        let mean = |f: fn(&ScenarioReport) -> f64| r.seeds.iter().map(f).sum::<f64>() / runs;
        let total = |f: fn(&ScenarioReport) -> u64| r.seeds.iter().map(f).sum::<u64>();
        println!(
            "| {label} | {:.0} | {:.0} | {:.0} | {:.1} | {} / {} / {} |",
            mean(|s| s.kills_per_min),
            mean(|s| s.rockets_per_min),
            mean(|s| s.shots_per_min),
            mean(|s| s.pooled.self_drawn_pct),
            total(|s| s.hitches),
            total(|s| s.stalls),
            total(|s| s.outages),
        );
    }
}

/// A figure pooled over the seeds, with the lowest and highest run in brackets when
/// they differ at the precision shown: "18.5 (17.9-19.1)".
fn spread(pooled: f64, (lo, hi): (f64, f64), digits: usize) -> String {
    let (lo_text, hi_text) = (format!("{lo:.digits$}"), format!("{hi:.digits$}"));
    if lo_text == hi_text || !lo.is_finite() {
        format!("{pooled:.digits$}")
    } else {
        format!("{pooled:.digits$} ({lo_text}-{hi_text})")
    }
}

/// The realistic fight's clean link and its lossy 150 ms one (rows 0 and 3) with the
/// clients asking the 128 Hz server for 64 and 128 snapshots a second (`cl_updaterate`):
/// how much fresher the world drawn and shot at is, and what it costs downstream.
fn freshness_report(seconds: f64, map: &str) {
    println!(
        "snapshot rate against freshness: the fight above on {map} (its first and fourth \
         links), each client asking the 128 Hz server for 64 or 128 snapshots a second \
         (cl_updaterate); {seconds} s per row after 5 s of warm-up\n"
    );
    println!(
        "| link | snapshots /s | fps | shot world age mean / p99 ms | drawn lag mean / p99 ms \
         | interp delay mean ms | interp error p99 mm | extrapolated % | down B/s |"
    );
    println!("|---|---:|---:|---|---|---:|---:|---:|---:|");
    let rows = realistic_rows(seconds);
    for i in [0, 3] {
        for hz in [64, 128] {
            let mut scenario =
                Scenario::realistic(rows[i].link, map, seconds, 2000 + i as u64 * 10);
            scenario.update_rate = hz;
            let r = run(&scenario);
            for c in &r.clients {
                println!(
                    "| {} | {hz} | {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {:.1} | {:.1} | {:.2} | {:.0} |",
                    rows[i].describe(),
                    c.fps,
                    c.shot_age_ms_mean,
                    c.shot_age_ms_p99,
                    c.drawn_lag_ms_mean,
                    c.drawn_lag_ms_p99,
                    c.interp_delay_ms_mean,
                    mm(c.interp_error_p99),
                    c.extrapolated_pct,
                    c.down_bytes_per_s,
                );
            }
        }
    }
}

/// Corrections per minute by cause, two table cells: the netcode's own doing ("own /
/// late input / unpredicted") and other players' ("player / knockback / killed").
fn causes(r: &NetcodeReport) -> String {
    let [own, late, other, ..] = r.corrections_by_cause_per_min;
    format!("{own:.1} / {late:.1} / {other:.1} | {}", others(r))
}

/// Corrections per minute of other players' doing: "player / knockback / killed".
fn others(r: &NetcodeReport) -> String {
    let [.., player, knockback, killed] = r.corrections_by_cause_per_min;
    format!("{player:.1} / {knockback:.1} / {killed:.1}")
}

/// "0", or "12 (largest 3.1 ms)".
fn steps_back(r: &NetcodeReport) -> String {
    if r.render_steps_back == 0.0 {
        "0".into()
    } else {
        format!(
            "{} (largest {:.1} ms)",
            r.render_steps_back, r.render_step_back_max_ms
        )
    }
}

fn lab_netcode_report(seconds: f64, clients: usize, map: &str) {
    println!(
        "lab baseline: {clients} bot-driven clients that never fire on {map}, no server bots, \
         in lockstep with the 128 Hz server, each asking for 64 snapshots a second, \
         independent loss and uniform \
         jitter, the same each way; {seconds} s per row after 3 s warm-up\n"
    );
    println!(
        "| RTT ms | jitter ms | loss % | corrections /min | own / late input / unpredicted /min \
         | player / knockback / killed /min \
         | correction mean / p99 / max mm | resets | server repeats /min | input latency mean / p99 ms | input buffer ms \
         | interp error mean / p99 / max mm | extrapolated % | interp delay mean / p99 ms \
         | render steps back | up B/s | down B/s |"
    );
    println!("|---:|---:|---:|---:|---|---|---|---:|---:|---|---:|---|---:|---|---:|---:|---:|");
    for rtt in [0.0, 50.0, 150.0, 300.0] {
        for jitter in [0.0, 20.0] {
            for loss in [0.0, 5.0, 20.0] {
                let c = Conditions {
                    rtt_ms: rtt,
                    jitter_ms: jitter,
                    loss_pct: loss,
                };
                let r = run(&Scenario::lab(c, clients, map, seconds, 1000 + rtt as u64)).pooled;
                println!(
                    "| {rtt} | {jitter} | {loss} | {:.1} | {} | {:.1} / {:.1} / {:.1} | {:.0} | {:.1} \
                     | {:.1} / {:.1} | {:.1} | {:.2} / {:.1} / {:.1} | {:.2} | {:.1} / {:.1} \
                     | {} | {:.0} | {:.0} |",
                    r.corrections_per_min,
                    causes(&r),
                    mm(r.correction_mean),
                    mm(r.correction_p99),
                    mm(r.correction_max),
                    r.resets,
                    r.repeats_per_min,
                    r.input_latency_ms_mean,
                    r.input_latency_ms_p99,
                    r.input_buffer_ms,
                    mm(r.interp_error_mean),
                    mm(r.interp_error_p99),
                    mm(r.interp_error_max),
                    r.extrapolated_pct,
                    r.interp_delay_ms_mean,
                    r.interp_delay_ms_p99,
                    steps_back(&r),
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

fn hit_row(on: &HitReport, off: &HitReport) -> String {
    hit_row_spread(on, off, None)
}

/// A hit table's row; `spread`, the lowest and highest run's share of unblocked shots
/// that hit, goes in brackets after it.
fn hit_row_spread(on: &HitReport, off: &HitReport, spread: Option<(f64, f64)>) -> String {
    let spread = spread.map_or(String::new(), |(low, high)| {
        format!(" ({low:.1}-{high:.1})")
    });
    format!(
        "{} | {:.1} | {:.1} | {:.1}{spread} | {:.1} | {:.0} / {:.0} | {:.0} | {:.1} | {:.1} | {:.2} / {:.0}",
        on.shots,
        on.hit_pct(),
        on.blocked_pct(),
        on.hit_pct_unblocked(),
        off.hit_pct(),
        on.rewind_ms_mean,
        on.rewind_ms_max,
        on.within_window_pct,
        on.late_pct,
        on.refused_pct,
        on.frame_delay_mean,
        on.frame_delay_max,
    )
}

/// Seeds of the moving hit table's runs, each a row's `seconds`, pooled.
const HIT_SEEDS: [u64; 3] = [7, 8, 9];

/// [`hit_row`] of the pooled `runs`, with the lowest and highest run's share of
/// unblocked shots that hit in brackets.
fn seeded_hit_row(runs: &[HitReport], off: &HitReport) -> String {
    let shares = runs.iter().map(HitReport::hit_pct_unblocked);
    let spread = shares.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    hit_row_spread(&HitReport::pooled(runs), off, Some(spread))
}

fn hit_report(seconds: f64) {
    println!(
        "hit registration, moving: a client strafing (and stepping forward and back) fires the \
         rifle at a bot that strafes while it fights back, aiming from its predicted eye where \
         its screen draws the bot (or 0.5 m beside its centre line); the shooter's frames vary \
         by up to 20 % and its clock runs 0.1 % fast; 20 ms jitter each way, loss in outages \
         of 60-140 ms; each row 3 runs of {seconds} s with different seeds, pooled, with the \
         lowest and highest run's share of unblocked shots that hit in brackets; a shot every \
         13 ticks when the target is in view; rewind window {} ms\n",
        sightline_combat::MAX_REWIND * 1000.0
    );
    println!(
        "| shooter fps | RTT ms | loss % | shots | hits on the drawn body % | blocked by a wall % \
         | hits of shots not blocked % | hits 0.5 m beside % | world age mean / max ms \
         | within window % | judged late % | refused % | frame delay mean / max |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|");
    for fps in [60.0, 144.0] {
        for rtt in [0.0, 50.0, 150.0, 300.0] {
            for loss in [0.0, 5.0] {
                let link = both(rtt, 20.0, loss, OUTAGE_MS);
                let runs = |beside: bool| -> Vec<HitReport> {
                    HIT_SEEDS
                        .iter()
                        .map(|&seed| {
                            measure_hits_with(&HitSetup::moving(link, fps, beside, seconds, seed))
                        })
                        .collect()
                };
                let on = runs(false);
                let off = HitReport::pooled(&runs(true));
                println!("| {fps} | {rtt} | {loss} | {} |", seeded_hit_row(&on, &off));
            }
        }
    }
}

fn lab_hit_report(seconds: f64) {
    println!(
        "hit registration, lab baseline: a client standing still, in lockstep with the server, \
         fires the rifle at a bot that strafes while it fights back, aiming exactly where its \
         screen draws the bot (or 0.5 m beside its centre line); 20 ms jitter each way, \
         independent loss; {seconds} s per row, a shot every 13 ticks when the target is in \
         view; rewind window {} ms\n",
        sightline_combat::MAX_REWIND * 1000.0
    );
    println!(
        "| RTT ms | loss % | shots | hits on the drawn body % | blocked by a wall % \
         | hits of shots not blocked % | hits 0.5 m beside % | world age mean / max ms \
         | within window % | judged late % | refused % | frame delay mean / max |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|");
    for rtt in [0.0, 50.0, 150.0, 300.0] {
        for loss in [0.0, 5.0] {
            let c = Conditions {
                rtt_ms: rtt,
                jitter_ms: 20.0,
                loss_pct: loss,
            };
            let on = measure_hits_with(&HitSetup::lab(c, false, seconds, 7));
            let off = measure_hits_with(&HitSetup::lab(c, true, seconds, 7));
            println!("| {rtt} | {loss} | {} |", hit_row(&on, &off));
        }
    }
}
