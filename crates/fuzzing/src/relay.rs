//! The body for a host's end of the relay ([`HostLink`]): what reaches the game's port
//! from the relay's address, from its prober and from players, with the clock moving,
//! checked against what the link promises; and both decoders of the relay protocol,
//! which must read back exactly what they were given or refuse it.
//!
//! An input is several datagrams, each after its length as two little-endian bytes and
//! led by a control byte: bits 0 and 1 say where it comes from ([`RELAY_SOURCES`]), bits
//! 4 to 7 how many seconds the clock moves on first.

use crate::transport::payloads;
use sightline_relay::{
    HostLink, HostMessage, MAX_PAYLOAD, RelayMessage, Route, Sorted, read_attach,
};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Where a datagram comes from: the relay's control port, another of its ports (where
/// probes come from), a player, and the master the host announces to.
pub const RELAY_SOURCES: [&str; 4] = [
    "203.0.113.9:27960",
    "203.0.113.9:45123",
    "198.51.100.20:50000",
    "192.0.2.50:27950",
];

fn addr(i: usize) -> SocketAddr {
    RELAY_SOURCES[i].parse().expect("a socket address")
}

/// Runs one input.
pub fn relay_link(data: &[u8]) {
    let relay = addr(0);
    let master = addr(3);
    let t0 = Instant::now();
    let mut now = t0;
    let mut link = HostLink::new(relay, vec![master], now);
    let mut delivered: Vec<SocketAddr> = Vec::new();
    for datagram in payloads(data) {
        let Some((&control, bytes)) = datagram.split_first() else {
            continue;
        };
        now += Duration::from_secs(u64::from(control >> 4));
        let from = addr(usize::from(control & 0b11));
        decoders_read_back(bytes);
        let before = link.public_addr();
        match link.sort(from, bytes, now) {
            Sorted::Game {
                from: player,
                payload,
            } => {
                assert_eq!(from, relay, "only the relay delivers");
                assert!(!payload.is_empty() && payload.len() <= MAX_PAYLOAD);
                assert!(before.is_some(), "only into an open game");
                delivered.push(player);
                // The player is answered through the relay, with what the game sends.
                let Route::Relay(wrapped) = link.route(player, b"reply", now) else {
                    panic!("{player} came through the relay and is answered directly");
                };
                assert_eq!(
                    HostMessage::decode(&wrapped),
                    Ok(HostMessage::Send {
                        session: match HostMessage::decode(&wrapped) {
                            Ok(HostMessage::Send { session, .. }) => session,
                            other => panic!("{other:?}"),
                        },
                        to: player,
                        payload: b"reply",
                    })
                );
            }
            Sorted::Direct => {
                let relayed = sightline_relay::is_relay(bytes) && from == relay;
                assert!(!relayed, "the relay's own message read as the game's");
            }
            Sorted::Taken => {}
        }
        if let Some(public) = link.public_addr() {
            assert_eq!(public.ip(), relay.ip(), "players join at the relay");
        }
        for message in link.due(now) {
            assert!(
                HostMessage::decode(&message).is_ok(),
                "the link sends what the relay reads"
            );
        }
        // Announcements never leave directly: through the relay, or held.
        assert_ne!(link.route(master, b"heartbeat", now), Route::Direct);
        for (stream, _) in link.take_opens() {
            let header = link.attach_header(stream).expect("opened in an open game");
            assert_eq!(read_attach(&header).map(|(_, n)| n), Ok(stream));
        }
        assert!(link.take_news().len() <= 3, "a datagram says little");
    }
    // A stranger never heard through the relay is answered directly.
    let stranger: SocketAddr = "192.0.2.99:1234".parse().expect("an address");
    if !delivered.contains(&stranger) {
        assert_eq!(link.route(stranger, b"x", now), Route::Direct);
    }
}

/// Whatever decodes encodes back to the same bytes.
fn decoders_read_back(bytes: &[u8]) {
    if let Ok(message) = HostMessage::decode(bytes) {
        assert_eq!(message.encode(), bytes);
    }
    if let Ok(message) = RelayMessage::decode(bytes) {
        assert_eq!(message.encode(), bytes);
    }
}
