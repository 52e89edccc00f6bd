//! Real frame rates: clients drawing at 10, 30, 60 and 144 frames a second, each frame's
//! length varying by a fifth and each clock drifting 0.1 % from the server's, keep their
//! commands reaching the server in time, move, and predict without correcting themselves.

use bevy::prelude::With;
use sightline_client::{ClientStats, InputHistory, InputPacing, LocalPlayer};
use sightline_harness::{Frames, Stepper};
use sightline_movement::PlayerState;
use sightline_net::ConditionerSettings;
use sightline_prediction::PredictionStats;
use sightline_server::ServerConfig;
use sightline_sim::{Buttons, PlayerId};

/// What a client did over a span of play.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    commands: u32,
    repeats: u32,
    own_corrections: u64,
}

fn span_so_far(s: &Stepper, i: usize) -> Span {
    let w = s.clients[i].world();
    Span {
        commands: w.resource::<InputHistory>().last_seq(),
        repeats: w.resource::<InputPacing>().repeats,
        own_corrections: w.resource::<PredictionStats>().causes.own,
    }
}

#[test]
fn clients_at_any_frame_rate_keep_pace_and_predict_exactly() {
    let mut s = Stepper::new(
        ServerConfig {
            max_players: 8,
            ..Default::default()
        },
        "duel",
    );
    let rates = [10.0, 30.0, 60.0, 144.0];
    for (i, fps) in rates.iter().enumerate() {
        let frames = Frames {
            fps: *fps,
            jitter: 0.2,
            drift: if i % 2 == 0 { 0.001 } else { -0.001 },
            seed: 40 + i as u64,
        };
        let clean = ConditionerSettings::default();
        s.add_client_with(&format!("at {fps} fps"), 7 + i as u64, clean, clean, frames);
    }
    // Joining and settling, then a measured stretch.
    s.run_for(8.0);
    let before: Vec<Span> = (0..rates.len()).map(|i| span_so_far(&s, i)).collect();
    let seconds = 20.0;
    s.run_for(seconds);
    for (i, fps) in rates.iter().enumerate() {
        let after = span_so_far(&s, i);
        let w = s.clients[i].world();
        let pacing = w.resource::<InputPacing>();
        let commands = after.commands - before[i].commands;
        let repeats = after.repeats - before[i].repeats;
        let own = after.own_corrections - before[i].own_corrections;
        let moved = w.resource::<ClientStats>().players_moved(5.0);
        println!(
            "{fps} fps: {commands} commands, {repeats} repeats, {own} own corrections, factor {:.4}",
            pacing.factor
        );
        assert!(pacing.has_settled(), "{fps} fps: pacing never settled");
        // One command per server tick, whatever the frame rate (within the pace's 3 %).
        let ticks = seconds * 128.0;
        assert!(
            (commands as f64 - ticks).abs() < ticks * 0.03,
            "{fps} fps: {commands} commands in {ticks} ticks"
        );
        assert_eq!(repeats, 0, "{fps} fps: the server ran short of commands");
        assert_eq!(own, 0, "{fps} fps: our own movement was mispredicted");
        assert!(moved >= 1, "{fps} fps: nobody got 5 m anywhere");
    }
}

/// A client at four frames a second (each frame's length varying by 30 %) on duel, alone,
/// played by hand rather than by its autopilot, after six seconds of play: the stepper,
/// the client and its player.
fn a_slow_client_by_hand() -> (Stepper, usize, PlayerId) {
    let mut s = Stepper::new(
        ServerConfig {
            max_players: 2,
            bots: 0,
            ..Default::default()
        },
        "duel",
    );
    let frames = Frames {
        fps: 4.0,
        jitter: 0.3,
        drift: 0.0,
        seed: 5,
    };
    let clean = ConditionerSettings::default();
    let c = s.add_client_with("slow", 3, clean, clean, frames);
    // The player's own hands, not the autopilot's: keys tapped once.
    s.clients[c]
        .world_mut()
        .remove_resource::<sightline_client::Autopilot>();
    s.run_for(6.0);
    let world = s.clients[c].world_mut();
    let mut own = world.query_filtered::<&PlayerId, With<LocalPlayer>>();
    let id = *own.single(world).expect("playing");
    (s, c, id)
}

fn tap(s: &mut Stepper, c: usize, buttons: Buttons, slot: u8) {
    s.clients[c]
        .world_mut()
        .resource_mut::<sightline_client::LocalInput>()
        .press(buttons, slot);
}

#[test]
fn a_weapon_key_tapped_at_four_frames_a_second_switches_on_the_server() {
    use sightline_combat::WeaponKind::{Rifle, Rockets, Shotgun};
    let (mut s, c, id) = a_slow_client_by_hand();
    for (slot, weapon) in [
        (2, Shotgun),
        (3, Rockets),
        (1, Rifle),
        (2, Shotgun),
        (3, Rockets),
    ] {
        tap(&mut s, c, Buttons::default(), slot);
        s.run_for(1.5);
        assert_eq!(
            s.on_server::<sightline_combat::Arsenal, _>(id, |a| a.current),
            Some(weapon),
            "slot {slot} tapped at 4 frames a second"
        );
    }
}

/// A tap of fire or jump just before a frame that hitches (the client stands still 0.6 s,
/// then makes every command it owes): the server has stood in for most of those commands
/// by the time they come, the tapped one among them, which used to be lost.
#[test]
fn a_shot_and_a_jump_tapped_before_a_hitch_at_four_frames_a_second_happen_on_the_server() {
    let (mut s, c, id) = a_slow_client_by_hand();
    let rounds = |s: &mut Stepper| {
        s.on_server::<sightline_combat::Arsenal, _>(id, |a| a.ammo[a.current.index()].magazine)
            .expect("armed")
    };
    let hitch = std::time::Duration::from_millis(600);
    for n in 0..4 {
        let before = rounds(&mut s);
        tap(&mut s, c, Buttons::FIRE, 0);
        s.hitch_client(c, hitch);
        s.run_for(2.0);
        assert_eq!(rounds(&mut s), before - 1, "shot {n}: one round fired");
        tap(&mut s, c, Buttons::JUMP, 0);
        s.hitch_client(c, hitch);
        let mut rose = false;
        for _ in 0..(2.0 * f64::from(s.tick_hz())) as usize {
            s.step();
            let state: PlayerState = s.on_server(id, |st: &PlayerState| *st).expect("playing");
            rose |= state.vel.y > 1.0;
        }
        assert!(rose, "jump {n}: the player never left the ground");
    }
}
