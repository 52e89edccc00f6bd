//! Matches end by their limits, with the same scores on every client, and move on.

use crate::support::raw::set_frags;
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

/// A free-for-all of two idle players, ann and bob, under `rules`.
fn two_idle(rules: MatchRules) -> (Stepper, Vec<(usize, PlayerId)>) {
    let config = ServerConfig {
        max_players: 4,
        bots: 0,
        rules,
        tick: TickConfig::new(64, 32).unwrap(),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "duel");
    let joined = crate::support::raw::players(&mut s, &["ann", "bob"]);
    (s, joined)
}

/// Two idle players whose match ends after `seconds`, overtime as given.
fn tied_match(seconds: f32, overtime: bool) -> (Stepper, Vec<(usize, PlayerId)>) {
    two_idle(MatchRules {
        timelimit: seconds,
        overtime,
        ..MatchRules::default()
    })
}

#[test]
fn a_tie_at_the_time_limit_goes_to_overtime_until_the_next_frag() {
    let (mut s, joined) = tied_match(1.0, true);
    s.run_for(1.5);
    let state = s.server.world().resource::<MatchState>().clone();
    assert!(state.overtime && state.finished == 0, "{state:?}");
    let told = crate::support::raw::heard(&mut s, &[joined[0].0]);
    assert!(
        crate::support::raw::notices(&told[0])
            .iter()
            .any(|t| t.starts_with("Overtime")),
        "{:?}",
        told[0]
    );
    // Bob scores: the tie is broken and the match ends at once.
    set_frags(&mut s, joined[1].1, 1);
    s.steps(2);
    let state = s.server.world().resource::<MatchState>().clone();
    assert_eq!(state.finished, 1);
    assert!(!state.overtime);
    let winner = state.intermission.map(|i| i.1).unwrap_or_default();
    assert!(winner.starts_with("bob wins"), "{winner}");
    // The host's choice: a tie ends at the limit.
    let (mut s, _) = tied_match(1.0, false);
    s.run_for(1.5);
    assert_eq!(s.server.world().resource::<MatchState>().finished, 1);
}

/// A free-for-all of two idle players with a warmup, `min_ready` of them to start it
/// early, and a frag limit of 1.
fn warmup_match(warmup: f32, min_ready: u8) -> (Stepper, Vec<(usize, PlayerId)>) {
    two_idle(MatchRules {
        fraglimit: 1,
        warmup,
        min_ready,
        ..MatchRules::default()
    })
}

#[test]
fn nothing_counts_in_the_warmup_and_the_match_starts_after_its_countdown() {
    let (mut s, joined) = warmup_match(2.0, 0);
    assert!(s.server.world().resource::<MatchState>().warmup.is_some());
    // A frag limit reached in the warmup ends nothing.
    set_frags(&mut s, joined[0].1, 3);
    s.run_for(1.0);
    let state = s.server.world().resource::<MatchState>().clone();
    assert!(state.warmup.is_some() && state.finished == 0, "{state:?}");
    // The warmup runs out into the countdown, the countdown into the match.
    s.run_for(1.5);
    assert!(
        s.server
            .world()
            .resource::<MatchState>()
            .countdown
            .is_some()
    );
    s.run_for(f64::from(sightline_server::COUNTDOWN) + 0.5);
    let state = s.server.world().resource::<MatchState>().clone();
    assert!(!state.before_start() && state.finished == 0, "{state:?}");
    assert_eq!(s.on_server::<Score, _>(joined[0].1, |sc| sc.frags), Some(0));
    // Now a frag counts.
    set_frags(&mut s, joined[1].1, 1);
    s.steps(2);
    assert_eq!(s.server.world().resource::<MatchState>().finished, 1);
}

#[test]
fn the_warmup_ends_when_enough_players_are_ready() {
    use crate::support::raw::{assert_told, heard, notices, send};
    use sightline_protocol::ClientMessage;
    let (mut s, joined) = warmup_match(600.0, 2);
    let (ann, bob) = (joined[0].0, joined[1].0);
    send(&mut s, ann, ClientMessage::Ready);
    let got = heard(&mut s, &[bob]);
    assert!(
        notices(&got[0]).contains(&"ann is ready".to_string()),
        "{:?}",
        got[0]
    );
    assert!(
        s.server.world().resource::<MatchState>().warmup.is_some(),
        "one of two"
    );
    send(&mut s, bob, ClientMessage::Ready);
    s.steps(5);
    let state = s.server.world().resource::<MatchState>().clone();
    assert!(
        state.warmup.is_none() && state.countdown.is_some(),
        "{state:?}"
    );
    s.run_for(f64::from(sightline_server::COUNTDOWN) + 0.5);
    assert!(!s.server.world().resource::<MatchState>().before_start());
    // Ready once the match has begun: refused and said so.
    s.run_for(1.1);
    send(&mut s, ann, ClientMessage::Ready);
    assert_told(&mut s, ann, "the match has begun");
}
