//! The load test: a real server over real UDP on loopback and as many bot-driven clients as
//! it has players, all in this process, in real time, in a fight: each client is played by
//! an [`Autopilot`] that aims at what it draws and fires rifles and rockets, and the server
//! adds bots of its own. It measures what a host sizing a
//! server needs: the server's tick time with snapshot building and encoding included, the
//! longest tick while players join, what each client sends and receives a second with
//! UDP/IP and netcode headers, and what the snapshots weigh (per player, the largest, how
//! many renet had to send in slices), and how many of them the clients never took (lost
//! on the link, dropped by a slow line's queue, or overtaken).
//!
//! `cargo run --release -p sightline-bench -- load` runs 16, 32 and 64 players; the test
//! suite runs a short version with a few.

use crate::realtime::{JoinTimes, MeasuredServer};
use bevy::prelude::*;
use sightline_bots::BotSkill;
use sightline_client::{
    Autopilot, ClientPlugin, ClientStats, CommandRate, ConnectionStatus, DEFAULT_UPDATE_RATE,
    DownloadRate, InputHistory, InputSource, LatestSnapshot, StatsKey, UpdateRate, client_app,
};
use sightline_net::{
    AdmissionLimits, ClientNetPlugin, ClientSecurity, ConditionerSettings, LinkConditions,
    Security, UdpClientTransport, WireCount,
};
use sightline_runtime::Pacing;
use sightline_server::{MAX_PLAYERS, ServerConfig, SnapshotStats, TickTimes};
use sightline_sim::TickConfig;
use std::fmt;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a load test runs.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Clients, each a player.
    pub players: usize,
    /// Seconds measured once everyone has joined and played a little.
    pub seconds: f64,
    /// Seconds played after the last join before measuring.
    pub warmup: f64,
    /// Time between two clients starting to join.
    pub join_every: Duration,
    /// Frames a second each client draws (at most: all share this process's cores). A
    /// client sends an input packet a frame.
    pub fps: f64,
    /// Map.
    pub map: String,
    /// How each client's link misbehaves, both ways (none: plain loopback).
    pub link: ConditionerSettings,
    /// Each client's `cl_cmdrate` (0: a packet a frame; the game's default unless set).
    pub cmd_rate: u32,
    /// Each client's `rate`, bytes a second (0: none asked for).
    pub rate: u32,
    /// Each client's `cl_updaterate`, snapshots a second asked for (the game's default
    /// unless set).
    pub update_rate: u32,
    /// Bots the server adds to the match, besides the clients.
    pub bots: u8,
    /// Whether the clients fight (their [`Autopilot`]s fire at what they draw), rather
    /// than only run.
    pub fire: bool,
    /// Whether the server runs as a host operating it would, with these tools (metrics
    /// scraped every second, lifetime statistics on disk; every client with a statistics
    /// key). The harness knows none of the host's crates: the caller brings them.
    pub operated: Option<HostTools>,
}

/// A host's tools for an operated load test: given a folder of the run's own and a
/// listener for the metrics page, what to add to the server's app (the bench adds
/// `sightline-dedicated`'s statistics and telemetry plugins).
#[derive(Clone, Copy)]
pub struct HostTools(pub fn(&Path, TcpListener) -> Box<dyn FnOnce(&mut App) + Send>);

impl fmt::Debug for HostTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostTools")
    }
}

impl Default for LoadConfig {
    fn default() -> Self {
        Self {
            players: 16,
            seconds: 20.0,
            warmup: 3.0,
            join_every: Duration::from_millis(100),
            fps: 60.0,
            map: "depot".into(),
            link: ConditionerSettings::default(),
            cmd_rate: CommandRate::DEFAULT.0,
            rate: 0,
            update_rate: DEFAULT_UPDATE_RATE,
            bots: 4,
            fire: true,
            operated: None,
        }
    }
}

/// What a load test measured.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// The link, in words.
    pub link: String,
    /// Clients started, and those in the game when measuring began.
    pub players: usize,
    /// See `players`.
    pub joined: usize,
    /// Server tick while measured, milliseconds: median, 99th percentile, max.
    pub tick_ms: (f32, f32, f32),
    /// Ticks while measured.
    pub ticks: usize,
    /// Players who joined, and what their joins cost: the longest tick, and the longest
    /// whole server frame, in the frames in which they joined and the frames after.
    pub joins: JoinTimes,
    /// Bytes a second per client, each way, as the link carries them (UDP/IP and
    /// netcode headers included): from the server, to the server.
    pub down_bytes_per_s: f64,
    /// See `down_bytes_per_s`.
    pub up_bytes_per_s: f64,
    /// Datagrams a second per client, each way.
    pub down_datagrams_per_s: f64,
    /// See `down_datagrams_per_s`.
    pub up_datagrams_per_s: f64,
    /// Snapshots while measured, their encoded sizes, player entries and moving players.
    pub snapshots: SnapshotStats,
    /// The clients' mean frame rate (all share this process's cores).
    pub client_fps: f64,
    /// Share of the snapshots the server sent that a client never took: lost on the link,
    /// dropped by a slow line's full queue, or come after a newer one; percent.
    pub snapshots_lost_pct: f64,
    /// Input packets the clients sent while measured, and their encoded bytes (before
    /// renet's, netcode's and UDP/IP's headers).
    pub input_packets: (u64, u64),
    /// Messages and packets the clients refused as malformed while measured: on a link
    /// that only loses, delays or reorders, any at all is a fault of ours.
    pub refused: u64,
    /// Whether the server thread panicked.
    pub server_panicked: bool,
}

impl LoadReport {
    /// The table's header, in the columns [`LoadReport`]'s `Display` writes.
    pub const HEADER: &'static str = "| link | players | tick median / p99 / max ms | frames with a join: longest tick / frame ms | other frames meanwhile: longest ms | down B/s per client | up B/s per client | datagrams /s down / up | input packet B | B per moving player per snapshot | largest snapshot B | snapshots sent in slices | snapshots lost % | refused by clients | players moving % | client fps |\n|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|";

    /// Mean encoded snapshot, bytes.
    pub fn snapshot_mean(&self) -> f64 {
        self.snapshots.bytes as f64 / self.snapshots.sent.max(1) as f64
    }

    /// Mean encoded input packet, bytes.
    pub fn input_packet_mean(&self) -> f64 {
        self.input_packets.1 as f64 / self.input_packets.0.max(1) as f64
    }

    /// Mean bytes per moving player per snapshot: the whole snapshot over the players
    /// in it that moved.
    pub fn bytes_per_moving_player(&self) -> f64 {
        self.snapshots.bytes as f64 / self.snapshots.moving.max(1) as f64
    }

    /// Share of the player entries whose player was moving, percent.
    pub fn moving_pct(&self) -> f64 {
        100.0 * self.snapshots.moving as f64 / self.snapshots.players.max(1) as f64
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (p50, p99, max) = self.tick_ms;
        write!(
            f,
            "| {} | {} | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} | {:.3} | {:.0} | {:.0} | {:.0} / {:.0} | {:.1} | {:.1} | {} | {} | {:.1} | {} | {:.0} | {:.0} |",
            self.link,
            self.players,
            p50,
            p99,
            max,
            self.joins.tick_max_us / 1000.0,
            self.joins.frame_max_us / 1000.0,
            self.joins.other_frame_max_us / 1000.0,
            self.down_bytes_per_s,
            self.up_bytes_per_s,
            self.down_datagrams_per_s,
            self.up_datagrams_per_s,
            self.input_packet_mean(),
            self.bytes_per_moving_player(),
            self.snapshots.largest,
            self.snapshots.sliced,
            self.snapshots_lost_pct,
            self.refused,
            self.moving_pct(),
            self.client_fps,
        )
    }
}

fn load_client(server: std::net::SocketAddr, seed: u64, config: &LoadConfig) -> App {
    let mut app = client_app(
        ClientNetPlugin::udp(server, &ClientSecurity::Insecure).expect("socket opens"),
        ClientPlugin {
            name: format!("load{seed}"),
            input: InputSource::Autopilot(match config.fire {
                true => Autopilot::fighting(seed, BotSkill::Normal),
                false => Autopilot::new(seed),
            }),
        },
        Pacing::Stepped,
    );
    app.insert_resource(LinkConditions(config.link));
    app.insert_resource(CommandRate(config.cmd_rate));
    app.insert_resource(DownloadRate(config.rate));
    app.insert_resource(UpdateRate(config.update_rate));
    if config.operated.is_some() {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        app.insert_resource(StatsKey(Some(key)));
    }
    app.finish();
    app.cleanup();
    app
}

/// Both ways' counts summed over the clients.
fn wire(clients: &[App]) -> (WireCount, WireCount) {
    let mut sum = (WireCount::default(), WireCount::default());
    for app in clients {
        if let Some(t) = app.world().get_resource::<UdpClientTransport>() {
            let (received, sent) = t.wire();
            sum.0.datagrams += received.datagrams;
            sum.0.bytes += received.bytes;
            sum.1.datagrams += sent.datagrams;
            sum.1.bytes += sent.bytes;
        }
    }
    sum
}

/// Input packets the clients sent and their bytes, summed.
fn inputs_sent(clients: &[App]) -> (u64, u64) {
    clients.iter().fold((0, 0), |(n, bytes), app| {
        let (a, b) = app
            .world()
            .get_resource::<InputHistory>()
            .map_or((0, 0), InputHistory::packets_sent);
        (n + a, bytes + b)
    })
}

/// Messages the clients refused as malformed, summed.
fn refused(clients: &[App]) -> u64 {
    clients
        .iter()
        .map(|app| app.world().resource::<ClientStats>().malformed)
        .sum()
}

/// Snapshots accepted and the newest one's sequence number, summed over the clients.
fn snapshots_seen(clients: &[App]) -> (u64, u64) {
    clients.iter().fold((0, 0), |(accepted, newest), app| {
        let w = app.world();
        let seq = w
            .resource::<LatestSnapshot>()
            .0
            .as_ref()
            .map_or(0, |s| s.seq);
        (
            accepted + w.resource::<ClientStats>().snapshots,
            newest + u64::from(seq),
        )
    })
}

fn connected(clients: &[App]) -> usize {
    clients
        .iter()
        .filter(|a| a.world().resource::<ConnectionStatus>().is_connected())
        .count()
}

/// Runs a load test.
pub fn load(config: &LoadConfig) -> LoadReport {
    let tick = TickConfig::default();
    let map = crate::load_map(&config.map);
    // A server holds at most MAX_PLAYERS, bots included (a snapshot describes no more):
    // the server's bots give way to the clients measured. (Asked for more, the server
    // once sent snapshots of 68 players, which every client refused as malformed.)
    let players = config.players.clamp(1, usize::from(MAX_PLAYERS));
    let bots = config.bots.min(MAX_PLAYERS - players as u8);
    let server_config = ServerConfig {
        name: "load".into(),
        max_players: players as u8 + bots,
        bots,
        tick,
        ..Default::default()
    };
    let mut operator = config.operated.map(Operator::start);
    let host = operator.as_mut().map(Operator::plugins);
    let server = MeasuredServer::start_with(
        server_config,
        map,
        // Without connect tokens: the token service hands one address eight at once and
        // one a second after that, and every client here shares 127.0.0.1. Netcode's
        // datagrams are the same size either way.
        Security::Insecure,
        AdmissionLimits {
            max_per_address: players * 2,
        },
        move |app| {
            if let Some(add) = host {
                add(app);
            }
        },
    );
    let (addr, shared) = (server.addr, server.shared.clone());
    // The server's own bots join as it starts: not what the join columns measure. A
    // join's frame and the one after it count, so one more frame goes too.
    let mut bot_joins = 0;
    let give_up = Instant::now() + Duration::from_secs(10);
    while bot_joins < u64::from(bots) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(5));
        bot_joins += shared.take_joins().joins;
    }
    std::thread::sleep(Duration::from_millis(20));
    shared.take_joins();

    let l = &config.link;
    let mut link = if l.is_active() {
        format!(
            "{:.0} ms RTT, {}, {}",
            2.0 * l.latency_ms,
            l.describe_jitter(),
            l.describe_loss()
        )
    } else {
        "loopback".into()
    };
    if bots != config.bots {
        link += &format!(", {bots} bots");
    }
    if config.fps != LoadConfig::default().fps {
        link += &format!(", {} fps", config.fps);
    }
    if l.capacity_bps > 0.0 {
        link += &format!(", a {:.0} kB/s line", l.capacity_bps / 1000.0);
    }
    if config.cmd_rate != CommandRate::DEFAULT.0 {
        link += &format!(", cl_cmdrate {}", config.cmd_rate);
    }
    if config.update_rate != DEFAULT_UPDATE_RATE {
        link += &format!(", cl_updaterate {}", config.update_rate);
    }
    if config.rate != 0 {
        link += &format!(", rate {}", config.rate);
    }
    let mut report = LoadReport {
        link: match config.operated {
            None => link,
            Some(_) => format!("{link}, --metrics (scraped each second) and --stats"),
        },
        players,
        ..Default::default()
    };
    let mut clients: Vec<App> = Vec::new();
    let mut frames = 0u64;
    let frame = Duration::from_secs_f64(1.0 / config.fps.max(1.0));
    let mut next_frame = Instant::now();
    let mut update_all = |clients: &mut Vec<App>, frames: &mut u64| {
        let now = Instant::now();
        if now < next_frame {
            std::thread::sleep(next_frame - now);
        }
        // A frame late does not make the next one early.
        next_frame = next_frame.max(now) + frame;
        for app in clients.iter_mut() {
            app.update();
        }
        *frames += 1;
    };
    // Joining: a client starts every `join_every` until all have, then everyone gets in.
    let start = Instant::now();
    let mut next_join = start;
    while (clients.len() < players || connected(&clients) < players)
        && start.elapsed() < Duration::from_secs(30) + config.join_every * players as u32
        && !server.is_finished()
    {
        if clients.len() < players && Instant::now() >= next_join {
            clients.push(load_client(addr, clients.len() as u64 + 1, config));
            next_join += config.join_every;
        }
        update_all(&mut clients, &mut frames);
    }
    report.joins = shared.take_joins();
    let warm_until = Instant::now() + Duration::from_secs_f64(config.warmup);
    while Instant::now() < warm_until && !server.is_finished() {
        update_all(&mut clients, &mut frames);
    }
    // Measuring.
    report.joined = connected(&clients);
    shared.take_ticks();
    let (down0, up0) = wire(&clients);
    let seen0 = snapshots_seen(&clients);
    let refused0 = refused(&clients);
    let inputs0 = inputs_sent(&clients);
    let snapshots0 = shared.snapshots();
    let frames0 = frames;
    let measure_start = Instant::now();
    while measure_start.elapsed().as_secs_f64() < config.seconds && !server.is_finished() {
        update_all(&mut clients, &mut frames);
    }
    let elapsed = measure_start.elapsed().as_secs_f64();
    let (down1, up1) = wire(&clients);
    let seen1 = snapshots_seen(&clients);
    report.refused = refused(&clients).saturating_sub(refused0);
    let inputs1 = inputs_sent(&clients);
    report.input_packets = (
        inputs1.0.saturating_sub(inputs0.0),
        inputs1.1.saturating_sub(inputs0.1),
    );
    let snapshots1 = shared.snapshots();
    // Every client's snapshots are numbered one by one as the server sends them.
    let (accepted, sent) = (seen1.0 - seen0.0, seen1.1.saturating_sub(seen0.1));
    report.snapshots_lost_pct = 100.0 * (1.0 - accepted as f64 / sent.max(1) as f64).max(0.0);
    let n = clients.len().max(1) as f64;
    let per_client_second = |a: u64, b: u64| b.saturating_sub(a) as f64 / elapsed / n;
    report.down_bytes_per_s = per_client_second(down0.bytes, down1.bytes);
    report.up_bytes_per_s = per_client_second(up0.bytes, up1.bytes);
    report.down_datagrams_per_s = per_client_second(down0.datagrams, down1.datagrams);
    report.up_datagrams_per_s = per_client_second(up0.datagrams, up1.datagrams);
    report.snapshots = SnapshotStats {
        sent: snapshots1.sent - snapshots0.sent,
        bytes: snapshots1.bytes - snapshots0.bytes,
        largest: snapshots1.largest,
        sliced: snapshots1.sliced - snapshots0.sliced,
        players: snapshots1.players - snapshots0.players,
        moving: snapshots1.moving - snapshots0.moving,
        events_expired: snapshots1.events_expired - snapshots0.events_expired,
        held: snapshots1.held - snapshots0.held,
    };
    report.client_fps = (frames - frames0) as f64 / elapsed;
    let mut times = TickTimes::default();
    times.samples_us = shared.take_ticks();
    report.ticks = times.samples_us.len();
    report.tick_ms = times.summary_ms().unwrap_or_default();
    for app in clients.iter_mut() {
        sightline_net::disconnect_udp(app.world_mut());
    }
    drop(clients);
    report.server_panicked = server.stop();
    if let Some(operator) = operator {
        operator.stop();
    }
    report
}

/// What a host operating the server adds: a statistics database in a folder of its own,
/// a metrics listener, and a scraper asking it for `/metrics` and `/health` every second
/// (Prometheus's default is every 15 s).
struct Operator {
    tools: HostTools,
    dir: PathBuf,
    // Handed to the server's thread by `plugins`.
    listener: Option<TcpListener>,
    stop: Arc<AtomicBool>,
    scraper: Option<JoinHandle<usize>>,
}

impl Operator {
    fn start(tools: HostTools) -> Self {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sightline-load-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a folder for the statistics");
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let metrics = listener.local_addr().expect("a bound port");
        let stop = Arc::new(AtomicBool::new(false));
        let scraping = stop.clone();
        let scraper = std::thread::spawn(move || {
            let mut scrapes = 0;
            while !scraping.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                for path in ["/metrics", "/health"] {
                    scrapes += usize::from(scrape(metrics, path));
                }
            }
            scrapes
        });
        Self {
            tools,
            dir,
            listener: Some(listener),
            stop,
            scraper: Some(scraper),
        }
    }

    /// The plugins, for the server's thread.
    fn plugins(&mut self) -> Box<dyn FnOnce(&mut App) + Send> {
        let listener = self.listener.take().expect("the plugins are made once");
        (self.tools.0)(&self.dir, listener)
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let scrapes = self.scraper.take().map_or(0, |s| s.join().unwrap_or(0));
        assert!(scrapes > 0, "the metrics listener never answered");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One GET; whether it got an answer.
fn scrape(at: SocketAddr, path: &str) -> bool {
    crate::hosting::http_get(at, path, Duration::from_secs(2)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_load_test_joins_everyone_and_measures_both_ways() {
        let report = load(&LoadConfig {
            players: 3,
            seconds: 3.0,
            warmup: 1.0,
            ..Default::default()
        });
        println!("{}\n{report}", LoadReport::HEADER);
        assert!(!report.server_panicked);
        assert_eq!(report.joined, 3, "{report:?}");
        // Every join was seen and timed.
        assert_eq!(report.joins.joins, 3, "{report:?}");
        assert!(report.joins.frame_max_us >= report.joins.tick_max_us);
        assert!(report.joins.tick_max_us > 0.0, "{report:?}");
        assert!(report.ticks > 128, "{report:?}");
        // Snapshots at 64 Hz to each client, input packets once a client frame.
        assert!(report.down_datagrams_per_s > 50.0, "{report:?}");
        // An input packet a frame at up to 60 fps, renet's acknowledgements riding
        // with it rather than in a datagram of their own.
        assert!(
            (10.0..=65.0).contains(&report.up_datagrams_per_s),
            "{report:?}"
        );
        assert!(report.down_bytes_per_s > report.down_datagrams_per_s * 28.0);
        // Each snapshot holds at least its recipient's own player.
        assert!(report.snapshots.sent > 0 && report.snapshots.players >= report.snapshots.sent);
        assert!(
            report.snapshots.largest > 0 && report.snapshots.sliced == 0,
            "{report:?}"
        );
    }
}
