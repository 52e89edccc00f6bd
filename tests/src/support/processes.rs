//! The real binaries: built once and found, ports for them, waiting for them, and reading
//! the `key=value` summaries they print.

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Child, Command, Output};
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
            "-p",
            "sightline-matchmaker",
            "-p",
            "sightline-relay",
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

/// The `key=value` field `key` of a summary or status line, as a count.
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

/// The repository's root, where the binaries find `maps/` and `scripts/`.
pub(crate) fn repo_root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}
