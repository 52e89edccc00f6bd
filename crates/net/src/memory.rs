//! An in-process network: queues of packets between one server and its clients, moved by
//! the same schedule sets renet's UDP transport uses. Tests step every app on one manual
//! clock, so what crosses this network is exactly reproducible.

use bevy::prelude::*;
use bevy_renet::{
    RenetClient, RenetClientPlugin, RenetReceive, RenetSend, RenetServer, RenetServerPlugin,
};
use renet::ClientId;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Link {
    to_server: Mutex<VecDeque<Vec<u8>>>,
    to_client: Mutex<VecDeque<Vec<u8>>>,
    closed: AtomicBool,
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

    /// Opens a link for one client; the server accepts it on its next update.
    pub fn connect(&self) -> MemoryClientLink {
        let mut hub = self.0.lock().expect("memory network poisoned");
        hub.next_id += 1;
        let id = hub.next_id;
        let link = Arc::new(Link::default());
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
fn server_receive(mut links: ResMut<ServerLinks>, mut server: ResMut<RenetServer>) {
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
        for packet in drain(&link.to_server) {
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
            link.to_client.lock().expect("poisoned").extend(packets);
        }
    }
}

fn client_receive(link: Res<ClientLink>, mut client: ResMut<RenetClient>) {
    if link.0.link.closed.load(Ordering::Relaxed) {
        if !client.is_disconnected() {
            client.disconnect_due_to_transport();
        }
        return;
    }
    for packet in drain(&link.0.link.to_client) {
        client.process_packet(&packet);
    }
}

fn client_send(link: Res<ClientLink>, mut client: ResMut<RenetClient>) {
    if client.is_disconnected() {
        link.0.close();
        return;
    }
    let packets = client.get_packets_to_send();
    link.0
        .link
        .to_server
        .lock()
        .expect("poisoned")
        .extend(packets);
}
