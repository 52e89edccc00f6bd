//! The server on Agones, against a stand-in for the SDK's sidecar built from the SDK's own
//! proto (`sightline-agones-standin`): the calls it makes and their order, health pings that
//! stop while a tick hangs, a wrong environment refused at start-up, and the real binary
//! with `--agones` taking a player whose token the example matchmaker sealed for the
//! server it allocated.

use crate::support::Attacker;
use crate::support::{binaries, free_udp_port};
use bevy::prelude::*;
use sightline_agones_standin::{Call, Record, StandIn};
use sightline_dedicated::{AgonesPlugin, AgonesSettings, AgonesStatus, PLAYERS_LIST};
use sightline_harness::Stepper;
use sightline_map::{MapSource, find_map};
use sightline_server::{
    Connection, ConnectionStage, MatchOrder, MatchOrders, MatchState, ServerConfig,
};
use sightline_sim::SimSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connects to the stand-in as the dedicated server does.
fn connect(standin: &StandIn, shutdown_after_match: bool) -> AgonesPlugin {
    AgonesPlugin::connect(&AgonesSettings {
        port: standin.port(),
        connect_timeout: Duration::from_secs(5),
        shutdown_after_match,
    })
    .expect("the stand-in answers")
}

/// Where `call` first comes in `calls`.
fn position(calls: &[Call], call: &Call) -> usize {
    calls
        .iter()
        .position(|c| c == call)
        .unwrap_or_else(|| panic!("no {call:?} in {calls:?}"))
}

fn count(calls: &[Call], call: &Call) -> usize {
    calls.iter().filter(|c| *c == call).count()
}

fn label(key: &str, value: &str) -> Call {
    Call::SetLabel(key.into(), value.into())
}

/// Steps the server until `done` (checked each step) or `limit` of real time passes.
fn step_until(
    stepper: &mut Stepper,
    limit: Duration,
    mut done: impl FnMut(&mut Stepper) -> bool,
) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        stepper.step();
        if done(stepper) {
            return true;
        }
    }
    false
}

fn agones_status(stepper: &Stepper) -> AgonesStatus {
    stepper.server.world().resource::<AgonesStatus>().clone()
}

#[test]
fn the_server_labels_itself_then_is_ready_pings_tracks_players_and_follows_map_changes() {
    let standin = StandIn::start(&[(PLAYERS_LIST, 16)]).unwrap();
    standin.set_port("game", 7777);
    let plugin = connect(&standin, false);
    assert_eq!(
        plugin.public_address(),
        Some("127.0.0.1:7777".parse().unwrap()),
        "the address Agones gave the GameServer is what tokens must name"
    );
    let mut stepper = Stepper::new_with(ServerConfig::default(), "duel", |app| {
        app.add_plugins(plugin);
    });
    // The first ticks: Ready once one has run.
    let ready = step_until(&mut stepper, Duration::from_secs(5), |_| {
        standin.call_list().contains(&Call::Ready)
    });
    assert!(ready, "no Ready: {:?}", standin.call_list());
    let calls = standin.call_list();
    // The SDK checks the sidecar is there, then labels, then Ready: never Ready without
    // saying what it plays.
    assert_eq!(calls[0], Call::GetGameServer, "{calls:?}");
    let ready = position(&calls, &Call::Ready);
    assert!(position(&calls, &label("map", "duel")) < ready, "{calls:?}");
    assert!(position(&calls, &label("mode", "dm")) < ready, "{calls:?}");
    assert_eq!(count(&calls, &Call::Ready), 1);
    assert_eq!(standin.labels()["agones.dev/sdk-map"], "duel");

    // Pings keep coming while the server ticks.
    let pinged = step_until(&mut stepper, Duration::from_secs(5), |_| {
        count(&standin.call_list(), &Call::Health) >= 2
    });
    assert!(pinged, "{:?}", standin.call_list());

    // A player in, then out: the players list follows, by the client id.
    stepper.add_client("ann", 1);
    let id = stepper.links[0].client_id();
    let joined = Call::AddListValue(PLAYERS_LIST.into(), id.to_string());
    let playing = step_until(&mut stepper, Duration::from_secs(10), |s| {
        let w = s.server.world_mut();
        let playing = w
            .query::<&Connection>()
            .iter(w)
            .any(|c| c.stage == ConnectionStage::Playing);
        playing && standin.call_list().contains(&joined)
    });
    assert!(playing, "{:?}", standin.call_list());
    assert_eq!(standin.list(PLAYERS_LIST), Some(vec![id.to_string()]));
    stepper.links[0].close();
    let left = Call::RemoveListValue(PLAYERS_LIST.into(), id.to_string());
    let gone = step_until(&mut stepper, Duration::from_secs(20), |_| {
        standin.call_list().contains(&left)
    });
    assert!(gone, "{:?}", standin.call_list());
    assert_eq!(standin.list(PLAYERS_LIST), Some(vec![]));

    // The host changes the map: the label follows.
    let depot = MapSource::load(&find_map("depot")).unwrap();
    stepper.server.world_mut().resource_mut::<MatchOrders>().0 =
        Some(MatchOrder::Map(Box::new(depot)));
    let relabelled = step_until(&mut stepper, Duration::from_secs(5), |_| {
        standin.call_list().contains(&label("map", "depot"))
    });
    assert!(relabelled, "{:?}", standin.call_list());
    let calls = standin.call_list();
    assert_eq!(count(&calls, &Call::Ready), 1, "Ready once: {calls:?}");
    assert!(!calls.contains(&Call::Shutdown));
}

/// Ends the match now and steps until the server has counted it.
fn end_match(stepper: &mut Stepper) {
    let before = stepper.server.world().resource::<MatchState>().finished;
    stepper.server.world_mut().resource_mut::<MatchOrders>().0 = Some(MatchOrder::End);
    let ended = step_until(stepper, Duration::from_secs(5), |s| {
        s.server.world().resource::<MatchState>().finished > before
    });
    assert!(ended, "the match did not end");
}

#[test]
fn with_the_flag_an_allocated_server_asks_for_shutdown_after_its_match_and_a_ready_one_does_not() {
    let standin = StandIn::start(&[(PLAYERS_LIST, 16)]).unwrap();
    standin.set_port("game", 7777);
    let plugin = connect(&standin, true);
    let mut stepper = Stepper::new_with(ServerConfig::default(), "duel", |app| {
        app.add_plugins(plugin);
    });
    let ready = step_until(&mut stepper, Duration::from_secs(5), |s| {
        agones_status(s).state == "Ready"
    });
    assert!(ready, "never watched Ready: {:?}", agones_status(&stepper));
    // A match on a Ready server (no session was allocated here) ends: it stays up.
    end_match(&mut stepper);
    stepper.steps(2);
    assert!(!agones_status(&stepper).shutdown);
    // Over the intermission into the next match, then the fleet allocates the server.
    stepper.run_for(f64::from(sightline_server::INTERMISSION) + 1.0);
    standin.set_state("Allocated");
    let allocated = step_until(&mut stepper, Duration::from_secs(5), |s| {
        agones_status(s).state == "Allocated"
    });
    assert!(allocated, "never watched Allocated");
    // While allocated it plays on, asking nothing of Agones but pings.
    stepper.run_for(2.0);
    assert!(!standin.call_list().contains(&Call::Shutdown));
    end_match(&mut stepper);
    let calls = standin
        .wait_for(Duration::from_secs(5), |c| c.contains(&Call::Shutdown))
        .expect("Shutdown after the allocated match");
    assert_eq!(count(&calls, &Call::Shutdown), 1);
    assert!(position(&calls, &Call::Ready) < position(&calls, &Call::Shutdown));
    assert!(agones_status(&stepper).shutdown);
    let watched = step_until(&mut stepper, Duration::from_secs(5), |s| {
        agones_status(s).state == "Shutdown"
    });
    assert!(watched);
}

#[test]
fn health_pings_stop_while_a_tick_hangs_and_resume_after() {
    const HANG: Duration = Duration::from_millis(2500);
    let standin = StandIn::start(&[(PLAYERS_LIST, 16)]).unwrap();
    standin.set_port("game", 7777);
    let plugin = connect(&standin, false);
    let hang_now = Arc::new(AtomicBool::new(false));
    let hung: Arc<Mutex<Option<(Instant, Instant)>>> = Arc::default();
    let (flag, span) = (Arc::clone(&hang_now), Arc::clone(&hung));
    let mut stepper = Stepper::new_with(ServerConfig::default(), "duel", move |app| {
        app.add_plugins(plugin).add_systems(
            FixedUpdate,
            // One tick stuck (a deadlock, an endless loop) for HANG.
            (move || {
                if flag.swap(false, Ordering::Relaxed) {
                    let start = Instant::now();
                    std::thread::sleep(HANG);
                    *span.lock().unwrap() = Some((start, Instant::now()));
                }
            })
            .in_set(SimSet::Combat),
        );
    });
    let health = |records: &[Record]| -> Vec<Instant> {
        records
            .iter()
            .filter(|r| r.call == Call::Health)
            .map(|r| r.at)
            .collect()
    };
    let pinging = step_until(&mut stepper, Duration::from_secs(5), |_| {
        health(&standin.calls()).len() >= 2
    });
    assert!(pinging, "{:?}", standin.call_list());
    hang_now.store(true, Ordering::Relaxed);
    stepper.step();
    let (start, end) = hung.lock().unwrap().expect("the tick hung");
    let resumed = step_until(&mut stepper, Duration::from_secs(5), |_| {
        health(&standin.calls()).iter().any(|at| *at > end)
    });
    assert!(resumed, "pings did not resume after the hang");
    let pings = health(&standin.calls());
    // A ping sent just before the hang may land in its first moments; none after that.
    let during: Vec<_> = pings
        .iter()
        .filter(|at| **at > start + Duration::from_millis(200) && **at < end)
        .collect();
    assert!(during.is_empty(), "pings while the tick hung: {during:?}");
    let before = pings
        .iter()
        .filter(|at| **at <= start + Duration::from_millis(200))
        .max();
    let after = pings.iter().filter(|at| **at >= end).min();
    let gap = after.unwrap().duration_since(*before.unwrap());
    assert!(gap >= HANG - Duration::from_millis(200), "gap {gap:?}");
    // Outside the hang they come about once a second.
    let normal = pings
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|g| *g < HANG / 2);
    assert!(normal.clone().count() >= 1);
    assert!(
        normal.clone().all(|g| g < Duration::from_millis(1900)),
        "{pings:?}"
    );
}

#[test]
fn no_sidecar_is_a_clear_error_at_start_up_not_a_hang() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let refused = AgonesPlugin::connect(&AgonesSettings {
        port,
        connect_timeout: Duration::from_secs(1),
        shutdown_after_match: false,
    });
    let Err(e) = refused else {
        panic!("connected to nothing");
    };
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.contains("no Agones SDK server answered") && e.contains(&port.to_string()),
        "{e}"
    );
}

/// A dedicated server with `--agones`, its SDK port set as Agones sets it.
fn agones_server(sdk_port: &str, game_port: u16, extra: &[&str]) -> Child {
    Command::new(binaries().join("sightline-server"))
        .args(["--bind", "127.0.0.1", "--port", &game_port.to_string()])
        .args(["--map", "duel", "--tickrate", "64", "--agones"])
        .args(extra)
        .env("AGONES_SDK_GRPC_PORT", sdk_port)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server starts")
}

#[test]
fn a_wrong_sdk_port_stops_the_real_server_at_once_with_a_clear_error() {
    let port = free_udp_port();
    let child = agones_server("not-a-port", port, &["--run-seconds", "30"]);
    let out = crate::support::wait(child, Duration::from_secs(10), "server");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("AGONES_SDK_GRPC_PORT") && err.contains("not-a-port"),
        "{err}"
    );
}

/// A stand-in for the Agones allocator service's REST API: answers one
/// `POST /gameserverallocation` with a GameServer at `address`, and keeps the request body.
fn allocator_standin(address: SocketAddr) -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let (request_line, body) = read_whole_request(&mut stream);
        assert!(
            request_line.starts_with("POST /gameserverallocation "),
            "{request_line}"
        );
        let reply = allocation("sightline-abcde-fghij", address);
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{reply}",
            reply.len()
        )
        .unwrap();
        body
    });
    (url, served)
}

#[test]
fn the_real_server_on_agones_takes_a_player_the_matchmaker_allocated_it_for() {
    use sightline_matchmaker::{Allocator, seal_token};
    use sightline_net::{ConnectToken, parse_key, udp_client_with_token};
    let standin = StandIn::start(&[(PLAYERS_LIST, 16)]).unwrap();
    let port = free_udp_port();
    // What Agones reports for this GameServer: its node's address and host port, which
    // the node maps to the container's port. Here they differ, as on a cluster, so the
    // server must take its public address from Agones for the tokens to name it.
    let host_port = if port == u16::MAX { 1024 } else { port + 1 };
    standin.set_port("game", host_port);
    let hex = "6167726f6e657320666c656574206b6579206f6620333220627974657320212e";
    let key_file =
        std::env::temp_dir().join(format!("sightline-agones-key-{}", std::process::id()));
    std::fs::write(&key_file, format!("{hex}\n")).unwrap();
    let child = agones_server(
        &standin.port().to_string(),
        port,
        &[
            "--key-file",
            key_file.to_str().unwrap(),
            "--no-token-service",
            "--run-seconds",
            "30",
        ],
    );
    let log = Arc::new(Mutex::new(String::new()));
    let mut child = child;
    for out in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                log.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
    }
    let calls = standin.wait_for(Duration::from_secs(30), |c| {
        count(c, &Call::Health) >= 2 && c.contains(&Call::Ready)
    });
    let Some(calls) = calls else {
        child.kill().ok();
        panic!("{:?}\n{}", standin.call_list(), log.lock().unwrap());
    };
    assert!(position(&calls, &label("map", "duel")) < position(&calls, &Call::Ready));
    assert!(calls.contains(&label("mode", "dm")));

    // The matchmaker allocates this server through the (stand-in) allocator and seals a
    // token for the player with the fleet's key: the server takes it.
    let public: SocketAddr = format!("127.0.0.1:{host_port}").parse().unwrap();
    let server: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let (url, allocator) = allocator_standin(public);
    let allocation = Allocator {
        url,
        namespace: "default".into(),
        fleet: "sightline".into(),
        tls: None,
    }
    .allocate()
    .expect("allocated");
    let request: serde_json::Value = serde_json::from_str(&allocator.join().unwrap()).unwrap();
    assert_eq!(
        request["gameServerSelectors"][0]["matchLabels"]["agones.dev/fleet"],
        "sightline"
    );
    assert_eq!(allocation.address, public);
    let key = parse_key(hex).unwrap();
    let client_id = 4242;
    let bytes = seal_token(
        &key,
        client_id,
        "127.0.0.1".parse().unwrap(),
        allocation.address,
    )
    .unwrap();
    let token = ConnectToken::read(&mut bytes.as_slice()).unwrap();
    // Sent where the node would forward the host port: the server's own socket.
    let mut player = Attacker::with_transport(udp_client_with_token(server, token).unwrap());
    player.join("allocated");
    let joined = Call::AddListValue(PLAYERS_LIST.into(), client_id.to_string());
    let listed = standin.wait_for(Duration::from_secs(10), |c| c.contains(&joined));
    assert!(listed.is_some(), "{:?}", standin.call_list());
    // A token the matchmaker sealed with another key is refused.
    let wrong = seal_token(&[7; 32], 4243, "127.0.0.1".parse().unwrap(), public).unwrap();
    let wrong = ConnectToken::read(&mut wrong.as_slice()).unwrap();
    let mut stranger = Attacker::with_transport(udp_client_with_token(server, wrong).unwrap());
    assert!(!stranger.connected(3.0), "a token of another key got in");
    drop((player, stranger));
    child.kill().ok();
    child.wait().ok();
    std::fs::remove_file(&key_file).ok();
    let log = log.lock().unwrap().clone();
    assert!(log.contains("agones: ready"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// Reads an HTTP request whole, its head and its `Content-Length` of body: its request
/// line and its body. (Closing on unread bytes would reset the connection before the
/// answer is read.)
fn read_whole_request(stream: &mut std::net::TcpStream) -> (String, String) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap() == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (request_line, String::from_utf8(body).unwrap())
}

/// The allocator's answer: the GameServer `name` at `address`, its game port named.
fn allocation(name: &str, address: SocketAddr) -> String {
    format!(
        r#"{{"gameServerName":"{name}","ports":[{{"name":"game","port":{}}}],"address":"{}","nodeName":"kind-worker","source":"local"}}"#,
        address.port(),
        address.ip()
    )
}

/// A stand-in allocator that answers every request: with a GameServer at `address`, or
/// with Agones's 429 when `ready` is false (no server Ready).
fn allocator_answering(address: SocketAddr, ready: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            read_whole_request(&mut stream);
            let (status, body) = match ready {
                true => ("200 OK", allocation("sightline-quick", address)),
                false => (
                    "429 Too Many Requests",
                    r#"{"error":"no available GameServer to allocate"}"#.into(),
                ),
            };
            write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .ok();
        }
    });
    url
}

/// The real matchmaker service with `flags`, and the URL it serves on (from the line it
/// prints once listening).
fn matchmaker_service(flags: &[&str]) -> (Child, String) {
    let mut child = Command::new(binaries().join("sightline-matchmaker"))
        .args(["--listen", "127.0.0.1:0"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the matchmaker starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("matchmaker: serving quick play on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_string();
    (child, url)
}

/// The real game, headless, with `flags`; what it printed once it ended.
fn headless_game(flags: &[&str]) -> std::process::Output {
    let child = Command::new(binaries().join("sightline"))
        .args(["--headless", "--name", "quick"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the game starts");
    crate::support::wait(child, Duration::from_secs(60), "the headless game")
}

#[test]
fn quick_play_takes_the_real_game_through_the_matchmaker_service_to_a_fleet_server() {
    use sightline_matchmaker::QuickPlay;
    use sightline_net::udp_client_with_token;
    let standin = StandIn::start(&[(PLAYERS_LIST, 16)]).unwrap();
    let port = free_udp_port();
    standin.set_port("game", port);
    let dir = crate::support::temp_dir("quick-play");
    let key_file = dir.join("token.key");
    std::fs::write(&key_file, format!("{}\n", "ab".repeat(32))).unwrap();
    let wrong_key = dir.join("wrong.key");
    std::fs::write(&wrong_key, format!("{}\n", "cd".repeat(32))).unwrap();
    // The matchmaker's HTTPS certificate, and the authority the game is told to trust.
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let (key_file, wrong_key, cert, key) =
        (path(&key_file), path(&wrong_key), path(&cert), path(&key));

    let mut server = agones_server(
        &standin.port().to_string(),
        port,
        &[
            "--key-file",
            &key_file,
            "--no-token-service",
            "--run-seconds",
            "90",
        ],
    );
    // Read and dropped, so that a full pipe never holds the server up.
    for out in [
        Box::new(server.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(server.stderr.take().unwrap()),
    ] {
        std::thread::spawn(move || std::io::copy(&mut BufReader::new(out), &mut std::io::sink()));
    }
    let ready = standin.wait_for(Duration::from_secs(30), |c| c.contains(&Call::Ready));
    assert!(ready.is_some(), "{:?}", standin.call_list());
    let address: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();

    // Quick play over HTTPS: the service allocates the server, seals a token for the
    // game's address, and the game plays on it.
    let fleet = allocator_answering(address, true);
    let (mut service, url) = matchmaker_service(&[
        "--allocator",
        &fleet,
        "--key-file",
        &key_file,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]);
    assert!(url.starts_with("https://"), "{url}");
    let played = headless_game(&[
        "--quick-play",
        &url,
        "--matchmaker-ca",
        &cert,
        "--run-seconds",
        "6",
    ]);
    let err = String::from_utf8_lossy(&played.stderr);
    assert!(played.status.success(), "{err}");
    let client_id: u64 = err
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "quick play: {address} (sightline-quick), client id "
            ))
        })
        .unwrap_or_else(|| panic!("{err}"))
        .trim()
        .parse()
        .unwrap();
    let listed = Call::AddListValue(PLAYERS_LIST.into(), client_id.to_string());
    assert!(
        standin.call_list().contains(&listed),
        "{:?}",
        standin.call_list()
    );

    // A ticket's token is good for one connection: a second client replaying it is not let in.
    let ticket = QuickPlay {
        url: url.clone(),
        ca_pem: Some(made.cert.pem().into_bytes()),
    }
    .ask()
    .unwrap();
    let mut first = Attacker::with_transport(
        udp_client_with_token(address, ticket.connect_token().unwrap()).unwrap(),
    );
    first.join("first");
    let mut replay = Attacker::with_transport(
        udp_client_with_token(address, ticket.connect_token().unwrap()).unwrap(),
    );
    assert!(!replay.connected(3.0), "a replayed token got in");
    drop((first, replay));
    service.kill().ok();
    service.wait().ok();

    // A token the server cannot open (a matchmaker with another key) is named as refused.
    let (mut wrong, wrong_url) = matchmaker_service(&[
        "--server",
        &address.to_string(),
        "--key-file",
        &wrong_key,
        "--plain-http",
    ]);
    let refused = headless_game(&["--quick-play", &wrong_url, "--run-seconds", "30"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        err.contains("did not take the matchmaker's token: refused"),
        "{err}"
    );
    wrong.kill().ok();
    wrong.wait().ok();

    // No server Ready for as long as the queue waits: the player is told so.
    let full = allocator_answering(address, false);
    let (mut busy, busy_url) = matchmaker_service(&[
        "--allocator",
        &full,
        "--key-file",
        &key_file,
        "--plain-http",
        "--queue-seconds",
        "1",
    ]);
    let waited = headless_game(&["--quick-play", &busy_url, "--run-seconds", "30"]);
    let err = String::from_utf8_lossy(&waited.stderr);
    assert!(!waited.status.success());
    assert!(
        err.contains("no server is free: no server became free within 1 s"),
        "{err}"
    );
    busy.kill().ok();
    busy.wait().ok();

    server.kill().ok();
    server.wait().ok();
    std::fs::remove_dir_all(&dir).ok();
}
