//! The servers a client has met, and the identity key each presented: trust on first
//! use, as SSH's `known_hosts`. A server whose key changes may have been reinstalled, or
//! someone may be between the client and it; the client says so loudly
//! ([`KeyStatus::Changed`]) but still connects, as SPAKE2 keeps the password from
//! whoever answers.
//!
//! The file is text, one `host:port hex-key` a line; other lines (comments, blank lines,
//! ones a person mangled) are reported and kept as they are.

use crate::kex::PublicKeyBytes;
use sightline_tokens::{hex, parse_key};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Most servers remembered: past it, the one remembered longest ago is forgotten.
pub const MAX_KNOWN_SERVERS: usize = 4096;
/// Most bytes of the file read (4096 lines of an IPv6 address and a key fit well).
pub const MAX_KNOWN_SERVERS_BYTES: u64 = 512 * 1024;

/// How a server's key compares with the one remembered for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStatus {
    /// Never met (or not remembering): trusted on first use.
    New,
    /// The key remembered.
    Known,
    /// Another key than the one remembered.
    Changed {
        /// The key remembered before.
        previous: PublicKeyBytes,
    },
}

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Entry {
        server: String,
        key: PublicKeyBytes,
    },
    /// Kept as it was: a comment, a blank line or one that does not read.
    Other(String),
}

/// The known-servers file, read into memory.
#[derive(Debug, Clone)]
pub struct KnownServers {
    path: PathBuf,
    lines: Vec<Line>,
    problems: Vec<String>,
}

impl KnownServers {
    /// Reads the file at `path`: a missing file is an empty list; an unreadable file or
    /// line is reported in [`Self::problems`], never fatal.
    pub fn load(path: &Path) -> Self {
        let mut known = Self {
            path: path.to_path_buf(),
            lines: Vec::new(),
            problems: Vec::new(),
        };
        let mut bytes = Vec::new();
        let read = std::fs::File::open(path)
            .and_then(|f| f.take(MAX_KNOWN_SERVERS_BYTES + 1).read_to_end(&mut bytes));
        match read {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return known,
            Err(e) => {
                known.problems.push(format!("{}: {e}", path.display()));
                return known;
            }
        }
        if bytes.len() as u64 > MAX_KNOWN_SERVERS_BYTES {
            // Keep whole lines only.
            let end = bytes[..MAX_KNOWN_SERVERS_BYTES as usize]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            bytes.truncate(end);
            known.problems.push(format!(
                "{}: longer than {MAX_KNOWN_SERVERS_BYTES} bytes; the rest is ignored",
                path.display()
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        for (number, line) in text.lines().enumerate() {
            let parsed = parse_line(line);
            if parsed.is_none() && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
                known.problems.push(format!(
                    "{}:{}: not `host:port key`; ignored",
                    path.display(),
                    number + 1
                ));
            }
            known
                .lines
                .push(parsed.unwrap_or_else(|| Line::Other(line.to_string())));
        }
        known
    }

    /// Where the list is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What could not be read, one line each.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The key remembered for `server` (`host:port`), if any.
    pub fn key_of(&self, server: &str) -> Option<PublicKeyBytes> {
        self.lines.iter().find_map(|line| match line {
            Line::Entry { server: s, key } if s == server => Some(*key),
            _ => None,
        })
    }

    /// How `key` compares with the one remembered for `server`.
    pub fn check(&self, server: &str, key: &PublicKeyBytes) -> KeyStatus {
        match self.key_of(server) {
            None => KeyStatus::New,
            Some(known) if known == *key => KeyStatus::Known,
            Some(previous) => KeyStatus::Changed { previous },
        }
    }

    /// Remembers `key` for `server` (replacing what was remembered; forgetting the
    /// oldest server past [`MAX_KNOWN_SERVERS`]) and writes the file.
    pub fn remember(&mut self, server: &str, key: PublicKeyBytes) -> io::Result<()> {
        let is_server = |line: &Line| matches!(line, Line::Entry { server: s, .. } if s == server);
        let entry = Line::Entry {
            server: server.to_string(),
            key,
        };
        match self.lines.iter().position(is_server) {
            Some(i) => {
                self.lines[i] = entry;
                // Later duplicates would only confuse the next reader.
                let mut seen = 0;
                self.lines.retain(|line| {
                    seen += usize::from(is_server(line));
                    !is_server(line) || seen == 1
                });
            }
            None => {
                let entries = |lines: &[Line]| {
                    lines
                        .iter()
                        .filter(|l| matches!(l, Line::Entry { .. }))
                        .count()
                };
                while entries(&self.lines) >= MAX_KNOWN_SERVERS {
                    if let Some(oldest) = self
                        .lines
                        .iter()
                        .position(|l| matches!(l, Line::Entry { .. }))
                    {
                        self.lines.remove(oldest);
                    }
                }
                self.lines.push(entry);
            }
        }
        self.save()
    }

    /// Writes the file (beside it, then renamed into place, so a crash never leaves half
    /// a file), creating its folder.
    pub fn save(&self) -> io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut text = String::new();
        for line in &self.lines {
            match line {
                Line::Entry { server, key } => {
                    text.push_str(server);
                    text.push(' ');
                    text.push_str(&hex(key));
                }
                Line::Other(other) => text.push_str(other),
            }
            text.push('\n');
        }
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".tmp");
        let tmp = self.path.with_file_name(name);
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }
}

/// An entry: `host:port` (a port that reads), whitespace, 64 hexadecimal digits.
fn parse_line(line: &str) -> Option<Line> {
    let mut words = line.split_whitespace();
    let (server, key) = (words.next()?, words.next()?);
    if words.next().is_some() {
        return None;
    }
    let (host, port) = server.rsplit_once(':')?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return None;
    }
    Some(Line::Entry {
        server: server.to_string(),
        key: parse_key(key)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sightline-known-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        path
    }

    #[test]
    fn keys_are_new_then_known_then_changed_and_survive_a_reload() {
        let path = temp("known_servers");
        let mut known = KnownServers::load(&path);
        assert!(known.problems().is_empty());
        let server = "127.0.0.1:27015";
        assert_eq!(known.check(server, &[1; 32]), KeyStatus::New);
        known.remember(server, [1; 32]).unwrap();
        let mut known = KnownServers::load(&path);
        assert_eq!(known.check(server, &[1; 32]), KeyStatus::Known);
        assert_eq!(
            known.check(server, &[2; 32]),
            KeyStatus::Changed { previous: [1; 32] }
        );
        known.remember(server, [2; 32]).unwrap();
        known.remember("[::1]:27015", [3; 32]).unwrap();
        let known = KnownServers::load(&path);
        assert_eq!(known.check(server, &[2; 32]), KeyStatus::Known);
        assert_eq!(known.key_of("[::1]:27015"), Some([3; 32]));
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    }

    #[test]
    fn unreadable_lines_are_reported_and_kept() {
        let path = temp("mangled");
        let good = format!("10.0.0.1:27015 {}", hex(&[7; 32]));
        let text = format!(
            "# mine\n{good}\nnonsense here\nhost:notaport {}\n\n",
            hex(&[7; 32])
        );
        std::fs::write(&path, &text).unwrap();
        let mut known = KnownServers::load(&path);
        assert_eq!(known.problems().len(), 2, "{:?}", known.problems());
        assert_eq!(known.key_of("10.0.0.1:27015"), Some([7; 32]));
        known.remember("10.0.0.2:27015", [8; 32]).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.starts_with(&text), "{after}");
    }

    #[test]
    fn the_file_and_the_list_are_bounded() {
        let path = temp("huge");
        let line = format!("10.0.0.1:27015 {}\n", hex(&[7; 32]));
        let copies = (MAX_KNOWN_SERVERS_BYTES as usize / line.len()) + 10;
        std::fs::write(&path, line.repeat(copies)).unwrap();
        let known = KnownServers::load(&path);
        assert_eq!(known.problems().len(), 1, "{:?}", known.problems());
        assert!(known.lines.len() < copies);
        let mut list = KnownServers::load(&temp("many"));
        list.lines = (0..MAX_KNOWN_SERVERS)
            .map(|i| Line::Entry {
                server: format!("10.0.{}.{}:1", i / 256, i % 256),
                key: [0; 32],
            })
            .collect();
        list.remember("192.0.2.1:1", [9; 32]).unwrap();
        assert_eq!(list.lines.len(), MAX_KNOWN_SERVERS);
        assert_eq!(list.key_of("10.0.0.0:1"), None, "the oldest is forgotten");
        assert_eq!(list.key_of("192.0.2.1:1"), Some([9; 32]));
    }
}
