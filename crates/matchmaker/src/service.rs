//! The matchmaker as a service, what a game's "Quick play" asks: `POST /v1/quickplay` over
//! HTTPS answers with a [`Ticket`] for the asker's address on a server that has room.
//!
//! Requests wait in one queue, served in order by a single allocating thread: when no
//! server is Ready the head asks again every [`ServiceConfig::retry_every`], and a player
//! still waiting after [`ServiceConfig::queue_wait`] is told no server became free. Every
//! stranger-facing budget is shared by host and by network ([`sightline_limits`]): the
//! connections held open, the requests a second and the places in the queue, so one host
//! or one network cannot keep everyone else out. `GET /metrics` serves the counters in
//! Prometheus's text format, `GET /healthz` says it runs.

use crate::allocator::{AllocateError, Allocator};
use crate::listed::ServerList;
use crate::ticket::{Ticket, unix_now};
use serde_json::json;
use sightline_limits::{
    Admit, Claim, HostKey, NetworkKey, PoolLimits, Rate, ShareRates, Shares, admit, canonical_ip,
};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant};

/// Connections held open at once: in all, by one host, by one network. A player's
/// connection stays open while it waits in the queue.
pub const CONNECTIONS: PoolLimits = PoolLimits {
    capacity: 512,
    per_host: 4,
    per_network: 32,
};
/// Quick-play requests: a host may ask five times at once and then once in two seconds
/// (a player who presses the button again after a refusal); a network, thirty and five a
/// second; everyone, 500 and 100 a second.
pub const REQUEST_RATES: ShareRates = ShareRates {
    host: Rate::new(5.0, 0.5),
    network: Rate::new(30.0, 5.0),
    everyone: Rate::new(500.0, 100.0),
};
/// Places in the queue: in all, for one host, for one network.
pub const QUEUE: PoolLimits = PoolLimits {
    capacity: 1024,
    per_host: 2,
    per_network: 16,
};
/// How long a connection has to finish its TLS handshake and send its request.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// How long the answer may take to write once it is ready.
const ANSWER_DEADLINE: Duration = Duration::from_secs(10);
/// The most a request's head (request line and headers) may hold.
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// The most of a body read (quick play's is empty or `{}`).
const MAX_BODY_BYTES: usize = 1024;
/// Most headers parsed.
const MAX_HEADERS: usize = 32;
/// The seconds a refused player is told to wait (`Retry-After`).
const RETRY_AFTER_SECONDS: u64 = 5;

/// How long a listed server has to answer the A2S query that asks its room.
const LIST_QUERY_TIMEOUT: Duration = Duration::from_millis(500);

/// Where servers come from.
#[derive(Debug, Clone)]
pub enum Servers {
    /// An Agones fleet, through its allocator.
    Fleet(Allocator),
    /// A fixed list of servers that load the key, handed out in turn while their A2S
    /// answers say they have room ([`ServerList`]; no fleet: a handful of servers a
    /// community runs).
    List(Vec<SocketAddr>),
}

/// What the service needs.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Where servers come from.
    pub servers: Servers,
    /// The key the servers load (`--key-file`), which tokens are sealed with.
    pub key: [u8; 32],
    /// How long a player waits in the queue for a server before being told none is free.
    pub queue_wait: Duration,
    /// How often the queue's head asks the allocator again while no server is Ready.
    pub retry_every: Duration,
    /// TLS for the service (`None`: plain HTTP, for tests or behind a TLS-terminating
    /// proxy on the same machine).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// The service's counters: each row is written once here and read by the metrics page.
#[derive(Debug, Default)]
pub struct Counters {
    /// Quick-play requests read.
    pub requests: AtomicU64,
    /// Tickets handed out.
    pub tickets: AtomicU64,
    /// Requests refused: the asker's host, network or everyone had asked too often.
    pub refused_rate: AtomicU64,
    /// Requests refused: the asker (or its network) already held its places in the queue,
    /// or the queue was full.
    pub refused_queue: AtomicU64,
    /// Connections closed unheard: their host or network held its share of connections,
    /// or they gave way to a newcomer while stalled.
    pub refused_connections: AtomicU64,
    /// Requests that were not HTTP, too large, too slow, or for a page that does not exist.
    pub bad_requests: AtomicU64,
    /// Players told that no server became free while they waited.
    pub queue_timeouts: AtomicU64,
    /// Allocations that failed for another reason than no server being Ready.
    pub allocator_errors: AtomicU64,
    /// Players waiting in the queue now.
    pub queued: AtomicU64,
}

impl Counters {
    /// Every counter: its Prometheus name, a label set, its help, its kind and its value.
    fn rows(&self) -> [(&'static str, &'static str, &'static str, &'static str, u64); 9] {
        let v = |c: &AtomicU64| c.load(Ordering::Relaxed);
        const REFUSED: &str = "Quick-play requests and connections refused, by reason.";
        [
            (
                "sightline_matchmaker_requests_total",
                "",
                "Quick-play requests read.",
                "counter",
                v(&self.requests),
            ),
            (
                "sightline_matchmaker_tickets_total",
                "",
                "Tickets (a server and a sealed token) handed out.",
                "counter",
                v(&self.tickets),
            ),
            (
                "sightline_matchmaker_refused_total",
                "reason=\"rate\"",
                REFUSED,
                "counter",
                v(&self.refused_rate),
            ),
            (
                "sightline_matchmaker_refused_total",
                "reason=\"queue\"",
                REFUSED,
                "counter",
                v(&self.refused_queue),
            ),
            (
                "sightline_matchmaker_refused_total",
                "reason=\"connections\"",
                REFUSED,
                "counter",
                v(&self.refused_connections),
            ),
            (
                "sightline_matchmaker_refused_total",
                "reason=\"bad_request\"",
                REFUSED,
                "counter",
                v(&self.bad_requests),
            ),
            (
                "sightline_matchmaker_queue_timeouts_total",
                "",
                "Players told that no server became free while they waited.",
                "counter",
                v(&self.queue_timeouts),
            ),
            (
                "sightline_matchmaker_allocator_errors_total",
                "",
                "Allocations that failed for another reason than no server being Ready.",
                "counter",
                v(&self.allocator_errors),
            ),
            (
                "sightline_matchmaker_queued",
                "",
                "Players waiting in the queue.",
                "gauge",
                v(&self.queued),
            ),
        ]
    }

    /// The counters in Prometheus's text exposition format.
    pub fn prometheus_text(&self) -> String {
        let mut out = String::new();
        let mut last = "";
        for (name, labels, help, kind, value) in self.rows() {
            if name != last {
                out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
                last = name;
            }
            match labels {
                "" => out.push_str(&format!("{name} {value}\n")),
                l => out.push_str(&format!("{name}{{{l}}} {value}\n")),
            }
        }
        out
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// A player waiting for a server.
struct Waiting {
    id: u64,
    ip: IpAddr,
    host: HostKey,
    network: NetworkKey,
    answer: mpsc::Sender<Result<Ticket, String>>,
}

/// An open connection's place.
struct Held {
    id: u64,
    claim: Claim,
    /// To close it when a newcomer takes its place.
    stream: TcpStream,
}

/// What the threads share.
struct Shared {
    config: ServiceConfig,
    counters: Arc<Counters>,
    rates: Mutex<Shares>,
    queue: Mutex<VecDeque<Waiting>>,
    queue_changed: Condvar,
    connections: Mutex<Vec<Held>>,
    next_id: AtomicU64,
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters and queues: nothing half-done in them matters if a thread panicked.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running service; dropping it stops it.
pub struct Service {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Service {
    /// Listens on `bind` and starts serving on threads of its own.
    pub fn start(bind: SocketAddr, config: ServiceConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(bind)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            config,
            counters: Arc::default(),
            rates: Mutex::new(Shares::new(REQUEST_RATES)),
            queue: Mutex::new(VecDeque::new()),
            queue_changed: Condvar::new(),
            connections: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            stop: AtomicBool::new(false),
        });
        let threads = vec![
            spawn("matchmaker-accept", {
                let shared = Arc::clone(&shared);
                move || accept_connections(&listener, &shared)
            })?,
            spawn("matchmaker-queue", {
                let shared = Arc::clone(&shared);
                move || serve_queue(&shared)
            })?,
        ];
        Ok(Self {
            addr,
            shared,
            threads,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counters.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.shared.counters)
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        for t in self.threads.drain(..) {
            t.join().ok();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.queue_changed.notify_all();
        // Wakes the accepting thread, which then sees the flag.
        TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).ok();
        for t in self.threads.drain(..) {
            t.join().ok();
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}

/// Takes connections, each with a place in the pool or none, and serves each on a thread.
fn accept_connections(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors, say: wait a little rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let Ok(peer) = stream.peer_addr() else {
            continue;
        };
        let Some(id) = take_place(shared, &stream, canonical_ip(peer.ip())) else {
            bump(&shared.counters.refused_connections);
            continue; // dropping the stream closes it
        };
        let serving = spawn("matchmaker-conn", {
            let shared = Arc::clone(shared);
            move || {
                serve_connection(stream, canonical_ip(peer.ip()), id, &shared);
                lock(&shared.connections).retain(|h| h.id != id);
            }
        });
        if serving.is_err() {
            lock(&shared.connections).retain(|h| h.id != id);
        }
    }
}

/// A place in the pool of open connections for a newcomer from `ip`, closing a stalled
/// one from a busier host or network if it must; `None` when it gets none.
fn take_place(shared: &Shared, stream: &TcpStream, ip: IpAddr) -> Option<u64> {
    let (host, network) = (HostKey::of(ip), NetworkKey::of(ip));
    let now = Instant::now();
    let mut held = lock(&shared.connections);
    let claims: Vec<Claim> = held.iter().map(|h| h.claim).collect();
    match admit(&claims, host, network, CONNECTIONS, now) {
        Admit::No => return None,
        Admit::Instead(i) => {
            let gone = held.swap_remove(i);
            gone.stream.shutdown(Shutdown::Both).ok();
            bump(&shared.counters.refused_connections);
        }
        Admit::Yes => {}
    }
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    held.push(Held {
        id,
        claim: Claim {
            host,
            network,
            since: now,
            settled: false,
        },
        stream: stream.try_clone().ok()?,
    });
    Some(id)
}

/// A connection's socket with a deadline for everything read and written through it.
struct Deadlined {
    stream: TcpStream,
    deadline: Instant,
}

impl Deadlined {
    fn remaining(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.remaining()?))?;
        self.stream.read(buf)
    }
}

impl Write for Deadlined {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.remaining()?))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// A connection, plain or in TLS, whose deadline can be moved.
trait Conn: Read + Write {
    fn set_deadline(&mut self, deadline: Instant);
}

impl Conn for Deadlined {
    fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }
}

impl Conn for rustls::StreamOwned<rustls::ServerConnection, Deadlined> {
    fn set_deadline(&mut self, deadline: Instant) {
        self.sock.deadline = deadline;
    }
}

fn serve_connection(stream: TcpStream, ip: IpAddr, id: u64, shared: &Shared) {
    let plain = Deadlined {
        stream,
        deadline: Instant::now() + REQUEST_DEADLINE,
    };
    match &shared.config.tls {
        None => {
            let mut conn = plain;
            serve_request(&mut conn, ip, id, shared);
        }
        Some(tls) => {
            let Ok(session) = rustls::ServerConnection::new(Arc::clone(tls)) else {
                return;
            };
            let mut conn = rustls::StreamOwned::new(session, plain);
            serve_request(&mut conn, ip, id, shared);
            conn.conn.send_close_notify();
            conn.flush().ok();
        }
    }
}

/// A request as far as the service cares.
struct Request {
    method: String,
    path: String,
}

/// Why a request could not be read.
enum BadRequest {
    /// The connection failed, timed out or closed: nothing to answer.
    Gone,
    /// Bytes that are not a request this service reads: answered 400.
    Malformed(&'static str),
}

/// Reads a request's head (and a small body, which nothing here needs).
fn read_request(conn: &mut impl Read) -> Result<Request, BadRequest> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = conn.read(&mut chunk).map_err(|_| BadRequest::Gone)?;
        if n == 0 {
            return Err(BadRequest::Gone);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let length = request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .map(|h| {
                        std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.trim().parse::<usize>().ok())
                    });
                let length = match length {
                    None => 0,
                    Some(Some(n)) if n <= MAX_BODY_BYTES => n,
                    Some(_) => return Err(BadRequest::Malformed("the body is too large")),
                };
                let parsed = Request {
                    method: request.method.unwrap_or_default().to_string(),
                    path: request.path.unwrap_or_default().to_string(),
                };
                let mut have = buf.len() - head_len;
                while have < length {
                    let n = conn.read(&mut chunk).map_err(|_| BadRequest::Gone)?;
                    if n == 0 {
                        return Err(BadRequest::Gone);
                    }
                    have += n;
                }
                return Ok(parsed);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD_BYTES => {}
            Ok(httparse::Status::Partial) => {
                return Err(BadRequest::Malformed("the request's head is too large"));
            }
            Err(_) => return Err(BadRequest::Malformed("not an HTTP request")),
        }
    }
}

/// An answer.
struct Answer {
    status: u16,
    body: String,
    content_type: &'static str,
    retry_after: Option<u64>,
}

impl Answer {
    fn json(status: u16, body: String) -> Self {
        Self {
            status,
            body,
            content_type: "application/json",
            retry_after: None,
        }
    }

    fn error(status: u16, message: &str) -> Self {
        Self::json(status, json!({ "error": message }).to_string())
    }

    fn retry(mut self) -> Self {
        self.retry_after = Some(RETRY_AFTER_SECONDS);
        self
    }

    fn write(&self, conn: &mut impl Conn) -> io::Result<()> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            429 => "Too Many Requests",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            _ => "Error",
        };
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
             Cache-Control: no-store\r\nConnection: close\r\n",
            self.status,
            self.content_type,
            self.body.len()
        );
        if let Some(s) = self.retry_after {
            head.push_str(&format!("Retry-After: {s}\r\n"));
        }
        head.push_str("\r\n");
        conn.write_all(head.as_bytes())?;
        conn.write_all(self.body.as_bytes())?;
        conn.flush()
    }
}

fn serve_request(conn: &mut impl Conn, ip: IpAddr, id: u64, shared: &Shared) {
    let answer = match read_request(conn) {
        Err(BadRequest::Gone) => {
            bump(&shared.counters.bad_requests);
            return;
        }
        Err(BadRequest::Malformed(why)) => {
            bump(&shared.counters.bad_requests);
            Answer::error(400, why)
        }
        Ok(request) => {
            // A whole request: this connection is no longer a stalled one to give way.
            if let Some(h) = lock(&shared.connections).iter_mut().find(|h| h.id == id) {
                h.claim.settled = true;
            }
            route(&request, ip, shared)
        }
    };
    conn.set_deadline(Instant::now() + ANSWER_DEADLINE);
    answer.write(conn).ok();
}

fn route(request: &Request, ip: IpAddr, shared: &Shared) -> Answer {
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/v1/quickplay") => quick_play(ip, shared),
        ("GET", "/metrics") => Answer {
            status: 200,
            body: shared.counters.prometheus_text(),
            content_type: "text/plain; version=0.0.4",
            retry_after: None,
        },
        ("GET", "/healthz") => Answer {
            status: 200,
            body: "ok\n".into(),
            content_type: "text/plain",
            retry_after: None,
        },
        (_, "/v1/quickplay" | "/metrics" | "/healthz") => {
            bump(&shared.counters.bad_requests);
            Answer::error(405, "method not allowed")
        }
        _ => {
            bump(&shared.counters.bad_requests);
            Answer::error(404, "no such page")
        }
    }
}

/// A quick-play request from `ip`: a ticket once a server is free, or why not.
fn quick_play(ip: IpAddr, shared: &Shared) -> Answer {
    let counters = &shared.counters;
    bump(&counters.requests);
    if let Err(refusal) = lock(&shared.rates).allow(ip, Instant::now()) {
        bump(&counters.refused_rate);
        let whose = match refusal {
            sightline_limits::Refusal::Host => "your address",
            sightline_limits::Refusal::Network => "your network",
            sightline_limits::Refusal::Everyone => "everyone",
        };
        return Answer::error(
            429,
            &format!("too many requests from {whose}: wait a few seconds"),
        )
        .retry();
    }
    let (id, answer) = match enqueue(ip, shared) {
        Ok(waiting) => waiting,
        Err(why) => {
            bump(&counters.refused_queue);
            return Answer::error(429, why).retry();
        }
    };
    let outcome = answer.recv_timeout(shared.config.queue_wait);
    if outcome.is_err() {
        // Gone from the queue now, unless the allocating thread took it just before.
        leave_queue(shared, id);
    }
    match outcome {
        Ok(Ok(ticket)) => {
            bump(&counters.tickets);
            Answer::json(200, ticket.to_json())
        }
        Ok(Err(reason)) => {
            bump(&counters.allocator_errors);
            Answer::error(502, &format!("cannot find a server: {reason}")).retry()
        }
        Err(_) => {
            bump(&counters.queue_timeouts);
            let secs = shared.config.queue_wait.as_secs();
            Answer::error(503, &format!("no server became free within {secs} s")).retry()
        }
    }
}

/// A place at the back of the queue for `ip`, within its host's and network's share.
fn enqueue(
    ip: IpAddr,
    shared: &Shared,
) -> Result<(u64, mpsc::Receiver<Result<Ticket, String>>), &'static str> {
    let (host, network) = (HostKey::of(ip), NetworkKey::of(ip));
    let mut queue = lock(&shared.queue);
    if queue.iter().filter(|w| w.host == host).count() >= QUEUE.per_host {
        return Err("you are already waiting for a server");
    }
    if queue.iter().filter(|w| w.network == network).count() >= QUEUE.per_network {
        return Err("your network already has its share of places in the queue");
    }
    if queue.len() >= QUEUE.capacity {
        return Err("the queue is full");
    }
    let (tx, rx) = mpsc::channel();
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    queue.push_back(Waiting {
        id,
        ip,
        host,
        network,
        answer: tx,
    });
    shared
        .counters
        .queued
        .store(queue.len() as u64, Ordering::Relaxed);
    shared.queue_changed.notify_all();
    Ok((id, rx))
}

fn leave_queue(shared: &Shared, id: u64) {
    let mut queue = lock(&shared.queue);
    queue.retain(|w| w.id != id);
    shared
        .counters
        .queued
        .store(queue.len() as u64, Ordering::Relaxed);
}

/// The allocating thread: serves the queue's head, in order; while no server is Ready it
/// waits [`ServiceConfig::retry_every`] and asks again.
fn serve_queue(shared: &Shared) {
    let mut listed = match &shared.config.servers {
        Servers::List(list) => ServerList::new(list),
        Servers::Fleet(_) => ServerList::new(&[]),
    };
    loop {
        let head = {
            let mut queue = lock(&shared.queue);
            loop {
                if shared.stop.load(Ordering::Relaxed) {
                    return;
                }
                if let Some(w) = queue.front() {
                    break (w.id, w.ip);
                }
                queue = shared
                    .queue_changed
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        let (id, ip) = head;
        let outcome = allocate(shared, &mut listed, ip);
        if matches!(outcome, Err(AllocateError::NoneReady(_))) {
            let queue = lock(&shared.queue);
            drop(
                shared
                    .queue_changed
                    .wait_timeout_while(queue, shared.config.retry_every, |_| {
                        !shared.stop.load(Ordering::Relaxed)
                    }),
            );
            continue;
        }
        let mut queue = lock(&shared.queue);
        if let Some(i) = queue.iter().position(|w| w.id == id) {
            let waiting = queue.remove(i).expect("found");
            // A player who gave up in the meantime leaves a server allocated for no one:
            // Agones's allocated servers are ended by their match (or by the operator).
            waiting.answer.send(outcome.map_err(|e| e.to_string())).ok();
        }
        shared
            .counters
            .queued
            .store(queue.len() as u64, Ordering::Relaxed);
    }
}

/// A server for the player at `ip`, and the ticket to it.
fn allocate(shared: &Shared, listed: &mut ServerList, ip: IpAddr) -> Result<Ticket, AllocateError> {
    let (name, address) = match &shared.config.servers {
        Servers::Fleet(allocator) => {
            let a = allocator.allocate()?;
            (a.game_server, a.address)
        }
        Servers::List(_) => {
            let room = |addr| {
                sightline_query::query_info(addr, LIST_QUERY_TIMEOUT)
                    .ok()
                    .map(|(info, _)| (info.players, info.max_players))
            };
            let address = listed.pick(Instant::now(), room).ok_or_else(|| {
                AllocateError::NoneReady("every listed server is full or does not answer".into())
            })?;
            (address.to_string(), address)
        }
    };
    let client_id = u64::from_le_bytes(
        sightline_tokens::random_secret()[..8]
            .try_into()
            .unwrap_or_default(),
    );
    let now = unix_now().map_err(AllocateError::Failed)?;
    Ticket::seal(&shared.config.key, name, address, client_id, ip, now)
        .map_err(AllocateError::Failed)
}

/// Reads the service's certificate chain and private key (PEM files, as a certificate
/// authority or `openssl` writes them) into a TLS configuration.
pub fn load_tls(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate in the file", cert.display()));
    }
    let private =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    tls_config(chain, private)
}

/// A TLS configuration from a chain and its key.
pub fn tls_config(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key: {e}"))?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QuickPlay;
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;

    fn config(servers: Servers) -> ServiceConfig {
        ServiceConfig {
            servers,
            key: [5; 32],
            queue_wait: Duration::from_secs(2),
            retry_every: Duration::from_millis(100),
            tls: None,
        }
    }

    fn list() -> Servers {
        Servers::List(vec![a2s_server(0, 64)])
    }

    /// A stand-in game server answering A2S info with `players` of `places`, on a
    /// thread of its own for the rest of the tests.
    fn a2s_server(players: u8, places: u8) -> SocketAddr {
        use sightline_query::{Answer, PlayerInfo, QuerySource, Responder, ServerInfo};
        struct Fixed(ServerInfo);
        impl QuerySource for Fixed {
            fn info(&self) -> ServerInfo {
                self.0.clone()
            }
            fn players(&self) -> Vec<PlayerInfo> {
                Vec::new()
            }
            fn rules(&self) -> Vec<(String, String)> {
                Vec::new()
            }
        }
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut responder = Responder::new();
            let server = Fixed(ServerInfo {
                players,
                max_players: places,
                ..ServerInfo::default()
            });
            let mut buffer = [0u8; 1400];
            while let Ok((len, from)) = socket.recv_from(&mut buffer) {
                let answer = responder.answer(from, &buffer[..len], Instant::now(), &server);
                if let Answer::Replies(replies) = answer {
                    for reply in replies {
                        let _ = socket.send_to(&reply, from);
                    }
                }
            }
        });
        addr
    }

    #[test]
    fn a_listed_server_that_is_full_is_not_handed_out_and_the_player_waits() {
        let full = a2s_server(8, 8);
        let free = a2s_server(1, 8);
        let service = Service::start(
            "127.0.0.1:0".parse().unwrap(),
            config(Servers::List(vec![full, free])),
        )
        .unwrap();
        let answer = raw(service.addr(), QUICK_PLAY);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains(&free.to_string()), "{answer}");
        drop(service);
        // Only full servers: the player queues, and is told none became free.
        let service = Service::start(
            "127.0.0.1:0".parse().unwrap(),
            config(Servers::List(vec![full])),
        )
        .unwrap();
        let answer = raw(service.addr(), QUICK_PLAY);
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("no server became free"), "{answer}");
    }

    fn local(addr: SocketAddr) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], addr.port()))
    }

    /// Sends `bytes` and reads the answer until the service closes the connection.
    fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
        let mut stream = TcpStream::connect(local(addr)).unwrap();
        // A connection refused at once may be closed before the bytes are all written.
        stream.write_all(bytes).ok();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok();
        answer
    }

    /// Whether `done` comes true within five seconds (the service's threads count what
    /// they saw after the client has its answer).
    fn eventually(done: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    const QUICK_PLAY: &[u8] =
        b"POST /v1/quickplay HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";

    /// A certificate for 127.0.0.1 and its key, made now.
    fn certificate() -> (Arc<rustls::ServerConfig>, Vec<u8>) {
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
        let tls = tls_config(vec![made.cert.der().clone()], key).unwrap();
        (tls, made.cert.pem().into_bytes())
    }

    #[test]
    fn a_player_gets_a_ticket_over_https_and_the_counters_show_it() {
        let (tls, ca) = certificate();
        let server = a2s_server(0, 64);
        let service = Service::start(
            "127.0.0.1:0".parse().unwrap(),
            ServiceConfig {
                tls: Some(tls),
                ..config(Servers::List(vec![server]))
            },
        )
        .unwrap();
        let ask = QuickPlay {
            url: format!("https://127.0.0.1:{}", service.addr().port()),
            ca_pem: Some(ca),
        };
        let ticket = ask.ask().expect("a ticket");
        assert_eq!(ticket.address, server);
        let token = ticket.connect_token().unwrap();
        assert_eq!(token.client_id, ticket.client_id);
        assert_eq!(token.server_addresses[0], Some(ticket.address));
        // Someone who does not trust the service's certificate gets nothing from it.
        let stranger = QuickPlay {
            ca_pem: None,
            ..ask.clone()
        };
        assert!(stranger.ask().unwrap_err().contains("cannot reach"));
        let counters = service.counters();
        assert_eq!(counters.tickets.load(Ordering::Relaxed), 1);
        assert!(eventually(
            || counters.bad_requests.load(Ordering::Relaxed) == 1
        ));
        let text = counters.prometheus_text();
        assert!(
            text.contains("sightline_matchmaker_tickets_total 1\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE sightline_matchmaker_queued gauge\n"),
            "{text}"
        );
        assert_eq!(
            text.matches("# TYPE sightline_matchmaker_refused_total")
                .count(),
            1
        );
    }

    #[test]
    fn one_address_asking_a_thousand_times_gets_its_share_and_the_rest_is_counted() {
        let service = Service::start("127.0.0.1:0".parse().unwrap(), config(list())).unwrap();
        let started = Instant::now();
        let mut tickets = 0;
        let mut refused = 0;
        for _ in 0..1000 {
            let answer = raw(service.addr(), QUICK_PLAY);
            if answer.starts_with("HTTP/1.1 200") {
                tickets += 1;
            } else {
                assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
                assert!(answer.contains("Retry-After: 5"), "{answer}");
                assert!(answer.contains("your address"), "{answer}");
                refused += 1;
            }
        }
        let allowed = REQUEST_RATES.host.burst
            + REQUEST_RATES.host.per_second * started.elapsed().as_secs_f64();
        assert!(tickets >= 5 && tickets as f64 <= allowed + 1.0, "{tickets}");
        let counters = service.counters();
        assert_eq!(counters.refused_rate.load(Ordering::Relaxed), refused);
        assert_eq!(counters.requests.load(Ordering::Relaxed), 1000);
        assert_eq!(counters.tickets.load(Ordering::Relaxed), tickets);
    }

    /// Reads an HTTP request's head and its `Content-Length` of body.
    fn read_whole_request(stream: &mut std::net::TcpStream) {
        let mut reader = BufReader::new(stream);
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok();
    }

    /// An allocator that answers each request with the next of `statuses` (then the last
    /// again): 429 for none Ready, 200 with a server.
    fn allocator(statuses: Vec<u16>) -> (String, Arc<AtomicU64>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let asked = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&asked);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let n = counted.fetch_add(1, Ordering::Relaxed) as usize;
                // The whole request is read first: closing on unread bytes would reset the
                // connection before the answer is read.
                read_whole_request(&mut stream);
                let status = statuses[n.min(statuses.len() - 1)];
                let body = match status {
                    200 => {
                        r#"{"gameServerName":"gs-1","ports":[{"name":"game","port":7777}],"address":"127.0.0.1"}"#
                    }
                    _ => r#"{"error":"no available GameServer to allocate"}"#,
                };
                write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .ok();
            }
        });
        (url, asked)
    }

    fn fleet(url: String) -> Servers {
        Servers::Fleet(Allocator {
            url,
            namespace: "default".into(),
            fleet: "sightline".into(),
            tls: None,
        })
    }

    #[test]
    fn a_player_waits_while_no_server_is_ready_and_gets_one_when_it_frees() {
        let (url, asked) = allocator(vec![429, 429, 429, 200]);
        let service = Service::start("127.0.0.1:0".parse().unwrap(), config(fleet(url))).unwrap();
        let answer = raw(service.addr(), QUICK_PLAY);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let ticket = Ticket::from_json(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(ticket.game_server, "gs-1");
        assert_eq!(ticket.address, "127.0.0.1:7777".parse().unwrap());
        assert_eq!(asked.load(Ordering::Relaxed), 4);
        assert_eq!(service.counters().queued.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_player_is_told_when_no_server_frees_in_time_and_the_queue_forgets_them() {
        let (url, _) = allocator(vec![429]);
        let service = Service::start("127.0.0.1:0".parse().unwrap(), config(fleet(url))).unwrap();
        let ask = QuickPlay {
            url: format!("http://127.0.0.1:{}", service.addr().port()),
            ca_pem: None,
        };
        let refused = ask.ask().unwrap_err();
        assert!(
            refused.contains("no server is free") && refused.contains("2 s"),
            "{refused}"
        );
        let counters = service.counters();
        assert_eq!(counters.queue_timeouts.load(Ordering::Relaxed), 1);
        assert_eq!(counters.queued.load(Ordering::Relaxed), 0);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_read_as_a_request_or_a_refusal_never_a_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..10_000),
        ) {
            match read_request(&mut bytes.as_slice()) {
                Ok(r) => proptest::prop_assert!(r.method.len() + r.path.len() <= bytes.len()),
                Err(BadRequest::Gone | BadRequest::Malformed(_)) => {}
            }
        }

        #[test]
        fn a_request_cut_anywhere_is_gone_not_misread(cut in 0usize..QUICK_PLAY.len()) {
            proptest::prop_assert!(matches!(
                read_request(&mut &QUICK_PLAY[..cut]),
                Err(BadRequest::Gone)
            ));
        }

        #[test]
        fn any_answer_reads_as_a_ticket_or_an_error_never_a_panic(text in ".{0,300}") {
            let _ = Ticket::from_json(&text);
        }
    }

    #[test]
    fn a_whole_request_reads_and_a_large_body_is_refused() {
        let mut bytes = QUICK_PLAY;
        let request = read_request(&mut bytes).ok().unwrap();
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/quickplay")
        );
        let big = b"POST /v1/quickplay HTTP/1.1\r\nContent-Length: 5000\r\n\r\n";
        assert!(matches!(
            read_request(&mut &big[..]),
            Err(BadRequest::Malformed(_))
        ));
    }

    #[test]
    fn a_host_holds_at_most_its_share_of_connections_and_garbage_is_answered_400() {
        let service = Service::start("127.0.0.1:0".parse().unwrap(), config(list())).unwrap();
        let garbage = raw(service.addr(), b"\x16\x03\x01 not http at all\r\n\r\n");
        assert!(garbage.starts_with("HTTP/1.1 400"), "{garbage}");
        let huge = [b'a'; 9000];
        assert!(raw(service.addr(), &huge).starts_with("HTTP/1.1 400"));
        // Four silent connections hold the host's share: a fifth is closed unheard.
        let idle: Vec<TcpStream> = (0..CONNECTIONS.per_host)
            .map(|_| TcpStream::connect(local(service.addr())).unwrap())
            .collect();
        let counters = service.counters();
        assert!(eventually(
            || lock(&service.shared.connections).len() == idle.len()
        ));
        assert_eq!(raw(service.addr(), QUICK_PLAY), "");
        assert_eq!(counters.refused_connections.load(Ordering::Relaxed), 1);
        assert_eq!(counters.requests.load(Ordering::Relaxed), 0);
        // Once they are gone the host is heard again.
        drop(idle);
        assert!(eventually(|| lock(&service.shared.connections).is_empty()));
        assert!(raw(service.addr(), QUICK_PLAY).starts_with("HTTP/1.1 200"));
    }
}
