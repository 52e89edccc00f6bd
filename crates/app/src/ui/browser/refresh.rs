//! A refresh on a thread of its own: the masters' lists fetched and screened, the LAN
//! asked by broadcast, every server asked, and the answers streamed back in order.

use bevy::prelude::*;
use sightline_query::{
    DEFAULT_MASTER_PORT, ListScreen, QueryError, ServerInfo, discover_lan, fetch_server_list,
    query_many,
};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::ops::RangeInclusive;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

/// How long each server has to answer A2S_INFO.
pub(super) const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long each master list has to send its list.
pub(super) const MASTER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long LAN discovery listens after its broadcast.
pub(super) const LAN_TIMEOUT: Duration = Duration::from_millis(1500);
/// Most master lists one refresh asks (they are asked one after another).
pub(super) const MAX_MASTERS: usize = 8;

/// The master lists `cl_masters` names: comma-separated, blanks dropped, each once, at
/// most [`MAX_MASTERS`].
pub fn parse_masters(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if out.len() < MAX_MASTERS && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}

/// A master's address: `HOST:PORT`, or `HOST` (or a bare IP) on the default master port.
/// Runs on the refresh thread: a host name may wait on DNS.
pub fn resolve_master(name: &str) -> Result<SocketAddr, String> {
    resolve_host(name, DEFAULT_MASTER_PORT)
}

/// Resolves `name` (`HOST` or `HOST:PORT`, `default_port` if none) to one address.
pub fn resolve_host(name: &str, default_port: u16) -> Result<SocketAddr, String> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    let target = if name.contains(':') {
        name.to_owned()
    } else {
        format!("{name}:{default_port}")
    };
    target
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve: {e}"))?
        .next()
        .ok_or_else(|| "resolves to no address".to_owned())
}

/// What one refresh does on its thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// Fetch the lists of these masters (`HOST:PORT`), then ask every server on them.
    Internet {
        /// The masters, as `cl_masters` names them.
        masters: Vec<String>,
    },
    /// Broadcast on the local network, on these ports.
    Lan {
        /// The ports asked.
        ports: RangeInclusive<u16>,
    },
    /// Ask these servers.
    Addresses(Vec<SocketAddr>),
}

/// What a refresh thread reports, in order; its channel closes when it is done.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// This many servers are being asked.
    Asking(usize),
    /// Something to show under the list (a master that did not answer).
    Note(String),
    /// One server's answer, or why there was none.
    Reply(SocketAddr, Result<(ServerInfo, Duration), QueryError>),
}

/// Runs `job` on a thread of its own; its progress comes through the receiver, which
/// disconnects when the job is over.
pub fn spawn_refresh(job: Job) -> Receiver<Progress> {
    let (tx, rx) = channel();
    let report = tx.clone();
    let started = std::thread::Builder::new()
        .name("server-browser".into())
        .spawn(move || run_job(job, &tx));
    if let Err(e) = started {
        let _ = report.send(Progress::Note(format!("cannot start the refresh: {e}")));
    }
    rx
}

pub(super) fn run_job(job: Job, tx: &Sender<Progress>) {
    // A send fails only when the page stopped listening (a newer refresh): the answers
    // are then of no use, and the thread ends at its timeouts.
    let send = |p: Progress| {
        let _ = tx.send(p);
    };
    match job {
        Job::Internet { masters } => {
            // A master is a stranger: its list is screened (nothing nearer than the
            // master, a few ports a host, a bounded number), and what was left out said.
            let mut screen = ListScreen::new();
            let mut servers = Vec::new();
            for name in &masters {
                let list = resolve_master(name).and_then(|master| {
                    fetch_server_list(master, sightline_protocol::PROTOCOL_VERSION, MASTER_TIMEOUT)
                        .map(|list| (master, list))
                        .map_err(|e| e.to_string())
                });
                match list {
                    Ok((master, list)) => servers.extend(screen.admit(master, &list)),
                    Err(e) => send(Progress::Note(format!("master {name}: {e}"))),
                }
            }
            if screen.skipped().total() > 0 {
                send(Progress::Note(screen.skipped().to_string()));
            }
            ask(&servers, &send);
        }
        Job::Lan { ports } => {
            let found = fold_local_duplicates(discover_lan(ports, LAN_TIMEOUT), is_own_address);
            for (addr, info, ping) in found {
                send(Progress::Reply(addr, Ok((info, ping))));
            }
        }
        Job::Addresses(addrs) => ask(&addrs, &send),
    }
}

/// A server on this machine answers LAN discovery twice: the loopback ask, and the
/// broadcast from the machine's LAN address. It is listed once, at loopback.
pub(super) fn fold_local_duplicates(
    found: Vec<(SocketAddr, ServerInfo, Duration)>,
    is_own: impl Fn(IpAddr) -> bool,
) -> Vec<(SocketAddr, ServerInfo, Duration)> {
    let on_loopback: HashSet<u16> = found
        .iter()
        .filter(|(a, ..)| a.ip().is_loopback())
        .map(|(a, ..)| a.port())
        .collect();
    found
        .into_iter()
        .filter(|(a, ..)| {
            a.ip().is_loopback() || !on_loopback.contains(&a.port()) || !is_own(a.ip())
        })
        .collect()
}

/// Whether `ip` is this machine's: the route to it leaves from it. Connecting a UDP
/// socket only picks the route; nothing is sent.
pub(super) fn is_own_address(ip: IpAddr) -> bool {
    let any: IpAddr = if ip.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    };
    UdpSocket::bind((any, 0))
        .and_then(|s| {
            s.connect((ip, 9))?;
            s.local_addr()
        })
        .is_ok_and(|local| local.ip() == ip)
}

pub(super) fn ask(addrs: &[SocketAddr], send: &impl Fn(Progress)) {
    send(Progress::Asking(addrs.len()));
    query_many(addrs, QUERY_TIMEOUT, |addr, result| {
        send(Progress::Reply(addr, result))
    });
}
