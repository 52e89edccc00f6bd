//! Valve's Source RCON packet: `size, id, type, body\0, \0`, little-endian, over TCP. The
//! dedicated server's RCON service and every tool that talks to it (the harness's admin,
//! load tests) read and write it here, so both ends share one codec.

/// `SERVERDATA_AUTH`.
pub const SERVERDATA_AUTH: i32 = 3;
/// `SERVERDATA_AUTH_RESPONSE` (the same number as `SERVERDATA_EXECCOMMAND`, told apart by
/// direction).
pub const SERVERDATA_AUTH_RESPONSE: i32 = 2;
/// `SERVERDATA_EXECCOMMAND`.
pub const SERVERDATA_EXECCOMMAND: i32 = 2;
/// `SERVERDATA_RESPONSE_VALUE`.
pub const SERVERDATA_RESPONSE_VALUE: i32 = 0;

/// Largest packet a client may send (its size field), as Valve's servers allow.
pub const MAX_REQUEST_SIZE: i32 = 4096;

/// One RCON packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RconPacket {
    /// The request id, echoed in answers.
    pub id: i32,
    /// What it is (`SERVERDATA_*`).
    pub kind: i32,
    /// The body, without its terminating zero.
    pub body: Vec<u8>,
}

impl RconPacket {
    /// The packet's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let size = (self.body.len() + 10) as i32;
        let mut bytes = Vec::with_capacity(self.body.len() + 14);
        bytes.extend_from_slice(&size.to_le_bytes());
        bytes.extend_from_slice(&self.id.to_le_bytes());
        bytes.extend_from_slice(&self.kind.to_le_bytes());
        bytes.extend_from_slice(&self.body);
        bytes.extend_from_slice(&[0, 0]);
        bytes
    }

    /// Reads one packet from the front of `bytes`: `Ok(Some((packet, used)))`, `Ok(None)`
    /// while it is incomplete, `Err` for bytes that are no RCON packet (the connection is
    /// then closed).
    pub fn decode(bytes: &[u8]) -> Result<Option<(Self, usize)>, String> {
        let Some(size) = bytes.get(..4) else {
            return Ok(None);
        };
        let size = i32::from_le_bytes(size.try_into().expect("4 bytes"));
        if !(10..=MAX_REQUEST_SIZE).contains(&size) {
            return Err(format!(
                "packet size {size} outside 10..={MAX_REQUEST_SIZE}"
            ));
        }
        let total = 4 + size as usize;
        let Some(packet) = bytes.get(4..total) else {
            return Ok(None);
        };
        let id = i32::from_le_bytes(packet[0..4].try_into().expect("4 bytes"));
        let kind = i32::from_le_bytes(packet[4..8].try_into().expect("4 bytes"));
        let rest = &packet[8..];
        // The body ends at its first zero; the rest, up to the size, must be zeros (the
        // empty string's, and any padding a client adds, which is harmless).
        let Some(end) = rest.iter().position(|&b| b == 0) else {
            return Err("body without its terminating zero".into());
        };
        if rest.len() < end + 2 || rest[end + 1..].iter().any(|&b| b != 0) {
            return Err("packet does not end with two zeros".into());
        }
        Ok(Some((
            Self {
                id,
                kind,
                body: rest[..end].to_vec(),
            },
            total,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_and_bad_ones_are_refused() {
        let p = RconPacket {
            id: 7,
            kind: SERVERDATA_EXECCOMMAND,
            body: b"status".to_vec(),
        };
        let bytes = p.encode();
        assert_eq!(bytes.len(), 4 + 10 + 6);
        assert_eq!(
            RconPacket::decode(&bytes),
            Ok(Some((p.clone(), bytes.len())))
        );
        for cut in 0..bytes.len() {
            assert_eq!(RconPacket::decode(&bytes[..cut]), Ok(None), "{cut}");
        }
        let mut huge = bytes.clone();
        huge[..4].copy_from_slice(&(MAX_REQUEST_SIZE + 1).to_le_bytes());
        assert!(RconPacket::decode(&huge).is_err());
        let mut small = bytes.clone();
        small[..4].copy_from_slice(&9i32.to_le_bytes());
        assert!(RconPacket::decode(&small).is_err());
        let mut no_zero = bytes.clone();
        let n = no_zero.len();
        no_zero[n - 2] = b'x';
        no_zero[n - 1] = b'y';
        assert!(RconPacket::decode(&no_zero).is_err());
        // Arbitrary bytes never panic.
        let mut seed = 1u64;
        for _ in 0..20_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (seed >> 56) as usize % 40;
            let junk: Vec<u8> = (0..len)
                .map(|i| (seed >> (i % 8 * 8)) as u8 ^ i as u8)
                .collect();
            let _ = RconPacket::decode(&junk);
        }
    }
}
