//! The share of a client's datagrams lost on the way in, for the host's `status`.
//!
//! netcode numbers every datagram of a connection, so the numbers of those that arrived
//! tell how many did not. renet's own loss figure cannot: it counts its acknowledgement
//! packets that the transport leaves out ([`crate::ACK_HOLD`]) as lost, about half of
//! everything on a clean link.

use super::header::read_prefix;

/// Datagrams numbered per block the share is taken over: four seconds of a 60 fps
/// client.
const BLOCK: u64 = 256;

/// Which of a peer's datagrams arrived, block by block.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Arrivals {
    /// The first number of the block being counted and the newest seen in it.
    block: Option<(u64, u64)>,
    /// Datagrams of the block that arrived.
    arrived: u64,
    /// The share lost in the last whole block.
    lost: Option<f32>,
}

impl Arrivals {
    /// Counts the datagram numbered `seq` (netcode has already refused repeats and
    /// forgeries). One from a block already closed arrived too late to count.
    pub(crate) fn arrived(&mut self, seq: u64) {
        let (start, newest) = *self.block.get_or_insert((seq, seq));
        if seq < start {
            return;
        }
        self.arrived += 1;
        let newest = newest.max(seq);
        // Saturates: a client skipping numbers on purpose only shows itself losing.
        let numbered = newest.saturating_sub(start).saturating_add(1);
        if numbered >= BLOCK {
            let missing = numbered.saturating_sub(self.arrived);
            self.lost = Some((missing as f64 / numbered as f64) as f32);
            self.block = Some((newest.saturating_add(1), newest.saturating_add(1)));
            self.arrived = 0;
        } else {
            self.block = Some((start, newest));
        }
    }

    /// The share of the last whole block lost, 0 to 1 (`None` before one is whole).
    pub(crate) fn lost(&self) -> Option<f32> {
        self.lost
    }
}

/// The number of a netcode payload datagram, read from its prefix; `None` for any other
/// kind or a malformed prefix. Worth anything only once netcode has accepted the datagram.
pub(crate) fn payload_sequence(datagram: &[u8]) -> Option<u64> {
    const PAYLOAD: u8 = 5;
    read_prefix(datagram).and_then(|(kind, sequence, _)| (kind == PAYLOAD).then_some(sequence))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_lost_is_taken_over_whole_blocks_of_numbers() {
        let mut a = Arrivals::default();
        // One in ten lost (26 of the 256), each pair but the first and the last arriving
        // the wrong way round (at a block's edges one would count in the wrong block).
        let edges = [1000, 1000 + BLOCK - 2];
        for pair in (1000..1000 + BLOCK).step_by(2) {
            let order = if edges.contains(&pair) {
                [pair, pair + 1]
            } else {
                [pair + 1, pair]
            };
            for seq in order {
                if seq % 10 != 3 {
                    a.arrived(seq);
                }
            }
            assert!(pair + 2 == 1000 + BLOCK || a.lost().is_none());
        }
        let lost = a.lost().expect("a whole block");
        assert!((lost - 26.0 / 256.0).abs() < 1e-6, "{lost}");
        // A late one from the closed block is not counted; the next block is clean.
        a.arrived(1003);
        for seq in 1000 + BLOCK..1000 + 2 * BLOCK {
            a.arrived(seq);
        }
        assert_eq!(a.lost(), Some(0.0));
        // A client skipping numbers shows itself losing, and nothing overflows.
        a.arrived(u64::MAX);
        assert_eq!(a.lost().map(|l| l > 0.99), Some(true));
        a.arrived(u64::MAX);
    }

    #[test]
    fn only_payload_datagrams_are_numbered_here() {
        // Payload, sequence 0x0201 in two bytes.
        assert_eq!(payload_sequence(&[0x25, 0x01, 0x02, 0xff]), Some(0x0201));
        assert_eq!(payload_sequence(&[0x05, 0xff]), Some(0));
        // A keep-alive, a truncated sequence, a length past eight, nothing at all.
        assert_eq!(payload_sequence(&[0x14, 0x01]), None);
        assert_eq!(payload_sequence(&[0x35, 0x01]), None);
        assert_eq!(payload_sequence(&[0x95; 12]), None);
        assert_eq!(payload_sequence(&[]), None);
    }
}
