//! A matchmaker for Sightline: it finds a server with room for a player (a Ready
//! GameServer of an Agones fleet, through the allocator service, or one of a fixed list)
//! and seals a connect token for that player and that server's address with the key the
//! servers load (`--key-file`, run with `--no-token-service`): only whoever holds the key
//! can let a player in, and the token works for that player's address only.
//!
//! It runs as a service the game's "Quick play" asks over HTTPS ([`Service`], the game's
//! end in [`QuickPlay`]), or once from the command line for one player. The allocator is
//! spoken to over its REST API with the mutual TLS it requires. A real matchmaker adds
//! parties and skill; the queue, the allocation and the token are the parts that are
//! Sightline's.

// What a player is handed; where servers come from; the service that hands them out; the
// game's end of it.
mod allocator;
mod listed;
mod quick_play;
mod service;
mod ticket;

pub use allocator::{
    AllocateError, Allocation, Allocator, GAME_PORT_NAME, MutualTls, PLAYERS_LIST,
    allocation_request, parse_allocation,
};
pub use listed::{ASK_EVERY, ServerList};
pub use quick_play::{DEFAULT_QUEUE_WAIT, QuickPlay, check_fresh};
pub use service::{
    CONNECTIONS, Counters, QUEUE, REQUEST_RATES, Servers, Service, ServiceConfig, load_tls,
    tls_config,
};
pub use ticket::{Ticket, hex, seal_token, unhex, unix_now};
