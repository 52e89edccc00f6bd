//! Capture the flag on the in-process stepper: a bot team fetches the enemy's flag and
//! brings it home, and every client hears it and sees the flags where the server has
//! them; a vote for capture the flag where no bases stand is refused.

use crate::support::raw::{assert_told, players, send};
use sightline_bots::BotSkill;
use sightline_client::{ChatLog, LatestSnapshot, MatchInfo, Roster};
use sightline_combat::{FlagAt, Flags, Score};
use sightline_harness::Stepper;
use sightline_protocol::{ClientMessage, FlagSpot, VoteProposal};
use sightline_server::{GameMode, MatchRules, MatchState, ServerConfig};
use sightline_sim::{PlayerId, TickConfig};

fn ctf(bots: u8, capturelimit: u16) -> ServerConfig {
    ServerConfig {
        name: "flags".into(),
        max_players: 8,
        bots,
        bot_skill: BotSkill::Hard,
        rules: MatchRules {
            mode: GameMode::CaptureTheFlag,
            capturelimit,
            timelimit: 0.0,
            ..MatchRules::default()
        },
        tick: TickConfig::new(64, 32).unwrap(),
        ..Default::default()
    }
}

#[test]
fn a_bot_team_brings_the_enemy_flag_home_and_everyone_hears_and_sees_it() {
    let mut s = Stepper::new(ctf(4, 1), "depot");
    s.add_client("watcher one", 1);
    s.add_client("watcher two", 2);
    let eye = s.add_spectator("eye");
    // A flag is taken on the way (the server's truth, looked at every step).
    let mut seen_taken = false;
    let ended = s.run_until(64 * 240, |s| {
        let flags = *s.server.world().resource::<Flags>();
        if flags.at.iter().any(|a| matches!(a, FlagAt::Carried(_))) {
            seen_taken = true;
        }
        s.server.world().resource::<MatchState>().finished > 0
    });
    assert!(ended, "no capture in four minutes of bots");
    assert!(seen_taken);
    // The scoreboard goes out within a second; a spectator sees the game 3 s late.
    s.run_for(4.5);
    let w = s.server.world_mut();
    let captures: Vec<(PlayerId, u32)> = w
        .query::<(&PlayerId, &Score)>()
        .iter(w)
        .filter(|(_, sc)| sc.captures > 0)
        .map(|(id, sc)| (*id, sc.captures))
        .collect();
    assert_eq!(captures.len(), 1, "one capture ends it: {captures:?}");
    let capturer = captures[0].0;
    let flags = s.server.world().resource::<Flags>().at.map(FlagSpot::from);
    // The spectator hears the capture once, when its late world reaches it.
    let lines = |i: usize| -> Vec<String> {
        let chat = s.clients[i].world().resource::<ChatLog>();
        chat.0.iter().map(|(_, line)| line.clone()).collect()
    };
    let (played, watched) = (lines(0), lines(eye));
    let captured = |lines: &[String]| lines.iter().filter(|l| l.contains("captured the")).count();
    assert_eq!(captured(&watched), 1, "{watched:?}");
    assert_eq!(captured(&played), 1, "{played:?}");
    // Every client, the spectator too (its late world has reached the match's end).
    for c in &s.clients {
        let w = c.world();
        let info = w.resource::<MatchInfo>();
        assert!(info.ctf, "{info:?}");
        assert!(
            info.winner
                .as_deref()
                .is_some_and(|w| w.contains("team wins with 1 captures")),
            "{info:?}"
        );
        assert!(
            info.awards
                .iter()
                .any(|(title, _, what)| title == "Most captures" && what == "1 captures"),
            "{info:?}"
        );
        let name = w.resource::<Roster>().name(capturer).to_string();
        let chat = w.resource::<ChatLog>();
        assert!(
            chat.0
                .iter()
                .any(|(_, line)| line.starts_with(&name) && line.contains("captured the")),
            "{:?}",
            chat.0
        );
        assert_eq!(w.resource::<Roster>().0[&capturer].captures, 1);
        let latest = w
            .resource::<LatestSnapshot>()
            .0
            .as_ref()
            .expect("snapshots");
        assert_eq!(
            latest.flags,
            Some(flags),
            "the flags where the server has them"
        );
    }
}

#[test]
fn capture_the_flag_where_no_bases_stand_is_refused_or_played_as_teams() {
    // Voted: refused, with the reason.
    let mut s = Stepper::new(
        ServerConfig {
            rules: MatchRules {
                mode: GameMode::TeamDeathmatch,
                ..MatchRules::default()
            },
            ..ctf(0, 3)
        },
        "duel",
    );
    let joined = players(&mut s, &["ann"]);
    let proposal = VoteProposal::Mode(GameMode::CaptureTheFlag);
    send(&mut s, joined[0].0, ClientMessage::CallVote { proposal });
    assert_told(&mut s, joined[0].0, "duel has no flag bases");
    // Set by the host: team deathmatch, and no flags in snapshots.
    let mut s = Stepper::new(ctf(2, 3), "duel");
    s.add_client("watcher", 1);
    s.run_for(2.0);
    assert!(!s.server.world().resource::<Flags>().active());
    let w = s.clients[0].world();
    assert!(!w.resource::<MatchInfo>().ctf);
    assert!(w.resource::<MatchInfo>().team_game);
    let latest = w
        .resource::<LatestSnapshot>()
        .0
        .as_ref()
        .expect("snapshots");
    assert_eq!(latest.flags, None);
}
