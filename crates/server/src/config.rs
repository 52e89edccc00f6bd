//! What a server is and runs: the settings the game itself reads. The host's console
//! variables (`sightline-dedicated`) are read into it; offline play and tests build one.

use bevy::prelude::*;
use sightline_combat::{FriendlyFire, GameMode};
use sightline_sim::TickConfig;

/// Most players a server holds, bots included: as many as a snapshot may describe. A
/// client refuses a snapshot of more as malformed, so a server configured for more holds
/// this many ([`PlayerSlots`](crate::PlayerSlots) hands out no more ids).
pub const MAX_PLAYERS: u8 = {
    assert!(sightline_protocol::MAX_SNAPSHOT_PLAYERS <= u8::MAX as usize);
    sightline_protocol::MAX_SNAPSHOT_PLAYERS as u8
};

/// Spectators a server takes by default, beside its players.
pub const DEFAULT_MAX_SPECTATORS: u8 = 8;
/// How far behind the game spectators are shown it by default, seconds.
pub const DEFAULT_SPECTATOR_DELAY: f32 = 3.0;
/// The longest delay a host may set, seconds: the feed keeps this much of the world.
pub const MAX_SPECTATOR_DELAY: f32 = 30.0;

/// Default for [`ServerConfig::idle_kick_seconds`].
pub const DEFAULT_IDLE_KICK_SECONDS: f32 = 30.0;

/// What a server is and runs.
#[derive(Resource, Clone)]
pub struct ServerConfig {
    /// Name shown to players.
    pub name: String,
    /// Most players at once, bots included (at most [`MAX_PLAYERS`]).
    pub max_players: u8,
    /// Bots to add at start.
    pub bots: u8,
    /// How well the bots fight.
    pub bot_skill: sightline_bots::BotSkill,
    /// How matches are played.
    pub rules: MatchRules,
    /// Tick and snapshot rates: every client is sent at least `tick`'s snapshot rate.
    pub tick: TickConfig,
    /// Most snapshots a second a client may ask for (`sv_maxsnapshotrate`); a client is
    /// never sent more than the tick rate nor less than `tick`'s snapshot rate.
    pub max_snapshot_hz: u32,
    /// Seconds without a command after which a player is kicked; 0 never kicks. A
    /// playing client sends a command every tick, even standing still, so silence means
    /// a broken or hostile client holding a slot.
    pub idle_kick_seconds: f32,
    /// Message of the day, shown to each player on joining; empty for none.
    pub motd: String,
    /// Most spectators at once, beside the players (0: none taken).
    pub max_spectators: u8,
    /// How far behind the game spectators are shown it, seconds (at most
    /// [`MAX_SPECTATOR_DELAY`]).
    pub spectator_delay: f32,
    /// What players may put to a vote, and for how long.
    pub votes: VoteRules,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            name: "Sightline server".into(),
            max_players: 16,
            bots: 0,
            bot_skill: sightline_bots::BotSkill::Normal,
            rules: MatchRules::default(),
            tick: TickConfig::default(),
            max_snapshot_hz: TickConfig::default().tick_hz,
            idle_kick_seconds: DEFAULT_IDLE_KICK_SECONDS,
            motd: String::new(),
            max_spectators: DEFAULT_MAX_SPECTATORS,
            spectator_delay: DEFAULT_SPECTATOR_DELAY,
            votes: VoteRules::default(),
        }
    }
}

/// What players may put to a vote (`callvote`), and how a vote runs.
#[derive(Debug, Clone, PartialEq)]
pub struct VoteRules {
    /// The kinds of vote allowed (`g_votes`); empty when the host allows none
    /// (`g_allowvote 0`).
    pub allowed: Vec<VoteKind>,
    /// Seconds a vote runs before it fails (`g_votetime`).
    pub seconds: f32,
    /// Seconds a player waits after calling a vote before calling another
    /// (`g_votecooldown`).
    pub cooldown: f32,
}

impl Default for VoteRules {
    fn default() -> Self {
        Self {
            allowed: VoteKind::ALL.to_vec(),
            seconds: 30.0,
            cooldown: 30.0,
        }
    }
}

/// A kind of vote, as the host allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteKind {
    /// `callvote map NAME`.
    Map,
    /// `callvote nextmap`.
    NextMap,
    /// `callvote kick NAME`.
    Kick,
    /// `callvote restart`.
    Restart,
    /// `callvote fraglimit N`.
    Fraglimit,
    /// `callvote mode dm|tdm|ctf`.
    Mode,
}

impl VoteKind {
    /// Every kind.
    pub const ALL: [VoteKind; 6] = [
        VoteKind::Map,
        VoteKind::NextMap,
        VoteKind::Kick,
        VoteKind::Restart,
        VoteKind::Fraglimit,
        VoteKind::Mode,
    ];

    /// Its word in `callvote` and in `g_votes`.
    pub fn keyword(self) -> &'static str {
        match self {
            VoteKind::Map => "map",
            VoteKind::NextMap => "nextmap",
            VoteKind::Kick => "kick",
            VoteKind::Restart => "restart",
            VoteKind::Fraglimit => "fraglimit",
            VoteKind::Mode => "mode",
        }
    }

    /// The kind a word names.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.keyword().eq_ignore_ascii_case(word))
    }

    /// The kind of a proposal.
    pub fn of(proposal: &sightline_protocol::VoteProposal) -> Self {
        use sightline_protocol::VoteProposal as P;
        match proposal {
            P::Map(_) => VoteKind::Map,
            P::NextMap => VoteKind::NextMap,
            P::Kick(_) => VoteKind::Kick,
            P::Restart => VoteKind::Restart,
            P::Fraglimit(_) => VoteKind::Fraglimit,
            P::Mode(_) => VoteKind::Mode,
        }
    }
}

/// How matches are won and what is played next.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRules {
    /// The mode.
    pub mode: GameMode,
    /// Frags (a player's, or a team's) that win; 0 for none.
    pub fraglimit: i32,
    /// Captures that win capture the flag; 0 for none.
    pub capturelimit: u16,
    /// Seconds a match lasts at most; 0 for no limit.
    pub timelimit: f32,
    /// Maps to cycle through after each match; empty keeps the current one.
    pub rotation: Vec<String>,
    /// A player may not change to the side with more players (`g_teamforcebalance`).
    pub team_force_balance: bool,
    /// Teams two or more apart are evened by moving a player of the larger as it dies
    /// (`g_autobalance`).
    pub auto_balance: bool,
    /// What team mates' fire does to each other (`g_friendlyfire`).
    pub friendly_fire: FriendlyFire,
    /// A match whose time runs out on a tie goes on until the next frag (`g_overtime`).
    pub overtime: bool,
    /// Seconds of warmup before each match, where nothing counts (`sv_warmup`; 0: none).
    pub warmup: f32,
    /// Players who must be ready to end the warmup early (`sv_minplayers`; 0: only its
    /// time ends it).
    pub min_ready: u8,
}

impl Default for MatchRules {
    fn default() -> Self {
        Self {
            mode: GameMode::Deathmatch,
            fraglimit: 20,
            capturelimit: 8,
            timelimit: 600.0,
            rotation: Vec::new(),
            team_force_balance: true,
            auto_balance: true,
            friendly_fire: FriendlyFire::Off,
            overtime: true,
            warmup: 0.0,
            min_ready: 0,
        }
    }
}
