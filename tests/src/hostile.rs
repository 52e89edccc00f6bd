//! Hostile clients against the real server binary over real UDP: crafted sequence
//! numbers, floods, backtracking view times, junk and handshake floods, silent clients,
//! tokens refused. Attackers speak the protocol by hand from this process; an honest
//! headless client plays beside them and must notice nothing.

use crate::support::{Attacker, Server, assert_tick_in_budget, check_honest, cmd, field, honest};
use bevy::prelude::*;
use sightline_net::{ClientNetPlugin, ClientSecurity, UdpClientTransport, fetch_token};
use sightline_protocol::{Channel, Snapshot};
use sightline_sim::{Buttons, InputCmd};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn crafted_inputs_and_floods_get_their_senders_kicked_while_an_honest_client_plays_on() {
    let server = Server::start(60, &["--max-per-address", "8"]);
    let player = honest(server.addr, 8);
    let security = ClientSecurity::default();

    // The largest sequence number, then jumps: refused, never an overflow.
    let mut forger = Attacker::connect(server.addr, &security);
    forger.join("forger");
    forger.input(0, vec![cmd(u32::MAX)]);
    forger.input(0, vec![cmd(1)]);
    for jump in 0..40u32 {
        forger.input(0, vec![cmd(10_000 + jump * 1000)]);
        forger.pump(0.01);
    }
    let reason = forger.refusal(5.0).expect("the forger is kicked");
    assert!(reason.contains("impossible input"), "{reason}");

    // Zero-length messages by the ten thousand.
    let mut flooder = Attacker::connect(server.addr, &security);
    flooder.join("flooder");
    for _ in 0..20 {
        for _ in 0..500 {
            flooder.send(Channel::Unreliable, Vec::new());
        }
        flooder.pump(0.01);
    }
    let reason = flooder.refusal(5.0).expect("the flooder is kicked");
    assert!(reason.contains("kicked"), "{reason}");

    // Ten times the command rate, every command valid.
    let mut rusher = Attacker::connect(server.addr, &security);
    rusher.join("rusher");
    let mut seq = 1;
    let start = Instant::now();
    let mut reason = None;
    while reason.is_none() && start.elapsed() < Duration::from_secs(8) {
        // The same packet ten times: no forgery, only the rate is wrong.
        for _ in 0..10 {
            rusher.input(0, vec![cmd(seq)]);
        }
        seq += 1;
        reason = rusher.refusal(1.0 / 64.0);
    }
    let reason = reason.expect("the rusher is kicked");
    assert!(reason.contains("flooding"), "{reason}");

    let summary = check_honest(player, 8);
    let (log, status) = server.stop();
    assert!(field(&status, "kicks") >= 3, "{status}");
    assert_tick_in_budget(&status);
    assert!(field(&status, "refused_commands") > 0, "{status}");
    // Junk is counted, not logged line by line.
    assert!(
        log.lines().count() < 200,
        "{} log lines",
        log.lines().count()
    );
    assert!(log.contains("honest joined"), "{log}\n{summary}");
}

#[test]
fn shots_claiming_a_moment_the_client_never_saw_are_refused() {
    let server = Server::start(60, &[]);
    let mut cheat = Attacker::connect(server.addr, &ClientSecurity::default());
    cheat.join("backtracker");
    let mut seq = 1;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        cheat.pump(1.0 / 64.0);
        let Some(newest) = cheat.snapshots().into_iter().max_by_key(|s| s.seq) else {
            continue;
        };
        // Acknowledges what it has, but claims to see half a second before it.
        let mut c = InputCmd {
            seq,
            buttons: Buttons::FIRE,
            ..Default::default()
        };
        c.set_view_time(newest.server_tick.saturating_sub(32) as f64);
        cheat.input(newest.seq, vec![c]);
        seq += 1;
    }
    drop(cheat);
    let (_, status) = server.stop();
    assert!(field(&status, "refused_shots") > 0, "{status}");
}

#[test]
fn junk_and_forged_handshakes_occupy_nothing() {
    let server = Server::start(60, &["--max-players", "2"]);
    // Junk, and requests shaped like connection requests but sealed with no key the
    // server holds, all from the honest client's own address: before, the forged
    // requests spent that address's handshake allowance and kept it from connecting.
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let start = Instant::now();
    for _ in 0..20_000u32 {
        let len = (next() % 200) as usize;
        let junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = udp.send_to(&junk, server.addr);
    }
    let sent_in = start.elapsed();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (flag, addr) = (stop.clone(), server.addr);
    let forger = std::thread::spawn(move || {
        let forger = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut forged = 0u32;
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            let mut request: Vec<u8> = (0..1078).map(|_| next() as u8).collect();
            request[0] = 0;
            let _ = forger.send_to(&request, addr);
            forged += 1;
            // About 500 a second: far past the 20 an address may send.
            std::thread::sleep(Duration::from_millis(2));
        }
        forged
    });
    // Junk over TCP: a web request, and a connection that never says anything.
    let mut web = TcpStream::connect(server.addr).unwrap();
    let _ = web.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let _silent = TcpStream::connect(server.addr).unwrap();
    // The one real slot left (a bot holds the other) goes to an honest client, whose
    // address the forger sends from all the while.
    let player = honest(server.addr, 6);
    check_honest(player, 6);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let forged = forger.join().unwrap();
    let (log, status) = server.stop();
    assert!(forged > 1_000, "{forged} forged");
    assert!(
        field(&status, "junk_datagrams") > 10_000 + u64::from(forged) / 2,
        "{status} (sent in {sent_in:?}, {forged} forged)"
    );
    assert_eq!(field(&status, "handshakes_refused"), 0, "{status}");
    assert_tick_in_budget(&status);
    assert!(
        log.lines().count() < 100,
        "{} log lines:\n{log}",
        log.lines().count()
    );
}

#[test]
fn silent_players_are_kicked_and_silent_connections_dropped() {
    let server = Server::start(60, &["--idle-kick", "2", "--max-per-address", "8"]);
    let security = ClientSecurity::default();
    // Says Hello, then never sends a command.
    let mut idler = Attacker::connect(server.addr, &security);
    idler.join("idler");
    let reason = idler.refusal(6.0).expect("the idler is kicked");
    assert!(reason.contains("no input"), "{reason}");
    // Connects, then stops entirely (never reads, never sends): netcode's timeout,
    // chosen by the server, drops it and frees the slot.
    let mut ghost = Attacker::connect(server.addr, &security);
    ghost.join("ghost");
    let frozen_at = Instant::now();
    std::thread::sleep(Duration::from_secs(12));
    drop(ghost);
    assert!(frozen_at.elapsed() >= Duration::from_secs(12));
    let (log, status) = server.stop();
    assert!(field(&status, "kicks") >= 1, "{status}");
    assert!(log.contains("ghost left"), "{log}");
}

#[test]
fn tokens_are_refused_without_the_password_or_beyond_the_address_limit() {
    let server = Server::start(60, &["--password", "hunter2", "--max-per-address", "1"]);
    let refused = fetch_token(server.addr, "wrong", None).expect_err("wrong password");
    assert!(refused.contains("wrong password"), "{refused}");
    // Without a token nothing connects: an insecure client gets no answer.
    let mut insecure = Attacker::connect(server.addr, &ClientSecurity::Insecure);
    assert!(!insecure.connected(3.0), "an insecure client got in");
    // With it, one connection; a second from the same address is refused.
    let security = ClientSecurity::Secure {
        password: "hunter2".into(),
        known_servers: None,
    };
    let mut first = Attacker::connect(server.addr, &security);
    first.join("first");
    let mut second = Attacker::connect(server.addr, &security);
    assert!(!second.connected(5.0));
    let why = second
        .app
        .world()
        .resource::<UdpClientTransport>()
        .failure()
        .expect("a reason");
    assert!(why.contains("too many connections"), "{why}");
    drop((first, second, insecure));
    let (_, status) = server.stop();
    assert!(field(&status, "tokens_refused") >= 2, "{status}");
}

/// Runs a real-time client app until `done` or `limit` seconds pass.
fn run_until(app: &mut App, limit: f64, mut done: impl FnMut(&mut App) -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs_f64(limit);
    while Instant::now() < end {
        app.update();
        if done(app) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

#[test]
fn a_dropped_player_reconnects_by_itself_to_the_same_slot_team_and_place() {
    use sightline_client::{Autopilot, ClientPlugin, ConnectionStatus, InputSource, Reconnect};
    use sightline_net::{ConditionerSettings, LinkConditions};
    let server = Server::start_with_bots(120, 3, &["--mode", "tdm", "--max-per-address", "8"]);
    let mut app = sightline_client::client_app(
        ClientNetPlugin::udp(server.addr, &ClientSecurity::default()).unwrap(),
        ClientPlugin {
            name: "traveller".into(),
            input: InputSource::Autopilot(Autopilot::new(7)),
        },
        sightline_runtime::Pacing::Stepped,
    );
    app.finish();
    app.cleanup();
    let joined = |app: &mut App| match app.world().resource::<ConnectionStatus>() {
        ConnectionStatus::Connected(info) => info.welcome.your_id,
        _ => None,
    };
    assert!(
        run_until(&mut app, 10.0, |a| joined(a).is_some()),
        "never joined: {:?}",
        app.world().resource::<ConnectionStatus>()
    );
    run_until(&mut app, 2.0, |_| false);
    let id = joined(&mut app).unwrap();
    let team = |app: &mut App, id| {
        app.world()
            .resource::<sightline_client::Roster>()
            .0
            .get(&id)
            .and_then(|e| e.team)
    };
    assert!(
        run_until(&mut app, 3.0, |a| team(a, id).is_some()),
        "no team on the scoreboard"
    );
    let before = team(&mut app, id);
    // The link goes dead both ways, longer than the connection timeout.
    app.world_mut().resource_mut::<LinkConditions>().0 = ConditionerSettings {
        loss_pct: 100.0,
        ..Default::default()
    };
    let lost = run_until(&mut app, 15.0, |a| {
        matches!(
            a.world().resource::<ConnectionStatus>(),
            ConnectionStatus::Reconnecting(_)
        )
    });
    assert!(lost, "the drop was not noticed");
    assert!(
        !matches!(
            app.world().resource::<ConnectionStatus>(),
            ConnectionStatus::Disconnected(_)
        ),
        "gave up at once"
    );
    // Connectivity returns; the client comes back by itself.
    app.world_mut().resource_mut::<LinkConditions>().0 = ConditionerSettings::default();
    run_until(&mut app, 0.5, |_| false);
    assert!(app.world().resource::<Reconnect>().active());
    assert!(
        run_until(&mut app, 20.0, |a| joined(a).is_some()),
        "did not come back: {:?}",
        app.world().resource::<ConnectionStatus>()
    );
    assert_eq!(joined(&mut app), Some(id), "a different slot");
    assert!(run_until(&mut app, 3.0, |a| team(a, id).is_some()));
    assert_eq!(team(&mut app, id), before, "a different team");
    drop(app);
    let (log, _) = server.stop();
    assert!(log.contains("traveller came back"), "{log}");
}

#[test]
fn a_matchmaker_holding_the_key_issues_tokens_the_server_accepts() {
    use sightline_net::{issue_token, parse_key, udp_client_with_token};
    let hex = "6d61746368206d616b6572207465737420206b6579206f662033322062797465";
    let path = std::env::temp_dir().join(format!("sightline-key-{}", std::process::id()));
    std::fs::write(&path, format!("{hex}\n")).unwrap();
    let key = parse_key(hex).unwrap();
    let public = "127.0.0.1:1".parse().unwrap();
    let server = Server::start(
        60,
        &[
            "--key-file",
            path.to_str().unwrap(),
            "--no-token-service",
            "--public-address",
            "127.0.0.1:1",
        ],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    // A token sealed with another key is refused; one with the server's key is accepted.
    let wrong = issue_token(&[9; 32], 41, "127.0.0.1".parse().unwrap(), public, now).unwrap();
    let right = issue_token(&key, 42, "127.0.0.1".parse().unwrap(), public, now).unwrap();
    let mut player = Attacker::with_transport(udp_client_with_token(server.addr, right).unwrap());
    player.join("matched");
    let mut stranger = Attacker::with_transport(udp_client_with_token(server.addr, wrong).unwrap());
    assert!(!stranger.connected(3.0), "a token of another key got in");
    drop((player, stranger));
    std::fs::remove_file(&path).ok();
    let (log, _) = server.stop();
    assert!(log.contains("matched joined"), "{log}");
}

#[test]
fn shots_acknowledging_an_old_snapshot_buy_a_near_client_no_older_view() {
    let server = Server::start(60, &[]);
    let mut cheat = Attacker::connect(server.addr, &ClientSecurity::default());
    cheat.join("staleacker");
    let mut received: Vec<Snapshot> = Vec::new();
    let (mut seq, mut shots) = (1, 0);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        cheat.pump(1.0 / 64.0);
        received.extend(cheat.snapshots());
        let Some(newest) = received.iter().map(|s| s.server_tick).max() else {
            continue;
        };
        // Acknowledges a snapshot 100 ms older than the one it holds, and claims to see
        // 350 ms behind the newest (360-390 ms behind the tick its command runs in):
        // inside what that snapshot and the rewind limit allowed, not what its round trip
        // of a few milliseconds explains.
        let Some(stale) = received
            .iter()
            .filter(|s| s.server_tick + 6 <= newest)
            .max_by_key(|s| s.server_tick)
        else {
            continue;
        };
        let mut c = InputCmd {
            seq,
            buttons: Buttons::FIRE,
            ..Default::default()
        };
        c.set_view_time(f64::from(newest) - 0.35 * 64.0);
        cheat.input(stale.seq, vec![c]);
        seq += 1;
        shots += 1;
    }
    drop(cheat);
    let (_, status) = server.stop();
    assert!(shots > 100);
    assert!(field(&status, "refused_shots") >= 10, "{status}");
}

#[test]
fn connections_that_never_finish_a_token_request_leave_room_for_a_player() {
    use socket2::{Domain, Socket, Type};
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = Server::start(40, &[]);
    let target: socket2::SockAddr = server.addr.into();
    let stop = Arc::new(AtomicBool::new(false));
    // 48 addresses of 127.0.0.0/8, each holding four connections that send one byte and
    // wait, opened again as soon as the server closes them.
    let attack = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let open = |from: std::net::Ipv4Addr| -> Option<Socket> {
                let s = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
                s.bind(&SocketAddr::new(from.into(), 0).into()).ok()?;
                s.connect_timeout(&target, Duration::from_secs(1)).ok()?;
                (&s).write_all(&[0]).ok()?;
                s.set_nonblocking(true).ok()?;
                Some(s)
            };
            let hosts: Vec<std::net::Ipv4Addr> = (0..48u8)
                .map(|i| std::net::Ipv4Addr::new(127, 10 + i / 16, i % 16, 1 + i))
                .collect();
            let mut held: Vec<(std::net::Ipv4Addr, Option<Socket>)> = hosts
                .iter()
                .flat_map(|h| std::iter::repeat_n(*h, 4))
                .map(|h| (h, None))
                .collect();
            let mut reopened = 0u32;
            while !stop.load(Ordering::Relaxed) {
                for (host, socket) in &mut held {
                    let closed = match socket {
                        None => true,
                        Some(s) => {
                            let mut byte = [std::mem::MaybeUninit::new(0u8)];
                            match s.recv(&mut byte) {
                                Ok(n) => n == 0,
                                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                            }
                        }
                    };
                    if closed {
                        *socket = open(*host);
                        reopened += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            reopened
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    for _ in 0..5 {
        let asked = Instant::now();
        let token = fetch_token(server.addr, "", None);
        assert!(token.is_ok(), "{token:?}");
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "{:?}",
            asked.elapsed()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    stop.store(true, Ordering::Relaxed);
    let reopened = attack.join().unwrap();
    assert!(
        reopened > 192,
        "the attack held its connections open: {reopened}"
    );
    let (_, status) = server.stop();
    assert!(field(&status, "tokens_issued") >= 5, "{status}");
    assert!(field(&status, "token_requests_dropped") > 0, "{status}");
}
