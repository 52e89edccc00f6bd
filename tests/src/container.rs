//! The dedicated server's container image, built and run with podman as a host would run
//! it (`scripts/container`), with the real headless client playing against it through
//! the published ports. Skipped, with a message saying why, where podman is missing or
//! cannot run containers.

use crate::support::{binaries, field, free_udp_port, repo_root, wait};
use sightline_query::query_info;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `scripts/container`, which holds the podman settings these machines need.
fn script() -> PathBuf {
    repo_root().join("scripts/container")
}

/// `podman ARGS` through the script.
fn podman(args: &[&str]) -> Output {
    Command::new(script())
        .arg("podman")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("scripts/container runs")
}

/// Why containers cannot run here, if they cannot.
fn unusable() -> Option<String> {
    if !cfg!(target_os = "linux") {
        // Podman elsewhere runs containers in a VM, and the test reads /proc.
        return Some("containers are tested on Linux only".into());
    }
    match Command::new("podman").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        _ => return Some("podman is not installed (scripts/setup installs it)".into()),
    }
    let info = podman(&["info"]);
    (!info.status.success()).then(|| {
        format!(
            "`podman info` fails here: {}",
            String::from_utf8_lossy(&info.stderr).trim()
        )
    })
}

/// Removes the container and the image however the test ends.
struct Cleanup {
    container: String,
    image: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        podman(&["rm", "--force", "--time", "0", &self.container]);
        podman(&["rmi", "--force", &self.image]);
    }
}

/// The numbers of the `Uid:` line of `/proc/PID/status` (real, effective, saved, file
/// system), as the host sees them.
fn host_uids(pid: u32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .expect("a Uid line")
        .split_whitespace()
        .map(|n| n.parse().expect("a uid"))
        .collect()
}

/// The user id inside the process's user namespace for a host `uid`, by its `uid_map`
/// (the identity for rootful podman; a range of subordinate ids for rootless).
fn uid_inside(pid: u32, uid: u32) -> u32 {
    let map = std::fs::read_to_string(format!("/proc/{pid}/uid_map")).expect("uid_map");
    map.lines()
        .find_map(|line| {
            let n: Vec<u64> = line
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect();
            let (inside, outside, count) = (n[0], n[1], n[2]);
            let uid = u64::from(uid);
            (outside..outside + count)
                .contains(&uid)
                .then(|| (inside + uid - outside) as u32)
        })
        .unwrap_or_else(|| panic!("host uid {uid} not mapped in:\n{map}"))
}

#[test]
fn a_headless_client_plays_on_the_containerised_server() {
    if let Some(why) = unusable() {
        eprintln!("skipped: the container test needs podman: {why}");
        return;
    }
    let started = Instant::now();
    let bins = binaries();
    let id = std::process::id();
    let cleanup = Cleanup {
        container: format!("sightline-test-{id}"),
        image: format!("localhost/sightline-server:test-{id}"),
    };
    // The image from the server binary the other end-to-end tests run, so nothing is
    // compiled for it.
    let server = bins.join("sightline-server");
    let build = Command::new(script())
        .args(["build", "--tag", &cleanup.image, "--binary"])
        .arg(&server)
        .output()
        .expect("scripts/container build runs");
    assert!(
        build.status.success(),
        "building the image failed:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let user = podman(&[
        "image",
        "inspect",
        "--format",
        "{{.Config.User}}",
        &cleanup.image,
    ]);
    assert_eq!(String::from_utf8_lossy(&user.stdout).trim(), "65532:65532");

    // Settings from a server.cfg and from the environment, which wins over the file.
    let dir = std::env::temp_dir().join(format!("sightline-container-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("server.cfg");
    std::fs::write(&config, "sv_hostname \"from the file\"\nbots 1\n").unwrap();
    let port = free_udp_port();
    let published = |proto: &str| format!("127.0.0.1:{port}:{port}/{proto}");
    // Metrics on the image's exposed 9100, reached through any free host port.
    let metrics = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free TCP port")
        .port();
    let run = podman(&[
        "run",
        "--detach",
        "--name",
        &cleanup.container,
        // The same number inside and out, as scripts/container and docs/HOSTING.md publish it.
        "--publish",
        &published("udp"),
        "--publish",
        &published("tcp"),
        "--publish",
        &format!("127.0.0.1:{metrics}:9100/tcp"),
        "--volume",
        &format!("{}:/srv/sightline/server.cfg:ro", config.display()),
        "--env",
        "SIGHTLINE_SV_HOSTNAME=Contained",
        &cleanup.image,
        "--port",
        &port.to_string(),
        "--metrics",
        "0.0.0.0:9100",
        "--run-seconds",
        "40",
    ]);
    std::fs::remove_dir_all(&dir).ok();
    let error = String::from_utf8_lossy(&run.stderr);
    // Rootless podman publishes ports through slirp4netns, which needs /dev/net/tun: some
    // sandboxes (this project's among them, for users other than root) do not have it.
    if !run.status.success() && error.contains("/dev/net/tun") {
        eprintln!(
            "skipped: podman cannot publish ports here: {}",
            error.trim()
        );
        return;
    }
    assert!(
        run.status.success(),
        "the container did not start:\n{error}"
    );
    let logs = || {
        let out = podman(&["logs", &cleanup.container]);
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };

    // Not root: the server's own process, translated into the container's user ids.
    let pid = podman(&["inspect", "--format", "{{.State.Pid}}", &cleanup.container]);
    let pid: u32 = String::from_utf8_lossy(&pid.stdout)
        .trim()
        .parse()
        .expect("the container's process id");
    assert!(pid > 0, "the container is not running:\n{}", logs());
    for uid in host_uids(pid) {
        assert_eq!(uid_inside(pid, uid), 65532, "the server runs as uid {uid}");
    }

    // A2S through the published UDP port: the name from the environment, the bots from
    // the file.
    let game = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let info = loop {
        match query_info(game, Duration::from_millis(500)) {
            Ok((info, _)) => break info,
            Err(e) => assert!(
                started.elapsed() < Duration::from_secs(30),
                "no A2S answer ({e}); the server printed:\n{}",
                logs()
            ),
        }
    };
    assert_eq!(info.name, "Contained", "{info:?}");
    assert_eq!(info.bots, 1, "{info:?}");
    assert_eq!(info.map, "duel", "{info:?}");

    // The real client: a token over TCP, then the game over UDP, both through podman.
    let client = Command::new(bins.join("sightline"))
        .args(["--headless", "--connect", &game.to_string()])
        .args(["--name", "ann", "--run-seconds", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("client starts");
    let out = wait(client, Duration::from_secs(30), "client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the client failed:\n{stdout}\n{stderr}"
    );
    let summary = stdout
        .lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("no summary:\n{stdout}\n{stderr}"));
    assert_eq!(field(summary, "players_seen"), 2, "{summary}");
    assert_eq!(field(summary, "players_moved"), 2, "{summary}");
    assert_eq!(field(summary, "malformed"), 0, "{summary}");
    assert_eq!(field(summary, "sessions"), 1, "{summary}");
    assert!(field(summary, "snapshots") > 100, "{summary}");

    // The health check through the published metrics port: the map loaded and ticking.
    let mut http = TcpStream::connect((Ipv4Addr::LOCALHOST, metrics)).expect("metrics port");
    http.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    http.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    http.read_to_string(&mut reply).ok();
    assert!(reply.starts_with("HTTP/1.1 200"), "/health: {reply}");

    // A stop is a clean shutdown (podman sends SIGTERM first).
    let stop = podman(&["stop", "--time", "10", &cleanup.container]);
    assert!(stop.status.success(), "{stop:?}");
    let log = logs();
    assert!(log.contains("ann joined"), "{log}");
    assert!(log.contains("shutting down (signal)"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}
