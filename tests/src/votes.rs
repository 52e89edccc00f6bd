//! Votes on the in-process stepper: each kind called, voted and carried out; a vote that
//! fails; and what no vote may do (a spectator voting, a kick of an admin or a bot, a map
//! outside the rotation, a kind the host turned off, a flood of calls): refused, counted,
//! nobody kicked for asking.

use crate::support::raw::{
    assert_told, heard, notices, players, reliable, send, set_frags, spectator,
};
use sightline_combat::Score;
use sightline_harness::Stepper;
use sightline_protocol::{ClientMessage, ServerMessage, VoteProposal, VoteTally};
use sightline_server::{
    Admin, MatchRules, MatchState, ServerConfig, ServerStats, VoteKind, VoteRules, Votes,
};
use sightline_sim::PlayerId;

/// A free-for-all server with a map list, two bots and room for spectators.
fn config() -> ServerConfig {
    ServerConfig {
        max_players: 8,
        bots: 2,
        max_spectators: 2,
        spectator_delay: 0.0,
        rules: MatchRules {
            fraglimit: 20,
            rotation: vec!["duel".into(), "depot".into()],
            ..MatchRules::default()
        },
        ..Default::default()
    }
}

fn call(s: &mut Stepper, i: usize, proposal: VoteProposal) {
    send(s, i, ClientMessage::CallVote { proposal });
}

fn vote(s: &mut Stepper, i: usize, yes: bool) {
    send(s, i, ClientMessage::Vote { yes });
}

/// The last tally among messages (`Some(None)`: the vote ended).
fn tally(msgs: &[ServerMessage]) -> Option<Option<VoteTally>> {
    msgs.iter().rev().find_map(|m| match m {
        ServerMessage::Vote(t) => Some(t.clone()),
        _ => None,
    })
}

fn refused(s: &Stepper) -> u64 {
    s.server.world().resource::<ServerStats>().refused_requests
}

/// Three people in the game (and two bots, who do not vote).
fn three(s: &mut Stepper) -> Vec<(usize, PlayerId)> {
    let joined = players(s, &["ann", "bob", "cat"]);
    let all: Vec<usize> = joined.iter().map(|j| j.0).collect();
    heard(s, &all);
    joined
}

#[test]
fn a_vote_passes_on_a_majority_of_the_people_playing_and_is_carried_out() {
    let mut s = Stepper::new(config(), "duel");
    let joined = three(&mut s);
    let (ann, bob, cat) = (joined[0].0, joined[1].0, joined[2].0);

    // Fraglimit: the caller's yes is one of three; bob's makes two, more than half.
    call(&mut s, ann, VoteProposal::Fraglimit(7));
    let got = heard(&mut s, &[ann, bob, cat]);
    let open = tally(&got[1])
        .flatten()
        .expect("everyone is shown the vote");
    assert_eq!(
        (open.yes, open.no, open.voters),
        (1, 0, 3),
        "bots do not vote"
    );
    assert_eq!(open.question, "set the frag limit to 7?");
    assert!(
        notices(&got[2])
            .iter()
            .any(|t| t.contains("ann called a vote"))
    );
    vote(&mut s, bob, true);
    let got = heard(&mut s, &[cat]);
    assert_eq!(tally(&got[0]), Some(None), "ended");
    assert!(
        notices(&got[0])
            .iter()
            .any(|t| t.starts_with("vote passed")),
        "{:?}",
        got[0]
    );
    assert_eq!(
        s.server.world().resource::<ServerConfig>().rules.fraglimit,
        7
    );

    // Restart: scores zeroed. Each caller waits its cooldown, so bob calls this one.
    let ann_id = joined[0].1;
    set_frags(&mut s, ann_id, 3);
    call(&mut s, bob, VoteProposal::Restart);
    s.steps(2);
    vote(&mut s, cat, true);
    s.steps(5);
    assert_eq!(s.on_server::<Score, _>(ann_id, |sc| sc.frags), Some(0));

    // Next map, then a map by name.
    call(&mut s, cat, VoteProposal::NextMap);
    s.steps(2);
    vote(&mut s, ann, true);
    s.steps(5);
    assert_eq!(map_name(&s), "depot");
    let mut s = Stepper::new(config(), "duel");
    let joined = three(&mut s);
    call(&mut s, joined[0].0, VoteProposal::Map("depot".into()));
    s.steps(2);
    vote(&mut s, joined[1].0, true);
    s.steps(5);
    assert_eq!(map_name(&s), "depot");
    assert_eq!(refused(&s), 0);
}

#[test]
fn a_kick_vote_kicks_and_a_vote_against_fails() {
    let mut s = Stepper::new(config(), "duel");
    let joined = three(&mut s);
    let (ann, bob, cat) = (joined[0].0, joined[1].0, joined[2].0);
    // Two of three against: it cannot pass.
    call(&mut s, ann, VoteProposal::Kick(joined[2].1));
    s.steps(2);
    vote(&mut s, bob, false);
    vote(&mut s, cat, false);
    let got = heard(&mut s, &[ann]);
    assert!(
        notices(&got[0])
            .iter()
            .any(|t| t.starts_with("vote failed (1 yes, 2 no)")),
        "{:?}",
        got[0]
    );
    assert!(!s.server.world().resource::<Votes>().running());
    // Bob calls it again; ann agrees.
    call(&mut s, bob, VoteProposal::Kick(joined[2].1));
    s.steps(2);
    vote(&mut s, ann, true);
    s.steps(5);
    let told = reliable(&mut s, cat);
    assert!(
        told.iter().any(|m| matches!(
            m,
            ServerMessage::Refused { reason } if reason == "kicked by vote"
        )),
        "{told:?}"
    );
    assert_eq!(s.server.world().resource::<ServerStats>().kicks, 1);
    // The kicked one's last words are discarded unread: no vote, nothing judged.
    let before = refused(&s);
    call(&mut s, cat, VoteProposal::Restart);
    s.steps(3);
    assert!(!s.server.world().resource::<Votes>().running());
    assert_eq!(refused(&s), before);
}

#[test]
fn a_vote_runs_out_of_time_without_a_majority() {
    let mut s = Stepper::new(
        ServerConfig {
            votes: VoteRules {
                seconds: 1.0,
                ..VoteRules::default()
            },
            ..config()
        },
        "duel",
    );
    let joined = three(&mut s);
    call(&mut s, joined[0].0, VoteProposal::Restart);
    s.steps(2);
    assert!(s.server.world().resource::<Votes>().running());
    s.run_for(1.2);
    assert!(!s.server.world().resource::<Votes>().running());
    let elapsed = s.server.world().resource::<MatchState>().elapsed;
    assert!(elapsed > 1.0, "no restart: {elapsed}");
}

#[test]
fn no_vote_does_what_the_host_forbade_and_no_asker_is_kicked_for_asking() {
    let mut s = Stepper::new(
        ServerConfig {
            votes: VoteRules {
                allowed: vec![VoteKind::Map, VoteKind::Kick, VoteKind::Fraglimit],
                ..VoteRules::default()
            },
            ..config()
        },
        "duel",
    );
    let joined = three(&mut s);
    let (ann, bob) = (joined[0].0, joined[1].0);
    let watcher = spectator(&mut s, "eve");
    let bot = s
        .server
        .world_mut()
        .query_filtered::<&PlayerId, bevy::prelude::With<sightline_sim::BotControlled>>()
        .iter(s.server.world())
        .next()
        .copied()
        .expect("a bot");
    // Bob gave the rcon password once: the host's.
    let bob_entity = s
        .server
        .world_mut()
        .query::<(bevy::prelude::Entity, &PlayerId)>()
        .iter(s.server.world())
        .find(|(_, id)| **id == joined[1].1)
        .map(|(e, _)| e)
        .unwrap();
    s.server.world_mut().entity_mut(bob_entity).insert(Admin);

    let attempts: Vec<(usize, ClientMessage, &str)> = vec![
        (
            watcher,
            ClientMessage::Vote { yes: true },
            "spectators do not vote",
        ),
        (
            watcher,
            ClientMessage::CallVote {
                proposal: VoteProposal::Restart,
            },
            "spectators do not vote",
        ),
        (
            ann,
            ClientMessage::CallVote {
                proposal: VoteProposal::Restart,
            },
            "restart votes are off",
        ),
        (ann, ClientMessage::Vote { yes: true }, "no vote is running"),
        (
            ann,
            ClientMessage::CallVote {
                proposal: VoteProposal::Kick(joined[1].1),
            },
            "bob is an admin",
        ),
        (
            ann,
            ClientMessage::CallVote {
                proposal: VoteProposal::Kick(bot),
            },
            "bots are the host's",
        ),
        (
            ann,
            ClientMessage::CallVote {
                proposal: VoteProposal::Kick(PlayerId(60)),
            },
            "no such player",
        ),
        (
            ann,
            ClientMessage::CallVote {
                proposal: VoteProposal::Map("arena".into()),
            },
            "not in this server's map list",
        ),
        (
            ann,
            ClientMessage::CallVote {
                proposal: VoteProposal::Fraglimit(5000),
            },
            "a frag limit is 0 to 1000",
        ),
    ];
    for (n, (who, msg, why)) in attempts.into_iter().enumerate() {
        send(&mut s, who, msg);
        assert_told(&mut s, who, why);
        assert_eq!(refused(&s), n as u64 + 1, "{why}");
    }
    // A flood of calls: the first starts a vote, the rest are refused and counted.
    let before = refused(&s);
    for _ in 0..50 {
        call(&mut s, bob, VoteProposal::Fraglimit(9));
        s.step();
    }
    s.steps(3);
    assert!(s.server.world().resource::<Votes>().running());
    assert_eq!(refused(&s), before + 49);
    assert_eq!(s.server.world().resource::<ServerStats>().kicks, 0);
    assert_eq!(
        s.server.world().resource::<ServerConfig>().rules.fraglimit,
        20
    );
    let _ = reliable(&mut s, ann);
}

fn map_name(s: &Stepper) -> String {
    s.server
        .world()
        .resource::<sightline_map::CurrentMap>()
        .def
        .name
        .clone()
}

/// Over real UDP with the real binaries: two players vote the map to depot; they and a
/// headless client playing beside them move to it, and nobody is dropped.
#[test]
fn over_udp_a_vote_changes_the_map_for_everyone_in_the_game() {
    use crate::support::{Attacker, Server, wait};
    use sightline_net::ClientSecurity;
    use sightline_protocol::{Channel, Wire};
    use std::time::{Duration, Instant};

    // Time enough for a machine under load: the headless client plays for 25 s, and the
    // vote is done as soon as it is in.
    let server = Server::start(60, &["--maps", "duel,depot"]);
    let watcher = crate::support::honest(server.addr, 25);
    let mut ann = Attacker::connect(server.addr, &ClientSecurity::default());
    let mut bob = Attacker::connect(server.addr, &ClientSecurity::default());
    ann.join("ann");
    bob.join("bob");
    // The headless client in the game before the vote, so it has a map to move from: the
    // scoreboard (sent each second) names the bot, ann, bob and it. (Its join may have
    // come before ann's Welcome, which `join` reads past.)
    let mut heard_ann = Vec::new();
    let end = Instant::now() + Duration::from_secs(30);
    while !heard_ann
        .iter()
        .any(|m| matches!(m, ServerMessage::Scoreboard(lines) if lines.len() >= 4))
    {
        assert!(Instant::now() < end, "the headless client never joined");
        ann.pump(0.1);
        bob.pump(0.0);
        heard_ann.extend(ann.reliable());
    }
    let call = ClientMessage::CallVote {
        proposal: VoteProposal::Map("depot".into()),
    };
    ann.send(Channel::Reliable, call.encode().unwrap());
    let end = Instant::now() + Duration::from_secs(5);
    let mut heard_bob = Vec::new();
    while tally(&heard_bob).flatten().is_none() {
        assert!(Instant::now() < end, "bob was never shown the vote");
        ann.pump(0.05);
        bob.pump(0.05);
        heard_bob.extend(bob.reliable());
    }
    let open = tally(&heard_bob).flatten().unwrap();
    assert_eq!((open.yes, open.voters), (1, 3), "{open:?}");
    bob.send(
        Channel::Reliable,
        ClientMessage::Vote { yes: true }.encode().unwrap(),
    );
    let moved = |msgs: &[ServerMessage]| {
        msgs.iter()
            .any(|m| matches!(m, ServerMessage::MapChange { map_name, .. } if map_name == "depot"))
    };
    let end = Instant::now() + Duration::from_secs(5);
    let (mut to_ann, mut to_bob) = (Vec::new(), Vec::new());
    while !(moved(&to_ann) && moved(&to_bob)) {
        assert!(Instant::now() < end, "no map change: {to_ann:?}");
        ann.pump(0.05);
        bob.pump(0.05);
        to_ann.extend(ann.reliable());
        to_bob.extend(bob.reliable());
    }
    let out = wait(watcher, Duration::from_secs(60), "headless client");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("the server moves to depot"), "{text}");
    let (log, status) = server.stop();
    assert!(
        log.contains("vote passed (2 yes, 0 no): change the map to depot?"),
        "{log}"
    );
    assert!(status.contains("kicks=0"), "{status}");
}

#[test]
fn a_mode_vote_deals_sides_and_starts_a_new_match() {
    use sightline_combat::{GameMode, Team};
    let mut s = Stepper::new(config(), "duel");
    let joined = three(&mut s);
    let (ann, bob, cat) = (joined[0].0, joined[1].0, joined[2].0);
    set_frags(&mut s, joined[0].1, 4);
    call(&mut s, ann, VoteProposal::Mode(GameMode::TeamDeathmatch));
    s.steps(2);
    vote(&mut s, bob, true);
    s.steps(5);
    assert_eq!(
        s.server.world().resource::<ServerConfig>().rules.mode,
        GameMode::TeamDeathmatch
    );
    let w = s.server.world_mut();
    let sides: Vec<Option<Team>> = w
        .query::<(&PlayerId, Option<&Team>)>()
        .iter(w)
        .map(|(_, t)| t.copied())
        .collect();
    assert_eq!(sides.len(), 5, "three people and two bots");
    let red = sides.iter().filter(|t| **t == Some(Team::Red)).count();
    let blue = sides.iter().filter(|t| **t == Some(Team::Blue)).count();
    assert_eq!((red, blue), (3, 2), "{sides:?}");
    assert_eq!(s.on_server::<Score, _>(joined[0].1, |sc| sc.frags), Some(0));
    // The same mode again is refused; back to free-for-all takes the sides away.
    call(&mut s, bob, VoteProposal::Mode(GameMode::TeamDeathmatch));
    assert_told(&mut s, bob, "already tdm");
    call(&mut s, cat, VoteProposal::Mode(GameMode::Deathmatch));
    s.steps(2);
    vote(&mut s, ann, true);
    s.steps(5);
    let w = s.server.world_mut();
    assert_eq!(w.query::<&Team>().iter(w).count(), 0);
}
