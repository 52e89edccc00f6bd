//! The host's console: the server's settings as live console variables, and the commands
//! a dedicated server's host expects from Quake and Source (`status`, `kick`, `ban`,
//! `say`, `map`, `restart`, `record`, `writeconfig`, `quit` ...). Lines arrive in the
//! [`AdminInbox`] from the terminal, Source RCON or a player's `rcon`; each runs once a
//! frame, with the whole world at hand, and its output goes back where it came from.
//!
//! A line that sets cvars is applied only if the settings still go together
//! ([`config_from_cvars`]); otherwise it is undone and says why, so a bad line
//! changes nothing.

use crate::bans::{Ban, BanList, unix_now};
use crate::cvars::{config_from_cvars, cvar};
use crate::records::{MAX_TOP, StatsQuery, StatsQuestions, StatsWriter};
use bevy::prelude::*;
use sightline_combat::Score;
use sightline_console::{
    BUILTINS, Bindings, Console, ConsoleCommands, Cvars, config_file_name, execute_line_with,
    quote, read_config_file,
};
use sightline_limits::{Bucket, HostKey, LruMap};
use sightline_map::{CurrentMap, MapSource, find_map_by_name};
use sightline_net::{IpPrefix, RenetServer, UdpServerTransport};
use sightline_protocol::{MAX_CHAT_LEN, ServerMessage, ServerTextKind, clean_text};
use sightline_server::demo::demo_path;
use sightline_server::{
    AdminInbox, AdminLine, AdminOrigin, Connection, HostingStats, LeavingBot, MatchOrder,
    MatchOrders, MatchState, Outgoing, ServerConfig, ServerStats, SnapshotStream, Spectator,
    ping_seconds,
};
use sightline_sim::{BotControlled, PlayerId, PlayerName};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The host's commands, with their help.
const ADMIN_COMMANDS: &[(&str, &str)] = &[
    (
        "status",
        "the server's name, map, mode, time left and fraglimit, then one line per player: \
         id, name, score, ping (the server's timing of the round trip, from a snapshot \
         leaving to the first input acknowledging it), loss (the share of the player's \
         datagrams lost on the way in over its last 256; - until then), address, time \
         connected; bots show BOT",
    ),
    ("players", "each player's id and name"),
    (
        "kick",
        "kick ID|NAME [REASON]: remove a player, who is told why and cannot resume the \
         slot; a kicked bot is taken away (bots goes down by one); names with spaces need \
         quotes: kick \"Bot 2\"",
    ),
    (
        "ban",
        "ban ID|NAME|ADDRESS[/PREFIX] [MINUTES] [REASON]: ban the player's address (or an \
         address, or a network such as 203.0.113.0/24 or 2001:db8::/48) for MINUTES (0 or \
         none: for ever), kicking whoever plays from there",
    ),
    (
        "unban",
        "unban ADDRESS[/PREFIX]|N: lift a ban (N as banlist numbers them)",
    ),
    ("banlist", "the bans in force, with time left"),
    (
        "say",
        "say TEXT: tell every player, in their chat as \"Host\"",
    ),
    (
        "map",
        "map NAME: play NAME (in maps/) from now: a new match, everyone told to load it",
    ),
    ("nextmap", "start the next map of sv_maplist now"),
    ("restart", "start this match again on this map"),
    (
        "endmatch",
        "end the match now, as if a limit was reached (the intermission)",
    ),
    (
        "writeconfig",
        "writeconfig [NAME]: write the settings that differ from their defaults into NAME.cfg \
         in the config folder (default: the config file the server started with; a path only \
         at the server's terminal)",
    ),
    (
        "stats",
        "stats NAME: a player's lifetime record (with --stats), found by any name they used: \
         kills, deaths, K/D, suicides, damage, matches won and played, time played, other \
         names, accuracy and kills by weapon, first and last seen",
    ),
    (
        "top",
        "top [N]: the N best players by kills (default 10, at most 100; with --stats)",
    ),
    (
        "record",
        "record NAME: record a demo of the match into demos/NAME.sldemo from the next tick \
         (NAME is letters, digits, -, _ and ., so a line from rcon cannot write elsewhere)",
    ),
    (
        "stoprecord",
        "stop recording the demo and say how long and how large it is",
    ),
    ("quit", "stop the server cleanly"),
];

/// Failed passwords from one address before it is locked out.
pub const RCON_FAILURES_BEFORE_LOCKOUT: u32 = 5;

/// How long a lockout lasts.
pub const RCON_LOCKOUT: Duration = Duration::from_secs(60);

/// Addresses the lockout remembers; full, it forgets the least recently failed.
const RCON_LOCKOUT_ADDRESSES: usize = 4096;

/// Wrong rcon passwords from all addresses together: this many at once, then
/// [`RCON_WRONG_PER_SECOND`] (as the token service allows password guesses). Without it
/// an attacker holding many addresses guessed five a minute from each.
pub const RCON_WRONG_BURST: f64 = 30.0;
/// How fast the shared allowance of wrong passwords comes back.
pub const RCON_WRONG_PER_SECOND: f64 = 5.0;

/// Hosts that gave the right password, which a spent shared allowance never refuses.
const RCON_TRUSTED_HOSTS: usize = 64;

/// Wrong rcon passwords by address: after [`RCON_FAILURES_BEFORE_LOCKOUT`] the address
/// is refused unchecked for [`RCON_LOCKOUT`], and the lockout is logged once. And all
/// together: past the shared allowance ([`RCON_WRONG_BURST`], [`RCON_WRONG_PER_SECOND`]),
/// a password is checked only from a host that has given the right one before, and that
/// is logged once a minute at most.
#[derive(Resource)]
pub struct RconLockout {
    failures: LruMap<HostKey, (u32, Option<Instant>)>,
    wrong: Bucket,
    trusted: LruMap<HostKey, ()>,
    spent_logged_at: Option<Instant>,
}

impl Default for RconLockout {
    fn default() -> Self {
        Self {
            failures: LruMap::new(RCON_LOCKOUT_ADDRESSES),
            wrong: Bucket::new(RCON_WRONG_BURST, RCON_WRONG_PER_SECOND),
            trusted: LruMap::new(RCON_TRUSTED_HOSTS),
            spent_logged_at: None,
        }
    }
}

/// What checking an rcon password found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordCheck {
    /// Right.
    Accepted,
    /// Wrong (and counted).
    Wrong,
    /// Not checked: the address is locked out, or remote admin is off.
    Refused,
}

impl RconLockout {
    /// Checks `given` against `password` from `ip`, counting failures in `stats` and
    /// locking the address out after a few, and everyone but trusted hosts out while the
    /// shared allowance of wrong passwords is spent. Without an address (an in-memory
    /// transport) wrong passwords are counted but nothing is locked out.
    pub fn check(
        &mut self,
        ip: Option<IpAddr>,
        password: &str,
        given: &str,
        now: Instant,
        stats: &mut HostingStats,
    ) -> PasswordCheck {
        if password.is_empty() {
            return PasswordCheck::Refused;
        }
        let mut entry = ip.map(|ip| {
            self.failures
                .get_or_insert_with(HostKey::of(ip), || (0, None))
        });
        if let Some(entry) = entry.as_mut()
            && let Some(until) = entry.1
        {
            if now < until {
                return PasswordCheck::Refused;
            }
            **entry = (0, None);
        }
        let host = ip.map(HostKey::of);
        let trusted = host.is_some_and(|h| self.trusted.peek(&h).is_some());
        if host.is_some() && !trusted && !self.wrong.has(now) {
            if self
                .spent_logged_at
                .is_none_or(|at| now.saturating_duration_since(at) >= Duration::from_secs(60))
            {
                self.spent_logged_at = Some(now);
                warn!(
                    "rcon: {RCON_WRONG_BURST} wrong passwords at once from all addresses; \
                     checking only those from hosts that gave the right one before"
                );
            }
            return PasswordCheck::Refused;
        }
        if constant_time_eq(password.as_bytes(), given.as_bytes()) {
            if let Some(entry) = entry {
                entry.0 = 0;
            }
            if let Some(host) = host {
                self.trusted.get_or_insert_with(host, || ());
            }
            return PasswordCheck::Accepted;
        }
        if host.is_some() {
            self.wrong.spend();
        }
        stats.rcon_wrong += 1;
        if let (Some(entry), Some(ip)) = (entry, ip) {
            entry.0 += 1;
            if entry.0 >= RCON_FAILURES_BEFORE_LOCKOUT {
                entry.1 = Some(now + RCON_LOCKOUT);
                stats.rcon_lockouts += 1;
                warn!(
                    "rcon: {ip} gave {RCON_FAILURES_BEFORE_LOCKOUT} wrong passwords; locked \
                     out for {} s",
                    RCON_LOCKOUT.as_secs()
                );
            }
        }
        PasswordCheck::Wrong
    }
}

/// Compares secrets without revealing through timing how much of them matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// Where the host's console runs its lines, in `Update`: sources queue lines before it,
/// and collect their output after it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AdminSet;

/// The server's settings, live: what the host's console reads and sets.
#[derive(Resource, Clone)]
pub struct ServerCvars(pub Cvars);

/// What the console keeps between lines.
#[derive(Resource)]
struct AdminState {
    commands: ConsoleCommands,
    config_file: PathBuf,
    /// The config file's folder: the only one `exec` and `writeconfig` reach from a
    /// remote admin.
    config_folder: PathBuf,
}

impl AdminState {
    fn new(commands: ConsoleCommands, config_file: PathBuf) -> Self {
        let config_folder = config_file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        Self {
            commands,
            config_file,
            config_folder,
        }
    }
}

/// The host's console: add it to a dedicated server with its settings (`cvars`, as the
/// command line and config file left them), its ban list, and the config file
/// `writeconfig` writes by default, whose folder is the only one `exec` and
/// `writeconfig` reach for a remote admin. Lines come from the terminal
/// ([`crate::TerminalPlugin`]), Source RCON ([`crate::RconPlugin`]) and players' `rcon`.
pub struct AdminPlugin {
    /// The settings.
    pub cvars: Cvars,
    /// The bans, read from their file.
    pub bans: BanList,
    /// Where `writeconfig` writes without a file name.
    pub config_file: PathBuf,
}

impl Plugin for AdminPlugin {
    fn build(&self, app: &mut App) {
        let mut commands = ConsoleCommands::default();
        for (name, help) in ADMIN_COMMANDS {
            commands.register(name, help);
        }
        // Lines of the ban file that did not read: skipped, not a reason to stop, but the
        // host hears of them here, in the status line, the metrics and `banlist`.
        for report in self.bans.skipped_reports() {
            warn!("{report}: skipped; the other bans hold, and the line is kept in the file");
        }
        app.init_resource::<HostingStats>();
        app.world_mut()
            .resource_mut::<HostingStats>()
            .ban_lines_skipped = self.bans.skipped() as u64;
        app.insert_resource(ServerCvars(self.cvars.clone()))
            .insert_resource(self.bans.clone())
            .insert_resource(AdminState::new(commands, self.config_file.clone()))
            .init_resource::<AdminInbox>()
            .init_resource::<RconLockout>()
            .add_systems(
                Update,
                (
                    run_admin_lines,
                    answer_players_rcon,
                    crate::bans::expire_bans,
                    mirror_voted_settings,
                )
                    .chain()
                    .in_set(AdminSet),
            );
    }
}

/// The console's builtin commands that mean something on a server.
const SERVER_BUILTINS: [&str; 5] = ["exec", "help", "cvarlist", "echo", "set"];

/// The server's commands and their help: its own, and the builtins it uses.
fn server_commands() -> impl Iterator<Item = (&'static str, &'static str)> {
    let builtins = BUILTINS
        .iter()
        .filter(|(name, _)| SERVER_BUILTINS.contains(name));
    ADMIN_COMMANDS.iter().chain(builtins).copied()
}

/// Every name a console line may start with (for the terminal's completion).
pub fn admin_words(cvars: &Cvars) -> Vec<String> {
    let mut words: Vec<String> = server_commands().map(|(n, _)| n.to_string()).collect();
    words.extend(cvars.iter().map(|c| c.def.name.to_string()));
    words.sort();
    words.dedup();
    words
}

/// Runs the lines that arrived since the last frame, in order.
/// A line that asked the statistics a question is answered when the statistics' thread
/// has the answer, its other output first.
fn run_admin_lines(world: &mut World) {
    let lines = std::mem::take(&mut world.resource_mut::<AdminInbox>().lines);
    for line in lines {
        let output = run_line(world, &line);
        let questions = world
            .get_resource_mut::<StatsQuestions>()
            .map(|mut q| std::mem::take(&mut q.0))
            .unwrap_or_default();
        match world.get_resource_mut::<StatsWriter>() {
            Some(mut writer) if !questions.is_empty() => {
                writer.ask(line.origin, output, questions);
            }
            _ => world
                .resource_mut::<AdminInbox>()
                .replies
                .push((line.origin, output)),
        }
    }
}

/// Puts a question to the statistics, answered after the line has run.
fn ask(world: &mut World, question: StatsQuery) -> Result<(), String> {
    match world.get_resource_mut::<StatsQuestions>() {
        Some(mut questions) => {
            questions.0.push(question);
            Ok(())
        }
        None => Err("no statistics are kept here (start the server with --stats FILE)".into()),
    }
}

/// Runs one line and returns what it printed.
fn run_line(world: &mut World, line: &AdminLine) -> Vec<String> {
    let mut console = Console::default();
    if let Some(given) = &line.password {
        let ip = line
            .from
            .or_else(|| origin_address(world, line.origin))
            .map(|a| a.ip());
        let password = world.resource::<ServerCvars>().0.read(cvar::RCON_PASSWORD);
        let check = world.resource_scope(|world, mut lockout: Mut<RconLockout>| {
            let mut stats = world.resource_mut::<HostingStats>();
            lockout.check(ip, &password, given, Instant::now(), &mut stats)
        });
        match check {
            PasswordCheck::Accepted => mark_admin(world, line.origin),
            PasswordCheck::Wrong => return vec!["rcon: wrong password".into()],
            PasswordCheck::Refused if password.is_empty() => {
                return vec!["rcon: remote admin is off (no rcon_password set)".into()];
            }
            PasswordCheck::Refused => {
                return vec!["rcon: too many wrong passwords; try again later".into()];
            }
        }
    }
    if line.origin != AdminOrigin::Terminal {
        let who = line.from.map_or("a player".to_string(), |a| a.to_string());
        // Quoted and escaped: a line break in an rcon line must not forge a log line.
        info!("rcon from {who}: {:?}", line.line);
    }
    let before = world.resource::<ServerCvars>().clone();
    let remote = line.origin != AdminOrigin::Terminal;
    let outcome = world.resource_scope(|world, mut cvars: Mut<ServerCvars>| {
        let state = world.resource::<AdminState>();
        let folder = state.config_folder.as_path();
        let mut read = |name: &str| {
            let path = config_target(folder, name, remote).map_err(std::io::Error::other)?;
            read_config_file(&path)
        };
        execute_line_with(
            &line.line,
            &mut cvars.0,
            &mut Bindings::default(),
            &state.commands,
            &mut console,
            &mut read,
        )
    });
    apply_cvars(world, &before, &mut console);
    for command in outcome.commands {
        let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
        if let Err(e) = carry_out(world, &command.name, &args, remote, &mut console) {
            // A file's words are never printed back (see `sightline_console`'s exec):
            // only where the line is, for the host to run it alone and see why.
            match &command.from_file {
                Some(at) => console.print(format!("error: {at}: {} failed", command.name)),
                None => console.print(format!("error: {e}")),
            }
        }
    }
    console.lines().map(String::from).collect()
}

/// Writes what the players voted (a frag limit, a mode) into the host's cvars, so the console
/// shows it and the host's next change of another cvar does not undo it.
fn mirror_voted_settings(config: Res<ServerConfig>, mut cvars: ResMut<ServerCvars>) {
    if !config.is_changed() {
        return;
    }
    let fraglimit = i64::from(config.rules.fraglimit);
    if cvars.0.read(cvar::FRAGLIMIT) != fraglimit {
        // In range: a vote sets at most the cvar's own maximum.
        let _ = cvars.0.set_handle(cvar::FRAGLIMIT, &fraglimit.to_string());
    }
    let mode = config.rules.mode.keyword();
    if cvars.0.read(cvar::MODE) != mode {
        let _ = cvars.0.set_handle(cvar::MODE, mode);
    }
}

/// Marks a player who gave the rcon password from the game as the host's: no vote may
/// kick it.
fn mark_admin(world: &mut World, origin: AdminOrigin) {
    let AdminOrigin::Player(client) = origin else {
        return;
    };
    let entity = world
        .get_resource::<sightline_server::ClientIndex>()
        .and_then(|index| index.0.get(&client).copied());
    if let Some(entity) = entity
        && let Ok(mut player) = world.get_entity_mut(entity)
    {
        player.insert(sightline_server::Admin);
    }
}

/// The address behind an origin, for a player's rcon.
fn origin_address(world: &World, origin: AdminOrigin) -> Option<SocketAddr> {
    match origin {
        AdminOrigin::Player(client) => world
            .get_resource::<UdpServerTransport>()?
            .client_addr(client),
        _ => None,
    }
}

/// Applies the cvars a line changed: at once where the server can, or undoes them all
/// when the settings no longer go together.
fn apply_cvars(world: &mut World, before: &ServerCvars, console: &mut Console) {
    let cvars = world.resource::<ServerCvars>().0.clone();
    let config = match config_from_cvars(&cvars) {
        Ok(config) => config,
        Err(e) => {
            console.print(format!("error: {e}; nothing changed"));
            world.insert_resource(before.clone());
            return;
        }
    };
    let changed =
        |name: &str| before.0.get(name).map(|c| &c.value) != cvars.get(name).map(|c| &c.value);
    if !cvars.iter().any(|c| changed(c.def.name)) {
        return;
    }
    // What can change while the server runs; the rest waits for a restart (the console
    // says so as it sets them).
    let mut live = world.resource_mut::<ServerConfig>();
    live.name = config.name;
    live.bots = config.bots.min(live.max_players);
    live.bot_skill = config.bot_skill;
    live.rules.fraglimit = config.rules.fraglimit;
    live.rules.timelimit = config.rules.timelimit;
    live.rules.rotation = config.rules.rotation;
    live.rules.team_force_balance = config.rules.team_force_balance;
    live.rules.auto_balance = config.rules.auto_balance;
    live.rules.friendly_fire = config.rules.friendly_fire;
    live.rules.overtime = config.rules.overtime;
    live.rules.warmup = config.rules.warmup;
    live.rules.min_ready = config.rules.min_ready;
    live.idle_kick_seconds = config.idle_kick_seconds;
    live.votes = config.votes;
    live.spectator_delay = config.spectator_delay;
    live.motd = config.motd;
    if let Some(mut transport) = world.get_resource_mut::<UdpServerTransport>() {
        if changed(cvar::SV_PASSWORD.name()) {
            let password = cvars.read(cvar::SV_PASSWORD);
            if !transport.set_password((!password.is_empty()).then_some(password)) {
                console.print("sv_password: this server runs --insecure and checks no password");
            }
        }
        if changed(cvar::SV_MAX_PER_ADDRESS.name()) {
            transport.set_max_per_address(cvars.read(cvar::SV_MAX_PER_ADDRESS) as usize);
        }
    }
}

/// A player as the console finds them.
struct Target {
    entity: Entity,
    /// Its player (`None`: a spectator).
    id: Option<PlayerId>,
    name: String,
    client: Option<u64>,
    bot: bool,
}

/// The player `who` names: an id as `status` shows it, a whole name, or the start of
/// exactly one name (letter case ignored).
fn find_player(world: &mut World, who: &str) -> Result<Target, String> {
    let mut query = world.query::<(
        Entity,
        &PlayerId,
        &PlayerName,
        Option<&Connection>,
        Has<BotControlled>,
    )>();
    let all: Vec<Target> = query
        .iter(world)
        .map(|(entity, id, name, conn, bot)| Target {
            entity,
            id: Some(*id),
            name: name.0.clone(),
            client: conn.map(|c| c.client_id),
            bot,
        })
        .collect();
    if let Ok(n) = who.parse::<u8>()
        && let Some(i) = all.iter().position(|t| t.id.is_some_and(|id| id.0 == n))
    {
        return Ok(all.into_iter().nth(i).expect("found"));
    }
    let lower = who.to_lowercase();
    if let Some(i) = all.iter().position(|t| t.name.to_lowercase() == lower) {
        return Ok(all.into_iter().nth(i).expect("found"));
    }
    let starts: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].name.to_lowercase().starts_with(&lower))
        .collect();
    match starts.as_slice() {
        [i] => Ok(all.into_iter().nth(*i).expect("found")),
        [] => Err(format!("no player \"{who}\" (status lists them)")),
        _ => Err(format!(
            "\"{who}\" names {} players; use the id",
            starts.len()
        )),
    }
}

/// The file `exec` or `writeconfig` means by `name`: a config file's name (see
/// [`config_file_name`]: `NAME` or `NAME.cfg`) in the config folder, from anywhere; any
/// other path only at the server's terminal, which is the host's own, as the command
/// line's `+exec` is. Remote admin is not shell access: over RCON or a player's rcon no
/// other file (the identity key, a shell's start-up file) can be read or written.
fn config_target(folder: &Path, name: &str, remote: bool) -> Result<PathBuf, String> {
    match config_file_name(name) {
        Ok(file) => Ok(folder.join(file)),
        Err(_) if !remote => Ok(PathBuf::from(name)),
        Err(e) => Err(e),
    }
}

/// Carries out one of [`ADMIN_COMMANDS`]; `remote` for a line from RCON or a player's
/// rcon rather than the server's terminal.
fn carry_out(
    world: &mut World,
    name: &str,
    args: &[&str],
    remote: bool,
    out: &mut Console,
) -> Result<(), String> {
    match (name, args) {
        ("status", _) => status(world, out),
        ("players", _) => {
            let mut query = world.query::<(&PlayerId, &PlayerName, Has<BotControlled>)>();
            let mut rows: Vec<_> = query
                .iter(world)
                .map(|(i, n, b)| (i.0, n.0.clone(), b))
                .collect();
            rows.sort();
            for (id, name, bot) in rows {
                out.print(format!("{id:>3} {name}{}", if bot { " (bot)" } else { "" }));
            }
        }
        ("kick", [who, reason @ ..]) => {
            let target = find_player(world, who)?;
            let reason = words(reason, "kicked by the server");
            kick(world, &target, &format!("kicked: {reason}"));
            out.print(format!("kicked {} ({reason})", target.name));
        }
        ("ban", [who, rest @ ..]) => ban(world, who, rest, out)?,
        ("unban", [which]) => {
            let ban = world.resource_mut::<BanList>().remove(which)?;
            out.print(format!("unbanned {}", ban.prefix));
        }
        ("stats", [name]) => ask(world, StatsQuery::Player(name.to_string()))?,
        ("top", []) => ask(world, StatsQuery::Top(10))?,
        ("top", [n]) => match n.parse::<usize>() {
            Ok(n) if (1..=MAX_TOP).contains(&n) => ask(world, StatsQuery::Top(n))?,
            _ => return Err(format!("top: N is a number from 1 to {MAX_TOP}")),
        },
        ("banlist", []) => {
            let now = unix_now();
            let bans = world.resource::<BanList>();
            if bans.iter().next().is_none() {
                out.print("no bans");
            }
            if bans.skipped() > 0 {
                out.print(format!(
                    "{} lines of the ban file did not read: skipped (the other bans hold) and \
                     kept in the file to mend:",
                    bans.skipped()
                ));
                for report in bans.skipped_reports() {
                    out.print(format!("  {report}"));
                }
            }
            for (i, ban) in bans.iter().enumerate() {
                let left = match ban.until {
                    None => "for ever".to_string(),
                    Some(t) => format!("{} min left", t.saturating_sub(now).div_ceil(60)),
                };
                out.print(format!(
                    "{:>3} {:<20} {left:<14} {} {}",
                    i + 1,
                    ban.prefix.to_string(),
                    quote(&ban.name),
                    ban.reason
                ));
            }
        }
        ("say", text) if !text.is_empty() => {
            let text = clean_text(&text.join(" "), MAX_CHAT_LEN);
            info!("say: {text}");
            out.print(format!("Host: {text}"));
            world.write_message(Outgoing::ToPlaying(ServerMessage::ServerText {
                kind: ServerTextKind::Say,
                text,
            }));
        }
        ("map", [name]) => {
            let source = find_map_by_name(name)
                .and_then(|path| MapSource::load(&path))
                .map_err(|e| format!("map {name}: {e}"))?;
            out.print(format!("changing to {}", source.def.name));
            world.resource_mut::<MatchOrders>().0 = Some(MatchOrder::Map(Box::new(source)));
        }
        ("nextmap", []) => {
            order(world, MatchOrder::NextMap);
            out.print("starting the next match");
        }
        ("restart", []) => {
            order(world, MatchOrder::Restart);
            out.print("restarting the match");
        }
        ("endmatch", []) => {
            order(world, MatchOrder::End);
            out.print("ending the match");
        }
        ("writeconfig", [] | [_]) => {
            let state = world.resource::<AdminState>();
            let path = match args.first() {
                None => state.config_file.clone(),
                Some(name) => config_target(&state.config_folder, name, remote)
                    .map_err(|e| format!("writeconfig: {e}"))?,
            };
            let text = config_text(&world.resource::<ServerCvars>().0);
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            out.print(format!("wrote {}", path.display()));
        }
        ("record", [name]) => {
            let path = demo_path(name)?;
            out.print(sightline_server::demo::start_recording(world, &path)?);
        }
        ("stoprecord", []) => out.print(sightline_server::demo::stop_recording(world)?),
        ("quit", []) => {
            info!("quit from the console");
            out.print("stopping the server");
            world.write_message(AppExit::Success);
        }
        _ => {
            let help = ADMIN_COMMANDS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, h)| h);
            return Err(format!("usage: {help}"));
        }
    }
    Ok(())
}

/// The words of the rest of a line, or `default` when there are none.
fn words(rest: &[&str], default: &str) -> String {
    if rest.is_empty() {
        default.to_string()
    } else {
        clean_text(&rest.join(" "), MAX_CHAT_LEN)
    }
}

/// Leaves `order` for the match rules' next tick.
fn order(world: &mut World, order: MatchOrder) {
    world.resource_mut::<MatchOrders>().0 = Some(order);
}

/// Removes a player: a connection is told why and dropped (it may not resume), a bot is
/// taken away for good (one bot fewer).
fn kick(world: &mut World, target: &Target, reason: &str) {
    if target.bot {
        world.entity_mut(target.entity).insert(LeavingBot);
        let mut config = world.resource_mut::<ServerConfig>();
        config.bots = config.bots.saturating_sub(1);
        let bots = config.bots;
        let _ = world
            .resource_mut::<ServerCvars>()
            .0
            .set_handle(cvar::BOTS, &bots.to_string());
        return;
    }
    let now = world.resource::<Time<Real>>().elapsed_secs_f64();
    world.resource_scope(|world, mut server: Mut<RenetServer>| {
        world.resource_scope(|world, mut stats: Mut<ServerStats>| {
            if let Some(mut conn) = world.get_mut::<Connection>(target.entity) {
                conn.kick(&mut server, reason.to_string(), now, &mut stats);
            }
        });
    });
}

/// `ban ID|NAME|ADDRESS[/PREFIX] [MINUTES] [REASON]`.
fn ban(world: &mut World, who: &str, rest: &[&str], out: &mut Console) -> Result<(), String> {
    let (prefix, name) = match who.parse::<IpPrefix>() {
        Ok(prefix) => (prefix, String::new()),
        Err(_) => {
            let target = find_player(world, who)?;
            if target.bot {
                return Err(format!("{} is a bot; kick it instead", target.name));
            }
            let addr = target
                .client
                .and_then(|c| world.get_resource::<UdpServerTransport>()?.client_addr(c))
                .ok_or_else(|| format!("{}'s address is unknown", target.name))?;
            (IpPrefix::host(addr.ip()), target.name)
        }
    };
    let (minutes, reason) = match rest.split_first() {
        Some((m, reason)) if m.parse::<f64>().is_ok() => {
            let m: f64 = m.parse().expect("checked");
            if !(0.0..=525_600.0 * 10.0).contains(&m) {
                return Err("minutes must be between 0 (for ever) and ten years".into());
            }
            (m, reason)
        }
        _ => (0.0, rest),
    };
    let reason = words(reason, "banned by the server");
    let until = (minutes > 0.0).then(|| unix_now() + (minutes * 60.0).ceil() as u64);
    world.resource_mut::<BanList>().add(Ban {
        prefix,
        until,
        name: name.clone(),
        reason: reason.clone(),
    })?;
    let length = if minutes > 0.0 {
        format!("for {minutes} minutes")
    } else {
        "for ever".into()
    };
    info!("banned {prefix} {length}: {reason}");
    out.print(format!("banned {prefix} {length} ({reason})"));
    // Who plays or watches from there goes now.
    let mut query = world.query::<(Entity, &PlayerId, &PlayerName, &Connection)>();
    let mut inside: Vec<Target> = query
        .iter(world)
        .map(|(entity, id, name, conn)| Target {
            entity,
            id: Some(*id),
            name: name.0.clone(),
            client: Some(conn.client_id),
            bot: false,
        })
        .collect();
    let mut watchers = world.query::<(Entity, &Spectator, &Connection)>();
    inside.extend(watchers.iter(world).map(|(entity, s, conn)| Target {
        entity,
        id: None,
        name: s.name.clone(),
        client: Some(conn.client_id),
        bot: false,
    }));
    for target in inside {
        let addr = target
            .client
            .and_then(|c| world.get_resource::<UdpServerTransport>()?.client_addr(c));
        if addr.is_some_and(|a| prefix.contains(a.ip())) {
            kick(world, &target, &format!("banned: {reason}"));
            out.print(format!("kicked {}", target.name));
        }
    }
    Ok(())
}

/// `status`: the server, the match, then a line per player.
fn status(world: &mut World, out: &mut Console) {
    let config = world.resource::<ServerConfig>().clone();
    let map = world.resource::<CurrentMap>().def.name.clone();
    let state = world.resource::<MatchState>().clone();
    let now = world.resource::<Time<Real>>().elapsed_secs_f64();
    let left = if state.intermission.is_some() {
        "intermission".to_string()
    } else if config.rules.timelimit > 0.0 {
        clock((config.rules.timelimit - state.elapsed).max(0.0) as f64) + " left"
    } else {
        "no time limit".into()
    };
    out.print(format!("hostname: {}", config.name));
    out.print(format!(
        "map     : {map} ({}), {left}, fraglimit {}",
        config.rules.mode.keyword(),
        config.rules.fraglimit
    ));
    let mut query = world.query::<(
        &PlayerId,
        &PlayerName,
        &Score,
        Option<&Connection>,
        Has<BotControlled>,
        Option<&SnapshotStream>,
    )>();
    let server = world.resource::<RenetServer>();
    // A connection: its id, when it came, its ping and the snapshots a second it is sent.
    type Link = (u64, f64, f64, u32);
    let mut rows: Vec<(u8, String, i32, Option<Link>, bool)> = query
        .iter(world)
        .map(|(id, name, score, conn, bot, stream)| {
            let snaps = stream.map_or(config.tick.snapshot_hz(), |s| s.hz(&config.tick));
            (
                id.0,
                name.0.clone(),
                score.frags,
                conn.map(|c| (c.client_id, c.connected_at, ping_seconds(c, server), snaps)),
                bot,
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    let bots = rows.iter().filter(|r| r.4).count();
    out.print(format!(
        "players : {} humans, {bots} bots ({} max)",
        rows.len() - bots,
        config.max_players
    ));
    out.print(format!(
        "{:>3} {:<24} {:>5} {:>5} {:>5} {:>5} {:<22} {:>8}",
        "id", "name", "score", "ping", "loss", "snaps", "address", "time"
    ));
    let mut watchers = world.query::<(&Spectator, &Connection)>();
    let watchers: Vec<(String, u64, f64)> = watchers
        .iter(world)
        .map(|(s, c)| (s.name.clone(), c.client_id, c.connected_at))
        .collect();
    let transport = world.get_resource::<UdpServerTransport>();
    for (id, name, frags, conn, bot) in rows {
        let (ping, loss, snaps, addr, time) = match (conn, bot) {
            (Some((client, since, ping, snaps)), _) => (
                format!("{:.0}", ping * 1000.0),
                transport
                    .and_then(|t| t.upstream_loss(client))
                    .map_or("-".into(), |l| format!("{:.0}%", l * 100.0)),
                snaps.to_string(),
                transport
                    .and_then(|t| t.client_addr(client))
                    .map_or("-".into(), |a| a.to_string()),
                clock(now - since),
            ),
            (None, true) => ("BOT".into(), "-".into(), "-".into(), "-".into(), "-".into()),
            (None, false) => (
                "-".into(),
                "-".into(),
                "-".into(),
                "(dropped)".into(),
                "-".into(),
            ),
        };
        out.print(format!(
            "{id:>3} {:<24} {frags:>5} {ping:>5} {loss:>5} {snaps:>5} {addr:<22} {time:>8}",
            format!("\"{name}\"")
        ));
    }
    out.print(format!(
        "spectators: {} ({} max, {} s behind)",
        watchers.len(),
        config.max_spectators,
        config.spectator_delay
    ));
    for (name, client, since) in watchers {
        let addr = transport
            .and_then(|t| t.client_addr(client))
            .map_or("-".into(), |a| a.to_string());
        out.print(format!(
            "    {:<24} {:>23} {addr:<22} {:>8}",
            format!("\"{name}\""),
            "",
            clock(now - since)
        ));
    }
}

/// Seconds as `h:mm:ss` or `m:ss`.
fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The settings that differ from their defaults, as a config file.
pub fn config_text(cvars: &Cvars) -> String {
    let mut text = String::from(
        "// Sightline server settings, written by writeconfig. Run with +exec FILE.\n",
    );
    for c in cvars.iter().filter(|c| c.value != c.def.default) {
        text.push_str(&format!("{} {}\n", c.def.name, quote(&c.value.to_string())));
    }
    text
}

/// Sends players the output of their `rcon` lines.
fn answer_players_rcon(mut inbox: ResMut<AdminInbox>, mut outbox: MessageWriter<Outgoing>) {
    let replies = inbox.take_replies(|o| matches!(o, AdminOrigin::Player(_)));
    for (origin, lines) in replies {
        let AdminOrigin::Player(client) = origin else {
            continue;
        };
        for line in lines {
            // One message a line, each cut to what a message may hold.
            outbox.write(Outgoing::To(
                client,
                ServerMessage::ServerText {
                    kind: ServerTextKind::Rcon,
                    text: clean_text(&line, MAX_CHAT_LEN),
                },
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosting_guide_lists_the_server_s_own_variables_and_commands() {
        use sightline_console::{check_doc, command_doc_table, cvar_doc_table};
        let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/HOSTING.md");
        let cvars = check_doc(
            &doc,
            "server-cvars",
            &cvar_doc_table(&crate::server_cvar_registry()),
        );
        let commands = check_doc(
            &doc,
            "server-commands",
            &command_doc_table(server_commands()),
        );
        cvars.unwrap();
        commands.unwrap();
    }
    use sightline_console::execute_line;
    use std::net::Ipv4Addr;

    /// The server's identity key as a test keeps it: what `exec` once printed back.
    const KEY: &str = "4c6f6f6b206e6f2066757274686572207468616e2074686973206b65792e2e2e";

    /// A folder of its own for a test: `<temp>/<name>/cfg` is the config folder, and
    /// `<temp>/<name>` holds what lies outside it.
    fn folders(name: &str) -> (PathBuf, PathBuf) {
        let outside =
            std::env::temp_dir().join(format!("sightline-admin-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&outside);
        let folder = outside.join("cfg");
        std::fs::create_dir_all(&folder).unwrap();
        (folder, outside)
    }

    /// A world holding what running a console line needs, with the config file
    /// `server.cfg` in `folder`.
    fn console_world(folder: &Path) -> World {
        let mut world = World::new();
        let cvars = crate::server_cvar_registry();
        world.insert_resource(config_from_cvars(&cvars).unwrap());
        world.insert_resource(ServerCvars(cvars));
        let mut commands = ConsoleCommands::default();
        for (name, help) in ADMIN_COMMANDS {
            commands.register(name, help);
        }
        world.insert_resource(AdminState::new(commands, folder.join("server.cfg")));
        world.insert_resource(RconLockout::default());
        world.insert_resource(HostingStats::default());
        world
    }

    /// Runs `line` as it came from `origin`, and what it printed.
    fn run_from(world: &mut World, origin: AdminOrigin, line: &str) -> Vec<String> {
        run_line(
            world,
            &AdminLine {
                origin,
                line: line.into(),
                password: None,
                from: None,
            },
        )
    }

    const RCON: AdminOrigin = AdminOrigin::Rcon {
        connection: 1,
        request: 1,
    };

    fn fraglimit(world: &World) -> String {
        world
            .resource::<ServerCvars>()
            .0
            .read(cvar::FRAGLIMIT)
            .to_string()
    }

    #[test]
    fn remote_exec_runs_only_config_files_of_the_config_folder() {
        let (folder, outside) = folders("exec");
        std::fs::write(folder.join("match.cfg"), "fraglimit 7\n").unwrap();
        let key_file = folder.join("sightline-identity.key");
        std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
        let elsewhere = outside.join("outside.cfg");
        std::fs::write(&elsewhere, "fraglimit 9\n").unwrap();
        let mut world = console_world(&folder);

        for (line, what) in [
            ("exec ../outside.cfg".to_string(), "a folder above"),
            (
                format!("exec {}", quote(&elsewhere.to_string_lossy())),
                "a path",
            ),
            ("exec /etc/passwd".into(), "a system file"),
            (
                "exec sightline-identity.key".into(),
                "the identity key by name",
            ),
            (
                format!("exec {}", quote(&key_file.to_string_lossy())),
                "the identity key by path",
            ),
        ] {
            let out = run_from(&mut world, RCON, &line).join("\n");
            assert!(out.contains("no paths"), "{what}: {out}");
            assert!(
                !out.contains(KEY) && !out.contains("root:"),
                "{what}: {out}"
            );
            assert_eq!(fraglimit(&world), "20", "{what} ran");
        }
        // A config file of the folder, by name, with or without its extension.
        let out = run_from(&mut world, RCON, "exec match");
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(fraglimit(&world), "7");
        // The host's own terminal takes a path, as the command line's +exec does.
        let out = run_from(
            &mut world,
            AdminOrigin::Terminal,
            &format!("exec {}", quote(&elsewhere.to_string_lossy())),
        );
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(fraglimit(&world), "9");
        std::fs::remove_dir_all(outside).unwrap();
    }

    #[test]
    fn an_execd_file_is_never_printed_back() {
        let (folder, outside) = folders("echo");
        std::fs::write(
            folder.join("secret.cfg"),
            format!("{KEY}\nfraglimit {KEY}\nkick {KEY}\nmap {KEY}\nban {KEY}\nexec {KEY}\n"),
        )
        .unwrap();
        let mut world = console_world(&folder);
        let by_path = format!(
            "exec {}",
            quote(&folder.join("secret.cfg").to_string_lossy())
        );
        for (origin, line) in [
            (RCON, "exec secret.cfg".to_string()),
            (AdminOrigin::Terminal, by_path),
        ] {
            let out = run_from(&mut world, origin, &line);
            assert!(out.iter().all(|l| !l.contains(KEY)), "{out:#?}");
            // One error a line, each naming the file and the line's number.
            assert_eq!(out.len(), 6, "{out:#?}");
            for (n, what) in [
                (1, "unknown command or variable"),
                (
                    2,
                    "fraglimit: not valid; expected a whole number from 0 to 1000",
                ),
                (3, "kick failed"),
                (4, "map failed"),
                (5, "ban failed"),
            ] {
                let wanted = format!("secret.cfg:{n}: {what}");
                assert!(
                    out.iter().any(|l| l.ends_with(&wanted)),
                    "{wanted}: {out:#?}"
                );
            }
        }
        std::fs::remove_dir_all(outside).unwrap();
    }

    #[test]
    fn remote_writeconfig_writes_only_config_files_of_the_config_folder() {
        let (folder, outside) = folders("write");
        let mut world = console_world(&folder);
        let absolute = outside.join("x");
        for (line, what) in [
            (
                format!("writeconfig {}", quote(&absolute.to_string_lossy())),
                "a path",
            ),
            ("writeconfig ../x".to_string(), "a folder above"),
            ("writeconfig ../x.cfg".into(), "a config file above"),
            (
                "writeconfig sightline-identity.key".into(),
                "the identity key",
            ),
            ("writeconfig bans.txt".into(), "the ban list"),
        ] {
            let out = run_from(&mut world, RCON, &line).join("\n");
            assert!(
                out.contains("writeconfig: only a config file"),
                "{what}: {out}"
            );
        }
        let written: Vec<_> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(written, ["cfg"], "nothing written outside the folder");
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);

        // By name it goes into the config folder, and reads back.
        let out = run_from(
            &mut world,
            RCON,
            "sv_hostname \"x\\\" ; \\\\ // y\"; fraglimit 3; writeconfig night",
        );
        let file = folder.join("night.cfg");
        assert_eq!(out, [format!("wrote {}", file.display())]);
        let mut fresh = console_world(&folder);
        assert!(run_from(&mut fresh, RCON, "exec night.cfg").is_empty());
        assert_eq!(
            fresh.resource::<ServerCvars>().0.read(cvar::SV_HOSTNAME),
            "x\" ; \\ // y"
        );
        assert_eq!(fraglimit(&fresh), "3");
        // The host's terminal may write elsewhere.
        let out = run_from(
            &mut world,
            AdminOrigin::Terminal,
            &format!("writeconfig {}", quote(&absolute.to_string_lossy())),
        );
        assert_eq!(out, [format!("wrote {}", absolute.display())]);
        std::fs::remove_dir_all(outside).unwrap();
    }

    proptest::proptest! {
        /// Whatever text the settings hold, `writeconfig`'s file sets them again.
        #[test]
        fn written_settings_read_back(
            hostname in "(\\PC|[\"\\\\;/ ]){0,24}",
            motd in "(\\PC|[\"\\\\;/ ]){0,48}",
        ) {
            let mut cvars = crate::server_cvar_registry();
            proptest::prop_assume!(cvars.set_handle(cvar::SV_HOSTNAME, &hostname).is_ok());
            proptest::prop_assume!(cvars.set_handle(cvar::SV_MOTD, &motd).is_ok());
            let text = config_text(&cvars);
            let mut fresh = crate::server_cvar_registry();
            let mut console = Console::default();
            for line in text.lines() {
                execute_line(
                    line,
                    &mut fresh,
                    &mut Bindings::default(),
                    &ConsoleCommands::default(),
                    &mut console,
                );
            }
            let values = |c: &Cvars| c.iter().map(|c| c.value.to_string()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(values(&fresh), values(&cvars), "{}", text);
            proptest::prop_assert_eq!(console.lines().count(), 0);
        }
    }

    #[test]
    fn wrong_rcon_passwords_from_many_addresses_share_one_allowance() {
        let mut lockout = RconLockout::default();
        let mut stats = HostingStats::default();
        let t0 = Instant::now();
        let ip = |n: u32| Some(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n)));
        // The admin's host gives the right password once.
        let admin = ip(1);
        let check = |l: &mut RconLockout, s: &mut HostingStats, who, given, at| {
            l.check(who, "hunter2", given, at, s)
        };
        assert_eq!(
            check(&mut lockout, &mut stats, admin, "hunter2", t0),
            PasswordCheck::Accepted
        );
        // Thousands of addresses, four guesses each (under each one's lockout): only the
        // shared allowance is checked.
        let mut checked = 0;
        for n in 0..2000 {
            for _ in 0..4 {
                if check(&mut lockout, &mut stats, ip(100 + n), "guess", t0) == PasswordCheck::Wrong
                {
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, RCON_WRONG_BURST as u32);
        assert_eq!(stats.rcon_wrong, u64::from(checked));
        assert_eq!(stats.rcon_lockouts, 0, "no one address failed five times");
        // Spent: a new host is not checked even with the right password; the admin's is.
        assert_eq!(
            check(&mut lockout, &mut stats, ip(50_000), "hunter2", t0),
            PasswordCheck::Refused
        );
        assert_eq!(
            check(&mut lockout, &mut stats, admin, "hunter2", t0),
            PasswordCheck::Accepted
        );
        // The allowance comes back with time.
        let later = t0 + Duration::from_secs(1);
        let checked_later = (0..100)
            .filter(|n| {
                check(&mut lockout, &mut stats, ip(60_000 + n), "guess", later)
                    == PasswordCheck::Wrong
            })
            .count();
        assert_eq!(checked_later, RCON_WRONG_PER_SECOND as usize);
        // Without an address (the in-memory transport) nothing is shared or locked.
        assert_eq!(
            check(&mut lockout, &mut stats, None, "hunter2", later),
            PasswordCheck::Accepted
        );
    }
}
