//! The browser's side of the master protocol: fetch the list of servers.

use crate::client::QueryError;
use crate::master_protocol::{MasterPacket, decode, encode};
use crate::wire::DecodeError;
use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// Most servers one fetch keeps, whatever the master sends.
pub const MAX_LISTED: usize = 65_536;
/// Most challenge rounds followed.
const MAX_CHALLENGES: u8 = 3;

/// Asks `master` for the servers speaking `protocol_version`: follows its challenge,
/// then reads list packets until `\EOT` or `timeout`. Addresses come once each, in the
/// order received. A list cut by the timeout after some packets arrived is returned as
/// far as it got; with none, it is [`QueryError::Timeout`].
pub fn fetch_server_list(
    master: SocketAddr,
    protocol_version: u32,
    timeout: Duration,
) -> Result<Vec<SocketAddr>, QueryError> {
    let master = SocketAddr::new(master.ip().to_canonical(), master.port());
    let bind: SocketAddr = if master.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(bind)?;
    let deadline = Instant::now() + timeout;
    let request = |challenge| {
        encode(&MasterPacket::GetServers {
            protocol: protocol_version,
            challenge,
        })
    };
    socket.send_to(&request(None), master)?;
    let mut challenges = 0;
    let mut got_list = false;
    let mut seen = HashSet::new();
    let mut servers = Vec::new();
    let mut buf = vec![0u8; 2048];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return if got_list {
                Ok(servers)
            } else {
                Err(QueryError::Timeout)
            };
        }
        socket.set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))?;
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if crate::wire::is_transient(&e) => {
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if SocketAddr::new(from.ip().to_canonical(), from.port()) != master {
            continue;
        }
        match decode(&buf[..n]) {
            Ok(MasterPacket::Challenge(c)) if !got_list => {
                challenges += 1;
                if challenges > MAX_CHALLENGES {
                    return Err(QueryError::TooManyChallenges);
                }
                socket.send_to(&request(Some(c)), master)?;
            }
            Ok(MasterPacket::Servers {
                servers: batch,
                end,
            }) => {
                got_list = true;
                for s in batch {
                    if servers.len() < MAX_LISTED && seen.insert(s) {
                        servers.push(s);
                    }
                }
                if end {
                    return Ok(servers);
                }
            }
            Ok(_) => {
                return Err(QueryError::Malformed(DecodeError::Invalid(
                    "unexpected master reply",
                )));
            }
            Err(e) => return Err(QueryError::Malformed(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::announcer::Announcer;
    use crate::master::{Master, MasterConfig};
    use crate::master_protocol::{GAME_TAG, MASTER_PROTOCOL};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Condvar, Mutex};
    use std::thread::JoinHandle;

    const GAME_PROTOCOL: u32 = 11;
    const TIMEOUT: Duration = Duration::from_secs(5);

    /// A socket pumped by `step` on a thread until dropped.
    struct Pump {
        addr: SocketAddr,
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    }

    impl Pump {
        fn start(
            mut step: impl FnMut(&UdpSocket, Option<(SocketAddr, &[u8])>) + Send + 'static,
        ) -> Self {
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            socket
                .set_read_timeout(Some(Duration::from_millis(20)))
                .unwrap();
            let addr = socket.local_addr().unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let thread = std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !flag.load(Ordering::Relaxed) {
                    match socket.recv_from(&mut buf) {
                        Ok((n, from)) => step(&socket, Some((from, &buf[..n]))),
                        Err(_) => step(&socket, None),
                    }
                }
            });
            Self {
                addr,
                stop,
                thread: Some(thread),
            }
        }
    }

    impl Drop for Pump {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// The master's state, and a signal that it handled a packet.
    type Shared = Arc<(Mutex<Master>, Condvar)>;

    fn master_pump(state: Shared) -> Pump {
        Pump::start(move |socket, packet| {
            if let Some((from, bytes)) = packet {
                let (master, changed) = &*state;
                let replies = master.lock().unwrap().handle(from, bytes, Instant::now());
                changed.notify_all();
                for (to, p) in replies {
                    let _ = socket.send_to(&p, to);
                }
            }
        })
    }

    fn shared_master() -> Shared {
        Arc::new((
            Mutex::new(Master::new(MasterConfig::default())),
            Condvar::new(),
        ))
    }

    fn game_server_pump(master: SocketAddr) -> Pump {
        let mut announcer = Announcer::new(vec![master], Duration::from_secs(300));
        Pump::start(move |socket, packet| {
            if let Some((from, bytes)) = packet
                && let Some(reply) = announcer.answer(from, bytes, GAME_PROTOCOL)
            {
                let _ = socket.send_to(&reply, from);
            }
            for (to, heartbeat) in announcer.due(Instant::now()) {
                let _ = socket.send_to(&heartbeat, to);
            }
        })
    }

    /// Waits until the master has listed `n` servers: the confirmation is in flight on
    /// other threads, so the test waits on the master's state, woken by its pump.
    fn wait_listed(state: &Shared, n: usize) {
        let (master, changed) = &**state;
        let guard = master.lock().unwrap();
        let (guard, _) = changed
            .wait_timeout_while(guard, TIMEOUT, |m| m.stats().listed < n)
            .unwrap();
        assert_eq!(guard.stats().listed, n, "not confirmed in time");
    }

    #[test]
    fn announce_confirm_list_expire_over_udp() {
        let state = shared_master();
        let master = master_pump(state.clone());
        let game = game_server_pump(master.addr);
        wait_listed(&state, 1);
        let list = fetch_server_list(master.addr, GAME_PROTOCOL, TIMEOUT).unwrap();
        assert_eq!(list, vec![game.addr]);
        assert!(
            fetch_server_list(master.addr, GAME_PROTOCOL + 1, TIMEOUT)
                .unwrap()
                .is_empty()
        );
        state
            .0
            .lock()
            .unwrap()
            .expire(Instant::now() + Duration::from_secs(15 * 60 + 1));
        assert!(
            fetch_server_list(master.addr, GAME_PROTOCOL, TIMEOUT)
                .unwrap()
                .is_empty()
        );
        let stats = state.0.lock().unwrap().stats();
        assert_eq!((stats.confirmed, stats.expired, stats.listed), (1, 1, 0));
    }

    #[test]
    fn a_forged_heartbeat_is_never_listed() {
        let state = shared_master();
        let master = master_pump(state.clone());
        // Heartbeats from a socket that never reads: the master's getinfo goes unanswered.
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let heartbeat = encode(&MasterPacket::Heartbeat {
            game: GAME_TAG.into(),
            protocol: MASTER_PROTOCOL,
            nonce: 7,
        });
        silent.send_to(&heartbeat, master.addr).unwrap();
        // A real server announced after it: once it is listed, the forged one was
        // handled earlier on the same socket and stayed unlisted.
        let game = game_server_pump(master.addr);
        wait_listed(&state, 1);
        let list = fetch_server_list(master.addr, GAME_PROTOCOL, TIMEOUT).unwrap();
        assert_eq!(list, vec![game.addr]);
        let stats = state.0.lock().unwrap().stats();
        assert_eq!(stats.heartbeats, 2);
        assert_eq!(stats.listed, 1);
    }

    #[test]
    fn a_silent_master_times_out() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(
            fetch_server_list(silent.local_addr().unwrap(), 1, Duration::from_millis(200)),
            Err(QueryError::Timeout)
        );
    }
}
