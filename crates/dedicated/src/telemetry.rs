//! What an operator's tools read: Prometheus metrics on `/metrics` and a health check on
//! `/health`, served over HTTP from a thread of the exporter's own so a scrape never
//! waits on a tick, nor a tick on a scrape.
//!
//! Once a frame the tick thread copies the counters it keeps anyway (the status line's)
//! into the registry, and notes when it last ticked and whether its ticks overrun; the
//! thread only reads. The listener reads up to [`MAX_PENDING`] requests at once without
//! blocking, shared fairly by host and network ([`sightline_limits::admit`], so
//! connections that never finish a request cannot keep a scraper out), and answers at
//! most [`MAX_REQUESTS_PER_SECOND`], shared by host and network as well
//! ([`sightline_limits::Shares`]): a flood from one host costs that host its answers, a
//! bounded share of one core, and nothing of the tick's.

use crate::metrics::{JsonPage, Metrics};
use crate::records::{RecordsPlugin, StatsDatabase, StatsWriter};
use bevy::prelude::*;
use prometheus::{Encoder, IntCounter, IntGauge, Opts, TextEncoder};
use sightline_limits::{
    Admit, Claim, HostKey, NetworkKey, PoolLimits, Rate, ShareRates, Shares, admit,
};
use sightline_runtime::TakeOnce;
use sightline_server::{Connection, Counters, HostingStats, TickCost};
use sightline_sim::{BotControlled, PlayerId, TickConfig};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Requests answered per second at most, from everyone; more are closed unanswered and
/// counted. One host may ask 10 a second (20 at once), one network 25.
pub const MAX_REQUESTS_PER_SECOND: u32 = 50;
/// The answers' shares: a host's, a network's, everyone's.
const ANSWERS: ShareRates = ShareRates {
    host: Rate::new(20.0, 10.0),
    network: Rate::new(50.0, 25.0),
    everyone: Rate::new(
        MAX_REQUESTS_PER_SECOND as f64,
        MAX_REQUESTS_PER_SECOND as f64,
    ),
};
/// Requests read at once: two a host, four a network; a newcomer takes the place of a
/// busier host's or network's oldest.
pub const MAX_PENDING: usize = 16;
const PENDING: PoolLimits = PoolLimits {
    capacity: MAX_PENDING,
    per_host: 2,
    per_network: 4,
};
/// Largest request head read; a longer one is refused.
pub const MAX_REQUEST_BYTES: usize = 8192;
/// How long a client may take to send its request, or to read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(1);
/// How often the listener looks for connections and bytes when there is nothing to do.
const POLL: Duration = Duration::from_millis(5);
/// A server that has not ticked for this long is unhealthy (hung, or stalled past what
/// it catches up).
pub const HEALTH_TICK_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves metrics and health on `listener` (`--metrics ADDR`), and the pages given.
pub struct TelemetryPlugin {
    // Taken out once by `build`.
    listener: TakeOnce<TcpListener>,
    pages: Vec<(&'static str, JsonPage)>,
}

impl TelemetryPlugin {
    /// Serves on `listener`, with extra read-only JSON `pages` by path (e.g.
    /// `/leaderboard`).
    pub fn new(listener: TcpListener, pages: Vec<(&'static str, JsonPage)>) -> Self {
        Self {
            listener: TakeOnce::new(listener),
            pages,
        }
    }
}

/// What a host operating a server adds for a load test (the harness's `HostTools`):
/// lifetime statistics in a database in `dir`, and metrics and health on `listener`.
/// Panics if `dir` takes no database: it is the test's own folder.
pub fn operated_plugins(dir: &Path, listener: TcpListener) -> Box<dyn FnOnce(&mut App) + Send> {
    let database = StatsDatabase::open(&dir.join("stats.db")).expect("a database in the folder");
    Box::new(move |app: &mut App| {
        app.add_plugins((
            RecordsPlugin::new(database),
            TelemetryPlugin::new(listener, Vec::new()),
        ));
    })
}

impl Plugin for TelemetryPlugin {
    fn build(&self, app: &mut App) {
        let metrics = app
            .world_mut()
            .get_resource_or_insert_with(Metrics::new)
            .clone();
        app.insert_resource(metrics.observers());
        let health = Arc::new(Health::new());
        let listener = self.listener.take("TelemetryPlugin");
        let exporter = Exporter {
            metrics: metrics.clone(),
            health: health.clone(),
            pages: self.pages.clone(),
            dropped: IntCounter::with_opts(Opts::new(
                "sightline_metrics_requests_dropped_total",
                "Requests to the metrics listener closed unanswered (over the rate, malformed, \
                 too slow)",
            ))
            .expect("valid counter"),
        };
        metrics
            .registry
            .register(Box::new(exporter.dropped.clone()))
            .expect("registered once");
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || exporter.serve(listener, &thread_stop))
            .expect("can spawn the metrics thread");
        app.insert_resource(Telemetry {
            health,
            stop,
            counters: HashMap::new(),
            gauges: HashMap::new(),
        })
        .add_systems(Last, publish);
    }
}

/// The tick thread's side of the exporter: the health it writes and the metrics it
/// copied in.
#[derive(Resource)]
pub struct Telemetry {
    health: Arc<Health>,
    // Stops the listener's thread when the server (or a test's app) goes away.
    stop: Arc<AtomicBool>,
    counters: HashMap<&'static str, IntCounter>,
    gauges: HashMap<&'static str, IntGauge>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Telemetry {
    /// Brings counter `name` up to `total` (registering it the first time): the server
    /// keeps totals, Prometheus wants increments.
    fn count(
        &mut self,
        registry: &prometheus::Registry,
        name: &'static str,
        help: &str,
        total: u64,
    ) {
        let counter = self.counters.entry(name).or_insert_with(|| {
            let c = IntCounter::with_opts(Opts::new(name, help)).expect("valid counter");
            registry
                .register(Box::new(c.clone()))
                .expect("registered once");
            c
        });
        counter.inc_by(total.saturating_sub(counter.get()));
    }

    fn gauge(
        &mut self,
        registry: &prometheus::Registry,
        name: &'static str,
        help: &str,
        value: i64,
    ) {
        self.gauges
            .entry(name)
            .or_insert_with(|| {
                let g = IntGauge::with_opts(Opts::new(name, help)).expect("valid gauge");
                registry
                    .register(Box::new(g.clone()))
                    .expect("registered once");
                g
            })
            .set(value);
    }
}

/// Whether the server ticks, as the listener's thread reads it.
struct Health {
    started: Instant,
    /// Milliseconds after `started` of the last tick, plus one; zero before the first.
    last_tick: AtomicU64,
    overrunning: AtomicBool,
}

impl Health {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            last_tick: AtomicU64::new(0),
            overrunning: AtomicBool::new(false),
        }
    }

    /// The answer to `/health`: healthy, or why not.
    fn check(&self) -> Result<(), String> {
        let last = self.last_tick.load(Ordering::Relaxed);
        if last == 0 {
            return Err("starting: no tick yet".into());
        }
        let since = self
            .started
            .elapsed()
            .saturating_sub(Duration::from_millis(last - 1));
        if since > HEALTH_TICK_TIMEOUT {
            return Err(format!("no tick for {:.1} s", since.as_secs_f64()));
        }
        if self.overrunning.load(Ordering::Relaxed) {
            return Err("ticks keep overrunning their time".into());
        }
        Ok(())
    }
}

/// What the published counters read.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct Sources<'w, 's> {
    counters: Counters<'w>,
    hosting: Res<'w, HostingStats>,
    records: Option<Res<'w, StatsWriter>>,
    cost: Res<'w, TickCost>,
    fixed: Res<'w, Time<Fixed>>,
    tick: Res<'w, sightline_sim::Tick>,
    config: Res<'w, TickConfig>,
    humans: Query<'w, 's, (), (With<PlayerId>, With<Connection>)>,
    bots: Query<'w, 's, (), With<BotControlled>>,
}

/// Copies the server's totals into the registry and notes its health, once a frame.
fn publish(mut telemetry: ResMut<Telemetry>, metrics: Res<Metrics>, s: Sources) {
    let health = telemetry.health.clone();
    if s.tick.0 > 0 {
        let ms = health.started.elapsed().as_millis() as u64;
        health.last_tick.store(ms + 1, Ordering::Relaxed);
    }
    health
        .overrunning
        .store(s.cost.overrunning(s.fixed.timestep()), Ordering::Relaxed);
    let r = &metrics.registry;
    let t = &mut *telemetry;
    t.gauge(
        r,
        "sightline_players",
        "Players connected (bots not included)",
        s.humans.iter().count() as i64,
    );
    t.gauge(
        r,
        "sightline_bots",
        "Bots playing",
        s.bots.iter().count() as i64,
    );
    t.gauge(
        r,
        "sightline_tick_rate_hz",
        "Simulation ticks per second",
        i64::from(s.config.tick_hz),
    );
    t.gauge(
        r,
        "sightline_ban_lines_skipped",
        "Lines of the ban file skipped at start-up as unreadable (the log names them)",
        s.hosting.ban_lines_skipped as i64,
    );
    for counter in s.counters.all() {
        if let Some(name) = counter.metric {
            t.count(r, name, counter.help, counter.value);
        }
    }
    if let Some(records) = &s.records {
        t.count(
            r,
            "sightline_stats_dropped_total",
            "Statistics batches dropped because the database fell behind",
            records.dropped,
        );
        t.count(
            r,
            "sightline_stats_write_failures_total",
            "Statistics transactions that failed (disk full, locked), their batch lost",
            records.failures.load(Ordering::Relaxed),
        );
    }
}

/// A request head as read so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestHead {
    /// Whole: its method and target.
    Complete {
        /// `GET`, `HEAD`...
        method: String,
        /// The path, with its query string.
        target: String,
    },
    /// More bytes needed.
    Partial,
    /// Not HTTP, or longer than the listener reads.
    Refused,
}

/// Reads an HTTP/1.x request head from the bytes a client sent so far (hostile: any
/// bytes, any length).
pub fn parse_request_head(head: &[u8]) -> RequestHead {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => RequestHead::Complete {
            method: request.method.unwrap_or_default().to_owned(),
            target: request.path.unwrap_or_default().to_owned(),
        },
        Ok(httparse::Status::Partial) if head.len() < MAX_REQUEST_BYTES => RequestHead::Partial,
        _ => RequestHead::Refused,
    }
}

/// The listener's thread.
struct Exporter {
    metrics: Metrics,
    health: Arc<Health>,
    pages: Vec<(&'static str, JsonPage)>,
    dropped: IntCounter,
}

/// A request being read.
struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    since: Instant,
    head: Vec<u8>,
}

/// What reading a request found.
enum Reading {
    Waiting,
    Complete(String, String),
    Broken,
}

impl Pending {
    /// Its place in the pool: never settled (a whole request is answered and gone).
    fn claim(&self) -> Claim {
        Claim {
            host: HostKey::of(self.peer.ip()),
            network: NetworkKey::of(self.peer.ip()),
            since: self.since,
            settled: false,
        }
    }

    /// Reads what has arrived, without blocking.
    fn read(&mut self) -> Reading {
        let mut buf = [0u8; 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return Reading::Broken,
                Ok(n) => self.head.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Reading::Broken,
            }
            if self.head.len() > MAX_REQUEST_BYTES {
                return Reading::Broken;
            }
        }
        match parse_request_head(&self.head) {
            RequestHead::Complete { method, target } => Reading::Complete(method, target),
            RequestHead::Partial => Reading::Waiting,
            _ => Reading::Broken,
        }
    }
}

/// An HTTP answer: status, content type, body.
type Answer = (u16, &'static str, String);

impl Exporter {
    fn serve(&self, listener: TcpListener, stop: &AtomicBool) {
        if let Err(e) = listener.set_nonblocking(true) {
            error!("metrics listener: {e}; metrics are off");
            return;
        }
        let mut answers = Shares::new(ANSWERS);
        let mut pending: Vec<Pending> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            // Requests are read before newcomers are admitted, so a scraper's request,
            // sent as it connects, is read before anyone can take its place.
            let mut idle = true;
            pending.retain_mut(|p| match p.read() {
                Reading::Waiting if now.saturating_duration_since(p.since) <= IO_TIMEOUT => true,
                Reading::Waiting | Reading::Broken => {
                    self.dropped.inc();
                    false
                }
                Reading::Complete(method, target) => {
                    idle = false;
                    let answered = answers.allow(p.peer.ip(), now).is_ok()
                        && self.answer(&mut p.stream, &method, &target).is_ok();
                    if !answered {
                        self.dropped.inc();
                    }
                    false
                }
            });
            for _ in 0..MAX_PENDING {
                let (stream, peer) = match listener.accept() {
                    Ok(accepted) => accepted,
                    // None waiting, a connection reset before it was accepted, out of
                    // descriptors: look again later.
                    Err(_) => break,
                };
                idle = false;
                let claims: Vec<Claim> = pending.iter().map(Pending::claim).collect();
                let host = HostKey::of(peer.ip());
                match admit(&claims, host, NetworkKey::of(peer.ip()), PENDING, now) {
                    Admit::Yes => {}
                    Admit::Instead(i) => {
                        pending.swap_remove(i);
                        self.dropped.inc();
                    }
                    Admit::No => {
                        self.dropped.inc();
                        continue;
                    }
                }
                if stream.set_nonblocking(true).is_err() {
                    self.dropped.inc();
                    continue;
                }
                pending.push(Pending {
                    stream,
                    peer,
                    since: now,
                    head: Vec::new(),
                });
            }
            if idle {
                std::thread::sleep(POLL);
            }
        }
    }

    /// Answers a whole request; an error closes the connection unanswered.
    fn answer(&self, stream: &mut TcpStream, method: &str, target: &str) -> std::io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        let (status, content_type, body) = match method {
            "GET" | "HEAD" => self.route(target),
            _ => (405, "text/plain; charset=utf-8", "GET only\n".into()),
        };
        let reason = match status {
            200 => "OK",
            404 => "Not Found",
            405 => "Method Not Allowed",
            _ => "Service Unavailable",
        };
        let mut response = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n\
             Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        if method != "HEAD" {
            response.extend_from_slice(body.as_bytes());
        }
        stream.write_all(&response)
    }

    fn route(&self, target: &str) -> Answer {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match path {
            "/metrics" => {
                let encoder = TextEncoder::new();
                let mut body = Vec::new();
                match encoder.encode(&self.metrics.registry.gather(), &mut body) {
                    Ok(()) => (
                        200,
                        prometheus::TEXT_FORMAT,
                        String::from_utf8_lossy(&body).into_owned(),
                    ),
                    Err(e) => (503, "text/plain; charset=utf-8", format!("{e}\n")),
                }
            }
            "/health" => match self.health.check() {
                Ok(()) => (200, "text/plain; charset=utf-8", "ok\n".into()),
                Err(why) => (503, "text/plain; charset=utf-8", format!("{why}\n")),
            },
            _ => match self.pages.iter().find(|(p, _)| *p == path) {
                Some((_, page)) => match page(query) {
                    Ok(json) => (200, "application/json", json),
                    Err(e) => (503, "text/plain; charset=utf-8", format!("{e}\n")),
                },
                None => (404, "text/plain; charset=utf-8", "not found\n".into()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_are_read_whole_partial_or_refused() {
        assert_eq!(
            parse_request_head(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            RequestHead::Complete {
                method: "GET".into(),
                target: "/metrics".into()
            }
        );
        assert_eq!(parse_request_head(b"GET /metr"), RequestHead::Partial);
        assert_eq!(
            parse_request_head(b"\x16\x03\x01 TLS"),
            RequestHead::Refused
        );
        let endless = [
            b"GET / HTTP/1.1\r\nX: ".as_slice(),
            &[b'a'; MAX_REQUEST_BYTES],
        ]
        .concat();
        assert_eq!(parse_request_head(&endless), RequestHead::Refused);
    }

    #[test]
    fn health_waits_for_a_tick_then_notices_overruns() {
        let health = Health::new();
        assert!(health.check().unwrap_err().contains("no tick yet"));
        health.last_tick.store(1, Ordering::Relaxed);
        assert_eq!(health.check(), Ok(()));
        health.overrunning.store(true, Ordering::Relaxed);
        assert!(health.check().unwrap_err().contains("overrunning"));

        let mut hung = Health::new();
        hung.started = Instant::now()
            .checked_sub(HEALTH_TICK_TIMEOUT * 2)
            .expect("the clock reaches back ten seconds");
        hung.last_tick.store(1, Ordering::Relaxed);
        assert!(hung.check().unwrap_err().contains("no tick for"));
    }
}
