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
//! for a fast client every frame. An update that produced nothing but acknowledgements is
//! held back ([`hold_acks`]) while the peer heard from us within [`ACK_HOLD`]: its
//! acknowledgements ride the next snapshot or input instead, which supersedes them (renet
//! repeats every range until the peer has acknowledged the acknowledgement).

use renetcode::NETCODE_MAX_PAYLOAD_BYTES;
use std::time::Duration;

/// First byte of a bundle.
const BUNDLE: u8 = 0xb5;
/// First byte of renet's acknowledgement packets.
const RENET_ACK: u8 = 4;
/// Bytes before each packet in a bundle: its length.
const LENGTH_BYTES: usize = 2;

/// How long acknowledgements alone may wait for company: longer than a 64 Hz snapshot
/// interval, so on a server at 64 Hz snapshots they always find one, and short beside the
/// time renet waits before resending a reliable message.
pub const ACK_HOLD: Duration = Duration::from_millis(25);

/// Whether `packets` are only acknowledgements, which may wait (see the module docs)
/// when the last datagram to the peer went out `since_sent` ago.
pub(crate) fn hold_acks(packets: &[Vec<u8>], since_sent: Duration) -> bool {
    since_sent < ACK_HOLD && packets.iter().all(|p| p.first() == Some(&RENET_ACK))
}

/// Packs renet packets, in order, into as few netcode payloads as hold them.
pub(crate) fn bundle(packets: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
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
pub(crate) struct MalformedBundle;

/// The renet packets in a netcode payload: a bundle's, or the payload itself.
pub(crate) fn unbundle(payload: &[u8]) -> Result<Vec<&[u8]>, MalformedBundle> {
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
    fn acknowledgements_alone_wait_a_little() {
        let acks = vec![vec![RENET_ACK, 1]];
        assert!(hold_acks(&acks, Duration::from_millis(8)));
        assert!(!hold_acks(&acks, ACK_HOLD));
        let with_snapshot = vec![vec![1, 2], vec![RENET_ACK, 1]];
        assert!(!hold_acks(&with_snapshot, Duration::ZERO));
    }
}
