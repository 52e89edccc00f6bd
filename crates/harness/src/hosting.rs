//! The hosting surfaces as the open internet meets them: floods of A2S queries, master
//! list requests, connections that stall and scrapes, each from a loopback address of
//! its own, beside the honest askers they must not silence; and the hosting load test,
//! which runs the real server binary with an honest player under all of them at once.
//!
//! Linux routes the whole of 127.0.0.0/8 to loopback, so a flood from 127.0.0.2 is
//! another host than a player at 127.0.0.1, in the same /24: the hard case for shares
//! by network.

use sightline_query::master_protocol::{self, GAME_TAG, MASTER_PROTOCOL, MasterPacket};
use sightline_query::{
    RconPacket, SERVERDATA_AUTH, SERVERDATA_AUTH_RESPONSE, SERVERDATA_EXECCOMMAND,
    SERVERDATA_RESPONSE_VALUE,
};
use sightline_query::{Request, Response, decode_response, encode_request, query_info};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A UDP socket on `from` (a loopback address), any port.
pub fn udp_from(from: Ipv4Addr) -> io::Result<UdpSocket> {
    UdpSocket::bind((from, 0))
}

/// A non-blocking UDP socket on `from`, for a flood.
fn flood_socket(from: Ipv4Addr) -> UdpSocket {
    let socket = udp_from(from).expect("a socket");
    socket.set_nonblocking(true).expect("non-blocking");
    socket
}

/// A TCP connection to `to` from `from` (a loopback address), any port, within a second.
pub fn tcp_from(from: Ipv4Addr, to: SocketAddr) -> io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::new(IpAddr::V4(from), 0).into())?;
    socket.connect_timeout(&to.into(), Duration::from_secs(1))?;
    Ok(socket.into())
}

/// A port free on 127.0.0.1 for both UDP and TCP (the game's port is both).
pub fn free_port() -> u16 {
    for _ in 0..100 {
        let Ok(port) = UdpSocket::bind("127.0.0.1:0").and_then(|s| s.local_addr()) else {
            continue;
        };
        if std::net::TcpListener::bind(("127.0.0.1", port.port())).is_ok() {
            return port.port();
        }
    }
    panic!("no port free for both UDP and TCP");
}

/// What a flood did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloodCount {
    /// Datagrams sent, or connections opened.
    pub sent: u64,
    /// Replies received (datagrams, or answered requests); for connections that stall,
    /// those the server closed.
    pub answered: u64,
}

/// A flood running on a thread of its own until stopped.
pub struct Flood {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<FloodCount>,
}

impl Flood {
    fn spawn(body: impl FnOnce(&AtomicBool) -> FloodCount + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || body(&flag));
        Self { stop, thread }
    }

    /// Stops it; what it did.
    pub fn stop(self) -> FloodCount {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the flood's thread")
    }

    /// A2S_INFO to `server` from `from`, `per_second`, each with a valid challenge (the
    /// first asks for one; a new one is taken whenever the server sends one).
    pub fn a2s(from: Ipv4Addr, server: SocketAddr, per_second: u32) -> Self {
        Self::spawn(move |stop| {
            let socket = flood_socket(from);
            let mut count = FloodCount::default();
            let mut challenge = None;
            let mut buf = [0u8; 2048];
            paced(per_second, stop, || {
                let request = encode_request(Request::Info { challenge });
                count.sent += u64::from(socket.send_to(&request, server).is_ok());
                while let Ok(n) = socket.recv(&mut buf) {
                    match decode_response(&buf[..n]) {
                        Ok(Response::Challenge(c)) => challenge = Some(c),
                        _ => count.answered += 1,
                    }
                }
            });
            count
        })
    }

    /// The master list for a protocol with no servers (each answer tiny), with a valid
    /// challenge, and heartbeats, in turn, to `master` from `from`, `per_second` in all.
    pub fn master(from: Ipv4Addr, master: SocketAddr, per_second: u32) -> Self {
        Self::spawn(move |stop| {
            let socket = flood_socket(from);
            let mut count = FloodCount::default();
            let mut challenge = None;
            let mut buf = [0u8; 2048];
            let mut turn = 0u32;
            paced(per_second, stop, || {
                turn = turn.wrapping_add(1);
                let packet = if turn.is_multiple_of(2) {
                    MasterPacket::GetServers {
                        protocol: u32::MAX - 1,
                        challenge,
                    }
                } else {
                    MasterPacket::Heartbeat {
                        game: GAME_TAG.into(),
                        protocol: MASTER_PROTOCOL,
                        nonce: turn,
                    }
                };
                let bytes = master_protocol::encode(&packet);
                count.sent += u64::from(socket.send_to(&bytes, master).is_ok());
                while let Ok(n) = socket.recv(&mut buf) {
                    match master_protocol::decode(&buf[..n]) {
                        Ok(MasterPacket::Challenge(c)) => challenge = Some(c),
                        _ => count.answered += 1,
                    }
                }
            });
            count
        })
    }

    /// Connections to `server` from each of `hosts`, `per_host` each, that send
    /// `first_bytes` and wait; each opened again as soon as the server closes it.
    pub fn stalls(
        hosts: Vec<Ipv4Addr>,
        server: SocketAddr,
        per_host: usize,
        first_bytes: Vec<u8>,
    ) -> Self {
        Self::spawn(move |stop| {
            let mut count = FloodCount::default();
            let mut held: Vec<Vec<TcpStream>> = hosts.iter().map(|_| Vec::new()).collect();
            while !stop.load(Ordering::Relaxed) {
                for (host, streams) in hosts.iter().zip(&mut held) {
                    let before = streams.len();
                    streams.retain(|s| {
                        matches!(s.peek(&mut [0]), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
                    });
                    count.answered += (before - streams.len()) as u64;
                    while streams.len() < per_host {
                        let Ok(mut s) = tcp_from(*host, server) else {
                            break;
                        };
                        count.sent += 1;
                        if s.write_all(&first_bytes).is_err() || s.set_nonblocking(true).is_err() {
                            break;
                        }
                        streams.push(s);
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            count
        })
    }

    /// `GET path` over HTTP to `addr` from `from`, `per_second`, up to 64 at once; a
    /// request is answered when a status line comes back within a second.
    pub fn http(from: Ipv4Addr, addr: SocketAddr, path: &str, per_second: u32) -> Self {
        let request = format!("GET {path} HTTP/1.1\r\nHost: flood\r\n\r\n").into_bytes();
        Self::spawn(move |stop| {
            let mut count = FloodCount::default();
            let mut open: Vec<(TcpStream, Instant)> = Vec::new();
            paced(per_second, stop, || {
                open.retain_mut(|(s, since)| match s.read(&mut [0u8; 16]) {
                    Ok(n) if n > 0 => {
                        count.answered += 1;
                        false
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        since.elapsed() < Duration::from_secs(1)
                    }
                    _ => false,
                });
                if open.len() >= 64 {
                    return;
                }
                if let Ok(mut s) = tcp_from(from, addr) {
                    count.sent += 1;
                    if s.write_all(&request).is_ok() && s.set_nonblocking(true).is_ok() {
                        open.push((s, Instant::now()));
                    }
                }
            });
            count
        })
    }
}

/// Calls `each` `per_second` times a second until `stop`, catching up at most a tenth of
/// a second when the thread falls behind (a flood on a busy machine sends what it can).
fn paced(per_second: u32, stop: &AtomicBool, mut each: impl FnMut()) {
    let start = Instant::now();
    let rate = f64::from(per_second);
    let mut done = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let due = (start.elapsed().as_secs_f64() * rate) as u64;
        done = done.max(due.saturating_sub(per_second as u64 / 10));
        while done < due {
            each();
            done += 1;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// A minimal Source RCON client: the protocol as Valve documents it, nothing of the
/// server's own code but its packet type.
pub struct RconClient {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl RconClient {
    /// Connects to `addr` (reads wait at most 5 s).
    pub fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(Self {
            stream,
            buf: Vec::new(),
        })
    }

    /// Sends one packet.
    pub fn send(&mut self, id: i32, kind: i32, body: &[u8]) -> io::Result<()> {
        let packet = RconPacket {
            id,
            kind,
            body: body.to_vec(),
        };
        self.stream.write_all(&packet.encode())
    }

    /// The next answer packet (answers may be larger than a request may).
    pub fn read_packet(&mut self) -> io::Result<RconPacket> {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(size) = self.buf.get(..4) {
                let size = i32::from_le_bytes(size.try_into().expect("4 bytes")).max(10) as usize;
                if let Some(p) = self.buf.get(4..4 + size) {
                    let packet = RconPacket {
                        id: i32::from_le_bytes(p[0..4].try_into().expect("4 bytes")),
                        kind: i32::from_le_bytes(p[4..8].try_into().expect("4 bytes")),
                        body: p[8..].split(|&b| b == 0).next().unwrap_or(&[]).to_vec(),
                    };
                    self.buf.drain(..4 + size);
                    return Ok(packet);
                }
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Authenticates: the id the server answers with (-1: refused).
    pub fn auth(&mut self, password: &str) -> io::Result<i32> {
        self.send(11, SERVERDATA_AUTH, password.as_bytes())?;
        loop {
            let p = self.read_packet()?;
            if p.kind == SERVERDATA_AUTH_RESPONSE {
                return Ok(p.id);
            }
        }
    }

    /// Runs `command`: its whole answer, however many packets, found by the empty
    /// packet sent after it coming back; and how many packets it took.
    pub fn run(&mut self, id: i32, command: &str) -> io::Result<(String, usize)> {
        self.send(id, SERVERDATA_EXECCOMMAND, command.as_bytes())?;
        self.send(id + 1, SERVERDATA_RESPONSE_VALUE, b"")?;
        let (mut text, mut packets) = (String::new(), 0);
        loop {
            let p = self.read_packet()?;
            if p.id == id + 1 {
                return Ok((text, packets));
            }
            if p.id != id {
                return Err(io::Error::other(format!("an answer to request {}", p.id)));
            }
            text.push_str(&String::from_utf8_lossy(&p.body));
            packets += 1;
        }
    }
}

/// An HTTP GET of `path` from the default source address, as a scraper makes it: the
/// status code and the body, read until the listener closes (it answers once per
/// connection), each step within `timeout`. The tests' and load tests' one HTTP client.
pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration) -> io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: scraper\r\n\r\n").as_bytes())?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let code = head
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| io::Error::other(format!("not an HTTP answer: {head:?}")))?;
    Ok((code, body.to_string()))
}

/// How the hosting load test runs.
#[derive(Debug, Clone)]
pub struct HostingLoadConfig {
    /// The `sightline-server` binary.
    pub server: PathBuf,
    /// The `sightline` binary (its headless client plays).
    pub client: PathBuf,
    /// Seconds the floods run.
    pub seconds: u32,
    /// A2S_INFO a second from one host, with a valid challenge.
    pub a2s_per_second: u32,
    /// Hosts holding RCON connections that stall (four each, the most one host may).
    pub rcon_hosts: u8,
    /// Metrics requests a second from one host.
    pub metrics_per_second: u32,
}

impl Default for HostingLoadConfig {
    fn default() -> Self {
        Self {
            server: PathBuf::from("sightline-server"),
            client: PathBuf::from("sightline"),
            seconds: 20,
            a2s_per_second: 5_000,
            rcon_hosts: 4,
            metrics_per_second: 1_000,
        }
    }
}

/// Honest askers' fortunes: asked, answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asked {
    /// Times asked.
    pub asked: u32,
    /// Times answered in time.
    pub answered: u32,
}

impl Asked {
    fn note(&mut self, answered: bool) {
        self.asked += 1;
        self.answered += u32::from(answered);
    }
}

/// What the hosting load test measured.
#[derive(Debug, Clone, Default)]
pub struct HostingReport {
    /// The configuration, as a label.
    pub label: String,
    /// The A2S flood, and an honest browser's queries (from another host of its /24).
    pub a2s_flood: FloodCount,
    /// An honest browser's A2S_INFO, one every 250 ms, answered within a second.
    pub a2s_honest: Asked,
    /// The stalled RCON connections.
    pub rcon_flood: FloodCount,
    /// An admin logging in and running `status`, every second.
    pub rcon_admin: Asked,
    /// The admin's slowest login and answer, milliseconds.
    pub rcon_admin_worst_ms: f64,
    /// The metrics flood.
    pub metrics_flood: FloodCount,
    /// A scraper's `/metrics`, every second.
    pub metrics_honest: Asked,
    /// The server's own work in a tick (CPU time), 99th percentile, and the tick's wall
    /// time, 99th percentile, milliseconds.
    pub tick_cpu_p99_ms: f64,
    /// The tick's wall time, 99th percentile, milliseconds.
    pub tick_p99_ms: f64,
    /// Snapshots the honest player received, and the least it should have.
    pub snapshots: (u64, u64),
    /// Whether the honest player ended well.
    pub player_ok: bool,
    /// The server's last status line.
    pub status: String,
}

impl HostingReport {
    /// The table's header.
    pub fn header() -> String {
        "| floods (one host each) | A2S answered: flood / honest | RCON: stalls closed / admin logins | metrics answered: flood / honest scrapes | tick p99 CPU / wall | honest player's snapshots |\n|---|---|---|---|---|---|".into()
    }

    /// One row of the table.
    pub fn row(&self) -> String {
        let share = |a: Asked| format!("{} of {}", a.answered, a.asked);
        format!(
            "| {} | {} of {} / {} | {} of {} / {} (worst {:.0} ms) | {} of {} / {} | {:.2} / {:.2} ms | {} of at least {}{} |",
            self.label,
            self.a2s_flood.answered,
            self.a2s_flood.sent,
            share(self.a2s_honest),
            self.rcon_flood.answered,
            self.rcon_flood.sent,
            share(self.rcon_admin),
            self.rcon_admin_worst_ms,
            self.metrics_flood.answered,
            self.metrics_flood.sent,
            share(self.metrics_honest),
            self.tick_cpu_p99_ms,
            self.tick_p99_ms,
            self.snapshots.0,
            self.snapshots.1,
            if self.player_ok {
                ""
            } else {
                " (the player failed)"
            },
        )
    }
}

/// The `key=value` field `key` of a status or summary line.
pub fn status_field<T: std::str::FromStr>(line: &str, key: &str) -> Option<T> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
}

/// Output lines of a child, collected as it runs.
fn collect(child: &mut Child) -> Arc<std::sync::Mutex<Vec<String>>> {
    let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    let streams: [Box<dyn Read + Send>; 2] = [
        Box::new(child.stdout.take().expect("piped")),
        Box::new(child.stderr.take().expect("piped")),
    ];
    for stream in streams {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                lines.lock().expect("not poisoned").push(line);
            }
        });
    }
    lines
}

/// Waits for `child` to end (killing it after `limit`); whether it succeeded.
fn finish(mut child: Child, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.success();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the hosting load test: the real server (64 Hz, two bots, RCON and metrics on)
/// and an honest headless player, then every flood at once for `seconds` from hosts of
/// the player's own /24, while an honest browser, admin and scraper ask from 127.0.0.1.
pub fn hosting_load(config: &HostingLoadConfig) -> HostingReport {
    let port = free_port();
    let metrics_port = free_port();
    let game = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let metrics = SocketAddr::from((Ipv4Addr::LOCALHOST, metrics_port));
    let password = "flood-test-admin";
    let lasts = config.seconds + 6;
    let mut server = Command::new(&config.server)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--tickrate", "64", "--map", "duel", "--bots", "2"])
        .args(["--rcon-password", password])
        .args(["--metrics", &metrics.to_string()])
        .args(["--run-seconds", &lasts.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let server_lines = collect(&mut server);
    let started = Instant::now();
    while !server_lines
        .lock()
        .expect("not poisoned")
        .iter()
        .any(|l| l.contains(" up to "))
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let plays = config.seconds + 3;
    let mut player = Command::new(&config.client)
        .args(["--headless", "--connect", &game.to_string()])
        .args(["--name", "honest", "--run-seconds", &plays.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client starts");
    let player_lines = collect(&mut player);
    // The player joins before the floods begin: joining under them is the token
    // service's test.
    std::thread::sleep(Duration::from_secs(2));

    let neighbour = |d: u8| Ipv4Addr::new(127, 0, 0, d);
    let a2s = Flood::a2s(neighbour(2), game, config.a2s_per_second);
    let stall_hosts: Vec<Ipv4Addr> = (0..config.rcon_hosts).map(|i| neighbour(10 + i)).collect();
    // The first bytes of a packet, and nothing more.
    let stalls = Flood::stalls(stall_hosts, game, 4, 20i32.to_le_bytes().to_vec());
    let scrapes = Flood::http(neighbour(3), metrics, "/metrics", config.metrics_per_second);

    let mut report = HostingReport {
        label: format!(
            "A2S_INFO {}/s, {} hosts x 4 stalled RCON connections, /metrics {}/s",
            config.a2s_per_second, config.rcon_hosts, config.metrics_per_second
        ),
        ..Default::default()
    };
    let end = Instant::now() + Duration::from_secs(u64::from(config.seconds));
    let (mut next_rcon, mut next_scrape) = (Instant::now(), Instant::now());
    let mut request = 100;
    while Instant::now() < end {
        let answered = query_info(game, Duration::from_secs(1)).is_ok();
        report.a2s_honest.note(answered);
        if Instant::now() >= next_rcon {
            next_rcon += Duration::from_secs(1);
            let asked = Instant::now();
            request += 2;
            let ok = RconClient::connect(game)
                .and_then(|mut c| {
                    Ok(c.auth(password)? == 11 && c.run(request, "status")?.0.contains("honest"))
                })
                .unwrap_or(false);
            report.rcon_admin.note(ok);
            let took = asked.elapsed().as_secs_f64() * 1000.0;
            report.rcon_admin_worst_ms = report.rcon_admin_worst_ms.max(took);
        }
        if Instant::now() >= next_scrape {
            next_scrape += Duration::from_secs(1);
            let code = http_get(metrics, "/metrics", Duration::from_secs(2));
            report.metrics_honest.note(matches!(code, Ok((200, _))));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    report.a2s_flood = a2s.stop();
    report.rcon_flood = stalls.stop();
    report.metrics_flood = scrapes.stop();

    report.player_ok = finish(player, Duration::from_secs(30));
    let summary = player_lines
        .lock()
        .expect("not poisoned")
        .iter()
        .find_map(|l| l.strip_prefix("summary: ").map(String::from))
        .unwrap_or_default();
    let snapshots = status_field(&summary, "snapshots").unwrap_or(0);
    // 32 snapshots a second at a 64 Hz tick, less the time taken to join.
    report.snapshots = (snapshots, 32 * u64::from(plays - 2));
    finish(server, Duration::from_secs(30));
    // Each status line covers the ticks since the one before: the worst of them.
    let statuses: Vec<String> = server_lines
        .lock()
        .expect("not poisoned")
        .iter()
        .filter_map(|l| l.split_once("status: ").map(|(_, s)| s.to_string()))
        .collect();
    let worst = |key: &str| {
        statuses
            .iter()
            .filter_map(|s| status_field::<f64>(s, key))
            .fold(f64::NAN, f64::max)
    };
    report.tick_cpu_p99_ms = worst("tick_cpu_p99_ms");
    report.tick_p99_ms = worst("tick_p99_ms");
    report.status = statuses.last().cloned().unwrap_or_default();
    report
}
