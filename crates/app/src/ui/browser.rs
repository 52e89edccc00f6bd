//! The server browser, the main menu's "Find servers" page: four lists (Internet, from
//! the master lists named by `cl_masters`; LAN, by broadcast; Favourites and History,
//! kept in files beside the config file), each refreshed on a background thread whose
//! answers stream in through a channel, so no frame waits on the network. Joining goes
//! through [`join_server`], the menu's own Connect.
//!
//! The logic is plain data and functions (sorting, filtering, the address files, a
//! refresh's state); the egui page at the bottom draws it and turns clicks into calls.

use crate::args::RemoteSecurity;
use crate::cvars::cvar;
use crate::session::{AppState, Session, SessionRequest, Target, join_server};
use bevy::platform::cell::SyncCell;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_client::ConnectionStatus;
use sightline_console::{ConfigFile, Console, ConsoleCommands, Cvars, RunCommand};
use sightline_protocol::{MAX_SERVER_NAME_LEN, clean_text};
use sightline_query::{
    DEFAULT_MASTER_PORT, GAME_FOLDER, LAN_PORTS, ListScreen, QueryError, ServerInfo, discover_lan,
    fetch_server_list, query_many,
};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::Duration;

/// Most servers History keeps, newest first.
pub const HISTORY_LIMIT: usize = 50;
/// Most favourites kept, so a hand-edited file cannot grow the page without bound.
pub const FAVOURITES_LIMIT: usize = 256;
/// Most bytes read from an address file; what follows is ignored.
const ADDRESS_FILE_BYTES: u64 = 64 * 1024;
/// The address files, in the config file's folder.
const FAVOURITES_FILE: &str = "favourites.txt";
const HISTORY_FILE: &str = "history.txt";
/// How long each server has to answer A2S_INFO.
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long each master list has to send its list.
const MASTER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long LAN discovery listens after its broadcast.
const LAN_TIMEOUT: Duration = Duration::from_millis(1500);
/// Most master lists one refresh asks (they are asked one after another).
const MAX_MASTERS: usize = 8;
/// Most notes (a master that did not answer) one refresh shows.
const MAX_NOTES: usize = 16;
/// Most progress messages taken per frame: a burst of answers spreads over a few frames
/// instead of stalling one.
const MAX_PROGRESS_PER_FRAME: usize = 512;
/// Longest map, game, version or mode shown, in bytes (what Sightline's servers send
/// at most).
const MAX_FIELD_LEN: usize = 64;

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

    fn index(self) -> usize {
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
fn humans(info: &ServerInfo) -> u8 {
    info.players.saturating_sub(info.bots)
}

/// One address, one spelling: IPv4-mapped IPv6 as IPv4, as the query crate answers.
fn canonical(addr: SocketAddr) -> SocketAddr {
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

    fn title(self) -> &'static str {
        match self {
            Column::Lock => "🔒",
            Column::Name => "Name",
            Column::Map => "Map",
            Column::Mode => "Mode",
            Column::Players => "Players",
            Column::Ping => "Ping",
        }
    }

    fn width(self) -> f32 {
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
fn compare_text(a: &str, b: &str) -> Ordering {
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

/// The master lists `cl_masters` names: comma-separated, blanks dropped, each once, at
/// most [`MAX_MASTERS`].
pub fn parse_masters(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if out.len() < MAX_MASTERS && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}

/// A master's address: `HOST:PORT`, or `HOST` (or a bare IP) on the default master port.
/// Runs on the refresh thread: a host name may wait on DNS.
fn resolve_master(name: &str) -> Result<SocketAddr, String> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_MASTER_PORT));
    }
    let target = if name.contains(':') {
        name.to_owned()
    } else {
        format!("{name}:{DEFAULT_MASTER_PORT}")
    };
    target
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve: {e}"))?
        .next()
        .ok_or_else(|| "resolves to no address".to_owned())
}

/// What one refresh does on its thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// Fetch the lists of these masters (`HOST:PORT`), then ask every server on them.
    Internet {
        /// The masters, as `cl_masters` names them.
        masters: Vec<String>,
    },
    /// Broadcast on the local network, on these ports.
    Lan {
        /// The ports asked.
        ports: RangeInclusive<u16>,
    },
    /// Ask these servers.
    Addresses(Vec<SocketAddr>),
}

/// What a refresh thread reports, in order; its channel closes when it is done.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// This many servers are being asked.
    Asking(usize),
    /// Something to show under the list (a master that did not answer).
    Note(String),
    /// One server's answer, or why there was none.
    Reply(SocketAddr, Result<(ServerInfo, Duration), QueryError>),
}

/// Runs `job` on a thread of its own; its progress comes through the receiver, which
/// disconnects when the job is over.
pub fn spawn_refresh(job: Job) -> Receiver<Progress> {
    let (tx, rx) = channel();
    let report = tx.clone();
    let started = std::thread::Builder::new()
        .name("server-browser".into())
        .spawn(move || run_job(job, &tx));
    if let Err(e) = started {
        let _ = report.send(Progress::Note(format!("cannot start the refresh: {e}")));
    }
    rx
}

fn run_job(job: Job, tx: &Sender<Progress>) {
    // A send fails only when the page stopped listening (a newer refresh): the answers
    // are then of no use, and the thread ends at its timeouts.
    let send = |p: Progress| {
        let _ = tx.send(p);
    };
    match job {
        Job::Internet { masters } => {
            // A master is a stranger: its list is screened (nothing nearer than the
            // master, a few ports a host, a bounded number), and what was left out said.
            let mut screen = ListScreen::new();
            let mut servers = Vec::new();
            for name in &masters {
                let list = resolve_master(name).and_then(|master| {
                    fetch_server_list(master, sightline_protocol::PROTOCOL_VERSION, MASTER_TIMEOUT)
                        .map(|list| (master, list))
                        .map_err(|e| e.to_string())
                });
                match list {
                    Ok((master, list)) => servers.extend(screen.admit(master, &list)),
                    Err(e) => send(Progress::Note(format!("master {name}: {e}"))),
                }
            }
            if screen.skipped().total() > 0 {
                send(Progress::Note(screen.skipped().to_string()));
            }
            ask(&servers, &send);
        }
        Job::Lan { ports } => {
            let found = fold_local_duplicates(discover_lan(ports, LAN_TIMEOUT), is_own_address);
            for (addr, info, ping) in found {
                send(Progress::Reply(addr, Ok((info, ping))));
            }
        }
        Job::Addresses(addrs) => ask(&addrs, &send),
    }
}

/// A server on this machine answers LAN discovery twice: the loopback ask, and the
/// broadcast from the machine's LAN address. It is listed once, at loopback.
fn fold_local_duplicates(
    found: Vec<(SocketAddr, ServerInfo, Duration)>,
    is_own: impl Fn(IpAddr) -> bool,
) -> Vec<(SocketAddr, ServerInfo, Duration)> {
    let on_loopback: HashSet<u16> = found
        .iter()
        .filter(|(a, ..)| a.ip().is_loopback())
        .map(|(a, ..)| a.port())
        .collect();
    found
        .into_iter()
        .filter(|(a, ..)| {
            a.ip().is_loopback() || !on_loopback.contains(&a.port()) || !is_own(a.ip())
        })
        .collect()
}

/// Whether `ip` is this machine's: the route to it leaves from it. Connecting a UDP
/// socket only picks the route; nothing is sent.
fn is_own_address(ip: IpAddr) -> bool {
    let any: IpAddr = if ip.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    };
    UdpSocket::bind((any, 0))
        .and_then(|s| {
            s.connect((ip, 9))?;
            s.local_addr()
        })
        .is_ok_and(|local| local.ip() == ip)
}

fn ask(addrs: &[SocketAddr], send: &impl Fn(Progress)) {
    send(Progress::Asking(addrs.len()));
    query_many(addrs, QUERY_TIMEOUT, |addr, result| {
        send(Progress::Reply(addr, result))
    });
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
    receiver: Option<SyncCell<Receiver<Progress>>>,
    index: HashMap<SocketAddr, usize>,
    /// `rows`' indices in display order, and the order they are in (`None`: stale).
    order: Vec<usize>,
    sorted_by: Option<SortBy>,
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

/// The password prompt for a server that needs one.
struct PasswordPrompt {
    addr: SocketAddr,
    /// Whether the join is to watch rather than play.
    watch: bool,
    name: String,
    password: String,
    focused: bool,
}

impl std::fmt::Debug for PasswordPrompt {
    /// Without the password, which has no business in a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordPrompt")
            .field("addr", &self.addr)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The server browser: its lists, their order and filters, the selection, and the
/// favourites and history it keeps in files beside the config file.
#[derive(Resource)]
pub struct ServerBrowser {
    /// Whether the menu shows the browser instead of its main page.
    pub open: bool,
    /// The list shown.
    pub tab: Tab,
    /// The table's order.
    pub sort: SortBy,
    /// Which servers the table shows.
    pub filters: Filters,
    /// The selected server (the address that answered).
    pub selected: Option<SocketAddr>,
    listings: [Listing; 4],
    favourites: Vec<SocketAddr>,
    history: Vec<SocketAddr>,
    /// The folder of the address files; `None` when there is no config folder.
    dir: Option<PathBuf>,
    /// The last problem saving a file, for the page.
    problem: Option<String>,
    prompt: Option<PasswordPrompt>,
    new_favourite: String,
}

impl FromWorld for ServerBrowser {
    fn from_world(world: &mut World) -> Self {
        let dir = world
            .get_resource::<ConfigFile>()
            .and_then(|c| c.path.as_deref()?.parent().map(Path::to_path_buf));
        Self::new(dir)
    }
}

impl ServerBrowser {
    /// A closed browser keeping its files in `dir`, with the favourites and history
    /// read from there.
    pub fn new(dir: Option<PathBuf>) -> Self {
        let load = |file: &str, limit| {
            dir.as_ref()
                .map_or_else(Vec::new, |d| load_addresses(&d.join(file), limit))
        };
        Self {
            open: false,
            tab: Tab::default(),
            sort: SortBy::default(),
            filters: Filters::default(),
            selected: None,
            listings: Default::default(),
            favourites: load(FAVOURITES_FILE, FAVOURITES_LIMIT),
            history: load(HISTORY_FILE, HISTORY_LIMIT),
            dir,
            problem: None,
            prompt: None,
            new_favourite: String::new(),
        }
    }

    /// A tab's list.
    pub fn listing(&self, tab: Tab) -> &Listing {
        &self.listings[tab.index()]
    }

    /// The favourites, in the order added.
    pub fn favourites(&self) -> &[SocketAddr] {
        &self.favourites
    }

    /// The servers joined, newest first.
    pub fn history(&self) -> &[SocketAddr] {
        &self.history
    }

    /// Opens the page where it was left; the first time, on Internet if a master list is
    /// set, on LAN if not.
    pub fn open_page(&mut self, masters: &str) {
        let first = !self.listings.iter().any(|l| l.refreshed);
        let tab = if first && parse_masters(masters).is_empty() {
            Tab::Lan
        } else {
            self.tab
        };
        self.open_on(tab, masters);
    }

    /// Opens the page on `tab`, refreshing it if it never was.
    pub fn open_on(&mut self, tab: Tab, masters: &str) {
        self.open = true;
        self.show(tab);
        if !self.listing(tab).refreshed {
            self.refresh(tab, masters);
        }
    }

    /// Shows `tab`.
    pub fn show(&mut self, tab: Tab) {
        if self.tab != tab {
            self.tab = tab;
            self.selected = None;
        }
    }

    /// Starts refreshing `tab` on a background thread (`masters`: `cl_masters`); what it
    /// listed goes. With no masters set, the Internet tab is left empty: the page says
    /// how to set them.
    pub fn refresh(&mut self, tab: Tab, masters: &str) {
        let (job, expected) = match tab {
            Tab::Internet => {
                let masters = parse_masters(masters);
                if masters.is_empty() {
                    self.listings[tab.index()] = Listing {
                        refreshed: true,
                        ..Listing::default()
                    };
                    return;
                }
                (Job::Internet { masters }, Vec::new())
            }
            Tab::Lan => (Job::Lan { ports: LAN_PORTS }, Vec::new()),
            Tab::Favourites => (
                Job::Addresses(self.favourites.clone()),
                self.favourites.clone(),
            ),
            Tab::History => (Job::Addresses(self.history.clone()), self.history.clone()),
        };
        self.listings[tab.index()].begin(spawn_refresh(job), &expected);
    }

    /// Takes what every running refresh sent; gives whether anything changed.
    pub fn poll(&mut self) -> bool {
        let mut changed = false;
        for listing in &mut self.listings {
            changed |= listing.poll();
        }
        changed
    }

    /// Whether `addr` is a favourite.
    pub fn is_favourite(&self, addr: SocketAddr) -> bool {
        self.favourites.contains(&canonical(addr))
    }

    /// Adds a favourite (listed with what is known of it) and saves the file.
    pub fn add_favourite(&mut self, row: Row) {
        let addr = canonical(row.addr);
        if self.favourites.contains(&addr) {
            return;
        }
        if self.favourites.len() >= FAVOURITES_LIMIT {
            self.problem = Some(format!("at most {FAVOURITES_LIMIT} favourites"));
            return;
        }
        self.favourites.push(addr);
        self.listings[Tab::Favourites.index()].insert(row);
        self.save(FAVOURITES_FILE);
    }

    /// Removes a favourite and saves the file.
    pub fn remove_favourite(&mut self, addr: SocketAddr) {
        let addr = canonical(addr);
        self.favourites.retain(|a| *a != addr);
        self.listings[Tab::Favourites.index()].remove(addr);
        if self.tab == Tab::Favourites && self.selected == Some(addr) {
            self.selected = None;
        }
        self.save(FAVOURITES_FILE);
    }

    /// Records a successful join at the front of History and saves the file.
    pub fn remember_join(&mut self, addr: SocketAddr) {
        remember(&mut self.history, addr);
        self.save(HISTORY_FILE);
    }

    fn save(&mut self, file: &str) {
        let Some(dir) = &self.dir else {
            return;
        };
        let list = if file == HISTORY_FILE {
            &self.history
        } else {
            &self.favourites
        };
        let path = dir.join(file);
        self.problem = save_addresses(&path, list)
            .err()
            .map(|e| format!("cannot save {}: {e}", path.display()));
        if let Some(problem) = &self.problem {
            warn!("{problem}");
        }
    }
}

/// The browser: its resource, the `browser` console command, History's record of
/// joins, and its page in the main menu.
pub struct BrowserPlugin;

impl Plugin for BrowserPlugin {
    fn build(&self, app: &mut App) {
        app.world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default)
            .register(
                "browser",
                "browser [internet|lan|favourites|history]: open the server browser (main menu)",
            );
        app.init_resource::<ServerBrowser>()
            .add_systems(Update, (console_command, poll_refreshes, record_joins))
            .add_systems(
                EguiPrimaryContextPass,
                draw_browser.run_if(in_state(AppState::Menu)),
            );
    }
}

const USAGE: &str = "usage: browser [internet|lan|favourites|history]";

fn console_command(
    mut run: MessageReader<RunCommand>,
    mut browser: ResMut<ServerBrowser>,
    cvars: Res<Cvars>,
    mut console: ResMut<Console>,
) {
    for cmd in run.read().filter(|c| c.name == "browser") {
        let masters = cvars.read(cvar::CL_MASTERS);
        match cmd.args.as_slice() {
            [] => browser.open_page(&masters),
            [word] => match Tab::from_word(word) {
                Some(tab) => browser.open_on(tab, &masters),
                None => console.print(USAGE),
            },
            _ => console.print(USAGE),
        }
    }
}

fn poll_refreshes(mut browser: ResMut<ServerBrowser>) {
    // Change detection only when a refresh reported something.
    if browser.bypass_change_detection().poll() {
        browser.set_changed();
    }
}

/// History gets the server of every session that got connected.
fn record_joins(
    status: Res<ConnectionStatus>,
    session: Res<Session>,
    mut browser: ResMut<ServerBrowser>,
    mut was_connected: Local<bool>,
) {
    let connected = status.is_connected();
    if let Some(addr) = newly_joined(*was_connected, connected, session.last.as_ref()) {
        browser.remember_join(addr);
    }
    *was_connected = connected;
}

/// The server just joined, if the connection has just come up to a remote one (offline
/// practice is no server to go back to). A reconnection counts again: it moves the
/// server to the front.
fn newly_joined(was_connected: bool, connected: bool, last: Option<&Target>) -> Option<SocketAddr> {
    match last {
        Some(Target::Remote(addr)) if connected && !was_connected => Some(*addr),
        _ => None,
    }
}

const ROW_HEIGHT: f32 = 20.0;
const TABLE_HEIGHT: f32 = 340.0;
const ERROR_COLOUR: egui::Color32 = egui::Color32::from_rgb(255, 120, 100);

fn table_width() -> f32 {
    Column::ALL.iter().map(|c| c.width()).sum()
}

/// What a click on the page asks for.
enum Action {
    /// Join the server at this address: to play, or (`watch`) as a spectator.
    Join {
        addr: SocketAddr,
        watch: bool,
    },
    Refresh,
}

fn draw_browser(
    mut contexts: EguiContexts,
    mut browser: ResMut<ServerBrowser>,
    cvars: Res<Cvars>,
    session: Res<Session>,
    mut security: ResMut<RemoteSecurity>,
    mut requests: MessageWriter<SessionRequest>,
) -> Result {
    if !browser.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let masters = cvars.read(cvar::CL_MASTERS);
    let browser = &mut *browser;
    let mut action = None;
    egui::Window::new("Find servers")
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .collapsible(false)
        .resizable(false)
        .min_width(table_width())
        .show(ctx, |ui| {
            if let Some(reason) = &session.ended {
                ui.colored_label(ERROR_COLOUR, reason);
            }
            action = page(ui, browser, &masters);
        });
    match action {
        Some(Action::Refresh) => browser.refresh(browser.tab, &masters),
        Some(Action::Join { addr, watch }) => {
            let row = browser.listing(browser.tab).row(addr).cloned();
            match row {
                Some(row) if row.needs_password() => {
                    browser.prompt = Some(PasswordPrompt {
                        addr: row.join_addr(),
                        watch,
                        name: row.info().map_or_else(String::new, |i| i.name.clone()),
                        password: String::new(),
                        focused: false,
                    });
                }
                Some(row) => {
                    let target = target(row.join_addr(), watch);
                    join_server(target, "", &mut security, &mut requests);
                }
                None => {}
            }
        }
        None => {}
    }
    if let Some((addr, watch, password)) = password_prompt(ctx, &mut browser.prompt) {
        join_server(target(addr, watch), &password, &mut security, &mut requests);
    }
    Ok(())
}

/// The page: tabs, the refresh bar, filters, the table, the buttons.
fn page(ui: &mut egui::Ui, browser: &mut ServerBrowser, masters: &str) -> Option<Action> {
    let mut action = None;
    ui.horizontal(|ui| {
        for tab in Tab::ALL {
            if ui
                .selectable_label(browser.tab == tab, tab.label())
                .clicked()
                && browser.tab != tab
            {
                browser.show(tab);
                if !browser.listing(tab).refreshed {
                    action = Some(Action::Refresh);
                }
            }
        }
    });
    ui.separator();
    let tab = browser.tab;
    ui.horizontal(|ui| {
        if ui.button("Refresh").clicked() {
            action = Some(Action::Refresh);
        }
        let listing = browser.listing(tab);
        if listing.is_running() {
            ui.spinner();
        }
        ui.label(listing.progress());
        if listing.is_running()
            && let Some(asked) = listing.asked.filter(|&n| n > 0)
        {
            ui.add(
                egui::ProgressBar::new(listing.heard as f32 / asked as f32).desired_width(160.0),
            );
        }
    });
    ui.horizontal(|ui| {
        let f = &mut browser.filters;
        ui.label("Show only:");
        ui.checkbox(&mut f.not_full, "not full");
        ui.checkbox(&mut f.not_empty, "not empty");
        ui.checkbox(&mut f.no_password, "no password");
        ui.label("ping below");
        ui.add(
            egui::DragValue::new(&mut f.max_ping_ms)
                .range(0..=999)
                .suffix(" ms"),
        );
        ui.weak("(0: any)");
    });
    if tab == Tab::Internet && parse_masters(masters).is_empty() {
        ui.colored_label(
            ERROR_COLOUR,
            "No master list set: type `cl_masters HOST:PORT` in the console (` key), \
             comma-separated for several. LAN, Favourites and History work without one.",
        );
    }
    if tab == Tab::Favourites && browser.favourites().is_empty() {
        ui.weak(
            "No favourites yet: select a server on another tab and press \"Add to \
             favourites\", or add an address below.",
        );
    }
    if tab == Tab::History && browser.history().is_empty() {
        ui.weak("No servers joined yet.");
    }
    for note in &browser.listing(tab).notes {
        ui.colored_label(ERROR_COLOUR, note);
    }
    ui.separator();
    if let Some(addr) = table(ui, browser) {
        action = Some(Action::Join { addr, watch: false });
    }
    ui.separator();
    ui.horizontal(|ui| {
        let selected = browser.selected;
        if ui
            .add_enabled(selected.is_some(), egui::Button::new("Join"))
            .clicked()
            && let Some(addr) = selected
        {
            action = Some(Action::Join { addr, watch: false });
        }
        if ui
            .add_enabled(selected.is_some(), egui::Button::new("Spectate"))
            .on_hover_text("watch the game a few seconds behind, without playing")
            .clicked()
            && let Some(addr) = selected
        {
            action = Some(Action::Join { addr, watch: true });
        }
        match selected {
            Some(addr) if browser.is_favourite(addr) => {
                if ui.button("Remove from favourites").clicked() {
                    browser.remove_favourite(addr);
                }
            }
            _ => {
                let row = selected.and_then(|a| browser.listing(tab).row(a).cloned());
                if ui
                    .add_enabled(row.is_some(), egui::Button::new("Add to favourites"))
                    .clicked()
                    && let Some(row) = row
                {
                    browser.add_favourite(row);
                }
            }
        }
        if tab == Tab::Favourites {
            ui.separator();
            ui.add(
                egui::TextEdit::singleline(&mut browser.new_favourite)
                    .hint_text("IP:PORT")
                    .desired_width(150.0),
            );
            if ui.button("Add address").clicked() {
                match browser.new_favourite.trim().parse::<SocketAddr>() {
                    Ok(addr) => {
                        browser.new_favourite.clear();
                        browser.add_favourite(Row {
                            addr,
                            reply: Reply::Waiting,
                        });
                    }
                    Err(_) => browser.problem = Some("expected an address, IP:PORT".into()),
                }
            }
        }
        if ui.button("Back").clicked() {
            browser.open = false;
        }
    });
    if let Some(problem) = &browser.problem {
        ui.colored_label(ERROR_COLOUR, problem);
    }
    action
}

/// The table: headers that sort, rows that select and join. Gives the server to join
/// (a double click, or Enter on the selection).
fn table(ui: &mut egui::Ui, browser: &mut ServerBrowser) -> Option<SocketAddr> {
    let width = table_width();
    let text_colour = ui.visuals().text_color();
    let font = egui::TextStyle::Body.resolve(ui.style());
    let (header, _) = ui.allocate_exact_size(egui::vec2(width, ROW_HEIGHT), egui::Sense::hover());
    let mut x = header.left();
    for column in Column::ALL {
        let cell = egui::Rect::from_min_size(
            egui::pos2(x, header.top()),
            egui::vec2(column.width(), ROW_HEIGHT),
        );
        x += column.width();
        let response = ui.interact(
            cell,
            ui.id().with(("browser header", column as u8)),
            egui::Sense::click(),
        );
        if response.clicked() {
            browser.sort.click(column);
        }
        let arrow = match browser.sort {
            s if s.column != column => "",
            s if s.descending => " ⏷",
            _ => " ⏶",
        };
        let colour = if response.hovered() {
            ui.visuals().strong_text_color()
        } else {
            text_colour
        };
        ui.painter().with_clip_rect(cell).text(
            cell.left_center() + egui::vec2(4.0, 0.0),
            egui::Align2::LEFT_CENTER,
            format!("{}{arrow}", column.title()),
            font.clone(),
            colour,
        );
    }

    let tab = browser.tab;
    let (sort, filters) = (browser.sort, browser.filters);
    let visible = browser.listings[tab.index()].view(sort, &filters);
    // A field borrow, not `listing()`: the selection changes below while rows are read.
    let listing = &browser.listings[tab.index()];
    let mut clicked = None;
    let mut joined = None;
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .max_height(TABLE_HEIGHT)
        .min_scrolled_height(TABLE_HEIGHT)
        .show_rows(ui, ROW_HEIGHT, visible.len(), |ui, range| {
            for &i in &visible[range] {
                let row = &listing.rows[i];
                let selected = browser.selected == Some(row.addr);
                let (rect, response) =
                    ui.allocate_exact_size(egui::vec2(width, ROW_HEIGHT), egui::Sense::click());
                let visuals = ui.visuals();
                if selected {
                    ui.painter()
                        .rect_filled(rect, 2.0, visuals.selection.bg_fill);
                } else if response.hovered() {
                    ui.painter()
                        .rect_filled(rect, 2.0, visuals.widgets.hovered.weak_bg_fill);
                }
                let colour = match (&row.reply, selected) {
                    (_, true) => visuals.selection.stroke.color,
                    (Reply::Info { .. }, false) => text_colour,
                    _ => visuals.weak_text_color(),
                };
                let mut x = rect.left();
                for (column, text) in Column::ALL.into_iter().zip(cells(row)) {
                    let cell = egui::Rect::from_min_size(
                        egui::pos2(x, rect.top()),
                        egui::vec2(column.width() - 4.0, ROW_HEIGHT),
                    );
                    x += column.width();
                    ui.painter().with_clip_rect(cell).text(
                        cell.left_center() + egui::vec2(4.0, 0.0),
                        egui::Align2::LEFT_CENTER,
                        text,
                        font.clone(),
                        colour,
                    );
                }
                if response.clicked() {
                    clicked = Some(row.addr);
                }
                if response.double_clicked() {
                    joined = Some(row.addr);
                }
                response.on_hover_text(row.addr.to_string());
            }
        });
    if let Some(addr) = clicked {
        browser.selected = Some(addr);
    }
    // The keyboard works the table unless a text field or the password prompt has it.
    let keys_free = !ui.ctx().egui_wants_keyboard_input() && browser.prompt.is_none();
    if keys_free {
        let (enter, up, down) = ui.input(|i| {
            (
                i.key_pressed(egui::Key::Enter),
                i.key_pressed(egui::Key::ArrowUp),
                i.key_pressed(egui::Key::ArrowDown),
            )
        });
        let at = browser
            .selected
            .and_then(|s| visible.iter().position(|&i| listing.rows[i].addr == s));
        let next = match (at, up, down) {
            (None, _, true) => Some(0),
            (Some(at), true, _) => Some(at.saturating_sub(1)),
            (Some(at), _, true) => Some((at + 1).min(visible.len().saturating_sub(1))),
            _ => None,
        };
        if let Some(&i) = next.and_then(|n| visible.get(n)) {
            browser.selected = Some(listing.rows[i].addr);
        }
        if enter && joined.is_none() {
            joined = browser.selected;
        }
    }
    joined
}

/// A row's cells, left to right.
fn cells(row: &Row) -> [String; 6] {
    match &row.reply {
        Reply::Info { info, ping } => [
            if info.password { "🔒" } else { "" }.into(),
            info.name.clone(),
            info.map.clone(),
            info.keywords.clone(),
            match info.bots {
                0 => format!("{}/{}", info.players, info.max_players),
                1 => format!("{}/{} (1 bot)", info.players, info.max_players),
                bots => format!("{}/{} ({bots} bots)", info.players, info.max_players),
            },
            format!("{} ms", ping.as_millis()),
        ],
        Reply::Waiting => [
            String::new(),
            row.addr.to_string(),
            "asking…".into(),
            String::new(),
            String::new(),
            String::new(),
        ],
        Reply::Failed(why) => [
            String::new(),
            row.addr.to_string(),
            why.clone(),
            String::new(),
            String::new(),
            String::new(),
        ],
    }
}

/// The password prompt, while one is open; gives the server and password to join with.
/// What joining `addr` is: to play, or (`watch`) as a spectator.
fn target(addr: SocketAddr, watch: bool) -> Target {
    match watch {
        true => Target::Spectate(addr),
        false => Target::Remote(addr),
    }
}

/// The password prompt of a server that needs one: the address, whether the join is to
/// watch, and the password, once given.
fn password_prompt(
    ctx: &egui::Context,
    prompt: &mut Option<PasswordPrompt>,
) -> Option<(SocketAddr, bool, String)> {
    let open = prompt.as_mut()?;
    let mut decided = None;
    let modal = egui::Modal::new(egui::Id::new("server password")).show(ctx, |ui| {
        ui.heading(format!("\"{}\" needs a password", open.name));
        let edit = ui.add(
            egui::TextEdit::singleline(&mut open.password)
                .password(true)
                .hint_text("password"),
        );
        if !open.focused {
            edit.request_focus();
            open.focused = true;
        }
        let entered = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        ui.horizontal(|ui| {
            if ui.button("Join").clicked() || entered {
                decided = Some(true);
            }
            if ui.button("Cancel").clicked() {
                decided = Some(false);
            }
        });
    });
    if modal.should_close() {
        decided.get_or_insert(false);
    }
    match decided? {
        true => prompt.take().map(|p| (p.addr, p.watch, p.password)),
        false => {
            *prompt = None;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_query::{
        Announcer, Answer, Master, MasterConfig, PlayerInfo, QuerySource, Responder,
    };
    use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
    use std::sync::{Arc, Condvar, Mutex};
    use std::thread::JoinHandle;
    use std::time::Instant;

    fn info(name: &str, players: u8, bots: u8, max: u8, password: bool) -> ServerInfo {
        ServerInfo {
            name: name.into(),
            map: format!("{name}-map"),
            players,
            bots,
            max_players: max,
            password,
            keywords: "dm".into(),
            port: 27015,
            ..ServerInfo::default()
        }
    }

    fn row(port: u16, info: ServerInfo, ping_ms: u64) -> Row {
        Row {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            reply: Reply::Info {
                info,
                ping: Duration::from_millis(ping_ms),
            },
        }
    }

    fn sample_rows() -> Vec<Row> {
        vec![
            row(1, info("bravo", 4, 0, 8, false), 80),
            row(2, info("Alpha", 8, 2, 8, true), 20),
            Row {
                addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 3)),
                reply: Reply::Failed("no answer".into()),
            },
            row(4, info("charlie", 3, 3, 16, false), 150),
        ]
    }

    fn names(rows: &[Row], order: &[usize]) -> Vec<String> {
        order
            .iter()
            .map(|&i| {
                rows[i]
                    .info()
                    .map_or_else(|| rows[i].addr.to_string(), |x| x.name.clone())
            })
            .collect()
    }

    #[test]
    fn sorting_follows_the_header_clicks_and_keeps_the_silent_last() {
        let rows = sample_rows();
        let mut by = SortBy::default();
        assert_eq!(
            names(&rows, &sorted_order(&rows, by)),
            ["Alpha", "bravo", "charlie", "127.0.0.1:3"]
        );
        by.click(Column::Ping);
        assert_eq!(
            names(&rows, &sorted_order(&rows, by)),
            ["charlie", "bravo", "Alpha", "127.0.0.1:3"],
            "the same header again turns the order round, answered servers still first"
        );
        by.click(Column::Name);
        assert!(!by.descending);
        assert_eq!(
            names(&rows, &sorted_order(&rows, by)),
            ["Alpha", "bravo", "charlie", "127.0.0.1:3"],
            "names compare without case"
        );
        by.click(Column::Players);
        assert!(by.descending, "most players first");
        // People first: Alpha has 6, bravo 4, charlie only bots.
        assert_eq!(
            names(&rows, &sorted_order(&rows, by)),
            ["Alpha", "bravo", "charlie", "127.0.0.1:3"]
        );
        by.click(Column::Lock);
        assert_eq!(
            names(&rows, &sorted_order(&rows, by)),
            ["bravo", "charlie", "Alpha", "127.0.0.1:3"],
            "open servers first, ties by name"
        );
    }

    #[test]
    fn filters_hide_full_empty_private_and_far_servers() {
        let rows = sample_rows();
        let shown = |f: Filters| {
            rows.iter()
                .filter(|r| f.admits(r))
                .map(|r| r.addr.port())
                .collect::<Vec<_>>()
        };
        assert_eq!(shown(Filters::default()), [1, 2, 3, 4]);
        let not_full = Filters {
            not_full: true,
            ..Filters::default()
        };
        assert_eq!(shown(not_full), [1, 4], "full and silent servers go");
        let not_empty = Filters {
            not_empty: true,
            ..Filters::default()
        };
        assert_eq!(shown(not_empty), [1, 2], "bots alone are empty");
        let no_password = Filters {
            no_password: true,
            ..Filters::default()
        };
        assert_eq!(shown(no_password), [1, 4]);
        let near = Filters {
            max_ping_ms: 80,
            ..Filters::default()
        };
        assert_eq!(shown(near), [2], "below, not at, the limit");
    }

    #[test]
    fn address_files_round_trip_skip_bad_lines_and_stay_bounded() {
        let dir = std::env::temp_dir().join(format!("sightline-browser-{}", std::process::id()));
        let path = dir.join("nested").join("favourites.txt");
        let addrs: Vec<SocketAddr> = vec![
            "10.0.0.1:27015".parse().unwrap(),
            "[2001:db8::1]:27016".parse().unwrap(),
        ];
        save_addresses(&path, &addrs).unwrap();
        assert_eq!(load_addresses(&path, 10), addrs);

        let text = "10.0.0.1:27015\n\n# a comment\nnot an address\n[::ffff:10.0.0.1]:27015\n\
                    10.0.0.2:1\n10.0.0.3:1\n10.0.0.4:1\n";
        std::fs::write(&path, text).unwrap();
        let read = load_addresses(&path, 3);
        assert_eq!(
            read,
            ["10.0.0.1:27015", "10.0.0.2:1", "10.0.0.3:1"]
                .map(|a| a.parse::<SocketAddr>().unwrap()),
            "bad lines skipped, a mapped duplicate once, at most the limit"
        );

        // A file larger than the cap: the line the cap cuts is not read as an address.
        let mut big = "10.0.0.9:27015\n".repeat(ADDRESS_FILE_BYTES as usize / 15);
        big.truncate(ADDRESS_FILE_BYTES as usize - 3);
        big.push_str("10.0.0.7:27015\n");
        std::fs::write(&path, &big).unwrap();
        let read = load_addresses(&path, 10);
        assert_eq!(read, ["10.0.0.9:27015".parse::<SocketAddr>().unwrap()]);

        assert!(load_addresses(&dir.join("missing.txt"), 10).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn history_is_newest_first_once_each_and_bounded() {
        let mut history = Vec::new();
        for port in 0..60u16 {
            remember(&mut history, SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        }
        assert_eq!(history.len(), HISTORY_LIMIT);
        assert_eq!(history[0].port(), 59);
        remember(&mut history, SocketAddr::from((Ipv4Addr::LOCALHOST, 30)));
        assert_eq!(history[0].port(), 30);
        assert_eq!(history.len(), HISTORY_LIMIT, "moved, not added");
        assert_eq!(history.iter().filter(|a| a.port() == 30).count(), 1);
    }

    #[test]
    fn the_browser_keeps_favourites_and_history_beside_the_config() {
        let dir =
            std::env::temp_dir().join(format!("sightline-browser-keep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut browser = ServerBrowser::new(Some(dir.clone()));
        let a = row(27015, info("a", 1, 0, 8, false), 10);
        browser.add_favourite(a.clone());
        browser.add_favourite(a.clone());
        browser.remember_join("10.0.0.1:27015".parse().unwrap());
        browser.remember_join(a.addr);
        assert_eq!(browser.listing(Tab::Favourites).row(a.addr), Some(&a));

        let again = ServerBrowser::new(Some(dir.clone()));
        assert_eq!(again.favourites(), [a.addr]);
        assert_eq!(again.history(), [a.addr, "10.0.0.1:27015".parse().unwrap()]);
        browser.remove_favourite(a.addr);
        assert!(browser.listing(Tab::Favourites).row(a.addr).is_none());
        assert!(
            ServerBrowser::new(Some(dir.clone()))
                .favourites()
                .is_empty()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_join_is_recorded_when_it_connects_and_only_then() {
        let remote = Target::Remote(SocketAddr::from((Ipv4Addr::LOCALHOST, 27015)));
        let offline = Target::Offline {
            map: "duel".into(),
            bots: 1,
            skill: sightline_bots::BotSkill::Easy,
        };
        assert_eq!(
            newly_joined(false, true, Some(&remote)),
            Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 27015)))
        );
        assert_eq!(newly_joined(true, true, Some(&remote)), None, "once");
        assert_eq!(
            newly_joined(false, false, Some(&remote)),
            None,
            "connecting"
        );
        assert_eq!(newly_joined(false, true, Some(&offline)), None);
        assert_eq!(newly_joined(false, true, None), None);
    }

    #[test]
    fn a_server_on_this_machine_is_listed_once() {
        assert!(is_own_address(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        // TEST-NET-1 (RFC 5737) is nobody's address.
        assert!(!is_own_address(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))));
        let own = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 5));
        let other = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 6));
        let at = |ip: IpAddr, port| {
            (
                SocketAddr::new(ip, port),
                ServerInfo::default(),
                Duration::ZERO,
            )
        };
        let found = vec![
            at(IpAddr::V4(Ipv4Addr::LOCALHOST), 27015),
            at(own, 27015),
            at(other, 27015),
            at(own, 27016),
        ];
        let kept: Vec<SocketAddr> = fold_local_duplicates(found, |ip| ip == own)
            .into_iter()
            .map(|(a, ..)| a)
            .collect();
        assert_eq!(
            kept,
            [
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 27015),
                SocketAddr::new(other, 27015),
                SocketAddr::new(own, 27016),
            ],
            "another machine's server and one that did not answer on loopback stay"
        );
    }

    #[test]
    fn masters_parse_from_the_cvar() {
        assert!(parse_masters(" , ").is_empty());
        assert_eq!(
            parse_masters("a:1, b ,a:1,,c:3"),
            ["a:1", "b", "c:3"].map(String::from)
        );
        assert_eq!(
            resolve_master("127.0.0.1").unwrap(),
            SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_MASTER_PORT))
        );
        assert_eq!(
            resolve_master("127.0.0.1:9").unwrap(),
            SocketAddr::from((Ipv4Addr::LOCALHOST, 9))
        );
    }

    #[test]
    fn a_refresh_streams_into_its_listing_and_ends_when_the_thread_does() {
        let (tx, rx) = channel();
        let mut listing = Listing::default();
        let favourite = SocketAddr::from((Ipv4Addr::LOCALHOST, 1));
        let silent = SocketAddr::from((Ipv4Addr::LOCALHOST, 2));
        listing.begin(rx, &[favourite, silent]);
        assert!(listing.is_running());
        assert_eq!(listing.rows.len(), 2, "expected servers listed at once");
        assert!(!listing.poll(), "nothing yet");

        tx.send(Progress::Asking(3)).unwrap();
        tx.send(Progress::Reply(
            favourite,
            Ok((info("fav", 1, 0, 8, false), Duration::from_millis(5))),
        ))
        .unwrap();
        // An IPv4-mapped spelling of a server not expected: listed once, as IPv4.
        let other: SocketAddr = "[::ffff:127.0.0.1]:3".parse().unwrap();
        tx.send(Progress::Reply(
            other,
            Ok((info("other", 0, 0, 8, false), Duration::from_millis(9))),
        ))
        .unwrap();
        assert!(listing.poll());
        assert_eq!(listing.progress(), "2 answered / 3 asked");
        assert_eq!(
            listing
                .row(favourite)
                .and_then(Row::info)
                .map(|i| &i.name[..]),
            Some("fav")
        );
        assert!(
            listing
                .row(SocketAddr::from((Ipv4Addr::LOCALHOST, 3)))
                .is_some()
        );
        assert_eq!(listing.row(silent).map(|r| &r.reply), Some(&Reply::Waiting));

        // Another game's server, and an unexpected failure: neither is listed as a
        // Sightline server.
        let mut quake = info("quake", 0, 0, 8, false);
        quake.folder = "baseq3".into();
        tx.send(Progress::Reply(
            SocketAddr::from((Ipv4Addr::LOCALHOST, 4)),
            Ok((quake, Duration::ZERO)),
        ))
        .unwrap();
        tx.send(Progress::Reply(
            SocketAddr::from((Ipv4Addr::LOCALHOST, 5)),
            Err(QueryError::Timeout),
        ))
        .unwrap();
        tx.send(Progress::Note("master m: no answer in time".into()))
            .unwrap();
        drop(tx);
        assert!(listing.poll());
        assert!(!listing.is_running(), "the thread's end ends the refresh");
        assert_eq!(listing.rows.len(), 3);
        assert_eq!(
            listing.row(silent).map(|r| &r.reply),
            Some(&Reply::Failed("no answer".into()))
        );
        assert_eq!(listing.notes, ["master m: no answer in time"]);
        assert_eq!(listing.heard, 4);
        assert_eq!(listing.answered, 2);
        let view = listing.view(SortBy::default(), &Filters::default());
        assert_eq!(names(&listing.rows, &view), ["fav", "other", "127.0.0.1:2"]);
    }

    #[test]
    fn what_a_server_says_of_itself_is_shown_clean() {
        let (tx, rx) = channel();
        let mut listing = Listing::default();
        // Another game's server, expected (a favourite): its failure names its game.
        let other_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 2));
        listing.begin(rx, &[other_addr]);
        let hostile = ServerInfo {
            // A line break, a right-to-left override and zero-width characters: a row
            // that spans two, reads backwards, or looks like another server's.
            name: "Evil\n\u{202E}revreS\u{200B} \u{FEFF}Ｏｆｆｉｃｉａｌ\u{2066}\r\n".into(),
            map: "du\u{200D}el\u{1b}[31m".into(),
            game: "Sight\u{061C}line\u{0}".into(),
            version: "1.0\u{2028}2.0".into(),
            keywords: "dm\u{202D}\u{180E}".into(),
            ..info("x", 1, 0, 8, false)
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 1));
        tx.send(Progress::Reply(addr, Ok((hostile, Duration::ZERO))))
            .unwrap();
        let mut other = info("other", 0, 0, 8, false);
        other.folder = "baseq3".into();
        other.game = "Quake\u{202E}\n3".into();
        tx.send(Progress::Reply(other_addr, Ok((other, Duration::ZERO))))
            .unwrap();
        let long = "Ｗ".repeat(1000);
        let long_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 3));
        tx.send(Progress::Reply(
            long_addr,
            Ok((info(&long, 0, 0, 8, false), Duration::ZERO)),
        ))
        .unwrap();
        drop(tx);
        listing.poll();
        let shown = listing.row(addr).and_then(Row::info).unwrap();
        assert_eq!(shown.name, "EvilrevreS Official");
        assert_eq!(shown.map, "duel[31m");
        assert_eq!(shown.game, "Sightline");
        assert_eq!(shown.version, "1.0 2.0");
        assert_eq!(shown.keywords, "dm");
        let cells = cells(listing.row(addr).unwrap());
        assert!(
            cells.iter().flat_map(|c| c.chars()).all(|c| !c.is_control()
                && !matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}')
                && !matches!(c, '\u{2066}'..='\u{2069}' | '\u{FEFF}')),
            "{cells:?}"
        );
        assert_eq!(
            listing.row(other_addr).map(|r| &r.reply),
            Some(&Reply::Failed("not a Sightline server (Quake3)".into()))
        );
        let long_name = &listing.row(long_addr).and_then(Row::info).unwrap().name;
        assert_eq!(long_name, &"W".repeat(MAX_SERVER_NAME_LEN));
    }

    /// A game server in a thread: a real [`Responder`] on a loopback socket, and an
    /// [`Announcer`] when it has a master.
    struct FakeServer {
        addr: SocketAddr,
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    }

    struct Fixed(ServerInfo);

    impl QuerySource for Fixed {
        fn info(&self) -> ServerInfo {
            self.0.clone()
        }
        fn players(&self) -> Vec<PlayerInfo> {
            Vec::new()
        }
        fn rules(&self) -> Vec<(String, String)> {
            Vec::new()
        }
    }

    impl FakeServer {
        fn start(socket: UdpSocket, info: ServerInfo, master: Option<SocketAddr>) -> Self {
            socket
                .set_read_timeout(Some(Duration::from_millis(20)))
                .unwrap();
            let addr = socket.local_addr().unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let thread = std::thread::spawn(move || {
                let source = Fixed(ServerInfo {
                    port: addr.port(),
                    ..info
                });
                let mut responder = Responder::new();
                let mut announcer =
                    Announcer::new(master.into_iter().collect(), Duration::from_secs(300));
                let mut buf = [0u8; 2048];
                while !flag.load(AtomicOrdering::Relaxed) {
                    for (to, heartbeat) in announcer.due(Instant::now()) {
                        let _ = socket.send_to(&heartbeat, to);
                    }
                    let Ok((n, from)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    let packet = &buf[..n];
                    if let Some(reply) =
                        announcer.answer(from, packet, sightline_protocol::PROTOCOL_VERSION)
                    {
                        let _ = socket.send_to(&reply, from);
                    } else if let Answer::Replies(replies) =
                        responder.answer(from, packet, Instant::now(), &source)
                    {
                        for reply in replies {
                            let _ = socket.send_to(&reply, from);
                        }
                    }
                }
            });
            Self {
                addr,
                stop,
                thread: Some(thread),
            }
        }
    }

    impl Drop for FakeServer {
        fn drop(&mut self) {
            self.stop.store(true, AtomicOrdering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// Two loopback sockets on neighbouring ports, so one LAN port range covers both.
    fn neighbouring_sockets() -> (UdpSocket, UdpSocket) {
        for _ in 0..50 {
            let first = UdpSocket::bind("127.0.0.1:0").unwrap();
            let port = first.local_addr().unwrap().port();
            if let Some(next) = port.checked_add(1)
                && let Ok(second) = UdpSocket::bind(("127.0.0.1", next))
            {
                return (first, second);
            }
        }
        panic!("no two neighbouring free UDP ports on loopback");
    }

    /// Polls `listing` until its refresh thread is done; the thread ends at its own
    /// timeouts, so this waits on the channel, not on a guess.
    fn finish(listing: &mut Listing) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while listing.is_running() {
            assert!(Instant::now() < deadline, "the refresh never finished");
            if !listing.poll() {
                // Nothing new: give the refresh and responder threads the cores.
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    fn two_servers(master: Option<SocketAddr>) -> (FakeServer, FakeServer) {
        let (a, b) = neighbouring_sockets();
        (
            FakeServer::start(a, info("first", 2, 1, 8, false), master),
            FakeServer::start(b, info("second", 0, 0, 16, true), master),
        )
    }

    fn answered_names(listing: &mut Listing) -> Vec<String> {
        let view = listing.view(
            SortBy {
                column: Column::Name,
                descending: false,
            },
            &Filters::default(),
        );
        names(&listing.rows, &view)
    }

    #[test]
    fn lan_refresh_finds_two_servers() {
        let (first, second) = two_servers(None);
        let mut listing = Listing::default();
        listing.begin(
            spawn_refresh(Job::Lan {
                ports: first.addr.port()..=second.addr.port(),
            }),
            &[],
        );
        finish(&mut listing);
        assert_eq!(answered_names(&mut listing), ["first", "second"]);
        let second_row = listing.row(second.addr).unwrap();
        assert!(second_row.needs_password());
        assert_eq!(second_row.join_addr(), second.addr);
        assert_eq!(listing.progress(), "2 found");
    }

    #[test]
    fn favourites_refresh_asks_each_and_marks_the_silent() {
        let (first, second) = two_servers(None);
        // A bound socket that never answers.
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addrs = [first.addr, second.addr, silent.local_addr().unwrap()];
        let mut listing = Listing::default();
        listing.begin(spawn_refresh(Job::Addresses(addrs.to_vec())), &addrs);
        finish(&mut listing);
        assert_eq!(listing.progress(), "2 answered / 3 asked");
        assert_eq!(
            answered_names(&mut listing),
            ["first", "second", &addrs[2].to_string()]
        );
        assert!(matches!(
            listing.row(addrs[2]).unwrap().reply,
            Reply::Failed(_)
        ));
    }

    #[test]
    fn internet_refresh_lists_what_the_master_lists() {
        let master_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        master_socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let master_addr = master_socket.local_addr().unwrap();
        let state = Arc::new((
            Mutex::new(Master::new(MasterConfig::default())),
            Condvar::new(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let pump = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !stop.load(AtomicOrdering::Relaxed) {
                    let Ok((n, from)) = master_socket.recv_from(&mut buf) else {
                        continue;
                    };
                    let replies = state
                        .0
                        .lock()
                        .unwrap()
                        .handle(from, &buf[..n], Instant::now());
                    state.1.notify_all();
                    for (to, p) in replies {
                        let _ = master_socket.send_to(&p, to);
                    }
                }
            })
        };
        let (_first, _second) = two_servers(Some(master_addr));
        // The servers announce themselves; wait on the master's state for both.
        let guard = state.0.lock().unwrap();
        let (guard, _) = state
            .1
            .wait_timeout_while(guard, Duration::from_secs(10), |m| m.stats().listed < 2)
            .unwrap();
        assert_eq!(
            guard.stats().listed,
            2,
            "both servers confirmed by the master"
        );
        drop(guard);

        let mut browser = ServerBrowser::new(None);
        // A master nobody runs is reported, and the one that answers still lists.
        let nobody = UdpSocket::bind("127.0.0.1:0").unwrap();
        let masters = format!("{master_addr}, {}", nobody.local_addr().unwrap());
        browser.refresh(Tab::Internet, &masters);
        let listing = &mut browser.listings[Tab::Internet.index()];
        finish(listing);
        assert_eq!(answered_names(listing), ["first", "second"]);
        assert_eq!(listing.progress(), "2 answered / 2 asked");
        assert_eq!(listing.notes.len(), 1, "{:?}", listing.notes);
        assert!(listing.notes[0].contains("no answer in time"));

        browser.refresh(Tab::Internet, " ");
        assert!(!browser.listing(Tab::Internet).is_running());
        assert!(browser.listing(Tab::Internet).rows.is_empty());

        stop.store(true, AtomicOrdering::Relaxed);
        pump.join().unwrap();
    }

    #[test]
    fn internet_refresh_asks_a_few_ports_of_a_host_and_says_what_it_skipped() {
        use sightline_query::MAX_PER_HOST;
        use sightline_query::master_protocol::{MasterPacket, decode, encode_server_list};
        let (first, second) = two_servers(None);
        // A hostile master: the two servers, then a hundred more ports of their host.
        let mut list = vec![first.addr, second.addr];
        list.extend((1..=100).map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port))));
        let packets = encode_server_list(&list);
        let master = UdpSocket::bind("127.0.0.1:0").unwrap();
        master
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let master_addr = master.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let pump = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !stop.load(AtomicOrdering::Relaxed) {
                    let Ok((n, from)) = master.recv_from(&mut buf) else {
                        continue;
                    };
                    if let Ok(MasterPacket::GetServers { .. }) = decode(&buf[..n]) {
                        for p in &packets {
                            let _ = master.send_to(p, from);
                        }
                    }
                }
            })
        };
        let mut browser = ServerBrowser::new(None);
        browser.refresh(Tab::Internet, &master_addr.to_string());
        let listing = &mut browser.listings[Tab::Internet.index()];
        finish(listing);
        assert_eq!(answered_names(listing), ["first", "second"]);
        assert_eq!(listing.asked, Some(MAX_PER_HOST));
        let skipped = list.len() - MAX_PER_HOST;
        assert_eq!(
            listing.notes,
            [format!(
                "{skipped} entries of the master lists skipped ({skipped} crowding one host or \
                 network)"
            )]
        );
        stop.store(true, AtomicOrdering::Relaxed);
        pump.join().unwrap();
    }
}
