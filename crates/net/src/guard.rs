//! Every renet packet is checked here before renet reads it.
//!
//! renet 2.0.1 trusts what it parses in places: a slice whose index is not below its
//! message's slice count indexes past an array and panics, and slices of one message that
//! disagree on the count break its memory accounting (a panic in a build with overflow
//! checks). Anyone holding a connect token, or a malicious server, could stop the other
//! side with one packet. So the transports hand renet a packet only after [`PacketGuard`]
//! has read it in full, by renet's own wire format, and found it to be one a Sightline
//! peer sends:
//!
//! - a known packet type and channel, and nothing after its last field;
//! - messages no longer than the largest the protocol has for that channel and direction
//!   (`sightline_protocol`'s caps), so the reliable channel never carries slices (no
//!   reliable message is longer than one) and unreliable slices come only as many as
//!   the largest datagram needs;
//! - a slice's index below its count, every slice but the last exactly
//!   [`SLICE_SIZE`] bytes and the last not empty, and every slice of one message naming
//!   the same count ([`SliceLedger`]);
//! - acknowledgement ranges that renet can read back;
//! - a reliable message's id less than [`RELIABLE_WINDOW`] ahead of the oldest one not
//!   yet passed ([`ReliableLedger`]): renet keeps a reliable message that arrives ahead
//!   of one missing until the missing one comes, and counts against its memory limit
//!   only the message's bytes, so empty messages with ever new ids, behind one never
//!   sent, would grow its map without bound (an empty message that renet delivers is the
//!   game's to strike);
//! - a packet number no more than [`SEQUENCE_WINDOW`] behind the newest seen: renet
//!   keeps the numbers it must acknowledge as ranges, and numbers arriving below earlier
//!   ones, with gaps, grow that list without bound, each costing time in proportion to
//!   its length (an honest peer's numbers only rise, reordered by a few at most).
//!
//! How many packets a peer may send is the transports' to bound (a rate per connection).
//!
//! A packet that fails is dropped and reported ([`PacketFault`]), never logged on its
//! own: the server strikes its sender and counts it.

use sightline_protocol::{ClientDatagram, ClientMessage, ServerDatagram, ServerMessage, Wire};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Bytes in each slice of a sliced message but the last (renet's `SLICE_SIZE`).
pub const SLICE_SIZE: usize = 1200;

/// renet's packet types, by their first byte.
const SMALL_RELIABLE: u8 = 0;
const SMALL_UNRELIABLE: u8 = 1;
const RELIABLE_SLICE: u8 = 2;
const UNRELIABLE_SLICE: u8 = 3;
const ACK: u8 = 4;

/// Channel numbers ([`sightline_protocol::Channel`]).
const RELIABLE: u8 = 0;
const UNRELIABLE: u8 = 1;

/// How far behind the newest sliced message an older one's slices are still taken: more
/// than an honest peer has in flight at once (at most one sliced snapshot a tick).
const SLICE_WINDOW: u64 = 256;
/// How far behind the newest packet number a packet's may be: about two seconds of an
/// honest peer's packets, far more than reordering on any link delays one.
pub const SEQUENCE_WINDOW: u64 = 256;
/// How far ahead of the oldest reliable message not yet passed a message's id may be:
/// far more than an honest peer has unacknowledged at once (a server sends a few hundred
/// reliable messages a second in a fight, and renet resends the oldest first), and what
/// bounds the messages renet holds waiting for a missing one.
pub const RELIABLE_WINDOW: u64 = 4096;

/// Why a packet was not given to renet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketFault {
    /// It ends before a field does, or has bytes after its last one.
    Malformed,
    /// A packet type or channel Sightline does not use.
    UnknownKind,
    /// A message longer than any the protocol sends on its channel.
    Oversized,
    /// A slice whose index, count or length is impossible, or on the reliable channel.
    BadSlice,
    /// A slice naming another count than earlier slices of its message, or of a message
    /// so far behind the newest that its slices are no longer taken.
    InconsistentSlice,
    /// A packet numbered further behind the newest than reordering explains.
    OutOfOrder,
    /// A reliable message numbered further ahead of one still missing than any peer has
    /// in flight.
    AheadOfOrder,
    /// More packets than a Sightline peer sends (counted by the transport's rate).
    TooMany,
}

impl PacketFault {
    /// In words, for a log line.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Malformed => "a malformed transport packet",
            Self::UnknownKind => "a transport packet of an unknown type or channel",
            Self::Oversized => "a message longer than the protocol allows",
            Self::BadSlice => "an impossible message slice",
            Self::InconsistentSlice => "a message slice contradicting earlier ones",
            Self::OutOfOrder => "a transport packet numbered far behind the others",
            Self::AheadOfOrder => "a reliable message numbered far ahead of one missing",
            Self::TooMany => "transport packets faster than any client sends them",
        }
    }
}

impl fmt::Display for PacketFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// The largest message on each channel, one way.
#[derive(Debug, Clone, Copy)]
struct Caps {
    reliable: usize,
    unreliable: usize,
}

/// Checks the renet packets of one connection, one way (see the module docs).
#[derive(Debug, Clone)]
pub struct PacketGuard {
    caps: Caps,
    slices: SliceLedger,
    reliable: ReliableLedger,
    /// The reliable message ids of the packet being read, passed with it.
    reading: Vec<u64>,
    /// The newest packet number passed.
    newest: Option<u64>,
    /// Acknowledgement packets passed, for noticing a peer that stops acknowledging.
    pub acks: u64,
}

impl PacketGuard {
    /// For packets a client sends (the server's side).
    pub fn from_client() -> Self {
        Self::new(Caps {
            reliable: ClientMessage::MAX_BYTES,
            unreliable: ClientDatagram::MAX_BYTES,
        })
    }

    /// For packets a server sends (a client's side).
    pub fn from_server() -> Self {
        Self::new(Caps {
            reliable: ServerMessage::MAX_BYTES,
            unreliable: ServerDatagram::MAX_BYTES,
        })
    }

    fn new(caps: Caps) -> Self {
        Self {
            caps,
            slices: SliceLedger::default(),
            reliable: ReliableLedger::default(),
            reading: Vec::new(),
            newest: None,
            acks: 0,
        }
    }

    /// Whether renet may read `packet`.
    pub fn check(&mut self, packet: &[u8]) -> Result<(), PacketFault> {
        let (sequence, ack) = self.read(packet)?;
        if let Some(newest) = self.newest
            && sequence.saturating_add(SEQUENCE_WINDOW) < newest
        {
            return Err(PacketFault::OutOfOrder);
        }
        self.newest = Some(self.newest.map_or(sequence, |n| n.max(sequence)));
        for id in self.reading.drain(..) {
            self.reliable.pass(id);
        }
        if ack {
            self.acks = self.acks.saturating_add(1);
        }
        Ok(())
    }

    /// Reads `packet` through; its number, and whether it is an acknowledgement.
    fn read(&mut self, packet: &[u8]) -> Result<(u64, bool), PacketFault> {
        let mut r = Reader(packet);
        self.reading.clear();
        let kind = r.u8()?;
        let sequence = match kind {
            SMALL_RELIABLE..=ACK => r.varint()?,
            _ => return Err(PacketFault::UnknownKind),
        };
        match kind {
            SMALL_RELIABLE | SMALL_UNRELIABLE => {
                let (channel, cap) = if kind == SMALL_RELIABLE {
                    (RELIABLE, self.caps.reliable)
                } else {
                    (UNRELIABLE, self.caps.unreliable)
                };
                if r.u8()? != channel {
                    return Err(PacketFault::UnknownKind);
                }
                let count = r.u16()?;
                for _ in 0..count {
                    if kind == SMALL_RELIABLE {
                        let id = r.varint()?;
                        self.reliable.check(id)?;
                        self.reading.push(id);
                    }
                    let len = r.varint()?;
                    if len > cap as u64 {
                        return Err(PacketFault::Oversized);
                    }
                    r.skip(len as usize)?;
                }
            }
            RELIABLE_SLICE => return Err(PacketFault::BadSlice),
            UNRELIABLE_SLICE => {
                if r.u8()? != UNRELIABLE {
                    return Err(PacketFault::UnknownKind);
                }
                let message = r.varint()?;
                let index = r.varint()?;
                let count = r.varint()?;
                let len = r.varint()?;
                r.skip(usize::try_from(len).map_err(|_| PacketFault::Malformed)?)?;
                let slice = Slice { index, count, len };
                slice.check(self.caps.unreliable)?;
                // Last: a slice refused for its form is never recorded.
                if !r.0.is_empty() {
                    return Err(PacketFault::Malformed);
                }
                self.slices.admit(message, count)?;
                return Ok((sequence, false));
            }
            ACK => {
                let end = r.varint()?;
                let size = r.varint()?;
                let mut start = end.checked_sub(size).ok_or(PacketFault::Malformed)?;
                let more = r.varint()?;
                for _ in 0..more {
                    let gap = r.varint()?;
                    let end = start
                        .checked_sub(gap)
                        .and_then(|s| s.checked_sub(2))
                        .ok_or(PacketFault::Malformed)?;
                    let size = r.varint()?;
                    start = end.checked_sub(size).ok_or(PacketFault::Malformed)?;
                }
            }
            _ => return Err(PacketFault::UnknownKind),
        }
        if r.0.is_empty() {
            Ok((sequence, kind == ACK))
        } else {
            Err(PacketFault::Malformed)
        }
    }
}

/// The first and last message ids in one of renet's reliable packets (`None` for any
/// other kind): read from packets renet makes to send, to tell resends from new messages.
pub(crate) fn reliable_ids(packet: &[u8]) -> Option<(u64, u64)> {
    let mut r = Reader(packet);
    if r.u8().ok()? != SMALL_RELIABLE {
        return None;
    }
    r.varint().ok()?;
    r.u8().ok()?;
    let mut ids = None;
    for _ in 0..r.u16().ok()? {
        let id = r.varint().ok()?;
        let len = r.varint().ok()?;
        r.skip(usize::try_from(len).ok()?).ok()?;
        ids = Some(ids.map_or((id, id), |(first, _)| (first, id)));
    }
    ids
}

/// One unreliable slice's header.
struct Slice {
    index: u64,
    count: u64,
    len: u64,
}

impl Slice {
    /// Whether it can be part of a message of at most `cap` bytes, as renet slices one:
    /// only a message longer than one slice is sliced.
    fn check(&self, cap: usize) -> Result<(), PacketFault> {
        // The count first: the sums below then stay small.
        let most = cap.div_ceil(SLICE_SIZE) as u64;
        if self.count < 2 || self.count > most || self.index >= self.count {
            return Err(PacketFault::BadSlice);
        }
        let len_ok = if self.index + 1 == self.count {
            let total = (self.count - 1) * SLICE_SIZE as u64 + self.len;
            self.len >= 1 && self.len <= SLICE_SIZE as u64 && total <= cap as u64
        } else {
            self.len == SLICE_SIZE as u64
        };
        if !len_ok {
            return Err(PacketFault::BadSlice);
        }
        Ok(())
    }
}

/// The slice count each recent sliced message was first seen with.
///
/// renet assembles a sliced message in a buffer sized by the count its first slice
/// names and keeps it until the message completes (or, usually, 3 s pass), so every
/// slice of a message it holds must name that count. The ledger keeps the count of every
/// message within [`SLICE_WINDOW`] of the newest, and refuses slices of older messages
/// outright: so it forgets a message only once no slice of it can pass again, whatever
/// renet still holds.
#[derive(Debug, Clone, Default)]
struct SliceLedger {
    newest: Option<u64>,
    counts: BTreeMap<u64, u64>,
}

impl SliceLedger {
    fn admit(&mut self, message: u64, count: u64) -> Result<(), PacketFault> {
        if let Some(newest) = self.newest
            && message.saturating_add(SLICE_WINDOW) <= newest
        {
            return Err(PacketFault::InconsistentSlice);
        }
        if let Some(&known) = self.counts.get(&message) {
            return if known == count {
                Ok(())
            } else {
                Err(PacketFault::InconsistentSlice)
            };
        }
        self.counts.insert(message, count);
        if self.newest.is_none_or(|n| message > n) {
            self.newest = Some(message);
            let oldest = message.saturating_sub(SLICE_WINDOW - 1);
            self.counts = self.counts.split_off(&oldest);
        }
        Ok(())
    }
}

/// The reliable message ids passed: every one below `next`, and those in `ahead`, each
/// less than [`RELIABLE_WINDOW`] past `next` (so at most that many).
#[derive(Debug, Clone, Default)]
struct ReliableLedger {
    next: u64,
    ahead: BTreeSet<u64>,
}

impl ReliableLedger {
    fn check(&self, id: u64) -> Result<(), PacketFault> {
        if id >= self.next.saturating_add(RELIABLE_WINDOW) {
            return Err(PacketFault::AheadOfOrder);
        }
        Ok(())
    }

    fn pass(&mut self, id: u64) {
        if id < self.next {
            return; // a resend of one renet has
        }
        self.ahead.insert(id);
        while self.ahead.remove(&self.next) {
            self.next = self.next.saturating_add(1);
        }
    }
}

/// Reads renet's fields: bytes, big-endian integers, QUIC variable-length integers.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], PacketFault> {
        if self.0.len() < n {
            return Err(PacketFault::Malformed);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn skip(&mut self, n: usize) -> Result<(), PacketFault> {
        self.take(n).map(|_| ())
    }

    fn u8(&mut self) -> Result<u8, PacketFault> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, PacketFault> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// The two high bits of the first byte give the length: 1, 2, 4 or 8 bytes.
    fn varint(&mut self) -> Result<u64, PacketFault> {
        let first = *self.0.first().ok_or(PacketFault::Malformed)?;
        let len = 1usize << (first >> 6);
        let bytes = self.take(len)?;
        let mut value = u64::from(first & 0x3f);
        for b in &bytes[1..] {
            value = (value << 8) | u64::from(*b);
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use renet::{ConnectionConfig, RenetClient, RenetServer};
    use sightline_protocol::{Channel, connection_config};
    use std::time::Duration;

    fn varint(out: &mut Vec<u8>, v: u64) {
        match v {
            0..=63 => out.push(v as u8),
            64..=16383 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
            16384..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
            _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
        }
    }

    fn slice(seq: u64, message: u64, index: u64, count: u64, len: usize) -> Vec<u8> {
        let mut p = vec![UNRELIABLE_SLICE];
        varint(&mut p, seq);
        p.push(UNRELIABLE);
        for v in [message, index, count, len as u64] {
            varint(&mut p, v);
        }
        p.extend(std::iter::repeat_n(7, len));
        p
    }

    /// Every packet a real renet connection sends, both ways, for a sample of messages.
    fn real_packets(config: &ConnectionConfig) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let mut server = RenetServer::new(config.clone());
        let mut client = RenetClient::new(config.clone());
        client.set_connected();
        server.add_connection(1);
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for round in 0..6u8 {
            client.send_message(Channel::Reliable, vec![round; 40]);
            client.send_message(Channel::Unreliable, vec![round; ClientDatagram::MAX_BYTES]);
            client.send_message(Channel::Unreliable, vec![round; 30]);
            server.send_message(1, Channel::Reliable, vec![round; ServerMessage::MAX_BYTES]);
            server.send_message(
                1,
                Channel::Unreliable,
                vec![round; ServerDatagram::MAX_BYTES],
            );
            server.send_message(1, Channel::Unreliable, vec![round; 300]);
            for p in client.get_packets_to_send() {
                server.process_packet_from(&p, 1).unwrap();
                up.push(p);
            }
            for p in server.get_packets_to_send(1).unwrap() {
                client.process_packet(&p);
                down.push(p);
            }
            client.update(Duration::from_millis(150));
            server.update(Duration::from_millis(150));
        }
        (up, down)
    }

    #[test]
    fn everything_renet_sends_for_sightline_passes() {
        let (up, down) = real_packets(&connection_config());
        let (mut from_client, mut from_server) =
            (PacketGuard::from_client(), PacketGuard::from_server());
        assert!(up.iter().any(|p| p[0] == UNRELIABLE_SLICE));
        assert!(down.iter().any(|p| p[0] == UNRELIABLE_SLICE));
        assert!(up.iter().chain(&down).any(|p| p[0] == ACK));
        for p in &up {
            assert_eq!(from_client.check(p), Ok(()), "{p:?}");
        }
        for p in &down {
            assert_eq!(from_server.check(p), Ok(()), "{p:?}");
        }
        assert!(from_client.acks > 0 && from_server.acks > 0);
    }

    #[test]
    fn a_slice_index_past_its_count_is_refused_before_renet_panics_on_it() {
        let evil = slice(0, 0, 5, 3, SLICE_SIZE);
        assert_eq!(
            PacketGuard::from_server().check(&evil),
            Err(PacketFault::BadSlice)
        );
        // What renet does with it unguarded.
        let crashed = std::panic::catch_unwind(|| {
            let mut client = RenetClient::new(connection_config());
            client.set_connected();
            client.process_packet(&evil);
        });
        assert!(crashed.is_err(), "renet 2.0.1 indexes with the slice index");
    }

    #[test]
    fn slices_of_one_message_must_agree_on_its_count() {
        let mut g = PacketGuard::from_server();
        assert_eq!(g.check(&slice(0, 9, 0, 2, SLICE_SIZE)), Ok(()));
        assert_eq!(
            g.check(&slice(1, 9, 2, 4, SLICE_SIZE)),
            Err(PacketFault::InconsistentSlice)
        );
        assert_eq!(g.check(&slice(2, 9, 1, 2, 10)), Ok(()), "the honest rest");
        // Messages far behind the newest are no longer taken, whatever their count.
        assert_eq!(
            g.check(&slice(3, 9 + SLICE_WINDOW, 0, 2, SLICE_SIZE)),
            Ok(())
        );
        assert_eq!(
            g.check(&slice(4, 9, 1, 2, 10)),
            Err(PacketFault::InconsistentSlice)
        );
        assert_eq!(g.check(&slice(5, 10, 0, 2, SLICE_SIZE)), Ok(()));
        assert!(g.slices.counts.len() <= SLICE_WINDOW as usize);
    }

    /// A small reliable packet numbered `seq` carrying `messages` (id, length).
    fn reliable(seq: u64, messages: &[(u64, usize)]) -> Vec<u8> {
        let mut p = vec![SMALL_RELIABLE];
        varint(&mut p, seq);
        p.push(RELIABLE);
        p.extend_from_slice(&(messages.len() as u16).to_be_bytes());
        for &(id, len) in messages {
            varint(&mut p, id);
            varint(&mut p, len as u64);
            p.extend(std::iter::repeat_n(1, len));
        }
        p
    }

    #[test]
    fn reliable_messages_far_ahead_of_a_missing_one_are_refused() {
        let mut g = PacketGuard::from_client();
        // An attacker never sends message 0 and numbers ever new empty ones after it:
        // renet would hold every one, waiting for 0. Only the window's worth pass.
        let passed = (1..20_000u64)
            .filter(|&id| g.check(&reliable(id, &[(id, 0)])).is_ok())
            .count() as u64;
        assert_eq!(passed, RELIABLE_WINDOW - 1);
        assert_eq!(
            g.check(&reliable(
                20_000,
                &[(RELIABLE_WINDOW - 1, 1), (RELIABLE_WINDOW, 1)]
            )),
            Err(PacketFault::AheadOfOrder),
            "a packet is refused whole"
        );
        // Message 0 comes: the window moves past every one held.
        assert_eq!(g.check(&reliable(20_001, &[(0, 1)])), Ok(()));
        assert_eq!(g.check(&reliable(20_002, &[(RELIABLE_WINDOW, 1)])), Ok(()));
        assert_eq!(
            g.check(&reliable(20_003, &[(2 * RELIABLE_WINDOW, 1)])),
            Ok(()),
            "the window counts from the oldest missing, now past every one passed"
        );
        assert_eq!(
            g.check(&reliable(20_004, &[(2 * RELIABLE_WINDOW + 1, 1)])),
            Err(PacketFault::AheadOfOrder)
        );
        assert_eq!(g.check(&reliable(20_005, &[(3, 1)])), Ok(()), "a resend");
        assert_eq!(
            g.check(&reliable(20_006, &[(u64::MAX >> 2, 1)])),
            Err(PacketFault::AheadOfOrder)
        );
    }

    #[test]
    fn packets_numbered_far_behind_the_newest_are_refused() {
        let mut g = PacketGuard::from_client();
        let empty = |seq: u64| {
            let mut p = vec![SMALL_UNRELIABLE];
            varint(&mut p, seq);
            p.extend_from_slice(&[UNRELIABLE, 0, 0]);
            p
        };
        assert_eq!(g.check(&empty(1000)), Ok(()));
        assert_eq!(g.check(&empty(990)), Ok(()), "reordered a little");
        assert_eq!(g.check(&empty(1000 - SEQUENCE_WINDOW)), Ok(()));
        assert_eq!(
            g.check(&empty(1000 - SEQUENCE_WINDOW - 1)),
            Err(PacketFault::OutOfOrder)
        );
        assert_eq!(g.check(&empty(5000)), Ok(()), "a gap ahead is loss");
        assert_eq!(g.check(&empty(1000)), Err(PacketFault::OutOfOrder));
        // A refused acknowledgement does not count as one.
        let acks = g.acks;
        assert_eq!(
            g.check(&[ACK, 0x53, 0x89, 3, 0, 0, 9]),
            Err(PacketFault::Malformed)
        );
        assert_eq!(g.acks, acks);
    }

    #[test]
    fn a_huge_slice_count_is_refused_not_overflowed() {
        let mut p = vec![UNRELIABLE_SLICE, 0, UNRELIABLE, 0];
        varint(&mut p, (1 << 62) - 2);
        varint(&mut p, (1 << 62) - 1);
        varint(&mut p, 1);
        p.push(0);
        assert_eq!(
            PacketGuard::from_server().check(&p),
            Err(PacketFault::BadSlice)
        );
    }

    #[test]
    fn impossible_slices_and_kinds_are_refused() {
        let mut g = PacketGuard::from_client();
        // The most slices a client's largest unreliable message takes, the last of them
        // full: longer than that message.
        let most = ClientDatagram::MAX_BYTES.div_ceil(SLICE_SIZE) as u64;
        assert!(most * SLICE_SIZE as u64 > ClientDatagram::MAX_BYTES as u64);
        for (bad, fault) in [
            (slice(0, 0, 0, 1, 10), PacketFault::BadSlice),
            (slice(0, 0, 0, 2, 1199), PacketFault::BadSlice),
            (slice(0, 0, 1, 2, 0), PacketFault::BadSlice),
            (slice(0, 0, 0, 99, SLICE_SIZE), PacketFault::BadSlice),
            (
                slice(0, 0, most - 1, most, SLICE_SIZE),
                PacketFault::BadSlice,
            ),
            (
                vec![RELIABLE_SLICE, 0, 0, 0, 0, 2, 1, 0],
                PacketFault::BadSlice,
            ),
            (vec![9], PacketFault::UnknownKind),
            (vec![SMALL_UNRELIABLE, 0, 5, 0, 0], PacketFault::UnknownKind),
            (
                vec![SMALL_UNRELIABLE, 0, 1, 0, 1, 3, 1],
                PacketFault::Malformed,
            ),
            (
                vec![SMALL_UNRELIABLE, 0, 1, 0, 0, 0],
                PacketFault::Malformed,
            ),
            (vec![ACK, 0, 3, 9], PacketFault::Malformed),
            (vec![], PacketFault::Malformed),
        ] {
            assert_eq!(g.check(&bad), Err(fault), "{bad:?}");
        }
        let mut huge = vec![SMALL_RELIABLE, 0, RELIABLE, 0, 1, 0];
        varint(&mut huge, ClientMessage::MAX_BYTES as u64 + 1);
        huge.extend(vec![0; ClientMessage::MAX_BYTES + 1]);
        assert_eq!(g.check(&huge), Err(PacketFault::Oversized));
    }
}
