//! The server browser, the main menu's "Find servers" page: four lists (Internet, from
//! the master lists named by `cl_masters`; LAN, by broadcast; Favourites and History,
//! kept in files beside the config file), each refreshed on a background thread whose
//! answers stream in through a channel, so no frame waits on the network. Joining goes
//! through [`join_server`](crate::session::join_server), the menu's own Connect.
//!
//! The logic is plain data and functions (`model`: sorting, filtering, the address files,
//! a tab's listing), the threads are `refresh`'s, and `page` draws it all and turns clicks
//! into calls; this module holds the browser's resource and its systems.

mod model;
mod page;
mod refresh;

pub use model::*;
use page::*;
pub use refresh::*;

use crate::cvars::cvar;
use crate::session::{AppState, Session, Target};
use bevy::prelude::*;
use bevy_egui::EguiPrimaryContextPass;
use sightline_client::ConnectionStatus;
use sightline_console::{ConfigFile, Console, ConsoleCommands, Cvars, RunCommand};
use sightline_query::LAN_PORTS;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_protocol::MAX_SERVER_NAME_LEN;
    use sightline_query::{
        Announcer, Answer, DEFAULT_MASTER_PORT, Master, MasterConfig, PlayerInfo, QueryError,
        QuerySource, Responder, ServerInfo,
    };
    use std::net::{IpAddr, Ipv4Addr, UdpSocket};
    use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
    use std::sync::mpsc::channel;
    use std::sync::{Arc, Condvar, Mutex};
    use std::thread::JoinHandle;
    use std::time::Duration;
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
