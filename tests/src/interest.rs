//! Interest management end to end: a client is not sent the players hidden from it, and
//! is sent the ones it can see.

use bevy::prelude::*;
use sightline_client::{LatestSnapshot, LocalPlayer};
use sightline_harness::Stepper;
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_server::{HEAR_RADIUS, ServerConfig};
use sightline_sim::{PlayerId, Tick, TickConfig};
use std::collections::HashMap;

/// Whether nothing of the map lies between the two players' eyes: a plain sight line,
/// stricter than the server's test with its margin.
fn eye_to_eye(map: &CurrentMap, params: &MoveParams, a: &PlayerState, b: &PlayerState) -> bool {
    let eye = params.eye_position(a);
    map.world.is_clear(eye, params.eye_position(b) - eye)
}

#[test]
fn hidden_players_are_left_out_and_visible_ones_sent() {
    let config = ServerConfig {
        name: "test".into(),
        max_players: 16,
        bots: 11,
        tick: TickConfig::new(128, 64).unwrap(),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "depot");
    s.add_client("viewer", 3);
    s.run_for(3.0);
    let client = s.clients[0].world_mut();
    let me = *client
        .query_filtered::<&PlayerId, With<LocalPlayer>>()
        .single(client)
        .expect("our player");
    let map = s.server.world().resource::<CurrentMap>().clone();
    let params = MoveParams::default();
    let (mut pairs, mut hidden, mut in_sight_but_hidden) = (0, 0, 0);
    let mut last_seq = 0;
    for _ in 0..20_000 {
        s.step();
        let Some(snapshot) = s.clients[0].world().resource::<LatestSnapshot>().0.clone() else {
            continue;
        };
        // Compare with the server's world of the snapshot's own tick.
        let tick = s.server.world().resource::<Tick>().0;
        if snapshot.seq == last_seq || snapshot.server_tick != tick {
            continue;
        }
        last_seq = snapshot.seq;
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
fn snapshots_match_the_server_and_carried_players_stay_within_a_centimetre() {
    let config = ServerConfig {
        name: "test".into(),
        max_players: 16,
        bots: 6,
        tick: TickConfig::new(128, 64).unwrap(),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "depot");
    let link = sightline_net::ConditionerSettings {
        latency_ms: 10.0,
        ..Default::default()
    };
    s.add_conditioned_client("viewer", 3, link, link);
    s.run_for(3.0);
    // The server's players at each tick, to compare snapshots with when they arrive.
    let mut truth: HashMap<u32, Vec<(PlayerId, PlayerState)>> = HashMap::new();
    let (mut last_seq, mut exact, mut carried, mut worst) = (0, 0, 0, 0.0f32);
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
        for p in &snapshot.players {
            let server = states
                .iter()
                .find(|(id, _)| *id == p.id)
                .expect("a player")
                .1;
            let off = server.pos.distance(p.state().pos);
            worst = worst.max(off);
            if off == 0.0 {
                exact += 1;
            } else {
                carried += 1;
            }
        }
    }
    eprintln!("{exact} exact, {carried} carried, worst {worst} m");
    assert!(exact > 10_000, "{exact} player states compared exactly");
    assert!(carried > 100, "far players were carried {carried} times");
    assert!(
        worst <= 0.0105,
        "a carried player {worst} m from the server's"
    );
}
