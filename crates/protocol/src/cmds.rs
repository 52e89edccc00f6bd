//! The commands of an input packet, encoded against each other. A packet carries every
//! command the server has not yet acknowledged within a time window (up to
//! [`MAX_PACKET_CMDS`]), newest first; consecutive commands are mostly the same, so each
//! older one is written as what changed from the one after it:
//!
//! - the newest command in full: sequence, client tick and view tick as LEB128 varints,
//!   forward and right as f32, yaw and pitch as i16 steps of the angle grid
//!   ([`sightline_sim::angle_steps`]: a sanitized command's angles lie on it), buttons and
//!   weapon slot as bytes, the view fraction as u16;
//! - each older command as a byte of flags, then only the fields the flags name: the
//!   sequence and client-tick gaps when they are not 1, forward and right when changed,
//!   yaw and pitch as the zigzagged change in steps, buttons and slot together, the view
//!   time (tick difference, zigzag, and fraction).
//!
//! A command repeated unchanged costs one byte; turning the view costs two to four. Decoding
//! checks every count, gap and length, and takes varints only in their shortest form (one
//! encoding per packet), so no bytes make it allocate more than the packet
//! holds or produce a sequence of zero or out of order.

use crate::bytes::{Reader, put_f32, put_varint, put_zigzag};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sightline_sim::{Buttons, InputCmd, angle_of_steps, angle_steps};

/// Most commands an input packet may carry: half a second at 128 Hz, so that down to
/// 5 frames a second each packet still repeats the previous frame's commands.
pub const MAX_PACKET_CMDS: usize = 64;

/// Largest encoding of one command (flags, two gaps, two numbers, two angle changes,
/// buttons and slot, view).
pub(crate) const MAX_CMD_BYTES: usize = 1 + 5 + 5 + 8 + 3 + 3 + 2 + 5 + 2;

const SEQ_GAP: u8 = 1 << 0;
const TICK_GAP: u8 = 1 << 1;
const FORWARD: u8 = 1 << 2;
const RIGHT: u8 = 1 << 3;
const YAW: u8 = 1 << 4;
const PITCH: u8 = 1 << 5;
const BUTTONS: u8 = 1 << 6;
const VIEW: u8 = 1 << 7;

/// Which fields of `c` differ from `newer`, the command after it, as flag bits.
fn change_flags(newer: &InputCmd, c: &InputCmd) -> u8 {
    let mut flags = 0;
    let mut set = |bit: u8, changed: bool| {
        if changed {
            flags |= bit;
        }
    };
    set(SEQ_GAP, newer.seq.wrapping_sub(c.seq) != 1);
    set(TICK_GAP, newer.client_tick.wrapping_sub(c.client_tick) != 1);
    // Bit comparisons: -0.0 and NaN (refused on decode anyway) travel exactly.
    set(FORWARD, c.forward.to_bits() != newer.forward.to_bits());
    set(RIGHT, c.right.to_bits() != newer.right.to_bits());
    set(YAW, angle_steps(c.yaw) != angle_steps(newer.yaw));
    set(PITCH, angle_steps(c.pitch) != angle_steps(newer.pitch));
    set(
        BUTTONS,
        (c.buttons, c.weapon_slot) != (newer.buttons, newer.weapon_slot),
    );
    set(
        VIEW,
        (c.view_tick, c.view_frac) != (newer.view_tick, newer.view_frac),
    );
    flags
}

/// Encodes commands (newest first) as described in the module docs.
pub fn encode(cmds: &[InputCmd]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + cmds.len() * 4);
    out.push(cmds.len().min(u8::MAX as usize) as u8);
    let Some(first) = cmds.first() else {
        return out;
    };
    put_varint(&mut out, first.seq.into());
    put_varint(&mut out, first.client_tick.into());
    for v in [first.forward, first.right] {
        put_f32(&mut out, v);
    }
    for a in [first.yaw, first.pitch] {
        out.extend_from_slice(&angle_steps(a).to_le_bytes());
    }
    out.extend_from_slice(&[first.buttons.0, first.weapon_slot]);
    put_varint(&mut out, first.view_tick.into());
    out.extend_from_slice(&first.view_frac.to_le_bytes());
    for pair in cmds.windows(2) {
        let (newer, c) = (&pair[0], &pair[1]);
        let seq_gap = newer.seq.wrapping_sub(c.seq);
        let tick_gap = newer.client_tick.wrapping_sub(c.client_tick);
        let view_gap = c.view_tick.wrapping_sub(newer.view_tick) as i32;
        let flags = change_flags(newer, c);
        out.push(flags);
        if flags & SEQ_GAP != 0 {
            put_varint(&mut out, seq_gap.into());
        }
        if flags & TICK_GAP != 0 {
            put_varint(&mut out, tick_gap.into());
        }
        for (bit, v) in [(FORWARD, c.forward), (RIGHT, c.right)] {
            if flags & bit != 0 {
                put_f32(&mut out, v);
            }
        }
        for (bit, now, then) in [(YAW, c.yaw, newer.yaw), (PITCH, c.pitch, newer.pitch)] {
            if flags & bit != 0 {
                put_zigzag(
                    &mut out,
                    angle_steps(now).wrapping_sub(angle_steps(then)).into(),
                );
            }
        }
        if flags & BUTTONS != 0 {
            out.extend_from_slice(&[c.buttons.0, c.weapon_slot]);
        }
        if flags & VIEW != 0 {
            // Zigzag: small steps either way stay small.
            put_zigzag(&mut out, view_gap);
            out.extend_from_slice(&c.view_frac.to_le_bytes());
        }
    }
    out
}

/// `from` turned by `change` steps; a change past an i16's range (a second encoding of
/// a smaller one) is refused.
fn angle_changed(from: f32, change: i32) -> Result<f32, CmdsError> {
    let change = i16::try_from(change).map_err(|_| CmdsError("angle change out of range"))?;
    Ok(angle_of_steps(angle_steps(from).wrapping_add(change)))
}

/// Why encoded commands were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdsError(pub &'static str);

impl From<&'static str> for CmdsError {
    fn from(e: &'static str) -> Self {
        Self(e)
    }
}

/// Decodes what [`encode`] wrote: 1 to [`MAX_PACKET_CMDS`] commands, sequence numbers
/// non-zero and strictly decreasing, nothing left over.
pub fn decode(bytes: &[u8]) -> Result<Vec<InputCmd>, CmdsError> {
    let mut r = Reader(bytes);
    let count = r.byte()? as usize;
    if count == 0 || count > MAX_PACKET_CMDS {
        return Err(CmdsError("command count out of range"));
    }
    let mut cmds = Vec::with_capacity(count);
    let mut newer = InputCmd {
        seq: r.varint()?,
        client_tick: r.varint()?,
        forward: r.f32()?,
        right: r.f32()?,
        yaw: angle_of_steps(r.u16()? as i16),
        pitch: angle_of_steps(r.u16()? as i16),
        buttons: Buttons(r.byte()?),
        weapon_slot: r.byte()?,
        view_tick: r.varint()?,
        view_frac: r.u16()?,
    };
    if newer.seq == 0 {
        return Err(CmdsError("input sequence 0 is reserved"));
    }
    cmds.push(newer);
    for _ in 1..count {
        let flags = r.byte()?;
        let mut c = newer;
        let seq_gap = if flags & SEQ_GAP != 0 { r.varint()? } else { 1 };
        // Strictly older, and never down to the reserved 0.
        if seq_gap == 0 || seq_gap >= newer.seq {
            return Err(CmdsError("input sequence gap out of range"));
        }
        c.seq = newer.seq - seq_gap;
        let tick_gap = if flags & TICK_GAP != 0 {
            r.varint()?
        } else {
            1
        };
        c.client_tick = newer.client_tick.wrapping_sub(tick_gap);
        if flags & FORWARD != 0 {
            c.forward = r.f32()?;
        }
        if flags & RIGHT != 0 {
            c.right = r.f32()?;
        }
        if flags & YAW != 0 {
            c.yaw = angle_changed(newer.yaw, r.zigzag()?)?;
        }
        if flags & PITCH != 0 {
            c.pitch = angle_changed(newer.pitch, r.zigzag()?)?;
        }
        if flags & BUTTONS != 0 {
            c.buttons = Buttons(r.byte()?);
            c.weapon_slot = r.byte()?;
        }
        if flags & VIEW != 0 {
            let gap = r.zigzag()?;
            c.view_tick = newer.view_tick.wrapping_add(gap as u32);
            c.view_frac = r.u16()?;
        }
        // A flag must name a real change, or one packet would have two encodings.
        if flags != change_flags(&newer, &c) {
            return Err(CmdsError(
                "a command flagged as changed where nothing changed",
            ));
        }
        cmds.push(c);
        newer = c;
    }
    r.finish()?;
    Ok(cmds)
}

/// Serde glue: the commands travel as one byte string in the encoding above.
pub(crate) fn serialize<S: Serializer>(cmds: &[InputCmd], s: S) -> Result<S::Ok, S::Error> {
    encode(cmds).serialize(s)
}

/// Serde glue: reads the byte string and decodes it.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<InputCmd>, D::Error> {
    let bytes = Vec::<u8>::deserialize(d)?;
    decode(&bytes).map_err(|e| D::Error::custom(e.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(seq: u32) -> InputCmd {
        InputCmd {
            seq,
            client_tick: seq + 100,
            forward: 1.0,
            right: -0.5,
            yaw: angle_of_steps(angle_steps(0.25)),
            pitch: angle_of_steps(angle_steps(-0.1)),
            buttons: Buttons::JUMP,
            weapon_slot: 0,
            view_tick: 90,
            view_frac: 777,
        }
    }

    #[test]
    fn commands_round_trip_and_repeats_cost_one_byte() {
        let same: Vec<InputCmd> = (1..=32).rev().map(cmd).collect();
        let bytes = encode(&same);
        let newest = encode(&same[..1]).len();
        assert_eq!(bytes.len(), newest + 31, "one flag byte per older command");
        assert!(newest <= 1 + 26);
        assert_eq!(decode(&bytes), Ok(same.clone()));
        let mut turning = same;
        for (i, c) in turning.iter_mut().enumerate() {
            c.yaw = angle_of_steps(angle_steps(i as f32 * 0.01));
            c.pitch = angle_of_steps(angle_steps(-(i as f32) * 0.02));
            c.buttons = Buttons(i as u8 & 0b11111);
            c.view_frac = i as u16 * 3;
        }
        // Gaps other than one, in sequence and in client tick.
        for (i, c) in turning.iter_mut().enumerate() {
            c.seq = match i {
                0..5 => 100 - i as u32,
                5 => 90,
                _ => 95 - i as u32,
            };
            if i > 6 {
                c.client_tick = 7;
            }
        }
        assert_eq!(decode(&encode(&turning)), Ok(turning));
    }

    #[test]
    fn hostile_bytes_are_refused() {
        let good = encode(&[cmd(5), cmd(4)]);
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(decode(&trailing).is_err());
        let mut zero = good.clone();
        zero[0] = 0;
        assert!(decode(&zero).is_err(), "no commands");
        let mut many = good.clone();
        many[0] = MAX_PACKET_CMDS as u8 + 1;
        assert!(decode(&many).is_err(), "too many");
        // Older commands must stay above sequence 0: a gap of 5 from 5 is refused.
        let mut gap = encode(&[cmd(5)]);
        gap[0] = 2;
        gap.extend_from_slice(&[SEQ_GAP, 5]);
        assert!(decode(&gap).is_err());
        gap.truncate(gap.len() - 1);
        gap.push(4);
        assert_eq!(decode(&gap).unwrap()[1].seq, 1);
        // A flag that names no change (a gap of one, an equal number) is refused: every
        // packet has one encoding.
        gap.truncate(gap.len() - 1);
        gap.push(1);
        assert!(decode(&gap).is_err());
        let mut same = encode(&[cmd(5)]);
        same[0] = 2;
        same.push(FORWARD);
        same.extend_from_slice(&1.0f32.to_le_bytes());
        assert!(decode(&same).is_err());
        assert!(decode(&encode(&[cmd(0)])).is_err(), "sequence 0");
        // An angle change past an i16 would be a second encoding of a smaller one.
        let mut turn = encode(&[cmd(5)]);
        turn[0] = 2;
        turn.push(YAW);
        put_zigzag(&mut turn, 40_000);
        assert!(decode(&turn).is_err());
        // A varint of six bytes, or a fifth byte with high bits, is refused.
        assert!(decode(&[1, 0xff, 0xff, 0xff, 0xff, 0x7f]).is_err());
    }
}
