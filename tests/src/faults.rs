//! A bad day for the real binaries over real UDP: the server process stopped and
//! continued (a paused VM, a swap storm), a client stopped for a second (a hitch), a
//! client's frame that lasts longer than the connection's timeout, and a NAT that
//! changes a playing client's port. Nobody honest may be kicked or reset for any of them.

use crate::support::{Attacker, Server, finish_honest, honest};
use crate::support::{field, free_udp_port};
use sightline_net::{CONNECTION_TIMEOUT_SECONDS, ClientSecurity, RenetClient, UdpClientTransport};
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Sends `signal` (STOP, CONT) to a process.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Stops a process for `pause`, then lets it go on.
fn pause(pid: u32, pause: Duration) {
    signal(pid, "STOP");
    std::thread::sleep(pause);
    signal(pid, "CONT");
}

#[test]
fn a_server_that_stands_still_for_seconds_kicks_nobody_and_catches_up() {
    let server = Server::start_with_bots(60, 2, &["--max-per-address", "8"]);
    let players = [honest(server.addr, 12), honest(server.addr, 12)];
    std::thread::sleep(Duration::from_secs(4));
    pause(server.child.id(), Duration::from_millis(2500));
    for player in players {
        let summary = finish_honest(player);
        assert_eq!(field(&summary, "resets"), 0, "{summary}");
        assert_eq!(field(&summary, "reconnects"), 0, "{summary}");
        // 32 snapshots a second, less joining and the stall.
        assert!(field(&summary, "snapshots") >= 32 * 7, "{summary}");
    }
    let (log, status) = server.stop();
    eprintln!("{status}");
    assert_eq!(field(&status, "kicks"), 0, "{status}");
    assert_eq!(field(&status, "strikes"), 0, "{status}");
    assert!(field(&status, "stalls") >= 1, "{status}");
    // 2.5 s at 64 Hz.
    assert!(field(&status, "ticks_caught_up") >= 150, "{status}");
    assert_eq!(field(&status, "skipped_ms"), 0, "{status}");
    assert!(log.contains("stood still"), "{log}");
}

#[test]
fn a_client_that_stands_still_for_a_second_resynchronises_at_most_once() {
    let server = Server::start_with_bots(60, 2, &[]);
    let player = honest(server.addr, 10);
    std::thread::sleep(Duration::from_secs(4));
    pause(player.id(), Duration::from_secs(1));
    let summary = finish_honest(player);
    eprintln!("after a 1 s hitch: {summary}");
    assert!(field(&summary, "resets") <= 1, "{summary}");
    assert_eq!(field(&summary, "reconnects"), 0, "{summary}");
    let (_, status) = server.stop();
    assert_eq!(field(&status, "kicks"), 0, "{status}");
}

/// A frame longer than netcode's timeout (a software renderer's worst frame, a shader
/// compiled, a swap storm): the game's thread stands still while the connection's keeper
/// reads for it and sends netcode's keep-alives, so the server keeps the player and the
/// game goes on with what arrived meanwhile, on the same connection.
#[test]
fn a_frame_longer_than_the_connection_timeout_keeps_the_connection() {
    let server = Server::start(60, &[]);
    let mut player = Attacker::connect(server.addr, &ClientSecurity::default());
    player.join("patient");
    player.snapshots();
    player.pump(1.0);
    let before = player.snapshots().len();
    // The long frame: nothing of the game's app runs.
    let frame = Duration::from_secs(CONNECTION_TIMEOUT_SECONDS.unsigned_abs().into()) * 6 / 5;
    std::thread::sleep(frame);
    player.pump(0.2);
    let held = player.snapshots().len();
    eprintln!("snapshots: {before} in the second before, {held} after the {frame:?} frame");
    // The server's stream went on through the frame, and the keeper kept it.
    assert!(
        held as f64 >= before as f64 * frame.as_secs_f64() * 0.8,
        "{held} vs {before}"
    );
    assert!(player.app.world().resource::<RenetClient>().is_connected());
    let transport = player.app.world().resource::<UdpClientTransport>();
    assert_eq!(transport.failure(), None);
    // At least that frame (a loaded machine may hold others past a quarter second).
    let (covered, dropped) = transport.frames_kept();
    assert!(
        covered >= 1 && dropped == 0,
        "{covered} frames covered, {dropped} dropped"
    );
    assert_eq!(transport.standbys(), (0, 0));
    let (log, status) = server.stop();
    assert!(!log.contains("patient left"), "{log}");
    assert_eq!(field(&status, "kicks"), 0, "{status}");
}

/// A NAT in this process between clients and a server: each client address gets a
/// socket of its own toward the server (its mapping), and token requests over TCP are
/// passed through. A rebinding gives every mapping a new socket, so a new port: what
/// the server sends to the old ones is lost, as it is when a home router or a mobile
/// network changes a client's port.
struct Nat {
    /// The address clients dial.
    addr: SocketAddr,
    rebind: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// When each datagram from the server reached a client.
    delivered: Arc<Mutex<Vec<Instant>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Nat {
    fn start(server: SocketAddr) -> Self {
        let port = free_udp_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let front = UdpSocket::bind(addr).unwrap();
        front.set_nonblocking(true).unwrap();
        let tcp = TcpListener::bind(addr).unwrap();
        tcp.set_nonblocking(true).unwrap();
        let (rebind, stop) = (Arc::<AtomicBool>::default(), Arc::<AtomicBool>::default());
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let udp = {
            let (rebind, stop, delivered) = (
                Arc::clone(&rebind),
                Arc::clone(&stop),
                Arc::clone(&delivered),
            );
            std::thread::spawn(move || {
                let mut mappings: HashMap<SocketAddr, UdpSocket> = HashMap::new();
                let upstream = || {
                    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                    s.set_nonblocking(true).unwrap();
                    s
                };
                let mut buffer = [0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    if rebind.swap(false, Ordering::Relaxed) {
                        for socket in mappings.values_mut() {
                            *socket = upstream();
                        }
                    }
                    while let Ok((len, client)) = front.recv_from(&mut buffer) {
                        let socket = mappings.entry(client).or_insert_with(upstream);
                        let _ = socket.send_to(&buffer[..len], server);
                    }
                    for (client, socket) in &mappings {
                        while let Ok((len, _)) = socket.recv_from(&mut buffer) {
                            let _ = front.send_to(&buffer[..len], client);
                            delivered.lock().unwrap().push(Instant::now());
                        }
                    }
                    std::thread::sleep(Duration::from_micros(500));
                }
            })
        };
        let tokens = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok((client, _)) = tcp.accept() else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    // The token exchange takes several messages each way: pipe both
                    // directions until either side closes.
                    let _ = client.set_nonblocking(false);
                    let Ok(upstream) = TcpStream::connect(server) else {
                        continue;
                    };
                    for stream in [&client, &upstream] {
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    }
                    let (Ok(mut client_in), Ok(mut upstream_out)) =
                        (client.try_clone(), upstream.try_clone())
                    else {
                        continue;
                    };
                    let up = std::thread::spawn(move || {
                        let _ = std::io::copy(&mut client_in, &mut upstream_out);
                        let _ = upstream_out.shutdown(std::net::Shutdown::Write);
                    });
                    let (mut upstream_in, mut client_out) = (upstream, client);
                    let _ = std::io::copy(&mut upstream_in, &mut client_out);
                    let _ = client_out.shutdown(std::net::Shutdown::Write);
                    let _ = up.join();
                }
            })
        };
        Self {
            addr,
            rebind,
            stop,
            delivered,
            threads: vec![udp, tokens],
        }
    }

    /// Datagrams from the server delivered within `window` before `at`.
    fn delivered_in(&self, window: Duration, at: Instant) -> usize {
        let delivered = self.delivered.lock().unwrap();
        delivered
            .iter()
            .filter(|t| **t <= at && at.duration_since(**t) < window)
            .count()
    }
}

impl Drop for Nat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_client_whose_nat_changes_its_port_plays_again_within_three_seconds() {
    let server = Server::start_with_bots(60, 2, &[]);
    let nat = Nat::start(server.addr);
    let player = honest(nat.addr, 12);
    // Playing: snapshots flowing (32 a second at a 64 Hz tick).
    let start = Instant::now();
    while nat.delivered_in(Duration::from_millis(500), Instant::now()) < 12 {
        assert!(start.elapsed() < Duration::from_secs(10), "never played");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(1));
    let rebound_at = Instant::now();
    nat.rebind.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(5));
    // Playing again: the first moment after the rebinding from which snapshots flowed
    // as before, judged from when each datagram reached the client.
    let delivered: Vec<Instant> = nat.delivered.lock().unwrap().clone();
    let back = delivered
        .iter()
        .filter(|t| **t > rebound_at + Duration::from_millis(100))
        .find(|t| {
            nat.delivered_in(Duration::from_millis(500), **t + Duration::from_millis(500)) >= 12
        })
        .map(|t| t.duration_since(rebound_at));
    let summary = finish_honest(player);
    drop(nat);
    let (log, _) = server.stop();
    let back = back.unwrap_or_else(|| panic!("never played again\n{summary}\n{log}"));
    eprintln!("playing again {back:?} after the rebinding; {summary}");
    assert!(
        back < Duration::from_secs(3),
        "playing again only after {back:?}\n{summary}"
    );
    // One run, two sessions: the summary counts both.
    assert_eq!(field(&summary, "reconnects"), 1, "{summary}");
    assert_eq!(field(&summary, "sessions"), 2, "{summary}");
    assert!(field(&summary, "snapshots") >= 32 * 6, "{summary}");
    assert_eq!(log.matches("honest came back").count(), 1, "{log}");
}
