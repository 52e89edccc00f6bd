//! Between watching and playing on one connection (`team spectator`, `team auto`): the
//! game's own client comes to play from watching and goes back, with its new session's
//! world, roster and input; the others are told; hostile or ill-timed requests are
//! refused and counted, and the datagrams of a role just left are dropped, not punished.

use crate::support::raw::{self, assert_told, heard, inputs, players, send, spectator};
use bevy::prelude::*;
use sightline_client::{
    ClientStats, ConnectionStatus, EarlierSessions, JoinAs, LatestSnapshot, LocalPlayer, Roster,
    Watching,
};
use sightline_combat::{GameMode, Team};
use sightline_harness::Stepper;
use sightline_net::{ConditionerSettings, RenetClient};
use sightline_protocol::{Channel, ClientDatagram, ClientMessage, ServerMessage, TeamChoice, Wire};
use sightline_server::{
    CHANGE_INTERVAL, MatchRules, PlayerSlots, SWITCH_GRACE, ServerConfig, ServerStats, Spectator,
};
use sightline_sim::{InputCmd, PlayerName};

/// A team deathmatch server with two bots, room for two more players and a spectator
/// who sees the game a second late.
fn tdm() -> ServerConfig {
    ServerConfig {
        max_players: 4,
        bots: 2,
        max_spectators: 1,
        spectator_delay: 1.0,
        rules: MatchRules {
            mode: GameMode::TeamDeathmatch,
            ..MatchRules::default()
        },
        ..Default::default()
    }
}

/// Asks, from game client `i`, for `choice`, as the console's `team` does.
fn ask(s: &mut Stepper, i: usize, choice: TeamChoice) {
    let mut client = s.clients[i].world_mut().resource_mut::<RenetClient>();
    sightline_client::send_to_server(
        &mut client,
        Channel::Reliable,
        &ClientMessage::JoinTeam { choice },
    );
}

/// Whether game client `i` holds a player of its own, and whether it watches.
fn role(s: &mut Stepper, i: usize) -> (bool, bool) {
    let world = s.clients[i].world_mut();
    let own = world
        .query_filtered::<(), With<LocalPlayer>>()
        .iter(world)
        .count();
    (own == 1, world.get_resource::<Watching>().is_some())
}

/// The server's player called `name`, if one plays: its side.
fn playing_as(s: &mut Stepper, name: &str) -> Option<Option<Team>> {
    let world = s.server.world_mut();
    let mut players = world.query::<(&PlayerName, Option<&Team>)>();
    players
        .iter(world)
        .find(|(n, _)| n.0 == name)
        .map(|(_, t)| t.copied())
}

fn watching_as(s: &mut Stepper, name: &str) -> bool {
    let world = s.server.world_mut();
    let mut spectators = world.query::<&Spectator>();
    spectators.iter(world).any(|sp| sp.name == name)
}

fn names_in_roster(s: &Stepper, i: usize) -> Vec<String> {
    let roster = s.clients[i].world().resource::<Roster>();
    roster.0.values().map(|e| e.name.clone()).collect()
}

fn newest_seq(s: &Stepper, i: usize) -> u32 {
    let latest = s.clients[i].world().resource::<LatestSnapshot>();
    latest.0.as_ref().map_or(0, |snap| snap.seq)
}

#[test]
fn a_spectator_comes_to_play_and_goes_back_to_watch_without_reconnecting() {
    let mut s = Stepper::new(tdm(), "duel");
    let ann = s.add_client("ann", 3);
    let eve = s.add_spectator("eve");
    let hz = s.tick_hz() as usize;
    assert!(
        s.run_until(hz * 5, |s| role(s, eve) == (false, true)
            && role(s, ann) == (true, false)),
        "eve never came to watch"
    );
    s.run_for(2.0);
    assert_eq!(s.server.world().resource::<PlayerSlots>().len(), 3);

    // To play: a side dealt (the smaller team), a player of its own driven by its input,
    // the others told; the same connection throughout.
    let seq_before = newest_seq(&s, eve);
    ask(&mut s, eve, TeamChoice::Auto);
    assert!(
        s.run_until(hz * 3, |s| role(s, eve) == (true, false)),
        "eve's client never became a player: {:?}",
        s.clients[eve].world().resource::<ConnectionStatus>()
    );
    let side = playing_as(&mut s, "eve").expect("eve plays");
    assert!(side.is_some(), "a team game deals a side");
    assert!(!watching_as(&mut s, "eve"));
    assert_eq!(s.server.world().resource::<PlayerSlots>().len(), 4);
    assert_eq!(
        *s.clients[eve].world().resource::<JoinAs>(),
        JoinAs::Player,
        "a reconnection now comes back to play"
    );
    s.run_for(3.0);
    assert!(names_in_roster(&s, ann).contains(&"eve".to_string()));
    let roster = names_in_roster(&s, eve);
    assert_eq!(
        roster.len(),
        4,
        "eve's new session knows everyone: {roster:?}"
    );
    // Its snapshots numbered on from the ones it had as a spectator, written against
    // ones it acknowledged as a player, and fresh: a player's world is not a second late.
    assert!(newest_seq(&s, eve) > seq_before);
    let stats = s.clients[eve].world().resource::<ClientStats>();
    assert!(stats.snapshots > 100, "{stats:?}");
    assert_eq!((stats.unresolved, stats.malformed), (0, 0), "{stats:?}");
    let latest = s.clients[eve].world().resource::<LatestSnapshot>();
    let snap = latest.0.as_ref().expect("a snapshot");
    assert_ne!(snap.baseline, 0, "sent as changes from an acknowledged one");
    let now = s.server.world().resource::<sightline_sim::Tick>().0;
    assert!(
        now - snap.server_tick < 5,
        "{} ticks late",
        now - snap.server_tick
    );
    // Everyone is seen to move, eve too: its autopilot's input moves it on the server.
    let stats = s.clients[eve].world().resource::<ClientStats>();
    assert_eq!(stats.players_moved(1.0), 4, "{stats:?}");
    let server_stats = s.server.world().resource::<ServerStats>();
    assert_eq!(server_stats.kicks, 0);
    assert_eq!(server_stats.unresolved_inputs, 0, "{server_stats:?}");

    // And back to watching, once the interval has passed: the place is freed, the world
    // is a second late again, the others are told it left.
    s.run_for(CHANGE_INTERVAL);
    ask(&mut s, eve, TeamChoice::Spectator);
    assert!(
        s.run_until(hz * 3, |s| role(s, eve) == (false, true)),
        "eve's client never went back to watching"
    );
    assert_eq!(playing_as(&mut s, "eve"), None);
    assert!(watching_as(&mut s, "eve"));
    s.run_for(3.0);
    assert_eq!(s.server.world().resource::<PlayerSlots>().len(), 3);
    assert!(!names_in_roster(&s, ann).contains(&"eve".to_string()));
    let now = s.server.world().resource::<sightline_sim::Tick>().0;
    let late = f64::from(
        now - s.clients[eve]
            .world()
            .resource::<LatestSnapshot>()
            .0
            .as_ref()
            .map_or(0, |x| x.server_tick),
    );
    assert!(
        (1.0..1.2).contains(&(late / hz as f64)),
        "the spectator sees {:.3} s late",
        late / hz as f64
    );
    assert!(
        s.clients[eve]
            .world()
            .resource::<ConnectionStatus>()
            .is_connected()
    );
    let earlier = s.clients[eve].world().resource::<EarlierSessions>();
    assert_eq!(earlier.reconnects, 0, "never reconnected: {earlier:?}");
    let server_stats = s.server.world().resource::<ServerStats>();
    assert_eq!(server_stats.kicks, 0, "{server_stats:?}");
}

/// A free-for-all server without bots for raw clients.
fn ffa(max_players: u8, max_spectators: u8) -> ServerConfig {
    ServerConfig {
        max_players,
        bots: 0,
        max_spectators,
        spectator_delay: 0.0,
        ..Default::default()
    }
}

fn refused(s: &Stepper) -> u64 {
    s.server.world().resource::<ServerStats>().refused_requests
}

#[test]
fn a_change_of_role_is_refused_where_joining_would_be_and_counted() {
    let mut s = Stepper::new(ffa(1, 1), "duel");
    let joined = players(&mut s, &["ann"]);
    let watcher = spectator(&mut s, "eve");
    heard(&mut s, &[joined[0].0, watcher]);

    // No side in a free-for-all; no place on a full server; no room to watch.
    send(
        &mut s,
        watcher,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Red,
        },
    );
    assert_told(&mut s, watcher, "team not changed: this match has no teams");
    send(
        &mut s,
        watcher,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Auto,
        },
    );
    assert_told(
        &mut s,
        watcher,
        "team not changed: the server is full (1 players)",
    );
    send(
        &mut s,
        joined[0].0,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Spectator,
        },
    );
    assert_told(
        &mut s,
        joined[0].0,
        "team not changed: no room for spectators (1)",
    );
    send(
        &mut s,
        watcher,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Spectator,
        },
    );
    assert_told(
        &mut s,
        watcher,
        "team not changed: you are watching already",
    );
    assert_eq!(refused(&s), 4);

    // On a server with room, a raw spectator comes to play: welcomed again, as a player.
    let mut s = Stepper::new(ffa(2, 1), "duel");
    let joined = players(&mut s, &["ann"]);
    let watcher = spectator(&mut s, "ann");
    heard(&mut s, &[joined[0].0, watcher]);
    send(
        &mut s,
        watcher,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Auto,
        },
    );
    let got = heard(&mut s, &[joined[0].0, watcher]);
    let welcome = got[1].iter().find_map(|m| match m {
        ServerMessage::Welcome(w) => Some(w.clone()),
        _ => None,
    });
    let id = welcome
        .and_then(|w| w.your_id)
        .expect("welcomed again as a player");
    for msgs in &got {
        assert!(
            msgs.iter().any(|m| matches!(
                m,
                ServerMessage::PlayerJoined { id: i, name, bot: false } if *i == id && name == "ann (2)"
            )),
            "a look-alike name is numbered as at joining: {msgs:?}"
        );
    }
    // Straight back is too soon.
    send(
        &mut s,
        watcher,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Spectator,
        },
    );
    assert_told(&mut s, watcher, "team not changed: wait");
    assert_eq!(refused(&s), 1);
    assert_eq!(s.server.world().resource::<ServerStats>().kicks, 0);
}

#[test]
fn input_sent_before_the_client_heard_it_went_to_watch_is_dropped_not_kicked() {
    let mut s = Stepper::new(ffa(2, 1), "duel");
    let joined = players(&mut s, &["ann"]);
    let (ann, _) = joined[0];
    heard(&mut s, &[ann]);
    send(
        &mut s,
        ann,
        ClientMessage::JoinTeam {
            choice: TeamChoice::Spectator,
        },
    );
    let got = heard(&mut s, &[ann]);
    assert!(
        got[0]
            .iter()
            .any(|m| matches!(m, ServerMessage::Welcome(w) if w.your_id.is_none())),
        "welcomed again as a spectator: {:?}",
        got[0]
    );
    assert_eq!(s.server.world().resource::<PlayerSlots>().len(), 0);

    // Input still on its way from the player it was, however late (its client may have
    // hitched): dropped and counted.
    let cmd = |seq| InputCmd {
        seq,
        ..Default::default()
    };
    inputs(&mut s, ann, vec![cmd(400), cmd(401)]);
    s.run_for(SWITCH_GRACE + 1.0);
    inputs(&mut s, ann, vec![cmd(402)]);
    s.steps(3);
    let stats = s.server.world().resource::<ServerStats>();
    assert_eq!((stats.kicks, stats.switch_leftovers), (0, 2), "{stats:?}");
    // Heard as a spectator (its first acknowledgement), reordered input is still let off
    // for the grace; past it, input is what it always was from a spectator: a kick.
    let ack = ClientDatagram::Ack { snapshot: 0 };
    raw::send_bytes(&mut s, ann, Channel::Unreliable, ack.encode().unwrap());
    s.steps(3);
    inputs(&mut s, ann, vec![cmd(403)]);
    s.steps(3);
    let stats = s.server.world().resource::<ServerStats>();
    assert_eq!((stats.kicks, stats.switch_leftovers), (0, 3), "{stats:?}");
    s.run_for(SWITCH_GRACE);
    inputs(&mut s, ann, vec![cmd(404)]);
    s.steps(3);
    assert_eq!(s.server.world().resource::<ServerStats>().kicks, 1);
}

/// A link as a bad day has it: 60 ms each way with jitter, loss in spells, packets
/// reordered and doubled.
fn bad_link() -> ConditionerSettings {
    ConditionerSettings {
        latency_ms: 60.0,
        jitter_ms: 15.0,
        loss_pct: 4.0,
        outage_ms: 300.0,
        duplicate_pct: 1.0,
        reorder_pct: 2.0,
        ..Default::default()
    }
}

#[test]
fn over_a_bad_link_and_through_a_hitch_a_spectator_changes_role_and_nobody_is_kicked() {
    let mut s = Stepper::new(tdm(), "duel");
    let eve = s.add_conditioned_client("eve", 9, bad_link(), bad_link());
    s.clients[eve].insert_resource(JoinAs::Spectator);
    let hz = s.tick_hz() as usize;
    assert!(
        s.run_until(hz * 10, |s| role(s, eve) == (false, true)),
        "eve never came to watch"
    );
    // Three times to play and back, the last through a hitch of the client's own just
    // after the server moved it: it wakes three seconds later and sends as it was before
    // it reads the Welcome.
    let hitch = |s: &mut Stepper, round: usize, moved: fn(&mut Stepper) -> bool| {
        if round == 2 {
            assert!(s.run_until(hz * 4, moved), "the server never moved eve");
            s.hitch_client(eve, std::time::Duration::from_secs(3));
        }
    };
    for round in 0..3 {
        s.run_for(CHANGE_INTERVAL);
        ask(&mut s, eve, TeamChoice::Auto);
        hitch(&mut s, round, |s| playing_as(s, "eve").is_some());
        assert!(
            s.run_until(hz * 8, |s| role(s, eve) == (true, false)),
            "round {round}: never came to play"
        );
        s.run_for(CHANGE_INTERVAL);
        ask(&mut s, eve, TeamChoice::Spectator);
        hitch(&mut s, round, |s| watching_as(s, "eve"));
        assert!(
            s.run_until(hz * 8, |s| role(s, eve) == (false, true)),
            "round {round}: never went back to watch"
        );
    }
    s.run_for(3.0);
    let status = s.clients[eve].world().resource::<ConnectionStatus>();
    assert!(status.is_connected(), "{status:?}");
    let earlier = s.clients[eve].world().resource::<EarlierSessions>();
    assert_eq!(earlier.reconnects, 0, "{earlier:?}");
    assert_eq!(
        earlier.malformed, 0,
        "a second Welcome is no longer malformed"
    );
    let stats = s.server.world().resource::<ServerStats>();
    assert_eq!((stats.kicks, stats.strikes), (0, 0), "{stats:?}");
    // The hitches' old-role datagrams (three seconds of a player's input, of a
    // spectator's acknowledgements) were there to drop.
    assert!(stats.switch_leftovers > 2, "{stats:?}");
    assert_eq!(
        s.server.world().resource::<PlayerSlots>().len(),
        2,
        "the bots"
    );
    assert!(watching_as(&mut s, "eve"));
}
