//! The server's console variables: one table of the settings a host chooses, in the
//! console language the game speaks (`sightline-console`), so a flag, a `+set` on the
//! command line and a line of an `exec`ed file set the same variable with the same
//! checks. [`config_from_cvars`] reads them once they are all set, before the
//! server starts, and again after each line of the host's console (`admin`): those
//! marked RESTART take effect at the next start, the rest at once.

use sightline_bots::BotSkill;
use sightline_combat::FriendlyFire;
use sightline_console::Cvars;
use sightline_map::is_map_identifier;
use sightline_protocol::{
    MAX_CHAT_LEN, MAX_PASSWORD_LEN, MAX_RCON_PASSWORD_LEN, MAX_SERVER_NAME_LEN, clean_text,
};
use sightline_server::{
    DEFAULT_IDLE_KICK_SECONDS, GameMode, MAX_PLAYERS, MatchRules, ServerConfig, VoteKind, VoteRules,
};
use sightline_sim::TickConfig;

/// The server's cvars: one table, each a typed handle and its definition.
pub mod cvar {
    use super::*;

    sightline_console::cvar_table! {
        /// Every server cvar's definition, to register.
        pub fn server_cvars;
        SV_HOSTNAME: String = "sv_hostname", Text { max_len: MAX_SERVER_NAME_LEN },
            "Sightline server", NONE, "the server's name, shown to players";
        MAXPLAYERS: i64 = "maxplayers", Int { min: 1, max: MAX_PLAYERS as i64 }, 16, RESTART,
            "most players at once, bots included";
        SV_TICKRATE: i64 = "sv_tickrate", Int { min: 20, max: 128 }, 128, RESTART,
            "simulation ticks per second";
        SV_SNAPSHOTRATE: i64 = "sv_snapshotrate", Int { min: 0, max: 128 }, 0,
            RESTART,
            "snapshots per second every client is sent at least (one that asks for more \
             may get up to sv_maxsnapshotrate), dividing the tick rate; 0 for half the tick \
             rate (the tick rate when that is odd)";
        SV_MAXSNAPSHOTRATE: i64 = "sv_maxsnapshotrate", Int { min: 0, max: 128 }, 0,
            RESTART,
            "most snapshots a second a client may ask for (cl_updaterate), sent where its \
             rate carries them; 0 for the tick rate, and never less than sv_snapshotrate";
        MAP: String = "sv_map", Text { max_len: 256 }, "duel", RESTART,
            "the map the server starts on: a name in maps/ or a path to a .ron file (the \
             map command changes it now)";
        SV_MAPLIST: String = "sv_maplist", Text { max_len: 1024 }, "", NONE,
            "maps to play in turn, one match each, comma-separated; empty for the map alone";
        MODE: String = "mode", Choice { options: &["dm", "tdm", "ctf"] }, "dm", RESTART,
            "game mode: dm (everyone for themselves), tdm (red against blue) or ctf \
             (capture the flag, on maps with flag bases; team deathmatch on others)";
        FRAGLIMIT: i64 = "fraglimit", Int { min: 0, max: 1000 }, 20, NONE,
            "frags that win a match (a player's, or a team's); 0 for none";
        CAPTURELIMIT: i64 = "capturelimit", Int { min: 0, max: 1000 }, 8, NONE,
            "captures that win a capture the flag match; 0 for none";
        TIMELIMIT: f64 = "timelimit", Float { min: 0.0, max: 1440.0 }, 10.0, NONE,
            "minutes a match lasts at most; 0 for no limit";
        G_TEAMFORCEBALANCE: i64 = "g_teamforcebalance", Int { min: 0, max: 1 }, 1, NONE,
            "1 refuses a player's change to the team with more players (team red, blue)";
        G_AUTOBALANCE: i64 = "g_autobalance", Int { min: 0, max: 1 }, 1, NONE,
            "1 evens teams that are two or more apart, moving a player of the larger team \
             as it dies";
        G_ALLOWVOTE: i64 = "g_allowvote", Int { min: 0, max: 1 }, 1, NONE,
            "1 lets players call votes (callvote), of the kinds g_votes names";
        G_VOTES: String = "g_votes", Text { max_len: 128 },
            "map nextmap kick restart fraglimit mode", NONE,
            "the kinds of vote players may call, space-separated: map (within sv_maplist \
             where it is set), nextmap, kick (never a bot nor an admin), restart, \
             fraglimit, mode";
        G_VOTETIME: f64 = "g_votetime", Float { min: 5.0, max: 300.0 }, 30.0, NONE,
            "seconds a vote runs before it fails";
        G_VOTECOOLDOWN: f64 = "g_votecooldown", Float { min: 0.0, max: 3600.0 }, 30.0,
            NONE, "seconds a player waits after calling a vote before calling another";
        G_FRIENDLYFIRE: String = "g_friendlyfire", Choice { options: &["off", "on", "reflect"] },
            "off", NONE,
            "what team mates' fire does to each other: off, on (a team kill costs a frag) or \
             reflect (the team mate is spared, the shooter takes half)";
        G_OVERTIME: i64 = "g_overtime", Int { min: 0, max: 1 }, 1, NONE,
            "1 plays on past the time limit while the lead is tied, until the next frag \
             decides; 0 ends a tied match at the limit";
        SV_WARMUP: f64 = "sv_warmup", Float { min: 0.0, max: 600.0 }, 0.0, NONE,
            "seconds of warmup before each match, where players play and nothing counts, \
             then a 5 s countdown; 0 starts matches at once";
        SV_MINPLAYERS: i64 = "sv_minplayers", Int { min: 0, max: 64 }, 0, NONE,
            "players who must say they are ready (ready, F3) to end the warmup early; 0 \
             leaves it to sv_warmup's time";
        BOTS: i64 = "bots", Int { min: 0, max: 64 }, 0, NONE,
            "bots to add, within maxplayers";
        BOT_SKILL: String = "bot_skill", Choice { options: &["easy", "normal", "hard"] },
            "normal", NONE, "how well bots fight: easy, normal or hard";
        SV_PASSWORD: String = "sv_password", Text { max_len: MAX_PASSWORD_LEN }, "",
            NONE, "password players must give to join; empty for a public server";
        SV_MAX_PER_ADDRESS: i64 = "sv_max_per_address", Int { min: 1, max: 64 }, 4,
            NONE, "most connections from one IP address";
        SV_IDLE_KICK: f64 = "sv_idle_kick", Float { min: 0.0, max: 86400.0 },
            DEFAULT_IDLE_KICK_SECONDS, NONE,
            "seconds without any input after which a player is kicked; 0 never kicks";
        RCON_PASSWORD: String = "rcon_password", Text { max_len: MAX_RCON_PASSWORD_LEN },
            "", NONE,
            "password for remote admin (Source RCON over TCP, and rcon from the game's \
             console); empty turns remote admin off";
        SV_MOTD: String = "sv_motd", Text { max_len: MAX_CHAT_LEN }, "", NONE,
            "message of the day, shown to each player on joining; empty for none";
        SV_MASTERS: String = "sv_masters", Text { max_len: 1024 }, "", RESTART,
            "master lists to announce the server to, comma-separated HOST:PORT; empty for \
             none (an unlisted server)";
        SV_RELAY: String = "sv_relay", Text { max_len: 256 }, "", RESTART,
            "a relay to be reached through too, HOST or HOST:PORT (port 27960 if none), for \
             a server behind a router that opens no port; master lists are then told of \
             the relay's address; empty for none";
        RCON_PORT: i64 = "rcon_port", Int { min: 0, max: 65535 }, 0, RESTART,
            "TCP port for Source RCON; 0 shares the game's port number with the token \
             service";
        SV_BANFILE: String = "sv_banfile", Text { max_len: 1024 }, "", RESTART,
            "file the bans are kept in; empty for bans.txt beside the config file (or in \
             the working directory)";
        SV_MAX_SPECTATORS: i64 = "sv_max_spectators", Int { min: 0, max: 64 },
            sightline_server::DEFAULT_MAX_SPECTATORS as i64, RESTART,
            "most spectators at once, beside the players; 0 takes none";
        SV_SPECTATOR_DELAY: f64 = "sv_spectator_delay",
            Float { min: 0.0, max: sightline_server::MAX_SPECTATOR_DELAY as f64 },
            sightline_server::DEFAULT_SPECTATOR_DELAY as f64, NONE,
            "seconds behind the game that spectators are shown it, so what they see is \
             no use to call out to a player";
        SV_MASTER_INTERVAL: f64 = "sv_master_interval", Float { min: 1.0, max: 3600.0 },
            180.0, RESTART, "seconds between announcements to the master lists";
    }
}

/// A registry of the server's cvars at their defaults.
pub fn server_cvar_registry() -> Cvars {
    let mut cvars = Cvars::default();
    for def in cvar::server_cvars() {
        cvars.register(def);
    }
    cvars
}

/// The server's settings from its cvars, or why they do not go together (each cvar
/// is already within its range; these are the checks between cvars).
pub fn config_from_cvars(cvars: &Cvars) -> Result<ServerConfig, String> {
    let tick_hz = cvars.read(cvar::SV_TICKRATE) as u32;
    let snapshot_hz = match cvars.read(cvar::SV_SNAPSHOTRATE) as u32 {
        0 if tick_hz.is_multiple_of(2) => tick_hz / 2,
        0 => tick_hz,
        hz => hz,
    };
    let tick = TickConfig::new(tick_hz, snapshot_hz).map_err(|e| e.to_string())?;
    // What a client may ask for: never past the tick rate nor under the server's own pace.
    let max_snapshot_hz = match cvars.read(cvar::SV_MAXSNAPSHOTRATE) as u32 {
        0 => tick_hz,
        hz => hz.clamp(tick.snapshot_hz(), tick_hz),
    };
    let max_players = cvars.read(cvar::MAXPLAYERS) as u8;
    let bots = cvars.read(cvar::BOTS) as u8;
    if bots > max_players {
        return Err(format!("bots {bots} exceeds maxplayers {max_players}"));
    }
    let mode = cvars.read(cvar::MODE);
    let mode = GameMode::ALL
        .into_iter()
        .find(|m| m.keyword() == mode)
        .unwrap_or_default();
    let rotation = map_list(&cvars.read(cvar::SV_MAPLIST));
    // Names in the maps folder, never paths: `sv_maplist` may be set over rcon, and a
    // path would have the next match read any file the server may.
    if let Some(bad) = rotation.iter().find(|m| !is_map_identifier(m)) {
        return Err(format!(
            "sv_maplist: {bad:?} is not a map name (a map's file name in maps/, without .ron)"
        ));
    }
    let bot_skill = match cvars.read(cvar::BOT_SKILL).as_str() {
        "easy" => BotSkill::Easy,
        "hard" => BotSkill::Hard,
        _ => BotSkill::Normal,
    };
    let votes = VoteRules {
        allowed: if cvars.read(cvar::G_ALLOWVOTE) == 0 {
            Vec::new()
        } else {
            vote_kinds(&cvars.read(cvar::G_VOTES))?
        },
        seconds: cvars.read(cvar::G_VOTETIME) as f32,
        cooldown: cvars.read(cvar::G_VOTECOOLDOWN) as f32,
    };
    Ok(ServerConfig {
        name: clean_text(&cvars.read(cvar::SV_HOSTNAME), MAX_SERVER_NAME_LEN),
        max_players,
        bots,
        bot_skill,
        rules: MatchRules {
            mode,
            fraglimit: cvars.read(cvar::FRAGLIMIT) as i32,
            capturelimit: cvars.read(cvar::CAPTURELIMIT) as u16,
            timelimit: (cvars.read(cvar::TIMELIMIT) * 60.0) as f32,
            rotation,
            team_force_balance: cvars.read(cvar::G_TEAMFORCEBALANCE) != 0,
            auto_balance: cvars.read(cvar::G_AUTOBALANCE) != 0,
            overtime: cvars.read(cvar::G_OVERTIME) != 0,
            warmup: cvars.read(cvar::SV_WARMUP) as f32,
            min_ready: cvars.read(cvar::SV_MINPLAYERS) as u8,
            friendly_fire: match cvars.read(cvar::G_FRIENDLYFIRE).as_str() {
                "on" => FriendlyFire::On,
                "reflect" => FriendlyFire::Reflect,
                _ => FriendlyFire::Off,
            },
        },
        tick,
        max_snapshot_hz,
        idle_kick_seconds: cvars.read(cvar::SV_IDLE_KICK) as f32,
        motd: clean_text(&cvars.read(cvar::SV_MOTD), MAX_CHAT_LEN),
        max_spectators: cvars.read(cvar::SV_MAX_SPECTATORS) as u8,
        spectator_delay: cvars.read(cvar::SV_SPECTATOR_DELAY) as f32,
        votes,
    })
}

/// The kinds of vote `g_votes` names, or the word that names none.
fn vote_kinds(text: &str) -> Result<Vec<VoteKind>, String> {
    text.split([' ', ','])
        .filter(|w| !w.is_empty())
        .map(|w| {
            VoteKind::parse(w).ok_or_else(|| {
                let all: Vec<&str> = VoteKind::ALL.iter().map(|k| k.keyword()).collect();
                format!("g_votes: {w:?} is not a vote (one of {})", all.join(", "))
            })
        })
        .collect()
}

/// The maps of `sv_maplist`, in order, blanks left out.
pub fn map_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_default_config() {
        let config = config_from_cvars(&server_cvar_registry()).unwrap();
        let default = ServerConfig::default();
        assert_eq!(config.name, default.name);
        assert_eq!(config.max_players, default.max_players);
        assert_eq!(config.tick, default.tick);
        assert_eq!(config.max_snapshot_hz, default.max_snapshot_hz);
        assert_eq!(config.rules.fraglimit, default.rules.fraglimit);
        assert_eq!(config.rules.timelimit, default.rules.timelimit);
        assert_eq!(
            config.rules.team_force_balance,
            default.rules.team_force_balance
        );
        assert_eq!(config.rules.auto_balance, default.rules.auto_balance);
        assert_eq!(config.votes, default.votes);
        assert_eq!(config.rules.friendly_fire, default.rules.friendly_fire);
        assert_eq!(config.rules.overtime, default.rules.overtime);
        assert_eq!(config.idle_kick_seconds, default.idle_kick_seconds);
    }

    #[test]
    fn settings_that_do_not_go_together_are_refused() {
        let mut cvars = server_cvar_registry();
        cvars.set_handle(cvar::SV_TICKRATE, "128").unwrap();
        cvars.set_handle(cvar::SV_SNAPSHOTRATE, "50").unwrap();
        assert!(config_from_cvars(&cvars).is_err());
        cvars.set_handle(cvar::SV_SNAPSHOTRATE, "0").unwrap();
        cvars.set_handle(cvar::MAXPLAYERS, "4").unwrap();
        cvars.set_handle(cvar::BOTS, "5").unwrap();
        let Err(err) = config_from_cvars(&cvars) else {
            panic!("more bots than players accepted");
        };
        assert!(err.contains("exceeds maxplayers 4"), "{err}");
    }

    #[test]
    fn the_match_settings_are_read_as_typed() {
        let mut cvars = server_cvar_registry();
        for (name, value) in [
            ("mode", "TDM"),
            ("bot_skill", "hard"),
            ("timelimit", "2.5"),
            ("sv_maplist", "duel, ,arena"),
            ("sv_tickrate", "63"),
        ] {
            cvars.set(name, value).unwrap();
        }
        let config = config_from_cvars(&cvars).unwrap();
        assert_eq!(config.rules.mode, GameMode::TeamDeathmatch);
        assert_eq!(config.bot_skill, BotSkill::Hard);
        assert_eq!(config.rules.timelimit, 150.0);
        assert_eq!(config.rules.rotation, ["duel", "arena"]);
        assert_eq!((config.tick.tick_hz, config.tick.snapshot_hz()), (63, 63));
    }

    #[test]
    fn the_votes_allowed_are_read_and_a_word_that_is_none_refused() {
        let mut cvars = server_cvar_registry();
        cvars.set("g_votes", "kick, map").unwrap();
        let config = config_from_cvars(&cvars).unwrap();
        assert_eq!(config.votes.allowed, [VoteKind::Kick, VoteKind::Map]);
        cvars.set("g_allowvote", "0").unwrap();
        assert!(config_from_cvars(&cvars).unwrap().votes.allowed.is_empty());
        cvars.set("g_allowvote", "1").unwrap();
        cvars.set("g_votes", "map rcon").unwrap();
        let err = config_from_cvars(&cvars).err().unwrap();
        assert!(err.contains("\"rcon\" is not a vote"), "{err}");
    }

    #[test]
    fn a_map_list_names_maps_and_never_paths() {
        let mut cvars = server_cvar_registry();
        cvars.set("sv_maplist", "duel, depot").unwrap();
        let config = config_from_cvars(&cvars).unwrap();
        assert_eq!(config.rules.rotation, ["duel", "depot"]);
        for bad in [
            "duel, ../../etc/passwd",
            "/etc/hosts",
            "maps/duel.ron",
            "duel.ron",
        ] {
            cvars.set("sv_maplist", bad).unwrap();
            let Err(refused) = config_from_cvars(&cvars) else {
                panic!("{bad} accepted");
            };
            assert!(refused.contains("not a map name"), "{refused}");
        }
    }
}
