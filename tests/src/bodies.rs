//! Players in each other's way, and combat in prediction: two clients body-blocking on the
//! server, a predicted rocket jump, another's rocket predicted, a death by another's
//! rocket, and a death and respawn (a teleport), each with the clients' prediction
//! corrections counted by cause.

use bevy::prelude::*;
use sightline_client::{Autopilot, InputPacing, LatestSnapshot, LocalInput, LocalPlayer};
use sightline_combat::{SpawnCount, Vitals};
use sightline_harness::Stepper;
use sightline_movement::{Body, MoveParams, PlayerState};
use sightline_net::ConditionerSettings;
use sightline_prediction::{CorrectionCause, CorrectionCauses, Predicted, PredictionStats};
use sightline_server::ServerConfig;
use sightline_sim::{Buttons, PlayerId, TickConfig};
use std::f32::consts::FRAC_PI_2;

/// Yaw facing +X (positive yaw turns left from -Z).
const EAST: f32 = -FRAC_PI_2;
/// Yaw facing -X.
const WEST: f32 = FRAC_PI_2;
/// Yaw facing +Z.
const SOUTH: f32 = std::f32::consts::PI;

/// A server at 128 Hz with 64 Hz snapshots and `n` clients played by hand (their
/// [`LocalInput`]) over links of 80 ms round trip, joined, predicting and paced.
fn stepper(n: usize) -> Stepper {
    let config = ServerConfig {
        tick: TickConfig::new(128, 64).expect("valid rates"),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "duel");
    let link = ConditionerSettings {
        latency_ms: 40.0,
        ..Default::default()
    };
    for i in 0..n {
        let c = s.add_conditioned_client(&format!("p{i}"), i as u64 + 1, link, link);
        // Played by hand: the autopilot leaves the controls.
        s.clients[c].world_mut().remove_resource::<Autopilot>();
    }
    let ready = s.run_until(128 * 8, |s| {
        s.clients.iter_mut().all(|c| {
            let settled = c.world().resource::<InputPacing>().settled();
            let w = c.world_mut();
            settled && w.query_filtered::<(), With<Predicted>>().iter(w).count() == 1
        })
    });
    assert!(ready, "the clients did not join and settle");
    s
}

fn own_id(client: &mut App) -> PlayerId {
    let w = client.world_mut();
    *w.query_filtered::<&PlayerId, With<LocalPlayer>>()
        .single(w)
        .expect("a local player")
}

fn server_state(s: &mut Stepper, id: PlayerId) -> PlayerState {
    s.on_server(id, |st: &PlayerState| *st)
        .expect("the player is on the server")
}

/// Puts a player somewhere on the server, as a respawn does: a teleport, counted.
fn place(s: &mut Stepper, id: PlayerId, pos: Vec3, yaw: f32) {
    let w = s.server.world_mut();
    let (_, mut state, mut spawns) = w
        .query::<(&PlayerId, &mut PlayerState, &mut SpawnCount)>()
        .iter_mut(w)
        .find(|(p, ..)| **p == id)
        .expect("the player is on the server");
    *state = PlayerState::at(pos, yaw);
    spawns.bump();
}

/// Changes a player's health, armour or timers on the server.
fn with_vitals(s: &mut Stepper, id: PlayerId, change: impl FnOnce(&mut Vitals)) {
    let w = s.server.world_mut();
    let (_, mut vitals) = w
        .query::<(&PlayerId, &mut Vitals)>()
        .iter_mut(w)
        .find(|(p, _)| **p == id)
        .expect("the player is on the server");
    change(&mut vitals);
}

/// Two clients ten metres apart in the open, the shooter (client 1) facing the target
/// (client 0, north, -Z) with the rocket launcher, aimed at the floor two metres short of
/// the target's feet, a second after being placed. Returns the target's id.
fn rocket_duel() -> (Stepper, PlayerId) {
    let mut s = stepper(2);
    let target = own_id(&mut s.clients[0]);
    let shooter = own_id(&mut s.clients[1]);
    place(&mut s, target, Vec3::new(-6.0, 0.0, -8.0), SOUTH);
    place(&mut s, shooter, Vec3::new(-6.0, 0.0, 2.0), 0.0);
    *input(&mut s.clients[1]) = LocalInput {
        pitch: -(1.6f32 / 8.0).atan(),
        weapon_slot: 3,
        ..default()
    };
    s.run_for(1.0);
    (s, target)
}

fn input(client: &mut App) -> Mut<'_, LocalInput> {
    client.world_mut().resource_mut::<LocalInput>()
}

fn stats(client: &App) -> PredictionStats {
    client.world().resource::<PredictionStats>().clone()
}

/// Corrections counted since `before`, by cause.
fn since(before: &PredictionStats, now: &PredictionStats) -> CorrectionCauses {
    now.causes.since(&before.causes)
}

fn largest(before: &PredictionStats, now: &PredictionStats) -> f32 {
    now.corrections[before.corrections.len()..]
        .iter()
        .map(|c| c.size)
        .fold(0.0, f32::max)
}

/// Each visible correction the clients make while `s` runs `ticks` ticks: (client,
/// size, cause).
fn corrections_over(
    s: &mut Stepper,
    ticks: usize,
    mut each_tick: impl FnMut(&mut Stepper),
) -> Vec<(usize, f32, Option<CorrectionCause>)> {
    let mut seen: Vec<usize> = s
        .clients
        .iter()
        .map(|c| stats(c).corrections.len())
        .collect();
    let mut found = Vec::new();
    for _ in 0..ticks {
        s.step();
        each_tick(s);
        for (c, seen) in seen.iter_mut().enumerate() {
            let now = stats(&s.clients[c]);
            if now.corrections.len() != *seen {
                *seen = now.corrections.len();
                found.push((c, now.last_correction, now.last_cause));
            }
        }
    }
    found
}

#[test]
fn two_clients_body_block_on_the_server() {
    let mut s = stepper(2);
    let ids = [own_id(&mut s.clients[0]), own_id(&mut s.clients[1])];
    let params = MoveParams::default();
    // Face each other 5 m apart on open floor, and run.
    place(&mut s, ids[0], Vec3::new(-2.5, 0.0, -8.0), EAST);
    place(&mut s, ids[1], Vec3::new(2.5, 0.0, -8.0), WEST);
    for (c, yaw) in [(0, EAST), (1, WEST)] {
        *input(&mut s.clients[c]) = LocalInput {
            forward: 1.0,
            yaw,
            ..default()
        };
    }
    let before = [stats(&s.clients[0]), stats(&s.clients[1])];
    let server_pair = |s: &mut Stepper| (server_state(s, ids[0]), server_state(s, ids[1]));
    let meeting = corrections_over(&mut s, 128 * 3, |s| {
        let (a, b) = server_pair(s);
        let gap = Body::of(&a, &params).gap(&Body::of(&b, &params));
        assert!(gap > 0.0, "the capsules overlap by {} m", -gap);
        assert!(a.pos.x < b.pos.x, "they passed through each other");
    });
    let (a, b) = server_pair(&mut s);
    let gap = Body::of(&a, &params).gap(&Body::of(&b, &params));
    assert!(gap < 0.02, "not pressed together: {gap} m apart");
    assert!(
        (a.pos.x + b.pos.x).abs() < 0.1,
        "one pushed the other: {a:?} {b:?}"
    );

    // Then one steps aside: the other, still pressing, slides along it and runs on.
    *input(&mut s.clients[1]) = LocalInput {
        right: 1.0,
        yaw: WEST,
        ..default()
    };
    let aside = corrections_over(&mut s, 192, |_| {});
    let (a, _) = server_pair(&mut s);
    assert!(a.pos.x > 2.0, "the way did not open: {a:?}");

    eprintln!("meeting and pressing: {meeting:?}");
    eprintln!("stepping aside: {aside:?}");
    for (c, before) in before.iter().enumerate() {
        let now = stats(&s.clients[c]);
        eprintln!(
            "client {c}: {:?}, largest {:.3} m, teleports {}",
            since(before, &now),
            largest(before, &now),
            now.teleports - before.teleports
        );
        assert_eq!(
            now.teleports,
            before.teleports + 1,
            "the placing is a teleport"
        );
    }
    // Each client predicts the other carried forward to the tick the server moves it: the
    // meeting costs at most a millimetre-sized correction, pressing none at all.
    for &(c, size, cause) in &meeting {
        assert_eq!(cause, Some(CorrectionCause::Collision), "client {c}");
        assert!(size < 0.01, "client {c} corrected {size} m on meeting");
    }
    // A player stepping aside is news the other learns a round trip late. Causes come
    // from what the server did: while the server's move still met the other's body the
    // corrections are collisions; once it no longer did, what is left is this client's
    // guess of where the other was, its own (at most one, once the way opened). All
    // small.
    let collisions = aside
        .iter()
        .filter(|(_, _, cause)| *cause == Some(CorrectionCause::Collision))
        .count();
    assert!(collisions >= 1, "{aside:?}");
    for c in 0..2 {
        let causes: Vec<_> = aside.iter().filter(|a| a.0 == c).map(|a| a.2).collect();
        let first_own = causes
            .iter()
            .position(|k| *k == Some(CorrectionCause::Own))
            .unwrap_or(causes.len());
        assert!(
            causes[..first_own]
                .iter()
                .all(|k| *k == Some(CorrectionCause::Collision))
                && causes[first_own..]
                    .iter()
                    .all(|k| *k == Some(CorrectionCause::Own))
                && causes.len() - first_own <= 1,
            "client {c}: {causes:?}"
        );
    }
    for &(c, size, _) in &aside {
        assert!(size < 0.25, "client {c} corrected {size} m");
    }
}

/// Our client's predicted state for player `id`, and the state its newest snapshot gives
/// it (none before one has).
fn predicted_and_confirmed(client: &mut App, id: PlayerId) -> (PlayerState, Option<PlayerState>) {
    let w = client.world_mut();
    let predicted = *w
        .query_filtered::<&PlayerState, With<Predicted>>()
        .single(w)
        .expect("predicted");
    let confirmed = w
        .resource::<LatestSnapshot>()
        .0
        .as_ref()
        .and_then(|snap| snap.players.iter().find(|p| p.id == id))
        .map(|p| p.state());
    (predicted, confirmed)
}

#[test]
fn a_rocket_jump_is_predicted_before_the_server_confirms_it() {
    let mut s = stepper(1);
    let id = own_id(&mut s.clients[0]);
    place(&mut s, id, Vec3::new(-6.0, 0.0, -8.0), 0.0);
    // Rockets up, then look straight down.
    *input(&mut s.clients[0]) = LocalInput {
        pitch: -88f32.to_radians(),
        weapon_slot: 3,
        ..default()
    };
    s.run_for(1.0);
    let before = stats(&s.clients[0]);
    input(&mut s.clients[0]).buttons = Buttons::FIRE;
    // The first tick our prediction has us rising fast, the server has not yet said so.
    let mut ahead = false;
    let mut peak: f32 = 0.0;
    for _ in 0..128 {
        s.step();
        input(&mut s.clients[0]).buttons = Buttons::default();
        let (predicted, confirmed) = predicted_and_confirmed(&mut s.clients[0], id);
        if predicted.vel.y > 4.0 && confirmed.is_some_and(|c| c.vel.y < 1.0) {
            ahead = true;
        }
        peak = peak.max(server_state(&mut s, id).pos.y);
    }
    assert!(peak > 1.0, "the rocket did not lift the player: {peak} m");
    assert!(ahead, "the jump was not predicted ahead of the server");
    let now = stats(&s.clients[0]);
    let causes = since(&before, &now);
    eprintln!("rocket jump: peak {peak:.2} m, {causes:?}");
    assert_eq!(
        causes.total(),
        0,
        "the predicted rocket jump was corrected: {causes:?}, largest {} m",
        largest(&before, &now)
    );
}

#[test]
fn a_running_rocket_jump_is_predicted_too() {
    let mut s = stepper(1);
    let id = own_id(&mut s.clients[0]);
    place(&mut s, id, Vec3::new(-6.0, 0.0, -10.0), SOUTH);
    *input(&mut s.clients[0]) = LocalInput {
        yaw: SOUTH,
        pitch: -75f32.to_radians(),
        weapon_slot: 3,
        ..default()
    };
    s.run_for(0.7);
    let before = stats(&s.clients[0]);
    // Run, then jump and fire at the ground behind the feet on the same tick.
    input(&mut s.clients[0]).forward = 1.0;
    s.run_for(0.4);
    input(&mut s.clients[0]).press(Buttons::JUMP.with(Buttons::FIRE), 0);
    let mut peak: f32 = 0.0;
    for _ in 0..128 {
        s.step();
        peak = peak.max(server_state(&mut s, id).pos.y);
    }
    let now = stats(&s.clients[0]);
    let causes = since(&before, &now);
    eprintln!(
        "running rocket jump: peak {peak:.2} m, {causes:?}, largest {:.3} m",
        largest(&before, &now)
    );
    assert!(peak > 1.5, "the rocket did not lift the player: {peak} m");
    assert_eq!(causes.total(), 0, "{causes:?}");
}

#[test]
fn anothers_rocket_is_predicted_and_its_push_costs_no_correction() {
    let (mut s, target) = rocket_duel();
    let before = stats(&s.clients[0]);
    let start = server_state(&mut s, target);
    input(&mut s.clients[1]).buttons = Buttons::FIRE;
    // The burst is predicted: our client has us thrown before its snapshots say so.
    let mut ahead = false;
    for _ in 0..192 {
        s.step();
        input(&mut s.clients[1]).buttons = Buttons::default();
        let (predicted, confirmed) = predicted_and_confirmed(&mut s.clients[0], target);
        if predicted.vel.length() > 2.0 && confirmed.is_some_and(|c| c.vel.length() < 0.5) {
            ahead = true;
        }
    }
    let end = server_state(&mut s, target);
    let moved = end.pos.distance(start.pos);
    let now = stats(&s.clients[0]);
    let causes = since(&before, &now);
    eprintln!(
        "another's rocket: thrown {moved:.2} m, {causes:?}, largest {:.4} m",
        largest(&before, &now)
    );
    assert!(
        moved > 0.5,
        "the rocket did not throw the target: {moved} m"
    );
    assert!(ahead, "the push was not predicted ahead of the server");
    assert_eq!(causes.total(), 0, "{causes:?}");
}

#[test]
fn a_death_by_anothers_rocket_is_a_death_not_a_knockback_correction() {
    // The duel above, but the target runs at the shooter with a point of health left:
    // the rocket that throws it kills it, and the server stops it where the client, a
    // round trip behind, still has it running.
    let (mut s, target) = rocket_duel();
    with_vitals(&mut s, target, |v| {
        v.health = 1.0;
        v.armor = 0.0;
        v.protection = 0.0;
    });
    *input(&mut s.clients[0]) = LocalInput {
        forward: 1.0,
        yaw: SOUTH,
        ..default()
    };
    let before = stats(&s.clients[0]);
    input(&mut s.clients[1]).buttons = Buttons::FIRE;
    let mut died = false;
    for _ in 0..128 {
        s.step();
        input(&mut s.clients[1]).buttons = Buttons::default();
        died |= s
            .on_server(target, |v: &Vitals| !v.alive())
            .unwrap_or(false);
    }
    let causes = since(&before, &stats(&s.clients[0]));
    eprintln!("killed by another's rocket: {causes:?}");
    assert!(died, "the rocket did not kill the target");
    // The server says that rocket pushed us, and it did; what prediction could not know
    // is the dead stop, which the death camera shows instead of a pull-back.
    assert!(causes.killed >= 1, "no correction at death: {causes:?}");
    assert_eq!(
        causes.knockback, 0,
        "a death counted as knockback: {causes:?}"
    );
    assert_eq!(causes.total(), causes.killed, "{causes:?}");
}

#[test]
fn dying_costs_one_correction_and_the_respawn_none() {
    let mut s = stepper(1);
    let id = own_id(&mut s.clients[0]);
    let before = stats(&s.clients[0]);
    // Placed in the open (a teleport), running; killed there, it comes back at a spawn.
    let away = Vec3::new(-6.0, 0.0, -8.0);
    place(&mut s, id, away, SOUTH);
    *input(&mut s.clients[0]) = LocalInput {
        forward: 1.0,
        yaw: SOUTH,
        ..default()
    };
    s.run_for(0.5);
    let alive = stats(&s.clients[0]);
    with_vitals(&mut s, id, |v| {
        v.health = 0.0;
        v.respawn_in = 0.5;
    });
    let dying = corrections_over(&mut s, 128 * 3 / 2, |_| {});
    let after = server_state(&mut s, id);
    assert!(after.pos.distance(away) > 5.0, "did not respawn: {after:?}");
    let now = stats(&s.clients[0]);
    eprintln!("dying and respawning: {dying:?}");
    assert_eq!(
        now.teleports,
        before.teleports + 2,
        "placing and respawning"
    );
    assert_eq!(alive.corrections.len(), before.corrections.len());
    // The server stops the dead at once; the client learns a round trip later and is
    // pulled back once, then replays what it sent as the server ran it.
    assert!(dying.len() <= 1, "{dying:?}");
    for (_, _, cause) in &dying {
        assert_eq!(*cause, Some(CorrectionCause::Killed));
    }
    let w = s.clients[0].world_mut();
    let predicted = *w
        .query_filtered::<&PlayerState, With<Predicted>>()
        .single(w)
        .expect("predicted");
    assert!(
        predicted.pos.distance(after.pos) < 0.01,
        "prediction did not take the spawn: {predicted:?} against {after:?}"
    );
}
