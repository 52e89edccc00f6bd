//! The ban list: addresses (or whole networks) the host has banned, until when and why,
//! kept in a text file beside the config so bans outlive a restart. The transport
//! refuses them at the token request and at netcode's connection
//! ([`sightline_net::AddressBans`]), before a slot or a handshake is spent.
//!
//! The file holds one ban a line, in the console language's words:
//! `ADDRESS[/PREFIX] UNTIL "NAME" "REASON"`, where UNTIL is a Unix time in seconds or
//! `never`; `//` starts a comment. A line that does not read stops the server with the
//! file's path and the line's number: a ban list silently read as empty would unban
//! everyone.

use bevy::prelude::*;
use sightline_console::{parse_line, quote};
use sightline_net::{AddressBans, IpPrefix};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Most bans kept: each costs a check at every token request.
pub const MAX_BANS: usize = 4096;

/// Largest ban file read, bytes.
const MAX_BAN_FILE_BYTES: u64 = 4 << 20;

/// One ban.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ban {
    /// Who: an address or a network.
    pub prefix: IpPrefix,
    /// Until when, Unix seconds; `None` for ever.
    pub until: Option<u64>,
    /// The player's name when banned, for the list (empty for a bare address).
    pub name: String,
    /// Why.
    pub reason: String,
}

impl Ban {
    /// The ban as a line of the file.
    fn line(&self) -> String {
        let until = self.until.map_or("never".to_string(), |t| t.to_string());
        format!(
            "{} {until} {} {}",
            self.prefix,
            quote_always(&self.name),
            quote_always(&self.reason)
        )
    }

    /// Whether it is over at `now` (Unix seconds).
    fn expired(&self, now: u64) -> bool {
        self.until.is_some_and(|t| t <= now)
    }
}

/// `word` in quotes, so an empty one survives the round trip.
fn quote_always(word: &str) -> String {
    let q = quote(word);
    if q.starts_with('"') {
        q
    } else {
        format!("\"{q}\"")
    }
}

/// Now, Unix seconds.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The host's bans, and where they are kept.
#[derive(Resource, Debug, Default, Clone)]
pub struct BanList {
    bans: Vec<Ban>,
    /// The file; `None` keeps bans in memory only (tests, offline play).
    path: Option<PathBuf>,
}

impl BanList {
    /// Reads the bans in `path`; a missing file is an empty list (the first ban creates
    /// it), anything unreadable an error naming the path and line.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = match read_bounded(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Self::parse(&text, path)
    }

    /// Reads the bans in `text`, the contents of the file at `path` (which the list
    /// keeps, and errors name with the line's number).
    pub fn parse(text: &str, path: &Path) -> Result<Self, String> {
        let mut bans = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let at = |why: String| format!("{}:{}: {why}", path.display(), i + 1);
            let Some(words) = parse_line(line).into_iter().next() else {
                continue;
            };
            let [prefix, until, name, reason] = words.as_slice() else {
                return Err(at(format!(
                    "expected ADDRESS[/PREFIX] UNTIL \"NAME\" \"REASON\", found {} words",
                    words.len()
                )));
            };
            let prefix: IpPrefix = prefix.parse().map_err(at)?;
            let until =
                match until.as_str() {
                    "never" => None,
                    t => Some(t.parse::<u64>().map_err(|_| {
                        at(format!("\"{t}\" is neither Unix seconds nor \"never\""))
                    })?),
                };
            if bans.len() >= MAX_BANS {
                return Err(at(format!("more than {MAX_BANS} bans")));
            }
            bans.push(Ban {
                prefix,
                until,
                name: name.clone(),
                reason: reason.clone(),
            });
        }
        Ok(Self {
            bans,
            path: Some(path.to_path_buf()),
        })
    }

    /// The list as the file's text, which [`BanList::parse`] reads back to the same bans.
    pub fn to_text(&self) -> String {
        let mut text = String::from(
            "// Sightline bans: ADDRESS[/PREFIX] UNTIL(Unix seconds or never) \"NAME\" \
             \"REASON\"\n// Written by the server's ban and unban commands.\n",
        );
        for ban in &self.bans {
            text.push_str(&ban.line());
            text.push('\n');
        }
        text
    }

    /// The bans in force, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Ban> {
        self.bans.iter()
    }

    /// Adds a ban (replacing one of the same prefix) and saves the list.
    pub fn add(&mut self, ban: Ban) -> Result<(), String> {
        self.bans.retain(|b| b.prefix != ban.prefix);
        if self.bans.len() >= MAX_BANS {
            return Err(format!("the list holds {MAX_BANS} bans already"));
        }
        self.bans.push(ban);
        self.save()
    }

    /// Removes the ban of `prefix`, or the `n`th in the list (from 1); what was removed.
    pub fn remove(&mut self, which: &str) -> Result<Ban, String> {
        let index = match which.parse::<usize>() {
            Ok(n) if (1..=self.bans.len()).contains(&n) => n - 1,
            _ => {
                let prefix: IpPrefix = which.parse()?;
                self.bans
                    .iter()
                    .position(|b| b.prefix == prefix)
                    .ok_or_else(|| format!("{prefix} is not banned"))?
            }
        };
        let ban = self.bans.remove(index);
        self.save()?;
        Ok(ban)
    }

    /// Drops bans whose time is up at `now`; whether any was.
    pub fn expire(&mut self, now: u64) -> bool {
        let before = self.bans.len();
        self.bans.retain(|b| !b.expired(now));
        let changed = self.bans.len() != before;
        if changed && let Err(e) = self.save() {
            warn!("{e}");
        }
        changed
    }

    /// The table the transport checks.
    pub fn address_bans(&self) -> AddressBans {
        AddressBans(
            self.bans
                .iter()
                .map(|b| (b.prefix, b.reason.clone()))
                .collect(),
        )
    }

    /// Writes the list: to a temporary file, then renamed over the old one, so a crash
    /// mid-write leaves the old list whole.
    fn save(&self) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let temporary = path.with_extension("tmp");
        std::fs::write(&temporary, self.to_text())
            .and_then(|()| std::fs::rename(&temporary, path))
            .map_err(|e| format!("cannot save the bans to {}: {e}", path.display()))
    }
}

/// A file's text, refusing one larger than [`MAX_BAN_FILE_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_BAN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BAN_FILE_BYTES {
        return Err(std::io::Error::other("larger than 4 MiB"));
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Drops expired bans once a second and keeps the transport's table in step.
pub(crate) fn expire_bans(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    mut bans: ResMut<BanList>,
    mut table: ResMut<AddressBans>,
) {
    let now = time.elapsed_secs_f64();
    if now - *last >= 1.0 {
        *last = now;
        bans.expire(unix_now());
    }
    if bans.is_changed() {
        *table = bans.address_bans();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("sightline-bans-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("bans.txt")
    }

    #[test]
    fn bans_survive_a_reload_and_expire() {
        let path = temp("reload");
        let _ = std::fs::remove_file(&path);
        let mut list = BanList::load(&path).expect("a missing file is an empty list");
        list.add(Ban {
            prefix: "203.0.113.0/24".parse().unwrap(),
            until: None,
            name: String::new(),
            reason: "a whole \"network\"; of cheats".into(),
        })
        .unwrap();
        list.add(Ban {
            prefix: "198.51.100.9".parse().unwrap(),
            until: Some(1_000),
            name: "Griefer 2".into(),
            reason: String::new(),
        })
        .unwrap();
        let again = BanList::load(&path).unwrap();
        assert_eq!(again.bans.len(), 2);
        assert_eq!(again.bans[1].name, "Griefer 2");
        assert_eq!(again.bans[0].reason, "a whole network; of cheats");
        let table = again.address_bans();
        assert!(table.refusal("203.0.113.50".parse().unwrap()).is_some());
        let mut again = again;
        assert!(again.expire(1_000));
        assert!(!again.expire(1_001));
        assert_eq!(BanList::load(&path).unwrap().bans.len(), 1, "saved");
        assert_eq!(
            again.remove("1").unwrap().prefix.to_string(),
            "203.0.113.0/24"
        );
        assert!(again.remove("203.0.113.0/24").is_err());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_unreadable_line_names_the_file_and_line() {
        let path = temp("bad");
        for (text, expect) in [
            (
                "// fine\n10.0.0.1 never \"\" \"\"\n10.0.0.2 soon \"\" \"\"\n",
                ":3:",
            ),
            ("10.0.0.1/40 never \"\" \"\"\n", ":1:"),
            ("10.0.0.1 never\n", ":1:"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = BanList::load(&path).expect_err(text);
            assert!(err.contains(&format!("bans.txt{expect}")), "{err}");
        }
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
