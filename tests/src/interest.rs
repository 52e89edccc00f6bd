//! Interest management end to end: a client is not sent the players and rockets hidden
//! from it, and is sent the ones it can see.

use bevy::prelude::*;
use sightline_client::{ConnectionStatus, LatestSnapshot, LocalPlayer};
use sightline_combat::{ProjectileKind, Rocket, launch_rocket};
use sightline_harness::Stepper;
use sightline_map::CurrentMap;
use sightline_movement::{GridState, MoveParams, PlayerState};
use sightline_protocol::{MAX_SNAPSHOT_PROJECTILES, Snapshot};
use sightline_server::{HEAR_RADIUS, ServerConfig};
use sightline_sim::{InputCmd, PlayerId, Tick, TickConfig};
use std::collections::HashMap;

/// Whether nothing of the map lies between the two players' eyes: a plain sight line,
/// stricter than the server's test with its margin.
fn eye_to_eye(map: &CurrentMap, params: &MoveParams, a: &PlayerState, b: &PlayerState) -> bool {
    let eye = params.eye_position(a);
    map.world.is_clear(eye, params.eye_position(b) - eye)
}

/// Depot at 128 Hz (64 snapshots a second) with `bots` server bots and room for 16.
fn depot_with_bots(bots: u8) -> Stepper {
    let config = ServerConfig {
        name: "test".into(),
        max_players: 16,
        bots,
        tick: TickConfig::new(128, 64).unwrap(),
        ..Default::default()
    };
    Stepper::new(config, "depot")
}

/// Depot with 11 server bots and one client (seeded `seed`), 3 s into play: the stepper,
/// and the client's player.
fn depot_with_bots_and_a_viewer(seed: u64) -> (Stepper, PlayerId) {
    let mut s = depot_with_bots(11);
    s.add_client("viewer", seed);
    s.run_for(3.0);
    let client = s.clients[0].world_mut();
    let me = *client
        .query_filtered::<&PlayerId, With<LocalPlayer>>()
        .single(client)
        .expect("our player");
    (s, me)
}

/// The client's newest snapshot, when it is new since `last_seq` and describes the
/// server's current tick, so the server's world can be compared with it.
fn fresh_snapshot(s: &Stepper, last_seq: &mut u32) -> Option<Snapshot> {
    let snapshot = s.clients[0]
        .world()
        .resource::<LatestSnapshot>()
        .0
        .clone()?;
    let tick = s.server.world().resource::<Tick>().0;
    if snapshot.seq == *last_seq || snapshot.server_tick != tick {
        return None;
    }
    *last_seq = snapshot.seq;
    Some(snapshot)
}

#[test]
fn hidden_players_are_left_out_and_visible_ones_sent() {
    let (mut s, me) = depot_with_bots_and_a_viewer(3);
    let map = s.server.world().resource::<CurrentMap>().clone();
    let params = MoveParams::default();
    let (mut pairs, mut hidden, mut in_sight_but_hidden) = (0, 0, 0);
    let mut last_seq = 0;
    for _ in 0..20_000 {
        s.step();
        let Some(snapshot) = fresh_snapshot(&s, &mut last_seq) else {
            continue;
        };
        let world = s.server.world_mut();
        let states: Vec<(PlayerId, PlayerState)> = world
            .query::<(&PlayerId, &PlayerState)>()
            .iter(world)
            .map(|(id, s)| (*id, *s))
            .collect();
        let mine = states.iter().find(|(id, _)| *id == me).expect("ours").1;
        assert!(
            snapshot.players.iter().any(|p| p.id == me),
            "our own player"
        );
        for (id, state) in states.iter().filter(|(id, _)| *id != me) {
            pairs += 1;
            if snapshot.players.iter().any(|p| p.id == *id) {
                continue;
            }
            hidden += 1;
            assert!(
                mine.pos.distance(state.pos) > HEAR_RADIUS,
                "a player within earshot was left out"
            );
            if eye_to_eye(&map, &params, &mine, state) {
                in_sight_but_hidden += 1;
            }
        }
    }
    eprintln!("{pairs} pairs, {hidden} hidden, {in_sight_but_hidden} in plain sight");
    assert!(pairs > 5_000, "{pairs} pairs compared");
    assert!(
        hidden * 10 > pairs,
        "depot hides few players: {hidden} of {pairs}"
    );
    // A player stepping into view can be missing until the next check of our view (at
    // most 8 ticks), unless the margin caught it first.
    assert!(
        in_sight_but_hidden * 100 <= hidden,
        "{in_sight_but_hidden} of {hidden} hidden players were in plain sight"
    );
}

#[test]
fn snapshots_show_positions_exactly_and_others_angles_and_far_speeds_rounded() {
    let mut s = depot_with_bots(6);
    let link = sightline_net::ConditionerSettings {
        latency_ms: 10.0,
        ..Default::default()
    };
    s.add_conditioned_client("viewer", 3, link, link);
    s.run_for(3.0);
    // The server's players at each tick, to compare snapshots with when they arrive.
    let mut truth: HashMap<u32, Vec<(PlayerId, PlayerState)>> = HashMap::new();
    let ConnectionStatus::Connected(info) = s.clients[0].world().resource::<ConnectionStatus>()
    else {
        panic!("the viewer joined");
    };
    let me = info.welcome.your_id.expect("joined as a player");
    let near = HEAR_RADIUS * HEAR_RADIUS;
    let (mut last_seq, mut exact, mut rounded) = (0, 0, 0);
    for _ in 0..20_000 {
        s.step();
        let tick = s.server.world().resource::<Tick>().0;
        truth.entry(tick).or_insert_with(|| {
            let world = s.server.world_mut();
            world
                .query::<(&PlayerId, &PlayerState)>()
                .iter(world)
                .map(|(id, s)| (*id, *s))
                .collect()
        });
        let Some(snapshot) = s.clients[0].world().resource::<LatestSnapshot>().0.clone() else {
            continue;
        };
        if snapshot.seq == last_seq {
            continue;
        }
        last_seq = snapshot.seq;
        let Some(states) = truth.get(&snapshot.server_tick) else {
            continue;
        };
        let mine = states.iter().find(|(id, _)| *id == me).expect("us").1;
        for p in &snapshot.players {
            let server = states
                .iter()
                .find(|(id, _)| *id == p.id)
                .expect("a player")
                .1;
            let truth = GridState::of(&server);
            let shown = (p.pos, p.vel, p.yaw, p.pitch);
            assert_eq!(p.pos, truth.pos, "positions are exact");
            if p.id == me {
                assert_eq!(shown, (truth.pos, truth.vel, truth.yaw, truth.pitch));
                exact += 1;
                continue;
            }
            // Others' angles rounded to the nearest step others see; their velocity
            // too, unless they are near enough to touch.
            let off = |a: i16, b: i16| i32::from(a.wrapping_sub(b)).abs();
            assert!(off(p.yaw, truth.yaw) <= 32 && off(p.pitch, truth.pitch) <= 32);
            if server.pos.distance_squared(mine.pos) <= near {
                assert_eq!(p.vel, truth.vel);
                exact += 1;
            } else {
                assert!((0..3).all(|i| off(p.vel[i], truth.vel[i]) <= 8));
                rounded += 1;
            }
        }
    }
    eprintln!("{exact} exact, {rounded} rounded");
    assert!(exact > 2_000, "{exact} velocities compared exactly");
    assert!(rounded > 1_000, "{rounded} far player states compared");
}

#[test]
fn hidden_rockets_are_left_out_and_near_or_visible_ones_sent() {
    let (mut s, me) = depot_with_bots_and_a_viewer(5);
    let map = s.server.world().resource::<CurrentMap>().clone();
    let params = MoveParams::default();
    let (mut sent, mut hidden, mut in_sight_but_hidden) = (0, 0, 0);
    let (mut last_seq, mut next_id) = (0, 50_000u16);
    for step in 0..12_000u32 {
        // Every few ticks each bot fires a rocket, each its own way round.
        if step % 24 == 0 {
            let world = s.server.world_mut();
            let bots: Vec<(PlayerId, PlayerState)> = world
                .query::<(&PlayerId, &PlayerState)>()
                .iter(world)
                .filter(|(id, _)| **id != me)
                .map(|(id, s)| (*id, *s))
                .collect();
            for (i, (owner, state)) in bots.into_iter().enumerate() {
                let cmd = InputCmd {
                    yaw: (step / 24 + i as u32) as f32 * 0.7,
                    ..Default::default()
                };
                world.spawn(launch_rocket(
                    next_id,
                    ProjectileKind::Rocket,
                    owner,
                    &state,
                    &cmd,
                    &params,
                ));
                next_id = next_id.wrapping_add(1).max(50_000);
            }
        }
        s.step();
        let Some(snapshot) = fresh_snapshot(&s, &mut last_seq) else {
            continue;
        };
        let world = s.server.world_mut();
        let mine = *world
            .query::<(&PlayerId, &PlayerState)>()
            .iter(world)
            .find(|(id, _)| **id == me)
            .expect("ours")
            .1;
        let eye = params.eye_position(&mine);
        let rockets: Vec<Rocket> = world.query::<&Rocket>().iter(world).cloned().collect();
        // Past the cap, the nearest are sent and the rest wait, in sight or not.
        if snapshot.projectiles.len() == MAX_SNAPSHOT_PROJECTILES {
            continue;
        }
        for rocket in rockets {
            if snapshot.projectiles.iter().any(|p| p.id == rocket.id) {
                sent += 1;
                continue;
            }
            hidden += 1;
            assert!(
                rocket.pos.distance(mine.pos) > HEAR_RADIUS,
                "a rocket within earshot was left out"
            );
            assert!(
                !snapshot.players.iter().any(|p| p.id == rocket.owner),
                "a rocket left out whose shooter was sent"
            );
            if map.world.is_clear(eye, rocket.pos - eye) {
                in_sight_but_hidden += 1;
            }
        }
    }
    eprintln!("{sent} rockets sent, {hidden} hidden, {in_sight_but_hidden} in plain sight");
    assert!(sent > 500 && hidden > 500, "{sent} sent, {hidden} hidden");
    assert!(
        in_sight_but_hidden * 100 <= hidden,
        "{in_sight_but_hidden} of {hidden} hidden rockets were in plain sight"
    );
}

#[test]
fn item_changes_and_bursts_out_of_sight_and_earshot_are_not_sent() {
    use crate::support::raw;
    use sightline_combat::{CombatEvent, ItemSpot};
    use sightline_protocol::{PROTOCOL_VERSION, ServerMessage};
    let config = ServerConfig {
        name: "test".into(),
        bots: 0,
        tick: TickConfig::new(128, 64).unwrap(),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "depot");
    let c = s.add_raw_client();
    s.step();
    raw::hello(&mut s, c, PROTOCOL_VERSION, "watcher");
    s.run_for(1.0);
    let map = s.server.world().resource::<CurrentMap>().clone();
    let params = MoveParams::default();
    let world = s.server.world_mut();
    let eye = params.eye_position(
        world
            .query::<&PlayerState>()
            .single(world)
            .expect("the watcher plays"),
    );
    let spots: Vec<ItemSpot> = world.query::<&ItemSpot>().iter(world).copied().collect();
    // Hidden: far, and no line from the eye reaches anywhere around it. Seen: in the open.
    let around = |p: Vec3| {
        [
            Vec3::ZERO,
            Vec3::X,
            -Vec3::X,
            Vec3::Z,
            -Vec3::Z,
            Vec3::Y,
            Vec3::Y * 2.0,
        ]
        .map(|d| p + d)
    };
    let hidden = spots.iter().find(|spot| {
        spot.pos.distance(eye) > 30.0
            && around(spot.pos)
                .iter()
                .all(|p| !map.world.is_clear(eye, *p - eye))
    });
    let seen = spots
        .iter()
        .find(|spot| map.world.is_clear(eye, spot.pos + Vec3::Y * 0.5 - eye));
    let (Some(hidden), Some(seen)) = (hidden.copied(), seen.copied()) else {
        panic!("depot has an item in view and one hidden from the first spawn: {spots:?}");
    };
    // Both are taken.
    let world = s.server.world_mut();
    for mut spot in world.query::<&mut ItemSpot>().iter_mut(world) {
        if spot.index == hidden.index || spot.index == seen.index {
            spot.respawn_in = 20.0;
        }
    }
    s.run_for(0.5);
    raw::reliable(&mut s, c);
    let items = raw::snapshots(&mut s, c).last().expect("snapshots").items;
    assert_ne!(items & (1 << hidden.index), 0, "a hidden pick-up was shown");
    assert_eq!(items & (1 << seen.index), 0, "a pick-up in view was not");
    // A burst where nobody who could see or hear it is watching is not sent; one in view
    // is.
    for (at, rocket) in [(hidden.pos, 77), (seen.pos, 78)] {
        let tick = s.server.world().resource::<Tick>().0;
        s.server.world_mut().write_message(CombatEvent::Exploded {
            kind: ProjectileKind::Rocket,
            at: at + Vec3::Y,
            tick,
            rocket,
            owner: PlayerId(40),
        });
    }
    s.run_for(0.3);
    let bursts: Vec<[f32; 3]> = raw::reliable(&mut s, c)
        .into_iter()
        .filter_map(|m| match m {
            ServerMessage::Exploded { at, .. } => Some(at),
            _ => None,
        })
        .collect();
    assert_eq!(bursts, vec![(seen.pos + Vec3::Y).to_array()], "{hidden:?}");
}

#[test]
fn a_shot_is_sent_only_to_clients_that_are_sent_its_shooter() {
    use crate::support::raw;
    use sightline_combat::CombatEvent;
    use sightline_protocol::ServerMessage;
    use sightline_server::Interest;
    // Eleven bots fight on depot; a bare client stands at its spawn. Every shot the
    // server fires is sent to it exactly when its shooter is (before, every shot went to
    // every player: where hidden players fired from, a radar).
    let mut s = depot_with_bots(11);
    let c = s.add_raw_client();
    s.step();
    let me = raw::join(&mut s, c, "watcher").your_id.expect("a player");
    let mut cursor = s
        .server
        .world()
        .resource::<Messages<CombatEvent>>()
        .get_cursor();
    let (mut expected, mut hidden) = (Vec::new(), 0);
    let mut received = Vec::new();
    for _ in 0..(128 * 20) {
        s.step();
        let world = s.server.world_mut();
        let interest = world
            .query::<(&PlayerId, &Interest)>()
            .iter(world)
            .find(|(id, _)| **id == me)
            .map(|(_, i)| i.clone())
            .expect("the watcher plays");
        let tick = world.resource::<Tick>().0;
        let messages = world.resource::<Messages<CombatEvent>>();
        for event in cursor.read(messages) {
            if let CombatEvent::Fired {
                shooter, tick: at, ..
            } = *event
            {
                if interest.sends(shooter, tick) {
                    expected.push((shooter, at));
                } else {
                    hidden += 1;
                }
            }
        }
        received.extend(
            raw::reliable(&mut s, c)
                .into_iter()
                .filter_map(|m| match m {
                    ServerMessage::Fired { shooter, tick, .. } => Some((shooter, tick)),
                    _ => None,
                }),
        );
        raw::snapshots(&mut s, c);
    }
    // What was on its way arrives; what the bots fire meanwhile is not judged.
    let last = s.server.world().resource::<Tick>().0;
    for _ in 0..128 {
        s.step();
        received.extend(
            raw::reliable(&mut s, c)
                .into_iter()
                .filter_map(|m| match m {
                    ServerMessage::Fired { shooter, tick, .. } if tick <= last => {
                        Some((shooter, tick))
                    }
                    _ => None,
                }),
        );
        raw::snapshots(&mut s, c);
    }
    eprintln!("{} shots sent, {hidden} hidden", expected.len());
    assert!(
        expected.len() > 20 && hidden > 20,
        "{} sent, {hidden} hidden",
        expected.len()
    );
    assert_eq!(received, expected);
}
