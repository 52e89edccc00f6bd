//! Snapshots as they travel: each written as what changed since a snapshot the client has
//! acknowledged, its baseline (Quake 3's delta-compressed snapshots, on the integer grid
//! states lie on).
//!
//! A [`SnapshotPacket`] carries the header (its tick, time, acknowledged command and
//! repeat count counted from the baseline's), then the world against the baseline:
//!
//! - the ids of baseline players who are gone;
//! - for each player whose state differs from its reference, a head and then each
//!   changed field. The head is a varint: a mask of the changed fields (those that change
//!   as a player runs and turns first) above two bits that count the ids skipped since
//!   the player listed before (3: its id follows in a byte), so a runner listed after its
//!   neighbour takes a one-byte head. Each changed field is the zigzagged difference from
//!   the reference, wrapped to the field's width; view angles and velocities, which a
//!   snapshot shows coarsely to all but the player's own client
//!   ([`PlayerSnap::as_seen_by_others`]), travel in whole quanta when they are. A
//!   player's reference is its state in the baseline with its
//!   position carried, for the time between the two snapshots, at the mean of its
//!   baseline velocity and its new one: a player running straight costs nothing at all,
//!   and one speeding up or turning pays for the change of velocity, not again for the
//!   position it leads to. A player not in the baseline is referred to all zeros, which
//!   is also what a full snapshot (baseline 0) does for everyone;
//! - the projectiles in flight, each as what differs from its reference: its baseline
//!   self carried along its velocity (a rocket flies straight, so one in flight costs its
//!   id and a byte), or all zeros for one new to the client. Positions and velocities
//!   travel on a grid ([`ProjectileSnap::on_grid`]), so both ends reckon the reference
//!   alike;
//! - the item bits and the recipient's [`Touches`] when they changed;
//! - the recipient's unacknowledged events ([`EventSnap`]), each numbered by the gap from
//!   the one before and stamped with its age in ticks, which is small where its tick is not;
//! - the players held back for the client's `rate` ([`Snapshot::held`]), by id: each is a
//!   baseline player left at its reference, which the client does not draw from.
//!
//! Decoding checks every count, order and width and takes each number in its one
//! shortest form, so a packet has a single encoding; resolving it against the baseline
//! ([`SnapshotPacket::resolve`]) then checks the result as a whole
//! ([`Snapshot::validate`]). The server keeps what it sent to each client and encodes
//! against the newest snapshot that client acknowledged, if no more than
//! [`MAX_BASELINE_AGE`] back; the client keeps the last [`CLIENT_BASELINES`] it resolved
//! ([`SnapshotHistory`]) and acknowledges the newest.

use crate::bytes::{Reader, put_f32, put_varint, put_zigzag, unzigzag, zigzag};
use crate::codec::DecodeError;
use crate::coder::Coder;
use crate::messages::{
    DropSnap, EventSnap, FlagSpot, KIT_QUAD, KIT_REGEN, MAX_SNAPSHOT_DROPS, MAX_SNAPSHOT_EVENTS,
    MAX_SNAPSHOT_PLAYERS, MAX_SNAPSHOT_PROJECTILES, PlayerEvent, PlayerSnap, ProjectileSnap,
    Snapshot, Touches,
};
use bevy::prelude::Resource;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sightline_combat::{ProjectileKind, WeaponKind};
use sightline_movement::grid::{POS_STEPS, VEL_STEPS};
use sightline_sim::{Buttons, MAX_PITCH_STEPS, PlayerId};
use std::collections::VecDeque;
use std::sync::LazyLock;

/// Most snapshots back a server encodes against (half a second at 128 a second, a
/// whole one at 64): an older acknowledgement gets a full snapshot, which by then is
/// hardly larger. A 150 ms link's acknowledgements are some 25 snapshots old at 128 a
/// second, and an outage of a tenth of a second adds 13.
pub const MAX_BASELINE_AGE: u32 = 64;

/// Snapshots a client keeps to resolve deltas against: twice what a server may name, so
/// every baseline a server can pick is still held.
pub const CLIENT_BASELINES: usize = 128;

/// Longest time a position is carried along its velocity, microseconds: more than
/// [`MAX_BASELINE_AGE`] snapshots at 20 a second, and it keeps the product small. Both
/// ends clamp alike, so an older baseline only glides less far.
const MAX_GLIDE_US: u64 = 4_000_000;

/// A player's state as integer fields, in the order of their mask bits.
const FIELDS: usize = 18;

/// Each field's width in bits: differences wrap within it.
const WIDTH: [u32; FIELDS] = [
    32, 32, 16, 16, 16, 32, 16, 16, 16, 8, 8, 8, 8, 8, 8, 8, 8, 8,
];

/// Steps of a view angle others see a player's at: 1/1024 turn, 0.35 degrees (see
/// [`PlayerSnap::as_seen_by_others`]).
pub const OTHERS_ANGLE_STEP: i16 = 64;
/// Steps of velocity others see a player's at: 1/16 m/s.
pub const OTHERS_VEL_STEP: i16 = 16;

/// Each field's quantum: a change that is a whole number of them travels in them (the
/// fields others see coarsely; see [`put_change`]).
const QUANTUM: [i32; FIELDS] = {
    let (a, v) = (OTHERS_ANGLE_STEP as i32, OTHERS_VEL_STEP as i32);
    [1, 1, a, v, v, 1, a, v, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
};

/// Indices of the position fields, x, y, z, and of the velocity fields.
const POS: [usize; 3] = [0, 5, 1];
const VEL: [usize; 3] = [3, 7, 4];

/// Low bits of a changed player's head (its mask's varint) that say how many ids were
/// skipped since the last player listed, or [`ID_FOLLOWS`] when its id follows in a byte.
const ID_BITS: u32 = 2;
/// See [`ID_BITS`].
const ID_FOLLOWS: u16 = 3;

/// Bit set in the packet's flags when the item bits follow.
const HAS_ITEMS: u8 = 1;
/// Bit set in the packet's flags when dropped weapons follow (none: no bytes).
const HAS_DROPS: u8 = 2;
/// Bit set in the packet's flags when the recipient's [`Touches`] follow (sent only when
/// they differ from the baseline's: most snapshots carry none).
const HAS_TOUCHES: u8 = 4;
/// Bit set in the packet's flags when events follow (none: no bytes).
const HAS_EVENTS: u8 = 8;
/// Bit set in the packet's flags when held players follow (none: no bytes).
const HAS_HELD: u8 = 16;
/// Bit set in the packet's flags when the flags' places follow (sent only when they
/// differ from the baseline's).
const HAS_FLAGS: u8 = 32;
/// Largest encoding of the flags: whether played, then each flag's place and a position.
const MAX_FLAGS_BYTES: usize = 1 + 2 * (1 + 12);
/// Largest encoding of one event: number, age, kind, two ids and a damage, a position.
const MAX_EVENT_BYTES: usize = 5 + 5 + 1 + 2 + 3 + 12;
/// Largest encoding of one dropped weapon: id, weapon, position.
const MAX_DROP_BYTES: usize = 3 + 1 + 12;

/// Largest encoding of one changed player: head, id, every field.
const MAX_CHANGE_BYTES: usize = 3 + 1 + FIELDS * 5;
/// Largest encoding of one projectile: id, flags, six coordinates (each change within
/// [`MAX_PROJECTILE_CHANGE`]: four bytes), owner, kind.
const MAX_PROJECTILE_BYTES: usize = 3 + 1 + 6 * 4 + 1 + 1;

/// The projectile grid the server's rockets stay on ([`sightline_combat::Rocket::on_grid`]),
/// which snapshots carry exactly.
pub use sightline_combat::{
    MAX_PROJECTILE_POS_STEPS, MAX_PROJECTILE_VEL_STEPS, PROJECTILE_POS_STEPS, PROJECTILE_VEL_STEPS,
};
/// Largest change of a projectile coordinate from its reference, steps either way: from
/// one edge of the grid to a reference carried past the other (at most four seconds at
/// the top speed: one grid).
const MAX_PROJECTILE_CHANGE: i32 = 1 << 26;

/// The grid's limit for coordinate `i` of a projectile (position, then velocity).
fn projectile_limit(i: usize) -> i64 {
    if i < 3 {
        MAX_PROJECTILE_POS_STEPS
    } else {
        MAX_PROJECTILE_VEL_STEPS
    }
}
/// Projectile flag bits: a position axis changed (`<< axis`), a velocity axis changed
/// (`<< 3 + axis`), the owner, the kind.
const PROJECTILE_OWNER: u8 = 1 << 6;
/// See [`PROJECTILE_OWNER`].
const PROJECTILE_KIND: u8 = 1 << 7;

/// `p` as fields. Horizontal motion and yaw change every snapshot a player runs and
/// turns; they come first.
fn fields(p: &PlayerSnap) -> [i32; FIELDS] {
    [
        p.pos[0],
        p.pos[2],
        p.yaw.into(),
        p.vel[0].into(),
        p.vel[2].into(),
        p.pos[1],
        p.pitch.into(),
        p.vel[1].into(),
        p.ammo.into(),
        p.health.into(),
        p.flags.into(),
        p.intent[0].into(),
        p.intent[1].into(),
        p.held.0.into(),
        p.armor.into(),
        p.weapon.index() as i32,
        p.spawn_count.into(),
        p.kit.into(),
    ]
}

/// The player whose fields are `f` (each already within its width; `as` keeps the low
/// bits).
fn from_fields(id: PlayerId, f: &[i32; FIELDS]) -> Result<PlayerSnap, DecodeError> {
    let weapon = *WeaponKind::ALL
        .get(usize::from(f[15] as u8))
        .ok_or_else(|| DecodeError::Invalid("unknown weapon".into()))?;
    Ok(PlayerSnap {
        id,
        pos: [f[0], f[5], f[1]],
        vel: [f[3] as i16, f[7] as i16, f[4] as i16],
        yaw: f[2] as i16,
        pitch: f[6] as i16,
        ammo: f[8] as u16,
        health: f[9] as u8,
        flags: f[10] as u8,
        intent: [f[11] as i8, f[12] as i8],
        held: Buttons(f[13] as u8),
        armor: f[14] as u8,
        weapon,
        spawn_count: f[16] as u8,
        kit: f[17] as u8,
    })
}

/// `v` wrapped into a signed number of `bits` bits.
fn wrap(v: i64, bits: u32) -> i32 {
    ((v << (64 - bits)) >> (64 - bits)) as i32
}

/// Writes field change `d` for a field of quantum `q`: zigzagged, and for a quantum above
/// one, shifted left a bit, which is clear when `d` is a whole number of quanta (sent in
/// them) and set when not (sent in steps). A player others see coarsely thus pays for a
/// turn in quanta, one byte up to 31 of them; its own client's copy, exact, pays a bit.
fn put_change(out: &mut Vec<u8>, d: i32, q: i32) {
    if q == 1 {
        return put_zigzag(out, d);
    }
    let coded = if d % q == 0 {
        u64::from(zigzag(d / q)) << 1
    } else {
        (u64::from(zigzag(d)) << 1) | 1
    };
    put_varint(out, coded);
}

/// Reads what [`put_change`] wrote, refusing a whole number of quanta sent in steps.
fn read_change(r: &mut Reader, q: i32) -> Result<i32, &'static str> {
    if q == 1 {
        return r.zigzag();
    }
    let coded = r.varint64()?;
    let n = unzigzag(u32::try_from(coded >> 1).map_err(|_| "field change too large")?);
    if coded & 1 == 0 {
        return n.checked_mul(q).ok_or("field change too large");
    }
    if n % q == 0 {
        return Err("a whole number of quanta sent in steps");
    }
    Ok(n)
}

impl PlayerSnap {
    /// This player as a snapshot shows it to everyone but its own client: view angles on
    /// [`OTHERS_ANGLE_STEP`] and velocity on [`OTHERS_VEL_STEP`], rounded to the nearest.
    /// Only its own client predicts from its state, and that needs every step. Others
    /// draw a body's facing, which a third of a degree moves by 2.4 mm at its edge (a
    /// pixel at 3 m); and they follow its velocity only past the newest snapshot, for at
    /// most 100 ms, where 1/32 m/s is 3 mm. Positions stay exact. Turning and running
    /// then cost a byte a field where they cost two.
    ///
    /// What nobody else draws is not sent at all: the magazine, the armour and the
    /// weapons carried (only the power-ups' glow shows). A firing player would otherwise
    /// pay for every round in every snapshot, and an enemy's client would know when it
    /// has to reload.
    pub fn as_seen_by_others(mut self) -> Self {
        self.ammo = 0;
        self.armor = 0;
        self.kit &= KIT_QUAD | KIT_REGEN;
        let round = |v: i16, step: i16| {
            let step = i32::from(step);
            let v = (i32::from(v) + step / 2).div_euclid(step) * step;
            v.clamp(i32::from(i16::MIN), i32::from(i16::MAX) / step * step) as i16
        };
        // A yaw past the half turn wraps round to the other end.
        let half = OTHERS_ANGLE_STEP / 2;
        self.yaw = self.yaw.wrapping_add(half).div_euclid(OTHERS_ANGLE_STEP) * OTHERS_ANGLE_STEP;
        let max_pitch = MAX_PITCH_STEPS / OTHERS_ANGLE_STEP * OTHERS_ANGLE_STEP;
        self.pitch = round(self.pitch, OTHERS_ANGLE_STEP).clamp(-max_pitch, max_pitch);
        self.vel = self.vel.map(|v| round(v, OTHERS_VEL_STEP));
        self
    }
}

impl ProjectileSnap {
    /// This projectile as snapshots carry it: position on a grid of
    /// [`PROJECTILE_POS_STEPS`] a metre and velocity of [`PROJECTILE_VEL_STEPS`] a m/s,
    /// rounded to the nearest step, within the grid's range.
    pub fn on_grid(self) -> Self {
        let steps = projectile_steps(&self);
        projectile_of_steps(self.id, self.owner, self.kind, &steps)
    }

    /// The projectile at grid steps `pos` and `vel`, each clamped to the grid's range
    /// ([`MAX_PROJECTILE_POS_STEPS`], [`MAX_PROJECTILE_VEL_STEPS`]).
    pub fn from_grid(
        id: u16,
        owner: PlayerId,
        kind: ProjectileKind,
        pos: [i32; 3],
        vel: [i32; 3],
    ) -> Self {
        let steps = std::array::from_fn(|i| {
            let v = if i < 3 { pos[i] } else { vel[i - 3] };
            i64::from(v).clamp(-projectile_limit(i), projectile_limit(i))
        });
        projectile_of_steps(id, owner, kind, &steps)
    }
}

/// A projectile's position and velocity in grid steps.
fn projectile_steps(p: &ProjectileSnap) -> [i64; 6] {
    sightline_combat::projectile_steps(p.pos, p.vel)
}

/// The projectile at grid `steps` (each within its limit, so exact).
fn projectile_of_steps(
    id: u16,
    owner: PlayerId,
    kind: ProjectileKind,
    steps: &[i64; 6],
) -> ProjectileSnap {
    let (pos, vel) = sightline_combat::projectile_at_steps(steps);
    ProjectileSnap {
        id,
        kind,
        owner,
        pos,
        vel,
    }
}

/// What a projectile is expected to be: the baseline's projectile of the same id carried
/// along its velocity for `dt_us`, or all zeros (owner 0, the first kind) for one the
/// baseline lacks. Integer arithmetic only, so server and client agree exactly.
fn projectile_reference(
    id: u16,
    baseline: &[ProjectileSnap],
    dt_us: u64,
) -> (PlayerId, ProjectileKind, [i64; 6]) {
    let Some(b) = baseline.iter().find(|b| b.id == id) else {
        return (PlayerId(0), ProjectileKind::ALL[0], [0; 6]);
    };
    let mut steps = projectile_steps(b);
    let dt = dt_us.min(MAX_GLIDE_US) as i64;
    // Velocity steps times microseconds make position steps at this rate. Within i64:
    // 2^20 steps a second times 2^22 microseconds times 2^10.
    let per = PROJECTILE_VEL_STEPS as i64 * 1_000_000;
    for axis in 0..3 {
        // To the nearest step, halves away from zero, as the server's grid rounds.
        let moved = steps[axis + 3] * dt * PROJECTILE_POS_STEPS as i64;
        steps[axis] += moved.signum() * ((moved.abs() + per / 2) / per);
    }
    (b.owner, b.kind, steps)
}

/// How one projectile differs from its reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProjectileChange {
    /// Which projectile.
    pub id: u16,
    /// Which of its coordinates, owner and kind differ: a bit per coordinate, then the
    /// owner's and the kind's.
    flags: u8,
    /// Each coordinate's difference in grid steps; 0 where its flag is clear.
    deltas: [i32; 6],
    /// The owner and kind, when flagged.
    owner: PlayerId,
    kind: ProjectileKind,
}

impl ProjectileChange {
    /// How `p` differs from its reference in `baseline`.
    fn between(p: &ProjectileSnap, baseline: &[ProjectileSnap], dt_us: u64) -> Self {
        let (owner, kind, reference) = projectile_reference(p.id, baseline, dt_us);
        let now = projectile_steps(p);
        let mut change = Self {
            id: p.id,
            flags: 0,
            deltas: [0; 6],
            owner: p.owner,
            kind: p.kind,
        };
        for i in 0..6 {
            // Within i32: `now` lies in the grid's range, and the reference within
            // twice it (a position carried at most four seconds at the grid's top speed).
            let d = (now[i] - reference[i]) as i32;
            if d != 0 {
                change.flags |= 1 << i;
                change.deltas[i] = d;
            }
        }
        // Unflagged, the owner and kind are left at what reading leaves them.
        if p.owner != owner {
            change.flags |= PROJECTILE_OWNER;
        } else {
            change.owner = PlayerId(0);
        }
        if p.kind != kind {
            change.flags |= PROJECTILE_KIND;
        } else {
            change.kind = ProjectileKind::ALL[0];
        }
        change
    }

    /// The projectile this change describes against `baseline`, refusing a flag that
    /// names no change and a coordinate off the grid.
    fn apply(
        &self,
        baseline: &[ProjectileSnap],
        dt_us: u64,
    ) -> Result<ProjectileSnap, DecodeError> {
        let invalid = |what: &str| DecodeError::Invalid(what.into());
        let (mut owner, mut kind, mut steps) = projectile_reference(self.id, baseline, dt_us);
        if self.flags & PROJECTILE_OWNER != 0 {
            if self.owner == owner {
                return Err(invalid("a projectile's owner sent unchanged"));
            }
            owner = self.owner;
        }
        if self.flags & PROJECTILE_KIND != 0 {
            if self.kind == kind {
                return Err(invalid("a projectile's kind sent unchanged"));
            }
            kind = self.kind;
        }
        for (i, step) in steps.iter_mut().enumerate() {
            if self.flags & (1 << i) != 0 {
                *step += i64::from(self.deltas[i]);
            }
            if step.abs() > projectile_limit(i) {
                return Err(invalid("a projectile off the grid"));
            }
        }
        Ok(projectile_of_steps(self.id, owner, kind, &steps))
    }
}

/// What a player is expected to be: its baseline state, moved for the time between the
/// two snapshots at the mean of its baseline velocity and its new one (sent first, as a
/// change of velocity), which follows a runner that speeds up or turns to within a step
/// or two. Integer arithmetic only, so server and client agree exactly.
#[derive(Clone, Copy)]
struct Reference {
    fields: [i32; FIELDS],
    dt_us: i64,
}

impl Reference {
    /// `fields` with the position moved by the reference's glide, as if the velocity
    /// ends at `now`'s.
    fn glided(&self, mut fields: [i32; FIELDS], now: &[i32; FIELDS]) -> [i32; FIELDS] {
        for (axis, glide) in self.glide(now).into_iter().enumerate() {
            fields[POS[axis]] = fields[POS[axis]].wrapping_add(glide);
        }
        fields
    }

    /// The reference fields with the position moved as if the velocity ends at `now`'s.
    fn fields_moved(&self, now: &[i32; FIELDS]) -> [i32; FIELDS] {
        self.glided(self.fields, now)
    }

    /// What a player a delta leaves unlisted resolves to: the reference, moved at its
    /// own velocity.
    fn unchanged(&self) -> [i32; FIELDS] {
        self.fields_moved(&self.fields)
    }

    /// A player not in the baseline: all zeros, not moved.
    const NONE: Self = Self {
        fields: [0; FIELDS],
        dt_us: 0,
    };

    fn of(base: &PlayerSnap, dt_us: u64) -> Self {
        Self {
            fields: fields(base),
            dt_us: dt_us.min(MAX_GLIDE_US) as i64,
        }
    }

    /// How far the position moves, in steps, if the velocity ends at `vel`.
    fn glide(&self, vel: &[i32; FIELDS]) -> [i32; 3] {
        let per_vel = (POS_STEPS / VEL_STEPS) as i64;
        std::array::from_fn(|axis| {
            let sum = i64::from(self.fields[VEL[axis]]) + i64::from(vel[VEL[axis]]);
            (sum * per_vel * self.dt_us / 2_000_000) as i32
        })
    }
}

/// How one player differs from its reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayerChange {
    /// Which player.
    pub id: PlayerId,
    /// Bit `i` set when field `i` differs.
    mask: u32,
    /// Each field's difference, wrapped to its width; 0 where the mask bit is clear.
    deltas: [i32; FIELDS],
}

impl PlayerChange {
    /// How `now` differs from `reference`.
    fn between(id: PlayerId, reference: &Reference, now: &[i32; FIELDS]) -> Self {
        let mut change = Self {
            id,
            mask: 0,
            deltas: [0; FIELDS],
        };
        let reference = reference.fields_moved(now);
        for i in 0..FIELDS {
            let d = wrap(i64::from(now[i]) - i64::from(reference[i]), WIDTH[i]);
            if d != 0 {
                change.mask |= 1 << i;
                change.deltas[i] = d;
            }
        }
        change
    }

    /// `reference` with the change applied.
    fn apply(&self, reference: &Reference) -> [i32; FIELDS] {
        let now: [i32; FIELDS] = std::array::from_fn(|i| {
            wrap(
                i64::from(reference.fields[i]) + i64::from(self.deltas[i]),
                WIDTH[i],
            )
        });
        // Positions were sent against the reference moved at the new velocity.
        reference.glided(now, &now)
    }
}

/// A snapshot as it travels, encoded against a baseline the client acknowledged (see
/// the module docs). Decoding checks its form; [`Self::resolve`] turns it into the
/// [`Snapshot`] it describes.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotPacket {
    /// [`Snapshot::seq`].
    pub seq: u32,
    /// The snapshot this one is encoded against; 0 for a full snapshot.
    pub baseline: u32,
    /// [`Snapshot::server_tick`]; in a delta, the ticks since the baseline's (wrapping).
    pub server_tick: u32,
    /// [`Snapshot::server_time_us`]; in a delta, the time since the baseline's (wrapping).
    pub server_time_us: u64,
    /// [`Snapshot::ack_input_seq`]; in a delta, the commands since the baseline's
    /// (wrapping).
    pub ack_input_seq: u32,
    /// [`Snapshot::input_queue`].
    pub input_queue: u8,
    /// [`Snapshot::repeated_inputs`]; in a delta, the repeats since the baseline's
    /// (wrapping).
    pub repeated_inputs: u32,
    /// [`Snapshot::touches`], when they differ from the baseline's.
    pub touches: Option<Touches>,
    /// [`Snapshot::server_tick_us`].
    pub server_tick_us: u32,
    /// Baseline players no longer present, in id order.
    pub removed: Vec<PlayerId>,
    /// Players that differ from their reference, in id order.
    pub changed: Vec<PlayerChange>,
    /// [`Snapshot::projectiles`], each as it differs from its reference.
    pub projectiles: Vec<ProjectileChange>,
    /// [`Snapshot::items`] when they differ from the baseline's.
    pub items: Option<u64>,
    /// [`Snapshot::drops`], in full.
    pub drops: Vec<DropSnap>,
    /// [`Snapshot::flags`] when they differ from the baseline's.
    pub flags: Option<Option<[FlagSpot; 2]>>,
    /// [`Snapshot::events`], each `tick` given as the ticks before the snapshot's
    /// (wrapping).
    pub events: Vec<EventSnap>,
    /// [`Snapshot::held`]: baseline players left at their reference, which the client
    /// must not take for a measurement.
    pub held: Vec<PlayerId>,
}

/// The header numbers a delta counts from: the baseline's, or zeros.
#[derive(Default)]
struct Header {
    server_tick: u32,
    server_time_us: u64,
    ack_input_seq: u32,
    repeated_inputs: u32,
}

impl Header {
    fn of(baseline: Option<&Snapshot>) -> Self {
        baseline.map_or_else(Self::default, |b| Self {
            server_tick: b.server_tick,
            server_time_us: b.server_time_us,
            ack_input_seq: b.ack_input_seq,
            repeated_inputs: b.repeated_inputs,
        })
    }
}

/// Time from `baseline`'s snapshot to `now`'s, microseconds (0 if it runs backwards).
fn glide_us(baseline: Option<&Snapshot>, now_us: u64) -> u64 {
    baseline.map_or(0, |b| now_us.saturating_sub(b.server_time_us))
}

impl SnapshotPacket {
    /// Largest encoding: the header, every player removed or changed in full, every
    /// rocket, the items.
    pub const MAX_BYTES: usize = 5
        + 1
        + 5
        + 10
        + 5
        + 1
        + 5
        + 1
        + 5
        + 1
        + 5
        + 10
        + (1 + MAX_SNAPSHOT_PLAYERS)
        + (1 + MAX_SNAPSHOT_PLAYERS * MAX_CHANGE_BYTES)
        + (1 + MAX_SNAPSHOT_PROJECTILES * MAX_PROJECTILE_BYTES)
        + 10
        + (1 + MAX_SNAPSHOT_DROPS * MAX_DROP_BYTES)
        + MAX_FLAGS_BYTES
        + (1 + MAX_SNAPSHOT_EVENTS * MAX_EVENT_BYTES)
        + (1 + MAX_SNAPSHOT_PLAYERS);

    /// `snapshot` as changes from `baseline` (`None`: in full). The baseline must be a
    /// snapshot sent to the same client; its sequence number goes in the packet.
    pub fn encode(snapshot: &Snapshot, baseline: Option<&Snapshot>) -> Self {
        let dt = glide_us(baseline, snapshot.server_time_us);
        let header = Header::of(baseline);
        let base_players = baseline.map_or(&[][..], |b| &b.players[..]);
        let mut removed = Vec::new();
        let mut changed = Vec::with_capacity(snapshot.players.len());
        let mut old = base_players.iter().peekable();
        let mut held = Vec::new();
        for p in &snapshot.players {
            while let Some(gone) = old.next_if(|b| b.id < p.id) {
                removed.push(gone.id);
            }
            let (reference, in_baseline) = match old.next_if(|b| b.id == p.id) {
                Some(b) => (Reference::of(b, dt), true),
                None => (Reference::NONE, false),
            };
            // A held player goes as its reference; only one the client holds can be.
            if in_baseline && snapshot.held.binary_search(&p.id).is_ok() {
                held.push(p.id);
                continue;
            }
            let change = PlayerChange::between(p.id, &reference, &fields(p));
            // A baseline player unchanged is left out; a new one is always listed.
            if change.mask != 0 || !in_baseline {
                changed.push(change);
            }
        }
        removed.extend(old.map(|b| b.id));
        let base_items = baseline.map_or(0, |b| b.items);
        let base_flags = baseline.and_then(|b| b.flags);
        let base_touches = baseline.map_or_else(Touches::default, |b| b.touches);
        let base_projectiles = baseline.map_or(&[][..], |b| &b.projectiles[..]);
        Self {
            seq: snapshot.seq,
            baseline: baseline.map_or(0, |b| b.seq),
            server_tick: snapshot.server_tick.wrapping_sub(header.server_tick),
            server_time_us: snapshot.server_time_us.wrapping_sub(header.server_time_us),
            ack_input_seq: snapshot.ack_input_seq.wrapping_sub(header.ack_input_seq),
            input_queue: snapshot.input_queue,
            repeated_inputs: snapshot
                .repeated_inputs
                .wrapping_sub(header.repeated_inputs),
            touches: (snapshot.touches != base_touches).then_some(snapshot.touches),
            server_tick_us: snapshot.server_tick_us,
            removed,
            changed,
            projectiles: snapshot
                .projectiles
                .iter()
                .map(|p| ProjectileChange::between(p, base_projectiles, dt))
                .collect(),
            items: (snapshot.items != base_items).then_some(snapshot.items),
            drops: snapshot.drops.clone(),
            flags: (snapshot.flags != base_flags).then_some(snapshot.flags),
            events: flip_ages(&snapshot.events, snapshot.server_tick),
            held,
        }
    }

    /// The snapshot this packet describes, given its baseline (`None` when
    /// [`Self::baseline`] is 0), checked as a whole.
    pub fn resolve(&self, baseline: Option<&Snapshot>) -> Result<Snapshot, DecodeError> {
        let invalid = |what: &str| DecodeError::Invalid(what.into());
        let baseline = match (self.baseline, baseline) {
            (0, _) => None,
            (seq, Some(b)) if b.seq == seq => Some(b),
            _ => return Err(invalid("delta snapshot resolved without its baseline")),
        };
        let header = Header::of(baseline);
        let server_time_us = header.server_time_us.wrapping_add(self.server_time_us);
        let dt = glide_us(baseline, server_time_us);
        let base_players = baseline.map_or(&[][..], |b| &b.players[..]);
        let mut players = Vec::with_capacity(base_players.len() + self.changed.len());
        let mut changes = self.changed.iter().peekable();
        let mut removed = self.removed.iter().peekable();
        for b in base_players {
            while let Some(c) = changes.next_if(|c| c.id < b.id) {
                players.push(from_fields(c.id, &c.apply(&Reference::NONE))?);
            }
            if removed.next_if(|&&id| id == b.id).is_some() {
                continue;
            }
            let reference = Reference::of(b, dt);
            let state = match changes.next_if(|c| c.id == b.id) {
                // One encoding: an unchanged baseline player is left out, not listed.
                Some(c) if c.mask == 0 => return Err(invalid("a player listed unchanged")),
                Some(c) => c.apply(&reference),
                None => reference.unchanged(),
            };
            players.push(from_fields(b.id, &state)?);
        }
        for c in changes {
            players.push(from_fields(c.id, &c.apply(&Reference::NONE))?);
        }
        if removed.next().is_some() {
            return Err(invalid("a removed player was not in the baseline"));
        }
        // A held player is a baseline player left at its reference: neither listed as
        // changed nor removed.
        for id in &self.held {
            let kept = base_players.binary_search_by_key(id, |b| b.id).is_ok()
                && !self.removed.contains(id);
            if !kept || self.changed.iter().any(|c| c.id == *id) {
                return Err(invalid("a held player the client does not hold as it is"));
            }
        }
        let base_projectiles = baseline.map_or(&[][..], |b| &b.projectiles[..]);
        let base_items = baseline.map_or(0, |b| b.items);
        if self.items == Some(base_items) {
            return Err(invalid("item bits sent unchanged"));
        }
        let base_touches = baseline.map_or_else(Touches::default, |b| b.touches);
        if self.touches == Some(base_touches) {
            return Err(invalid("touches sent unchanged"));
        }
        let server_tick = header.server_tick.wrapping_add(self.server_tick);
        let snapshot = Snapshot {
            seq: self.seq,
            baseline: self.baseline,
            server_tick,
            server_time_us,
            ack_input_seq: header.ack_input_seq.wrapping_add(self.ack_input_seq),
            input_queue: self.input_queue,
            repeated_inputs: header.repeated_inputs.wrapping_add(self.repeated_inputs),
            touches: self.touches.unwrap_or(base_touches),
            server_tick_us: self.server_tick_us,
            players,
            projectiles: self
                .projectiles
                .iter()
                .map(|p| p.apply(base_projectiles, dt))
                .collect::<Result<_, _>>()?,
            items: self.items.unwrap_or(base_items),
            drops: self.drops.clone(),
            flags: self.flags.unwrap_or_else(|| baseline.and_then(|b| b.flags)),
            events: flip_ages(&self.events, server_tick),
            held: self.held.clone(),
        };
        snapshot.validate()?;
        Ok(snapshot)
    }

    /// The bytes described in the module docs.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.changed.len() * 8);
        let gap = if self.baseline == 0 {
            0
        } else {
            self.seq.wrapping_sub(self.baseline)
        };
        for v in [self.seq, gap, self.server_tick] {
            put_varint(&mut out, v.into());
        }
        put_varint(&mut out, self.server_time_us);
        put_varint(&mut out, self.ack_input_seq.into());
        out.push(self.input_queue);
        put_varint(&mut out, self.repeated_inputs.into());
        put_varint(&mut out, self.server_tick_us.into());
        let items = if self.items.is_some() { HAS_ITEMS } else { 0 };
        let drops = if self.drops.is_empty() { 0 } else { HAS_DROPS };
        let touches = if self.touches.is_some() {
            HAS_TOUCHES
        } else {
            0
        };
        let events = if self.events.is_empty() {
            0
        } else {
            HAS_EVENTS
        };
        let held = if self.held.is_empty() { 0 } else { HAS_HELD };
        let flags = if self.flags.is_some() { HAS_FLAGS } else { 0 };
        out.push(items | drops | touches | events | held | flags);
        if let Some(t) = self.touches {
            out.extend([
                t.own_pushes,
                t.pushes,
                t.contacts,
                t.contact_with.0,
                t.held,
                t.owed,
            ]);
        }
        put_varint(&mut out, self.removed.len() as u64);
        out.extend(self.removed.iter().map(|id| id.0));
        put_varint(&mut out, self.changed.len() as u64);
        let mut next_id = 0u16;
        for c in &self.changed {
            // The id's distance past the one expected shares the mask's varint: a player
            // listed right after another (or up to two skipped) costs no byte of id.
            // Out of order (a snapshot no server sends) is written out, and refused when read.
            let skip = u16::from(c.id.0)
                .checked_sub(next_id)
                .map_or(ID_FOLLOWS, |s| s.min(ID_FOLLOWS));
            put_varint(&mut out, (u64::from(c.mask) << ID_BITS) | u64::from(skip));
            if skip == ID_FOLLOWS {
                out.push(c.id.0);
            }
            next_id = u16::from(c.id.0) + 1;
            for (i, d) in c.deltas.iter().enumerate() {
                if c.mask & (1 << i) != 0 {
                    put_change(&mut out, *d, QUANTUM[i]);
                }
            }
        }
        put_varint(&mut out, self.projectiles.len() as u64);
        for p in &self.projectiles {
            put_varint(&mut out, p.id.into());
            out.push(p.flags);
            for (i, d) in p.deltas.iter().enumerate() {
                if p.flags & (1 << i) != 0 {
                    put_zigzag(&mut out, *d);
                }
            }
            if p.flags & PROJECTILE_OWNER != 0 {
                out.push(p.owner.0);
            }
            if p.flags & PROJECTILE_KIND != 0 {
                out.push(p.kind.index() as u8);
            }
        }
        if let Some(items) = self.items {
            put_varint(&mut out, items);
        }
        if !self.drops.is_empty() {
            put_varint(&mut out, self.drops.len() as u64);
            for d in &self.drops {
                put_varint(&mut out, d.id.into());
                out.push(d.weapon.index() as u8);
                for v in d.pos {
                    put_f32(&mut out, v);
                }
            }
        }
        if let Some(flags) = self.flags {
            put_flags(&mut out, flags);
        }
        if !self.events.is_empty() {
            put_events(&mut out, &self.events);
        }
        if !self.held.is_empty() {
            put_varint(&mut out, self.held.len() as u64);
            out.extend(self.held.iter().map(|id| id.0));
        }
        out
    }

    /// Reads what [`Self::to_bytes`] wrote, refusing every other form.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::read(&mut Reader(bytes)).map_err(|e| DecodeError::Malformed(format!("snapshot: {e}")))
    }

    fn read(r: &mut Reader) -> Result<Self, &'static str> {
        let seq = r.varint()?;
        if seq == 0 {
            return Err("sequence 0 is reserved");
        }
        let gap = r.varint()?;
        if gap as usize > CLIENT_BASELINES {
            return Err("baseline further back than a client keeps");
        }
        let baseline = if gap == 0 { 0 } else { seq.wrapping_sub(gap) };
        if gap != 0 && baseline == 0 {
            return Err("baseline 0 named as a delta");
        }
        let server_tick = r.varint()?;
        let server_time_us = r.varint64()?;
        let ack_input_seq = r.varint()?;
        let input_queue = r.byte()?;
        let repeated_inputs = r.varint()?;
        let server_tick_us = r.varint()?;
        let flags = r.byte()?;
        if flags & !(HAS_ITEMS | HAS_DROPS | HAS_TOUCHES | HAS_EVENTS | HAS_HELD | HAS_FLAGS) != 0 {
            return Err("unknown flags");
        }
        let touches = if flags & HAS_TOUCHES != 0 {
            Some(Touches {
                own_pushes: r.byte()?,
                pushes: r.byte()?,
                contacts: r.byte()?,
                contact_with: PlayerId(r.byte()?),
                held: r.byte()?,
                owed: r.byte()?,
            })
        } else {
            None
        };
        let removed = read_ids(r)?;
        let count = read_count(r, MAX_SNAPSHOT_PLAYERS)?;
        let mut changed: Vec<PlayerChange> = Vec::with_capacity(count);
        let mut next_id = 0u16;
        for _ in 0..count {
            let head = r.varint()?;
            let (mask, skip) = (head >> ID_BITS, (head & u32::from(ID_FOLLOWS)) as u16);
            let id = if skip < ID_FOLLOWS {
                next_id + skip
            } else {
                let id = u16::from(r.byte()?);
                // One encoding: an id the head could have given is not written out.
                if id < next_id + ID_FOLLOWS {
                    return Err("players not in increasing id order, or an id written out");
                }
                id
            };
            let id = PlayerId(u8::try_from(id).map_err(|_| "player id past 255")?);
            next_id = u16::from(id.0) + 1;
            if mask >> FIELDS != 0 {
                return Err("unknown fields");
            }
            let mut deltas = [0; FIELDS];
            for (i, d) in deltas.iter_mut().enumerate() {
                if mask & (1 << i) == 0 {
                    continue;
                }
                *d = read_change(r, QUANTUM[i])?;
                // One encoding: no zero change, and nothing past the field's width.
                if *d == 0 || wrap((*d).into(), WIDTH[i]) != *d {
                    return Err("a field change of zero or past its width");
                }
            }
            changed.push(PlayerChange { id, mask, deltas });
        }
        if removed.iter().any(|id| changed.iter().any(|c| c.id == *id)) {
            return Err("a player both removed and changed");
        }
        let count = read_count(r, MAX_SNAPSHOT_PROJECTILES)?;
        let mut projectiles = Vec::with_capacity(count);
        for _ in 0..count {
            let id = u16::try_from(r.varint()?).map_err(|_| "projectile id too large")?;
            let flags = r.byte()?;
            let mut deltas = [0; 6];
            for (i, d) in deltas.iter_mut().enumerate() {
                if flags & (1 << i) != 0 {
                    *d = r.zigzag()?;
                    if *d == 0 {
                        return Err("a projectile coordinate flagged unchanged");
                    }
                    if d.unsigned_abs() > MAX_PROJECTILE_CHANGE as u32 {
                        return Err("a projectile coordinate changed off the grid");
                    }
                }
            }
            let owner = match flags & PROJECTILE_OWNER {
                0 => PlayerId(0),
                _ => PlayerId(r.byte()?),
            };
            let kind = match flags & PROJECTILE_KIND {
                0 => ProjectileKind::ALL[0],
                _ => *ProjectileKind::ALL
                    .get(usize::from(r.byte()?))
                    .ok_or("unknown projectile kind")?,
            };
            projectiles.push(ProjectileChange {
                id,
                flags,
                deltas,
                owner,
                kind,
            });
        }
        let items = if flags & HAS_ITEMS != 0 {
            Some(r.varint64()?)
        } else {
            None
        };
        let drops = if flags & HAS_DROPS != 0 {
            read_drops(r)?
        } else {
            Vec::new()
        };
        let flag_spots = if flags & HAS_FLAGS != 0 {
            Some(read_flags(r)?)
        } else {
            None
        };
        let events = if flags & HAS_EVENTS != 0 {
            read_events(r)?
        } else {
            Vec::new()
        };
        let held = if flags & HAS_HELD != 0 {
            let count = read_count(r, MAX_SNAPSHOT_PLAYERS)?;
            if count == 0 {
                return Err("the held flag with none");
            }
            let held: Vec<PlayerId> = (0..count)
                .map(|_| r.byte().map(PlayerId))
                .collect::<Result<_, _>>()?;
            if held.windows(2).any(|w| w[1] <= w[0]) {
                return Err("held players not in increasing id order");
            }
            held
        } else {
            Vec::new()
        };
        r.finish()?;
        Ok(Self {
            seq,
            baseline,
            server_tick,
            server_time_us,
            ack_input_seq,
            input_queue,
            repeated_inputs,
            touches,
            server_tick_us,
            removed,
            changed,
            projectiles,
            items,
            drops,
            flags: flag_spots,
            events,
            held,
        })
    }
}

/// Writes the flags' places: 0 when capture the flag is not played; else 1, then for
/// each flag 0 (home), 1 and a player id (carried) or 2 and a position (dropped).
fn put_flags(out: &mut Vec<u8>, flags: Option<[FlagSpot; 2]>) {
    let Some(spots) = flags else {
        out.push(0);
        return;
    };
    out.push(1);
    for spot in spots {
        match spot {
            FlagSpot::Home => out.push(0),
            FlagSpot::Carried(id) => out.extend([1, id.0]),
            FlagSpot::Dropped(pos) => {
                out.push(2);
                for v in pos {
                    put_f32(out, v);
                }
            }
        }
    }
}

/// Reads what [`put_flags`] wrote.
fn read_flags(r: &mut Reader) -> Result<Option<[FlagSpot; 2]>, &'static str> {
    match r.byte()? {
        0 => return Ok(None),
        1 => {}
        _ => return Err("unknown flags form"),
    }
    let mut spots = [FlagSpot::Home; 2];
    for spot in &mut spots {
        *spot = match r.byte()? {
            0 => FlagSpot::Home,
            1 => FlagSpot::Carried(PlayerId(r.byte()?)),
            2 => {
                let mut pos = [0.0; 3];
                for x in &mut pos {
                    *x = r.f32()?;
                    if !x.is_finite() {
                        return Err("dropped flag at NaN or infinity");
                    }
                }
                FlagSpot::Dropped(pos)
            }
            _ => return Err("unknown flag place"),
        };
    }
    Ok(Some(spots))
}

/// `events` with each tick turned into its age before `server_tick`, or each age back into
/// its tick: `server_tick - x` (wrapping) is the same map both ways.
fn flip_ages(events: &[EventSnap], server_tick: u32) -> Vec<EventSnap> {
    events
        .iter()
        .map(|e| EventSnap {
            tick: server_tick.wrapping_sub(e.tick),
            ..*e
        })
        .collect()
}

/// Writes events (ticks as ages): their count, then each one's number (the first in full,
/// the rest as the gap from the one before), age, kind and fields.
fn put_events(out: &mut Vec<u8>, events: &[EventSnap]) {
    put_varint(out, events.len() as u64);
    let mut last = 0u32;
    for e in events {
        // Out of order (a snapshot no server sends) wraps, and is refused when read.
        put_varint(out, e.seq.wrapping_sub(last).into());
        last = e.seq;
        put_varint(out, e.tick.into());
        match e.event {
            PlayerEvent::Killed {
                victim,
                killer,
                weapon,
            } => out.extend([0, victim.0, killer.0, weapon.index() as u8]),
            PlayerEvent::HitConfirm {
                target,
                damage,
                head,
            } => {
                out.extend([1, target.0]);
                put_varint(out, damage.into());
                out.push(u8::from(head));
            }
            PlayerEvent::Damaged {
                attacker,
                damage,
                from,
            } => {
                out.extend([2, attacker.0]);
                put_varint(out, damage.into());
                for v in from {
                    put_f32(out, v);
                }
            }
            PlayerEvent::ShotLate { excess_ms } => {
                out.push(3);
                put_varint(out, excess_ms.into());
            }
            PlayerEvent::ShotRefused => out.push(4),
        }
    }
}

/// Events as [`put_events`] wrote them: at least one (none is sent as no flag), numbered
/// from 1 in increasing order, each field in range.
fn read_events(r: &mut Reader) -> Result<Vec<EventSnap>, &'static str> {
    let count = read_count(r, MAX_SNAPSHOT_EVENTS)?;
    if count == 0 {
        return Err("an empty list of events");
    }
    let mut events = Vec::with_capacity(count);
    let mut last = 0u32;
    for _ in 0..count {
        let gap = r.varint()?;
        if gap == 0 {
            return Err("events not numbered from 1 in increasing order");
        }
        let seq = last
            .checked_add(gap)
            .ok_or("event number past the maximum")?;
        last = seq;
        let tick = r.varint()?;
        let small = |r: &mut Reader| -> Result<u16, &'static str> {
            u16::try_from(r.varint()?).map_err(|_| "event number field too large")
        };
        let event = match r.byte()? {
            0 => PlayerEvent::Killed {
                victim: PlayerId(r.byte()?),
                killer: PlayerId(r.byte()?),
                weapon: *WeaponKind::ALL
                    .get(usize::from(r.byte()?))
                    .ok_or("unknown weapon in a kill")?,
            },
            1 => PlayerEvent::HitConfirm {
                target: PlayerId(r.byte()?),
                damage: small(r)?,
                head: match r.byte()? {
                    0 => false,
                    1 => true,
                    _ => return Err("a head flag neither 0 nor 1"),
                },
            },
            2 => {
                let (attacker, damage) = (PlayerId(r.byte()?), small(r)?);
                let mut from = [0.0; 3];
                for x in &mut from {
                    *x = r.f32()?;
                    if !x.is_finite() {
                        return Err("damage from NaN or infinity");
                    }
                }
                PlayerEvent::Damaged {
                    attacker,
                    damage,
                    from,
                }
            }
            3 => PlayerEvent::ShotLate {
                excess_ms: small(r)?,
            },
            4 => PlayerEvent::ShotRefused,
            _ => return Err("unknown event kind"),
        };
        events.push(EventSnap { seq, tick, event });
    }
    Ok(events)
}

/// Dropped weapons: at least one (none is sent as no flag), each finite.
fn read_drops(r: &mut Reader) -> Result<Vec<DropSnap>, &'static str> {
    let count = read_count(r, MAX_SNAPSHOT_DROPS)?;
    if count == 0 {
        return Err("an empty list of dropped weapons");
    }
    let mut drops = Vec::with_capacity(count);
    for _ in 0..count {
        let id = u16::try_from(r.varint()?).map_err(|_| "drop id too large")?;
        let weapon = *WeaponKind::ALL
            .get(usize::from(r.byte()?))
            .ok_or("unknown weapon dropped")?;
        let mut pos = [0.0; 3];
        for x in &mut pos {
            *x = r.f32()?;
            if !x.is_finite() {
                return Err("dropped weapon at NaN or infinity");
            }
        }
        drops.push(DropSnap { id, weapon, pos });
    }
    Ok(drops)
}

/// A count of at most `max`.
fn read_count(r: &mut Reader, max: usize) -> Result<usize, &'static str> {
    let n = r.varint()? as usize;
    if n > max {
        return Err("count too large");
    }
    Ok(n)
}

/// Player ids, strictly increasing.
fn read_ids(r: &mut Reader) -> Result<Vec<PlayerId>, &'static str> {
    let n = read_count(r, MAX_SNAPSHOT_PLAYERS)?;
    let mut ids: Vec<PlayerId> = Vec::with_capacity(n);
    for _ in 0..n {
        let id = PlayerId(r.byte()?);
        if ids.last().is_some_and(|&last| last >= id) {
            return Err("player ids not in increasing order");
        }
        ids.push(id);
    }
    Ok(ids)
}

/// The coder of snapshots' bytes on the wire ([`crate::coder`]), with the model trained
/// on recorded fights ([`model::SNAPSHOTS`]).
pub static SNAPSHOT_CODER: LazyLock<Coder> = LazyLock::new(|| {
    // A constant, checked by `the_trained_model_is_well_formed`.
    Coder::new(&model::SNAPSHOTS).expect("the trained model is well formed")
});

// The coder's raw form carries at most MAX_RAW bytes, and the encoder asserts it.
const _: () = assert!(SnapshotPacket::MAX_BYTES <= crate::coder::MAX_RAW);

impl Serialize for SnapshotPacket {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SNAPSHOT_CODER.encode(&self.to_bytes()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for SnapshotPacket {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let coded = Vec::<u8>::deserialize(d)?;
        let bytes = SNAPSHOT_CODER
            .decode(&coded, Self::MAX_BYTES)
            .map_err(D::Error::custom)?;
        Self::read(&mut Reader(&bytes)).map_err(D::Error::custom)
    }
}

/// Why a snapshot packet could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// Its baseline is not among the snapshots kept (lost, or too old): it is dropped,
    /// and the next acknowledgement names a snapshot that is.
    NoBaseline(u32),
    /// It resolves to an impossible snapshot.
    Invalid(DecodeError),
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoBaseline(seq) => write!(f, "baseline snapshot {seq} is not held"),
            Self::Invalid(e) => e.fmt(f),
        }
    }
}

/// The snapshots a client has resolved, newest last, to resolve later ones against.
#[derive(Resource, Debug, Default, Clone)]
pub struct SnapshotHistory {
    kept: VecDeque<Snapshot>,
}

impl SnapshotHistory {
    /// The kept snapshot numbered `seq`, if it is still kept.
    pub fn get(&self, seq: u32) -> Option<&Snapshot> {
        self.kept.iter().find(|s| s.seq == seq)
    }

    /// Resolves `packet` against the baseline it names and keeps the result (the last
    /// [`CLIENT_BASELINES`] are kept, a sequence number once).
    pub fn resolve(&mut self, packet: &SnapshotPacket) -> Result<Snapshot, Unresolved> {
        let baseline = match packet.baseline {
            0 => None,
            seq => Some(self.get(seq).ok_or(Unresolved::NoBaseline(seq))?),
        };
        let snapshot = packet.resolve(baseline).map_err(Unresolved::Invalid)?;
        if !self.kept.iter().any(|s| s.seq == snapshot.seq) {
            if self.kept.len() == CLIENT_BASELINES {
                self.kept.pop_front();
            }
            self.kept.push_back(snapshot.clone());
        }
        Ok(snapshot)
    }
}

pub mod model;
#[cfg(test)]
mod tests;
