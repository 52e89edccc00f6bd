//! The unreliable channel's two messages: what a client sends (inputs, pings) and what
//! the server sends (snapshots, pongs), each wrapped so one channel carries both.

use crate::cmds::InputPacket;
use crate::codec::{DecodeError, Wire};
use crate::delta::SnapshotPacket;
use serde::{Deserialize, Serialize};

/// Unreliable messages from a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientDatagram {
    /// This tick's input, with redundancy.
    Input(InputPacket),
    /// A clock-sync probe; the server answers at once with [`ServerDatagram::Pong`].
    Ping {
        /// The client's clock when sent, microseconds.
        client_time_us: u64,
    },
}

impl Wire for ClientDatagram {
    const MAX_BYTES: usize = InputPacket::MAX_BYTES + 4;

    fn validate(&self) -> Result<(), DecodeError> {
        match self {
            Self::Input(p) => p.validate(),
            Self::Ping { .. } => Ok(()),
        }
    }
}

/// Unreliable messages from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ServerDatagram {
    /// The world after a tick, as changes from a snapshot the client holds.
    Snapshot(SnapshotPacket),
    /// Answer to a ping.
    Pong {
        /// The client's time from the ping, echoed.
        client_time_us: u64,
        /// The server's clock when it answered, microseconds (the same clock snapshots'
        /// `server_time_us` is measured on).
        server_time_us: u64,
    },
}

impl Wire for ServerDatagram {
    /// A variant tag, the packet's length and the packet.
    const MAX_BYTES: usize = SnapshotPacket::MAX_BYTES + 4;

    fn validate(&self) -> Result<(), DecodeError> {
        match self {
            // Its form is checked as it is read; what it resolves to, once resolved.
            Self::Snapshot(_) => Ok(()),
            Self::Pong { .. } => Ok(()),
        }
    }
}
