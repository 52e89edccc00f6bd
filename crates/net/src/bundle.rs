//! Several renet packets in one datagram.
//!
//! renet sends its acknowledgements, its reliable messages and its unreliable messages as
//! separate packets, and netcode wraps each in a datagram of its own: a snapshot and the
//! acknowledgement sent beside it would pay the 28 bytes of UDP/IPv4 headers and about 20
//! of netcode's twice. So the transports pack the packets one update produces into as
//! few datagrams as hold them (a bundle: a marker byte, then each packet after its
//! two-byte length), and a packet alone travels as itself. renet's own packet types are
//! numbered 0 to 5, so the marker cannot be mistaken for one.
//!
//! renet also acknowledges on every update, which for a 128 Hz server is every tick, and
//! for a fast client every frame, and each acknowledgement costs about ten bytes in a
//! bundle. So acknowledgements leave at most once per [`ACK_HOLD`] ([`Pacer`]): between,
//! renet's acknowledgement packets are left out, and an update that produced nothing else
//! is not sent while the peer heard from us within that time. Nothing is lost: renet
//! repeats every range until the peer has acknowledged the acknowledgement, so the next
//! one carries them all.

use renetcode::NETCODE_MAX_PAYLOAD_BYTES;
use std::time::{Duration, Instant};

/// First byte of a bundle.
const BUNDLE: u8 = 0xb5;
/// First byte of renet's acknowledgement packets.
const RENET_ACK: u8 = 4;
/// Bytes before each packet in a bundle: its length.
const LENGTH_BYTES: usize = 2;

/// How often acknowledgements go at most, and how long they may wait for company: three
/// 64 Hz snapshot intervals, so on a server at 64 Hz snapshots they always find one, and a
/// 60 fps client acknowledges with every third input packet; half the time renet waits
/// before resending a reliable message, so on a link of under 50 ms it seldom resends
/// what arrived.
pub const ACK_HOLD: Duration = Duration::from_millis(50);

/// A moment on the clock a [`Pacer`] runs on: the process's [`Instant`] over UDP, an app's
/// elapsed time ([`Duration`]) on the in-process network, whose apps share a simulated clock.
pub(crate) trait Moment: Copy {
    /// Time from `earlier` to `self`, zero if `earlier` is later.
    fn since(self, earlier: Self) -> Duration;
}

impl Moment for Instant {
    fn since(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl Moment for Duration {
    fn since(self, earlier: Self) -> Duration {
        self.saturating_sub(earlier)
    }
}

/// When the last datagram and the last acknowledgement went to one peer, to pace
/// acknowledgements (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacer<T = Instant> {
    last_sent: Option<T>,
    last_ack: Option<T>,
}

impl<T> Default for Pacer<T> {
    fn default() -> Self {
        Self {
            last_sent: None,
            last_ack: None,
        }
    }
}

impl<T: Moment> Pacer<T> {
    /// The payloads to send for an update's renet `packets` at `now`: bundled, without
    /// acknowledgements sent within [`ACK_HOLD`], and none at all when only
    /// acknowledgements remain and the peer heard from us within it.
    pub(crate) fn payloads(&mut self, mut packets: Vec<Vec<u8>>, now: T) -> Vec<Vec<u8>> {
        let within = |t: Option<T>| t.is_some_and(|t| now.since(t) < ACK_HOLD);
        if within(self.last_ack) {
            packets.retain(|p| !is_ack(p));
        }
        let acks_only = packets.iter().all(|p| is_ack(p));
        if packets.is_empty() || (acks_only && within(self.last_sent)) {
            return Vec::new();
        }
        self.last_sent = Some(now);
        if packets.iter().any(|p| is_ack(p)) {
            self.last_ack = Some(now);
        }
        bundle(packets)
    }
}

/// Whether a renet packet is an acknowledgement.
fn is_ack(packet: &[u8]) -> bool {
    packet.first() == Some(&RENET_ACK)
}

/// Packs renet packets, in order, into as few netcode payloads as hold them.
fn bundle(packets: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut payloads: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut room = 0;
    for packet in packets {
        let need = LENGTH_BYTES + packet.len();
        match payloads.last_mut() {
            Some(group) if need <= room => {
                room -= need;
                group.push(packet);
            }
            _ => {
                room = NETCODE_MAX_PAYLOAD_BYTES.saturating_sub(1 + need);
                payloads.push(vec![packet]);
            }
        }
    }
    payloads
        .into_iter()
        .map(|mut group| {
            if group.len() == 1 {
                return group.pop().expect("one packet");
            }
            let mut out = Vec::with_capacity(NETCODE_MAX_PAYLOAD_BYTES);
            out.push(BUNDLE);
            for packet in group {
                out.extend_from_slice(&(packet.len() as u16).to_le_bytes());
                out.extend_from_slice(&packet);
            }
            out
        })
        .collect()
}

/// A bundle whose lengths do not add up, or holds an empty packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedBundle;

/// The renet packets in a netcode payload: a bundle's, or the payload itself.
pub fn unbundle(payload: &[u8]) -> Result<Vec<&[u8]>, MalformedBundle> {
    let Some((&BUNDLE, mut rest)) = payload.split_first() else {
        return Ok(vec![payload]);
    };
    let mut packets = Vec::new();
    while !rest.is_empty() {
        let Some((len, after)) = rest.split_first_chunk::<LENGTH_BYTES>() else {
            return Err(MalformedBundle);
        };
        let len = u16::from_le_bytes(*len) as usize;
        if len == 0 || len > after.len() {
            return Err(MalformedBundle);
        }
        let (packet, after) = after.split_at(len);
        packets.push(packet);
        rest = after;
    }
    if packets.is_empty() {
        return Err(MalformedBundle);
    }
    Ok(packets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_share_datagrams_and_come_apart_in_order() {
        let snapshot = vec![1; 300];
        let ack = vec![RENET_ACK, 9, 9];
        let reliable = vec![0; 40];
        let payloads = bundle(vec![reliable.clone(), snapshot.clone(), ack.clone()]);
        assert_eq!(payloads.len(), 1);
        assert_eq!(payloads[0].len(), 1 + 3 * LENGTH_BYTES + 343);
        assert_eq!(
            unbundle(&payloads[0]),
            Ok(vec![&reliable[..], &snapshot[..], &ack[..]])
        );
        // A packet alone is itself.
        assert_eq!(bundle(vec![snapshot.clone()]), vec![snapshot.clone()]);
        assert_eq!(unbundle(&snapshot), Ok(vec![&snapshot[..]]));
    }

    #[test]
    fn a_full_datagram_starts_another() {
        let slice = vec![3; 1210];
        let payloads = bundle(vec![slice.clone(), slice.clone(), vec![RENET_ACK; 20]]);
        assert_eq!(payloads.len(), 2);
        assert_eq!(payloads[0], slice);
        assert!(
            payloads
                .iter()
                .all(|p| p.len() <= NETCODE_MAX_PAYLOAD_BYTES)
        );
        assert_eq!(unbundle(&payloads[1]).unwrap().len(), 2);
    }

    #[test]
    fn malformed_bundles_are_refused() {
        for bad in [
            &[BUNDLE][..],
            &[BUNDLE, 5],
            &[BUNDLE, 0, 0],
            &[BUNDLE, 3, 0, 1, 2],
            &[BUNDLE, 1, 0, 7, 1],
        ] {
            assert_eq!(unbundle(bad), Err(MalformedBundle), "{bad:?}");
        }
    }

    #[test]
    fn acknowledgements_leave_at_most_once_per_hold() {
        let start = Instant::now();
        let hold = ACK_HOLD.as_millis() as u64;
        let at = |ms: u64| start + Duration::from_millis(ms);
        let input = || vec![1, 2, 3];
        let ack = || vec![RENET_ACK, 1];
        let mut pacer = Pacer::default();
        // The first acknowledgement rides the first input.
        let sent = pacer.payloads(vec![input(), ack()], at(0));
        assert_eq!(unbundle(&sent[0]).unwrap().len(), 2);
        // Within the hold, the input goes alone and acknowledgements alone wait.
        assert_eq!(pacer.payloads(vec![input(), ack()], at(16)), vec![input()]);
        assert!(pacer.payloads(vec![ack()], at(20)).is_empty());
        // After it, acknowledgements ride along again.
        let sent = pacer.payloads(vec![input(), ack()], at(hold + 5));
        assert_eq!(unbundle(&sent[0]).unwrap().len(), 2);
        // Alone, they go once nothing else has gone for the hold.
        assert!(pacer.payloads(vec![ack()], at(2 * hold)).is_empty());
        assert_eq!(pacer.payloads(vec![ack()], at(2 * hold + 5)), vec![ack()]);
        assert!(pacer.payloads(Vec::new(), at(10 * hold)).is_empty());
    }
}
