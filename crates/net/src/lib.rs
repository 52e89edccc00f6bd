//! Sightline's transports. Game code talks only to renet's [`RenetServer`] and
//! [`RenetClient`]; the plugins here move their packets, either over UDP with
//! renet_netcode or through an in-memory [`MemoryNetwork`] that tests drive on a manual
//! clock, so the same server and client code runs in both.

mod cli;
mod clock;
mod conditioner;
mod memory;
mod shutdown;
mod udp;

pub use bevy_renet::{RenetClient, RenetReceive, RenetSend, RenetServer, RenetServerEvent};
pub use cli::parse_args;
pub use clock::{CLOCK_WINDOW, ClockSync, SLEW_RATE, STEP_THRESHOLD, ServerClock};
pub use conditioner::{ConditionerSettings, LinkConditioner};
pub use memory::{MemoryClientLink, MemoryNetwork};
pub use renet::{ClientId, DisconnectReason, ServerEvent};
pub use shutdown::{RunFor, ShutdownPlugin, ShutdownSignal};
pub use udp::{UdpSetupError, udp_client, udp_server};

use bevy::prelude::*;
use bevy_renet::netcode::{
    NetcodeClientPlugin, NetcodeClientTransport, NetcodeServerPlugin, NetcodeServerTransport,
};
use bevy_renet::{RenetClientPlugin, RenetServerPlugin};
use std::net::SocketAddr;
use std::sync::Mutex;

/// Runs renet for a server: over UDP ([`Self::udp`]) or an in-memory network.
pub struct ServerNetPlugin(ServerTransport);

enum ServerTransport {
    // Built eagerly so socket errors reach the caller; taken out once by `build`.
    Udp(Mutex<Option<Box<(RenetServer, NetcodeServerTransport)>>>),
    Memory(MemoryNetwork),
}

impl ServerNetPlugin {
    /// Binds a UDP socket at `bind` for up to `max_clients` connections. `public` is the
    /// address clients use when it differs from the bound one.
    pub fn udp(
        bind: SocketAddr,
        public: Option<SocketAddr>,
        max_clients: usize,
    ) -> Result<(Self, SocketAddr), UdpSetupError> {
        let (server, transport) = udp_server(
            sightline_protocol::connection_config(),
            bind,
            public,
            max_clients,
        )?;
        let local = transport.addresses()[0];
        Ok((
            Self(ServerTransport::Udp(Mutex::new(Some(Box::new((
                server, transport,
            )))))),
            local,
        ))
    }

    /// Serves clients of an in-process network.
    pub fn memory(network: MemoryNetwork) -> Self {
        Self(ServerTransport::Memory(network))
    }
}

impl Plugin for ServerNetPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(RenetServerPlugin);
        match &self.0 {
            ServerTransport::Udp(ready) => {
                let (server, transport) = *ready
                    .lock()
                    .expect("poisoned")
                    .take()
                    .expect("ServerNetPlugin added twice");
                app.add_plugins(NetcodeServerPlugin)
                    .insert_resource(server)
                    .insert_resource(transport);
            }
            ServerTransport::Memory(network) => {
                app.insert_resource(RenetServer::new(sightline_protocol::connection_config()));
                memory::add_server_systems(app, network.clone());
            }
        }
    }
}

/// Runs renet for a client: over UDP ([`Self::udp`]) or an in-memory link.
pub struct ClientNetPlugin(ClientTransport);

enum ClientTransport {
    Udp(Mutex<Option<Box<(RenetClient, NetcodeClientTransport)>>>),
    Memory(MemoryClientLink),
}

impl ClientNetPlugin {
    /// Opens a UDP socket toward `server`.
    pub fn udp(server: SocketAddr) -> Result<Self, UdpSetupError> {
        let ready = udp_client(sightline_protocol::connection_config(), server)?;
        Ok(Self(ClientTransport::Udp(Mutex::new(Some(Box::new(
            ready,
        ))))))
    }

    /// Uses a link of an in-process network.
    pub fn memory(link: MemoryClientLink) -> Self {
        Self(ClientTransport::Memory(link))
    }
}

impl Plugin for ClientNetPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(RenetClientPlugin);
        match &self.0 {
            ClientTransport::Udp(ready) => {
                let (client, transport) = *ready
                    .lock()
                    .expect("poisoned")
                    .take()
                    .expect("ClientNetPlugin added twice");
                app.add_plugins(NetcodeClientPlugin)
                    .insert_resource(client)
                    .insert_resource(transport);
            }
            ClientTransport::Memory(link) => {
                let mut client = RenetClient::new(sightline_protocol::connection_config());
                client.set_connected();
                app.insert_resource(client);
                memory::add_client_systems(app, link.clone());
            }
        }
    }
}
