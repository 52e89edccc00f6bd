//! A dedicated server with its console on standard input, started in a folder of its
//! own, and the headless clients that join it.

use crate::support::{binaries, wait};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// A dedicated server started in `dir` (where its bans file lives), with its standard
/// input open for console lines and its standard output read line by line.
pub(crate) struct Host {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    pub(crate) port: u16,
}

impl Host {
    pub(crate) fn start(dir: &Path, port: u16, extra: &[&str]) -> Self {
        let mut child = Command::new(binaries().join("sightline-server"))
            .current_dir(dir)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--map", "duel", "--run-seconds", "60"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server starts");
        let stdin = child.stdin.take().expect("stdin");
        let (send, lines) = channel();
        for out in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let send = send.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let _ = send.send(line);
                }
            });
        }
        Self {
            child,
            stdin,
            lines,
            port,
        }
    }

    /// Types `line` at the server's terminal.
    pub(crate) fn type_line(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("the server reads its console");
    }

    /// Waits up to `limit` for an output line `found` accepts; every line read on the way.
    pub(crate) fn expect(&self, limit: Duration, found: impl Fn(&str) -> bool) -> Vec<String> {
        let start = Instant::now();
        let mut seen = Vec::new();
        while let Some(left) = limit.checked_sub(start.elapsed()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = found(&line);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(_) => break,
            }
        }
        panic!(
            "not found within {limit:?}; the server printed:\n{}",
            seen.join("\n")
        );
    }

    /// The lines printed within `span`.
    pub(crate) fn collect(&self, span: Duration) -> Vec<String> {
        let until = Instant::now() + span;
        let mut seen = Vec::new();
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => break,
            }
        }
        seen
    }

    /// Types `status` until a player line names `name`; the lines of that status.
    pub(crate) fn wait_for_player(&mut self, name: &str) -> Vec<String> {
        let start = Instant::now();
        let quoted = format!("\"{name}\"");
        loop {
            self.type_line("status");
            let seen = self.collect(Duration::from_millis(500));
            if seen.iter().any(|l| l.contains(&quoted)) {
                return seen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{name} never joined; the server printed:\n{}",
                seen.join("\n")
            );
        }
    }

    /// Types `quit` and waits for a clean exit; the status line it logged on the way out.
    pub(crate) fn quit(mut self) -> String {
        self.type_line("quit");
        let out = wait(self.child, Duration::from_secs(15), "server");
        assert!(out.status.success(), "the server did not stop cleanly");
        let last = self
            .lines
            .iter()
            .filter(|l| l.contains("status: "))
            .last()
            .unwrap_or_else(|| panic!("no status line on exit"));
        last.split("status: ")
            .nth(1)
            .unwrap_or_default()
            .to_string()
    }
}

/// A headless client joining `port` as `name` for `seconds`.
pub(crate) fn client(port: u16, name: &str, seconds: &str) -> Child {
    Command::new(binaries().join("sightline"))
        .args(["--headless", "--connect", &format!("127.0.0.1:{port}")])
        .args(["--name", name, "--run-seconds", seconds])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("client starts")
}

/// What a client printed, once it has exited; and whether it succeeded.
pub(crate) fn finished(child: Child, what: &str) -> (bool, String) {
    let out = wait(child, Duration::from_secs(40), what);
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A fresh, empty folder for one test's files.
pub(crate) fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sightline-hosting-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
