//! One connection: where it is in its life, its conduct, and what happens to it when it
//! misbehaves; the index from renet's ids to connections, and the player slots.

use crate::conduct::{Conduct, Offence};
use crate::stats::ServerStats;
use crate::wire::send_reliable;
use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use sightline_net::{ClientId, PacketFault, RenetServer};
use sightline_protocol::ServerMessage;
use sightline_sim::PlayerId;
use std::collections::BTreeSet;

/// Chat lines a player may send in a burst, and lines regained per second.
const CHAT_BURST: f32 = 5.0;
const CHAT_PER_SECOND: f32 = 1.0;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConnectionStage {
    /// Connected at this time, waiting for Hello.
    AwaitingHello {
        /// When it connected, real seconds.
        since: f64,
    },
    /// Welcomed and in the game.
    Playing,
    /// Told why it may not play; dropped shortly after.
    Refused {
        /// When, real seconds.
        at: f64,
    },
}

/// A player's own key for lifetime statistics, from their Hello. Kept on the server:
/// nothing sends it to other players.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayerKeyOf(pub sightline_protocol::PlayerKey);

/// One network connection; once playing, the same entity is its player.
#[derive(Component, Debug)]
pub struct Connection {
    /// renet's id for it.
    pub client_id: ClientId,
    /// Where it is in its life.
    pub stage: ConnectionStage,
    /// Messages from it that failed to decode (saturating).
    pub malformed: u32,
    /// Its strikes and budgets.
    pub conduct: Conduct,
    /// When it connected, real seconds (for the host's `status`).
    pub connected_at: f64,
    /// Its round trip as the server times it (its ping).
    pub round_trip: RoundTrip,
    chat_tokens: f32,
    chat_updated: f64,
    /// When a refused transport packet from it was last logged.
    fault_logged_at: Option<f64>,
}

/// A client's round trip as the server times it: from a snapshot leaving to the first
/// input packet acknowledging it, smoothed as TCP smooths its own (each sample an eighth).
/// Like a ping in Quake or Source it includes the client's wait for its next frame and
/// the server's for its next read. renet's estimate is longer by up to
/// [`sightline_net::ACK_HOLD`]: it waits for acknowledgement packets, which the
/// transports hold back that long.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RoundTrip(Option<f64>);

/// A connection's ping, seconds: the server's own timing (`RoundTrip`), or renet's
/// before the first sample.
pub fn ping_seconds(conn: &Connection, server: &RenetServer) -> f64 {
    conn.round_trip
        .seconds()
        .unwrap_or_else(|| server.rtt(conn.client_id))
}

/// Longest round trip sample taken, seconds: an acknowledgement later than that is a
/// stalled client, not its link.
const MAX_ROUND_TRIP_SAMPLE: f64 = 5.0;

impl RoundTrip {
    /// Takes a sample, seconds; a negative or not finite one is ignored.
    pub fn sample(&mut self, seconds: f64) {
        if !(seconds.is_finite() && seconds >= 0.0) {
            return;
        }
        let s = seconds.min(MAX_ROUND_TRIP_SAMPLE);
        self.0 = Some(self.0.map_or(s, |rtt| rtt * 0.875 + s * 0.125));
    }

    /// The smoothed round trip, seconds; `None` before a sample.
    pub fn seconds(&self) -> Option<f64> {
        self.0
    }
}

/// Seconds between log lines about one connection's refused transport packets: the
/// rest are counted, not logged, so no sender can flood the log.
const FAULT_LOG_INTERVAL: f64 = 60.0;

impl Connection {
    /// A connection made at `now`, waiting for Hello.
    pub(crate) fn new(client_id: ClientId, now: f64) -> Self {
        Self {
            client_id,
            stage: ConnectionStage::AwaitingHello { since: now },
            malformed: 0,
            conduct: Conduct::new(now),
            connected_at: now,
            round_trip: RoundTrip::default(),
            chat_tokens: CHAT_BURST,
            chat_updated: now,
            fault_logged_at: None,
        }
    }

    /// Whether it may chat now: a burst of [`CHAT_BURST`] lines, then one a second.
    pub(crate) fn allow_chat(&mut self, now: f64) -> bool {
        let regained = (now - self.chat_updated) as f32 * CHAT_PER_SECOND;
        self.chat_tokens = (self.chat_tokens + regained).min(CHAT_BURST);
        self.chat_updated = now;
        if self.chat_tokens >= 1.0 {
            self.chat_tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Records an offence; past the threshold the connection is told why and kicked.
    pub(crate) fn offend(
        &mut self,
        server: &mut RenetServer,
        offence: Offence,
        now: f64,
        stats: &mut ServerStats,
    ) {
        stats.strikes = stats.strikes.saturating_add(u64::from(offence.weight()));
        if let Some(reason) = self.conduct.strike(offence, now) {
            self.kick(server, reason, now, stats);
        }
    }

    /// Counts a message that failed to decode, and strikes its sender.
    pub(crate) fn offend_malformed(
        &mut self,
        server: &mut RenetServer,
        empty: bool,
        now: f64,
        stats: &mut ServerStats,
    ) {
        self.malformed = self.malformed.saturating_add(1);
        stats.malformed_packets = stats.malformed_packets.saturating_add(1);
        let offence = if empty {
            Offence::Empty
        } else {
            Offence::Malformed
        };
        self.offend(server, offence, now, stats);
    }

    /// Strikes the sender of a transport packet the transport refused (a flood of them,
    /// reported once a second while it lasts, as a flood), logging it at most once per
    /// [`FAULT_LOG_INTERVAL`].
    pub(crate) fn refuse_packet(
        &mut self,
        server: &mut RenetServer,
        fault: PacketFault,
        now: f64,
        stats: &mut ServerStats,
    ) {
        if self
            .fault_logged_at
            .is_none_or(|at| now - at >= FAULT_LOG_INTERVAL)
        {
            self.fault_logged_at = Some(now);
            info!(
                "client {} sent {fault}; refused (more are counted, not logged)",
                self.client_id
            );
        }
        let offence = match fault {
            PacketFault::TooMany => Offence::Flood,
            _ => Offence::Malformed,
        };
        self.offend(server, offence, now, stats);
    }

    /// Counts a command no honest client could send, and strikes its sender.
    pub(crate) fn refuse_command(
        &mut self,
        server: &mut RenetServer,
        now: f64,
        stats: &mut ServerStats,
    ) {
        stats.refused_commands = stats.refused_commands.saturating_add(1);
        self.offend(server, Offence::ImpossibleInput, now, stats);
    }

    /// Kicks it, saying why, and counts the kick; one already refused is left as it is.
    pub fn kick(
        &mut self,
        server: &mut RenetServer,
        reason: String,
        now: f64,
        stats: &mut ServerStats,
    ) {
        if matches!(self.stage, ConnectionStage::Refused { .. }) {
            return;
        }
        stats.kicks = stats.kicks.saturating_add(1);
        self.refuse(server, reason, now);
    }

    /// Tells the client why it may not play (or play on), to be dropped after a grace.
    ///
    /// Sent at once rather than through the outbox: the outbox sends only to connections
    /// in the game, and this one leaves it now, so the reason is the last message it gets.
    pub fn refuse(&mut self, server: &mut RenetServer, reason: String, now: f64) {
        info!("refused client {}: {reason}", self.client_id);
        send_reliable(server, self.client_id, &ServerMessage::Refused { reason });
        self.stage = ConnectionStage::Refused { at: now };
    }
}

/// Seconds after a connection's first datagram in its new role (after a change between
/// watching and playing) in which datagrams of the old role (input from a new spectator,
/// acknowledgements from a new player) are still leftovers, not offences: until then its
/// client has not heard of the change (a round trip, a hitch, an outage), and sent before
/// it, they may arrive a little after its first datagram in the new role.
pub const SWITCH_GRACE: f64 = 2.0;

/// That the connection moved between watching and playing, and when its client was first
/// heard in the new role, real seconds.
#[derive(Component, Debug, Clone, Copy, Default)]
pub(crate) struct Switched {
    heard: Option<f64>,
}

impl Switched {
    /// A datagram of the new role arrived at `now`.
    pub(crate) fn hear(&mut self, now: f64) {
        self.heard.get_or_insert(now);
    }

    /// Whether a datagram of the role left, arriving at `now`, may have been sent before
    /// the client heard.
    pub(crate) fn leftover(&self, now: f64) -> bool {
        self.heard.is_none_or(|at| now - at < SWITCH_GRACE)
    }
}

/// Finds a connection's entity by renet id.
#[derive(Resource, Default)]
pub struct ClientIndex(pub HashMap<ClientId, Entity>);

/// Player ids in use, bots included, up to the server's limit and never past
/// [`MAX_PLAYERS`](crate::MAX_PLAYERS).
#[derive(Resource, Debug)]
pub struct PlayerSlots {
    max: u8,
    used: BTreeSet<u8>,
}

impl PlayerSlots {
    /// Room for `max` players, or [`MAX_PLAYERS`](crate::MAX_PLAYERS) if that is fewer.
    pub fn new(max: u8) -> Self {
        Self {
            max: max.min(crate::MAX_PLAYERS),
            used: BTreeSet::new(),
        }
    }

    /// Takes the lowest free id, if any.
    pub fn take(&mut self) -> Option<PlayerId> {
        let id = (0..self.max).find(|i| !self.used.contains(i))?;
        self.used.insert(id);
        Some(PlayerId(id))
    }

    /// Frees an id.
    pub fn release(&mut self, id: PlayerId) {
        self.used.remove(&id.0);
    }

    /// Players present.
    pub fn len(&self) -> usize {
        self.used.len()
    }

    /// Whether nobody is present.
    pub fn is_empty(&self) -> bool {
        self.used.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_stop_at_what_a_snapshot_can_describe() {
        let mut slots = PlayerSlots::new(u8::MAX);
        let taken: Vec<_> = std::iter::from_fn(|| slots.take()).collect();
        assert_eq!(taken.len(), usize::from(crate::MAX_PLAYERS));
        assert_eq!(taken.last(), Some(&PlayerId(crate::MAX_PLAYERS - 1)));
        slots.release(PlayerId(3));
        assert_eq!(slots.take(), Some(PlayerId(3)));
        assert_eq!(slots.take(), None);
    }

    #[test]
    fn the_round_trip_follows_its_samples_an_eighth_at_a_time_and_ignores_nonsense() {
        let mut rtt = RoundTrip::default();
        assert_eq!(rtt.seconds(), None);
        rtt.sample(f64::NAN);
        rtt.sample(-1.0);
        assert_eq!(rtt.seconds(), None);
        rtt.sample(0.080);
        assert_eq!(rtt.seconds(), Some(0.080));
        rtt.sample(0.160);
        assert!((rtt.seconds().unwrap() - 0.090).abs() < 1e-12);
        // A stalled client's acknowledgement counts as the longest sample taken.
        let mut stalled = RoundTrip::default();
        stalled.sample(1e9);
        assert_eq!(stalled.seconds(), Some(MAX_ROUND_TRIP_SAMPLE));
    }

    #[test]
    fn slots_hand_out_the_lowest_free_id_up_to_the_limit() {
        let mut slots = PlayerSlots::new(2);
        assert_eq!(slots.take(), Some(PlayerId(0)));
        assert_eq!(slots.take(), Some(PlayerId(1)));
        assert_eq!(slots.take(), None);
        slots.release(PlayerId(0));
        assert_eq!(slots.take(), Some(PlayerId(0)));
        assert_eq!(slots.len(), 2);
    }

    #[test]
    fn chat_is_rate_limited() {
        let mut c = Connection::new(1, 0.0);
        let sent = (0..10).filter(|_| c.allow_chat(0.0)).count();
        assert_eq!(sent, CHAT_BURST as usize);
        assert!(!c.allow_chat(0.5));
        assert!(c.allow_chat(1.6));
    }

    #[test]
    fn enough_offences_refuse_the_connection() {
        let mut server = RenetServer::new(sightline_protocol::connection_config());
        server.add_connection(1);
        let mut stats = ServerStats::default();
        let mut c = Connection::new(1, 0.0);
        c.stage = ConnectionStage::Playing;
        for _ in 0..crate::KICK_STRIKES / 2 - 1 {
            c.refuse_command(&mut server, 0.0, &mut stats);
        }
        assert_eq!(c.stage, ConnectionStage::Playing);
        c.offend_malformed(&mut server, true, 0.0, &mut stats);
        c.offend_malformed(&mut server, false, 0.0, &mut stats);
        assert_eq!(c.stage, ConnectionStage::Refused { at: 0.0 });
        assert_eq!((stats.kicks, stats.malformed_packets), (1, 2));
        assert_eq!(stats.strikes, u64::from(crate::KICK_STRIKES));
    }
}
