//! The browser's data, without threads or drawing: its lists and their rows, sorting and
//! filtering, the address files, and one tab's listing as a refresh fills it.

use bevy::platform::cell::SyncCell;
use bevy::prelude::*;
use sightline_protocol::{MAX_SERVER_NAME_LEN, clean_text};
use sightline_query::{GAME_FOLDER, QueryError, ServerInfo};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

use super::*;

/// Most servers History keeps, newest first.
pub const HISTORY_LIMIT: usize = 50;
/// Most favourites kept, so a hand-edited file cannot grow the page without bound.
pub const FAVOURITES_LIMIT: usize = 256;
/// Most bytes read from an address file; what follows is ignored.
pub(super) const ADDRESS_FILE_BYTES: u64 = 64 * 1024;
/// The address files, in the config file's folder.
pub(super) const FAVOURITES_FILE: &str = "favourites.txt";
pub(super) const HISTORY_FILE: &str = "history.txt";
/// Most notes (a master that did not answer) one refresh shows.
pub(super) const MAX_NOTES: usize = 16;
/// Most progress messages taken per frame: a burst of answers spreads over a few frames
/// instead of stalling one.
pub(super) const MAX_PROGRESS_PER_FRAME: usize = 512;
/// Longest map, game, version or mode shown, in bytes (what Sightline's servers send
/// at most).
pub(super) const MAX_FIELD_LEN: usize = 64;

/// The browser's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tab {
    /// Servers on the master lists.
    #[default]
    Internet,
    /// Servers on the local network.
    Lan,
    /// Servers the player keeps.
    Favourites,
    /// Servers the player joined, newest first.
    History,
}

impl Tab {
    /// Every tab, in the order shown.
    pub const ALL: [Tab; 4] = [Tab::Internet, Tab::Lan, Tab::Favourites, Tab::History];

    /// The tab's title.
    pub fn label(self) -> &'static str {
        match self {
            Tab::Internet => "Internet",
            Tab::Lan => "LAN",
            Tab::Favourites => "Favourites",
            Tab::History => "History",
        }
    }

    /// The tab a console word names (`browser lan`), in any case.
    pub fn from_word(word: &str) -> Option<Tab> {
        match word.to_ascii_lowercase().as_str() {
            "internet" => Some(Tab::Internet),
            "lan" => Some(Tab::Lan),
            "favourites" | "favorites" => Some(Tab::Favourites),
            "history" => Some(Tab::History),
            _ => None,
        }
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// What a server said, so far.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Asked; no answer yet.
    Waiting,
    /// It answered.
    Info {
        /// What it reported.
        info: ServerInfo,
        /// The round trip of its first reply.
        ping: Duration,
    },
    /// It did not answer usefully; why, in words.
    Failed(String),
}

/// One server as the browser lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The address that was asked (and answered).
    pub addr: SocketAddr,
    /// Its answer.
    pub reply: Reply,
}

impl Row {
    /// What the server reported, if it answered.
    pub fn info(&self) -> Option<&ServerInfo> {
        match &self.reply {
            Reply::Info { info, .. } => Some(info),
            _ => None,
        }
    }

    /// The server's ping, if it answered.
    pub fn ping(&self) -> Option<Duration> {
        match &self.reply {
            Reply::Info { ping, .. } => Some(*ping),
            _ => None,
        }
    }

    /// Whether joining needs a password (unknown counts as no: the server will say).
    pub fn needs_password(&self) -> bool {
        self.info().is_some_and(|i| i.password)
    }

    /// Where to join: the game port the server reports, on the address that answered.
    pub fn join_addr(&self) -> SocketAddr {
        match self.info() {
            Some(info) if info.port != 0 => SocketAddr::new(self.addr.ip(), info.port),
            _ => self.addr,
        }
    }
}

/// What a server said of itself, fit to show: its name, map, game, version and mode
/// cleaned as chat is (no control, format or bidirectional characters, compatibility
/// forms folded, one line, bounded), since whoever answers may send anything to make a
/// row lie about itself or its neighbours. The game folder is only compared, never
/// shown, and stays as sent.
pub fn shown(info: ServerInfo) -> ServerInfo {
    ServerInfo {
        name: clean_text(&info.name, MAX_SERVER_NAME_LEN),
        map: clean_text(&info.map, MAX_FIELD_LEN),
        game: clean_text(&info.game, MAX_FIELD_LEN),
        version: clean_text(&info.version, MAX_FIELD_LEN),
        keywords: clean_text(&info.keywords, MAX_FIELD_LEN),
        ..info
    }
}

/// People playing: the players who are not bots.
pub(super) fn humans(info: &ServerInfo) -> u8 {
    info.players.saturating_sub(info.bots)
}

/// One address, one spelling: IPv4-mapped IPv6 as IPv4, as the query crate answers.
pub(super) fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// The table's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Whether a password is needed.
    Lock,
    /// The server's name.
    Name,
    /// The map.
    Map,
    /// The game mode ("dm", "tdm").
    Mode,
    /// Players and slots.
    Players,
    /// Round trip time.
    Ping,
}

impl Column {
    /// Every column, left to right.
    pub const ALL: [Column; 6] = [
        Column::Lock,
        Column::Name,
        Column::Map,
        Column::Mode,
        Column::Players,
        Column::Ping,
    ];

    pub(super) fn title(self) -> &'static str {
        match self {
            Column::Lock => "🔒",
            Column::Name => "Name",
            Column::Map => "Map",
            Column::Mode => "Mode",
            Column::Players => "Players",
            Column::Ping => "Ping",
        }
    }

    pub(super) fn width(self) -> f32 {
        match self {
            Column::Lock => 26.0,
            Column::Name => 330.0,
            Column::Map => 120.0,
            Column::Mode => 60.0,
            Column::Players => 130.0,
            Column::Ping => 70.0,
        }
    }
}

/// The table's order: a column, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortBy {
    /// The column sorted on.
    pub column: Column,
    /// Largest first.
    pub descending: bool,
}

impl Default for SortBy {
    /// Nearest first.
    fn default() -> Self {
        Self {
            column: Column::Ping,
            descending: false,
        }
    }
}

impl SortBy {
    /// A click on `column`'s header: the same column again turns the order round;
    /// another sorts on it its natural way (most players first, the rest ascending).
    pub fn click(&mut self, column: Column) {
        if self.column == column {
            self.descending = !self.descending;
        } else {
            *self = Self {
                column,
                descending: column == Column::Players,
            };
        }
    }

    /// Servers that answered come first whichever the direction, ordered on the column;
    /// ties go by name, then address, so the order is the same every frame.
    pub fn compare(self, a: &Row, b: &Row) -> Ordering {
        let (x, y) = match (a.info(), b.info()) {
            (Some(x), Some(y)) => (x, y),
            (Some(_), None) => return Ordering::Less,
            (None, Some(_)) => return Ordering::Greater,
            (None, None) => return a.addr.cmp(&b.addr),
        };
        let on_column = match self.column {
            Column::Lock => x.password.cmp(&y.password),
            Column::Name => compare_text(&x.name, &y.name),
            Column::Map => compare_text(&x.map, &y.map),
            Column::Mode => compare_text(&x.keywords, &y.keywords),
            Column::Players => humans(x)
                .cmp(&humans(y))
                .then(x.players.cmp(&y.players))
                .then(x.max_players.cmp(&y.max_players)),
            Column::Ping => a.ping().cmp(&b.ping()),
        };
        let on_column = if self.descending {
            on_column.reverse()
        } else {
            on_column
        };
        on_column
            .then_with(|| compare_text(&x.name, &y.name))
            .then(a.addr.cmp(&b.addr))
    }
}

/// Case-insensitive, without allocating (a refresh re-sorts as answers arrive).
pub(super) fn compare_text(a: &str, b: &str) -> Ordering {
    a.chars()
        .flat_map(char::to_lowercase)
        .cmp(b.chars().flat_map(char::to_lowercase))
}

/// The indices of `rows` in the order `by` gives.
pub fn sorted_order(rows: &[Row], by: SortBy) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&i, &j| by.compare(&rows[i], &rows[j]));
    order
}

/// Which servers the table shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filters {
    /// Hide servers with no free slot.
    pub not_full: bool,
    /// Hide servers where nobody (bots aside) is playing.
    pub not_empty: bool,
    /// Hide servers that need a password.
    pub no_password: bool,
    /// Hide servers whose ping is this many milliseconds or more; 0 for no limit.
    pub max_ping_ms: u32,
}

impl Filters {
    /// Whether any filter is on.
    pub fn is_active(&self) -> bool {
        self.not_full || self.not_empty || self.no_password || self.max_ping_ms > 0
    }

    /// Whether `row` passes. With a filter on, a server that has not answered is hidden:
    /// nothing is known to pass.
    pub fn admits(&self, row: &Row) -> bool {
        if !self.is_active() {
            return true;
        }
        let (Some(info), Some(ping)) = (row.info(), row.ping()) else {
            return false;
        };
        let hidden = (self.not_full && info.players >= info.max_players)
            || (self.not_empty && humans(info) == 0)
            || (self.no_password && info.password)
            || (self.max_ping_ms > 0 && ping >= Duration::from_millis(self.max_ping_ms.into()));
        !hidden
    }
}

/// The addresses in an address file's text: one `IP:PORT` a line, each once, at most
/// `limit`; lines that are not an address (blank, a comment, a damaged edit) are skipped.
pub fn parse_addresses(text: &str, limit: usize) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        if out.len() >= limit {
            break;
        }
        let Ok(addr) = line.trim().parse::<SocketAddr>() else {
            continue;
        };
        let addr = canonical(addr);
        if !out.contains(&addr) {
            out.push(addr);
        }
    }
    out
}

/// An address file's text: one address a line.
pub fn render_addresses(addrs: &[SocketAddr]) -> String {
    addrs.iter().map(|a| format!("{a}\n")).collect()
}

/// Reads an address file (its first [`ADDRESS_FILE_BYTES`]); a missing or unreadable
/// file is an empty list.
pub fn load_addresses(path: &Path, limit: usize) -> Vec<SocketAddr> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    if file
        .take(ADDRESS_FILE_BYTES)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Vec::new();
    }
    // A line cut by the limit could read as another address ("1.2.3.4:270" for
    // "1.2.3.4:27015"): drop it.
    if bytes.len() as u64 == ADDRESS_FILE_BYTES {
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(end);
    }
    parse_addresses(&String::from_utf8_lossy(&bytes), limit)
}

/// Writes an address file, creating its folder; written beside and renamed, so a crash
/// never leaves half a list.
pub fn save_addresses(path: &Path, addrs: &[SocketAddr]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("txt.tmp");
    std::fs::write(&tmp, render_addresses(addrs))?;
    std::fs::rename(&tmp, path)
}

/// Puts `addr` at the front of `history`, once, keeping at most [`HISTORY_LIMIT`].
pub fn remember(history: &mut Vec<SocketAddr>, addr: SocketAddr) {
    let addr = canonical(addr);
    history.retain(|a| *a != addr);
    history.insert(0, addr);
    history.truncate(HISTORY_LIMIT);
}

/// One tab's servers and the state of its refresh.
#[derive(Default)]
pub struct Listing {
    /// The servers, in the order they were listed.
    pub rows: Vec<Row>,
    /// Servers asked in this refresh; `None` while unknown (the master lists are being
    /// fetched), and always for LAN discovery, which asks by broadcast.
    pub asked: Option<usize>,
    /// Replies heard, answers and failures.
    pub heard: usize,
    /// Servers that answered.
    pub answered: usize,
    /// What went wrong on the way (a master that did not answer).
    pub notes: Vec<String>,
    /// Whether a refresh was ever started.
    pub refreshed: bool,
    /// The refresh's channel; in a `SyncCell` since a resource must be `Sync` and only
    /// the one system holding the resource mutably reads it.
    pub(super) receiver: Option<SyncCell<Receiver<Progress>>>,
    pub(super) index: HashMap<SocketAddr, usize>,
    /// `rows`' indices in display order, and the order they are in (`None`: stale).
    pub(super) order: Vec<usize>,
    pub(super) sorted_by: Option<SortBy>,
}

impl Listing {
    /// Starts listening to a new refresh; what was listed goes. `expected` are listed at
    /// once as waiting (Favourites and History show every address, answering or not);
    /// otherwise servers are listed as they answer.
    pub fn begin(&mut self, receiver: Receiver<Progress>, expected: &[SocketAddr]) {
        *self = Self {
            refreshed: true,
            receiver: Some(SyncCell::new(receiver)),
            ..Self::default()
        };
        for &addr in expected {
            self.insert(Row {
                addr,
                reply: Reply::Waiting,
            });
        }
    }

    /// Whether a refresh is under way.
    pub fn is_running(&self) -> bool {
        self.receiver.is_some()
    }

    /// Takes what the refresh sent since the last call (at most a frame's worth). When
    /// the thread is done, so is the refresh: servers still waiting did not answer.
    /// Gives whether anything changed.
    pub fn poll(&mut self) -> bool {
        let Some(receiver) = &mut self.receiver else {
            return false;
        };
        let mut taken = Vec::new();
        let mut finished = false;
        while taken.len() < MAX_PROGRESS_PER_FRAME {
            match receiver.get().try_recv() {
                Ok(p) => taken.push(p),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    finished = true;
                    break;
                }
            }
        }
        let changed = finished || !taken.is_empty();
        for p in taken {
            self.apply(p);
        }
        if finished {
            self.receiver = None;
            for row in &mut self.rows {
                if row.reply == Reply::Waiting {
                    row.reply = Reply::Failed("no answer".into());
                }
            }
        }
        changed
    }

    /// Takes one report of the refresh.
    pub fn apply(&mut self, progress: Progress) {
        match progress {
            Progress::Asking(n) => self.asked = Some(n),
            Progress::Note(text) => {
                if self.notes.len() < MAX_NOTES {
                    self.notes.push(text);
                }
            }
            Progress::Reply(addr, result) => {
                self.heard += 1;
                let reply = match result.map(|(info, ping)| (shown(info), ping)) {
                    Ok((info, _)) if info.folder != GAME_FOLDER => {
                        Reply::Failed(format!("not a Sightline server ({})", info.game))
                    }
                    Ok((info, ping)) => {
                        self.answered += 1;
                        Reply::Info { info, ping }
                    }
                    Err(QueryError::Timeout) => Reply::Failed("no answer".into()),
                    Err(e) => Reply::Failed(e.to_string()),
                };
                let addr = canonical(addr);
                match self.index.get(&addr) {
                    Some(&i) => {
                        self.rows[i].reply = reply;
                        self.sorted_by = None;
                    }
                    // Servers that were not expected are listed once they answer.
                    None if matches!(reply, Reply::Info { .. }) => {
                        self.insert(Row { addr, reply });
                    }
                    None => {}
                }
            }
        }
    }

    /// Lists `row`, or replaces the row of its address.
    pub fn insert(&mut self, row: Row) {
        let addr = canonical(row.addr);
        match self.index.get(&addr) {
            Some(&i) => self.rows[i] = Row { addr, ..row },
            None => {
                self.index.insert(addr, self.rows.len());
                self.rows.push(Row { addr, ..row });
            }
        }
        self.sorted_by = None;
    }

    /// Takes the row of `addr` off the list.
    pub fn remove(&mut self, addr: SocketAddr) {
        let addr = canonical(addr);
        if self.index.remove(&addr).is_none() {
            return;
        }
        self.rows.retain(|r| r.addr != addr);
        self.index = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.addr, i))
            .collect();
        self.sorted_by = None;
    }

    /// The row of `addr`.
    pub fn row(&self, addr: SocketAddr) -> Option<&Row> {
        self.index.get(&canonical(addr)).map(|&i| &self.rows[i])
    }

    /// The rows to show, as indices into `rows`: those `filters` admit, in `by`'s order.
    /// Sorts again only when the rows or the order changed.
    pub fn view(&mut self, by: SortBy, filters: &Filters) -> Vec<usize> {
        if self.sorted_by != Some(by) {
            self.order = sorted_order(&self.rows, by);
            self.sorted_by = Some(by);
        }
        self.order
            .iter()
            .copied()
            .filter(|&i| filters.admits(&self.rows[i]))
            .collect()
    }

    /// Where the refresh is, in words: "12 answered / 40 asked".
    pub fn progress(&self) -> String {
        match (self.asked, self.is_running()) {
            _ if !self.refreshed => "not refreshed yet".into(),
            (Some(asked), _) => format!("{} answered / {asked} asked", self.answered),
            (None, true) => "searching…".into(),
            (None, false) => format!("{} found", self.answered),
        }
    }
}
