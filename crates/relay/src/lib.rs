//! Sightline's relay, for a game whose host no stranger can reach (a router that opens
//! no port, a carrier-grade NAT): the host registers with the relay from the game's own
//! port, the relay gives it a port of its own, and players dial that port as they would
//! the host's. Datagrams and the token exchange's TCP streams are forwarded whole; netcode
//! seals the game's datagrams and the exchange seals the token, so the relay can neither
//! read nor change them. Every game, player, stream and probe is bounded, per game and per
//! address.
//!
//! The relay also answers a host's question "can strangers reach me?" by probing the
//! host's port from a socket the host never spoke to.

// The protocol; the relay service and what it counts; a host's end, without sockets.
mod counters;
mod host;
mod service;
mod wire;

pub use counters::{Counter, Counters, Traffic};
pub use host::{HostLink, KEEPALIVE_INTERVAL, News, Probed, Route, Sorted};
pub use service::{Relay, RelayConfig};
pub use wire::{
    ATTACH_BYTES, Cookie, DEFAULT_RELAY_PORT, HostMessage, MAGIC, MAX_DATAGRAM, MAX_PAYLOAD,
    Malformed, PROBE_BYTES, PROBE_PREFIX, Refusal, RelayMessage, Session, attach_header, is_relay,
    probe_datagram, probe_nonce, read_attach,
};
