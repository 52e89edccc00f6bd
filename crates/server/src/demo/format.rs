//! The demo file: eight bytes of magic, the format, protocol and simulation versions as
//! little-endian `u32`s (fixed, so a demo of any other version is named for what it
//! is), then records, each a LEB128 length and its bincode encoding. The first record
//! is the [`DemoHeader`]; each tick then ends with a [`Record::Tick`].
//!
//! Reading never trusts the file: a record longer than [`MAX_RECORD_BYTES`], cut short,
//! undecodable or followed by stray bytes is an error naming its byte offset.

use super::state::{Keyframe, PlayerRecord, Sums};
use crate::config::MatchRules;
use serde::{Deserialize, Serialize};
use sightline_combat::{FriendlyFire, GameMode};
use sightline_protocol::bytes::{Reader, put_f32, put_varint, put_zigzag, unzigzag64, zigzag64};
use sightline_sim::{
    Buttons, InputCmd, PlayerId, VIEW_FRAC_STEP, WEAPON_SLOTS, angle_of_steps, angle_steps,
};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};

/// What a demo file starts with (`\r\n` shows a file mangled as text).
pub const DEMO_MAGIC: [u8; 8] = *b"SLDEMO\r\n";
/// Version of this file layout.
///
/// 2: a tick may run a player's command twice over ([`Step::Twice`]).
/// 3: keyframes keep the flags and each player's captures (capture the flag).
pub const DEMO_FORMAT_VERSION: u32 = 3;
/// Longest record: a keyframe of 64 players with a second of hitboxes fits many times.
pub const MAX_RECORD_BYTES: usize = 4 << 20;
/// The extension demo files take.
pub const DEMO_EXTENSION: &str = "sldemo";

/// Bytes before the first record: magic and three versions.
const PREFIX_BYTES: usize = 8 + 4 * 3;

/// What was played, and how: the first record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemoHeader {
    /// The map's name.
    pub map_name: String,
    /// The map's content hash: a replay on any other map is refused.
    pub map_hash: u64,
    /// Simulation ticks per second.
    pub tick_hz: u32,
    /// Snapshots per second (lag compensation rewinds between snapshot ticks).
    pub snapshot_hz: u32,
    /// The server's name.
    pub server_name: String,
    /// The game mode.
    pub mode: GameMode,
    /// Frags that win when the recording started; changes come as [`Record::Limits`].
    pub fraglimit: i32,
    /// Captures that win (capture the flag) when the recording started.
    pub capturelimit: u16,
    /// Seconds a match lasts at most when the recording started.
    pub timelimit: f32,
    /// The maps played in turn.
    pub rotation: Vec<String>,
    /// What team mates' fire does when the recording started.
    pub friendly_fire: FriendlyFire,
    /// Whether a tie at the time limit went to overtime when the recording started.
    pub overtime: bool,
    /// Seconds of warmup before each match when the recording started.
    pub warmup: f32,
    /// The server tick of the first recorded tick.
    pub start_tick: u32,
    /// When the recording started, seconds since 1970.
    pub recorded_at: u64,
}

/// One thing that happened, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Record {
    /// Everything the simulation reads: at the start, and every ten seconds.
    Keyframe(Box<Keyframe>),
    /// A player joined, came back, or was changed between ticks (a team switch, a
    /// rename): its whole state.
    Player(Box<PlayerRecord>),
    /// A player left.
    Left(PlayerId),
    /// The host's order to the match, carried out in this tick.
    Order(DemoOrder),
    /// The host (or a vote) changed the match's settings.
    Limits(DemoLimits),
    /// Checksums of the state before this tick's moves, once a second.
    Checksum(Box<Sums>),
    /// Each player's command this tick; ends the tick.
    Tick(TickCommands),
    /// The recording stopped, and why.
    End(String),
}

/// The match's settings a host may change while a demo is recorded, which its replay
/// must follow: at the start in the [`DemoHeader`], then as [`Record::Limits`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DemoLimits {
    /// Frags that win.
    pub fraglimit: i32,
    /// Captures that win.
    pub capturelimit: u16,
    /// Seconds a match lasts at most.
    pub timelimit: f32,
    /// What team mates' fire does.
    pub friendly_fire: FriendlyFire,
    /// Whether a tie at the time limit goes to overtime.
    pub overtime: bool,
    /// Seconds of warmup before each match.
    pub warmup: f32,
}

impl DemoLimits {
    /// The settings `rules` hold.
    pub fn of(rules: &MatchRules) -> Self {
        Self {
            fraglimit: rules.fraglimit,
            capturelimit: rules.capturelimit,
            timelimit: rules.timelimit,
            friendly_fire: rules.friendly_fire,
            overtime: rules.overtime,
            warmup: rules.warmup,
        }
    }

    /// Puts these settings into `rules`.
    pub fn apply_to(self, rules: &mut MatchRules) {
        rules.fraglimit = self.fraglimit;
        rules.capturelimit = self.capturelimit;
        rules.timelimit = self.timelimit;
        rules.friendly_fire = self.friendly_fire;
        rules.overtime = self.overtime;
        rules.warmup = self.warmup;
    }
}

impl DemoHeader {
    /// The match's settings when the recording started.
    pub fn limits(&self) -> DemoLimits {
        DemoLimits {
            fraglimit: self.fraglimit,
            capturelimit: self.capturelimit,
            timelimit: self.timelimit,
            friendly_fire: self.friendly_fire,
            overtime: self.overtime,
            warmup: self.warmup,
        }
    }
}

/// The host's orders a demo carries ([`crate::MatchOrder`] less a map change, which ends
/// the recording).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DemoOrder {
    /// The match starts again on this map.
    Restart,
    /// The next match of the rotation starts now.
    NextMap,
    /// The match ends now.
    End,
    /// The warmup ends now (enough players were ready): the countdown.
    Countdown,
}

/// What one player did in a tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Held: its command had not arrived, and the server waited.
    Held,
    /// Ran `cmd`; `honest_view` says whether its view time lay in the window lag
    /// compensation allowed (a shot claiming one outside is refused).
    Ran {
        /// The command.
        cmd: InputCmd,
        /// Whether the view time was one an honest client could claim.
        honest_view: bool,
    },
    /// Ran `cmd`, then `then` in the same tick, repaying a tick it was held (see
    /// [`Step::Ran`] for the honesty of each view time).
    Twice {
        /// The tick's first command.
        cmd: InputCmd,
        /// Whether its view time was one an honest client could claim.
        honest_view: bool,
        /// The second.
        then: InputCmd,
        /// Whether the second's view time was one an honest client could claim.
        then_honest: bool,
    },
}

/// A tick's commands as bytes ([`CommandChain`] writes and reads them): the players'
/// ids when they changed since the last tick, then for each player, in id order, a
/// varint of flags and the fields they name, each a change from the player's previous
/// command. A command that moved on by one sequence number, one client tick and one
/// tick of view time, turning a little, costs three or four bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TickCommands(Vec<u8>);

impl TickCommands {
    /// Its encoded length.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds nothing (no players).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

const HELD: u64 = 1 << 0;
const HONEST: u64 = 1 << 1;
const YAW: u64 = 1 << 2;
const PITCH: u64 = 1 << 3;
const VIEW: u64 = 1 << 4;
const FORWARD: u64 = 1 << 5;
const RIGHT: u64 = 1 << 6;
const BUTTONS: u64 = 1 << 7;
const SEQ: u64 = 1 << 8;
const CLIENT_TICK: u64 = 1 << 9;
/// Angles off the grid, as two f32s (no command the game runs has them).
const RAW_ANGLES: u64 = 1 << 10;
/// A second command follows, written against this one ([`Step::Twice`]).
const TWICE: u64 = 1 << 11;
const ALL_FLAGS: u64 = (1 << 12) - 1;

/// A command's view time in steps of [`VIEW_FRAC_STEP`]: 40 bits.
fn view_steps(c: &InputCmd) -> i64 {
    (i64::from(c.view_tick) << 8) | i64::from(c.view_frac / VIEW_FRAC_STEP)
}

/// Whether an angle lies on the grid commands carry.
fn on_grid(a: f32) -> bool {
    angle_of_steps(angle_steps(a)).to_bits() == a.to_bits()
}

/// The players' commands tick after tick, each written against the player's last: the
/// recorder's and the replay's, kept in step by the records between ticks.
#[derive(Debug, Default, Clone)]
pub struct CommandChain {
    roster: Vec<PlayerId>,
    last: BTreeMap<PlayerId, InputCmd>,
}

impl CommandChain {
    /// Forgets a player who left: one coming back with its id starts afresh.
    pub fn forget(&mut self, id: PlayerId) {
        self.last.remove(&id);
    }

    /// Writes this tick's `steps` (in id order).
    pub fn write(&mut self, steps: &[(PlayerId, Step)]) -> TickCommands {
        let mut out = Vec::with_capacity(4 * steps.len() + 1);
        let roster: Vec<PlayerId> = steps.iter().map(|(id, _)| *id).collect();
        if roster == self.roster {
            out.push(0);
        } else {
            put_varint(&mut out, roster.len() as u64 + 1);
            out.extend(roster.iter().map(|id| id.0));
            self.roster = roster;
        }
        for (id, step) in steps {
            let prev = self.last.get(id).copied().unwrap_or_default();
            let last = match *step {
                Step::Held => {
                    put_varint(&mut out, HELD);
                    continue;
                }
                Step::Ran { cmd, honest_view } => {
                    write_change(&mut out, &prev, &cmd, honest_view, false);
                    cmd
                }
                Step::Twice {
                    cmd,
                    honest_view,
                    then,
                    then_honest,
                } => {
                    write_change(&mut out, &prev, &cmd, honest_view, true);
                    write_change(&mut out, &cmd, &then, then_honest, false);
                    then
                }
            };
            self.last.insert(*id, last);
        }
        TickCommands(out)
    }

    /// Reads a tick's commands, refusing what no recorder writes.
    pub fn read(&mut self, t: &TickCommands) -> Result<Vec<(PlayerId, Step)>, &'static str> {
        let mut r = Reader(&t.0);
        let count = r.varint()?;
        if count > 0 {
            let n = count as usize - 1;
            if n > usize::from(u8::MAX) + 1 {
                return Err("more players than there are ids");
            }
            let mut roster = Vec::with_capacity(n);
            for _ in 0..n {
                roster.push(PlayerId(r.byte()?));
            }
            if roster.windows(2).any(|w| w[0] >= w[1]) {
                return Err("players out of order");
            }
            self.roster = roster;
        }
        let mut steps = Vec::with_capacity(self.roster.len());
        for id in &self.roster {
            let flags = r.varint64()?;
            if flags == HELD {
                steps.push((*id, Step::Held));
                continue;
            }
            if flags & HELD != 0 || flags & !ALL_FLAGS != 0 {
                return Err("unknown command flags");
            }
            let prev = self.last.get(id).copied().unwrap_or_default();
            let cmd = read_change(&mut r, flags, &prev)?;
            let honest_view = flags & HONEST != 0;
            let step = if flags & TWICE != 0 {
                let second = r.varint64()?;
                if second & (HELD | TWICE) != 0 || second & !ALL_FLAGS != 0 {
                    return Err("unknown command flags");
                }
                Step::Twice {
                    cmd,
                    honest_view,
                    then: read_change(&mut r, second, &cmd)?,
                    then_honest: second & HONEST != 0,
                }
            } else {
                Step::Ran { cmd, honest_view }
            };
            self.last.insert(
                *id,
                match step {
                    Step::Twice { then, .. } => then,
                    _ => cmd,
                },
            );
            steps.push((*id, step));
        }
        r.finish()?;
        Ok(steps)
    }
}

/// What changed from `prev` to `c`: the flags (with `twice`, saying a second command
/// follows), then each flagged field.
fn write_change(out: &mut Vec<u8>, prev: &InputCmd, c: &InputCmd, honest: bool, twice: bool) {
    let seq = i64::from(c.seq) - i64::from(prev.seq);
    let tick = i64::from(c.client_tick) - i64::from(prev.client_tick) - seq;
    let raw = !(on_grid(c.yaw) && on_grid(c.pitch));
    let yaw = angle_steps(c.yaw).wrapping_sub(angle_steps(prev.yaw));
    let pitch = angle_steps(c.pitch).wrapping_sub(angle_steps(prev.pitch));
    // The view time usually moves on a tick a command.
    let view = view_steps(c) - view_steps(prev) - (seq << 8);
    let buttons = (c.buttons, c.weapon_slot) != (prev.buttons, prev.weapon_slot);
    let mut flags = 0;
    for (bit, on) in [
        (HONEST, honest),
        (TWICE, twice),
        (SEQ, seq != 1),
        (CLIENT_TICK, tick != 0),
        (FORWARD, c.forward.to_bits() != prev.forward.to_bits()),
        (RIGHT, c.right.to_bits() != prev.right.to_bits()),
        (RAW_ANGLES, raw),
        (YAW, !raw && yaw != 0),
        (PITCH, !raw && pitch != 0),
        (BUTTONS, buttons),
        (VIEW, view != 0),
    ] {
        if on {
            flags |= bit;
        }
    }
    put_varint(out, flags);
    if flags & SEQ != 0 {
        put_varint(out, zigzag64(seq - 1));
    }
    if flags & CLIENT_TICK != 0 {
        put_varint(out, zigzag64(tick));
    }
    for (bit, v) in [(FORWARD, c.forward), (RIGHT, c.right)] {
        if flags & bit != 0 {
            put_f32(out, v);
        }
    }
    if raw {
        put_f32(out, c.yaw);
        put_f32(out, c.pitch);
    }
    for (bit, v) in [(YAW, yaw), (PITCH, pitch)] {
        if flags & bit != 0 {
            put_zigzag(out, v.into());
        }
    }
    if buttons {
        out.extend_from_slice(&[c.buttons.0, c.weapon_slot]);
    }
    if flags & VIEW != 0 {
        put_varint(out, zigzag64(view));
    }
}

/// The command after `prev` that `flags` and the fields after them describe.
fn read_change(r: &mut Reader, flags: u64, prev: &InputCmd) -> Result<InputCmd, &'static str> {
    let has = |bit: u64| flags & bit != 0;
    let nonzero = |v: i64| {
        if v == 0 {
            Err("a change of zero flagged")
        } else {
            Ok(v)
        }
    };
    let seq = if has(SEQ) {
        // Saturating: the counter below refuses what is out of range.
        nonzero(unzigzag64(r.varint64()?))?.saturating_add(1)
    } else {
        1
    };
    let tick = if has(CLIENT_TICK) {
        nonzero(unzigzag64(r.varint64()?))?
    } else {
        0
    };
    let counter = |base: u32, change: i64| {
        u32::try_from(i64::from(base).saturating_add(change))
            .map_err(|_| "a command's counter out of range")
    };
    let mut c = *prev;
    c.seq = counter(prev.seq, seq)?;
    c.client_tick = counter(prev.client_tick, tick.saturating_add(seq))?;
    for (bit, field) in [(FORWARD, &mut c.forward), (RIGHT, &mut c.right)] {
        if has(bit) {
            *field = finite(r.f32()?)?;
        }
    }
    if has(RAW_ANGLES) {
        if has(YAW) || has(PITCH) {
            return Err("angles both raw and changed");
        }
        c.yaw = finite(r.f32()?)?;
        c.pitch = finite(r.f32()?)?;
    } else {
        for (bit, field) in [(YAW, &mut c.yaw), (PITCH, &mut c.pitch)] {
            let base = angle_steps(*field);
            let change = if has(bit) {
                i16::try_from(nonzero(r.zigzag()?.into())?)
                    .map_err(|_| "an angle change out of range")?
            } else {
                0
            };
            *field = angle_of_steps(base.wrapping_add(change));
        }
    }
    if has(BUTTONS) {
        c.buttons = Buttons(r.byte()?);
        c.weapon_slot = r.byte()?;
        if c.weapon_slot > WEAPON_SLOTS {
            return Err("a command's weapon slot out of range");
        }
    }
    let view = if has(VIEW) {
        nonzero(unzigzag64(r.varint64()?))?
    } else {
        0
    };
    let view = view_steps(prev)
        .checked_add(seq << 8)
        .and_then(|v| v.checked_add(view))
        .filter(|v| (0..1 << 40).contains(v))
        .ok_or("a command's view time out of range")?;
    c.view_tick = (view >> 8) as u32;
    c.view_frac = (view & 0xff) as u16 * VIEW_FRAC_STEP;
    Ok(c)
}

fn finite(v: f32) -> Result<f32, &'static str> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err("a command holds a number that is not finite")
    }
}

/// Why a demo cannot be read (on from `offset`).
#[derive(Debug)]
pub struct DemoError {
    /// Bytes into the file where the trouble starts.
    pub offset: u64,
    /// What is wrong.
    pub kind: DemoErrorKind,
}

/// What is wrong with a demo.
#[derive(Debug)]
pub enum DemoErrorKind {
    /// It does not start as a demo does.
    NotADemo,
    /// Recorded by another version of the game.
    Version {
        /// "demo format", "protocol" or "simulation".
        what: &'static str,
        /// The file's.
        file: u32,
        /// This build's.
        ours: u32,
    },
    /// It stops in the middle of a record (a server killed while recording).
    CutShort,
    /// A record claims more bytes than any record has.
    TooLong(u64),
    /// A record's bytes are not a record, or hold values the game never makes.
    Corrupt(String),
    /// The first record is not the header, or a record comes where it cannot.
    OutOfPlace(&'static str),
    /// Reading failed.
    Io(io::Error),
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: ", self.offset)?;
        match &self.kind {
            DemoErrorKind::NotADemo => write!(f, "not a Sightline demo"),
            DemoErrorKind::Version { what, file, ours } => write!(
                f,
                "recorded under {what} version {file}, and this build plays {what} version \
                 {ours}: replay it with the build that recorded it"
            ),
            DemoErrorKind::CutShort => write!(
                f,
                "the file ends inside a record (the recording was cut off, as when the server \
                 is killed)"
            ),
            DemoErrorKind::TooLong(n) => write!(
                f,
                "a record of {n} bytes, more than the {MAX_RECORD_BYTES} any record takes"
            ),
            DemoErrorKind::Corrupt(why) => write!(f, "corrupt record: {why}"),
            DemoErrorKind::OutOfPlace(why) => write!(f, "{why}"),
            DemoErrorKind::Io(e) => write!(f, "cannot read: {e}"),
        }
    }
}

impl std::error::Error for DemoError {}

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_RECORD_BYTES>()
}

/// Writes records as bytes (the recorder sends them to its file's thread).
#[derive(Debug, Default)]
pub struct DemoEncoder {
    bytes: Vec<u8>,
}

impl DemoEncoder {
    /// The fixed prefix and the header.
    pub fn start(header: &DemoHeader) -> Result<Self, String> {
        let mut bytes = Vec::with_capacity(256);
        bytes.extend_from_slice(&DEMO_MAGIC);
        for v in [
            DEMO_FORMAT_VERSION,
            sightline_protocol::PROTOCOL_VERSION,
            sightline_sim::SIMULATION_VERSION,
        ] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let mut encoder = Self { bytes };
        encoder.put(header)?;
        Ok(encoder)
    }

    /// Appends one record.
    pub fn record(&mut self, record: &Record) -> Result<(), String> {
        self.put(record)
    }

    fn put(&mut self, value: &impl Serialize) -> Result<(), String> {
        let body = bincode::serde::encode_to_vec(value, bincode_config())
            .map_err(|e| format!("cannot encode a demo record: {e}"))?;
        let mut n = body.len() as u64;
        while n >= 0x80 {
            self.bytes.push(n as u8 | 0x80);
            n >>= 7;
        }
        self.bytes.push(n as u8);
        self.bytes.extend_from_slice(&body);
        Ok(())
    }

    /// The bytes written since the last take.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }
}

/// Reads a demo's records in order, checking each.
pub struct DemoReader<R> {
    src: R,
    offset: u64,
    header: DemoHeader,
    body: Vec<u8>,
}

impl<R: Read> DemoReader<R> {
    /// Reads the prefix and the header, refusing another version's demo.
    pub fn open(mut src: R) -> Result<Self, DemoError> {
        let mut prefix = [0u8; PREFIX_BYTES];
        let got = read_fully(&mut src, &mut prefix).map_err(|e| at(0, DemoErrorKind::Io(e)))?;
        if got < DEMO_MAGIC.len() || prefix[..8] != DEMO_MAGIC {
            return Err(at(0, DemoErrorKind::NotADemo));
        }
        if got < PREFIX_BYTES {
            return Err(at(got as u64, DemoErrorKind::CutShort));
        }
        let ours = [
            ("demo format", DEMO_FORMAT_VERSION),
            ("protocol", sightline_protocol::PROTOCOL_VERSION),
            ("simulation", sightline_sim::SIMULATION_VERSION),
        ];
        for (i, (what, ours)) in ours.into_iter().enumerate() {
            let start = 8 + 4 * i;
            let file = u32::from_le_bytes(prefix[start..start + 4].try_into().unwrap_or([0; 4]));
            if file != ours {
                return Err(at(
                    start as u64,
                    DemoErrorKind::Version { what, file, ours },
                ));
            }
        }
        let mut reader = Self {
            src,
            offset: PREFIX_BYTES as u64,
            header: placeholder_header(),
            body: Vec::new(),
        };
        let start = reader.offset;
        let Some(()) = reader.next_body()? else {
            return Err(at(start, DemoErrorKind::CutShort));
        };
        reader.header = decode(&reader.body, start)?;
        Ok(reader)
    }

    /// The header.
    pub fn header(&self) -> &DemoHeader {
        &self.header
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next record and where it starts; `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<(u64, Record)>, DemoError> {
        let start = self.offset;
        match self.next_body()? {
            None => Ok(None),
            Some(()) => Ok(Some((start, decode(&self.body, start)?))),
        }
    }

    /// Reads the next record's bytes into `body`; `None` at a clean end of the file.
    fn next_body(&mut self) -> Result<Option<()>, DemoError> {
        let start = self.offset;
        let mut len: u64 = 0;
        let mut shift = 0;
        loop {
            let mut b = [0u8; 1];
            let got = read_fully(&mut self.src, &mut b)
                .map_err(|e| at(self.offset, DemoErrorKind::Io(e)))?;
            if got == 0 {
                if self.offset == start {
                    return Ok(None);
                }
                return Err(at(start, DemoErrorKind::CutShort));
            }
            self.offset += 1;
            len |= u64::from(b[0] & 0x7f) << shift;
            if b[0] & 0x80 == 0 {
                if b[0] == 0 && shift > 0 {
                    return Err(at(start, DemoErrorKind::Corrupt("a padded length".into())));
                }
                break;
            }
            shift += 7;
            if shift > 28 {
                return Err(at(start, DemoErrorKind::TooLong(len)));
            }
        }
        if len > MAX_RECORD_BYTES as u64 {
            return Err(at(start, DemoErrorKind::TooLong(len)));
        }
        self.body.resize(len as usize, 0);
        let got = read_fully(&mut self.src, &mut self.body)
            .map_err(|e| at(self.offset, DemoErrorKind::Io(e)))?;
        self.offset += got as u64;
        if got < self.body.len() {
            return Err(at(start, DemoErrorKind::CutShort));
        }
        Ok(Some(()))
    }
}

/// Decodes one record's bytes, which must all be used.
fn decode<T: serde::de::DeserializeOwned>(body: &[u8], start: u64) -> Result<T, DemoError> {
    let (value, used) = bincode::serde::decode_from_slice(body, bincode_config())
        .map_err(|e| at(start, DemoErrorKind::Corrupt(e.to_string())))?;
    if used != body.len() {
        return Err(at(
            start,
            DemoErrorKind::Corrupt(format!("{} stray bytes after it", body.len() - used)),
        ));
    }
    Ok(value)
}

fn at(offset: u64, kind: DemoErrorKind) -> DemoError {
    DemoError { offset, kind }
}

/// Reads until `buf` is full or the source ends; the bytes read.
fn read_fully(src: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Stands in until the header is read.
fn placeholder_header() -> DemoHeader {
    DemoHeader {
        map_name: String::new(),
        map_hash: 0,
        tick_hz: 0,
        snapshot_hz: 0,
        server_name: String::new(),
        mode: GameMode::default(),
        fraglimit: 0,
        capturelimit: 0,
        timelimit: 0.0,
        rotation: Vec::new(),
        friendly_fire: FriendlyFire::Off,
        overtime: true,
        warmup: 0.0,
        start_tick: 0,
        recorded_at: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> DemoHeader {
        DemoHeader {
            map_name: "duel".into(),
            map_hash: 42,
            tick_hz: 128,
            snapshot_hz: 64,
            ..placeholder_header()
        }
    }

    fn cmd(seq: u32) -> InputCmd {
        InputCmd {
            forward: 1.0,
            yaw: angle_of_steps(1000 + seq as i16),
            view_tick: seq + 100,
            view_frac: 3 * VIEW_FRAC_STEP,
            ..sightline_sim::test_support::cmd(seq)
        }
    }

    fn demo(records: &[Record]) -> Vec<u8> {
        let mut e = DemoEncoder::start(&header()).unwrap();
        for r in records {
            e.record(r).unwrap();
        }
        e.take()
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Record>, DemoError> {
        let mut r = DemoReader::open(bytes)?;
        let mut out = Vec::new();
        while let Some((_, rec)) = r.next_record()? {
            out.push(rec);
        }
        Ok(out)
    }

    fn ran(cmd: InputCmd) -> Step {
        Step::Ran {
            cmd,
            honest_view: cmd.seq.is_multiple_of(3),
        }
    }

    #[test]
    fn commands_travel_as_changes_and_come_back_exactly() {
        let (mut writer, mut reader) = (CommandChain::default(), CommandChain::default());
        let (mut bytes, mut person) = (0, 0);
        for seq in 1..200u32 {
            let mut a = cmd(seq);
            if seq % 7 == 0 {
                a.buttons = Buttons::FIRE;
                a.weapon_slot = 2;
                a.forward = -0.0;
            }
            // A bot whose sequence is the tick, a person held now and then, who joins late
            // and whose client starts again at 1 (a reconnection), one off the grid.
            // Now and then it runs two commands in a tick, repaying a held one.
            let mut steps = vec![(PlayerId(1), ran(a))];
            if seq > 20 {
                if seq == 121 {
                    person = 0;
                }
                person += 1;
                let b = cmd(person);
                let step = match seq % 11 {
                    0 => Step::Held,
                    3 | 7 => {
                        person += 1;
                        let mut then = cmd(person);
                        then.buttons = Buttons::JUMP;
                        Step::Twice {
                            cmd: b,
                            honest_view: seq % 2 == 0,
                            then,
                            then_honest: seq % 3 == 0,
                        }
                    }
                    _ => ran(b),
                };
                steps.push((PlayerId(4), step));
            }
            if seq == 150 {
                let odd = InputCmd {
                    yaw: 0.123_456_7,
                    pitch: -0.0,
                    ..cmd(seq)
                };
                steps.push((PlayerId(9), ran(odd)));
            }
            let t = writer.write(&steps);
            bytes += t.len();
            let back = reader.read(&t).expect("reads");
            assert_eq!(back.len(), steps.len());
            for ((id, step), (rid, rstep)) in steps.iter().zip(&back) {
                assert_eq!(id, rid);
                match (step, rstep) {
                    (Step::Held, Step::Held) => {}
                    (
                        Step::Ran {
                            cmd: a,
                            honest_view: h,
                        },
                        Step::Ran {
                            cmd: b,
                            honest_view: g,
                        },
                    ) => {
                        assert_eq!(h, g);
                        assert_eq!(a.yaw.to_bits(), b.yaw.to_bits());
                        assert_eq!(a.pitch.to_bits(), b.pitch.to_bits());
                        assert_eq!(a.forward.to_bits(), b.forward.to_bits());
                        assert_eq!(a, b);
                    }
                    (a @ Step::Twice { .. }, b @ Step::Twice { .. }) => assert_eq!(a, b),
                    other => panic!("{other:?}"),
                }
            }
        }
        // A turning command that moves on by a tick costs a few bytes a player.
        assert!(bytes < 199 * 12, "{bytes}");
    }

    #[test]
    fn a_sequence_change_past_any_counter_is_refused_not_overflowed() {
        // The largest change a varint holds (zigzagged: i64::MAX).
        let mut bytes = vec![0xfe];
        bytes.extend_from_slice(&[0xff; 8]);
        bytes.push(0x01);
        let read = read_change(&mut Reader(&bytes), SEQ, &cmd(5));
        assert_eq!(read, Err("a command's counter out of range"));
    }

    #[test]
    fn a_demo_reads_back_record_for_record() {
        let mut chain = CommandChain::default();
        let steps = [(PlayerId(1), Step::Held), (PlayerId(2), ran(cmd(1)))];
        let records = vec![
            Record::Order(DemoOrder::Restart),
            Record::Limits(DemoLimits {
                fraglimit: 5,
                capturelimit: 3,
                timelimit: 60.0,
                friendly_fire: FriendlyFire::Reflect,
                overtime: false,
                warmup: 30.0,
            }),
            Record::Left(PlayerId(3)),
            Record::Tick(chain.write(&steps)),
            Record::End("stopped".into()),
        ];
        let bytes = demo(&records);
        let r = DemoReader::open(bytes.as_slice()).unwrap();
        assert_eq!(r.header(), &header());
        assert_eq!(read_all(&bytes).unwrap(), records);
    }

    #[test]
    fn another_version_s_demo_is_refused_naming_both_versions() {
        let mut bytes = demo(&[]);
        bytes[12..16].copy_from_slice(&(sightline_protocol::PROTOCOL_VERSION + 1).to_le_bytes());
        let e = DemoReader::open(bytes.as_slice()).err().unwrap();
        assert_eq!(e.offset, 12);
        let text = e.to_string();
        let ours = sightline_protocol::PROTOCOL_VERSION;
        assert!(
            text.contains(&format!("protocol version {}", ours + 1)),
            "{text}"
        );
        assert!(text.contains(&format!("protocol version {ours}")), "{text}");
        let mut bytes = demo(&[]);
        bytes[16..20].copy_from_slice(&7u32.to_le_bytes());
        let text = DemoReader::open(bytes.as_slice())
            .err()
            .unwrap()
            .to_string();
        assert!(text.contains("simulation version 7"), "{text}");
    }

    #[test]
    fn truncated_and_corrupt_demos_name_the_byte_where_they_go_wrong() {
        let bytes = demo(&[Record::Left(PlayerId(3)), Record::End("x".into())]);
        assert!(matches!(
            DemoReader::open(&b"GIF89a"[..]).err().unwrap().kind,
            DemoErrorKind::NotADemo
        ));
        // Every cut: an error or a shorter demo, never a panic, and a cut inside a record
        // names where that record starts.
        for cut in 0..bytes.len() {
            match read_all(&bytes[..cut]) {
                Ok(records) => assert!(records.len() < 2, "cut at {cut}"),
                Err(e) => assert!(e.offset <= cut as u64, "cut at {cut}: {e}"),
            }
        }
        let whole = read_all(&bytes).unwrap();
        assert_eq!(whole.len(), 2);
        // A length past the cap is refused before anything is allocated.
        let mut long = demo(&[]);
        long.extend_from_slice(&[0xff, 0xff, 0xff, 0x7f]);
        let e = read_all(&long).err().unwrap();
        assert!(matches!(e.kind, DemoErrorKind::TooLong(_)), "{e}");
        // Flipped bytes: errors or other records, never a panic.
        for i in PREFIX_BYTES..bytes.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                let _ = read_all(&b);
            }
        }
    }

    #[test]
    fn hostile_tick_bytes_are_refused_not_obeyed() {
        let refused = |bytes: &[u8]| {
            let mut chain = CommandChain::default();
            chain.read(&TickCommands(bytes.to_vec())).is_err()
        };
        // Players out of order; flags no recorder writes; a zero change flagged; a
        // weapon slot that is none; a non-finite number; a sequence before 0; bytes after.
        assert!(refused(&[3, 5, 2, 0, 0]));
        assert!(refused(&[2, 1, 0x80, 0x7f]));
        assert!(refused(&[2, 1, 0x80 | SEQ as u8, 0x02, 0]));
        assert!(refused(&[
            2,
            1,
            BUTTONS as u8,
            0x01,
            0,
            0,
            WEAPON_SLOTS + 1
        ]));
        let nan = f32::NAN.to_le_bytes();
        assert!(refused(&[
            2,
            1,
            FORWARD as u8,
            nan[0],
            nan[1],
            nan[2],
            nan[3]
        ]));
        assert!(refused(&[2, 1, 0x80, (SEQ >> 7) as u8, 0x03]));
        assert!(refused(&[2, 1, HELD as u8, 0]));
        assert!(!refused(&[2, 1, HELD as u8]));
        // Any bytes: an error or commands, never a panic.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in 0..400 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            let _ = CommandChain::default().read(&TickCommands(bytes));
        }
    }
}
