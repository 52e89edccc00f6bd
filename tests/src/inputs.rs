//! The server's input rules against clients that flood, starve or send garbage.

use crate::support::raw;
use sightline_harness::Stepper;
use sightline_movement::PlayerState;
use sightline_protocol::{Channel, ClientDatagram, InputPacket, Wire};
use sightline_server::{ServerConfig, ServerStats};
use sightline_sim::{Buttons, InputCmd, PlayerId, TickConfig};

fn stepper() -> Stepper {
    let config = ServerConfig {
        tick: TickConfig::new(64, 32).unwrap(),
        ..Default::default()
    };
    Stepper::new(config, "duel")
}

fn server_state(s: &mut Stepper, id: PlayerId) -> PlayerState {
    s.on_server(id, |st: &PlayerState| *st)
        .expect("player exists on the server")
}

fn run_cmd(seq: u32, yaw: f32) -> InputCmd {
    InputCmd {
        seq,
        forward: 1.0,
        yaw,
        ..Default::default()
    }
}

#[test]
fn flooding_inputs_does_not_move_a_player_faster() {
    let mut s = stepper();
    let honest = s.add_raw_client();
    let flood = s.add_raw_client();
    let h_id = raw::join(&mut s, honest, "honest")
        .your_id
        .expect("joined as a player");
    let f_id = raw::join(&mut s, flood, "flood")
        .your_id
        .expect("joined as a player");
    let h_start = server_state(&mut s, h_id);
    let f_start = server_state(&mut s, f_id);
    let (mut h_seq, mut f_seq) = (0, 0);
    for _ in 0..64 {
        h_seq += 1;
        raw::inputs(&mut s, honest, vec![run_cmd(h_seq, h_start.yaw)]);
        // Eight fresh commands every tick, in two packets.
        for _ in 0..2 {
            let cmds = (0..4)
                .map(|k| run_cmd(f_seq + 4 - k, f_start.yaw))
                .collect();
            f_seq += 4;
            raw::inputs(&mut s, flood, cmds);
        }
        s.step();
    }
    let h_dist = server_state(&mut s, h_id).pos.distance(h_start.pos);
    let f_dist = server_state(&mut s, f_id).pos.distance(f_start.pos);
    assert!(h_dist > 4.0, "honest player barely moved: {h_dist}");
    assert!(
        f_dist <= h_dist + 0.01,
        "flooding moved {f_dist} m, honest {h_dist} m"
    );
}

#[test]
fn withholding_inputs_does_not_slow_a_fall() {
    let mut s = stepper();
    let honest = s.add_raw_client();
    let starve = s.add_raw_client();
    let h_id = raw::join(&mut s, honest, "honest")
        .your_id
        .expect("joined as a player");
    let s_id = raw::join(&mut s, starve, "starve")
        .your_id
        .expect("joined as a player");
    let jump = |seq| InputCmd {
        seq,
        buttons: Buttons::JUMP,
        ..Default::default()
    };
    raw::inputs(&mut s, honest, vec![jump(1)]);
    raw::inputs(&mut s, starve, vec![jump(1)]);
    let (mut h_air, mut s_air) = (0, 0);
    for seq in 2..64 {
        // The honest client keeps sending idle commands; the other goes silent.
        raw::inputs(
            &mut s,
            honest,
            vec![InputCmd {
                seq,
                ..Default::default()
            }],
        );
        s.step();
        h_air += usize::from(!server_state(&mut s, h_id).on_ground());
        s_air += usize::from(!server_state(&mut s, s_id).on_ground());
    }
    assert!(h_air > 10, "the jump never happened");
    // The server waits for a missing command only so long (then repeats the last one),
    // and only within its allowance of holds.
    let hold = (sightline_server::HOLD_GRACE_SECONDS * 64.0).ceil() as usize;
    assert!(
        (h_air..=h_air + hold).contains(&s_air),
        "in the air {s_air} ticks against {h_air}"
    );
    assert!(server_state(&mut s, s_id).on_ground());
}

#[test]
fn holding_back_commands_again_and_again_buys_only_the_allowance() {
    use sightline_server::{HOLD_GRACE_SECONDS, HOLD_SHARE, InputBuffer};
    let mut s = stepper();
    let honest = s.add_raw_client();
    let cheat = s.add_raw_client();
    let h_id = raw::join(&mut s, honest, "honest")
        .your_id
        .expect("joined as a player");
    let c_id = raw::join(&mut s, cheat, "cheat")
        .your_id
        .expect("joined as a player");
    let hold = (HOLD_GRACE_SECONDS * 64.0).ceil() as u32;
    let (mut h_seq, mut c_seq) = (0, 0);
    let ticks = 64 * 20;
    for t in 0..ticks {
        h_seq += 1;
        raw::inputs(&mut s, honest, vec![run_cmd(h_seq, 0.0)]);
        // The cheat sends one command, then nothing for as long as the server waits,
        // and so on: its player would live in slow motion if every wait were granted.
        if t % (hold + 1) == 0 {
            c_seq += 1;
            raw::inputs(&mut s, cheat, vec![run_cmd(c_seq, 0.0)]);
        }
        s.step();
    }
    let mut of = |id: PlayerId| {
        s.on_server(id, |b: &InputBuffer| b.holds())
            .expect("on the server")
    };
    // Every tick a player is not held runs a command, or a repeat standing in for one.
    let (h_held, c_held) = (of(h_id), of(c_id));
    assert_eq!(h_held, 0, "the honest player never waited");
    // Its allowance at the start, then one tick in HOLD_SHARE.
    let allowed = hold + ticks / HOLD_SHARE + 1;
    assert!(c_held <= allowed, "held {c_held} ticks, allowed {allowed}");
    // And it was held: at least its starting allowance (later holds need 32 commands
    // taken each, and most of its commands arrive after a repeat stood in for them).
    assert!(c_held >= hold, "the cheat was never held: {c_held}");
    // Its client is told: the newest snapshot's count (wrapping) is the server's, short
    // at most the tick after it.
    let told = raw::snapshots(&mut s, cheat)
        .last()
        .expect("snapshots came")
        .touches
        .held;
    let behind = ((c_held & 0xff) as u8).wrapping_sub(told);
    assert!(behind <= 1, "told {told} of {c_held} holds");
}

#[test]
fn snapshots_acknowledge_the_last_simulated_input() {
    let mut s = stepper();
    let c = s.add_raw_client();
    raw::join(&mut s, c, "burst");
    raw::snapshots(&mut s, c);
    // Twelve commands arrive at once; the server takes one per tick.
    for first in [9, 5, 1] {
        let newest_first = (0..4).map(|k| run_cmd(first + 3 - k, 0.0)).collect();
        raw::inputs(&mut s, c, newest_first);
    }
    s.steps(4);
    let snaps = raw::snapshots(&mut s, c);
    let last = snaps.last().expect("a snapshot arrived");
    assert!(
        (2..=4).contains(&last.ack_input_seq),
        "acknowledged {} after four ticks",
        last.ack_input_seq
    );
    assert!(last.input_queue >= 8, "queue depth {}", last.input_queue);
}

#[test]
fn malformed_packets_are_dropped_and_counted() {
    let mut s = stepper();
    let c = s.add_raw_client();
    let id = raw::join(&mut s, c, "fuzzy")
        .your_id
        .expect("joined as a player");
    let start = server_state(&mut s, id);
    raw::send_bytes(&mut s, c, Channel::Reliable, vec![0xff; 40]);
    raw::send_bytes(&mut s, c, Channel::Unreliable, vec![0xff; 40]);
    let valid = ClientDatagram::Input(InputPacket::new(0, 0, None, &[run_cmd(1, start.yaw)]))
        .encode()
        .unwrap();
    raw::send_bytes(
        &mut s,
        c,
        Channel::Unreliable,
        valid[..valid.len() - 1].to_vec(),
    );
    let mut nan = run_cmd(1, start.yaw);
    nan.forward = f32::NAN;
    raw::inputs(&mut s, c, vec![nan]);
    // One step to send, one for the server to receive.
    s.steps(2);
    assert_eq!(
        s.server.world().resource::<ServerStats>().malformed_packets,
        4
    );
    // The connection still works.
    for seq in 1..=32 {
        raw::inputs(&mut s, c, vec![run_cmd(seq, start.yaw)]);
        s.step();
    }
    assert!(server_state(&mut s, id).pos.distance(start.pos) > 1.0);
}
