//! The ban list: addresses (or whole networks) the host has banned, until when and why,
//! kept in a text file beside the config so bans outlive a restart. The transport
//! refuses them at the token request and at netcode's connection
//! ([`sightline_net::AddressBans`]), before a slot or a handshake is spent.
//!
//! The file holds one ban a line, in the console language's words:
//! `ADDRESS[/PREFIX] UNTIL "NAME" "REASON"`, where UNTIL is a Unix time in seconds or
//! `never`; `//` starts a comment. NAME and REASON are written in quotes with
//! [`sightline_console::quoted`]'s escapes (`\"`, `\\`, `\u{HEX}`), so whatever a player
//! chose as a name reads back as it was, on one line.
//!
//! A line that does not read is skipped, reported (its file and number, in the log, the
//! status line, the metrics and `banlist`) and kept as it was when the list is saved; the
//! other bans hold. A ban list read as empty would unban everyone, and a server that
//! refuses to start over one line is stopped by a player's name in a restart loop; this
//! way neither happens, and the host can mend the line.

use bevy::prelude::*;
use sightline_console::{parse_line, quoted};
use sightline_net::{AddressBans, IpPrefix};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Most bans kept: each costs a check at every token request.
pub const MAX_BANS: usize = 4096;

/// Largest ban file read, bytes; the server never writes a larger one.
pub const MAX_BAN_FILE_BYTES: usize = 4 << 20;

/// Skipped lines reported one by one; past them only their count is.
const MAX_REPORTED: usize = 16;

/// What the file's first lines say.
const HEADER: &str = "// Sightline bans: ADDRESS[/PREFIX] UNTIL(Unix seconds or never) \"NAME\" \
                      \"REASON\"\n// Written by the server's ban and unban commands.\n";

/// What stands above the lines kept unread.
const UNREAD_HEADER: &str = "// Lines the server could not read (its log says why), kept as \
                             they were for the host to mend:\n";

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
            quoted(&self.name),
            quoted(&self.reason)
        )
    }

    /// Reads a line of the file: `None` for a blank or comment line.
    fn read(line: &str) -> Result<Option<Self>, String> {
        let mut commands = parse_line(line).into_iter();
        let Some(words) = commands.next() else {
            return Ok(None);
        };
        if commands.next().is_some() {
            return Err("more than one ban on the line (an unquoted ';')".into());
        }
        let [prefix, until, name, reason] = words.as_slice() else {
            return Err(format!(
                "expected ADDRESS[/PREFIX] UNTIL \"NAME\" \"REASON\", found {} words",
                words.len()
            ));
        };
        let prefix: IpPrefix = prefix.parse()?;
        let until = match until.as_str() {
            "never" => None,
            t => Some(
                t.parse::<u64>()
                    .map_err(|_| format!("\"{t}\" is neither Unix seconds nor \"never\""))?,
            ),
        };
        Ok(Some(Self {
            prefix,
            until,
            name: name.clone(),
            reason: reason.clone(),
        }))
    }

    /// Whether it is over at `now` (Unix seconds).
    fn expired(&self, now: u64) -> bool {
        self.until.is_some_and(|t| t <= now)
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
    /// The lines of the file that did not read, each with its line break, as they were:
    /// written back on saving, so a save never loses what the host may mend.
    unread: Vec<u8>,
    /// How many lines did not read.
    skipped: usize,
    /// The first [`MAX_REPORTED`] of them: `FILE:LINE: why`.
    reports: Vec<String>,
    /// The file; `None` keeps bans in memory only (tests, offline play).
    path: Option<PathBuf>,
}

impl BanList {
    /// Reads the bans in `path`: a missing file is an empty list (the first ban creates
    /// it), and a line that does not read is skipped (see [`BanList::skipped`]).
    ///
    /// A file that cannot be read at all (no permission, a folder, larger than
    /// [`MAX_BAN_FILE_BYTES`]) is an error, and the server does not start: nothing a
    /// player sends can bring that about (the server writes whole files by renaming and
    /// never one over the limit), only the host's disk or hand, and starting without it
    /// would enforce no ban and then overwrite the host's list with the next ban.
    pub fn load(path: &Path) -> Result<Self, String> {
        let bytes = match read_bounded(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Self::parse(&bytes, path))
    }

    /// Reads the bans in `bytes`, the contents of the file at `path` (which the list
    /// keeps, and reports name with the line's number). A line that is not UTF-8 or does
    /// not read as a ban, and one past [`MAX_BANS`], is skipped and kept as it was.
    pub fn parse(bytes: &[u8], path: &Path) -> Self {
        let mut list = Self {
            path: Some(path.to_path_buf()),
            ..Self::default()
        };
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            let read = std::str::from_utf8(line)
                .map_err(|_| "not UTF-8".to_string())
                .and_then(Ban::read);
            let why = match read {
                Ok(None) => continue,
                Ok(Some(_)) if list.bans.len() >= MAX_BANS => format!("more than {MAX_BANS} bans"),
                Ok(Some(ban)) => {
                    list.bans.push(ban);
                    continue;
                }
                Err(why) => why,
            };
            list.skipped += 1;
            if list.reports.len() < MAX_REPORTED {
                list.reports
                    .push(format!("{}:{}: {why}", path.display(), i + 1));
            }
            // With its `\r`, if it had one: read again, it reads as now.
            list.unread.extend_from_slice(raw);
            list.unread.push(b'\n');
        }
        list
    }

    /// How many lines of the file did not read and were skipped.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// What the host is told at start-up of the lines skipped: `FILE:LINE: why` for the
    /// first few, then how many more there were.
    pub fn skipped_reports(&self) -> Vec<String> {
        let mut reports = self.reports.clone();
        if self.skipped > self.reports.len() {
            reports.push(format!(
                "and {} more lines of {} skipped",
                self.skipped - self.reports.len(),
                self.path
                    .as_deref()
                    .map_or_else(|| "the ban list".into(), |p| p.display().to_string())
            ));
        }
        reports
    }

    /// The list as the file's bytes, which [`BanList::parse`] reads back to the same
    /// bans, and the same lines skipped.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = HEADER.as_bytes().to_vec();
        for ban in &self.bans {
            bytes.extend_from_slice(ban.line().as_bytes());
            bytes.push(b'\n');
        }
        if !self.unread.is_empty() {
            bytes.extend_from_slice(UNREAD_HEADER.as_bytes());
            bytes.extend_from_slice(&self.unread);
        }
        bytes
    }

    /// The bans in force, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Ban> {
        self.bans.iter()
    }

    /// Adds a ban (replacing one of the same prefix) and saves the list. A list whose
    /// file would grow past [`MAX_BAN_FILE_BYTES`] takes no more, so the server never
    /// writes a file it would refuse to read.
    pub fn add(&mut self, ban: Ban) -> Result<(), String> {
        let replaced = self.bans.iter().find(|b| b.prefix == ban.prefix);
        let (count, bytes) = replaced.map_or((0, 0), |b| (1, b.line().len() + 1));
        if self.bans.len() - count >= MAX_BANS {
            return Err(format!("the list holds {MAX_BANS} bans already"));
        }
        if self.to_bytes().len() - bytes + ban.line().len() + 1 > MAX_BAN_FILE_BYTES {
            return Err(format!(
                "the ban file would grow past {} MiB",
                MAX_BAN_FILE_BYTES >> 20
            ));
        }
        self.bans.retain(|b| b.prefix != ban.prefix);
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
        std::fs::write(&temporary, self.to_bytes())
            .and_then(|()| std::fs::rename(&temporary, path))
            .map_err(|e| format!("cannot save the bans to {}: {e}", path.display()))
    }
}

/// A file's bytes, refusing one larger than [`MAX_BAN_FILE_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_BAN_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > MAX_BAN_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB",
            MAX_BAN_FILE_BYTES >> 20
        )));
    }
    Ok(bytes)
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
        assert_eq!(again.bans[0].reason, "a whole \"network\"; of cheats");
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
    fn a_player_named_with_a_quote_is_banned_and_read_back() {
        // `x"` was written bare and read back as three words: the next start exited.
        let path = temp("quote");
        let _ = std::fs::remove_file(&path);
        let mut list = BanList::load(&path).unwrap();
        let bans = [
            ("198.51.100.1", "x\"", "said \"hi\""),
            ("198.51.100.2", "\"", "\\"),
            ("198.51.100.3", "a\\\"b ;//c", "line\nbreak"),
        ];
        for (ip, name, reason) in bans {
            list.add(Ban {
                prefix: ip.parse().unwrap(),
                until: None,
                name: name.into(),
                reason: reason.into(),
            })
            .unwrap();
        }
        let again = BanList::load(&path).unwrap();
        assert_eq!(again.skipped(), 0, "{:?}", again.skipped_reports());
        assert_eq!(again.bans, list.bans);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_unreadable_line_is_skipped_reported_and_kept() {
        let path = temp("bad");
        let text = b"// fine\n10.0.0.1 never \"\" \"\"\n10.0.0.2 soon \"\" \"\"\n\
                     10.0.0.3/40 never \"\" \"\"\n10.0.0.4 never\n10.0.0.5 never \"\xff\" \"\"\r\n\
                     10.0.0.6 never \"x\" \"\"; 10.0.0.7 never \"\" \"\"\n\
                     10.0.0.8 1 \"a\"b\" \"\"\n203.0.113.0/24 never \"Zo\\u{eb}\" \"aimbot\"\n";
        std::fs::write(&path, text).unwrap();
        let mut list = BanList::load(&path).expect("bad lines are no reason not to start");
        let kept: Vec<String> = list.iter().map(|b| b.prefix.to_string()).collect();
        assert_eq!(kept, ["10.0.0.1", "203.0.113.0/24"]);
        assert_eq!(list.bans[1].name, "Zo\u{eb}");
        assert_eq!(list.skipped(), 6);
        let reports = list.skipped_reports();
        for (report, line) in reports.iter().zip([3, 4, 5, 6, 7, 8]) {
            assert!(report.contains(&format!("bans.txt:{line}: ")), "{report}");
        }
        assert!(
            reports[0].contains("neither Unix seconds"),
            "{}",
            reports[0]
        );
        assert!(reports[3].contains("not UTF-8"), "{}", reports[3]);
        // Saving keeps the skipped lines as they were, for the host to mend.
        list.add(Ban {
            prefix: "10.0.0.9".parse().unwrap(),
            until: None,
            name: String::new(),
            reason: String::new(),
        })
        .unwrap();
        let saved = std::fs::read(&path).unwrap();
        let kept: &[u8] = b"\n10.0.0.5 never \"\xff\" \"\"\r\n";
        assert!(
            saved.windows(kept.len()).any(|w| w == kept),
            "{}",
            String::from_utf8_lossy(&saved)
        );
        let again = BanList::load(&path).unwrap();
        assert_eq!(again.bans.len(), 3);
        assert_eq!(again.skipped(), 6);
        assert_eq!(again.to_bytes(), saved);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_file_that_cannot_be_read_at_all_is_an_error_and_a_missing_one_is_empty() {
        let path = temp("whole");
        let _ = std::fs::remove_file(&path);
        assert_eq!(BanList::load(&path).unwrap().iter().count(), 0);
        std::fs::create_dir_all(&path).unwrap();
        let e = BanList::load(&path).expect_err("a folder");
        assert!(e.contains("bans.txt"), "{e}");
        std::fs::remove_dir_all(&path).unwrap();
        std::fs::write(&path, vec![b'\n'; MAX_BAN_FILE_BYTES + 1]).unwrap();
        let e = BanList::load(&path).expect_err("too large");
        assert!(e.contains("larger than 4 MiB"), "{e}");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn skipped_lines_past_the_first_few_are_counted() {
        let text = "nonsense\n".repeat(MAX_REPORTED + 5);
        let list = BanList::parse(text.as_bytes(), Path::new("bans.txt"));
        assert_eq!(list.skipped(), MAX_REPORTED + 5);
        let reports = list.skipped_reports();
        assert_eq!(reports.len(), MAX_REPORTED + 1);
        assert_eq!(
            reports[MAX_REPORTED],
            "and 5 more lines of bans.txt skipped"
        );
    }

    proptest::proptest! {
        /// Whatever the name and reason, the list written reads back to the same bans
        /// and writes the same bytes again.
        #[test]
        fn any_names_and_reasons_round_trip(
            entries in proptest::collection::vec(
                (
                    proptest::prelude::any::<u32>(),
                    proptest::option::of(proptest::prelude::any::<u64>()),
                    proptest::prelude::any::<String>(),
                    proptest::prelude::any::<String>(),
                ),
                0..8,
            ),
        ) {
            let mut list = BanList::default();
            for (ip, until, name, reason) in entries {
                let prefix = IpPrefix::host(std::net::Ipv4Addr::from(ip).into());
                list.add(Ban { prefix, until, name, reason }).unwrap();
            }
            let bytes = list.to_bytes();
            let again = BanList::parse(&bytes, Path::new("bans.txt"));
            proptest::prop_assert_eq!(again.skipped(), 0, "{:?}", again.skipped_reports());
            proptest::prop_assert_eq!(&again.bans, &list.bans);
            proptest::prop_assert_eq!(again.to_bytes(), bytes);
        }
    }
}
