//! Source's multi-packet responses: a message over [`MAX_PACKET`] bytes travels as up to
//! [`MAX_SPLIT_PACKETS`] packets of `FE FF FF FF`, an i32 id, the u8 total, the u8 number
//! (from 0), the u16 size limit ([`SPLIT_PAYLOAD`]) and a slice of the message, which
//! itself begins with `FF FF FF FF`. Sightline never compresses.

use crate::wire::{CONNECTIONLESS, DecodeError, Reader};

/// Largest packet sent whole; larger messages are split.
pub const MAX_PACKET: usize = 1400;
/// Message bytes per split packet (Source's default).
pub const SPLIT_PAYLOAD: usize = 1248;
/// Most packets one message is split into.
pub const MAX_SPLIT_PACKETS: usize = 8;
/// Largest message a response may be; encoders leave out entries past it.
pub const MAX_MESSAGE: usize = SPLIT_PAYLOAD * MAX_SPLIT_PACKETS;

const SPLIT_HEADER: [u8; 4] = [0xFE, 0xFF, 0xFF, 0xFF];
/// Bit 31 of the id marks bzip2 compression in Source; python-a2s reads bit 15 for the
/// same, so ids keep both clear.
const ID_MASK: u32 = 0x7FFF_7FFF;

/// Whether `bytes` starts with the split header.
pub fn is_split(bytes: &[u8]) -> bool {
    bytes.starts_with(&SPLIT_HEADER)
}

/// The packets that carry `message`: itself when it fits in [`MAX_PACKET`], otherwise
/// the split form with `id`. A message over [`MAX_MESSAGE`] gives no packets at all
/// (encoders never make one), as a cut message would only mislead.
pub fn split(message: Vec<u8>, id: u32) -> Vec<Vec<u8>> {
    if message.len() <= MAX_PACKET {
        return vec![message];
    }
    if message.len() > MAX_MESSAGE {
        return Vec::new();
    }
    let chunks = message.chunks(SPLIT_PAYLOAD);
    let total = chunks.len() as u8; // at most MAX_SPLIT_PACKETS
    chunks
        .enumerate()
        .map(|(number, chunk)| {
            let mut packet = Vec::with_capacity(12 + chunk.len());
            packet.extend_from_slice(&SPLIT_HEADER);
            packet.extend_from_slice(&(id & ID_MASK).to_le_bytes());
            packet.push(total);
            packet.push(number as u8);
            packet.extend_from_slice(&(SPLIT_PAYLOAD as u16).to_le_bytes());
            packet.extend_from_slice(chunk);
            packet
        })
        .collect()
}

/// Collects the packets of one split message, in any order, holding at most
/// [`MAX_SPLIT_PACKETS`] packets of at most [`MAX_PACKET`] bytes.
#[derive(Debug, Default)]
pub struct Reassembly {
    id: Option<u32>,
    parts: Vec<Option<Vec<u8>>>,
}

impl Reassembly {
    /// An empty reassembly.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one split packet; gives the whole message (with its `FF FF FF FF` header)
    /// once every part is in. A packet of another message than the one started is
    /// ignored; a duplicate part too.
    pub fn push(&mut self, packet: &[u8]) -> Result<Option<Vec<u8>>, DecodeError> {
        let body = packet
            .strip_prefix(&SPLIT_HEADER)
            .ok_or(DecodeError::NotConnectionless)?;
        let mut r = Reader::new(body);
        let id = r.u32()?;
        let total = usize::from(r.u8()?);
        let number = usize::from(r.u8()?);
        let _size = r.u16()?;
        let payload = r.rest();
        if id & 0x8000_0000 != 0 {
            return Err(DecodeError::Invalid("compressed split packet"));
        }
        if total == 0 || total > MAX_SPLIT_PACKETS || number >= total {
            return Err(DecodeError::Invalid("split packet count"));
        }
        if payload.is_empty() || payload.len() > MAX_PACKET {
            return Err(DecodeError::Invalid("split packet size"));
        }
        match self.id {
            None => {
                self.id = Some(id);
                self.parts = vec![None; total];
            }
            Some(current) if current != id => return Ok(None),
            Some(_) if self.parts.len() != total => {
                return Err(DecodeError::Invalid("split packet total changed"));
            }
            Some(_) => {}
        }
        if self.parts[number].is_none() {
            self.parts[number] = Some(payload.to_vec());
        }
        if self.parts.iter().any(Option::is_none) {
            return Ok(None);
        }
        let message: Vec<u8> = self.parts.drain(..).flatten().flatten().collect();
        self.id = None;
        if !message.starts_with(&CONNECTIONLESS) {
            return Err(DecodeError::Invalid("split message header"));
        }
        Ok(Some(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2s::tests::{Rng, sample_players};
    use crate::a2s::{Response, decode_response, encode_players};

    #[test]
    fn small_messages_travel_whole() {
        assert_eq!(split(vec![0xFF; 1400], 1), vec![vec![0xFF; 1400]]);
    }

    #[test]
    fn sixty_four_players_split_and_reassemble_in_any_order() {
        let players = sample_players(64);
        let message = encode_players(&players);
        assert!(message.len() > MAX_PACKET);
        let mut packets = split(message.clone(), 0xFFFF_FFFF);
        assert!(packets.len() > 1 && packets.len() <= MAX_SPLIT_PACKETS);
        for p in &packets {
            assert!(p.len() <= 12 + SPLIT_PAYLOAD && is_split(p));
            let id = u32::from_le_bytes([p[4], p[5], p[6], p[7]]);
            assert_eq!(id & !ID_MASK, 0);
        }
        packets.reverse();
        let dup = packets[0].clone();
        packets.insert(1, dup);
        let mut reassembly = Reassembly::new();
        let mut done = None;
        for p in &packets {
            if let Some(m) = reassembly.push(p).unwrap() {
                done = Some(m);
            }
        }
        let done = done.expect("all parts arrived");
        assert_eq!(done, message);
        assert_eq!(decode_response(&done), Ok(Response::Players(players)));
    }

    #[test]
    fn oversized_messages_are_not_sent() {
        assert!(split(vec![0xFF; MAX_MESSAGE + 1], 3).is_empty());
        assert_eq!(split(vec![0xFF; MAX_MESSAGE], 3).len(), MAX_SPLIT_PACKETS);
    }

    #[test]
    fn bad_headers_are_refused() {
        let mut r = Reassembly::new();
        let packet = |id: u32, total: u8, number: u8| {
            let mut p = SPLIT_HEADER.to_vec();
            p.extend_from_slice(&id.to_le_bytes());
            p.extend_from_slice(&[total, number, 0xE0, 0x04, 0xFF]);
            p
        };
        assert!(r.push(&packet(0x8000_0001, 2, 0)).is_err());
        assert!(r.push(&packet(1, 0, 0)).is_err());
        assert!(r.push(&packet(1, 9, 0)).is_err());
        assert!(r.push(&packet(1, 2, 2)).is_err());
        assert_eq!(r.push(&packet(1, 2, 0)), Ok(None));
        assert_eq!(
            r.push(&packet(2, 2, 1)),
            Ok(None),
            "another message is ignored"
        );
        assert!(r.push(&packet(1, 3, 1)).is_err());
        assert_eq!(
            r.push(&packet(1, 2, 1)),
            Err(DecodeError::Invalid("split message header"))
        );
    }

    #[test]
    fn reassembly_survives_mutated_packets() {
        let packets = split(encode_players(&sample_players(64)), 9);
        let mut rng = Rng(12345);
        let mut r = Reassembly::new();
        for i in 0..20_000 {
            let bytes = rng.mutate(&packets[i % packets.len()]);
            if r.push(&bytes).is_err() {
                r = Reassembly::new();
            }
        }
    }
}
