//! Datagrams outside any connection: Valve's server queries (A2S), the master list's
//! heartbeats and challenges. They begin with four `0xFF` bytes, which no netcode packet
//! does (its first byte's low bits name one of seven packet types), so the transport
//! hands them to the game unread, never as junk and never at a strike, and sends what the
//! game answers from the game's own socket.

use bevy::prelude::*;
use std::net::{SocketAddr, TcpStream};

/// The header that marks a connectionless datagram.
pub const CONNECTIONLESS_HEADER: [u8; 4] = [0xFF; 4];

/// Most connectionless datagrams handed to the game a frame; more are counted in
/// [`Connectionless::dropped`] and dropped, so a query flood costs bounded time.
pub const MAX_CONNECTIONLESS_PER_FRAME: usize = 256;

/// Most replies queued a frame; the game's answers beyond it are dropped and counted.
pub const MAX_CONNECTIONLESS_REPLIES: usize = 512;

/// Largest connectionless datagram kept; a longer one is no query and is dropped.
pub const MAX_CONNECTIONLESS_BYTES: usize = 1400;

/// This frame's connectionless datagrams, and what goes back.
#[derive(Resource, Debug, Default)]
pub struct Connectionless {
    /// Received this frame: (sender, the whole datagram). Emptied by the transport each
    /// frame before it receives, so the game reads it in `PreUpdate` after
    /// [`RenetReceive`](crate::RenetReceive) or in `Update`.
    pub inbox: Vec<(SocketAddr, Vec<u8>)>,
    /// To send, from the game's socket, at the end of the frame.
    pub outbox: Vec<(SocketAddr, Vec<u8>)>,
    /// Dropped over the server's life: past a frame's limit, too long, or replies past
    /// theirs.
    pub dropped: u64,
}

impl Connectionless {
    /// Whether `bytes` is a connectionless datagram.
    pub fn is_connectionless(bytes: &[u8]) -> bool {
        bytes.starts_with(&CONNECTIONLESS_HEADER)
    }

    /// Keeps a received datagram for the game, within the frame's limit.
    pub(crate) fn receive(&mut self, from: SocketAddr, bytes: &[u8]) {
        if self.inbox.len() >= MAX_CONNECTIONLESS_PER_FRAME
            || bytes.len() > MAX_CONNECTIONLESS_BYTES
        {
            self.dropped += 1;
            return;
        }
        self.inbox.push((from, bytes.to_vec()));
    }

    /// Queues `bytes` for `to`, within the frame's limit.
    pub fn send(&mut self, to: SocketAddr, bytes: Vec<u8>) {
        if self.outbox.len() >= MAX_CONNECTIONLESS_REPLIES {
            self.dropped += 1;
            return;
        }
        self.outbox.push((to, bytes));
    }
}

/// TCP connections to the game's port that are not token requests (Source RCON), handed
/// over by the token service with the bytes it read from them, for the game to serve or
/// drop. Emptied by whoever serves them; at most [`MAX_FOREIGN_STREAMS`] wait.
#[derive(Resource, Debug, Default)]
pub struct ForeignStreams(pub Vec<(TcpStream, SocketAddr, Vec<u8>)>);

/// Most handed-over connections waiting; older ones are closed.
pub const MAX_FOREIGN_STREAMS: usize = 8;

impl ForeignStreams {
    /// Keeps a handed-over connection, closing the oldest past the limit.
    pub fn push(&mut self, stream: TcpStream, peer: SocketAddr, read: Vec<u8>) {
        if self.0.len() >= MAX_FOREIGN_STREAMS {
            self.0.remove(0);
        }
        self.0.push((stream, peer, read));
    }
}
