//! The master list protocol, after Quake 3's (and dpmaster's): text commands after
//! `FF FF FF FF`, one space between fields, numbers in decimal, challenges as exactly
//! eight lowercase hex digits.
//!
//! | direction | packet |
//! |---|---|
//! | server → master | `heartbeat sightline <MASTER_PROTOCOL> <nonce>` |
//! | master → server (the heartbeat's source) | `getinfo <challenge> <nonce>` |
//! | server → master | `infoResponse\n\challenge\<challenge>\protocol\<game protocol>\gamename\sightline` |
//! | client → master | `getservers <game protocol> <challenge>`, challenge `00000000` at first |
//! | master → client | `challenge <challenge>`, when the request's was not valid |
//! | master → client | `getserversResponse` then entries, `\EOT` ending the last packet |
//!
//! A heartbeat only makes the master ask; a server is listed once it echoes the
//! challenge from the address it announced, which proves the address is real, and the
//! listing is refreshed only by such answers (a forged heartbeat cannot keep a dead
//! server listed). Challenges are stateless (a keyed hash of the address and the time
//! epoch), so forged heartbeats cost the master no memory. The master's `getinfo` echoes
//! the nonce of the heartbeat it answers, and a server answers only a `getinfo` carrying
//! its current heartbeat's nonce: `getinfo`s forged in the master's name cannot use up
//! the answers a server allows a heartbeat and get it delisted.
//!
//! No reply to an unproven address is larger than the packet that caused it: `getinfo`
//! (29 bytes) answers a heartbeat of at least 34, `challenge` (22 bytes) a `getservers`
//! of at least 25, which is why `getservers` always carries the challenge slot.
//!
//! List entries are `\` + IPv4 address (4 bytes) + port (2, big-endian) or `/` + IPv6
//! address (16) + port (2); each response packet is at most [`MAX_LIST_PACKET`] bytes;
//! the last one ends with `\EOT`. Only servers whose game protocol equals the request's
//! are listed.

use crate::wire::{CONNECTIONLESS, DecodeError, strip_connectionless};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The version of this master protocol, sent in heartbeats.
pub const MASTER_PROTOCOL: u32 = 2;
/// The master's usual UDP port.
pub const DEFAULT_MASTER_PORT: u16 = 27950;
/// The game name in heartbeats and info responses.
pub const GAME_TAG: &str = "sightline";
/// Largest `getserversResponse` packet.
pub const MAX_LIST_PACKET: usize = 1400;

const HEARTBEAT: &str = "heartbeat";
const GETINFO: &str = "getinfo";
const INFO_RESPONSE: &str = "infoResponse";
const GETSERVERS: &str = "getservers";
const CHALLENGE: &str = "challenge";
const SERVERS_RESPONSE: &str = "getserversResponse";
const EOT: &[u8] = b"\\EOT";
/// The challenge slot of a first `getservers`.
const NO_CHALLENGE: u32 = 0;

/// One master-protocol packet, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterPacket {
    /// A game server announces itself.
    Heartbeat {
        /// The game's tag ([`GAME_TAG`]).
        game: String,
        /// The master protocol version ([`MASTER_PROTOCOL`]).
        protocol: u32,
        /// The server's random number for this heartbeat, which the `getinfo` echoes.
        nonce: u32,
    },
    /// The master asks a server to prove its address.
    GetInfo {
        /// The challenge to echo.
        challenge: u32,
        /// The heartbeat's nonce, echoed.
        nonce: u32,
    },
    /// A server's proof.
    InfoResponse {
        /// The echoed challenge.
        challenge: u32,
        /// The server's game protocol version.
        protocol: u32,
        /// The game's tag.
        game: String,
    },
    /// A client asks for the list.
    GetServers {
        /// The game protocol version wanted.
        protocol: u32,
        /// The echoed challenge; `None` at first.
        challenge: Option<u32>,
    },
    /// The master tells a client which challenge to echo.
    Challenge(u32),
    /// One packet of the list.
    Servers {
        /// The servers in this packet.
        servers: Vec<SocketAddr>,
        /// Whether this packet ends the list.
        end: bool,
    },
}

fn text(command: &str, args: &str) -> Vec<u8> {
    let mut out = CONNECTIONLESS.to_vec();
    out.extend_from_slice(command.as_bytes());
    out.extend_from_slice(args.as_bytes());
    out
}

/// Encodes a text packet; [`MasterPacket::Servers`] goes through [`encode_server_list`].
pub fn encode(packet: &MasterPacket) -> Vec<u8> {
    match packet {
        MasterPacket::Heartbeat {
            game,
            protocol,
            nonce,
        } => text(HEARTBEAT, &format!(" {game} {protocol} {nonce:08x}")),
        MasterPacket::GetInfo { challenge, nonce } => {
            text(GETINFO, &format!(" {challenge:08x} {nonce:08x}"))
        }
        MasterPacket::InfoResponse {
            challenge,
            protocol,
            game,
        } => text(
            INFO_RESPONSE,
            &format!("\n\\challenge\\{challenge:08x}\\protocol\\{protocol}\\gamename\\{game}"),
        ),
        MasterPacket::GetServers {
            protocol,
            challenge,
        } => text(
            GETSERVERS,
            &format!(" {protocol} {:08x}", challenge.unwrap_or(NO_CHALLENGE)),
        ),
        MasterPacket::Challenge(c) => text(CHALLENGE, &format!(" {c:08x}")),
        MasterPacket::Servers { servers, end } => {
            let mut out = text(SERVERS_RESPONSE, "");
            for s in servers {
                push_entry(&mut out, *s);
            }
            if *end {
                out.extend_from_slice(EOT);
            }
            out
        }
    }
}

fn entry_len(addr: SocketAddr) -> usize {
    if addr.is_ipv4() { 7 } else { 19 }
}

fn push_entry(out: &mut Vec<u8>, addr: SocketAddr) {
    match addr.ip().to_canonical() {
        IpAddr::V4(ip) => {
            out.push(b'\\');
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.push(b'/');
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&addr.port().to_be_bytes());
}

/// The `getserversResponse` packets listing `servers`: each at most
/// [`MAX_LIST_PACKET`] bytes, the last ending with `\EOT` (one packet for an empty list).
pub fn encode_server_list(servers: &[SocketAddr]) -> Vec<Vec<u8>> {
    let header = text(SERVERS_RESPONSE, "");
    let mut packets = Vec::new();
    let mut current = header.clone();
    for s in servers {
        let s = SocketAddr::new(s.ip().to_canonical(), s.port());
        if current.len() + entry_len(s) > MAX_LIST_PACKET {
            packets.push(std::mem::replace(&mut current, header.clone()));
        }
        push_entry(&mut current, s);
    }
    if current.len() + EOT.len() > MAX_LIST_PACKET {
        packets.push(std::mem::replace(&mut current, header));
    }
    current.extend_from_slice(EOT);
    packets.push(current);
    packets
}

/// Decodes a master-protocol packet; total, like every decoder here.
pub fn decode(bytes: &[u8]) -> Result<MasterPacket, DecodeError> {
    let body = strip_connectionless(bytes)?;
    let word_len = body
        .iter()
        .position(|b| !b.is_ascii_alphabetic())
        .unwrap_or(body.len());
    let (word, rest) = body.split_at(word_len);
    if word == SERVERS_RESPONSE.as_bytes() {
        return decode_servers(rest);
    }
    let rest = std::str::from_utf8(rest).map_err(|_| DecodeError::Invalid("not text"))?;
    match word {
        w if w == HEARTBEAT.as_bytes() => {
            let [game, protocol, nonce] = args(rest)?;
            Ok(MasterPacket::Heartbeat {
                game: game.to_owned(),
                protocol: number(protocol)?,
                nonce: challenge(nonce)?,
            })
        }
        w if w == GETINFO.as_bytes() => {
            let [c, nonce] = args(rest)?;
            Ok(MasterPacket::GetInfo {
                challenge: challenge(c)?,
                nonce: challenge(nonce)?,
            })
        }
        w if w == GETSERVERS.as_bytes() => {
            let [protocol, c] = args(rest)?;
            let c = challenge(c)?;
            Ok(MasterPacket::GetServers {
                protocol: number(protocol)?,
                challenge: (c != NO_CHALLENGE).then_some(c),
            })
        }
        w if w == CHALLENGE.as_bytes() => {
            let [c] = args(rest)?;
            Ok(MasterPacket::Challenge(challenge(c)?))
        }
        w if w == INFO_RESPONSE.as_bytes() => decode_info_response(rest),
        _ => Err(DecodeError::UnexpectedType(
            word.first().copied().unwrap_or(0),
        )),
    }
}

/// Exactly `N` space-separated arguments after the command word.
fn args<const N: usize>(rest: &str) -> Result<[&str; N], DecodeError> {
    let rest = rest
        .strip_prefix(' ')
        .ok_or(DecodeError::Invalid("arguments"))?;
    let mut out = [""; N];
    let mut parts = rest.split(' ');
    for slot in &mut out {
        *slot = parts
            .next()
            .filter(|s| !s.is_empty())
            .ok_or(DecodeError::Invalid("arguments"))?;
    }
    if parts.next().is_some() {
        return Err(DecodeError::Invalid("arguments"));
    }
    Ok(out)
}

fn number(s: &str) -> Result<u32, DecodeError> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DecodeError::Invalid("number"));
    }
    s.parse().map_err(|_| DecodeError::Invalid("number"))
}

fn challenge(s: &str) -> Result<u32, DecodeError> {
    if s.len() != 8 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(DecodeError::Invalid("challenge"));
    }
    u32::from_str_radix(s, 16).map_err(|_| DecodeError::Invalid("challenge"))
}

fn decode_info_response(rest: &str) -> Result<MasterPacket, DecodeError> {
    let info = rest
        .strip_prefix("\n\\")
        .ok_or(DecodeError::Invalid("info string"))?;
    let (mut c, mut protocol, mut game) = (None, None, None);
    let mut fields = info.split('\\');
    while let Some(key) = fields.next() {
        let value = fields.next().ok_or(DecodeError::Invalid("info string"))?;
        // Unknown keys are skipped, so a later server may say more.
        match key {
            "challenge" => c = Some(challenge(value)?),
            "protocol" => protocol = Some(number(value)?),
            "gamename" => game = Some(value.to_owned()),
            _ => {}
        }
    }
    match (c, protocol, game) {
        (Some(challenge), Some(protocol), Some(game)) => Ok(MasterPacket::InfoResponse {
            challenge,
            protocol,
            game,
        }),
        _ => Err(DecodeError::Invalid("info response fields")),
    }
}

fn decode_servers(mut rest: &[u8]) -> Result<MasterPacket, DecodeError> {
    let mut servers = Vec::with_capacity(rest.len() / 7);
    loop {
        if rest.is_empty() {
            return Ok(MasterPacket::Servers {
                servers,
                end: false,
            });
        }
        if rest == EOT {
            return Ok(MasterPacket::Servers { servers, end: true });
        }
        let (ip, len): (IpAddr, usize) = match rest[0] {
            b'\\' if rest.len() >= 7 => {
                let o: [u8; 4] = rest[1..5].try_into().unwrap_or_default();
                (Ipv4Addr::from(o).into(), 7)
            }
            b'/' if rest.len() >= 19 => {
                let o: [u8; 16] = rest[1..17].try_into().unwrap_or_default();
                (Ipv6Addr::from(o).into(), 19)
            }
            _ => return Err(DecodeError::Invalid("server list entry")),
        };
        let port = u16::from_be_bytes([rest[len - 2], rest[len - 1]]);
        // Port 0 or no address cannot be joined (dpmaster pads its EOT as one).
        if port != 0 && !ip.is_unspecified() {
            servers.push(SocketAddr::new(ip.to_canonical(), port));
        }
        rest = &rest[len..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2s::tests::Rng;

    fn all() -> Vec<MasterPacket> {
        vec![
            MasterPacket::Heartbeat {
                game: GAME_TAG.into(),
                protocol: MASTER_PROTOCOL,
                nonce: 0,
            },
            MasterPacket::GetInfo {
                challenge: 0x0000_beef,
                nonce: u32::MAX,
            },
            MasterPacket::InfoResponse {
                challenge: 0xdead_beef,
                protocol: 11,
                game: GAME_TAG.into(),
            },
            MasterPacket::GetServers {
                protocol: 11,
                challenge: None,
            },
            MasterPacket::GetServers {
                protocol: 4_000_000_000,
                challenge: Some(0x1234_5678),
            },
            MasterPacket::Challenge(u32::MAX),
            MasterPacket::Servers {
                servers: vec![
                    "192.0.2.1:27015".parse().unwrap(),
                    "[2001:db8::1]:27016".parse().unwrap(),
                ],
                end: true,
            },
            MasterPacket::Servers {
                servers: vec!["69.79.84.1:27015".parse().unwrap()],
                end: false,
            },
        ]
    }

    #[test]
    fn packets_round_trip() {
        for p in all() {
            assert_eq!(decode(&encode(&p)), Ok(p.clone()), "{p:?}");
        }
    }

    #[test]
    fn unproven_replies_are_no_larger_than_their_requests() {
        let heartbeat = encode(&all()[0]);
        let getinfo = encode(&MasterPacket::GetInfo {
            challenge: 1,
            nonce: 2,
        });
        assert!(getinfo.len() <= heartbeat.len());
        let first = encode(&MasterPacket::GetServers {
            protocol: 0,
            challenge: None,
        });
        assert!(encode(&MasterPacket::Challenge(1)).len() <= first.len());
    }

    #[test]
    fn long_lists_are_split_and_end_once() {
        let servers: Vec<SocketAddr> = (0..1000u32)
            .map(|i| SocketAddr::from((Ipv4Addr::from(0x0A00_0000 + i), 27015)))
            .chain((0..100u16).map(|i| SocketAddr::from((Ipv6Addr::LOCALHOST, 1000 + i))))
            .collect();
        let packets = encode_server_list(&servers);
        assert!(packets.len() > 5);
        let mut back = Vec::new();
        for (i, p) in packets.iter().enumerate() {
            assert!(p.len() <= MAX_LIST_PACKET);
            let Ok(MasterPacket::Servers { servers, end }) = decode(p) else {
                panic!("bad packet");
            };
            assert_eq!(end, i + 1 == packets.len());
            back.extend(servers);
        }
        assert_eq!(back, servers);
        assert_eq!(
            decode(&encode_server_list(&[])[0]),
            Ok(MasterPacket::Servers {
                servers: vec![],
                end: true
            })
        );
    }

    #[test]
    fn bad_text_is_refused() {
        for bad in [
            &b"\xFF\xFF\xFF\xFFheartbeat sightline"[..],
            b"\xFF\xFF\xFF\xFFheartbeat sightline 2 1",
            b"\xFF\xFF\xFF\xFFheartbeat sightline 2",
            b"\xFF\xFF\xFF\xFFheartbeat sightline 2 0000000100",
            b"\xFF\xFF\xFF\xFFheartbeat sightline -1 00000001",
            b"\xFF\xFF\xFF\xFFgetinfo 12345678",
            b"\xFF\xFF\xFF\xFFgetservers 1",
            b"\xFF\xFF\xFF\xFFgetservers 1 1234567",
            b"\xFF\xFF\xFF\xFFgetinfo 1234567g",
            b"\xFF\xFF\xFF\xFFinfoResponse\n\\challenge\\00000001\\protocol",
            b"\xFF\xFF\xFF\xFFinfoResponse\n\\protocol\\1",
            b"\xFF\xFF\xFF\xFFgetserversResponse\\\x01\x02",
            b"\xFF\xFF\xFF\xFFrcon hello",
            b"\xFF\xFF\xFF\xFF",
            b"\xFF\xFF\xFF",
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn decoder_survives_mutated_bytes() {
        let seeds: Vec<Vec<u8>> = all().iter().map(encode).collect();
        let mut rng = Rng(4242);
        for i in 0..50_000 {
            let _ = decode(&rng.mutate(&seeds[i % seeds.len()]));
        }
    }
}
