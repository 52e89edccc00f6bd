//! The real binaries over UDP on loopback: a dedicated server with bots and two headless
//! clients, started as a person would start them.

use crate::support::{binaries, field, finish_honest, free_udp_port, wait};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[test]
fn server_and_two_headless_clients_play_over_udp_and_a_third_watches() {
    let dir = binaries();
    let port = free_udp_port().to_string();
    let server = Command::new(dir.join("sightline-server"))
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port,
            "--bots",
            "2",
            "--map",
            "duel",
        ])
        .args(["--run-seconds", "9", "--name", "loopback"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server starts");
    // Bob plays through the link conditioner: 40 ms each way, 10 ms jitter, 5 % loss.
    let clients: Vec<Child> = [("ann", "0"), ("bob", "40")]
        .iter()
        .map(|(name, latency)| {
            Command::new(dir.join("sightline"))
                .args(["--headless", "--connect", &format!("127.0.0.1:{port}")])
                .args([
                    "--name",
                    name,
                    "--run-seconds",
                    "5",
                    "--fake-latency",
                    latency,
                ])
                .args(["--fake-jitter", if *latency == "0" { "0" } else { "10" }])
                .args(["--fake-loss", if *latency == "0" { "0" } else { "5" }])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("client starts")
        })
        .collect();

    // Cat watches: no player, the game three seconds late, for long enough to see everyone
    // move after those three seconds.
    let spectator = Command::new(dir.join("sightline"))
        .args([
            "--headless",
            "--spectate",
            "--connect",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--name", "cat", "--run-seconds", "7"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spectator starts");

    for (client, name) in clients.into_iter().zip(["ann", "bob"]) {
        let out = wait(client, Duration::from_secs(30), name);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
        let summary = stdout
            .lines()
            .find_map(|l| l.strip_prefix("summary: "))
            .unwrap_or_else(|| panic!("{name} printed no summary:\n{stdout}\n{stderr}"));
        assert_eq!(field(summary, "players_seen"), 4, "{name}: {summary}");
        assert_eq!(field(summary, "players_moved"), 4, "{name}: {summary}");
        assert_eq!(field(summary, "malformed"), 0, "{name}: {summary}");
        assert!(field(summary, "snapshots") > 100, "{name}: {summary}");
        assert!(!stderr.contains("panicked"), "{name}:\n{stderr}");
    }
    let out = wait(spectator, Duration::from_secs(30), "cat");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "cat failed:\n{stdout}\n{stderr}");
    let summary = stdout
        .lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("cat printed no summary:\n{stdout}\n{stderr}"));
    assert_eq!(field(summary, "players_seen"), 4, "cat: {summary}");
    assert_eq!(field(summary, "players_moved"), 4, "cat: {summary}");
    assert_eq!(field(summary, "malformed"), 0, "cat: {summary}");
    assert_eq!(field(summary, "unresolved"), 0, "cat: {summary}");
    assert!(field(summary, "snapshots") > 100, "cat: {summary}");
    assert!(stderr.contains("as a spectator"), "{stderr}");

    let out = wait(server, Duration::from_secs(30), "server");
    let log =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "server failed:\n{log}");
    assert!(!log.contains("panicked"), "{log}");
    assert!(
        log.contains("ann joined") && log.contains("bob joined"),
        "{log}"
    );
    // The spectator took no player's place.
    assert!(
        log.contains("cat watches") && log.contains("cat stopped watching"),
        "{log}"
    );
    assert!(!log.contains("cat joined"), "{log}");
    assert!(
        log.contains("ann left") && log.contains("bob left"),
        "{log}"
    );
    assert!(log.contains("shutting down"), "{log}");
}

/// A headless client asks for 128 snapshots a second, as the game does by default, and
/// over real UDP is sent them; a server started with `--max-snapshot-rate 64` sends the
/// same client 64. Both servers and clients run at once, on their own ports.
#[test]
fn a_client_is_sent_the_snapshots_it_asks_for_up_to_the_server_s_cap() {
    let dir = binaries();
    let start = |cap: &str| {
        let port = free_udp_port().to_string();
        let server = Command::new(dir.join("sightline-server"))
            .args(["--bind", "127.0.0.1", "--port", &port, "--bots", "1"])
            .args([
                "--map",
                "duel",
                "--run-seconds",
                "9",
                "--max-snapshot-rate",
                cap,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server starts");
        let client = Command::new(dir.join("sightline"))
            .args(["--headless", "--connect", &format!("127.0.0.1:{port}")])
            .args(["--name", &format!("cap{cap}"), "--run-seconds", "5"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("client starts");
        (server, client)
    };
    let runs = [start("128"), start("64")];
    let mut snapshots = Vec::new();
    for ((server, client), cap) in runs.into_iter().zip(["128", "64"]) {
        // Ended well, with no malformed message.
        let summary = finish_honest(client);
        snapshots.push(field(&summary, "snapshots") as f64);
        let out = wait(server, Duration::from_secs(30), "server");
        assert!(
            out.status.success(),
            "server with cap {cap} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let [fast, slow] = snapshots[..] else {
        unreachable!()
    };
    // Five seconds of play (605 and 317 when written): at most 64 a second from the
    // capped server, a second's slack allowed, and about twice that from the other.
    assert!(slow > 100.0 && slow <= 64.0 * 6.0, "{snapshots:?}");
    assert!(fast >= 1.6 * slow, "{snapshots:?}");
}

#[test]
fn bad_flags_print_usage_and_exit_2() {
    let dir = binaries();
    for (bin, args) in [
        ("sightline-server", vec!["--tickrate", "500"]),
        (
            "sightline-server",
            vec!["--tickrate", "128", "--snapshot-rate", "50"],
        ),
        ("sightline-server", vec!["--no-such-flag"]),
        ("sightline", vec!["--headless"]),
        (
            "sightline",
            vec!["--headless", "--connect", "not an address"],
        ),
    ] {
        let out = Command::new(dir.join(bin))
            .args(&args)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bin} {args:?}: {stderr}");
        assert!(stderr.contains("Usage"), "{bin} {args:?}: {stderr}");
    }
}

#[test]
fn a_broken_map_is_reported_with_file_and_line() {
    let dir = binaries();
    let map = std::env::temp_dir().join(format!("sightline-broken-{}.ron", std::process::id()));
    std::fs::write(
        &map,
        "(\n    name: \"broken\",\n    sky: (0.5, 0.5, 2.0),\n)\n",
    )
    .unwrap();
    let out = Command::new(dir.join("sightline-server"))
        .args(["--map", map.to_str().unwrap(), "--port", "0"])
        .output()
        .expect("runs");
    std::fs::remove_file(&map).ok();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3:", map.display())),
        "{stderr}"
    );
    assert!(stderr.contains("between 0 and 1"), "{stderr}");
}
