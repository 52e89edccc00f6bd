//! The messages themselves.

use crate::codec::{DecodeError, Wire};
use serde::{Deserialize, Serialize};
use sightline_combat::{FlagAt, FlagNews, GameMode, ProjectileKind, Team, WeaponKind};
use sightline_movement::{GridState, MoveFlags, PlayerState};
use sightline_sim::{Buttons, InputCmd, MAX_PITCH_DEG, MAX_PITCH_STEPS, PlayerId};

/// Longest player name, in bytes.
pub const MAX_NAME_LEN: usize = 32;
/// Longest server name, in bytes.
pub const MAX_SERVER_NAME_LEN: usize = 64;
/// Longest chat line, in bytes.
pub const MAX_CHAT_LEN: usize = 200;
/// Most players a snapshot may describe.
pub const MAX_SNAPSHOT_PLAYERS: usize = 64;

fn invalid(what: impl Into<String>) -> DecodeError {
    DecodeError::Invalid(what.into())
}

fn check_text(field: &str, text: &str, max: usize) -> Result<(), DecodeError> {
    if text.len() > max {
        return Err(invalid(format!("{field} longer than {max} bytes")));
    }
    // What clean_text drops never needs sending: a peer sending it is up to something.
    if text.chars().any(crate::text::is_hidden) {
        return Err(invalid(format!(
            "{field} holds control, format or invisible characters"
        )));
    }
    Ok(())
}

/// Refuses a map name that is not a plain identifier: the client looks the name up on
/// disk, so it must never be a path.
fn check_map_name(name: &str) -> Result<(), DecodeError> {
    if sightline_map::is_map_identifier(name) {
        Ok(())
    } else {
        Err(invalid(
            "map name is not 1 to 32 ASCII letters, digits, '_' or '-' (not starting with '-')",
        ))
    }
}

/// Reliable messages from a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientMessage {
    /// First message after connecting: who the player is and what it speaks.
    Hello {
        /// The client's [`crate::PROTOCOL_VERSION`].
        protocol_version: u32,
        /// Requested player name.
        name: String,
        /// The secret from the [`Welcome`] of a connection that dropped: the server gives
        /// a player who comes back within a minute their slot, team, score and place.
        resume: Option<ResumeSecret>,
        /// The player's own key, made once by the client and kept in its config (as
        /// Quake 3's `cl_guid`): what a server keeps lifetime statistics under. Never
        /// shown to other players; `None` keeps no statistics.
        player_key: Option<PlayerKey>,
    },
    /// A chat line (`say`, or `say_team`).
    Chat {
        /// What was said.
        text: String,
        /// To the player's own team only (`say_team`); in a game without teams, and from
        /// a spectator, it goes where a `say` would.
        team: bool,
    },
    /// What the player's downlink takes, as Quake's and Source's `rate` and Source's
    /// `cl_updaterate` say it: the server keeps its snapshots within the bytes by
    /// updating far players less often, and sends the snapshots asked for where the
    /// bytes carry them. Sent on joining and whenever either changes.
    Rate {
        /// Bytes a second, UDP/IP headers included (0: no limit).
        bytes_per_second: u32,
        /// Snapshots a second asked for (0: the server's choice). The server sends at
        /// most this, within its own bounds and the bytes.
        snapshots_per_second: u32,
    },
    /// A console command for the server, from a player who knows its `rcon_password`
    /// (inside netcode's encryption, so neither travels in the clear).
    Rcon {
        /// The server's rcon password.
        password: String,
        /// The console line to run.
        command: String,
    },
    /// First message after connecting, instead of Hello, from a client that watches
    /// rather than plays: it takes no player slot (spectators have a limit of their own),
    /// sends no input, and is sent the world as it was `sv_spectator_delay` ago.
    Spectate {
        /// The client's [`crate::PROTOCOL_VERSION`].
        protocol_version: u32,
        /// Name shown to the host.
        name: String,
    },
    /// A spectator's choice of whom to follow (`None`: a free camera). The server sends
    /// a spectator who follows someone what that player's client was sent.
    Follow {
        /// The player followed.
        target: Option<PlayerId>,
    },
    /// The player's new name (`name NEW` while connected): the server takes it with the
    /// same checks as at joining, or keeps the old one and says why.
    Rename {
        /// The name asked for.
        name: String,
    },
    /// The side asked for (`team red|blue|auto|spectator`): a player changes side or
    /// goes to watch, a spectator comes to play, on the same connection.
    JoinTeam {
        /// Which.
        choice: TeamChoice,
    },
    /// A vote called (`callvote`): the server starts it if the host allows it and none
    /// is running, or says why not.
    CallVote {
        /// What is put to the vote.
        proposal: VoteProposal,
    },
    /// The player's vote on the vote running (`vote yes|no`); a later one replaces it.
    Vote {
        /// For or against.
        yes: bool,
    },
    /// In the warmup: the player is ready to start, or no longer (`ready`).
    Ready,
}

/// What a vote proposes ([`ClientMessage::CallVote`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum VoteProposal {
    /// A match on this map now.
    Map(String),
    /// The next map of the rotation now.
    NextMap,
    /// This player kicked.
    Kick(PlayerId),
    /// The match started again.
    Restart,
    /// This frag limit (0: none).
    Fraglimit(u16),
    /// This game mode, from a new match.
    Mode(GameMode),
}

/// A vote running, as every player in the game is told it ([`ServerMessage::Vote`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteTally {
    /// The question, in words ("change the map to depot?").
    pub question: String,
    /// Votes for.
    pub yes: u8,
    /// Votes against.
    pub no: u8,
    /// Players who may vote: it passes on more than half of them.
    pub voters: u8,
    /// Seconds left.
    pub seconds_left: u16,
}

/// A side asked for with [`ClientMessage::JoinTeam`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TeamChoice {
    /// The red team.
    Red,
    /// The blue team.
    Blue,
    /// Whichever has fewer players; in a game without teams, simply to play.
    Auto,
    /// To watch instead of playing (Quake 3's `team spectator`).
    Spectator,
}

impl TeamChoice {
    /// The choice a console word names (`red`, `blue`, `auto`, `spectator`, Quake 3's
    /// `free` and the first letters, any case).
    pub fn parse(word: &str) -> Option<Self> {
        match word.to_ascii_lowercase().as_str() {
            "red" | "r" => Some(Self::Red),
            "blue" | "b" => Some(Self::Blue),
            "auto" | "a" | "free" | "f" => Some(Self::Auto),
            "spectator" | "spectate" | "spec" | "s" => Some(Self::Spectator),
            _ => None,
        }
    }
}

/// Longest rcon command a client may send, bytes.
pub const MAX_RCON_COMMAND_LEN: usize = 256;

/// Longest rcon password, bytes.
pub const MAX_RCON_PASSWORD_LEN: usize = 64;

impl Wire for ClientMessage {
    const MAX_BYTES: usize = 512;

    fn validate(&self) -> Result<(), DecodeError> {
        match self {
            Self::Hello { name, .. } | Self::Spectate { name, .. } | Self::Rename { name } => {
                check_text("name", name, MAX_NAME_LEN)
            }
            // Chat is cleaned by the server; only the size is bounded here.
            Self::Chat { text, .. } => {
                if text.len() > MAX_CHAT_LEN {
                    Err(invalid("chat line too long"))
                } else {
                    Ok(())
                }
            }
            Self::Rcon { password, command } => {
                if password.len() > MAX_RCON_PASSWORD_LEN || command.len() > MAX_RCON_COMMAND_LEN {
                    Err(invalid("rcon password or command too long"))
                } else {
                    Ok(())
                }
            }
            // Any rate: the server holds it within its own bounds. Any player: the
            // server follows only one that is there.
            Self::CallVote {
                proposal: VoteProposal::Map(name),
            } => check_map_name(name),
            // Any side, player, limit or vote: the server decides whether it may be.
            Self::Rate { .. }
            | Self::Follow { .. }
            | Self::JoinTeam { .. }
            | Self::CallVote { .. }
            | Self::Vote { .. }
            | Self::Ready => Ok(()),
        }
    }
}

/// What the server says to a client once it has said Hello.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// The server's [`crate::PROTOCOL_VERSION`]. Must stay the first field.
    pub protocol_version: u32,
    /// Simulation ticks per second.
    pub tick_hz: u32,
    /// Snapshots per second.
    pub snapshot_hz: u32,
    /// Server name.
    pub server_name: String,
    /// Map name.
    pub map_name: String,
    /// Content hash of the map file.
    pub map_hash: u64,
    /// The player this client controls; `None` for a spectator, who controls none.
    pub your_id: Option<PlayerId>,
    /// Proof of identity for coming back after a dropped connection (see Hello). Secret:
    /// it travels only inside netcode's encrypted packets.
    pub resume: ResumeSecret,
}

/// A random secret the server gives each player, to prove who they are on reconnecting.
pub type ResumeSecret = [u8; 16];

/// A player's key for lifetime statistics (see [`ClientMessage::Hello`]).
pub type PlayerKey = [u8; 16];

/// Reliable messages from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ServerMessage {
    /// Handshake answer. Must stay variant 0. Sent again when the connection changes
    /// role (a player goes to watch, a spectator comes to play): the client starts a new
    /// session on the same connection, as a player or a spectator as `your_id` says.
    Welcome(Welcome),
    /// The server will not take this client, and why. It disconnects right after.
    Refused {
        /// Why, in words.
        reason: String,
    },
    /// A player joined (also sent for everyone already present, after Welcome).
    PlayerJoined {
        /// Its id.
        id: PlayerId,
        /// Its name.
        name: String,
        /// Whether it is a bot.
        bot: bool,
    },
    /// A player left.
    PlayerLeft {
        /// Its id.
        id: PlayerId,
        /// Why, in words.
        reason: String,
    },
    /// A chat line from a player.
    Chat {
        /// Who said it.
        from: PlayerId,
        /// What was said (already cleaned by the server).
        text: String,
        /// Said to the recipient's team only.
        team: bool,
    },
    /// The scoreboard, sent once a second: every player's frags and deaths, and for
    /// connected players the round trip the server measures, milliseconds.
    Scoreboard(Vec<ScoreLine>),
    /// A weapon went off (for other players' muzzle flashes, tracers and sound), sent
    /// only to clients that are sent the shooter: it goes off from the shooter's eye
    /// where the client draws the shooter at `tick`, so its position is not sent again.
    Fired {
        /// Who fired.
        shooter: PlayerId,
        /// Which weapon.
        weapon: WeaponKind,
        /// Which way: yaw and pitch in angle steps ([`sightline_sim::angle_of_steps`]),
        /// the pitch within [`sightline_sim::MAX_PITCH_STEPS`] either way.
        aim: [i16; 2],
        /// The server tick it went off in: shown when the client draws the world at that
        /// tick, where the shooter is drawn.
        tick: u32,
    },
    /// A projectile burst here.
    Exploded {
        /// What burst.
        kind: ProjectileKind,
        /// Where.
        at: [f32; 3],
        /// The server tick it burst in: shown when the client draws the world at that
        /// tick, where the rocket is drawn.
        tick: u32,
    },
    /// The match: its rules and where it stands; sent once a second.
    Match {
        /// Free-for-all or teams.
        mode: GameMode,
        /// Frags that win (0: none).
        fraglimit: u16,
        /// Captures that win, in capture the flag (0: none).
        capturelimit: u16,
        /// Seconds left (0: no time limit).
        time_left_s: u16,
        /// Whether the match is over and the next one about to start.
        intermission: bool,
        /// Before the match: the warmup, or the countdown to the start.
        warmup: Option<Warmup>,
    },
    /// The match is over.
    MatchEnded {
        /// Who won, in words.
        winner: String,
    },
    /// The server moves to another map: load it (and check its hash, as after Welcome).
    MapChange {
        /// Map name.
        map_name: String,
        /// Content hash of the map file.
        map_hash: u64,
    },
    /// Words from the server itself, one line.
    ServerText {
        /// What they are.
        kind: ServerTextKind,
        /// The line (cleaned, at most [`MAX_CHAT_LEN`] bytes).
        text: String,
    },
    /// Players' lifetime kills and deaths where the server keeps statistics (this match
    /// included), by player id in increasing order, sent with the scoreboard when they
    /// change. Apart from the scoreboard so a full one still fits a datagram.
    Lifetimes(Vec<(PlayerId, Lifetime)>),
    /// A chat line from a spectator, who has no player id: sent to the other spectators
    /// while a match runs (what they see is no use to call out to a player), and to
    /// everyone in the intermission.
    SpectatorChat {
        /// The spectator's name.
        name: String,
        /// What was said (already cleaned by the server).
        text: String,
    },
    /// A player took another name.
    PlayerRenamed {
        /// Who.
        id: PlayerId,
        /// The new name.
        name: String,
    },
    /// The vote running, when one starts and as it changes (`None`: it ended; the
    /// outcome comes as a [`ServerTextKind::Notice`]).
    Vote(Option<VoteTally>),
    /// How the match just ended went: its awards, sent to everyone with
    /// [`ServerMessage::MatchEnded`].
    Awards(Vec<Award>),
    /// How the match just ended went for the recipient alone.
    YourMatch(MatchReport),
    /// A flag changed hands or place (capture the flag), for the announcer and the
    /// feed; where it is now rides in the snapshots.
    Flag {
        /// Whose flag.
        team: Team,
        /// What happened to it.
        news: FlagNews,
        /// Who did it; none when it went home by itself.
        by: Option<PlayerId>,
    },
}

/// The warmup before a match ([`ServerMessage::Match`]): players play, nothing counts,
/// until enough are ready or its time runs out; then a countdown, then the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warmup {
    /// Counting down to the start (players frozen), rather than warming up.
    pub countdown: bool,
    /// Seconds left of the warmup or the countdown.
    pub seconds_left: u16,
    /// Players ready.
    pub ready: u8,
    /// Players who must be ready to start early (0: only the time starts it).
    pub needed: u8,
}

/// Most awards a match gives.
pub const MAX_AWARDS: usize = 8;

/// An award at the end of a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Award {
    /// Which.
    pub kind: AwardKind,
    /// To whom.
    pub player: PlayerId,
    /// What won it: frags, damage, kills in a row, captures, or accuracy in tenths of a
    /// percent.
    pub value: u32,
}

/// What an [`Award`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AwardKind {
    /// The most frags.
    MostFrags,
    /// The best accuracy (of those who fired enough to count).
    BestAccuracy,
    /// The most damage dealt to opponents.
    MostDamage,
    /// The most kills without dying.
    LongestStreak,
    /// The most enemy flags brought home.
    MostCaptures,
}

impl AwardKind {
    /// Its title, for the awards screen.
    pub fn title(self) -> &'static str {
        match self {
            AwardKind::MostFrags => "Most frags",
            AwardKind::BestAccuracy => "Sharpshooter",
            AwardKind::MostDamage => "Most damage",
            AwardKind::LongestStreak => "Longest streak",
            AwardKind::MostCaptures => "Most captures",
        }
    }

    /// `value` in words.
    pub fn describe(self, value: u32) -> String {
        match self {
            AwardKind::MostFrags => format!("{value} frags"),
            AwardKind::BestAccuracy => format!("{}.{}% accuracy", value / 10, value % 10),
            AwardKind::MostDamage => format!("{value} damage"),
            AwardKind::LongestStreak => format!("{value} kills in a row"),
            AwardKind::MostCaptures => format!("{value} captures"),
        }
    }
}

/// One player's match, for [`ServerMessage::YourMatch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchReport {
    /// Damage dealt to opponents.
    pub damage: u32,
    /// Most kills without dying.
    pub best_streak: u16,
    /// Per weapon fired: shots, and shots that struck an opponent.
    pub weapons: Vec<(WeaponKind, u16, u16)>,
}

/// What the server did to a player besides running its commands, as wrapping counts (a
/// lost snapshot loses no count), for the player's own client to classify corrections by
/// the server's truth rather than its own guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touches {
    /// Explosions of its own that pushed it (which its client predicts).
    pub own_pushes: u8,
    /// Other players' explosions that pushed it.
    pub pushes: u8,
    /// Ticks in which another player's body changed its move.
    pub contacts: u8,
    /// The player met in the last of those (`PlayerId(0)` before any).
    pub contact_with: PlayerId,
    /// Ticks it was held waiting for a late command of its client's: the client predicted
    /// the command run, so a hold costs it no correction, but it shows the holds.
    pub held: u8,
    /// Held ticks not yet repaid (saturating): the server runs the client's next commands
    /// two a tick until they are, which the client's prediction of the others and of the
    /// rockets follows.
    pub owed: u8,
}

impl Default for Touches {
    fn default() -> Self {
        Self {
            own_pushes: 0,
            pushes: 0,
            contacts: 0,
            contact_with: PlayerId(0),
            held: 0,
            owed: 0,
        }
    }
}

/// Most events a snapshot carries ([`Snapshot::events`]); more wait for the next.
pub const MAX_SNAPSHOT_EVENTS: usize = 16;

/// Something that happened to or before a player, for its HUD, carried in every snapshot
/// to it until it acknowledges one that held it: a lost packet then delays it by a
/// snapshot, not by a reliable resend. Its client shows it when the world it draws
/// reaches `tick` (a kill where the victim is drawn falling), and tells a repeat by `seq`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventSnap {
    /// The recipient's number for it: from 1, one more for each event queued for it.
    pub seq: u32,
    /// The server tick of the world it happened in.
    pub tick: u32,
    /// What happened.
    pub event: PlayerEvent,
}

/// What an [`EventSnap`] says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PlayerEvent {
    /// Someone died: the kill feed.
    Killed {
        /// Who died.
        victim: PlayerId,
        /// Who killed them.
        killer: PlayerId,
        /// With which weapon.
        weapon: WeaponKind,
    },
    /// Your shot struck someone: a hit marker and a damage number. Its tick is the world
    /// the hit was judged in: for a hitscan shot the one you saw when firing (lag
    /// compensation), already drawn, so it shows at once; for splash the burst's.
    HitConfirm {
        /// Who.
        target: PlayerId,
        /// Health and armour taken.
        damage: u16,
        /// A head hit.
        head: bool,
    },
    /// You were hurt: a direction indicator.
    Damaged {
        /// By whom.
        attacker: PlayerId,
        /// Health and armour lost.
        damage: u16,
        /// Where the attacker was.
        from: [f32; 3],
    },
    /// Your hitscan shot fired in the event's tick was judged late: your view was older
    /// than the server rewinds, so it was judged against the oldest world allowed,
    /// `excess_ms` later than what you saw (lead your targets by that much). A verdict
    /// on your own shot: shown at once.
    ShotLate {
        /// How far behind the oldest world allowed your view was, milliseconds.
        excess_ms: u16,
    },
    /// Your hitscan shot fired in the event's tick was refused: its view time was one no
    /// honest client could claim (a clock far off, or a tampered client), so it was not
    /// judged. Shown at once.
    ShotRefused,
}

impl PlayerEvent {
    /// Whether it answers the recipient's own action and is shown on arrival rather than
    /// with the drawn world.
    pub fn is_verdict(&self) -> bool {
        matches!(self, Self::ShotLate { .. } | Self::ShotRefused)
    }
}

/// What a [`ServerMessage::ServerText`] line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerTextKind {
    /// The host's `say`: shown with the chat.
    Say,
    /// The message of the day, on joining.
    Motd,
    /// Output of an rcon command this client sent: shown in its console.
    Rcon,
    /// The game's own announcement (a change of side) or answer to a request of this
    /// client's (a refused rename or team change): shown with the chat, unnamed.
    Notice,
}

/// One scoreboard row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScoreLine {
    /// Which player.
    pub id: PlayerId,
    /// Round trip, milliseconds; `None` for bots.
    pub ping_ms: Option<u16>,
    /// Kills less suicides.
    pub frags: i32,
    /// Deaths.
    pub deaths: u32,
    /// Team in team games.
    pub team: Option<Team>,
    /// Enemy flags brought home (capture the flag), up to 255.
    pub captures: u8,
}

/// A player's record over their lifetime on a server's statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lifetime {
    /// Other players killed.
    pub kills: u32,
    /// Deaths, suicides included.
    pub deaths: u32,
}

fn check_finite(field: &str, values: &[f32]) -> Result<(), DecodeError> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(invalid(format!("{field} holds NaN or infinity")))
    }
}

/// Largest encoding of one [`ScoreLine`]: id 1, ping 1 + 3, frags 5, deaths 5, team 2,
/// captures 1.
/// A full scoreboard must stay within one renet slice (1200 bytes): reliable messages are
/// never sliced (`sightline_net`'s packet guard refuses reliable slices).
const SCORE_LINE_MAX_BYTES: usize = 18;

// renet slices a message over 1200 bytes, and `sightline_net`'s packet guard refuses
// reliable slices: every reliable message must fit one.
const _: () = assert!(<ServerMessage as Wire>::MAX_BYTES <= 1200);
const _: () = assert!(<ClientMessage as Wire>::MAX_BYTES <= 1200);

impl ServerMessage {
    /// A line of the game's own ([`ServerTextKind::Notice`]), cleaned and cut to what a
    /// message holds.
    pub fn notice(text: &str) -> Self {
        Self::ServerText {
            kind: ServerTextKind::Notice,
            text: crate::clean_text(text, MAX_CHAT_LEN),
        }
    }
}

impl Wire for ServerMessage {
    /// Room for the largest message: a full scoreboard (variant tag, length, 64 lines).
    const MAX_BYTES: usize = 2 + MAX_SNAPSHOT_PLAYERS * SCORE_LINE_MAX_BYTES;

    fn validate(&self) -> Result<(), DecodeError> {
        match self {
            Self::Welcome(w) => {
                check_text("server name", &w.server_name, MAX_SERVER_NAME_LEN)?;
                check_map_name(&w.map_name)?;
                if !(sightline_sim::MIN_TICK_HZ..=sightline_sim::MAX_TICK_HZ).contains(&w.tick_hz)
                    || w.snapshot_hz == 0
                    || w.snapshot_hz > w.tick_hz
                    || w.tick_hz % w.snapshot_hz != 0
                {
                    return Err(invalid("tick or snapshot rate out of range"));
                }
                Ok(())
            }
            Self::Refused { reason } | Self::PlayerLeft { reason, .. } => {
                check_text("reason", reason, MAX_CHAT_LEN)
            }
            Self::PlayerJoined { name, .. } | Self::PlayerRenamed { name, .. } => {
                check_text("name", name, MAX_NAME_LEN)
            }
            Self::Chat { text, .. } => check_text("chat", text, MAX_CHAT_LEN),
            Self::Vote(Some(tally)) => {
                check_text("vote question", &tally.question, MAX_CHAT_LEN)?;
                if u16::from(tally.yes) + u16::from(tally.no) > u16::from(tally.voters) {
                    return Err(invalid("more votes than voters"));
                }
                Ok(())
            }
            Self::Vote(None) => Ok(()),
            Self::Awards(awards) if awards.len() > MAX_AWARDS => Err(invalid("too many awards")),
            Self::Awards(_) => Ok(()),
            Self::YourMatch(report) => {
                if report.weapons.len() > WeaponKind::ALL.len() {
                    return Err(invalid("more weapons than there are"));
                }
                if report.weapons.iter().any(|(_, shots, hits)| hits > shots) {
                    return Err(invalid("more hits than shots"));
                }
                Ok(())
            }
            Self::SpectatorChat { name, text } => {
                check_text("name", name, MAX_NAME_LEN)?;
                check_text("chat", text, MAX_CHAT_LEN)
            }
            Self::Lifetimes(rows) => {
                if rows.len() > MAX_SNAPSHOT_PLAYERS {
                    return Err(invalid("too many lifetime records"));
                }
                if rows.windows(2).any(|w| w[1].0 <= w[0].0) {
                    return Err(invalid("lifetimes not in strictly increasing id order"));
                }
                Ok(())
            }
            Self::Scoreboard(lines) => {
                if lines.len() > MAX_SNAPSHOT_PLAYERS {
                    return Err(invalid("too many scoreboard lines"));
                }
                if lines.windows(2).any(|w| w[1].id <= w[0].id) {
                    return Err(invalid("scoreboard not in strictly increasing id order"));
                }
                Ok(())
            }
            Self::Fired { aim, .. } => {
                if aim[1].unsigned_abs() > MAX_PITCH_STEPS.unsigned_abs() {
                    return Err(invalid("shot pitch out of range"));
                }
                Ok(())
            }
            Self::Exploded { at, .. } => check_finite("at", at),
            Self::Flag { .. } => Ok(()),
            Self::Match { .. } => Ok(()),
            Self::MatchEnded { winner } => check_text("winner", winner, MAX_CHAT_LEN),
            Self::MapChange { map_name, .. } => check_map_name(map_name),
            Self::ServerText { text, .. } => check_text("server text", text, MAX_CHAT_LEN),
        }
    }
}

/// One player's state as the server sends it: on the grid every tick leaves it on
/// ([`sightline_movement::grid`]), as integers that decode to exactly the server's floats,
/// so a client can continue predicting from precisely where the server is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlayerSnap {
    /// Which player.
    pub id: PlayerId,
    /// Feet position, in grid steps ([`GridState::pos`]).
    pub pos: [i32; 3],
    /// Velocity, in grid steps.
    pub vel: [i16; 3],
    /// View yaw, in grid steps.
    pub yaw: i16,
    /// View pitch, in grid steps.
    pub pitch: i16,
    /// [`MoveFlags`] bits.
    pub flags: u8,
    /// Health, 0 when dead.
    pub health: u8,
    /// Armour.
    pub armor: u8,
    /// Weapon in hand.
    pub weapon: WeaponKind,
    /// Rounds in the magazine of the weapon in hand.
    pub ammo: u16,
    /// How many times the server has placed this player without moving it there (a
    /// respawn, a new match), wrapping: when it changes, the state is a teleport, not
    /// movement, so it is adopted rather than predicted toward or interpolated across.
    pub spawn_count: u8,
    /// What the player's latest command asked of movement: forward and right in 127ths,
    /// so a client can extrapolate the player past the newest snapshot with the
    /// movement step itself, as the player is steering, rather than along its velocity.
    pub intent: [i8; 2],
    /// The movement buttons (jump, crouch) the latest command held.
    pub held: Buttons,
    /// Weapons held ([`sightline_combat::WeaponKind::bit`]) and power-ups running
    /// ([`KIT_QUAD`], [`KIT_REGEN`]): its own client's weapon choice, and everyone's glow.
    pub kit: u8,
}

/// [`PlayerSnap::kit`] bit: quad damage is running.
pub const KIT_QUAD: u8 = 1 << 6;
/// [`PlayerSnap::kit`] bit: regeneration is running.
pub const KIT_REGEN: u8 = 1 << 7;
/// [`PlayerSnap::kit`] bits that are weapons.
pub const KIT_WEAPONS: u8 = KIT_QUAD - 1;
const _: () = assert!(WeaponKind::ALL.len() <= KIT_WEAPONS.count_ones() as usize);

/// A player's [`PlayerSnap::kit`]: the weapons in `owned` and the power-ups running.
pub fn kit(owned: u8, quad: bool, regen: bool) -> u8 {
    (owned & KIT_WEAPONS) | if quad { KIT_QUAD } else { 0 } | if regen { KIT_REGEN } else { 0 }
}

/// A weapon dropped by a player who died with it, lying where they fell until taken or
/// until its time runs out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DropSnap {
    /// Drop number.
    pub id: u16,
    /// Which weapon.
    pub weapon: WeaponKind,
    /// Where it lies.
    pub pos: [f32; 3],
}

/// Where a team's flag is, as snapshots carry it (capture the flag).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum FlagSpot {
    /// On its base.
    #[default]
    Home,
    /// Carried by this player, whom every recipient is sent (as room allows).
    Carried(PlayerId),
    /// Lying here.
    Dropped([f32; 3]),
}

impl From<FlagAt> for FlagSpot {
    fn from(at: FlagAt) -> Self {
        match at {
            FlagAt::Home => Self::Home,
            FlagAt::Carried(id) => Self::Carried(id),
            FlagAt::Dropped { pos, .. } => Self::Dropped(pos.to_array()),
        }
    }
}

/// A projectile in flight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProjectileSnap {
    /// Projectile number.
    pub id: u16,
    /// What it is.
    pub kind: ProjectileKind,
    /// Who fired it.
    pub owner: PlayerId,
    /// Where it is.
    pub pos: [f32; 3],
    /// Its velocity.
    pub vel: [f32; 3],
}

impl PlayerSnap {
    /// Captures a player's state.
    pub fn new(id: PlayerId, s: &PlayerState) -> Self {
        let g = GridState::of(s);
        Self {
            id,
            pos: g.pos,
            vel: g.vel,
            yaw: g.yaw,
            pitch: g.pitch,
            flags: s.flags.0,
            health: 100,
            armor: 0,
            weapon: WeaponKind::Rifle,
            ammo: 0,
            spawn_count: 0,
            intent: [0, 0],
            held: Buttons::default(),
            kit: 0,
        }
    }

    /// Sets the intent and held buttons from the command the player last ran.
    pub fn with_intent(self, cmd: &InputCmd) -> Self {
        let q = |v: f32| (v.clamp(-1.0, 1.0) * 127.0).round() as i8;
        Self {
            intent: [q(cmd.forward), q(cmd.right)],
            held: Buttons(cmd.buttons.0 & (Buttons::JUMP.0 | Buttons::CROUCH.0)),
            ..self
        }
    }

    /// The movement part of the player's latest command, as sent: what to extrapolate
    /// it with.
    pub fn intent_cmd(&self) -> InputCmd {
        let s = self.state();
        InputCmd {
            forward: self.intent[0] as f32 / 127.0,
            right: self.intent[1] as f32 / 127.0,
            yaw: s.yaw,
            pitch: s.pitch,
            buttons: self.held,
            ..Default::default()
        }
    }

    /// The state it describes.
    pub fn state(&self) -> PlayerState {
        self.grid().state(MoveFlags(self.flags))
    }

    /// Its state's grid form.
    pub fn grid(&self) -> GridState {
        GridState {
            pos: self.pos,
            vel: self.vel,
            yaw: self.yaw,
            pitch: self.pitch,
        }
    }
}

/// The world as the server saw it after one tick, for one recipient.
///
/// Snapshots are numbered and clients acknowledge the newest they received in every
/// [`crate::InputPacket`], so the server sends each as changes from one the client is
/// known to hold ([`crate::SnapshotPacket`]); this is the whole snapshot a packet
/// resolves to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Snapshot number, from 1, one per snapshot sent to this client.
    pub seq: u32,
    /// The snapshot it was sent as changes from; 0 when it was sent in full.
    pub baseline: u32,
    /// Server tick after which this state holds.
    pub server_tick: u32,
    /// Server simulation time at that tick, microseconds.
    pub server_time_us: u64,
    /// Newest of the recipient's commands the server has *simulated* (not merely received).
    pub ack_input_seq: u32,
    /// Fewest of the recipient's commands waiting in the server's buffer when a tick took
    /// one, over the ticks since the previous snapshot (counting the one taken; 0 means
    /// a tick found none and repeated the last).
    pub input_queue: u8,
    /// Commands of the recipient's, since it joined, the server could not run as sent:
    /// ticks in which it repeated the previous command because the next had not arrived,
    /// and commands it gave up waiting for. A running total, so a lost snapshot loses no
    /// count.
    pub repeated_inputs: u32,
    /// What the server did to the recipient's player besides its commands, as running
    /// counts: its prediction compares them with the previous snapshot's to tell what a
    /// difference was caused by.
    pub touches: Touches,
    /// How long the server's previous tick took, microseconds (for the netgraph).
    pub server_tick_us: u32,
    /// Every player's state, in id order.
    pub players: Vec<PlayerSnap>,
    /// Players whose update the server held back to keep within the client's `rate`, in
    /// id order, each one of `players`: their state here is their last measurement
    /// carried on along its velocity, not a new one, so the client draws them from the
    /// snapshots before.
    pub held: Vec<PlayerId>,
    /// Rockets in flight.
    pub projectiles: Vec<ProjectileSnap>,
    /// Which of the map's item spots hold their item, as bits by item index.
    pub items: u64,
    /// Weapons dropped by the dead, in id order.
    pub drops: Vec<DropSnap>,
    /// Where the red and the blue flag are, while capture the flag is played.
    pub flags: Option<[FlagSpot; 2]>,
    /// Events for the recipient not yet acknowledged, oldest first, at most
    /// [`MAX_SNAPSHOT_EVENTS`].
    pub events: Vec<EventSnap>,
}

/// Most projectiles a snapshot may carry.
pub const MAX_SNAPSHOT_PROJECTILES: usize = 64;
/// Most dropped weapons a snapshot may carry (the server keeps no more).
pub const MAX_SNAPSHOT_DROPS: usize = 16;

impl Snapshot {
    /// Checks counts, order, ranges and finiteness: what a resolved packet must satisfy.
    pub fn validate(&self) -> Result<(), DecodeError> {
        if self.seq == 0 {
            return Err(invalid("snapshot sequence 0 is reserved"));
        }
        if self.players.len() > MAX_SNAPSHOT_PLAYERS {
            return Err(invalid("too many players in snapshot"));
        }
        if self.players.windows(2).any(|w| w[1].id <= w[0].id) {
            return Err(invalid(
                "snapshot players not in strictly increasing id order",
            ));
        }
        for p in &self.players {
            if !p.grid().in_range() {
                return Err(invalid("player position beyond the grid"));
            }
            if p.state().pitch.abs() > MAX_PITCH_DEG.to_radians() {
                return Err(invalid("player pitch beyond the limit"));
            }
            if p.flags & !MoveFlags::ALL != 0 {
                return Err(invalid("unknown movement flags"));
            }
            if p.held.0 & !(Buttons::JUMP.0 | Buttons::CROUCH.0) != 0 {
                return Err(invalid("held buttons other than jump and crouch"));
            }
        }
        if self.held.windows(2).any(|w| w[1] <= w[0]) {
            return Err(invalid("held players not in increasing id order"));
        }
        if self
            .held
            .iter()
            .any(|id| self.players.binary_search_by_key(id, |p| p.id).is_err())
        {
            return Err(invalid("a held player not in the snapshot"));
        }
        if self.projectiles.len() > MAX_SNAPSHOT_PROJECTILES {
            return Err(invalid("too many projectiles"));
        }
        for p in &self.projectiles {
            check_finite("projectile", &p.pos)?;
            check_finite("projectile", &p.vel)?;
        }
        if self.drops.len() > MAX_SNAPSHOT_DROPS {
            return Err(invalid("too many dropped weapons"));
        }
        if self.drops.windows(2).any(|w| w[1].id <= w[0].id) {
            return Err(invalid("dropped weapons not in increasing id order"));
        }
        for d in &self.drops {
            check_finite("dropped weapon", &d.pos)?;
        }
        for spot in self.flags.iter().flatten() {
            match spot {
                FlagSpot::Dropped(pos) => check_finite("dropped flag", pos)?,
                // A carrier is normally sent to everyone, but a full snapshot may leave
                // a new player for the next: the flag is then told, not drawn.
                FlagSpot::Carried(_) | FlagSpot::Home => {}
            }
        }
        if let Some([FlagSpot::Carried(a), FlagSpot::Carried(b)]) = self.flags
            && a == b
        {
            return Err(invalid("one player carrying both flags"));
        }
        if self.events.len() > MAX_SNAPSHOT_EVENTS {
            return Err(invalid("too many events"));
        }
        if self.events.first().is_some_and(|e| e.seq == 0)
            || self.events.windows(2).any(|w| w[1].seq <= w[0].seq)
        {
            return Err(invalid("events not numbered from 1 in increasing order"));
        }
        for e in &self.events {
            if let PlayerEvent::Damaged { from, .. } = &e.event {
                check_finite("damage origin", from)?;
            }
        }
        Ok(())
    }
}
