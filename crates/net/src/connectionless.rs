//! Datagrams outside any connection: Valve's server queries (A2S), the master list's
//! heartbeats and challenges. They begin with four `0xFF` bytes, which no netcode packet
//! does (its first byte's low bits name one of seven packet types), so the transport
//! hands them to the game unread, never as junk and never at a strike, and sends what the
//! game answers from the game's own socket.

use bevy::prelude::*;
use sightline_limits::{HostKey, oldest_of_busiest};
use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};

/// The header that marks a connectionless datagram.
pub const CONNECTIONLESS_HEADER: [u8; 4] = [0xFF; 4];

/// Most connectionless datagrams handed to the game a frame; more are counted in
/// [`Connectionless::dropped`] and dropped, so a query flood costs bounded time.
pub const MAX_CONNECTIONLESS_PER_FRAME: usize = 256;

/// Most connectionless datagrams from one host handed to the game a frame, so that one
/// host's flood cannot fill the frame's share and crowd out everyone else's queries
/// (the game's own budgets, per asker, then decide what is answered).
pub const MAX_CONNECTIONLESS_PER_HOST: u16 = 16;

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
    /// Dropped over the server's life: past a frame's limit or a host's, too long, or
    /// replies past theirs.
    pub dropped: u64,
    /// Datagrams kept this frame from each host.
    from_host: HashMap<HostKey, u16>,
}

impl Connectionless {
    /// Whether `bytes` is a connectionless datagram.
    pub fn is_connectionless(bytes: &[u8]) -> bool {
        bytes.starts_with(&CONNECTIONLESS_HEADER)
    }

    /// Empties the inbox for a new frame's datagrams.
    pub(crate) fn begin_frame(&mut self) {
        self.inbox.clear();
        self.from_host.clear();
    }

    /// Keeps a received datagram for the game, within the frame's limit and its host's.
    pub(crate) fn receive(&mut self, from: SocketAddr, bytes: &[u8]) {
        if self.inbox.len() >= MAX_CONNECTIONLESS_PER_FRAME
            || bytes.len() > MAX_CONNECTIONLESS_BYTES
        {
            self.dropped += 1;
            return;
        }
        let kept = self.from_host.entry(HostKey::of(from.ip())).or_default();
        if *kept >= MAX_CONNECTIONLESS_PER_HOST {
            self.dropped += 1;
            return;
        }
        *kept += 1;
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

/// Most handed-over connections waiting; past it one is closed.
pub const MAX_FOREIGN_STREAMS: usize = 8;

impl ForeignStreams {
    /// Keeps a handed-over connection, past the limit closing the oldest of the host with
    /// the most waiting (so one host's flood of connections closes its own).
    pub fn push(&mut self, stream: TcpStream, peer: SocketAddr, read: Vec<u8>) {
        if self.0.len() >= MAX_FOREIGN_STREAMS {
            let hosts: Vec<HostKey> = self.0.iter().map(|(_, p, _)| HostKey::of(p.ip())).collect();
            if let Some(i) = oldest_of_busiest(&hosts) {
                self.0.remove(i);
            }
        }
        self.0.push((stream, peer, read));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hosts_flood_leaves_room_in_the_frame_for_others() {
        let mut c = Connectionless::default();
        let flooder: SocketAddr = "198.51.100.1:5000".parse().unwrap();
        let asker: SocketAddr = "198.51.100.2:5000".parse().unwrap();
        for port in 0..1000 {
            c.receive(
                SocketAddr::new(flooder.ip(), port),
                b"\xFF\xFF\xFF\xFFTSource",
            );
        }
        c.receive(asker, b"\xFF\xFF\xFF\xFFTSource");
        assert_eq!(c.inbox.len(), MAX_CONNECTIONLESS_PER_HOST as usize + 1);
        assert_eq!(c.inbox.last().map(|(from, _)| *from), Some(asker));
        assert_eq!(c.dropped, 1000 - u64::from(MAX_CONNECTIONLESS_PER_HOST));
        c.begin_frame();
        c.receive(flooder, b"\xFF\xFF\xFF\xFFTSource");
        assert_eq!(c.inbox.len(), 1, "a new frame, a new share");
    }
}
