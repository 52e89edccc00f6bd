//! `sightline-master`: the master server. Game servers announce themselves with
//! heartbeats and are listed once they prove their address; the game's browser fetches
//! the list. One thread, one UDP socket, [`sightline_query::Master`] for the state; the
//! protocol is described in [`sightline_query::master_protocol`].
//!
//! It never logs per packet: a status line goes to stderr at most once a minute, when
//! something changed, and once more on exit (Ctrl-C, or `--run-seconds`).

use clap::Parser;
use sightline_query::{DEFAULT_MASTER_PORT, Master, MasterConfig, MasterStats};
use std::io;
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long one read waits: how quickly Ctrl-C, expiry and the deadline are noticed.
const READ_TIMEOUT: Duration = Duration::from_millis(100);
/// How often silent servers are looked for.
const EXPIRE_EVERY: Duration = Duration::from_secs(1);
/// Least time between two status lines.
const STATUS_EVERY: Duration = Duration::from_secs(60);
/// Receive buffer: larger than any packet the protocol has, so none is cut short.
const RECV_BUFFER: usize = 2048;

/// Sightline's master server.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    bind: IpAddr,
    /// UDP port to listen on (0: any free port, printed at start).
    #[arg(long, default_value_t = DEFAULT_MASTER_PORT)]
    port: u16,
    /// Forget a server not heard from for this many seconds.
    #[arg(long, default_value_t = 900, value_name = "SECONDS")]
    expire: u64,
    /// Most listed servers per source IP address (per /64 for IPv6).
    #[arg(long, default_value_t = MasterConfig::default().max_per_address, value_name = "N")]
    max_per_address: usize,
    /// Most listed servers overall.
    #[arg(long, default_value_t = MasterConfig::default().max_servers, value_name = "N")]
    max_servers: usize,
    /// Stop cleanly after this many seconds (for tests).
    #[arg(long, value_name = "S")]
    run_seconds: Option<u64>,
}

/// Packets seen by the loop, beside the master's own counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Traffic {
    received: u64,
    send_errors: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sightline-master: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> io::Result<()> {
    let socket = UdpSocket::bind((args.bind, args.port))?;
    socket.set_read_timeout(Some(READ_TIMEOUT))?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)).map_err(io::Error::other)?;
    eprintln!("sightline-master: listening on {}", socket.local_addr()?);

    let mut master = Master::new(MasterConfig {
        expire: Duration::from_secs(args.expire),
        max_per_address: args.max_per_address,
        max_servers: args.max_servers,
        ..MasterConfig::default()
    });
    let start = Instant::now();
    let deadline = args.run_seconds.map(|s| start + Duration::from_secs(s));
    let mut traffic = Traffic::default();
    let mut last_expire = start;
    let mut last_status = start;
    let mut reported = (master.stats(), traffic);
    let mut buf = vec![0u8; RECV_BUFFER];

    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                traffic.received += 1;
                for (to, packet) in master.handle(from, &buf[..n], Instant::now()) {
                    if socket.send_to(&packet, to).is_err() {
                        traffic.send_errors += 1;
                    }
                }
            }
            Err(e) if sightline_query::is_transient(&e) => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if now.duration_since(last_expire) >= EXPIRE_EVERY {
            master.expire(now);
            last_expire = now;
        }
        if now.duration_since(last_status) >= STATUS_EVERY && reported != (master.stats(), traffic)
        {
            status(&master.stats(), traffic);
            reported = (master.stats(), traffic);
            last_status = now;
        }
    }
    status(&master.stats(), traffic);
    Ok(())
}

fn status(s: &MasterStats, t: Traffic) {
    let r = s.refused;
    eprintln!(
        "sightline-master: {} listed; {} packets, {} heartbeats, {} confirmed, {} lists, \
         {} challenges, {} expired; refused: {} malformed, {} unexpected, {} bad challenge, \
         {} per address, {} full, {} rate; {} send errors",
        s.listed,
        t.received,
        s.heartbeats,
        s.confirmed,
        s.lists,
        s.challenges,
        s.expired,
        r.malformed,
        r.unexpected,
        r.bad_challenge,
        r.per_address,
        r.full,
        r.rate,
        t.send_errors,
    );
}
