//! An in-process network: queues of packets between one server and its clients, moved by
//! the same schedule sets renet's UDP transport uses. Tests step every app on one manual
//! clock, so what crosses this network is exactly reproducible. Each direction of a link
//! can be put through a [`LinkConditioner`]. On a network made with
//! [`MemoryNetwork::on_shared_clock`] every packet is timed on one simulated wall clock that
//! the driver sets before each app's update ([`MemoryNetwork::set_time`]): sent at the
//! sender's moment, delivered at the first update of the receiver at or after it is due,
//! so apps whose own clocks run at different rates, or drift, still see the set delays.
//! Otherwise the receiving side applies the conditioner on its own clock, so apps whose
//! clocks started at different moments still see the set delays.
//!
//! Like the UDP transports, this network bundles the packets renet produces in one update
//! into shared datagrams and paces acknowledgements ([`crate::bundle`]), so what crosses
//! it, and what the conditioner delays and loses, are the datagrams the real transports
//! send: each is one packet to the conditioner.
//!
//! Each link counts what crossed it as datagrams and as they would go over the wire: each
//! datagram's payload in a netcode packet (a prefix byte, its sequence number in as few
//! bytes as it needs, a 16-byte authentication tag) inside a UDP/IPv4 datagram (28 bytes
//! of headers).

use crate::bundle::{self, Pacer};
use crate::guard::PacketGuard;
use crate::{
    ConditionerSettings, LinkConditioner, NetStats, PacketFaults, SentToClients, UDP_IP_HEADER,
};
use bevy::prelude::*;
use bevy_renet::{
    RenetClient, RenetClientPlugin, RenetReceive, RenetSend, RenetServer, RenetServerPlugin,
};
use renet::ClientId;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bytes netcode adds to a payload packet besides its sequence number: the prefix byte
/// and the 16-byte authentication tag (ChaCha20-Poly1305).
const NETCODE_FIXED_BYTES: u64 = 1 + 16;

/// Bytes netcode spends on sequence number `seq`: as few as hold it (none for 0).
fn sequence_bytes(seq: u64) -> u64 {
    (64 - seq.leading_zeros() as u64).div_ceil(8)
}

/// What crossed one direction of a link.
#[derive(Default)]
struct Traffic {
    /// Datagrams' payloads (renet's packets, bundled), bytes.
    bytes: AtomicU64,
    /// Datagrams.
    packets: AtomicU64,
    /// Bytes on the wire: the payloads with netcode's and UDP/IP's headers.
    wire_bytes: AtomicU64,
}

impl Traffic {
    /// Counts `datagrams` sent; returns their bytes on the wire.
    fn count(&self, datagrams: &[Vec<u8>]) -> u64 {
        let mut all = 0;
        for p in datagrams {
            // Netcode numbers each connection's packets in each direction from 0.
            let seq = self.packets.fetch_add(1, Ordering::Relaxed);
            let wire = (p.len() + UDP_IP_HEADER) as u64 + NETCODE_FIXED_BYTES + sequence_bytes(seq);
            self.wire_bytes.fetch_add(wire, Ordering::Relaxed);
            self.bytes.fetch_add(p.len() as u64, Ordering::Relaxed);
            all += wire;
        }
        all
    }

    fn totals(&self) -> (u64, u64, u64) {
        (
            self.bytes.load(Ordering::Relaxed),
            self.packets.load(Ordering::Relaxed),
            self.wire_bytes.load(Ordering::Relaxed),
        )
    }
}

struct Link {
    to_server: Mutex<VecDeque<Vec<u8>>>,
    to_client: Mutex<VecDeque<Vec<u8>>>,
    up: Mutex<LinkConditioner<Vec<u8>>>,
    down: Mutex<LinkConditioner<Vec<u8>>>,
    closed: AtomicBool,
    traffic_up: Traffic,
    traffic_down: Traffic,
    /// The network's shared clock, if it has one.
    clock: Option<Arc<AtomicU64>>,
}

impl Link {
    fn new(
        up: ConditionerSettings,
        down: ConditionerSettings,
        seed: u64,
        clock: Option<Arc<AtomicU64>>,
    ) -> Self {
        Self {
            to_server: Mutex::default(),
            to_client: Mutex::default(),
            up: Mutex::new(LinkConditioner::new(up, seed)),
            down: Mutex::new(LinkConditioner::new(down, seed ^ 0x5a5a_5a5a_5a5a_5a5a)),
            closed: AtomicBool::new(false),
            traffic_up: Traffic::default(),
            traffic_down: Traffic::default(),
            clock,
        }
    }

    /// The shared clock's time, if the network has one.
    fn shared_now(&self) -> Option<Duration> {
        self.clock
            .as_ref()
            .map(|c| Duration::from_nanos(c.load(Ordering::Relaxed)))
    }

    /// Sends datagrams one way: into the conditioner at once on a shared clock, otherwise
    /// into the raw queue for the receiver to time on its own clock.
    fn send(
        &self,
        raw: &Mutex<VecDeque<Vec<u8>>>,
        conditioner: &Mutex<LinkConditioner<Vec<u8>>>,
        traffic: &Traffic,
        datagrams: Vec<Vec<u8>>,
    ) -> u64 {
        let wire = traffic.count(&datagrams);
        match self.shared_now() {
            Some(now) => {
                let mut conditioner = conditioner.lock().expect("memory link poisoned");
                for datagram in datagrams {
                    conditioner.send(now, datagram);
                }
            }
            None => raw.lock().expect("memory link poisoned").extend(datagrams),
        }
        wire
    }

    /// What has arrived one way by the receiver's clock `local_now` (or the shared
    /// clock's time, if the network has one).
    fn arrive(
        &self,
        raw: &Mutex<VecDeque<Vec<u8>>>,
        conditioner: &Mutex<LinkConditioner<Vec<u8>>>,
        local_now: Duration,
    ) -> Vec<Vec<u8>> {
        let mut conditioner = conditioner.lock().expect("memory link poisoned");
        let now = self.shared_now().unwrap_or(local_now);
        for packet in drain(raw) {
            conditioner.send(now, packet);
        }
        conditioner.ready(now)
    }
}

#[derive(Default)]
struct Hub {
    next_id: ClientId,
    /// Links not yet seen by the server.
    pending: Vec<(ClientId, Arc<Link>)>,
    /// The shared clock, nanoseconds, if packets are timed on one.
    clock: Option<Arc<AtomicU64>>,
}

/// One in-process network with a single server; clients join with [`Self::connect`].
#[derive(Clone, Default)]
pub struct MemoryNetwork(Arc<Mutex<Hub>>);

impl MemoryNetwork {
    /// A new, empty network; each receiver times packets on its own clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new, empty network whose packets are timed on one shared wall clock, starting at
    /// 0 and moved forward with [`Self::set_time`] before each app's update.
    pub fn on_shared_clock() -> Self {
        let network = Self::default();
        network.0.lock().expect("memory network poisoned").clock = Some(Arc::default());
        network
    }

    /// Sets the shared clock (a network made by [`Self::new`] has none and ignores it):
    /// packets sent from now on leave at `now`, and what is due by `now` arrives.
    pub fn set_time(&self, now: Duration) {
        if let Some(clock) = &self.0.lock().expect("memory network poisoned").clock {
            clock.store(now.as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// Opens a clean link for one client; the server accepts it on its next update.
    pub fn connect(&self) -> MemoryClientLink {
        self.connect_conditioned(
            ConditionerSettings::default(),
            ConditionerSettings::default(),
            0,
        )
    }

    /// Opens a link whose client-to-server (`up`) and server-to-client (`down`) directions
    /// misbehave as set, deterministically from `seed`.
    pub fn connect_conditioned(
        &self,
        up: ConditionerSettings,
        down: ConditionerSettings,
        seed: u64,
    ) -> MemoryClientLink {
        let mut hub = self.0.lock().expect("memory network poisoned");
        hub.next_id += 1;
        let id = hub.next_id;
        let link = Arc::new(Link::new(up, down, seed, hub.clock.clone()));
        hub.pending.push((id, link.clone()));
        MemoryClientLink { id, link }
    }
}

/// A client's end of a [`MemoryNetwork`] link.
#[derive(Clone)]
pub struct MemoryClientLink {
    id: ClientId,
    link: Arc<Link>,
}

impl MemoryClientLink {
    /// The id the server knows this client by.
    pub fn client_id(&self) -> ClientId {
        self.id
    }

    /// Cuts the link, as if the client vanished.
    pub fn close(&self) {
        self.link.closed.store(true, Ordering::Relaxed);
    }

    /// Bytes sent so far (client to server, server to client): the datagrams' payloads,
    /// renet's packets bundled.
    pub fn bytes_sent(&self) -> (u64, u64) {
        (
            self.link.traffic_up.totals().0,
            self.link.traffic_down.totals().0,
        )
    }

    /// Datagrams sent so far (client to server, server to client), each holding one or
    /// more of renet's packets.
    pub fn packets_sent(&self) -> (u64, u64) {
        (
            self.link.traffic_up.totals().1,
            self.link.traffic_down.totals().1,
        )
    }

    /// Bytes sent so far (client to server, server to client) as they would cross the
    /// wire: the payloads in netcode's datagrams (a prefix byte, the sequence number,
    /// a 16-byte tag) with 28 bytes of UDP/IPv4 headers each.
    pub fn wire_bytes_sent(&self) -> (u64, u64) {
        (
            self.link.traffic_up.totals().2,
            self.link.traffic_down.totals().2,
        )
    }

    /// How the link misbehaves now (client to server, server to client).
    pub fn conditions(&self) -> (ConditionerSettings, ConditionerSettings) {
        (
            self.link.up.lock().expect("poisoned").settings,
            self.link.down.lock().expect("poisoned").settings,
        )
    }

    /// Changes how the link misbehaves from now on.
    pub fn set_conditions(&self, up: ConditionerSettings, down: ConditionerSettings) {
        self.link.up.lock().expect("poisoned").settings = up;
        self.link.down.lock().expect("poisoned").settings = down;
    }
}

#[derive(Resource)]
struct ServerLinks {
    network: MemoryNetwork,
    links: Vec<ServerLink>,
}

/// The server's end of one client's link.
struct ServerLink {
    id: ClientId,
    link: Arc<Link>,
    /// Checks what the client sends.
    guard: PacketGuard,
    /// Bundles and paces what goes to it, on the server's clock.
    pacer: Pacer<Duration>,
}

#[derive(Resource)]
struct ClientLink(MemoryClientLink, PacketGuard, Pacer<Duration>);

impl Drop for ClientLink {
    // A client app that goes away closes its link, as a process exit closes a socket.
    fn drop(&mut self) {
        self.0.close();
    }
}

pub(crate) fn add_server_systems(app: &mut App, network: MemoryNetwork) {
    app.insert_resource(ServerLinks {
        network,
        links: Vec::new(),
    })
    .add_systems(
        PreUpdate,
        server_receive
            .in_set(RenetReceive)
            .after(RenetServerPlugin::update_system)
            .before(RenetServerPlugin::emit_server_events_system),
    )
    .add_systems(PostUpdate, server_send.in_set(RenetSend));
}

pub(crate) fn add_client_systems(app: &mut App, link: MemoryClientLink) {
    app.insert_resource(ClientLink(
        link,
        PacketGuard::from_server(),
        Pacer::default(),
    ))
    .add_systems(
        PreUpdate,
        client_receive
            .in_set(RenetReceive)
            .after(RenetClientPlugin::update_system),
    )
    .add_systems(PostUpdate, client_send.in_set(RenetSend));
}

fn drain(queue: &Mutex<VecDeque<Vec<u8>>>) -> VecDeque<Vec<u8>> {
    std::mem::take(&mut *queue.lock().expect("memory link poisoned"))
}

/// Accepts new links, drops closed ones and hands received packets to renet, each
/// datagram unbundled and each packet checked first as over UDP.
fn server_receive(
    mut links: ResMut<ServerLinks>,
    mut server: ResMut<RenetServer>,
    mut stats: ResMut<NetStats>,
    mut faults: ResMut<PacketFaults>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed();
    let accepted = std::mem::take(&mut links.network.0.lock().expect("poisoned").pending);
    for (id, link) in accepted {
        server.add_connection(id);
        links.links.push(ServerLink {
            id,
            link,
            guard: PacketGuard::from_client(),
            pacer: Pacer::default(),
        });
    }
    links.links.retain_mut(
        |ServerLink {
             id, link, guard, ..
         }| {
            if link.closed.load(Ordering::Relaxed) {
                server.remove_connection(*id);
                return false;
            }
            for datagram in link.arrive(&link.to_server, &link.up, now) {
                let Ok(packets) = bundle::unbundle(&datagram) else {
                    stats.malformed_bundles += 1;
                    continue;
                };
                for packet in packets {
                    match guard.check(packet) {
                        // A packet for a connection renet already dropped is simply discarded.
                        Ok(()) => drop(server.process_packet_from(packet, *id)),
                        Err(fault) => {
                            stats.bad_packets += 1;
                            faults.push(*id, fault);
                        }
                    }
                }
            }
            true
        },
    );
}

/// Sends renet's outgoing packets, bundled and with acknowledgements paced as over UDP,
/// and closes links the server disconnected.
fn server_send(
    mut links: ResMut<ServerLinks>,
    mut server: ResMut<RenetServer>,
    mut sent: ResMut<SentToClients>,
    time: Res<Time<Real>>,
) {
    for id in server.disconnections_id() {
        if let Some(l) = links.links.iter().find(|l| l.id == id) {
            l.link.closed.store(true, Ordering::Relaxed);
        }
        server.remove_connection(id);
    }
    links
        .links
        .retain(|l| !l.link.closed.load(Ordering::Relaxed));
    let now = time.elapsed();
    for ServerLink {
        id, link, pacer, ..
    } in &mut links.links
    {
        if let Ok(packets) = server.get_packets_to_send(*id) {
            let datagrams = pacer.payloads(packets, now);
            let wire = link.send(&link.to_client, &link.down, &link.traffic_down, datagrams);
            sent.add(*id, wire);
        }
    }
    let links = &links.links;
    sent.keep_only(|id| links.iter().any(|l| l.id == id));
}

fn client_receive(
    mut link: ResMut<ClientLink>,
    mut client: ResMut<RenetClient>,
    time: Res<Time<Real>>,
) {
    let ClientLink(link, guard, _) = &mut *link;
    if link.link.closed.load(Ordering::Relaxed) {
        if !client.is_disconnected() {
            client.disconnect_due_to_transport();
        }
        return;
    }
    let link = &link.link;
    for datagram in link.arrive(&link.to_client, &link.down, time.elapsed()) {
        // What is malformed or refused is dropped; the client counts nothing more here.
        let Ok(packets) = bundle::unbundle(&datagram) else {
            continue;
        };
        for packet in packets {
            if guard.check(packet).is_ok() {
                client.process_packet(packet);
            }
        }
    }
}

fn client_send(
    mut link: ResMut<ClientLink>,
    mut client: ResMut<RenetClient>,
    time: Res<Time<Real>>,
) {
    let ClientLink(link, _, pacer) = &mut *link;
    if client.is_disconnected() {
        link.close();
        return;
    }
    let datagrams = pacer.payloads(client.get_packets_to_send(), time.elapsed());
    let link = &link.link;
    link.send(&link.to_server, &link.up, &link.traffic_up, datagrams);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netcode_numbers_packets_in_as_few_bytes_as_they_need() {
        assert_eq!(sequence_bytes(0), 0);
        assert_eq!(sequence_bytes(1), 1);
        assert_eq!(sequence_bytes(255), 1);
        assert_eq!(sequence_bytes(256), 2);
        assert_eq!(sequence_bytes(65_535), 2);
        assert_eq!(sequence_bytes(65_536), 3);
        assert_eq!(sequence_bytes(u64::MAX), 8);
    }

    #[test]
    fn wire_bytes_add_netcode_and_udp_headers_to_each_packet() {
        let t = Traffic::default();
        let wire = t.count(&[vec![0; 100], vec![0; 10]]);
        // Sequence 0 takes no bytes, sequence 1 one byte.
        assert_eq!(t.totals(), (110, 2, 110 + 2 * (28 + 17) + 1));
        // What the server counts against a client's rate (`SentToClients`).
        assert_eq!(wire, t.totals().2);
    }
}
