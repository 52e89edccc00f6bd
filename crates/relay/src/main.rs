//! `sightline-relay`: forwards the games of hosts nobody can reach. A host registers from
//! its game's port; players dial the port the relay gives it. It never logs per packet:
//! a status line goes to stderr at most once a minute, when something changed, and once
//! more on exit (Ctrl-C, or `--run-seconds`).

use clap::Parser;
use sightline_relay::{Counters, DEFAULT_RELAY_PORT, Relay, RelayConfig};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::ops::RangeInclusive;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Least time between two status lines.
const STATUS_EVERY: Duration = Duration::from_secs(60);

/// Sightline's relay: forwards the games of hosts no stranger can reach, and probes a
/// host's port when it asks whether strangers reach it.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    bind: IpAddr,
    /// The control port hosts register on, UDP and TCP (0: any free port, printed at
    /// start).
    #[arg(long, default_value_t = DEFAULT_RELAY_PORT)]
    port: u16,
    /// Ports games are given, FIRST-LAST, each UDP and TCP: open them in the firewall.
    #[arg(long, default_value = "28000-28063", value_parser = port_range, value_name = "FIRST-LAST")]
    ports: RangeInclusive<u16>,
    /// Most games at once.
    #[arg(long, default_value_t = 64, value_name = "N")]
    max_games: usize,
    /// Most games one host (an IPv4 address, an IPv6 /64) may hold.
    #[arg(long, default_value_t = 2, value_name = "N")]
    games_per_host: usize,
    /// Most games one network (an IPv4 /24, an IPv6 /48) may hold.
    #[arg(long, default_value_t = 8, value_name = "N")]
    games_per_network: usize,
    /// Kibibytes a second each game may move each way (a 16-player game uses about 400
    /// toward its players).
    #[arg(long, default_value_t = 2048, value_name = "KIB")]
    game_kib_per_second: u32,
    /// Close a game whose host has been silent this long.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    idle_seconds: u64,
    /// Serve the counters in Prometheus's text format on this address (HOST:PORT),
    /// at /metrics: bind it to a private address.
    #[arg(long, value_name = "HOST:PORT")]
    metrics: Option<SocketAddr>,
    /// Stop cleanly after this many seconds (for tests).
    #[arg(long, value_name = "S")]
    run_seconds: Option<u64>,
}

fn port_range(text: &str) -> Result<RangeInclusive<u16>, String> {
    let (first, last) = text
        .split_once('-')
        .ok_or_else(|| "expected FIRST-LAST, e.g. 28000-28063".to_string())?;
    let first: u16 = first.trim().parse().map_err(|e| format!("{first}: {e}"))?;
    let last: u16 = last.trim().parse().map_err(|e| format!("{last}: {e}"))?;
    if first == 0 || last < first {
        return Err(format!(
            "{text}: FIRST must be 1 or more and LAST at least FIRST"
        ));
    }
    Ok(first..=last)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sightline-relay: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> io::Result<()> {
    let bytes = f64::from(args.game_kib_per_second) * 1024.0;
    let config = RelayConfig {
        max_games: args.max_games,
        games_per_host: args.games_per_host,
        games_per_network: args.games_per_network,
        game_bytes_per_second: bytes,
        idle: Duration::from_secs(args.idle_seconds.max(1)),
        ..RelayConfig::new(SocketAddr::new(args.bind, args.port), args.ports.clone())
    };
    let relay = Relay::start(config)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)).map_err(io::Error::other)?;
    eprintln!(
        "sightline-relay: listening on {} (UDP and TCP), games on ports {}-{}",
        relay.addr(),
        args.ports.start(),
        args.ports.end()
    );
    let counters = Arc::new(relay);
    if let Some(addr) = args.metrics {
        let listener = TcpListener::bind(addr)?;
        eprintln!(
            "sightline-relay: metrics on http://{}/metrics",
            listener.local_addr()?
        );
        let relay = counters.clone();
        std::thread::Builder::new()
            .name("relay-metrics".into())
            .spawn(move || serve_metrics(&listener, relay.counters()))?;
    }
    let started = Instant::now();
    let deadline = args.run_seconds.map(|s| started + Duration::from_secs(s));
    let mut said = String::new();
    let mut said_at = started;
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        std::thread::sleep(Duration::from_millis(100));
        if said_at.elapsed() >= STATUS_EVERY {
            said_at = Instant::now();
            let line = counters.counters().status_line();
            if line != said {
                eprintln!("sightline-relay: {line}");
                said = line;
            }
        }
    }
    eprintln!(
        "sightline-relay: stopping: {}",
        counters.counters().status_line()
    );
    Ok(())
}

/// Answers `GET /metrics`, one connection at a time, each given 2 s.
fn serve_metrics(listener: &TcpListener, counters: &Counters) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let limit = Some(Duration::from_secs(2));
        if stream.set_read_timeout(limit).is_err() || stream.set_write_timeout(limit).is_err() {
            continue;
        }
        let mut head = [0u8; 1024];
        let mut len = 0;
        while len < head.len() && !head[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut head[len..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => len += n,
            }
        }
        let (status, body) = if head[..len].starts_with(b"GET /metrics ") {
            ("200 OK", counters.prometheus_text())
        } else {
            ("404 Not Found", "not found\n".to_string())
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes());
    }
}
