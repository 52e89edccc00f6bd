//! Matches end by their limits, with the same scores on every client, and move on.

use sightline_bots::BotSkill;
use sightline_client::{MatchInfo, Roster};
use sightline_combat::Score;
use sightline_harness::Stepper;
use sightline_map::CurrentMap;
use sightline_server::{GameMode, MatchRules, MatchState, ServerConfig};
use sightline_sim::{PlayerId, TickConfig};

#[test]
fn a_bot_match_ends_by_frag_limit_with_the_same_scores_everywhere_then_rotates() {
    let config = ServerConfig {
        name: "match".into(),
        max_players: 8,
        bots: 4,
        bot_skill: BotSkill::Hard,
        rules: MatchRules {
            mode: GameMode::Deathmatch,
            fraglimit: 3,
            timelimit: 0.0,
            rotation: vec!["duel".into(), "depot".into()],
            ..MatchRules::default()
        },
        tick: TickConfig::new(64, 32).unwrap(),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "duel");
    s.add_client("watcher one", 1);
    s.add_client("watcher two", 2);
    let ended = s.run_until(64 * 240, |s| {
        s.server.world().resource::<MatchState>().finished > 0
    });
    assert!(ended, "no one reached 3 frags in four minutes");
    // The final scoreboard goes out within a second; the intermission lasts eight.
    s.run_for(1.5);
    let w = s.server.world_mut();
    let mut server_scores: Vec<(PlayerId, i32, u32)> = w
        .query::<(&PlayerId, &Score)>()
        .iter(w)
        .map(|(id, sc)| (*id, sc.frags, sc.deaths))
        .collect();
    server_scores.sort();
    let tick = s.server.world().resource::<sightline_sim::Tick>().0;
    eprintln!("match over after {tick} ticks: {server_scores:?}");
    assert!(
        server_scores.iter().any(|(_, f, _)| *f >= 3),
        "{server_scores:?}"
    );
    for c in &s.clients {
        let w = c.world();
        let info = w.resource::<MatchInfo>();
        assert!(info.intermission, "{info:?}");
        assert!(
            info.winner
                .as_deref()
                .is_some_and(|w| w.contains("wins with 3 frags")),
            "{info:?}"
        );
        let client_scores: Vec<(PlayerId, i32, u32)> = w
            .resource::<Roster>()
            .0
            .iter()
            .map(|(id, p)| (*id, p.frags, p.deaths))
            .collect();
        assert_eq!(
            client_scores, server_scores,
            "a client's scoreboard disagrees"
        );
        // The awards, the same everywhere: the most frags to the winner, with its frags.
        let best = server_scores.iter().map(|s| s.1).max().unwrap();
        let (title, name, what) = info.awards.first().expect("awards at the end");
        assert_eq!(title, "Most frags");
        assert_eq!(what, &format!("{best} frags"));
        assert!(
            info.winner
                .as_deref()
                .is_some_and(|w| w.starts_with(name.as_str())),
            "{info:?}"
        );
        assert!(info.report.is_some(), "each player is told their own match");
    }
    let awards = |c: &bevy::prelude::App| c.world().resource::<MatchInfo>().awards.clone();
    assert_eq!(awards(&s.clients[0]), awards(&s.clients[1]));
    // After the intermission: the next map of the rotation, everywhere, scores reset.
    s.run_for(8.0);
    assert_eq!(s.server.world().resource::<CurrentMap>().def.name, "depot");
    for c in &s.clients {
        assert_eq!(c.world().resource::<CurrentMap>().def.name, "depot");
        assert!(!c.world().resource::<MatchInfo>().intermission);
        assert!(
            c.world().resource::<MatchInfo>().awards.is_empty(),
            "a new match"
        );
    }
    let w = s.server.world_mut();
    assert!(w.query::<&Score>().iter(w).all(|sc| sc.frags <= 1));
}
