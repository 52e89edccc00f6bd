//! Players' lifetime statistics, kept in SQLite (`--stats PATH`): who they are (by the key
//! their client made once, never by name), what names they used, their kills, deaths,
//! suicides, damage, shots and hits by weapon, matches played and won and time played;
//! and each match with its map, mode, players and scores.
//!
//! The tick thread only counts, in each player's [`Career`], and every few seconds hands
//! what it counted to a writer thread over a bounded queue: it never touches the disk and
//! never waits (a full queue drops the batch and counts it). The writer applies each batch
//! in one transaction, in WAL mode, so killing the server loses at most the last few
//! seconds and never leaves a half-written match. Console questions (`stats`, `top`) go the
//! same way and their answers come back a frame or two later.

use bevy::prelude::*;
use rusqlite::{Connection as Db, ErrorCode, OpenFlags, OptionalExtension, params};
use sha2::{Digest, Sha256};
use sightline_combat::{CombatEvent, Score, Team, WeaponKind};
use sightline_map::CurrentMap;
use sightline_protocol::{Lifetime, PlayerKey, ServerMessage};
use sightline_runtime::TakeOnce;
use sightline_server::{AdminInbox, AdminOrigin, MatchNews, MatchState, PlayerKeyOf, ServerConfig};
use sightline_sim::{BotControlled, PlayerId, PlayerName};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds between hand-overs of what the players did to the writer: what a killed
/// server can lose at most.
pub const STATS_FLUSH_SECONDS: f64 = 5.0;
/// Jobs waiting for the writer at most; past it a batch is dropped and counted, so a slow
/// disk costs statistics, never ticks.
pub const STATS_QUEUE: usize = 4096;
/// Most rows `top` and the leaderboard list.
pub const MAX_TOP: usize = 100;
/// How long a statement waits on another process holding the database.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);
/// Seconds between log lines about failed writes; every failure is counted.
const ERROR_LOG_SECONDS: u64 = 60;

/// The schema, one migration a version: version N is the first N applied, its number kept
/// in SQLite's `user_version`. Append only; never edit a migration that has shipped.
const MIGRATIONS: &[&str] = &[
    // 1: players (by the hash of their key), their names, weapons; matches and who played.
    "CREATE TABLE players (
        id INTEGER PRIMARY KEY,
        key_hash BLOB NOT NULL UNIQUE,
        name TEXT NOT NULL,
        first_seen INTEGER NOT NULL,
        last_seen INTEGER NOT NULL,
        kills INTEGER NOT NULL DEFAULT 0,
        deaths INTEGER NOT NULL DEFAULT 0,
        suicides INTEGER NOT NULL DEFAULT 0,
        damage REAL NOT NULL DEFAULT 0,
        seconds_played REAL NOT NULL DEFAULT 0,
        matches_played INTEGER NOT NULL DEFAULT 0,
        matches_won INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX players_by_kills ON players (kills DESC);
    CREATE TABLE player_names (
        player INTEGER NOT NULL REFERENCES players (id),
        name TEXT NOT NULL,
        first_used INTEGER NOT NULL,
        last_used INTEGER NOT NULL,
        PRIMARY KEY (player, name)
    );
    CREATE INDEX player_names_by_name ON player_names (name COLLATE NOCASE);
    CREATE TABLE weapon_stats (
        player INTEGER NOT NULL REFERENCES players (id),
        weapon TEXT NOT NULL,
        shots INTEGER NOT NULL DEFAULT 0,
        hits INTEGER NOT NULL DEFAULT 0,
        kills INTEGER NOT NULL DEFAULT 0,
        damage REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (player, weapon)
    );
    CREATE TABLE matches (
        id INTEGER PRIMARY KEY,
        ended_at INTEGER NOT NULL,
        map TEXT NOT NULL,
        mode TEXT NOT NULL,
        seconds REAL NOT NULL,
        winner TEXT NOT NULL
    );
    CREATE TABLE match_players (
        match INTEGER NOT NULL REFERENCES matches (id),
        player INTEGER REFERENCES players (id),
        name TEXT NOT NULL,
        bot INTEGER NOT NULL,
        team TEXT,
        frags INTEGER NOT NULL,
        deaths INTEGER NOT NULL,
        won INTEGER NOT NULL
    );",
];

/// What the database stores a player's key as: a hash, so a copy of the file does not
/// hand out keys that would let someone play under another's record.
type KeyHash = [u8; 32];

fn key_hash(key: &PlayerKey) -> KeyHash {
    let mut hasher = Sha256::new();
    hasher.update(b"sightline player key v1");
    hasher.update(key);
    hasher.finalize().into()
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A statistics database, opened, checked and brought to the current schema: on the
/// main thread, before the server starts, so a bad file is the host's clear error.
pub struct StatsDatabase {
    path: PathBuf,
    db: Db,
}

impl StatsDatabase {
    /// Opens (or creates) the database at `path`, in WAL mode, checked and migrated.
    pub fn open(path: &Path) -> Result<Self, String> {
        let fail = |e: rusqlite::Error| describe(path, &e);
        let mut db = Db::open(path).map_err(fail)?;
        db.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        let check: String = db
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(fail)?;
        if check != "ok" {
            return Err(format!(
                "{}: the statistics database is damaged ({check}); move it aside to start \
                 afresh",
                path.display()
            ));
        }
        let mode: String = db
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!(
                "{}: cannot use write-ahead logging (journal mode stays {mode})",
                path.display()
            ));
        }
        // In WAL mode NORMAL loses nothing committed when the process dies (only on a
        // power cut, the last commits), at a fraction of FULL's syncs.
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
        db.pragma_update(None, "foreign_keys", "ON").map_err(fail)?;
        migrate(&mut db).map_err(|e| match e {
            Migration::Sql(e) => describe(path, &e),
            Migration::Newer(found) => format!(
                "{}: written by a newer Sightline (schema version {found}; this one knows up \
                 to {})",
                path.display(),
                MIGRATIONS.len()
            ),
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            db,
        })
    }

    /// The schema version the file is at.
    pub fn schema_version(&self) -> usize {
        self.db
            .pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
            .map_or(0, |v| v as usize)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A statistics error in words a host can act on.
fn describe(path: &Path, e: &rusqlite::Error) -> String {
    let what = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "is locked by another program (another server writing it?)".to_string()
        }
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            "is not a statistics database, or is damaged; move it aside to start afresh".to_string()
        }
        Some(ErrorCode::DiskFull) => "cannot be written: the disk is full".to_string(),
        Some(ErrorCode::CannotOpen) => {
            "cannot be opened (does its folder exist, and may the server write there?)".to_string()
        }
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
            "cannot be written (read-only)".to_string()
        }
        _ => format!("failed: {e}"),
    };
    format!("{}: statistics database {what}", path.display())
}

enum Migration {
    Sql(rusqlite::Error),
    Newer(usize),
}

/// Applies the migrations the file lacks, each in its own transaction with its version.
fn migrate(db: &mut Db) -> Result<(), Migration> {
    let version: i64 = db
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(Migration::Sql)?;
    let version = usize::try_from(version).unwrap_or(usize::MAX);
    if version > MIGRATIONS.len() {
        return Err(Migration::Newer(version));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        let tx = db.transaction().map_err(Migration::Sql)?;
        tx.execute_batch(sql).map_err(Migration::Sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)
            .map_err(Migration::Sql)?;
        tx.commit().map_err(Migration::Sql)?;
    }
    Ok(())
}

/// What one player did since it was last handed to the writer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Tally {
    kills: u32,
    deaths: u32,
    suicides: u32,
    damage: f64,
    seconds: f64,
    weapons: [WeaponTally; WeaponKind::ALL.len()],
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct WeaponTally {
    shots: u32,
    hits: u32,
    kills: u32,
    damage: f64,
}

impl Tally {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A player's statistics on the tick thread: what they did not yet written, and their
/// record as the database had it when they joined.
#[derive(Component, Debug)]
pub struct Career {
    key: KeyHash,
    /// Kills and deaths before this session, once the database answered.
    before: Option<Lifetime>,
    /// Kills and deaths this session.
    session: Lifetime,
    pending: Tally,
    /// Shots of each weapon fired and not yet seen to hit: a shot counts one hit however
    /// many pellets or players its blast struck.
    unmatched_shots: [u32; WeaponKind::ALL.len()],
    /// When time played was last counted, seconds of real time.
    since: f64,
}

impl Career {
    /// Lifetime kills and deaths, this session included; `None` until the database
    /// answered.
    pub fn lifetime(&self) -> Option<Lifetime> {
        self.before.map(|b| Lifetime {
            kills: b.kills.saturating_add(self.session.kills),
            deaths: b.deaths.saturating_add(self.session.deaths),
        })
    }
}

/// Seconds between lifetime records sent unchanged, for players who joined since.
const LIFETIMES_EVERY: f64 = 5.0;

/// Sends every client the players' lifetime records, checked once a second: when they
/// changed, and every few seconds for those who joined since (spectators each as their
/// late world reaches it).
fn send_lifetimes(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    mut sent: Local<(f64, Vec<(PlayerId, Lifetime)>)>,
    mut news: MatchNews,
    careers: Query<(&PlayerId, &Career)>,
) {
    let now = time.elapsed_secs_f64();
    if now - *last < 1.0 {
        return;
    }
    *last = now;
    let mut lifetimes: Vec<(PlayerId, Lifetime)> = careers
        .iter()
        .filter_map(|(id, career)| Some((*id, career.lifetime()?)))
        .collect();
    lifetimes.sort_by_key(|(id, _)| *id);
    let (sent_at, rows) = &mut *sent;
    if !lifetimes.is_empty() && (lifetimes != *rows || now - *sent_at >= LIFETIMES_EVERY) {
        news.tell(ServerMessage::Lifetimes(lifetimes.clone()));
        *rows = lifetimes;
        *sent_at = now;
    }
}

/// A question from the console, answered by the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsQuery {
    /// A player's record, by a name they use or used.
    Player(String),
    /// The best players, by kills.
    Top(usize),
}

/// Questions asked by the console line being run (see `admin`).
#[derive(Resource, Debug, Default)]
pub struct StatsQuestions(pub Vec<StatsQuery>);

/// One player in a finished match.
#[derive(Debug, Clone)]
struct MatchPlayer {
    key: Option<KeyHash>,
    name: String,
    bot: bool,
    team: Option<Team>,
    frags: i32,
    deaths: u32,
    won: bool,
}

/// A finished match.
#[derive(Debug, Clone)]
struct MatchRecord {
    ended_at: i64,
    map: String,
    mode: &'static str,
    seconds: f64,
    winner: String,
    players: Vec<MatchPlayer>,
}

enum Job {
    Join {
        entity: Entity,
        key: KeyHash,
        name: String,
        at: i64,
    },
    Add {
        key: KeyHash,
        tally: Tally,
    },
    Match(MatchRecord),
    Ask {
        origin: AdminOrigin,
        printed: Vec<String>,
        questions: Vec<StatsQuery>,
    },
}

enum Answer {
    Lifetime {
        entity: Entity,
        key: KeyHash,
        lifetime: Lifetime,
    },
    Text {
        origin: AdminOrigin,
        lines: Vec<String>,
    },
}

/// The tick thread's end of the writer: jobs out, answers in.
#[derive(Resource)]
pub struct StatsWriter {
    // `None` once dropped: closing the queue ends the writer's thread.
    jobs: Option<SyncSender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    answers: Mutex<Receiver<Answer>>,
    /// Jobs dropped because the writer was too far behind.
    pub dropped: u64,
    /// Transactions that failed (disk full, locked too long): shared with the writer.
    pub failures: Arc<AtomicU64>,
    warned: bool,
}

impl StatsWriter {
    /// Hands `job` over without waiting; a full queue drops it.
    fn send(&mut self, job: Job) {
        let Some(jobs) = &self.jobs else {
            return;
        };
        match jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped += 1;
                if !self.warned {
                    self.warned = true;
                    warn!(
                        "statistics: the database is too slow; dropping what cannot wait \
                         (counted on the metrics as sightline_stats_dropped_total)"
                    );
                }
            }
            Err(TrySendError::Disconnected(_)) => self.dropped += 1,
        }
    }

    /// Asks the console's questions; the answer (after `printed`) goes to `origin`.
    pub fn ask(&mut self, origin: AdminOrigin, printed: Vec<String>, questions: Vec<StatsQuery>) {
        self.send(Job::Ask {
            origin,
            printed,
            questions,
        });
    }
}

impl Drop for StatsWriter {
    /// Waits for the writer to finish what it was given: the server stops with its last
    /// statistics written.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Keeps players' statistics in `database`.
pub struct RecordsPlugin {
    // Taken out once by `build`.
    database: TakeOnce<StatsDatabase>,
}

impl RecordsPlugin {
    /// Statistics kept in `database`.
    pub fn new(database: StatsDatabase) -> Self {
        Self {
            database: TakeOnce::new(database),
        }
    }
}

impl Plugin for RecordsPlugin {
    fn build(&self, app: &mut App) {
        let database = self.database.take("RecordsPlugin");
        let (jobs, queue) = mpsc::sync_channel(STATS_QUEUE);
        let (reply, answers) = mpsc::channel();
        let failures = Arc::new(AtomicU64::new(0));
        let writer_failures = failures.clone();
        let thread = std::thread::Builder::new()
            .name("stats".into())
            .spawn(move || write_jobs(database.db, queue, reply, &writer_failures))
            .expect("can spawn the statistics thread");
        app.insert_resource(StatsWriter {
            jobs: Some(jobs),
            thread: Some(thread),
            answers: Mutex::new(answers),
            dropped: 0,
            failures,
            warned: false,
        })
        .init_resource::<StatsQuestions>()
        .add_observer(hand_over_on_leaving)
        .add_systems(
            Update,
            (
                begin_careers,
                tally_combat,
                record_finished_matches,
                hand_over_tallies,
                take_answers,
                send_lifetimes,
            )
                .chain(),
        )
        .add_systems(Last, hand_over_at_exit);
    }
}

/// Starts counting for each player who joined with a key, and asks for their record.
fn begin_careers(
    mut commands: Commands,
    time: Res<Time<Real>>,
    mut writer: ResMut<StatsWriter>,
    joined: Query<(Entity, &PlayerName, &PlayerKeyOf), Added<PlayerKeyOf>>,
) {
    for (entity, name, key) in &joined {
        let key = key_hash(&key.0);
        commands.entity(entity).insert(Career {
            key,
            before: None,
            session: Lifetime::default(),
            pending: Tally::default(),
            unmatched_shots: Default::default(),
            since: time.elapsed_secs_f64(),
        });
        writer.send(Job::Join {
            entity,
            key,
            name: name.0.clone(),
            at: unix_now(),
        });
    }
}

/// Counts shots, hits, damage, kills and deaths into the players' careers.
fn tally_combat(
    mut events: MessageReader<CombatEvent>,
    mut careers: Query<(&PlayerId, &mut Career)>,
) {
    for event in events.read() {
        let mut of = |who: PlayerId, f: &mut dyn FnMut(&mut Career)| {
            if let Some((_, mut career)) = careers.iter_mut().find(|(id, _)| **id == who) {
                f(&mut career);
            }
        };
        match *event {
            CombatEvent::Fired {
                shooter, weapon, ..
            } => of(shooter, &mut |c| {
                let w = weapon.index();
                c.pending.weapons[w].shots += 1;
                // A hitscan shot's hits come with it: pellets of the last one that struck
                // nobody must not be matched by this one's. Projectiles fly a while,
                // several at once.
                c.unmatched_shots[w] = if weapon.def().projectile.is_some() {
                    c.unmatched_shots[w].saturating_add(1)
                } else {
                    1
                };
            }),
            CombatEvent::Hit {
                shooter,
                target,
                damage,
                weapon,
                ..
            } if shooter != target => of(shooter, &mut |c| {
                let w = weapon.index();
                let tally = &mut c.pending.weapons[w];
                tally.damage += f64::from(damage);
                c.pending.damage += f64::from(damage);
                if c.unmatched_shots[w] > 0 {
                    c.unmatched_shots[w] -= 1;
                    tally.hits += 1;
                }
            }),
            CombatEvent::Killed {
                victim,
                killer,
                weapon,
            } => {
                of(victim, &mut |c| {
                    c.pending.deaths += 1;
                    c.session.deaths = c.session.deaths.saturating_add(1);
                    if killer == victim {
                        c.pending.suicides += 1;
                    }
                });
                if killer != victim {
                    of(killer, &mut |c| {
                        c.pending.kills += 1;
                        c.pending.weapons[weapon.index()].kills += 1;
                        c.session.kills = c.session.kills.saturating_add(1);
                    });
                }
            }
            _ => {}
        }
    }
}

/// Hands what a career counted, with the time played up to `now`, to the writer.
fn hand_over(writer: &mut StatsWriter, career: &mut Career, now: f64) {
    career.pending.seconds += (now - career.since).max(0.0);
    career.since = now;
    let tally = std::mem::take(&mut career.pending);
    if !tally.is_empty() {
        writer.send(Job::Add {
            key: career.key,
            tally,
        });
    }
}

/// Hands what the players did to the writer every [`STATS_FLUSH_SECONDS`].
fn hand_over_tallies(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    mut writer: ResMut<StatsWriter>,
    mut careers: Query<&mut Career>,
) {
    let now = time.elapsed_secs_f64();
    if now - *last < STATS_FLUSH_SECONDS {
        return;
    }
    *last = now;
    for mut career in &mut careers {
        hand_over(&mut writer, &mut career, now);
    }
}

/// The server stopping hands over everything counted.
fn hand_over_at_exit(
    exit: MessageReader<AppExit>,
    time: Res<Time<Real>>,
    mut writer: ResMut<StatsWriter>,
    mut careers: Query<&mut Career>,
) {
    if exit.is_empty() {
        return;
    }
    for mut career in &mut careers {
        hand_over(&mut writer, &mut career, time.elapsed_secs_f64());
    }
}

/// A player leaving (or kicked) hands over what is left.
fn hand_over_on_leaving(
    leaving: On<Remove, Career>,
    time: Res<Time<Real>>,
    writer: Option<ResMut<StatsWriter>>,
    mut careers: Query<&mut Career>,
) {
    let (Some(mut writer), Ok(mut career)) = (writer, careers.get_mut(leaving.entity)) else {
        return;
    };
    hand_over(&mut writer, &mut career, time.elapsed_secs_f64());
}

/// Each match that ended: everyone's tallies first, then the match with its players.
fn record_finished_matches(
    time: Res<Time<Real>>,
    state: Res<MatchState>,
    mut seen: Local<u32>,
    config: Res<ServerConfig>,
    map: Res<CurrentMap>,
    mut writer: ResMut<StatsWriter>,
    mut players: Query<(
        &PlayerName,
        &Score,
        Option<&Team>,
        Has<BotControlled>,
        Option<&mut Career>,
    )>,
) {
    if state.finished == *seen {
        return;
    }
    *seen = state.finished;
    let now = time.elapsed_secs_f64();
    let mut rows = Vec::new();
    for (name, score, team, bot, career) in &mut players {
        let mut key = None;
        if let Some(mut career) = career {
            hand_over(&mut writer, &mut career, now);
            key = Some(career.key);
        }
        rows.push(MatchPlayer {
            key,
            name: name.0.clone(),
            bot,
            team: team.copied(),
            frags: score.frags,
            deaths: score.deaths,
            won: false,
        });
    }
    mark_winners(&mut rows);
    writer.send(Job::Match(MatchRecord {
        ended_at: unix_now(),
        map: map.def.name.clone(),
        mode: config.rules.mode.keyword(),
        seconds: f64::from(state.elapsed),
        winner: state
            .intermission
            .as_ref()
            .map_or_else(String::new, |(_, w)| w.clone()),
        players: rows,
    }));
}

/// The players with the most frags win; in team games, everyone on the side with the most.
fn mark_winners(rows: &mut [MatchPlayer]) {
    let teams = rows.iter().any(|r| r.team.is_some());
    if teams {
        let total = |t: Team| -> i64 {
            rows.iter()
                .filter(|r| r.team == Some(t))
                .map(|r| i64::from(r.frags))
                .sum()
        };
        let best = Team::ALL.iter().map(|t| total(*t)).max().unwrap_or(0);
        let winners: Vec<Team> = Team::ALL
            .iter()
            .copied()
            .filter(|t| total(*t) == best)
            .collect();
        // A draw has no winner.
        if winners.len() == 1 {
            for r in rows.iter_mut() {
                r.won = r.team == Some(winners[0]);
            }
        }
    } else if let Some(best) = rows.iter().map(|r| r.frags).max() {
        for r in rows.iter_mut() {
            r.won = r.frags == best;
        }
    }
}

/// Takes the writer's answers: records for joining players, text for the console.
fn take_answers(
    writer: Res<StatsWriter>,
    mut careers: Query<&mut Career>,
    inbox: Option<ResMut<AdminInbox>>,
) {
    let answers: Vec<Answer> = writer
        .answers
        .lock()
        .expect("not poisoned")
        .try_iter()
        .collect();
    let mut inbox = inbox;
    for answer in answers {
        match answer {
            Answer::Lifetime {
                entity,
                key,
                lifetime,
            } => {
                // The entity may have left, and its id been reused by another player.
                if let Ok(mut career) = careers.get_mut(entity)
                    && career.key == key
                {
                    career.before = Some(lifetime);
                }
            }
            Answer::Text { origin, lines } => {
                if let Some(inbox) = inbox.as_mut() {
                    inbox.replies.push((origin, lines));
                }
            }
        }
    }
}

/// The writer's thread: each batch of jobs that waits is one transaction; questions are
/// answered after it, so they see what was written.
fn write_jobs(
    mut db: Db,
    jobs: Receiver<Job>,
    answers: mpsc::Sender<Answer>,
    failures: &AtomicU64,
) {
    let mut last_logged: Option<std::time::Instant> = None;
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        batch.extend(jobs.try_iter().take(255));
        let (asks, writes): (Vec<Job>, Vec<Job>) = batch
            .into_iter()
            .partition(|j| matches!(j, Job::Ask { .. }));
        if !writes.is_empty() {
            match write_batch(&mut db, &writes) {
                Ok(lifetimes) => {
                    for answer in lifetimes {
                        let _ = answers.send(answer);
                    }
                }
                Err(e) => {
                    let count = failures.fetch_add(1, Ordering::Relaxed) + 1;
                    if last_logged.is_none_or(|at| at.elapsed().as_secs() >= ERROR_LOG_SECONDS) {
                        last_logged = Some(std::time::Instant::now());
                        error!(
                            "statistics: a write failed ({e}); the game goes on, this batch \
                             is lost ({count} lost so far)"
                        );
                    }
                }
            }
        }
        for ask in asks {
            let Job::Ask {
                origin,
                mut printed,
                questions,
            } = ask
            else {
                continue;
            };
            for question in &questions {
                match answer_question(&db, question) {
                    Ok(lines) => printed.extend(lines),
                    Err(e) => printed.push(format!("error: statistics: {e}")),
                }
            }
            let _ = answers.send(Answer::Text {
                origin,
                lines: printed,
            });
        }
    }
}

/// Writes a batch in one transaction; the joining players' records come back.
fn write_batch(db: &mut Db, jobs: &[Job]) -> rusqlite::Result<Vec<Answer>> {
    let tx = db.transaction()?;
    let mut lifetimes = Vec::new();
    for job in jobs {
        match job {
            Job::Join {
                entity,
                key,
                name,
                at,
            } => {
                let id = upsert_player(&tx, key, name, *at)?;
                tx.execute(
                    "INSERT INTO player_names (player, name, first_used, last_used)
                     VALUES (?1, ?2, ?3, ?3)
                     ON CONFLICT (player, name) DO UPDATE SET last_used = ?3",
                    params![id, name, at],
                )?;
                let (kills, deaths): (i64, i64) = tx.query_row(
                    "SELECT kills, deaths FROM players WHERE id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                lifetimes.push(Answer::Lifetime {
                    entity: *entity,
                    key: *key,
                    lifetime: Lifetime {
                        kills: u32::try_from(kills).unwrap_or(u32::MAX),
                        deaths: u32::try_from(deaths).unwrap_or(u32::MAX),
                    },
                });
            }
            Job::Add { key, tally } => add_tally(&tx, key, tally)?,
            Job::Match(record) => add_match(&tx, record)?,
            Job::Ask { .. } => {}
        }
    }
    tx.commit()?;
    Ok(lifetimes)
}

/// The player's row id, made on their first visit; their current name and last visit
/// kept.
fn upsert_player(
    tx: &rusqlite::Transaction,
    key: &KeyHash,
    name: &str,
    at: i64,
) -> rusqlite::Result<i64> {
    tx.query_row(
        "INSERT INTO players (key_hash, name, first_seen, last_seen) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (key_hash) DO UPDATE SET name = ?2, last_seen = ?3
         RETURNING id",
        params![key.as_slice(), name, at],
        |r| r.get(0),
    )
}

/// The row of the player with this key, if they ever joined.
fn player_id(tx: &rusqlite::Transaction, key: &KeyHash) -> rusqlite::Result<Option<i64>> {
    tx.query_row(
        "SELECT id FROM players WHERE key_hash = ?1",
        [key.as_slice()],
        |r| r.get(0),
    )
    .optional()
}

fn add_tally(tx: &rusqlite::Transaction, key: &KeyHash, t: &Tally) -> rusqlite::Result<()> {
    let Some(id) = player_id(tx, key)? else {
        // The join's job was dropped: nothing to add to.
        return Ok(());
    };
    tx.execute(
        "UPDATE players SET kills = kills + ?2, deaths = deaths + ?3, suicides = suicides + ?4,
         damage = damage + ?5, seconds_played = seconds_played + ?6, last_seen = ?7
         WHERE id = ?1",
        params![
            id,
            t.kills,
            t.deaths,
            t.suicides,
            t.damage,
            t.seconds,
            unix_now()
        ],
    )?;
    for (weapon, w) in WeaponKind::ALL.iter().zip(&t.weapons) {
        if *w == WeaponTally::default() {
            continue;
        }
        tx.execute(
            "INSERT INTO weapon_stats (player, weapon, shots, hits, kills, damage)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (player, weapon) DO UPDATE SET shots = shots + ?3, hits = hits + ?4,
             kills = kills + ?5, damage = damage + ?6",
            params![id, weapon.def().name, w.shots, w.hits, w.kills, w.damage],
        )?;
    }
    Ok(())
}

fn add_match(tx: &rusqlite::Transaction, m: &MatchRecord) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO matches (ended_at, map, mode, seconds, winner) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![m.ended_at, m.map, m.mode, m.seconds, m.winner],
    )?;
    let match_id = tx.last_insert_rowid();
    for p in &m.players {
        let player = match &p.key {
            Some(key) => player_id(tx, key)?,
            None => None,
        };
        if let Some(id) = player {
            tx.execute(
                "UPDATE players SET matches_played = matches_played + 1,
                 matches_won = matches_won + ?2 WHERE id = ?1",
                params![id, p.won],
            )?;
        }
        tx.execute(
            "INSERT INTO match_players (match, player, name, bot, team, frags, deaths, won)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                match_id,
                player,
                p.name,
                p.bot,
                p.team.map(|t| t.name()),
                p.frags,
                p.deaths,
                p.won
            ],
        )?;
    }
    Ok(())
}

/// A row of the best players.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TopRow {
    /// Current name.
    pub name: String,
    /// Other players killed.
    pub kills: i64,
    /// Deaths, suicides included.
    pub deaths: i64,
    /// Suicides.
    pub suicides: i64,
    /// Matches played to their end.
    pub matches_played: i64,
    /// Matches won.
    pub matches_won: i64,
    /// Seconds played.
    pub seconds_played: f64,
}

/// The best `n` players by kills (at most [`MAX_TOP`]).
fn top(db: &Db, n: usize) -> rusqlite::Result<Vec<TopRow>> {
    let mut statement = db.prepare_cached(
        "SELECT name, kills, deaths, suicides, matches_played, matches_won, seconds_played
         FROM players ORDER BY kills DESC, deaths ASC, id ASC LIMIT ?1",
    )?;
    let rows = statement.query_map([n.min(MAX_TOP) as i64], |r| {
        Ok(TopRow {
            name: r.get(0)?,
            kills: r.get(1)?,
            deaths: r.get(2)?,
            suicides: r.get(3)?,
            matches_played: r.get(4)?,
            matches_won: r.get(5)?,
            seconds_played: r.get(6)?,
        })
    })?;
    rows.collect()
}

fn ratio(kills: i64, deaths: i64) -> String {
    if deaths == 0 {
        kills.to_string()
    } else {
        format!("{:.2}", kills as f64 / deaths as f64)
    }
}

fn played(seconds: f64) -> String {
    let minutes = (seconds / 60.0).round() as i64;
    format!("{}h{:02}m", minutes / 60, minutes % 60)
}

/// The console's answer to a question.
fn answer_question(db: &Db, question: &StatsQuery) -> rusqlite::Result<Vec<String>> {
    match question {
        StatsQuery::Top(n) => {
            let rows = top(db, *n)?;
            if rows.is_empty() {
                return Ok(vec!["no statistics yet".into()]);
            }
            let mut lines = vec![format!(
                "{:>3} {:<24} {:>6} {:>6} {:>6} {:>9} {:>7}",
                "#", "name", "kills", "deaths", "K/D", "won/play", "time"
            )];
            for (i, r) in rows.iter().enumerate() {
                lines.push(format!(
                    "{:>3} {:<24} {:>6} {:>6} {:>6} {:>9} {:>7}",
                    i + 1,
                    r.name,
                    r.kills,
                    r.deaths,
                    ratio(r.kills, r.deaths),
                    format!("{}/{}", r.matches_won, r.matches_played),
                    played(r.seconds_played)
                ));
            }
            Ok(lines)
        }
        StatsQuery::Player(name) => player_record(db, name),
    }
}

/// A player's record, found by a name they use or used (a few, if several match).
fn player_record(db: &Db, name: &str) -> rusqlite::Result<Vec<String>> {
    let mut find = db.prepare_cached(
        "SELECT DISTINCT p.id FROM players p LEFT JOIN player_names n ON n.player = p.id
         WHERE p.name = ?1 COLLATE NOCASE OR n.name = ?1 COLLATE NOCASE
         ORDER BY p.last_seen DESC LIMIT 5",
    )?;
    let ids: Vec<i64> = find
        .query_map([name], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if ids.is_empty() {
        return Ok(vec![format!(
            "stats: nobody called {name:?} has played here"
        )]);
    }
    let mut lines = Vec::new();
    for id in ids {
        let (current, kills, deaths, suicides, damage, seconds, played_n, won, first, last): (
            String,
            i64,
            i64,
            i64,
            f64,
            f64,
            i64,
            i64,
            String,
            String,
        ) = db.query_row(
            "SELECT name, kills, deaths, suicides, damage, seconds_played, matches_played,
             matches_won, date(first_seen, 'unixepoch'), date(last_seen, 'unixepoch')
             FROM players WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                ))
            },
        )?;
        lines.push(format!(
            "{current}: {kills} kills, {deaths} deaths (K/D {}), {suicides} suicides, {:.0} \
             damage, won {won} of {played_n} matches, played {}",
            ratio(kills, deaths),
            damage,
            played(seconds)
        ));
        let mut names = db.prepare_cached(
            "SELECT name FROM player_names WHERE player = ?1 AND name <> ?2
             ORDER BY last_used DESC LIMIT 10",
        )?;
        let others: Vec<String> = names
            .query_map(params![id, current], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if !others.is_empty() {
            lines.push(format!("  also played as {}", others.join(", ")));
        }
        let mut weapons = db.prepare_cached(
            "SELECT weapon, shots, hits, kills, damage FROM weapon_stats WHERE player = ?1
             ORDER BY weapon",
        )?;
        let rows = weapons.query_map([id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, f64>(4)?,
            ))
        })?;
        for row in rows {
            let (weapon, shots, hits, kills, damage) = row?;
            let accuracy = if shots > 0 {
                format!("{:.0}%", 100.0 * hits as f64 / shots as f64)
            } else {
                "-".into()
            };
            lines.push(format!(
                "  {weapon}: {accuracy} of {shots} shots hit, {kills} kills, {damage:.0} damage"
            ));
        }
        lines.push(format!("  first seen {first}, last seen {last}"));
    }
    Ok(lines)
}

/// The leaderboard page for the metrics listener (`/leaderboard?limit=N`, at most
/// [`MAX_TOP`]): a read-only connection of its own, used from the listener's thread.
pub fn leaderboard_page(path: &Path) -> Result<crate::JsonPage, String> {
    let db = Db::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| describe(path, &e))?;
    db.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| describe(path, &e))?;
    let db = Mutex::new(db);
    Ok(Arc::new(move |query: &str| {
        let limit = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("limit="))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(20)
            .clamp(1, MAX_TOP);
        let db = db
            .lock()
            .map_err(|_| "statistics unavailable".to_string())?;
        let rows = top(&db, limit).map_err(|e| format!("statistics: {e}"))?;
        serde_json::to_string(&rows).map_err(|e| e.to_string())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("sightline-records-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("stats.db")
    }

    fn tally(kills: u32, deaths: u32) -> Tally {
        let mut t = Tally {
            kills,
            deaths,
            seconds: 60.0,
            ..Tally::default()
        };
        t.weapons[WeaponKind::Rifle.index()] = WeaponTally {
            shots: 10,
            hits: 4,
            kills,
            damage: 80.0,
        };
        t
    }

    #[test]
    fn a_players_record_adds_up_across_sessions_and_names() {
        let path = temp_db("sessions");
        let mut db = StatsDatabase::open(&path).unwrap();
        assert_eq!(db.schema_version(), MIGRATIONS.len());
        let key = key_hash(&[1; 16]);
        let join = |name: &str| Job::Join {
            entity: Entity::PLACEHOLDER,
            key,
            name: name.into(),
            at: 1_700_000_000,
        };
        let answers = write_batch(
            &mut db.db,
            &[
                join("ann"),
                Job::Add {
                    key,
                    tally: tally(3, 1),
                },
            ],
        )
        .unwrap();
        assert!(matches!(
            answers[..],
            [Answer::Lifetime {
                lifetime: Lifetime {
                    kills: 0,
                    deaths: 0
                },
                ..
            }]
        ));
        let answers = write_batch(
            &mut db.db,
            &[
                join("annie"),
                Job::Add {
                    key,
                    tally: tally(2, 2),
                },
            ],
        )
        .unwrap();
        let [Answer::Lifetime { lifetime, .. }] = &answers[..] else {
            panic!("one lifetime");
        };
        assert_eq!(
            *lifetime,
            Lifetime {
                kills: 3,
                deaths: 1
            },
            "before this session"
        );
        let lines = player_record(&db.db, "ANN").unwrap();
        assert!(
            lines[0].starts_with("annie: 5 kills, 3 deaths (K/D 1.67)"),
            "{lines:?}"
        );
        assert!(lines[1].contains("also played as ann"), "{lines:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("rifle: 40% of 20 shots hit, 5 kills")),
            "{lines:?}"
        );
        let top = top(&db.db, 10).unwrap();
        assert_eq!(top.len(), 1);
        assert_eq!(
            (top[0].kills, top[0].deaths, top[0].seconds_played),
            (5, 3, 120.0)
        );
    }

    #[test]
    fn a_match_is_kept_with_its_players_and_winners() {
        let path = temp_db("match");
        let mut db = StatsDatabase::open(&path).unwrap();
        let key = key_hash(&[2; 16]);
        let join = Job::Join {
            entity: Entity::PLACEHOLDER,
            key,
            name: "bo".into(),
            at: 1,
        };
        let mut players = vec![
            MatchPlayer {
                key: Some(key),
                name: "bo".into(),
                bot: false,
                team: None,
                frags: 7,
                deaths: 2,
                won: false,
            },
            MatchPlayer {
                key: None,
                name: "Bot 1".into(),
                bot: true,
                team: None,
                frags: 3,
                deaths: 7,
                won: false,
            },
        ];
        mark_winners(&mut players);
        assert!(players[0].won && !players[1].won);
        let record = MatchRecord {
            ended_at: 2,
            map: "duel".into(),
            mode: "dm",
            seconds: 300.0,
            winner: "bo wins".into(),
            players,
        };
        write_batch(&mut db.db, &[join, Job::Match(record)]).unwrap();
        let (played, won): (i64, i64) = db
            .db
            .query_row("SELECT matches_played, matches_won FROM players", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((played, won), (1, 1));
        let rows: i64 = db
            .db
            .query_row(
                "SELECT count(*) FROM match_players WHERE match = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 2);
    }

    #[test]
    fn team_games_are_won_by_a_side_and_a_draw_by_nobody() {
        let row = |team, frags| MatchPlayer {
            key: None,
            name: String::new(),
            bot: false,
            team: Some(team),
            frags,
            deaths: 0,
            won: false,
        };
        let mut rows = vec![row(Team::Red, 5), row(Team::Red, 1), row(Team::Blue, 5)];
        mark_winners(&mut rows);
        assert_eq!(
            rows.iter().map(|r| r.won).collect::<Vec<_>>(),
            [true, true, false]
        );
        let mut draw = vec![row(Team::Red, 5), row(Team::Blue, 5)];
        mark_winners(&mut draw);
        assert!(draw.iter().all(|r| !r.won));
    }

    #[test]
    fn bad_files_get_clear_errors() {
        let path = temp_db("bad");
        std::fs::write(
            &path,
            b"this is not a database, only some text, long enough to have a header",
        )
        .unwrap();
        let e = StatsDatabase::open(&path).err().unwrap();
        assert!(e.contains("is not a statistics database"), "{e}");

        let newer = temp_db("newer");
        {
            let db = Db::open(&newer).unwrap();
            db.pragma_update(None, "user_version", 99).unwrap();
        }
        let e = StatsDatabase::open(&newer).err().unwrap();
        assert!(e.contains("newer Sightline (schema version 99"), "{e}");

        let missing = temp_db("missing")
            .with_file_name("no-such-folder")
            .join("stats.db");
        let e = StatsDatabase::open(&missing).err().unwrap();
        assert!(e.contains("cannot be opened"), "{e}");
    }

    #[test]
    fn a_locked_database_is_an_error_not_a_hang() {
        // Another program holds a database this server has yet to set up (a WAL database
        // already set up takes several servers writing in turn).
        let path = temp_db("locked");
        let holder = Db::open(&path).unwrap();
        holder
            .execute_batch(
                "CREATE TABLE theirs (x); BEGIN EXCLUSIVE; INSERT INTO theirs VALUES (1);",
            )
            .unwrap();
        let started = std::time::Instant::now();
        let e = StatsDatabase::open(&path).err().unwrap();
        assert!(e.contains("locked by another program"), "{e}");
        assert!(started.elapsed() < BUSY_TIMEOUT * 3);
    }

    #[test]
    fn the_leaderboard_is_json_without_keys() {
        let path = temp_db("board");
        let mut db = StatsDatabase::open(&path).unwrap();
        let key = key_hash(&[3; 16]);
        let join = Job::Join {
            entity: Entity::PLACEHOLDER,
            key,
            name: "cy \"q\"".into(),
            at: 1,
        };
        write_batch(
            &mut db.db,
            &[
                join,
                Job::Add {
                    key,
                    tally: tally(9, 3),
                },
            ],
        )
        .unwrap();
        let page = leaderboard_page(&path).unwrap();
        let json = page("limit=5").unwrap();
        let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(rows[0]["name"], "cy \"q\"");
        assert_eq!(rows[0]["kills"], 9);
        assert!(!json.contains("key"), "{json}");
    }
}
