//! An in-process network: queues of packets between one server and its clients, moved by
//! the same schedule sets renet's UDP transport uses. Tests step every app on one manual
//! clock, so what crosses this network is exactly reproducible. Each direction of a link
//! can be put through a [`LinkConditioner`]; the receiving side applies it on its own
//! clock, so apps whose clocks started at different moments still see the set delays.

use crate::{ConditionerSettings, LinkConditioner};
use bevy::prelude::*;
use bevy_renet::{
    RenetClient, RenetClientPlugin, RenetReceive, RenetSend, RenetServer, RenetServerPlugin,
};
use renet::ClientId;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Link {
    to_server: Mutex<VecDeque<Vec<u8>>>,
    to_client: Mutex<VecDeque<Vec<u8>>>,
    up: Mutex<LinkConditioner<Vec<u8>>>,
    down: Mutex<LinkConditioner<Vec<u8>>>,
    closed: AtomicBool,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
}

impl Link {
    fn new(up: ConditionerSettings, down: ConditionerSettings, seed: u64) -> Self {
        Self {
            to_server: Mutex::default(),
            to_client: Mutex::default(),
            up: Mutex::new(LinkConditioner::new(up, seed)),
            down: Mutex::new(LinkConditioner::new(down, seed ^ 0x5a5a_5a5a_5a5a_5a5a)),
            closed: AtomicBool::new(false),
            bytes_up: AtomicU64::new(0),
            bytes_down: AtomicU64::new(0),
        }
    }
}

/// Moves what was sent on `raw` through `conditioner` on the receiver's clock and returns
/// what has arrived by `now`.
fn arrive(
    raw: &Mutex<VecDeque<Vec<u8>>>,
    conditioner: &Mutex<LinkConditioner<Vec<u8>>>,
    now: Duration,
) -> Vec<Vec<u8>> {
    let mut conditioner = conditioner.lock().expect("memory link poisoned");
    for packet in drain(raw) {
        conditioner.send(now, packet);
    }
    conditioner.ready(now)
}

#[derive(Default)]
struct Hub {
    next_id: ClientId,
    /// Links not yet seen by the server.
    pending: Vec<(ClientId, Arc<Link>)>,
}

/// One in-process network with a single server; clients join with [`Self::connect`].
#[derive(Clone, Default)]
pub struct MemoryNetwork(Arc<Mutex<Hub>>);

impl MemoryNetwork {
    /// A new, empty network.
    pub fn new() -> Self {
        Self::default()
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
        let link = Arc::new(Link::new(up, down, seed));
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

    /// Bytes sent so far (client to server, server to client), as renet's packets.
    pub fn bytes_sent(&self) -> (u64, u64) {
        (
            self.link.bytes_up.load(Ordering::Relaxed),
            self.link.bytes_down.load(Ordering::Relaxed),
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
    links: Vec<(ClientId, Arc<Link>)>,
}

#[derive(Resource)]
struct ClientLink(MemoryClientLink);

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
    app.insert_resource(ClientLink(link))
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

/// Accepts new links, drops closed ones and hands received packets to renet.
fn server_receive(
    mut links: ResMut<ServerLinks>,
    mut server: ResMut<RenetServer>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed();
    let accepted = std::mem::take(&mut links.network.0.lock().expect("poisoned").pending);
    for (id, link) in accepted {
        server.add_connection(id);
        links.links.push((id, link));
    }
    links.links.retain(|(id, link)| {
        if link.closed.load(Ordering::Relaxed) {
            server.remove_connection(*id);
            return false;
        }
        for packet in arrive(&link.to_server, &link.up, now) {
            // A packet for a connection renet already dropped is simply discarded.
            let _ = server.process_packet_from(&packet, *id);
        }
        true
    });
}

/// Sends renet's outgoing packets and closes links the server disconnected.
fn server_send(mut links: ResMut<ServerLinks>, mut server: ResMut<RenetServer>) {
    for id in server.disconnections_id() {
        if let Some((_, link)) = links.links.iter().find(|(l, _)| *l == id) {
            link.closed.store(true, Ordering::Relaxed);
        }
        server.remove_connection(id);
    }
    links
        .links
        .retain(|(_, link)| !link.closed.load(Ordering::Relaxed));
    for (id, link) in &links.links {
        if let Ok(packets) = server.get_packets_to_send(*id) {
            let bytes: usize = packets.iter().map(Vec::len).sum();
            link.bytes_down.fetch_add(bytes as u64, Ordering::Relaxed);
            link.to_client.lock().expect("poisoned").extend(packets);
        }
    }
}

fn client_receive(link: Res<ClientLink>, mut client: ResMut<RenetClient>, time: Res<Time<Real>>) {
    if link.0.link.closed.load(Ordering::Relaxed) {
        if !client.is_disconnected() {
            client.disconnect_due_to_transport();
        }
        return;
    }
    for packet in arrive(&link.0.link.to_client, &link.0.link.down, time.elapsed()) {
        client.process_packet(&packet);
    }
}

fn client_send(link: Res<ClientLink>, mut client: ResMut<RenetClient>) {
    if client.is_disconnected() {
        link.0.close();
        return;
    }
    let packets = client.get_packets_to_send();
    let bytes: usize = packets.iter().map(Vec::len).sum();
    link.0
        .link
        .bytes_up
        .fetch_add(bytes as u64, Ordering::Relaxed);
    link.0
        .link
        .to_server
        .lock()
        .expect("poisoned")
        .extend(packets);
}
