//! The relay protocol: what a host and the relay say to each other on the relay's control
//! port (UDP, and TCP for the token exchange's streams), and the probe that tells a host
//! whether strangers reach it. Every message starts with [`MAGIC`] and a kind byte;
//! numbers are big-endian; an address is its family (4 or 6), its bytes and its port.
//!
//! | direction | message | bytes |
//! |---|---|---|
//! | host → relay | `Register` cookie (zeros at first) | 21 |
//! | relay → host | `Cookie` cookie (proves the host's address) | 21 |
//! | relay → host | `Allocated` session, secret, game port, the host's address as seen | 38 or 50 |
//! | relay → host | `Refused` reason | 6 |
//! | host → relay | `Keepalive` session, secret | 29 |
//! | relay → host | `Alive` session | 13 |
//! | host → relay | `Send` session, secret, to, payload | 36 or 48, + payload |
//! | relay → host | `Deliver` session, from, payload | 20 or 32, + payload |
//! | relay → host | `Open` session, stream number, from (a TCP stream waits) | 24 or 36 |
//! | host → relay | `Close` session, secret | 29 |
//! | host → relay | `Probe` cookie, port, nonce | 31 |
//! | relay → host's port | [`probe_datagram`] nonce (from another socket) | 16 |
//! | host → relay (TCP) | `Attach` session, secret, stream number, then the stream | 33 |
//!
//! No answer to an unproven address is larger than what asked: `Cookie` is as long as the
//! `Register` that asks for it, `Refused` shorter; a game is allocated, and a probe sent,
//! only to an address whose cookie came back. A game's datagrams ride inside `Deliver`
//! and `Send` whole: the relay cannot read them (netcode seals them) and has no key to
//! change them unnoticed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The relay protocol's magic and version.
pub const MAGIC: [u8; 4] = *b"SLR\x01";
/// The relay's usual control port (UDP and TCP).
pub const DEFAULT_RELAY_PORT: u16 = 27960;
/// Largest game datagram carried (netcode's largest packet).
pub const MAX_PAYLOAD: usize = 1400;
/// Largest relay datagram: a `Send` to an IPv6 address with the largest payload.
pub const MAX_DATAGRAM: usize = 48 + MAX_PAYLOAD;
/// Bytes of the TCP `Attach` header.
pub const ATTACH_BYTES: usize = 33;
/// The probe's first bytes: a connectionless datagram (as A2S's are), so a game port
/// that does not know it drops it as an unknown query.
pub const PROBE_PREFIX: [u8; 8] = *b"\xFF\xFF\xFF\xFFslrp";
/// Bytes of a probe datagram.
pub const PROBE_BYTES: usize = 16;

/// A registration cookie: a keyed hash of the host's address and the time.
pub type Cookie = [u8; 16];

/// A game's session on the relay: its number, and the secret only its host knows, which
/// every host message carries (so a host whose address changed keeps its game).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Session {
    /// The session's number.
    pub id: u64,
    /// Its secret.
    pub secret: [u8; 16],
}

/// What the relay says when it allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Every game place is taken.
    Full = 1,
    /// This address (or its network) holds all the games it may.
    TooManyFromYou = 2,
    /// The cookie was wrong or stale: ask again.
    BadCookie = 3,
    /// The session is not known (expired, or the relay restarted).
    UnknownSession = 4,
    /// No port of the relay's range could be opened.
    NoPort = 5,
}

impl Refusal {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => Self::Full,
            2 => Self::TooManyFromYou,
            3 => Self::BadCookie,
            4 => Self::UnknownSession,
            5 => Self::NoPort,
            _ => return None,
        })
    }

    /// Words for a player.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Full => "the relay has no room for another game",
            Self::TooManyFromYou => "the relay holds as many games from your network as it allows",
            Self::BadCookie => "the relay could not confirm your address",
            Self::UnknownSession => "the relay no longer knows this game",
            Self::NoPort => "the relay could not open a port for the game",
        }
    }
}

/// A message from a host to the relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostMessage<'a> {
    /// Asks for a game (with the cookie the relay gave), or for a cookie (zeros).
    Register {
        /// The cookie.
        cookie: Cookie,
    },
    /// Keeps the game, and tells the relay where the host now is.
    Keepalive {
        /// The game.
        session: Session,
    },
    /// A datagram to send from the game's port.
    Send {
        /// The game.
        session: Session,
        /// Where to.
        to: SocketAddr,
        /// The datagram.
        payload: &'a [u8],
    },
    /// Ends the game.
    Close {
        /// The game.
        session: Session,
    },
    /// Asks for a probe of `port` on the host's own address, from another socket.
    Probe {
        /// The cookie, which proves the address the probe goes to.
        cookie: Cookie,
        /// The port to probe.
        port: u16,
        /// What the probe carries.
        nonce: u64,
    },
}

/// A message from the relay to a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayMessage<'a> {
    /// The cookie to register (or probe) with.
    Cookie {
        /// The cookie.
        cookie: Cookie,
    },
    /// A game is open on `port` of the relay's address.
    Allocated {
        /// Its session.
        session: Session,
        /// The relay's port players dial.
        port: u16,
        /// The host's address as the relay sees it.
        observed: SocketAddr,
    },
    /// Nothing was allocated, or the session is gone.
    Refused {
        /// Why.
        reason: Refusal,
    },
    /// A keepalive's answer.
    Alive {
        /// The game's session number.
        id: u64,
    },
    /// A datagram that came to the game's port.
    Deliver {
        /// The game's session number.
        id: u64,
        /// Who sent it.
        from: SocketAddr,
        /// The datagram.
        payload: &'a [u8],
    },
    /// A TCP stream came to the game's port: attach to take it.
    Open {
        /// The game's session number.
        id: u64,
        /// The stream's number.
        stream: u32,
        /// Who opened it.
        from: SocketAddr,
    },
}

/// A relay message that could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

const REGISTER: u8 = 1;
const KEEPALIVE: u8 = 2;
const SEND: u8 = 3;
const CLOSE: u8 = 4;
const PROBE: u8 = 5;
const ATTACH: u8 = 6;
const COOKIE: u8 = 129;
const ALLOCATED: u8 = 130;
const REFUSED: u8 = 131;
const ALIVE: u8 = 132;
const DELIVER: u8 = 133;
const OPEN: u8 = 134;

/// Whether `bytes` start like a relay message (the host's transport tells them from
/// game datagrams this way, and by their source).
pub fn is_relay(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

struct Writer(Vec<u8>);

impl Writer {
    fn new(kind: u8) -> Self {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&MAGIC);
        out.push(kind);
        Self(out)
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn u64(self, v: u64) -> Self {
        self.bytes(&v.to_be_bytes())
    }
    fn session(self, s: &Session) -> Self {
        self.u64(s.id).bytes(&s.secret)
    }
    fn addr(mut self, a: SocketAddr) -> Self {
        match a.ip() {
            IpAddr::V4(v4) => {
                self.0.push(4);
                self.0.extend_from_slice(&v4.octets());
            }
            IpAddr::V6(v6) => {
                self.0.push(6);
                self.0.extend_from_slice(&v6.octets());
            }
        }
        self.bytes(&a.port().to_be_bytes())
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        self.take(N)?.try_into().map_err(|_| Malformed)
    }
    fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    fn session(&mut self) -> Result<Session, Malformed> {
        Ok(Session {
            id: self.u64()?,
            secret: self.array()?,
        })
    }
    fn addr(&mut self) -> Result<SocketAddr, Malformed> {
        let ip = match self.take(1)?[0] {
            4 => IpAddr::V4(Ipv4Addr::from(self.array::<4>()?)),
            6 => IpAddr::V6(Ipv6Addr::from(self.array::<16>()?)),
            _ => return Err(Malformed),
        };
        Ok(SocketAddr::new(ip, self.u16()?))
    }
    /// The rest, as a game datagram: not empty, at most [`MAX_PAYLOAD`].
    fn payload(&mut self) -> Result<&'a [u8], Malformed> {
        let rest = std::mem::take(&mut self.0);
        if rest.is_empty() || rest.len() > MAX_PAYLOAD {
            return Err(Malformed);
        }
        Ok(rest)
    }
    fn end(&self) -> Result<(), Malformed> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Malformed)
        }
    }
}

/// Reads the magic and returns the kind and the body.
fn open(bytes: &[u8]) -> Result<(u8, Reader<'_>), Malformed> {
    if bytes.len() > MAX_DATAGRAM || !is_relay(bytes) || bytes.len() < MAGIC.len() + 1 {
        return Err(Malformed);
    }
    Ok((bytes[MAGIC.len()], Reader(&bytes[MAGIC.len() + 1..])))
}

impl HostMessage<'_> {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Register { cookie } => Writer::new(REGISTER).bytes(cookie),
            Self::Keepalive { session } => Writer::new(KEEPALIVE).session(session),
            Self::Send {
                session,
                to,
                payload,
            } => Writer::new(SEND).session(session).addr(*to).bytes(payload),
            Self::Close { session } => Writer::new(CLOSE).session(session),
            Self::Probe {
                cookie,
                port,
                nonce,
            } => Writer::new(PROBE)
                .bytes(cookie)
                .bytes(&port.to_be_bytes())
                .u64(*nonce),
        }
        .0
    }
}

impl<'a> HostMessage<'a> {
    /// Reads a host's message; anything else is [`Malformed`].
    pub fn decode(bytes: &'a [u8]) -> Result<Self, Malformed> {
        let (kind, mut r) = open(bytes)?;
        let message = match kind {
            REGISTER => Self::Register { cookie: r.array()? },
            KEEPALIVE => Self::Keepalive {
                session: r.session()?,
            },
            SEND => Self::Send {
                session: r.session()?,
                to: r.addr()?,
                payload: r.payload()?,
            },
            CLOSE => Self::Close {
                session: r.session()?,
            },
            PROBE => Self::Probe {
                cookie: r.array()?,
                port: r.u16()?,
                nonce: r.u64()?,
            },
            _ => return Err(Malformed),
        };
        r.end()?;
        Ok(message)
    }
}

impl RelayMessage<'_> {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Cookie { cookie } => Writer::new(COOKIE).bytes(cookie),
            Self::Allocated {
                session,
                port,
                observed,
            } => Writer::new(ALLOCATED)
                .session(session)
                .bytes(&port.to_be_bytes())
                .addr(*observed),
            Self::Refused { reason } => Writer::new(REFUSED).bytes(&[*reason as u8]),
            Self::Alive { id } => Writer::new(ALIVE).u64(*id),
            Self::Deliver { id, from, payload } => {
                Writer::new(DELIVER).u64(*id).addr(*from).bytes(payload)
            }
            Self::Open { id, stream, from } => Writer::new(OPEN)
                .u64(*id)
                .bytes(&stream.to_be_bytes())
                .addr(*from),
        }
        .0
    }
}

impl<'a> RelayMessage<'a> {
    /// Reads the relay's message; anything else is [`Malformed`].
    pub fn decode(bytes: &'a [u8]) -> Result<Self, Malformed> {
        let (kind, mut r) = open(bytes)?;
        let message = match kind {
            COOKIE => Self::Cookie { cookie: r.array()? },
            ALLOCATED => Self::Allocated {
                session: r.session()?,
                port: r.u16()?,
                observed: r.addr()?,
            },
            REFUSED => Self::Refused {
                reason: Refusal::from_code(r.take(1)?[0]).ok_or(Malformed)?,
            },
            ALIVE => Self::Alive { id: r.u64()? },
            DELIVER => Self::Deliver {
                id: r.u64()?,
                from: r.addr()?,
                payload: r.payload()?,
            },
            OPEN => Self::Open {
                id: r.u64()?,
                stream: r.u32()?,
                from: r.addr()?,
            },
            _ => return Err(Malformed),
        };
        r.end()?;
        Ok(message)
    }
}

/// The header a host writes on a TCP stream to the relay's control port to take the
/// stream `stream` of its game; the relay joins the two and says nothing.
pub fn attach_header(session: &Session, stream: u32) -> [u8; ATTACH_BYTES] {
    let bytes = Writer::new(ATTACH)
        .session(session)
        .bytes(&stream.to_be_bytes())
        .0;
    bytes.try_into().unwrap_or([0; ATTACH_BYTES])
}

/// Reads an attach header: the session and the stream number.
pub fn read_attach(bytes: &[u8; ATTACH_BYTES]) -> Result<(Session, u32), Malformed> {
    let (kind, mut r) = open(bytes)?;
    if kind != ATTACH {
        return Err(Malformed);
    }
    let session = r.session()?;
    let stream = r.u32()?;
    r.end()?;
    Ok((session, stream))
}

/// The probe the relay sends to a host's port: [`PROBE_PREFIX`] and the nonce.
pub fn probe_datagram(nonce: u64) -> [u8; PROBE_BYTES] {
    let mut out = [0; PROBE_BYTES];
    out[..8].copy_from_slice(&PROBE_PREFIX);
    out[8..].copy_from_slice(&nonce.to_be_bytes());
    out
}

/// The nonce of a probe datagram, if `bytes` is one.
pub fn probe_nonce(bytes: &[u8]) -> Option<u64> {
    if bytes.len() != PROBE_BYTES || !bytes.starts_with(&PROBE_PREFIX) {
        return None;
    }
    Some(u64::from_be_bytes(bytes[8..].try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn session() -> Session {
        Session {
            id: 0x0102_0304_0506_0708,
            secret: [9; 16],
        }
    }

    fn v4() -> SocketAddr {
        "192.0.2.7:27015".parse().unwrap()
    }

    fn v6() -> SocketAddr {
        "[2001:db8::1]:40000".parse().unwrap()
    }

    #[test]
    fn every_message_reads_back_at_the_size_the_table_gives() {
        let payload = [7u8; 100];
        let host = [
            (HostMessage::Register { cookie: [3; 16] }, 21),
            (HostMessage::Keepalive { session: session() }, 29),
            (
                HostMessage::Send {
                    session: session(),
                    to: v4(),
                    payload: &payload,
                },
                36 + 100,
            ),
            (
                HostMessage::Send {
                    session: session(),
                    to: v6(),
                    payload: &payload,
                },
                48 + 100,
            ),
            (HostMessage::Close { session: session() }, 29),
            (
                HostMessage::Probe {
                    cookie: [1; 16],
                    port: 27015,
                    nonce: 42,
                },
                31,
            ),
        ];
        for (message, len) in host {
            let bytes = message.encode();
            assert_eq!(bytes.len(), len, "{message:?}");
            assert_eq!(HostMessage::decode(&bytes), Ok(message.clone()));
            assert_eq!(RelayMessage::decode(&bytes), Err(Malformed), "one way only");
        }
        let relay = [
            (RelayMessage::Cookie { cookie: [3; 16] }, 21),
            (
                RelayMessage::Allocated {
                    session: session(),
                    port: 28000,
                    observed: v4(),
                },
                38,
            ),
            (
                RelayMessage::Allocated {
                    session: session(),
                    port: 28000,
                    observed: v6(),
                },
                50,
            ),
            (
                RelayMessage::Refused {
                    reason: Refusal::Full,
                },
                6,
            ),
            (RelayMessage::Alive { id: 5 }, 13),
            (
                RelayMessage::Deliver {
                    id: 5,
                    from: v4(),
                    payload: &payload,
                },
                20 + 100,
            ),
            (
                RelayMessage::Open {
                    id: 5,
                    stream: 9,
                    from: v6(),
                },
                36,
            ),
        ];
        for (message, len) in relay {
            let bytes = message.encode();
            assert_eq!(bytes.len(), len, "{message:?}");
            assert_eq!(RelayMessage::decode(&bytes), Ok(message.clone()));
        }
        let header = attach_header(&session(), 77);
        assert_eq!(read_attach(&header), Ok((session(), 77)));
        assert_eq!(probe_nonce(&probe_datagram(0xfeed)), Some(0xfeed));
    }

    #[test]
    fn payloads_are_never_empty_or_longer_than_netcode_s_largest_packet() {
        for len in [0, MAX_PAYLOAD + 1] {
            let payload = vec![1u8; len];
            let bytes = RelayMessage::Deliver {
                id: 1,
                from: v4(),
                payload: &payload,
            }
            .encode();
            assert_eq!(RelayMessage::decode(&bytes), Err(Malformed), "{len} bytes");
        }
        let largest = vec![1u8; MAX_PAYLOAD];
        let send = HostMessage::Send {
            session: session(),
            to: v6(),
            payload: &largest,
        }
        .encode();
        assert_eq!(send.len(), MAX_DATAGRAM);
        assert!(HostMessage::decode(&send).is_ok());
    }

    #[test]
    fn trailing_bytes_and_unknown_kinds_and_families_are_refused() {
        let mut bytes = HostMessage::Keepalive { session: session() }.encode();
        bytes.push(0);
        assert_eq!(HostMessage::decode(&bytes), Err(Malformed));
        let mut open = RelayMessage::Open {
            id: 1,
            stream: 2,
            from: v4(),
        }
        .encode();
        open[MAGIC.len() + 1 + 12] = 5; // the family byte
        assert_eq!(RelayMessage::decode(&open), Err(Malformed));
        let mut refused = RelayMessage::Refused {
            reason: Refusal::Full,
        }
        .encode();
        refused[5] = 99;
        assert_eq!(RelayMessage::decode(&refused), Err(Malformed));
        assert_eq!(HostMessage::decode(b"SLR\x01\x7f"), Err(Malformed));
        assert_eq!(probe_nonce(b"\xFF\xFF\xFF\xFFslrp1234567"), None);
    }

    proptest! {
        #[test]
        fn any_bytes_decode_or_fail_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..1600)) {
            let _ = HostMessage::decode(&bytes);
            let _ = RelayMessage::decode(&bytes);
            let mut with_magic = MAGIC.to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = HostMessage::decode(&with_magic);
            let _ = RelayMessage::decode(&with_magic);
            if let Ok(header) = <[u8; ATTACH_BYTES]>::try_from(&with_magic[..ATTACH_BYTES.min(with_magic.len())]) {
                let _ = read_attach(&header);
            }
        }

        #[test]
        fn sends_round_trip(id in any::<u64>(), secret in any::<[u8; 16]>(), port in any::<u16>(),
                            v4 in any::<[u8; 4]>(), payload in proptest::collection::vec(any::<u8>(), 1..=MAX_PAYLOAD)) {
            let session = Session { id, secret };
            let to = SocketAddr::from((v4, port));
            let message = HostMessage::Send { session, to, payload: &payload };
            let bytes = message.encode();
            prop_assert_eq!(HostMessage::decode(&bytes), Ok(message.clone()));
        }
    }
}
