//! Sightline's transports. Game code talks only to renet's [`RenetServer`] and
//! [`RenetClient`]; the plugins here move their packets, either over UDP with
//! renet_netcode or through an in-memory [`MemoryNetwork`] that tests drive on a manual
//! clock, so the same server and client code runs in both.

mod memory;
mod udp;

pub use bevy_renet::{RenetClient, RenetReceive, RenetSend, RenetServer, RenetServerEvent};
pub use memory::{MemoryClientLink, MemoryNetwork};
pub use renet::{ClientId, DisconnectReason, ServerEvent};
pub use udp::{UdpSetupError, udp_client, udp_server};

use bevy::prelude::*;
use bevy_renet::netcode::{NetcodeClientPlugin, NetcodeServerPlugin};
use bevy_renet::{RenetClientPlugin, RenetServerPlugin};
use std::net::SocketAddr;

/// How the server is reached.
#[derive(Clone)]
pub enum ServerTransport {
    /// A UDP socket bound to this address.
    Udp {
        /// Address to bind.
        bind: SocketAddr,
        /// Address clients use, if different from `bind` (e.g. behind NAT).
        public: Option<SocketAddr>,
        /// Most simultaneous connections netcode accepts.
        max_clients: usize,
    },
    /// An in-process network.
    Memory(MemoryNetwork),
}

/// How the client reaches its server.
#[derive(Clone)]
pub enum ClientTransport {
    /// UDP to this address.
    Udp(SocketAddr),
    /// An in-process link, made by [`MemoryNetwork::connect`].
    Memory(MemoryClientLink),
}

/// Runs renet for a server on the chosen transport.
pub struct ServerNetPlugin(pub ServerTransport);

impl Plugin for ServerNetPlugin {
    fn build(&self, app: &mut App) {
        let config = sightline_protocol::connection_config();
        app.add_plugins(RenetServerPlugin);
        match &self.0 {
            ServerTransport::Udp {
                bind,
                public,
                max_clients,
            } => {
                let (server, transport) = udp_server(config, *bind, *public, *max_clients)
                    .unwrap_or_else(|e| panic!("{e}"));
                app.add_plugins(NetcodeServerPlugin)
                    .insert_resource(server)
                    .insert_resource(transport);
            }
            ServerTransport::Memory(network) => {
                app.insert_resource(RenetServer::new(config));
                memory::add_server_systems(app, network.clone());
            }
        }
    }
}

/// Runs renet for a client on the chosen transport.
pub struct ClientNetPlugin(pub ClientTransport);

impl Plugin for ClientNetPlugin {
    fn build(&self, app: &mut App) {
        let config = sightline_protocol::connection_config();
        app.add_plugins(RenetClientPlugin);
        match &self.0 {
            ClientTransport::Udp(addr) => {
                let (client, transport) =
                    udp_client(config, *addr).unwrap_or_else(|e| panic!("{e}"));
                app.add_plugins(NetcodeClientPlugin)
                    .insert_resource(client)
                    .insert_resource(transport);
            }
            ClientTransport::Memory(link) => {
                let mut client = RenetClient::new(config);
                client.set_connected();
                app.insert_resource(client);
                memory::add_client_systems(app, link.clone());
            }
        }
    }
}
