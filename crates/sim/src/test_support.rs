//! Input commands for tests, built once here so every crate's tests (and the fuzzing
//! seeds) build them alike. Behind the `test-support` feature: no game code uses it.

use crate::{Buttons, InputCmd, angle_of_steps, angle_steps};

/// Command `seq`, every other field at its default: nothing pressed, looking ahead.
pub fn cmd(seq: u32) -> InputCmd {
    InputCmd {
        seq,
        ..Default::default()
    }
}

/// Command `seq` with every field set to a value the wire carries exactly (angles and
/// the view fraction on their steps), so it survives encoding bit for bit.
pub fn wire_cmd(seq: u32) -> InputCmd {
    InputCmd {
        seq,
        client_tick: seq.wrapping_add(10),
        forward: 1.0,
        right: -0.5,
        yaw: angle_of_steps(angle_steps(0.3)),
        pitch: angle_of_steps(angle_steps(-0.2)),
        buttons: Buttons::JUMP,
        weapon_slot: 2,
        view_tick: 1200,
        view_frac: 39_936,
    }
}
