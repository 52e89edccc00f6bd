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
//! The links are a bit string ([`crate::bits`]). Each starts with its flags, which
//! repeat in runs (a player turning at 144 fps changes yaw and pitch every tick; at 60
//! fps a turn and a repeat alternate): `0` for the previous link's flags, `10` for those of
//! the link before it, else `11` and the eight flags. Then only the fields it flags, as
//! Exp-Golomb codes of the change less one where the flag already says "not zero":
//!
//! - the sequence gap when it is not 1;
//! - the client-tick gap when it differs from the sequence gap, zigzagged;
//! - forward and right, each as an f32, when changed;
//! - yaw and pitch as how far their change, in steps of the angle grid
//!   ([`sightline_sim::angle_steps`]: a sanitized command's angles lie on it), misses
//!   the angle's last change within the last eight links, zigzagged: a turn goes on at
//!   about the pace it went, frame after frame, so a steady turn costs four bits an
//!   angle where its change itself took ten or more (a second-order code);
//! - buttons and weapon slot together, eight bits each;
//! - the view time, when it is not the *anchor's* moved on by the client ticks since
//!   ([`predicted_view`]; the anchor is the newest earlier command whose view time was
//!   not held): a bit, then either nothing, for a view time *held* from the previous
//!   command (a frame's later ticks draw the same moment), or the zigzagged difference in
//!   steps of 1/256 tick ([`sightline_sim::VIEW_FRAC_STEP`]: a sanitized command's view
//!   time lies on them). Only a shot reads a view time, so the client moves a command's
//!   on with the ticks unless it shoots or lies more than [`VIEW_SLACK_STEPS`] away
//!   ([`follow_view`]); a shooting client's frames cost a bit for each held tick.
//!
//! A command repeated unchanged costs a bit; a turn, two or three bytes. The header is
//! the acknowledged snapshot, the base's offset (plus one; 0 for none) and the number of
//! links, as varints; the bit string runs to the end of the packet, its last byte padded
//! with zeros. Reading checks the form (counts, shortest codes, every flagged change a
//! real one where that can be told without the base, finite numbers, the flags in their
//! shortest form, zero padding); [`InputPacket::commands`] applies the chain to the base
//! and refuses any flag that names no change, so one list of commands has one encoding.

use crate::bits::{BitReader, BitWriter};
use crate::bytes::{Reader, put_varint, unzigzag, unzigzag64, zigzag, zigzag64};
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

/// Largest encoding of one link, bits rounded up to bytes: flags (10), two gaps (65
/// each at most), two numbers (64), two angle changes (33 each), buttons and slot (16),
/// view (a change of at most 41 bits zigzagged, 77).
const MAX_LINK_BYTES: usize = (10 + 65 + 65 + 64 + 33 + 33 + 16 + 77usize).div_ceil(8);

/// How far [`follow_view`] may move a command's view time from the moment drawn: two
/// ticks, in steps of 1/256 tick. Within a frame the client draws one
/// moment while its ticks move on, so at 60 fps its commands' view times fall behind the
/// ticks by up to two ticks before the next frame catches up; the server's bound on a
/// view time stepping back (`MAX_VIEW_STEP_BACK`, 50 ms) leaves room for that.
pub const VIEW_SLACK_STEPS: i64 = 2 * 256;

/// The buttons whose command fires, and so whose view time lag compensation reads.
const SHOOTING: Buttons = Buttons::FIRE.with(Buttons::ALT_FIRE);

/// `from`'s view time moved on by the client ticks from `from` to `c`, in steps of
/// [`VIEW_FRAC_STEP`]: what a link's view is written against, from its anchor.
fn predicted_view_steps(from: &InputCmd, c: &InputCmd) -> i64 {
    // Reinterpreted: a gap past the counter's wrap is a small negative one.
    let ticks = c.client_tick.wrapping_sub(from.client_tick) as i32;
    view_steps(from) + (i64::from(ticks) << 8)
}

/// `from`'s view time moved on by the client ticks from `from` to `c`, as `(view_tick,
/// view_frac)`; `None` outside the view time's range.
pub fn predicted_view(from: &InputCmd, c: &InputCmd) -> Option<(u32, u16)> {
    let steps = predicted_view_steps(from, c);
    (0..=MAX_VIEW_STEPS)
        .contains(&steps)
        .then(|| ((steps >> 8) as u32, (steps & 0xff) as u16 * VIEW_FRAC_STEP))
}

/// Gives `c`, the command after `prev`, the view time that costs least to send, when it
/// does not shoot and neither did `prev` (a shot, or a charge let go, is judged at the
/// moment drawn): `anchor`'s ([`view_anchor`]) moved on with the ticks when that lies
/// within [`VIEW_SLACK_STEPS`] of its own, else `prev`'s held when that does; else its
/// own.
pub fn follow_view(anchor: &InputCmd, prev: &InputCmd, c: &mut InputCmd) {
    if c.buttons.0 & SHOOTING.0 != 0 || prev.buttons.0 & SHOOTING.0 != 0 {
        return;
    }
    let own = view_steps(c);
    let moved = predicted_view_steps(anchor, c);
    let chosen = [moved, view_steps(prev)]
        .into_iter()
        .find(|v| (0..=MAX_VIEW_STEPS).contains(v) && (v - own).abs() <= VIEW_SLACK_STEPS);
    if let Some(v) = chosen {
        c.view_tick = (v >> 8) as u32;
        c.view_frac = (v & 0xff) as u16 * VIEW_FRAC_STEP;
    }
}

/// Whether `c`, the command after `prev`, holds `prev`'s view time rather than moving
/// on from `anchor`: then the anchor for the command after `c` stays `anchor`, else it
/// is `c`. The packet's links and [`follow_view`]'s callers keep the anchor alike.
pub fn view_anchor<'a>(anchor: &'a InputCmd, prev: &InputCmd, c: &'a InputCmd) -> &'a InputCmd {
    let view = view_steps(c);
    if view == view_steps(prev) && view != predicted_view_steps(anchor, c) {
        anchor
    } else {
        c
    }
}

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
    /// The view time is the previous command's (a frame's later ticks, which draw the
    /// same moment); only with [`VIEW`].
    held: bool,
    /// Otherwise, with [`VIEW`], the view time less the anchor's moved on by the client
    /// ticks ([`predicted_view_steps`]), in steps of [`VIEW_FRAC_STEP`]; never 0.
    view: i64,
}

impl Link {
    /// What changed from `prev` to the newer `c`; `anchor` is the newest command up to
    /// `prev` whose view time was not held ([`view_anchor`]).
    fn between(prev: &InputCmd, anchor: &InputCmd, c: &InputCmd) -> Self {
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
            held: view_steps(c) == view_steps(prev),
            view: view_steps(c) - predicted_view_steps(anchor, c),
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
        // Held or written, never both: a held view costs one bit.
        if link.flags & VIEW == 0 || link.held {
            link.view = 0;
        }
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
            held: keep(f, VIEW, self.held),
            view: keep(f, VIEW, self.view),
        }
    }

    /// The command after `prev` (with `anchor`, as in [`Link::between`]) this link
    /// describes; `None` when its sequence or view time would pass its range.
    fn apply(&self, prev: &InputCmd, anchor: &InputCmd) -> Option<InputCmd> {
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
        // Held, or the anchor's moved on with the ticks and by the change written if any.
        let view = match has(VIEW) && self.held {
            true => view_steps(prev),
            false => predicted_view_steps(anchor, &c).checked_add(self.view)?,
        };
        if !(0..=MAX_VIEW_STEPS).contains(&view) {
            return None;
        }
        c.view_tick = (view >> 8) as u32;
        c.view_frac = (view & 0xff) as u16 * VIEW_FRAC_STEP;
        Some(c)
    }

    /// Writes the link in `context`.
    fn write(&self, out: &mut BitWriter, context: &Context) {
        let has = |bit: u8| self.flags & bit != 0;
        let earlier = context.flags;
        if self.flags == earlier[0] {
            out.bit(false);
        } else if self.flags == earlier[1] {
            out.bits(0b10, 2);
        } else {
            out.bits(0b11, 2);
            out.bits(self.flags.into(), 8);
        }
        if has(SEQ_GAP) {
            // Never under 2 when flagged (a chain's sequence numbers rise).
            out.exp_golomb(u64::from(self.seq_gap).saturating_sub(2), 0);
        }
        if has(TICK_GAP) {
            out.exp_golomb(u64::from(zigzag(self.tick_offset)) - 1, 0);
        }
        for (bit, v) in [(FORWARD, self.forward), (RIGHT, self.right)] {
            if has(bit) {
                out.bits(v.to_bits().into(), 32);
            }
        }
        for (axis, (bit, v)) in [(YAW, self.yaw), (PITCH, self.pitch)]
            .into_iter()
            .enumerate()
        {
            if has(bit) {
                let miss = v.wrapping_sub(context.turn(axis));
                out.exp_golomb(zigzag(miss.into()).into(), ANGLE_ORDER);
            }
        }
        if has(BUTTONS) {
            out.bits(self.buttons.into(), 8);
            out.bits(self.slot.into(), 8);
        }
        if has(VIEW) {
            out.bit(!self.held);
            if !self.held {
                out.exp_golomb(zigzag64(self.view) - 1, VIEW_ORDER);
            }
        }
    }

    /// Reads a link in `context`, refusing what no encoder writes: flags not in their
    /// shortest form, a gap of 0 or 1 flagged, a zero change (no code for one, or for an
    /// angle a miss of its turn that comes to none), an angle code past an i16's, a
    /// number that is not finite, a weapon slot out of range.
    fn read(r: &mut BitReader, context: &Context) -> Result<Self, &'static str> {
        let earlier = context.flags;
        let flags = if !r.bit()? {
            earlier[0]
        } else if !r.bit()? {
            if earlier[1] == earlier[0] {
                return Err("input flags not in their shortest form");
            }
            earlier[1]
        } else {
            let flags = r.bits(8)? as u8;
            if earlier.contains(&flags) {
                return Err("input flags not in their shortest form");
            }
            flags
        };
        let mut link = Self {
            flags,
            ..Self::default()
        };
        let has = |bit: u8| flags & bit != 0;
        if has(SEQ_GAP) {
            link.seq_gap = r.exp_golomb(0, u64::from(u32::MAX) - 2)? as u32 + 2;
        }
        if has(TICK_GAP) {
            link.tick_offset = unzigzag(r.exp_golomb(0, u64::from(u32::MAX) - 1)? as u32 + 1);
        }
        if has(FORWARD) {
            link.forward = finite(f32::from_bits(r.bits(32)? as u32))?;
        }
        if has(RIGHT) {
            link.right = finite(f32::from_bits(r.bits(32)? as u32))?;
        }
        // An i16's zigzag is at most u16::MAX.
        let angle = |r: &mut BitReader, axis: usize| -> Result<i16, &'static str> {
            let miss = unzigzag(r.exp_golomb(ANGLE_ORDER, u16::MAX.into())? as u32) as i16;
            match miss.wrapping_add(context.turn(axis)) {
                0 => Err("a zero change flagged"),
                change => Ok(change),
            }
        };
        if has(YAW) {
            link.yaw = angle(r, 0)?;
        }
        if has(PITCH) {
            link.pitch = angle(r, 1)?;
        }
        if has(BUTTONS) {
            link.buttons = r.bits(8)? as u8;
            link.slot = r.bits(8)? as u8;
            if link.slot > WEAPON_SLOTS {
                return Err("weapon slot out of range");
            }
        }
        if has(VIEW) {
            link.held = !r.bit()?;
            if !link.held {
                // At most twice the view time's range either way, zigzagged: the most
                // negative change has no positive twin and is never read.
                let most = zigzag64(2 * MAX_VIEW_STEPS) - 1;
                link.view = unzigzag64(r.exp_golomb(VIEW_ORDER, most)? + 1);
            }
        }
        Ok(link)
    }
}

/// Exp-Golomb orders: an angle's miss of its turn by up to 16 steps (a third of a
/// degree) takes 4-6 bits; a view time's miss by up to a tick 10-16.
const ANGLE_ORDER: u32 = 3;
const VIEW_ORDER: u32 = 6;
/// Links after which an angle's last change no longer predicts its next: a turn goes on
/// across a frame's later ticks, which hold the angle (four at 30 fps), not past a pause.
const TURN_MEMORY: u8 = 8;

/// What a link is written against besides the command before it: the flags of the two
/// links before (0 before the first), and each angle's turn.
#[derive(Debug, Clone, Copy, Default)]
struct Context {
    flags: [u8; 2],
    /// Per angle (yaw, pitch), its last change in the chain and the links since.
    turns: [(i16, u8); 2],
}

impl Context {
    /// The change of angle `axis` (0 yaw, 1 pitch) a link that turns it is predicted to
    /// make: its last change, within [`TURN_MEMORY`] links, as a turn goes on at the pace
    /// it went (the mouse moves smoothly from one frame to the next); else none.
    fn turn(&self, axis: usize) -> i16 {
        let (change, since) = self.turns[axis];
        if since < TURN_MEMORY { change } else { 0 }
    }

    /// The context of the link after `link`.
    fn after(&self, link: &Link) -> Self {
        let turned = |(change, since): (i16, u8), now: i16| {
            if now != 0 {
                (now, 0)
            } else {
                (change, since.saturating_add(1))
            }
        };
        Self {
            flags: [link.flags, self.flags[0]],
            turns: [
                turned(self.turns[0], link.yaw),
                turned(self.turns[1], link.pitch),
            ],
        }
    }
}

fn finite(v: f32) -> Result<f32, &'static str> {
    if !v.is_finite() {
        return Err("input command holds NaN or infinity");
    }
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
        let mut anchor = prev;
        let mut links = Vec::with_capacity(cmds.len());
        for c in cmds.iter().rev() {
            links.push(Link::between(prev, anchor, c));
            anchor = view_anchor(anchor, prev, c);
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
        let mut anchor = prev;
        let mut cmds = Vec::with_capacity(self.links.len());
        for link in &self.links {
            let c = link
                .apply(&prev, &anchor)
                .ok_or(CmdsError("input sequence or view time out of range"))?;
            // A flag must name a real change, and a view written must not be the held
            // one, or one packet would have two encodings.
            let again = Link::between(&prev, &anchor, &c);
            if (again.flags, again.held) != (link.flags, link.held) {
                return Err(CmdsError(
                    "a command flagged as changed where nothing changed",
                ));
            }
            anchor = *view_anchor(&anchor, &prev, &c);
            cmds.push(c);
            prev = c;
        }
        cmds.reverse();
        Ok(cmds)
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.links.len() * 3);
        put_varint(&mut out, self.ack_snapshot.into());
        put_varint(&mut out, self.base_offset.map_or(0, |o| u64::from(o) + 1));
        put_varint(&mut out, self.links.len() as u64);
        let mut bits = BitWriter::default();
        let mut context = Context::default();
        for link in &self.links {
            link.write(&mut bits, &context);
            context = context.after(link);
        }
        out.extend(bits.finish());
        out
    }

    fn read(bytes: &[u8]) -> Result<Self, &'static str> {
        let mut r = Reader(bytes);
        let ack_snapshot = r.varint()?;
        let base_offset = match r.varint64()? {
            0 => None,
            n => Some(u32::try_from(n - 1).map_err(|_| "base offset out of range")?),
        };
        let count = r.varint()? as usize;
        if count == 0 {
            return Err("no commands");
        }
        if count > MAX_PACKET_CMDS {
            return Err("too many commands");
        }
        let mut bits = BitReader::new(r.0);
        let mut links = Vec::with_capacity(count);
        let mut context = Context::default();
        for _ in 0..count {
            let link = Link::read(&mut bits, &context)?;
            context = context.after(&link);
            links.push(link);
        }
        bits.finish()?;
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

    /// A command whose view time moves on with its client tick, as a client's does.
    fn cmd(seq: u32) -> InputCmd {
        InputCmd {
            client_tick: seq + 100,
            yaw: angle_of_steps(angle_steps(0.25)),
            pitch: angle_of_steps(angle_steps(-0.1)),
            weapon_slot: 0,
            view_tick: seq + 90,
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

    /// A packet by hand: acknowledging snapshot 3, no base, `count` links, then `bits`.
    fn raw(count: u8, bits: impl FnOnce(&mut BitWriter)) -> Vec<u8> {
        let mut w = BitWriter::default();
        bits(&mut w);
        let mut out = vec![3, 0, count];
        out.extend(w.finish());
        out
    }

    /// Flags written out in full (`11` and eight bits).
    fn flags(w: &mut BitWriter, f: u8) {
        w.bits(0b11, 2);
        w.bits(f.into(), 8);
    }

    #[test]
    fn commands_round_trip_and_repeats_cost_one_bit() {
        let same: Vec<InputCmd> = (1..=32).rev().map(cmd).collect();
        let full = plain(&same);
        let oldest = bytes(&plain(&same[31..])).len();
        assert!(
            bytes(&full).len() <= oldest + 4,
            "a bit per newer command: {} vs {oldest}",
            bytes(&full).len()
        );
        assert!(oldest <= 3 + 26);
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
        let base = cmd(40);
        let mut newest = cmd(44);
        newest.yaw = angle_of_steps(angle_steps(0.3));
        newest.view_tick += 1;
        let cmds = [newest, cmd(43), cmd(42), cmd(41)];
        let full = bytes(&plain(&cmds[..1]));
        // The acknowledged snapshot said 40 was simulated: the base is 0 back.
        let p = InputPacket::new(9, 40, Some(&base), &cmds);
        assert_eq!(bytes(&p)[1], 1, "an offset of 0, plus one");
        // Three repeats, then a turn and a view moved on by a tick more than the ticks:
        // a few bytes, far less than the newest command alone in full.
        assert!(
            bytes(&p).len() < full.len() / 2,
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

    /// 19 commands (0.15 s at 128 Hz, the window a packet repeats) of a player running and
    /// turning at `fps`, newest first, and the command before them (the base): each
    /// frame's turn on its first tick, the view time the moment the frame draws, moved on
    /// with the ticks as the client does unless it fires.
    fn a_window_at(fps: f64, firing: bool) -> (Vec<InputCmd>, InputCmd) {
        let ticks_per_frame = 128.0 / fps;
        let mut cmds: Vec<InputCmd> = Vec::new();
        let mut anchor = InputCmd::default();
        for i in 0..20u32 {
            let frame = (f64::from(i) / ticks_per_frame).floor();
            let drawn = 1000.0 + frame * ticks_per_frame - 9.3;
            let mut c = InputCmd {
                seq: 500 + i,
                client_tick: 2000 + i,
                forward: 1.0,
                yaw: angle_of_steps((frame * 37.0 + (frame * 0.7).sin() * 9.0) as i16),
                pitch: angle_of_steps((frame * -5.0) as i16),
                buttons: if firing {
                    Buttons::FIRE
                } else {
                    Buttons::default()
                },
                ..Default::default()
            };
            c.set_view_time(drawn);
            if let Some(prev) = cmds.last() {
                follow_view(&anchor, prev, &mut c);
                anchor = *view_anchor(&anchor, prev, &c);
            } else {
                anchor = c;
            }
            cmds.push(c);
        }
        let base = cmds.remove(0);
        cmds.reverse();
        (cmds, base)
    }

    #[test]
    fn a_window_of_turning_and_running_fits_in_a_few_dozen_bytes() {
        let size = |(cmds, base): &(Vec<InputCmd>, InputCmd)| {
            let p = InputPacket::new(3, base.seq, Some(base), cmds);
            assert_eq!(
                read(&bytes(&p)).unwrap().commands(Some(base)),
                Ok(cmds.clone())
            );
            bytes(&p).len()
        };
        // Measured: 28, 28 and 45 bytes; firing, 27, 39 and 65.
        for (fps, most, most_firing) in [(30.0, 30, 30), (60.0, 30, 42), (144.0, 48, 68)] {
            let n = size(&a_window_at(fps, false));
            // Firing, every command keeps the moment drawn: a frame's later ticks hold it
            // for a bit each, its first pays for how far the frame moved on.
            let shooting = size(&a_window_at(fps, true));
            eprintln!("{fps} fps: {n} bytes, {shooting} firing");
            assert!(n <= most, "{fps} fps: {n} bytes");
            assert!(
                shooting <= most_firing,
                "{fps} fps: {shooting} bytes firing"
            );
        }
    }

    #[test]
    fn a_view_time_moves_on_with_the_ticks_or_holds_unless_it_shoots() {
        // Anchor and previous command alike: a view a tick behind is moved on.
        let prev = cmd(10);
        let mut next = cmd(11);
        next.view_tick = prev.view_tick;
        follow_view(&prev, &prev, &mut next);
        assert_eq!(
            next.view_tick,
            prev.view_tick + 1,
            "a tick on, within slack"
        );
        assert!(std::ptr::eq(view_anchor(&prev, &prev, &next), &next));
        // Three ticks from the moved-on view, but two from the previous: held.
        let held_from = cmd(12);
        let mut held = cmd(13);
        held.view_tick = held_from.view_tick - 2;
        follow_view(&prev, &held_from, &mut held);
        assert_eq!(held.view_tick, held_from.view_tick, "held");
        assert!(std::ptr::eq(view_anchor(&prev, &held_from, &held), &prev));
        // Far from both: kept.
        let mut far = cmd(11);
        far.view_tick = prev.view_tick + 4;
        follow_view(&prev, &prev, &mut far);
        assert_eq!(far.view_tick, prev.view_tick + 4, "three ticks off: kept");
        let mut firing = cmd(11);
        firing.view_tick = prev.view_tick;
        firing.buttons = Buttons::ALT_FIRE;
        follow_view(&prev, &prev, &mut firing);
        assert_eq!(
            firing.view_tick, prev.view_tick,
            "a shot keeps the moment drawn"
        );
        // The command after a shot keeps its own too: a charge is let go on it.
        let mut after = cmd(12);
        after.view_tick = prev.view_tick;
        follow_view(&firing, &firing, &mut after);
        assert_eq!(after.view_tick, prev.view_tick);
        // A predicted view time outside the range is no prediction.
        let early = InputCmd {
            client_tick: 5,
            ..InputCmd::default()
        };
        let before = InputCmd {
            client_tick: 3,
            ..InputCmd::default()
        };
        assert_eq!(predicted_view(&early, &before), None);
    }

    #[test]
    fn hostile_bytes_are_refused() {
        let good = bytes(&plain(&[cmd(5), cmd(4)]));
        // Cut short anywhere, refused: the header counts the links.
        for cut in 0..good.len() {
            assert!(read(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut cut = InputPacket::encode(&plain(&[cmd(5), cmd(4)])).unwrap();
        cut.pop();
        assert!(InputPacket::decode(&cut).is_err());
        // A byte more, or a padding bit set.
        let mut longer = good.clone();
        longer.push(0);
        assert!(read(&longer).is_err());
        assert_eq!(read(&raw(1, |w| w.bit(false))).unwrap().len(), 1);
        assert!(read(&[3, 0, 1, 0b0000_0001]).is_err(), "padding bit set");
        // No commands, too many; as many as allowed.
        assert!(read(&[3, 0, 0]).is_err());
        let many = raw(MAX_PACKET_CMDS as u8 + 1, |w| {
            w.bits(0, MAX_PACKET_CMDS as u32 + 1)
        });
        assert!(read(&many).is_err(), "too many");
        let most = raw(MAX_PACKET_CMDS as u8, |w| w.bits(0, MAX_PACKET_CMDS as u32));
        assert_eq!(read(&most).unwrap().len(), MAX_PACKET_CMDS);
        // Flags written out that a shorter code names, or `10` for the same as `0`.
        assert!(read(&raw(1, |w| flags(w, 0))).is_err());
        assert!(read(&raw(1, |w| w.bits(0b10, 2))).is_err());
        assert!(
            read(&raw(2, |w| {
                flags(w, YAW);
                w.exp_golomb(5, ANGLE_ORDER);
                flags(w, YAW);
            }))
            .is_err()
        );
        // A flag naming no change is found when the chain is applied.
        let same = raw(1, |w| {
            flags(w, FORWARD);
            w.bits(0.0f32.to_bits().into(), 32);
        });
        assert!(read(&same).unwrap().commands(None).is_err());
        // Sequence numbers cannot pass the counter's range, nor view times theirs.
        let past = raw(1, |w| {
            flags(w, SEQ_GAP);
            w.exp_golomb(u64::from(u32::MAX) - 2, 0);
        });
        assert!(read(&past).unwrap().commands(None).is_err());
        let before_zero = raw(1, |w| {
            flags(w, VIEW);
            w.bit(true);
            // The first command's client tick is 1: a view time 300 steps before 1 tick.
            w.exp_golomb(zigzag64(-300) - 1, VIEW_ORDER);
        });
        assert!(read(&before_zero).unwrap().commands(None).is_err());
        let far_back = raw(1, |w| {
            flags(w, VIEW);
            w.bit(true);
            w.exp_golomb(zigzag64(2 * MAX_VIEW_STEPS) + 4, VIEW_ORDER);
        });
        assert!(read(&far_back).is_err());
        // A view time held from the previous command: valid where that is not the one
        // predicted (from nothing, or from a base, a tick on)...
        let held = raw(1, |w| {
            flags(w, VIEW);
            w.bit(false);
        });
        assert!(
            read(&held).unwrap().commands(None).is_ok(),
            "0 held, 1 tick on"
        );
        let base = cmd(7);
        let mut against_base = held.clone();
        against_base[1] = 1; // the base 0 back, plus one
        let mut still = cmd(8);
        still.view_tick = base.view_tick;
        assert_eq!(
            read(&against_base).unwrap().commands(Some(&base)),
            Ok(vec![still])
        );
        // ...refused where it is (no tick on: the client-tick gap one less than the
        // sequence gap), and a view written where it is the held one is refused too.
        let held_on_time = raw(1, |w| {
            flags(w, TICK_GAP | VIEW);
            w.exp_golomb(u64::from(zigzag(-1)) - 1, 0);
            w.bit(false);
        });
        assert!(read(&held_on_time).unwrap().commands(None).is_err());
        let written_as_held = raw(1, |w| {
            flags(w, VIEW);
            w.bit(true);
            // The view predicted for the first command is 256 steps (a tick); 0 is held.
            w.exp_golomb(zigzag64(-256) - 1, VIEW_ORDER);
        });
        assert!(read(&written_as_held).unwrap().commands(None).is_err());
        // Not finite, a slot out of range, an angle change past an i16.
        let nan = raw(1, |w| {
            flags(w, RIGHT);
            w.bits(f32::NAN.to_bits().into(), 32);
        });
        assert!(read(&nan).is_err());
        let slot = raw(1, |w| {
            flags(w, BUTTONS);
            w.bits(0, 8);
            w.bits((WEAPON_SLOTS + 1).into(), 8);
        });
        assert!(read(&slot).is_err());
        let turn = raw(1, |w| {
            flags(w, YAW);
            w.exp_golomb(u64::from(u16::MAX) + 1, ANGLE_ORDER);
        });
        assert!(read(&turn).is_err());
        // A turn of 5 steps, then a link flagged as turning that misses it by -5: no
        // change, which a link never flags.
        let no_turn = raw(2, |w| {
            flags(w, YAW);
            w.exp_golomb(zigzag(5).into(), ANGLE_ORDER);
            w.bit(false);
            w.exp_golomb(zigzag(-5).into(), ANGLE_ORDER);
        });
        assert_eq!(read(&no_turn), Err("a zero change flagged"));
        // A base offset past a u32, a varint of six bytes, or a fifth byte with high bits.
        let mut far = vec![3];
        put_varint(&mut far, u64::from(u32::MAX) + 2);
        far.extend_from_slice(&[1, 0]);
        assert!(read(&far).is_err());
        assert!(read(&[0xff, 0xff, 0xff, 0xff, 0x7f, 0, 1, 0]).is_err());
        // Any bytes at all: refused or read, never a panic.
        for soup in crate::bytes::byte_soup(11, 40) {
            if let Ok(p) = read(&soup) {
                let _ = p.commands(None);
            }
        }
    }
}
