//! The netcode header, read before renetcode reads it.
//!
//! renetcode 2.0.0 reads a datagram's prefix, sequence number and authentication tag
//! before it can tell whether the datagram is genuine, and trusts what it reads: a
//! prefix naming a sequence of more than 8 bytes slices past an 8-byte array, and a
//! datagram too short for its sequence and its 16-byte tag splits a buffer at a negative
//! length; both panic, in every build. Anyone who can send from a connected or
//! handshaking address (a player, or whoever forges a player's address) could stop the
//! server with one datagram, and whoever forges the server's address could stop a
//! client. So both transports give netcode only a datagram whose header it reads safely
//! ([`netcode_readable`]); the rest are junk, counted and dropped.

/// Bytes of the authentication tag at the end of every packet but a connection request.
const TAG_BYTES: usize = 16;
/// Kinds of packet netcode has: a connection request is 0, the others 1 to 6.
const CONNECTION_REQUEST: u8 = 0;
const LAST_KIND: u8 = 6;
/// Most bytes a sequence number takes.
const MAX_SEQUENCE_BYTES: usize = 8;
/// Highest sequence number taken: renetcode's replay protection adds its window to the
/// number, which a build with overflow checks refuses near the top of the range. An
/// honest peer numbers from 0, and at a thousand datagrams a second takes hundreds of
/// millions of years to reach it.
const MAX_SEQUENCE: u64 = 1 << 62;

/// Whether renetcode can read `datagram`'s header without panicking: a known kind and,
/// for every kind but a connection request (which netcode reads field by field, checking
/// each), a sequence number of at most 8 bytes and below 2^62 (`MAX_SEQUENCE`), with room after
/// it for the tag. Whether it is genuine is netcode's to tell.
pub fn netcode_readable(datagram: &[u8]) -> bool {
    if datagram
        .first()
        .is_some_and(|prefix| prefix & 0xf == CONNECTION_REQUEST)
    {
        return true;
    }
    matches!(
        read_prefix(datagram),
        Some((1..=LAST_KIND, sequence, after)) if after.len() >= TAG_BYTES && sequence < MAX_SEQUENCE
    )
}

/// A datagram's kind and sequence number as its prefix gives them, and the bytes after
/// the sequence; `None` when the prefix names a sequence longer than 8 bytes or longer
/// than what follows.
pub(crate) fn read_prefix(datagram: &[u8]) -> Option<(u8, u64, &[u8])> {
    let (&prefix, rest) = datagram.split_first()?;
    let (kind, len) = (prefix & 0xf, usize::from(prefix >> 4));
    if len > MAX_SEQUENCE_BYTES {
        return None;
    }
    let (sequence, after) = rest.split_at_checked(len)?;
    let mut bytes = [0; 8];
    bytes[..len].copy_from_slice(sequence);
    Some((kind, u64::from_le_bytes(bytes), after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::connected_netcode;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    /// Every prefix byte, at every length around the header's, with bytes after it that
    /// make the longest sequence numbers.
    fn crafted() -> impl Iterator<Item = Vec<u8>> {
        (0..=u8::MAX).flat_map(|prefix| {
            (0..40).flat_map(move |len| {
                [0x00, 0xff, 0x7f].map(|fill| {
                    let mut d = vec![fill; len];
                    if let Some(first) = d.first_mut() {
                        *first = prefix;
                    }
                    d
                })
            })
        })
    }

    #[test]
    fn what_the_check_passes_netcode_reads_without_panicking_both_ways() {
        let (mut server, mut client, client_addr) = connected_netcode();
        let mut passed = 0;
        for mut d in crafted().filter(|d| netcode_readable(d)) {
            passed += 1;
            let mut copy = d.clone();
            let _ = server.process_packet(client_addr, &mut d);
            let _ = client.process_packet(&mut copy);
        }
        assert!(passed > 1000, "only {passed} datagrams were tried");
        assert!(client.is_connected(), "forgeries cost nothing");
        assert!(server.is_client_connected(1));
    }

    #[test]
    fn what_the_check_drops_would_stop_a_renetcode_server() {
        // Why the check exists: a 9-byte "sequence" and a packet too short for its tag,
        // from a connected address. If renetcode ever reads these safely, this test says
        // so and the check can go.
        let (mut server, _client, client_addr) = connected_netcode();
        for d in [vec![0x95; 18], {
            let mut d = vec![0; 18];
            d[0] = 0x85;
            d
        }] {
            assert!(!netcode_readable(&d));
            let mut d = d;
            let result = catch_unwind(AssertUnwindSafe(|| {
                let _ = server.process_packet(client_addr, &mut d);
            }));
            assert!(result.is_err(), "renetcode read {:02x} safely", d[0]);
        }
    }

    #[test]
    fn honest_headers_pass() {
        // A payload numbered 1 in one byte, 300 in two; a connection request.
        let payload = |seq: &[u8]| {
            let mut d = vec![5 | ((seq.len() as u8) << 4)];
            d.extend_from_slice(seq);
            d.extend_from_slice(&[0; TAG_BYTES + 3]);
            d
        };
        assert!(netcode_readable(&payload(&[1])));
        assert!(netcode_readable(&payload(&[0x2c, 0x01])));
        assert!(netcode_readable(&[0; 1078]));
        assert!(!netcode_readable(&[]));
        assert!(!netcode_readable(&[0x17; 40]), "kind 7 does not exist");
        let mut top = payload(&[0xff; 8]);
        assert!(!netcode_readable(&top), "no honest peer numbers so high");
        top[8] = 0x3f;
        assert!(netcode_readable(&top));
    }
}
