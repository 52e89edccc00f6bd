//! netcode over UDP, with a link conditioner in the socket path.
//!
//! renet_netcode's transports own their socket, so nothing can be put between them and
//! the network; these transports drive renetcode's connection state machines (the same
//! ones renet_netcode uses) over a [`ConditionedSocket`], which can delay, drop, duplicate
//! and reorder datagrams both ways for `--fake-latency` and friends. With the conditioner
//! idle, datagrams pass straight through.
//!
//! - `socket`: the [`ConditionedSocket`] both ends share, and the packet rate both hold
//!   each other to.
//! - `server`: the server's [`UdpServerTransport`], its gatekeeping and its systems.
//! - `client`: the client's [`UdpClientTransport`], its standby connection, the keeper that
//!   covers a long frame, and its systems.
//! - `arrivals`: the share of a client's datagrams lost on the way in, by netcode's numbers.
//! - `header`: the netcode header, checked before renetcode reads it.
//! - `relayed`: a server's duties toward a relay that forwards players who cannot reach it.

// Each end uses only the socket, never the other end.
mod socket;

mod arrivals;
mod header;

mod client;
mod relayed;
mod server;

pub use client::{
    ClientSecurity, KEEPER_AFTER, MAX_HELD_PACKETS, SILENCE_BEFORE_STANDBY, UdpClientTransport,
    resume_udp, udp_client, udp_client_with_token,
};
pub(crate) use client::{client_condition, client_disconnect_on_exit, client_receive, client_send};
pub use header::netcode_readable;
pub use server::{
    ACK_SILENCE, MAX_RELIABLE_BACKLOG, RESEND_BYTES_PER_SECOND, UdpServerTransport, udp_server,
};
pub(crate) use server::{server_condition, server_disconnect_on_exit, server_receive, server_send};
pub use socket::{ConditionedSocket, UdpSetupError, WireCount};
