//! The `sightline-master` binary over real UDP on 127.0.0.1: a game server announces
//! itself, is confirmed and listed; the binary stops cleanly when told to.

use sightline_query::{Announcer, HEARTBEAT_INTERVAL, fetch_server_list};
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

const GAME_PROTOCOL: u32 = 11;
const TIMEOUT: Duration = Duration::from_secs(5);

/// Starts the master on a free port; gives the child, its stderr and its address.
fn start(run_seconds: u32) -> (Child, BufReader<ChildStderr>, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sightline-master"))
        .args(["--bind", "127.0.0.1", "--port", "0", "--run-seconds"])
        .arg(run_seconds.to_string())
        .stderr(Stdio::piped())
        .spawn()
        .expect("master starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("first line");
    let addr = line
        .trim()
        .rsplit(' ')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    (child, stderr, addr)
}

#[test]
fn announced_servers_are_listed() {
    let (mut child, _stderr, master) = start(60);
    let game = UdpSocket::bind("127.0.0.1:0").unwrap();
    game.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut announcer = Announcer::new(vec![master], HEARTBEAT_INTERVAL);
    for (to, heartbeat) in announcer.due(Instant::now()) {
        game.send_to(&heartbeat, to).unwrap();
    }
    let mut buf = [0u8; 2048];
    let (n, from) = game.recv_from(&mut buf).expect("the master asks");
    let reply = announcer
        .answer(from, &buf[..n], GAME_PROTOCOL)
        .expect("a getinfo from the master");
    game.send_to(&reply, from).unwrap();
    // Loopback delivers in order into the master's one socket: the answer is handled
    // before the list request.
    let list = fetch_server_list(master, GAME_PROTOCOL, TIMEOUT).unwrap();
    assert_eq!(list, vec![game.local_addr().unwrap()]);
    assert!(
        fetch_server_list(master, GAME_PROTOCOL + 1, TIMEOUT)
            .unwrap()
            .is_empty()
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn stops_cleanly_after_run_seconds() {
    let (mut child, mut stderr, _) = start(1);
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("0 listed"), "{rest}");
}
