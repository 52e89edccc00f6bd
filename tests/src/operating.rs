//! Operating a server with the real binaries: Prometheus metrics and the health check
//! over HTTP, JSON logs, and players' lifetime statistics in SQLite that outlive a
//! restart, asked for from the host's console and the leaderboard page.

use crate::support::{Host, finished, temp_dir};
use crate::support::{binaries, free_udp_port};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on loopback.
fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// GETs `path` from `port` on loopback: the status code and the body.
fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    sightline_harness::hosting::http_get(at, path, Duration::from_secs(5))
}

/// GETs `path` until `done` accepts the answer; the answer.
fn get_until(port: u16, path: &str, done: impl Fn(u16, &str) -> bool) -> (u16, String) {
    let start = Instant::now();
    loop {
        let answer = get(port, path).unwrap_or((0, String::new()));
        if done(answer.0, &answer.1) {
            return answer;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{path} never answered as expected; last: {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A sample's value in Prometheus's text format.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// A headless client with a statistics key.
fn keyed_client(port: u16, name: &str, key: &str, seconds: &str) -> Child {
    Command::new(binaries().join("sightline"))
        .args(["--headless", "--connect", &format!("127.0.0.1:{port}")])
        .args(["--name", name, "--run-seconds", seconds, "--guid", key])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("client starts")
}

#[test]
fn metrics_health_and_lifetime_statistics_over_real_binaries() {
    let dir = temp_dir("operating");
    let port = free_udp_port();
    let metrics = free_tcp_port();
    let flags = [
        "--bots",
        "2",
        "--metrics",
        &format!("127.0.0.1:{metrics}"),
        "--stats",
        "stats.db",
        "--log-format",
        "json",
    ];
    let mut host = Host::start(&dir, port, &flags);
    let (_, health) = get_until(metrics, "/health", |code, _| code == 200);
    assert_eq!(health, "ok\n");

    let key = "00112233445566778899aabbccddeeff";
    let ann = keyed_client(port, "ann", key, "12");
    host.wait_for_player("ann");
    let (_, during) = get_until(metrics, "/metrics", |_, body| {
        body.contains("\nsightline_players 1\n")
    });
    assert_eq!(sample(&during, "sightline_bots"), 2.0);

    // The match ends with ann in it: counted, and everyone's statistics handed to the
    // database.
    host.type_line("endmatch");
    get_until(metrics, "/metrics", |_, body| {
        body.contains("\nsightline_matches_played_total 1\n")
    });
    let (ok, out) = finished(ann, "ann");
    assert!(ok, "{out}");
    let (_, text) = get_until(metrics, "/metrics", |_, body| {
        body.contains("\nsightline_players 0\n")
    });
    for counted in [
        "sightline_ticks_total",
        "sightline_tick_seconds_count",
        "sightline_snapshots_total",
        "sightline_snapshot_bytes_count",
        "sightline_sent_datagrams_total",
        "sightline_received_datagrams_total",
        "sightline_sent_bytes_total",
        "sightline_received_bytes_total",
        "sightline_tokens_issued_total",
    ] {
        assert!(sample(&text, counted) > 0.0, "{counted} in\n{text}");
    }
    assert_eq!(sample(&text, "sightline_malformed_total"), 0.0);
    assert_eq!(sample(&text, "sightline_stats_dropped_total"), 0.0);
    assert!(
        text.contains("# TYPE sightline_tick_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE sightline_kicks_total counter"),
        "{text}"
    );
    let (code, _) = get(metrics, "/nothing-here").expect("answers");
    assert_eq!(code, 404);

    // The console asks the database; the answer comes back a frame or two later.
    host.type_line("stats ann");
    let seen = host.expect(Duration::from_secs(10), |l| l.starts_with("ann: "));
    let record = seen.last().unwrap();
    assert!(record.contains("of 1 matches"), "{record}");
    host.type_line("top 5");
    host.expect(Duration::from_secs(10), |l| {
        l.contains(" ann ") && l.contains("/1")
    });
    let (code, board) = get(metrics, "/leaderboard?limit=5").expect("answers");
    assert_eq!(code, 200, "{board}");
    assert!(board.starts_with("[{\"name\":\"ann\""), "{board}");
    assert!(
        !board.contains(key),
        "the key never leaves the server: {board}"
    );

    let log = host.quit();
    assert!(log.contains("players="), "{log}");
    let db = std::fs::read(dir.join("stats.db")).expect("the database is on disk");
    assert!(
        !db.windows(16).any(|w| w
            == [
                0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
                0xee, 0xff
            ]),
        "the database keeps a hash of the key, not the key"
    );

    // After a restart the record is there, and the same key adds to it under a new name.
    let mut host = Host::start(&dir, port, &flags);
    let again = keyed_client(port, "ann-again", key, "3");
    host.wait_for_player("ann-again");
    let (ok, out) = finished(again, "ann-again");
    assert!(ok, "{out}");
    host.type_line("stats ann");
    let seen = host.expect(Duration::from_secs(10), |l| l.contains("also played as"));
    assert!(
        seen.iter().any(|l| l.starts_with("ann-again: ")),
        "found by an earlier name, shown by the latest:\n{}",
        seen.join("\n")
    );
    let lines = host.collect(Duration::from_millis(300));
    host.quit();
    let json = lines
        .iter()
        .chain(&seen)
        .any(|l| l.starts_with('{') && l.contains("\"level\":\"INFO\""));
    assert!(
        json,
        "--log-format json writes JSON lines:\n{}",
        seen.join("\n")
    );
}

#[test]
fn an_operated_server_is_scraped_and_keeps_statistics_under_load() {
    use sightline_harness::load::{HostTools, LoadConfig, load};
    let report = load(&LoadConfig {
        players: 2,
        seconds: 2.0,
        warmup: 0.5,
        operated: Some(HostTools(sightline_dedicated::operated_plugins)),
        ..Default::default()
    });
    assert!(!report.server_panicked);
    assert_eq!(report.joined, 2, "{report:?}");
    assert!(report.link.contains("--stats"), "{}", report.link);
    assert_eq!(report.refused, 0, "{report:?}");
    // The load test asserts the metrics listener answered scrapes meanwhile.
}
