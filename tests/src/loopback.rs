//! The real binaries over UDP on loopback: a dedicated server with bots and two headless
//! clients, started as a person would start them.

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Builds the binaries (a no-op when `cargo test` already built them) and returns the
/// folder they are in; `SIGHTLINE_BINARIES` names another folder to test instead (a
/// release build, or an older version to show a test fails on it), and nothing is built.
///
/// Built in one cargo command, as `cargo test --workspace` builds them, the server has the
/// game's Bevy features unified in, so it links rendering and audio it never uses. That
/// does not change what it does, which is what these tests check; the server as shipped,
/// built on its own, is checked by `scripts/check-server-deps`. Building it alone here
/// would relink the binary other tests may be starting at that moment.
pub(crate) fn binaries() -> PathBuf {
    if let Some(folder) = std::env::var_os("SIGHTLINE_BINARIES") {
        return PathBuf::from(folder);
    }
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "sightline-dedicated",
            "-p",
            "sightline-app",
            "-p",
            "sightline-master",
            "--bins",
        ])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the binaries failed");
    // This test runs from target/<profile>/deps/.
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .to_path_buf()
}

/// A port free for both UDP (the game) and TCP (the token service on the same number).
pub(crate) fn free_udp_port() -> u16 {
    for _ in 0..100 {
        let port = UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("a free port")
            .port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for both UDP and TCP");
}

/// Waits for a child to exit, killing it past `limit`.
pub(crate) fn wait(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("child status").is_none() {
        if start.elapsed() > limit {
            child.kill().ok();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("child output")
}

pub(crate) fn field(summary: &str, key: &str) -> u64 {
    value(summary, key)
}

/// The `key=value` field `key` of a summary or status line, parsed.
pub(crate) fn value<T: std::str::FromStr>(summary: &str, key: &str) -> T {
    summary
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {summary:?}"))
}

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
