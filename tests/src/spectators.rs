//! Spectators: watching a live game without a player, the world shown late, within a
//! limit of their own; one that sends input is kicked.

use crate::support::raw;
use bevy::prelude::*;
use sightline_client::{
    ClientStats, ConnectionStatus, KillFeed, LatestSnapshot, LocalPlayer, Roster, Watching,
};
use sightline_combat::Score;
use sightline_harness::Stepper;
use sightline_protocol::{
    Channel, ClientDatagram, ClientMessage, PROTOCOL_VERSION, ServerMessage, Wire,
};
use sightline_server::{PlayerSlots, ServerConfig, ServerStats};
use sightline_sim::{InputCmd, Tick};

/// A duel server with one bot and room for one more player and one spectator.
fn config(delay: f32) -> ServerConfig {
    ServerConfig {
        max_players: 2,
        bots: 1,
        max_spectators: 1,
        spectator_delay: delay,
        ..Default::default()
    }
}

/// The server tick of the newest snapshot client `i` holds.
fn newest_tick(s: &Stepper, i: usize) -> u32 {
    s.clients[i]
        .world()
        .resource::<LatestSnapshot>()
        .0
        .as_ref()
        .map_or(0, |snap| snap.server_tick)
}

#[test]
fn a_spectator_watches_the_game_three_seconds_late_without_taking_a_place() {
    let mut s = Stepper::new(config(3.0), "duel");
    let player = s.add_client("player", 7);
    let watcher = s.add_spectator("watcher");
    s.run_for(8.0);

    // Watching, with no player of its own; the server's two places are the bot's and the
    // player's.
    let world = s.clients[watcher].world_mut();
    assert!(world.get_resource::<Watching>().is_some());
    let own = world
        .query_filtered::<(), With<LocalPlayer>>()
        .iter(world)
        .count();
    assert_eq!(own, 0, "a spectator has no player");
    assert_eq!(s.server.world().resource::<PlayerSlots>().len(), 2);

    // The world it is shown is three seconds old; the player's is fresh.
    let hz = f64::from(s.tick_hz());
    let now = s.server.world().resource::<Tick>().0;
    let behind = |i| f64::from(now - newest_tick(&s, i)) / hz;
    let (watcher_behind, player_behind) = (behind(watcher), behind(player));
    assert!(
        (3.0..3.1).contains(&watcher_behind),
        "the spectator sees {watcher_behind:.3} s behind"
    );
    assert!(
        player_behind < 0.1,
        "the player sees {player_behind:.3} s behind"
    );

    // Both players drawn and seen to move, from snapshots written against ones it
    // acknowledged.
    let stats = s.clients[watcher].world().resource::<ClientStats>();
    assert_eq!(stats.seen.len(), 2, "{stats:?}");
    assert_eq!(stats.players_moved(1.0), 2, "{stats:?}");
    assert_eq!((stats.unresolved, stats.malformed), (0, 0), "{stats:?}");
    assert!(stats.snapshots > 100, "{stats:?}");
    let latest = s.clients[watcher].world().resource::<LatestSnapshot>();
    let baseline = latest.0.as_ref().map_or(0, |snap| snap.baseline);
    assert_ne!(baseline, 0, "sent as changes from an acknowledged snapshot");

    // The spectators' one place is taken.
    let second = s.add_spectator("second");
    s.run_for(1.0);
    match s.clients[second].world().resource::<ConnectionStatus>() {
        ConnectionStatus::Disconnected(reason) => {
            assert!(reason.contains("no room for spectators (1)"), "{reason}");
        }
        other => panic!("a second spectator was let in: {other:?}"),
    }
}

#[test]
fn a_spectator_s_kill_feed_shows_a_death_once_its_late_world_reaches_it() {
    let delay = 1.0;
    let mut s = Stepper::new(
        ServerConfig {
            max_players: 4,
            bots: 4,
            ..config(delay)
        },
        "duel",
    );
    let watcher = s.add_spectator("watcher");
    let hz = s.tick_hz();
    // Four bots on a duel map: someone dies within seconds.
    let deaths = |s: &mut Stepper| {
        let world = s.server.world_mut();
        let mut scores = world.query::<&Score>();
        scores.iter(world).map(|sc| sc.deaths).sum::<u32>()
    };
    assert!(
        s.run_until(hz as usize * 40, |s| deaths(s) > 0),
        "nobody died in 40 s"
    );
    let died = s.server.world().resource::<Tick>().0;
    let in_feed = |s: &mut Stepper| {
        !s.clients[watcher]
            .world()
            .resource::<KillFeed>()
            .0
            .is_empty()
    };
    assert!(!in_feed(&mut s), "shown as it happened");
    assert!(
        s.run_until(hz as usize * 3, in_feed),
        "the death never reached the spectator's kill feed"
    );
    let shown = s.server.world().resource::<Tick>().0;
    let late = f64::from(shown - died) / f64::from(hz);
    assert!(
        (delay as f64..delay as f64 + 0.3).contains(&late),
        "shown {late:.3} s after it happened"
    );
}

#[test]
fn a_spectator_that_sends_input_is_kicked() {
    let mut s = Stepper::new(config(0.25), "duel");
    let c = s.add_raw_client();
    s.step();
    let watch = ClientMessage::Spectate {
        protocol_version: PROTOCOL_VERSION,
        name: "sneaky".into(),
    };
    raw::send_bytes(&mut s, c, Channel::Reliable, watch.encode().unwrap());
    let mut welcome = None;
    for _ in 0..50 {
        s.step();
        welcome = raw::reliable(&mut s, c).into_iter().find_map(|m| match m {
            ServerMessage::Welcome(w) => Some(w),
            _ => None,
        });
        if welcome.is_some() {
            break;
        }
    }
    let welcome = welcome.expect("a spectator is welcomed");
    assert_eq!(welcome.your_id, None, "a spectator has no player");
    // After the delay, snapshots come, and it acknowledges one as a spectator does.
    s.run_for(0.5);
    let snaps = raw::snapshots(&mut s, c);
    let newest = snaps.last().expect("snapshots after the delay");
    let ack = ClientDatagram::Ack {
        snapshot: newest.seq,
    };
    raw::send_bytes(&mut s, c, Channel::Unreliable, ack.encode().unwrap());
    s.steps(3);
    assert_eq!(s.server.world().resource::<ServerStats>().kicks, 0);
    // Then it tries to play.
    raw::inputs(
        &mut s,
        c,
        vec![InputCmd {
            seq: 1,
            forward: 1.0,
            ..Default::default()
        }],
    );
    s.steps(3);
    let refusal = raw::reliable(&mut s, c).into_iter().find_map(|m| match m {
        ServerMessage::Refused { reason } => Some(reason),
        _ => None,
    });
    let reason = refusal.expect("kicked");
    assert!(reason.contains("spectators send no input"), "{reason}");
    assert_eq!(s.server.world().resource::<ServerStats>().kicks, 1);
}

#[test]
fn a_spectator_learns_the_score_only_as_its_late_world_reaches_it() {
    // Before, the scoreboard reached spectators live while their world was the delay late:
    // a second connection watching learned each kill three seconds early.
    let delay = 3.0;
    let mut s = Stepper::new(
        ServerConfig {
            max_players: 5,
            bots: 4,
            ..config(delay)
        },
        "duel",
    );
    let player = s.add_client("player", 3);
    let watcher = s.add_spectator("watcher");
    let hz = s.tick_hz();
    let frags = |s: &Stepper, i: usize| -> i32 {
        let roster = s.clients[i].world().resource::<Roster>();
        roster.0.values().map(|p| p.frags.max(0)).sum()
    };
    let server_frags = |s: &mut Stepper| {
        let world = s.server.world_mut();
        let mut scores = world.query::<&Score>();
        scores.iter(world).map(|sc| sc.frags.max(0)).sum::<i32>()
    };
    assert!(
        s.run_until(hz as usize * 60, |s| server_frags(s) > 0),
        "nobody scored in 60 s"
    );
    let scored = s.server.world().resource::<Tick>().0;
    let seconds_since =
        |s: &Stepper| f64::from(s.server.world().resource::<Tick>().0 - scored) / f64::from(hz);
    assert!(
        s.run_until(hz as usize * 2, |s| frags(s, player) > 0),
        "the player's scoreboard never showed the frag"
    );
    let player_late = seconds_since(&s);
    assert_eq!(
        frags(&s, watcher),
        0,
        "the spectator learned it with the player"
    );
    assert!(
        s.run_until(hz as usize * 6, |s| frags(s, watcher) > 0),
        "the spectator's scoreboard never showed the frag"
    );
    let watcher_late = seconds_since(&s);
    // The scoreboard goes out once a second.
    assert!(
        player_late <= 1.1,
        "the player saw it {player_late:.2} s late"
    );
    assert!(
        (delay as f64..delay as f64 + 1.2).contains(&watcher_late),
        "the spectator saw it {watcher_late:.2} s late"
    );
}
