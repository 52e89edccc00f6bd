//! Playing together: chat by audience (a team's line to the team, a spectator's to the
//! spectators while the match runs), a rename and a change of side without reconnecting,
//! and both asked for too often or out of bounds: refused, counted, nobody kicked.

use crate::support::raw::{assert_told, chat, heard, notices, players, send, set_frags, spectator};
use sightline_combat::{GameMode, Score, Team};
use sightline_harness::Stepper;
use sightline_protocol::{ClientMessage, ServerMessage, TeamChoice};
use sightline_server::{MatchRules, ServerConfig, ServerStats};
use sightline_sim::{PlayerId, PlayerName};

/// A team deathmatch server without bots, with room for a spectator.
fn tdm() -> ServerConfig {
    ServerConfig {
        max_players: 8,
        bots: 0,
        max_spectators: 2,
        spectator_delay: 0.0,
        rules: MatchRules {
            mode: GameMode::TeamDeathmatch,
            ..MatchRules::default()
        },
        ..Default::default()
    }
}

fn team_of(s: &mut Stepper, id: PlayerId) -> Option<Team> {
    s.on_server::<Team, _>(id, |t| *t)
}

#[test]
fn a_team_line_reaches_the_team_and_a_spectator_s_the_spectators() {
    let mut s = Stepper::new(tdm(), "duel");
    let joined = players(&mut s, &["ann", "bob", "cat"]);
    let watcher = spectator(&mut s, "eve");
    let all: Vec<usize> = joined.iter().map(|j| j.0).chain([watcher]).collect();
    heard(&mut s, &all);
    let ann = joined[0];
    let mate = joined
        .iter()
        .skip(1)
        .find(|j| team_of(&mut s, j.1) == team_of(&mut s, ann.1))
        .expect("three players: two share a side")
        .0;
    let foe = joined
        .iter()
        .find(|j| team_of(&mut s, j.1) != team_of(&mut s, ann.1))
        .expect("one on the other side")
        .0;

    send(
        &mut s,
        ann.0,
        ClientMessage::Chat {
            text: "push left".into(),
            team: true,
        },
    );
    let got = heard(&mut s, &[ann.0, mate, foe, watcher]);
    let line = vec![("push left".to_string(), true)];
    assert_eq!(chat(&got[0]), line, "the speaker hears itself");
    assert_eq!(chat(&got[1]), line, "the team mate");
    assert!(chat(&got[2]).is_empty(), "not the other team: {:?}", got[2]);
    assert!(chat(&got[3]).is_empty(), "not the spectators: {:?}", got[3]);

    send(
        &mut s,
        ann.0,
        ClientMessage::Chat {
            text: "gg".into(),
            team: false,
        },
    );
    let got = heard(&mut s, &[ann.0, mate, foe, watcher]);
    for (who, msgs) in got.iter().enumerate() {
        assert_eq!(chat(msgs), [("gg".to_string(), false)], "client {who}");
    }

    send(
        &mut s,
        watcher,
        ClientMessage::Chat {
            text: "he is behind you".into(),
            team: false,
        },
    );
    let got = heard(&mut s, &[ann.0, mate, foe, watcher]);
    for msgs in &got[..3] {
        assert!(
            chat(msgs).is_empty(),
            "a player heard a spectator: {msgs:?}"
        );
    }
    assert!(
        got[3].iter().any(|m| matches!(
            m,
            ServerMessage::SpectatorChat { name, text } if name == "eve" && text == "he is behind you"
        )),
        "{:?}",
        got[3]
    );
    assert_eq!(s.server.world().resource::<ServerStats>().kicks, 0);
}

#[test]
fn a_player_renames_and_changes_side_without_reconnecting() {
    let mut s = Stepper::new(tdm(), "duel");
    let joined = players(&mut s, &["ann", "bob", "cat"]);
    let clients: Vec<usize> = joined.iter().map(|j| j.0).collect();
    heard(&mut s, &clients);
    let (ann, ann_id) = joined[0];

    send(&mut s, ann, ClientMessage::Rename { name: "BOB".into() });
    let got = heard(&mut s, &clients);
    for msgs in &got {
        assert!(
            msgs.iter().any(|m| matches!(
                m,
                ServerMessage::PlayerRenamed { id, name } if *id == ann_id && name == "BOB (2)"
            )),
            "a name like another's is suffixed, as at joining: {msgs:?}"
        );
    }
    let name = s.on_server::<PlayerName, _>(ann_id, |n| n.0.clone());
    assert_eq!(name.as_deref(), Some("BOB (2)"));

    // Again at once: refused until the interval passes, and said so to the asker alone.
    send(&mut s, ann, ClientMessage::Rename { name: "dot".into() });
    let got = heard(&mut s, &clients);
    let told = notices(&got[0]);
    assert!(
        told.iter().any(|t| t.contains("name not changed: wait")),
        "{told:?}"
    );
    assert!(notices(&got[1]).is_empty(), "{:?}", got[1]);

    // A side: the one cat is not on makes it two against one either way, so it is taken,
    // with the frags starting again; a side already taken is refused.
    let cat_id = joined[2].1;
    let before = team_of(&mut s, cat_id).expect("a side in team games");
    let other = match before {
        Team::Red => TeamChoice::Blue,
        Team::Blue => TeamChoice::Red,
    };
    set_frags(&mut s, cat_id, 5);
    send(
        &mut s,
        joined[2].0,
        ClientMessage::JoinTeam { choice: other },
    );
    let got = heard(&mut s, &clients);
    assert_eq!(team_of(&mut s, cat_id), Some(before.other()));
    assert_eq!(s.on_server::<Score, _>(cat_id, |sc| sc.frags), Some(0));
    let announced = format!("cat joined the {} team", before.other().name());
    assert!(notices(&got[1]).contains(&announced), "{:?}", got[1]);
    let stats = s.server.world().resource::<ServerStats>();
    assert_eq!((stats.refused_requests, stats.kicks), (1, 0));
}

#[test]
fn a_change_of_side_that_unevens_the_teams_or_comes_every_tick_is_refused_and_counted() {
    let mut s = Stepper::new(tdm(), "duel");
    let joined = players(&mut s, &["ann", "bob"]);
    let (ann, ann_id) = joined[0];
    heard(&mut s, &[ann]);
    let side = team_of(&mut s, ann_id).expect("a side");
    let other = match side {
        Team::Red => TeamChoice::Blue,
        Team::Blue => TeamChoice::Red,
    };
    // One against one: moving makes it none against two.
    send(&mut s, ann, ClientMessage::JoinTeam { choice: other });
    assert_told(&mut s, ann, "has more players");
    // A change asked for every tick for a second: each refused (uneven, or too soon),
    // counted, and the sender neither moved nor kicked.
    let ticks = s.tick_hz() as usize;
    for _ in 0..ticks {
        send(&mut s, ann, ClientMessage::JoinTeam { choice: other });
        send(
            &mut s,
            ann,
            ClientMessage::JoinTeam {
                choice: TeamChoice::Auto,
            },
        );
        s.step();
    }
    s.steps(5);
    assert_eq!(team_of(&mut s, ann_id), Some(side));
    let stats = s.server.world().resource::<ServerStats>();
    assert_eq!(stats.refused_requests, 1 + 2 * ticks as u64);
    assert_eq!(stats.kicks, 0);
    // A spectator cannot go to watch (`switching` has it come to play), and a reserved
    // name is nobody's.
    let watcher = spectator(&mut s, "eve");
    send(
        &mut s,
        watcher,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Spectator,
        },
    );
    assert_told(&mut s, watcher, "you are watching already");
    send(
        &mut s,
        ann,
        ClientMessage::Rename {
            name: "Admin".into(),
        },
    );
    assert_told(&mut s, ann, "reserved");
    let name = s.on_server::<PlayerName, _>(ann_id, |n| n.0.clone());
    assert_eq!(name.as_deref(), Some("ann"));
    // A spectator renames too, as often as a player may.
    send(
        &mut s,
        watcher,
        ClientMessage::Rename {
            name: "eve2".into(),
        },
    );
    send(
        &mut s,
        watcher,
        ClientMessage::Rename {
            name: "eve3".into(),
        },
    );
    let got = heard(&mut s, &[watcher]);
    let told = notices(&got[0]);
    assert!(
        told.iter().any(|t| t.contains("name not changed: wait")),
        "{told:?}"
    );
    let w = s.server.world_mut();
    let names: Vec<String> = w
        .query::<&sightline_server::Spectator>()
        .iter(w)
        .map(|sp| sp.name.clone())
        .collect();
    assert_eq!(names, ["eve2"]);
}
