//! Bit-exact replay of a recorded input stream: the guard against anything (a compiler
//! flag, a platform's maths library, an innocent refactor) changing movement's results.
//!
//! `testdata/replay.txt` holds the commands as exact float bits and, last, the final state
//! they led to when recorded. To re-record after an intended change to movement:
//! `cargo test -p sightline-movement -- --ignored record_replay`.

use crate::{MoveParams, PlayerState, step};
use sightline_map::{CollisionWorld, MapSource};
use sightline_sim::{Buttons, InputCmd};
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/replay.txt")
}

fn duel() -> (CollisionWorld, PlayerState) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../maps/duel.ron");
    let map = MapSource::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let spawn = map.def.spawns[0];
    (
        CollisionWorld::from_map(&map.def),
        PlayerState::at(spawn.pos, spawn.yaw),
    )
}

/// A scripted player: runs from the first spawn to the foot of the ramp and up onto the
/// central platform, then runs while turning, strafes, jumps and crouches, hitting walls,
/// pillars and stairs of the duel map.
fn scripted(tick: u32) -> InputCmd {
    let t = tick as f32 / 128.0;
    if tick < 420 {
        let yaw = if tick < 230 { -1.183 } else { 0.0 };
        return InputCmd {
            seq: tick + 1,
            client_tick: tick,
            forward: 1.0,
            yaw,
            ..Default::default()
        };
    }
    let mut buttons = Buttons::default();
    if tick % 170 < 3 {
        buttons = buttons.with(Buttons::JUMP);
    }
    if (tick / 400) % 5 == 3 {
        buttons = buttons.with(Buttons::CROUCH);
    }
    InputCmd {
        seq: tick + 1,
        client_tick: tick,
        forward: if (tick / 300) % 4 == 2 { -0.6 } else { 1.0 },
        right: [0.0, 1.0, 0.0, -1.0][(tick / 220) as usize % 4],
        yaw: sightline_sim::wrap_angle(0.35 * t + 0.8 * ((tick / 500) % 3) as f32),
        pitch: 0.1,
        buttons,
        weapon_slot: 0,
        ..Default::default()
    }
    .sanitized()
    .expect("scripted commands are valid")
}

fn play(cmds: &[InputCmd]) -> PlayerState {
    let (world, mut s) = duel();
    let params = MoveParams::default();
    for cmd in cmds {
        s = step(&s, cmd, &world, &params, 1.0 / 128.0);
    }
    s
}

fn parse_hex(word: &str) -> u32 {
    u32::from_str_radix(word, 16).expect("hex word")
}

#[test]
fn recorded_input_stream_replays_bit_for_bit() {
    let text = std::fs::read_to_string(fixture()).expect("testdata/replay.txt exists");
    let mut cmds = Vec::new();
    let mut expected = None;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words[0] == "final" {
            expected = Some(words[1..].iter().map(|w| parse_hex(w)).collect::<Vec<_>>());
            continue;
        }
        let f = |i: usize| f32::from_bits(parse_hex(words[i]));
        cmds.push(InputCmd {
            seq: words[0].parse().unwrap(),
            client_tick: words[1].parse().unwrap(),
            forward: f(2),
            right: f(3),
            yaw: f(4),
            pitch: f(5),
            buttons: Buttons(words[6].parse().unwrap()),
            weapon_slot: words[7].parse().unwrap(),
            ..Default::default()
        });
    }
    assert!(cmds.len() > 2000);
    let got = play(&cmds).to_bits().to_vec();
    assert_eq!(
        Some(got),
        expected,
        "movement no longer reproduces the recording"
    );
}

#[test]
fn the_recording_covers_ground_air_crouch_and_climbing() {
    let (world, mut s) = duel();
    let params = MoveParams::default();
    let (mut air, mut crouched, mut highest) = (0, 0, f32::MIN);
    for tick in 0..3000 {
        s = step(&s, &scripted(tick), &world, &params, 1.0 / 128.0);
        air += usize::from(!s.on_ground());
        crouched += usize::from(s.crouched());
        if s.on_ground() {
            highest = highest.max(s.pos.y);
        }
    }
    assert!(
        air > 200 && crouched > 200,
        "air {air}, crouched {crouched}"
    );
    assert!(highest > 1.0, "never stood on anything raised ({highest})");
}

#[test]
#[ignore = "writes testdata/replay.txt; run only after an intended change to movement"]
fn record_replay() {
    let cmds: Vec<InputCmd> = (0..3000).map(scripted).collect();
    let mut out = String::from(
        "# seq client_tick forward right yaw pitch (f32 bits, hex) buttons weapon_slot\n",
    );
    for c in &cmds {
        let _ = writeln!(
            out,
            "{} {} {:08x} {:08x} {:08x} {:08x} {} {}",
            c.seq,
            c.client_tick,
            c.forward.to_bits(),
            c.right.to_bits(),
            c.yaw.to_bits(),
            c.pitch.to_bits(),
            c.buttons.0,
            c.weapon_slot
        );
    }
    let bits = play(&cmds).to_bits();
    let _ = writeln!(
        out,
        "final {}",
        bits.iter()
            .map(|b| format!("{b:08x}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    std::fs::write(fixture(), out).unwrap();
}
