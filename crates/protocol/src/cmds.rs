//! Input packets: the commands a client sends each frame, written against each other and
//! against a command the server already holds.
//!
//! A packet carries every command the server has not yet simulated, within a redundancy
//! window (up to [`MAX_PACKET_CMDS`]). Consecutive commands are mostly the same, so the
//! packet is a chain, oldest first: each command is written as what changed from the one
//! before it, and the oldest as what changed from the packet's *base*. The base is a
//! command of the client's that the server has received (the client learns which from
//! snapshots), so the newest command costs what changed since then rather than every
//! field. The packet names its base by how far it lies before the newest command the
//! acknowledged snapshot says the server simulated, which is usually the base itself: one
//! byte, however long the session. Without a base (as when a client starts) the chain
//! starts from the all-zero command, which writes the first command in full through the
//! same code.
//!
//! A link is a byte of flags, then only the fields it flags:
//!
//! - the sequence gap when it is not 1, as a LEB128 varint;
//! - the client-tick gap when it differs from the sequence gap, as the zigzagged
//!   difference;
//! - forward and right, each as an f32, when changed;
//! - yaw and pitch as the zigzagged change in steps of the angle grid
//!   ([`sightline_sim::angle_steps`]: a sanitized command's angles lie on it);
//! - buttons and weapon slot together, as two bytes;
//! - the view time, as the zigzagged change in steps of 1/256 tick
//!   ([`sightline_sim::VIEW_FRAC_STEP`]: a sanitized command's view time lies on them).
//!
//! A command repeated unchanged costs one byte; a frame's turn and view change three to
//! five. The header is the acknowledged snapshot and the base's offset (plus one; 0 for
//! none) as varints; the links run to the end of the packet's bytes. Reading checks the
//! form (counts, shortest varints, every flagged change a real one where that can be told
//! without the base, finite numbers); [`InputPacket::commands`] applies the chain to the
//! base and refuses any flag that names no change, so one list of commands has one
//! encoding.

use crate::bytes::{Reader, put_f32, put_varint, put_zigzag, unzigzag64, zigzag64};
use crate::codec::{DecodeError, Wire};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sightline_sim::{Buttons, InputCmd, VIEW_FRAC_STEP, WEAPON_SLOTS, angle_of_steps, angle_steps};

/// Most commands an input packet may carry: half a second at 128 Hz, so that down to
/// 5 frames a second each packet still repeats the previous frame's commands.
pub const MAX_PACKET_CMDS: usize = 64;

/// How far a base may lie behind the newest command its client has sent: the server keeps
/// the last this many commands it received from each client, by sequence, so a command
/// this far back cannot yet have been replaced by a newer one.
pub const INPUT_BASE_SPAN: u32 = 128;

/// Largest encoding of one link (flags, two gaps, two numbers, two angle changes,
/// buttons and slot, view).
const MAX_LINK_BYTES: usize = 1 + 5 + 5 + 8 + 3 + 3 + 2 + 6;

/// A command's view time in steps of [`VIEW_FRAC_STEP`]: 40 bits.
fn view_steps(c: &InputCmd) -> i64 {
    (i64::from(c.view_tick) << 8) | i64::from(c.view_frac / VIEW_FRAC_STEP)
}

/// Longest view time in steps: past a u32 of ticks.
const MAX_VIEW_STEPS: i64 = (1 << 40) - 1;

const SEQ_GAP: u8 = 1 << 0;
const TICK_GAP: u8 = 1 << 1;
const FORWARD: u8 = 1 << 2;
const RIGHT: u8 = 1 << 3;
const YAW: u8 = 1 << 4;
const PITCH: u8 = 1 << 5;
const BUTTONS: u8 = 1 << 6;
const VIEW: u8 = 1 << 7;

/// One link of the chain: what changed from the command before. Fields not flagged keep
/// their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Link {
    flags: u8,
    seq_gap: u32,
    /// The client-tick gap less the sequence gap.
    tick_offset: i32,
    forward: f32,
    right: f32,
    yaw: i16,
    pitch: i16,
    buttons: u8,
    slot: u8,
    /// The view time's change in steps of [`VIEW_FRAC_STEP`].
    view: i64,
}

impl Link {
    /// What changed from `prev` to the newer `c`.
    fn between(prev: &InputCmd, c: &InputCmd) -> Self {
        let seq_gap = c.seq.wrapping_sub(prev.seq);
        let tick_gap = c.client_tick.wrapping_sub(prev.client_tick);
        let mut link = Self {
            seq_gap,
            // Reinterpreted, not converted: any gap has an offset and comes back exactly.
            tick_offset: tick_gap.wrapping_sub(seq_gap) as i32,
            forward: c.forward,
            right: c.right,
            yaw: angle_steps(c.yaw).wrapping_sub(angle_steps(prev.yaw)),
            pitch: angle_steps(c.pitch).wrapping_sub(angle_steps(prev.pitch)),
            buttons: c.buttons.0,
            slot: c.weapon_slot,
            view: view_steps(c) - view_steps(prev),
            flags: 0,
        };
        let mut set = |bit: u8, changed: bool| {
            if changed {
                link.flags |= bit;
            }
        };
        set(SEQ_GAP, seq_gap != 1);
        set(TICK_GAP, link.tick_offset != 0);
        // Bit comparisons: -0.0 travels exactly.
        set(FORWARD, c.forward.to_bits() != prev.forward.to_bits());
        set(RIGHT, c.right.to_bits() != prev.right.to_bits());
        set(YAW, link.yaw != 0);
        set(PITCH, link.pitch != 0);
        set(
            BUTTONS,
            (c.buttons, c.weapon_slot) != (prev.buttons, prev.weapon_slot),
        );
        set(VIEW, link.view != 0);
        link.unflagged_cleared()
    }

    /// This link with the fields its flags leave out at their defaults, as they are
    /// when read: one link, one value.
    fn unflagged_cleared(self) -> Self {
        fn keep<T: Default>(flags: u8, bit: u8, v: T) -> T {
            if flags & bit != 0 { v } else { T::default() }
        }
        let f = self.flags;
        Self {
            flags: self.flags,
            seq_gap: keep(f, SEQ_GAP, self.seq_gap),
            tick_offset: keep(f, TICK_GAP, self.tick_offset),
            forward: keep(f, FORWARD, self.forward),
            right: keep(f, RIGHT, self.right),
            yaw: keep(f, YAW, self.yaw),
            pitch: keep(f, PITCH, self.pitch),
            buttons: keep(f, BUTTONS, self.buttons),
            slot: keep(f, BUTTONS, self.slot),
            view: keep(f, VIEW, self.view),
        }
    }

    /// The command after `prev` this link describes; `None` when its sequence would pass
    /// the counter's range.
    fn apply(&self, prev: &InputCmd) -> Option<InputCmd> {
        let has = |bit: u8| self.flags & bit != 0;
        let seq_gap = if has(SEQ_GAP) { self.seq_gap } else { 1 };
        let mut c = *prev;
        c.seq = prev.seq.checked_add(seq_gap)?;
        c.client_tick = prev
            .client_tick
            .wrapping_add(seq_gap)
            .wrapping_add(self.tick_offset as u32);
        if has(FORWARD) {
            c.forward = self.forward;
        }
        if has(RIGHT) {
            c.right = self.right;
        }
        if has(YAW) {
            c.yaw = angle_of_steps(angle_steps(prev.yaw).wrapping_add(self.yaw));
        }
        if has(PITCH) {
            c.pitch = angle_of_steps(angle_steps(prev.pitch).wrapping_add(self.pitch));
        }
        if has(BUTTONS) {
            c.buttons = Buttons(self.buttons);
            c.weapon_slot = self.slot;
        }
        if has(VIEW) {
            let view = view_steps(prev).checked_add(self.view)?;
            if !(0..=MAX_VIEW_STEPS).contains(&view) {
                return None;
            }
            c.view_tick = (view >> 8) as u32;
            c.view_frac = (view & 0xff) as u16 * VIEW_FRAC_STEP;
        }
        Some(c)
    }

    fn write(&self, out: &mut Vec<u8>) {
        let has = |bit: u8| self.flags & bit != 0;
        out.push(self.flags);
        if has(SEQ_GAP) {
            put_varint(out, self.seq_gap.into());
        }
        if has(TICK_GAP) {
            put_zigzag(out, self.tick_offset);
        }
        for (bit, v) in [(FORWARD, self.forward), (RIGHT, self.right)] {
            if has(bit) {
                put_f32(out, v);
            }
        }
        for (bit, v) in [(YAW, self.yaw), (PITCH, self.pitch)] {
            if has(bit) {
                put_zigzag(out, v.into());
            }
        }
        if has(BUTTONS) {
            out.extend_from_slice(&[self.buttons, self.slot]);
        }
        if has(VIEW) {
            put_varint(out, zigzag64(self.view));
        }
    }

    /// Reads a link, refusing what no encoder writes: a gap of 0 or 1 flagged, a zero
    /// change, an angle change past an i16, a number that is not finite, a weapon slot out
    /// of range.
    fn read(r: &mut Reader) -> Result<Self, &'static str> {
        let mut link = Self {
            flags: r.byte()?,
            ..Self::default()
        };
        let has = |bit: u8| link.flags & bit != 0;
        if has(SEQ_GAP) {
            link.seq_gap = r.varint()?;
            if link.seq_gap <= 1 {
                return Err("input sequence gap out of range");
            }
        }
        if has(TICK_GAP) {
            link.tick_offset = nonzero(r.zigzag()?)?;
        }
        if has(FORWARD) {
            link.forward = finite(r.f32()?)?;
        }
        if has(RIGHT) {
            link.right = finite(r.f32()?)?;
        }
        if has(YAW) {
            link.yaw = angle_change(r.zigzag()?)?;
        }
        if has(PITCH) {
            link.pitch = angle_change(r.zigzag()?)?;
        }
        if has(BUTTONS) {
            link.buttons = r.byte()?;
            link.slot = r.byte()?;
            if link.slot > WEAPON_SLOTS {
                return Err("weapon slot out of range");
            }
        }
        if has(VIEW) {
            link.view = unzigzag64(r.varint64()?);
            // Unsigned: the most negative change has no positive twin (a panic in a
            // build with overflow checks).
            if link.view == 0 || link.view.unsigned_abs() > MAX_VIEW_STEPS.unsigned_abs() {
                return Err("view time change out of range");
            }
        }
        Ok(link)
    }
}

fn nonzero(v: i32) -> Result<i32, &'static str> {
    if v == 0 {
        return Err("a change of zero flagged");
    }
    Ok(v)
}

fn finite(v: f32) -> Result<f32, &'static str> {
    if !v.is_finite() {
        return Err("input command holds NaN or infinity");
    }
    Ok(v)
}

/// A change past an i16's range would be a second encoding of a smaller one.
fn angle_change(v: i32) -> Result<i16, &'static str> {
    let v = i16::try_from(nonzero(v)?).map_err(|_| "angle change out of range")?;
    Ok(v)
}

/// Why an input packet's commands could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdsError(pub &'static str);

/// Inputs from a client, sent once per frame that made new commands, on the unreliable
/// channel, as a chain of changes (see the module docs). Reading checks its form;
/// [`Self::commands`] applies it to the base.
#[derive(Debug, Clone, PartialEq)]
pub struct InputPacket {
    /// Newest snapshot sequence the client has received (0 = none): the baseline a
    /// delta-compressing server may encode against.
    pub ack_snapshot: u32,
    /// How many commands the base lies before that snapshot's `ack_input_seq`
    /// ([`Self::base_seq`]); `None` when the chain starts from nothing.
    pub base_offset: Option<u32>,
    /// Oldest first.
    links: Vec<Link>,
}

impl InputPacket {
    /// A packet of `cmds` (newest first, sequence numbers falling, each above the base's),
    /// acknowledging snapshot `ack_snapshot`, which says `acked_seq` was the newest command
    /// simulated; written against `base` (or the all-zero command). The commands are
    /// sanitized ones: a view time off its steps would be cut to them.
    pub fn new(
        ack_snapshot: u32,
        acked_seq: u32,
        base: Option<&InputCmd>,
        cmds: &[InputCmd],
    ) -> Self {
        let zero = InputCmd::default();
        let mut prev = base.unwrap_or(&zero);
        let mut links = Vec::with_capacity(cmds.len());
        for c in cmds.iter().rev() {
            links.push(Link::between(prev, c));
            prev = c;
        }
        Self {
            ack_snapshot,
            base_offset: base.map(|b| acked_seq.wrapping_sub(b.seq)),
            links,
        }
    }

    /// The base's sequence number, given the acknowledged snapshot's `ack_input_seq`;
    /// `None` for a chain from nothing.
    pub fn base_seq(&self, acked_seq: u32) -> Option<u32> {
        self.base_offset.map(|o| acked_seq.wrapping_sub(o))
    }

    /// Commands carried.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether it carries none (never, once read).
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The commands, newest first, applied to `base`: the command numbered
    /// [`Self::base_seq`], or `None` for a chain from nothing. Refuses a missing or
    /// unwanted base, a flag that names no change, and a sequence past the counter's
    /// range.
    pub fn commands(&self, base: Option<&InputCmd>) -> Result<Vec<InputCmd>, CmdsError> {
        let mut prev = match (self.base_offset, base) {
            (None, None) => InputCmd::default(),
            (Some(_), Some(b)) if b.seq != 0 => *b,
            _ => return Err(CmdsError("not the packet's base")),
        };
        let mut cmds = Vec::with_capacity(self.links.len());
        for link in &self.links {
            let c = link
                .apply(&prev)
                .ok_or(CmdsError("input sequence or view time out of range"))?;
            // A flag must name a real change, or one packet would have two encodings.
            if Link::between(&prev, &c).flags != link.flags {
                return Err(CmdsError(
                    "a command flagged as changed where nothing changed",
                ));
            }
            cmds.push(c);
            prev = c;
        }
        cmds.reverse();
        Ok(cmds)
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.links.len() * 4);
        put_varint(&mut out, self.ack_snapshot.into());
        put_varint(&mut out, self.base_offset.map_or(0, |o| u64::from(o) + 1));
        for link in &self.links {
            link.write(&mut out);
        }
        out
    }

    fn read(bytes: &[u8]) -> Result<Self, &'static str> {
        let mut r = Reader(bytes);
        let ack_snapshot = r.varint()?;
        let base_offset = match r.varint64()? {
            0 => None,
            n => Some(u32::try_from(n - 1).map_err(|_| "base offset out of range")?),
        };
        let mut links = Vec::new();
        while !r.0.is_empty() {
            if links.len() == MAX_PACKET_CMDS {
                return Err("too many commands");
            }
            links.push(Link::read(&mut r)?);
        }
        if links.is_empty() {
            return Err("no commands");
        }
        Ok(Self {
            ack_snapshot,
            base_offset,
            links,
        })
    }
}

impl Wire for InputPacket {
    /// Its byte string's length, the header and the links.
    const MAX_BYTES: usize = 20 + MAX_PACKET_CMDS * MAX_LINK_BYTES;

    /// Its form is checked as it is read; its commands, as they are applied.
    fn validate(&self) -> Result<(), DecodeError> {
        Ok(())
    }
}

impl Serialize for InputPacket {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_bytes().serialize(s)
    }
}

impl<'de> Deserialize<'de> for InputPacket {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = Vec::<u8>::deserialize(d)?;
        Self::read(&bytes).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(seq: u32) -> InputCmd {
        InputCmd {
            client_tick: seq + 100,
            yaw: angle_of_steps(angle_steps(0.25)),
            pitch: angle_of_steps(angle_steps(-0.1)),
            weapon_slot: 0,
            view_tick: 90,
            view_frac: 3 * VIEW_FRAC_STEP,
            ..sightline_sim::test_support::wire_cmd(seq)
        }
    }

    /// A packet from nothing, acknowledging snapshot 3.
    fn plain(cmds: &[InputCmd]) -> InputPacket {
        InputPacket::new(3, 0, None, cmds)
    }

    fn bytes(p: &InputPacket) -> Vec<u8> {
        p.to_bytes()
    }

    fn read(bytes: &[u8]) -> Result<InputPacket, &'static str> {
        InputPacket::read(bytes)
    }

    #[test]
    fn commands_round_trip_and_repeats_cost_one_byte() {
        let same: Vec<InputCmd> = (1..=32).rev().map(cmd).collect();
        let full = plain(&same);
        let oldest = bytes(&plain(&same[31..])).len();
        assert_eq!(
            bytes(&full).len(),
            oldest + 31,
            "one flag byte per newer command"
        );
        assert!(oldest <= 2 + 26);
        assert_eq!(read(&bytes(&full)), Ok(full.clone()));
        assert_eq!(full.commands(None), Ok(same.clone()));
        let mut turning = same;
        for (i, c) in turning.iter_mut().enumerate() {
            c.yaw = angle_of_steps(angle_steps(i as f32 * 0.01));
            c.pitch = angle_of_steps(angle_steps(-(i as f32) * 0.02));
            c.buttons = Buttons(i as u8 & 0b11111);
            c.view_frac = i as u16 * VIEW_FRAC_STEP;
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
        let p = plain(&turning);
        assert_eq!(read(&bytes(&p)).unwrap().commands(None), Ok(turning));
    }

    #[test]
    fn a_base_the_server_holds_makes_the_newest_command_cheap() {
        let mut base = cmd(40);
        base.view_tick = 80;
        let mut newest = cmd(44);
        newest.yaw = angle_of_steps(angle_steps(0.3));
        newest.view_tick = 84;
        let cmds = [newest, cmd(43), cmd(42), cmd(41)];
        let full = bytes(&plain(&cmds[..1]));
        // The acknowledged snapshot said 40 was simulated: the base is 0 back.
        let p = InputPacket::new(9, 40, Some(&base), &cmds);
        assert_eq!(bytes(&p)[1], 1, "an offset of 0, plus one");
        // Flags, gap, a turn and a view change, and three repeats: less than the newest
        // command alone in full.
        assert!(
            bytes(&p).len() < full.len(),
            "{} vs {}",
            bytes(&p).len(),
            full.len()
        );
        let back = read(&bytes(&p)).unwrap();
        assert_eq!(back.base_seq(40), Some(40));
        assert_eq!(
            InputPacket::new(9, 43, Some(&base), &cmds).base_offset,
            Some(3)
        );
        assert_eq!(back.commands(Some(&base)), Ok(cmds.to_vec()));
        // No base for a packet that has one, or one for a packet without, is refused.
        assert!(back.commands(None).is_err());
        assert!(plain(&cmds).commands(Some(&base)).is_err());
    }

    #[test]
    fn hostile_bytes_are_refused() {
        let good = bytes(&plain(&[cmd(5), cmd(4)]));
        // Cut short, the links end early: refused, or (cut between links) fewer commands.
        // On the wire the byte string's length comes first, so a cut datagram is refused
        // before this.
        for cut in 0..good.len() {
            if let Ok(p) = read(&good[..cut]) {
                assert_eq!(p.len(), 1, "cut at {cut}");
            }
        }
        let mut cut = InputPacket::encode(&plain(&[cmd(5), cmd(4)])).unwrap();
        cut.pop();
        assert!(InputPacket::decode(&cut).is_err());
        // Header: ack 3, no base; then the links, to the end.
        assert!(read(&[3, 0]).is_err(), "no commands");
        let mut many = bytes(&plain(&[cmd(1)]));
        many.extend_from_slice(&[0; MAX_PACKET_CMDS]);
        assert!(read(&many).is_err(), "too many");
        many.pop();
        assert_eq!(read(&many).unwrap().len(), MAX_PACKET_CMDS);
        let one = || bytes(&plain(&[cmd(5)]));
        // A gap of one flagged, or of zero, is refused; so is a zero change.
        // The most negative view change (zigzagged: u64::MAX, ten bytes) has no positive
        // twin: refused, not negated (a panic in a build with overflow checks).
        let mut most_negative = vec![VIEW];
        most_negative.extend_from_slice(&[0xff; 9]);
        most_negative.push(0x01);
        for link in [
            vec![SEQ_GAP, 1],
            vec![SEQ_GAP, 0],
            vec![TICK_GAP, 0],
            vec![YAW, 0],
            most_negative,
        ] {
            let mut p = one();
            p.extend_from_slice(&link);
            assert!(read(&p).is_err(), "{link:?}");
        }
        // A flag naming no change is found when the chain is applied.
        let mut same = one();
        same.push(FORWARD);
        same.extend_from_slice(&1.0f32.to_le_bytes());
        assert!(read(&same).unwrap().commands(None).is_err());
        // Sequence numbers cannot pass the counter's range.
        let mut past = one();
        past.push(SEQ_GAP);
        put_varint(&mut past, u32::MAX.into());
        assert!(read(&past).unwrap().commands(None).is_err());
        // Not finite, a slot out of range, an angle change past an i16.
        let mut nan = one();
        nan.push(RIGHT);
        nan.extend_from_slice(&f32::NAN.to_le_bytes());
        assert!(read(&nan).is_err());
        let mut slot = one();
        slot.extend_from_slice(&[BUTTONS, 0, WEAPON_SLOTS + 1]);
        assert!(read(&slot).is_err());
        let mut turn = one();
        turn.push(YAW);
        put_zigzag(&mut turn, 40_000);
        assert!(read(&turn).is_err());
        // A base offset past a u32, a varint of six bytes, or a fifth byte with high bits.
        let mut far = vec![3];
        put_varint(&mut far, u64::from(u32::MAX) + 2);
        far.push(0);
        assert!(read(&far).is_err());
        assert!(read(&[0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0]).is_err());
    }
}
