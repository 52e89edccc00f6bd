//! The socket both ends share: a non-blocking UDP socket behind a link conditioner, what it
//! counts, and the per-peer packet rate both ends hold each other to.

use crate::{ConditionerSettings, LinkConditioner, UDP_IP_HEADER};
use bevy::prelude::*;
use renetcode::NETCODE_MAX_PACKET_BYTES;
use sightline_relay::{HostLink, Route, Sorted};
use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// renet packets a peer may send per second (and at once): a 144 fps client sends about
/// three a frame, a 128 Hz server a few hundred a second. More are dropped before renet
/// reads them: renet's work per packet is small, but not nothing.
pub const PACKETS_PER_SECOND: f64 = 1024.0;

/// Most datagrams read from the socket in one frame: a 64-player server at a 128 Hz tick
/// takes about a hundred a frame, a few hundred after one of its own stalls; a flood
/// past this many waits in the kernel's buffer instead of holding up the tick.
pub const MAX_DATAGRAMS_PER_READ: usize = 4096;

/// A peer's packets counted against [`PACKETS_PER_SECOND`] over the time they had to
/// arrive: the allowance grows at the rate over the time since the last count, up to
/// what that time allows and never less than a second's worth, so a backlog that waited
/// in the socket while this side stood still is not a flood.
#[derive(Debug, Clone)]
pub(super) struct PacketRate {
    allowance: f64,
    counted_at: Instant,
    flood_noted_at: Option<Instant>,
}

impl PacketRate {
    pub(super) fn new(now: Instant) -> Self {
        Self {
            allowance: PACKETS_PER_SECOND,
            counted_at: now,
            flood_noted_at: None,
        }
    }

    /// Takes one packet's allowance at `now`; false when it is spent.
    pub(super) fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.counted_at).as_secs_f64();
        // Packets read together (one `now`) share one refill.
        if elapsed > 0.0 {
            self.counted_at = now;
            self.allowance = (self.allowance + PACKETS_PER_SECOND * elapsed)
                .min(PACKETS_PER_SECOND * elapsed.max(1.0));
        }
        if self.allowance < 1.0 {
            return false;
        }
        self.allowance -= 1.0;
        true
    }

    /// Whether a flood should be reported now: once a second while it lasts.
    pub(super) fn report_flood(&mut self, now: Instant) -> bool {
        let due = self
            .flood_noted_at
            .is_none_or(|at| now.saturating_duration_since(at) >= Duration::from_secs(1));
        if due {
            self.flood_noted_at = Some(now);
        }
        due
    }
}

/// A socket could not be set up.
#[derive(Debug)]
pub struct UdpSetupError(String);

impl fmt::Display for UdpSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UdpSetupError {}

impl UdpSetupError {
    pub(crate) fn new(message: String) -> Self {
        Self(message)
    }
}

pub(super) fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

type Datagram = (SocketAddr, Vec<u8>);

/// What crossed a socket one way: datagrams, and bytes as the link carries them (each
/// datagram with its 28 bytes of UDP/IPv4 headers).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WireCount {
    /// Datagrams.
    pub datagrams: u64,
    /// Bytes, headers included.
    pub bytes: u64,
    /// The largest datagram's payload, bytes.
    pub largest: usize,
}

impl WireCount {
    fn count(&mut self, payload: usize) {
        self.datagrams += 1;
        self.bytes += (payload + UDP_IP_HEADER) as u64;
        self.largest = self.largest.max(payload);
    }
}

/// A non-blocking UDP socket whose traffic passes through a conditioner each way.
pub struct ConditionedSocket {
    socket: UdpSocket,
    outgoing: LinkConditioner<Datagram>,
    incoming: LinkConditioner<Datagram>,
    start: Instant,
    buffer: Box<[u8; sightline_relay::MAX_DATAGRAM]>,
    /// A server's link to a relay: its players there are answered through it.
    relay: Option<Box<HostLink>>,
    /// Datagrams that failed to send.
    pub send_errors: u64,
    /// Datagrams sent.
    pub sent: WireCount,
    /// Datagrams received (before the conditioner drops any).
    pub received: WireCount,
}

impl ConditionedSocket {
    pub(super) fn new(socket: UdpSocket) -> io::Result<Self> {
        socket.set_nonblocking(true)?;
        let seed = unix_now().as_nanos() as u64;
        Ok(Self {
            socket,
            outgoing: LinkConditioner::new(ConditionerSettings::default(), seed),
            incoming: LinkConditioner::new(ConditionerSettings::default(), seed ^ 0xa5a5),
            start: Instant::now(),
            buffer: Box::new([0; sightline_relay::MAX_DATAGRAM]),
            relay: None,
            send_errors: 0,
            sent: WireCount::default(),
            received: WireCount::default(),
        })
    }

    /// Sets how both directions misbehave: each way gets the full latency, so the round
    /// trip grows by twice `latency_ms`.
    pub fn set_conditions(&mut self, settings: ConditionerSettings) {
        self.outgoing.settings = settings;
        self.incoming.settings = settings;
    }

    /// How it misbehaves now.
    pub fn conditions(&self) -> ConditionerSettings {
        self.outgoing.settings
    }

    /// Adds what another socket counted (one this one replaced) to its own counts.
    pub(super) fn absorb(&mut self, other: &ConditionedSocket) {
        self.send_errors += other.send_errors;
        for (mine, theirs) in [
            (&mut self.sent, other.sent),
            (&mut self.received, other.received),
        ] {
            mine.datagrams += theirs.datagrams;
            mine.bytes += theirs.bytes;
            mine.largest = mine.largest.max(theirs.largest);
        }
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Queues a datagram; it leaves when the conditioner lets it.
    pub fn send_to(&mut self, bytes: &[u8], addr: SocketAddr) {
        let now = self.now();
        self.outgoing.send(now, (addr, bytes.to_vec()));
        self.flush();
    }

    /// Serves players through `link`'s relay too, from this socket.
    pub(super) fn set_relay(&mut self, link: HostLink) {
        self.relay = Some(Box::new(link));
    }

    /// The link to a relay, if there is one.
    pub(super) fn relay(&self) -> Option<&HostLink> {
        self.relay.as_deref()
    }

    /// The link to a relay, if there is one, to drive.
    pub(super) fn relay_mut(&mut self) -> Option<&mut HostLink> {
        self.relay.as_deref_mut()
    }

    /// Sends `bytes` to `addr` now, past the conditioner (the relay's own messages).
    pub(super) fn send_now(&mut self, bytes: &[u8], addr: SocketAddr) {
        match self.socket.send_to(bytes, addr) {
            Ok(_) => self.sent.count(bytes.len()),
            Err(_) => self.send_errors += 1,
        }
    }

    /// Sends whatever the conditioner has released: to a player who came through the
    /// relay, through the relay.
    pub fn flush(&mut self) {
        let now = Instant::now();
        for (addr, bytes) in self.outgoing.ready(self.now()) {
            let (addr, bytes) = match self.relay.as_deref().map(|r| r.route(addr, &bytes, now)) {
                None | Some(Route::Direct) => (addr, bytes),
                Some(Route::Relay(wrapped)) => {
                    (self.relay.as_deref().map_or(addr, HostLink::relay), wrapped)
                }
                Some(Route::Hold) => continue,
            };
            match self.socket.send_to(&bytes, addr) {
                Ok(_) => self.sent.count(bytes.len()),
                Err(e) => {
                    self.send_errors += 1;
                    debug!("UDP send to {addr} failed: {e}");
                }
            }
        }
    }

    /// Everything received that the conditioner has released, reading at most
    /// 4096 (`MAX_DATAGRAMS_PER_READ`) from the socket: a flood waits in the kernel's buffer
    /// (which drops what does not fit) instead of holding up the frame.
    pub fn receive(&mut self) -> io::Result<Vec<Datagram>> {
        let now = self.now();
        // One clock read for the read's datagrams, as the conditioner's `now`.
        let wall = Instant::now();
        for _ in 0..MAX_DATAGRAMS_PER_READ {
            match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((len, addr)) => {
                    self.received.count(len);
                    let bytes = &self.buffer[..len];
                    let (addr, bytes) = match self.relay.as_deref_mut() {
                        None => (addr, bytes),
                        Some(relay) => match relay.sort(addr, bytes, wall) {
                            Sorted::Direct => (addr, bytes),
                            Sorted::Game { from, payload } => (from, payload),
                            Sorted::Taken => continue,
                        },
                    };
                    if bytes.len() > NETCODE_MAX_PACKET_BYTES {
                        continue; // longer than any game datagram
                    }
                    self.incoming.send(now, (addr, bytes.to_vec()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                // A previous send bounced (Windows reports it on the next receive).
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(self.incoming.ready(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_s_packets_are_counted_over_the_time_they_had_to_arrive() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut rate = PacketRate::new(t0);
        let burst = PACKETS_PER_SECOND as usize;
        assert_eq!((0..2 * burst).filter(|_| rate.take(t0)).count(), burst);
        assert!(rate.report_flood(t0));
        assert!(!rate.report_flood(at(500)), "once a second");
        assert_eq!((0..burst).filter(|_| rate.take(at(500))).count(), burst / 2);
        // This side stood still 3 s: what waited meanwhile is read.
        assert_eq!(
            (0..4 * burst).filter(|_| rate.take(at(3500))).count(),
            3 * burst
        );
    }
}
