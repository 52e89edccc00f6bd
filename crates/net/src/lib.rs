//! Sightline's transports. Game code talks only to renet's [`RenetServer`] and
//! [`RenetClient`]; the plugins here move their packets, either over UDP with netcode or
//! through an in-memory [`MemoryNetwork`] that tests drive on a manual clock, so the same
//! server and client code runs in both. Both paths can run through a
//! [`LinkConditioner`] (fake latency, jitter, loss).

mod auth;
mod bans;
mod bundle;
mod cli;
mod conditioner;
mod connectionless;
mod guard;
mod kex;
mod known;
mod memory;
mod memory_stream;
#[doc(hidden)]
pub mod test_support;
mod udp;

pub use auth::{
    AdmissionLimits, ForeignStream, Granted, MAX_FOREIGN_WAITING, SecureConfig, Security,
    TOKEN_REQUEST_DEADLINE, TokenService, fetch_token, request_token,
};
pub use bans::{AddressBans, IpPrefix};
pub use bevy_renet::{RenetClient, RenetReceive, RenetSend, RenetServer, RenetServerEvent};
pub use bundle::{ACK_HOLD, MalformedBundle, unbundle};
pub use cli::FakeLinkArgs;
pub use conditioner::{
    BOTTLENECK_QUEUE_MS, ConditionerSettings, LinkConditioner, MAX_TAIL_MS, UDP_IP_HEADER, WireSize,
};
pub use connectionless::{
    CONNECTIONLESS_HEADER, Connectionless, ForeignStreams, MAX_CONNECTIONLESS_BYTES,
    MAX_CONNECTIONLESS_PER_FRAME, MAX_CONNECTIONLESS_REPLIES, MAX_FOREIGN_STREAMS,
};
pub use guard::{PacketFault, PacketGuard, SLICE_SIZE};
pub use kex::{IdentityFileError, PublicKeyBytes, ServerIdentity, fingerprint};
pub use known::{KeyStatus, KnownServers, MAX_KNOWN_SERVERS, MAX_KNOWN_SERVERS_BYTES};
pub use memory::{MemoryClientLink, MemoryNetwork};
pub use renet::{Bytes, ClientId, DisconnectReason, ServerEvent};
pub use renetcode::ConnectToken;
// What tokens are, sealed and opened Bevy-free in their own crate (the matchmaker's
// only dependency of ours), for the transports' users.
pub use sightline_tokens::{
    CONNECTION_TIMEOUT_SECONDS, NETCODE_PROTOCOL_ID, TOKEN_EXPIRE_SECONDS, issue_token,
    load_key_file, parse_key, random_secret,
};
// The relay's usual port, for the settings that name a relay.
pub use sightline_relay::DEFAULT_RELAY_PORT;
pub use udp::{
    ACK_SILENCE, ClientSecurity, ConditionedSocket, KEEPER_AFTER, MAX_HELD_PACKETS,
    MAX_RELIABLE_BACKLOG, RESEND_BYTES_PER_SECOND, SILENCE_BEFORE_STANDBY, UdpClientTransport,
    UdpServerTransport, UdpSetupError, WireCount, netcode_readable, resume_udp, udp_client,
    udp_client_with_token, udp_server,
};

use bevy::prelude::*;
use bevy_renet::{RenetClientPlugin, RenetServerPlugin};
use sightline_runtime::TakeOnce;
use std::net::SocketAddr;

/// Log filter directives that silence what the network can trigger per packet:
/// renetcode logs an error for every undecodable datagram and renet a warning for every
/// message it drops for memory. Those drops are counted instead ([`NetStats`]), so no
/// sender can flood a log.
pub const TRANSPORT_LOG_FILTER: &str = "renetcode=off,renet=error";

/// How the link misbehaves on purpose, for testing netcode by hand: applies to a UDP
/// transport's traffic both ways (`--fake-latency`, `--fake-jitter`, `--fake-loss`, and
/// the `net_fake*` console variables). Change it at any time.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct LinkConditions(pub ConditionerSettings);

/// Bytes each connected client has been sent so far, as datagrams on the wire (UDP/IP's
/// and netcode's headers included), counted by the transport as it sends them. renet's
/// own measure of what it sent is not that: it counts the acknowledgement packets the
/// transports leave out ([`ACK_HOLD`]), and their ranges, which grow when the peer never
/// hears them, and it cannot see the headers. A client's `rate` is kept by this count.
#[derive(Resource, Debug, Default)]
pub struct SentToClients(std::collections::HashMap<ClientId, u64>);

impl SentToClients {
    /// Bytes sent to `client` so far (0 for one never sent anything).
    pub fn total(&self, client: ClientId) -> u64 {
        self.0.get(&client).copied().unwrap_or(0)
    }

    /// Counts `bytes` more sent to `client`.
    fn add(&mut self, client: ClientId, bytes: u64) {
        let total = self.0.entry(client).or_default();
        *total = total.saturating_add(bytes);
    }

    /// Forgets the clients `connected` says are gone.
    fn keep_only(&mut self, connected: impl Fn(ClientId) -> bool) {
        self.0.retain(|id, _| connected(*id));
    }
}

/// What a server's transport turned away before the game saw it, over its life.
#[derive(Resource, Debug, Default, Clone, PartialEq, Eq)]
pub struct NetStats {
    /// Datagrams from unknown addresses that were not connection requests, and any whose
    /// netcode header would not read ([`netcode_readable`]).
    pub junk_datagrams: u64,
    /// Connection requests over an address's rate.
    pub handshakes_refused: u64,
    /// Connections netcode accepted that the server turned away: a token used from
    /// another address, or too many connections from one address.
    pub connections_refused: u64,
    /// Connect tokens handed out.
    pub tokens_issued: u64,
    /// Token requests answered with a refusal (wrong password, rate, limits).
    pub tokens_refused: u64,
    /// Token requests dropped without an answer (malformed, too slow, too many at once).
    pub token_requests_dropped: u64,
    /// Socket receive errors.
    pub receive_errors: u64,
    /// Datagrams from connected clients holding a malformed bundle of packets.
    pub malformed_bundles: u64,
    /// Bytes the server's socket has sent, with UDP/IP headers (over UDP only).
    pub sent_bytes: u64,
    /// Bytes the server's socket has received, with UDP/IP headers (over UDP only).
    pub received_bytes: u64,
    /// Datagrams the server's socket has sent (over UDP only).
    pub sent_datagrams: u64,
    /// Datagrams the server's socket has received (over UDP only).
    pub received_datagrams: u64,
    /// renet packets from connected clients refused before renet read them
    /// ([`PacketGuard`]).
    pub bad_packets: u64,
    /// Connections dropped for sending on without acknowledging what they were sent.
    pub ack_stalls: u64,
    /// Resent reliable packets held back by a connection's resend budget (renet sends
    /// them again later).
    pub resends_held: u64,
}

/// Most packet faults kept for the game between two of its frames; more are still
/// counted in [`NetStats::bad_packets`].
pub const MAX_PACKET_FAULTS: usize = 256;

/// renet packets refused since the game last looked, and who sent them: the server
/// strikes the senders. Filled by the transports, drained by the game each frame.
#[derive(Resource, Debug, Default)]
pub struct PacketFaults(pub Vec<(ClientId, PacketFault)>);

impl PacketFaults {
    /// Notes a refused packet, within [`MAX_PACKET_FAULTS`].
    pub fn push(&mut self, client: ClientId, fault: PacketFault) {
        if self.0.len() < MAX_PACKET_FAULTS {
            self.0.push((client, fault));
        }
    }
}

/// Runs renet for a server: over UDP ([`Self::udp`]) or an in-memory network.
pub struct ServerNetPlugin(ServerTransport);

enum ServerTransport {
    // Built eagerly so socket errors reach the caller; taken out once by `build`.
    Udp(TakeOnce<Box<UdpServerTransport>>),
    Memory(MemoryNetwork),
}

impl ServerNetPlugin {
    /// Binds a UDP socket at `bind` for up to `max_clients` connections, admitted as
    /// `security` and `limits` say. `public` is the address clients use when it differs
    /// from the bound one.
    pub fn udp(
        bind: SocketAddr,
        public: Option<SocketAddr>,
        max_clients: usize,
        security: Security,
        limits: AdmissionLimits,
    ) -> Result<(Self, SocketAddr), UdpSetupError> {
        let transport = udp_server(bind, public, max_clients, security, limits)?;
        let local = transport
            .socket
            .local_addr()
            .map_err(|e| UdpSetupError::new(format!("cannot read the bound address: {e}")))?;
        Ok((
            Self(ServerTransport::Udp(TakeOnce::new(Box::new(transport)))),
            local,
        ))
    }

    /// Uses a UDP transport made elsewhere ([`udp_server`], then perhaps
    /// [`UdpServerTransport::use_relay`]).
    pub fn from_udp(transport: UdpServerTransport) -> Self {
        Self(ServerTransport::Udp(TakeOnce::new(Box::new(transport))))
    }

    /// Serves clients of an in-process network.
    pub fn memory(network: MemoryNetwork) -> Self {
        Self(ServerTransport::Memory(network))
    }
}

impl Plugin for ServerNetPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(RenetServerPlugin)
            .insert_resource(RenetServer::new(sightline_protocol::connection_config()))
            .init_resource::<LinkConditions>()
            .init_resource::<NetStats>()
            .init_resource::<SentToClients>()
            .init_resource::<PacketFaults>()
            .init_resource::<AddressBans>()
            .init_resource::<Connectionless>()
            .init_resource::<ForeignStreams>();
        match &self.0 {
            ServerTransport::Udp(ready) => {
                let transport = ready.take("ServerNetPlugin");
                app.insert_resource(*transport)
                    .add_systems(
                        PreUpdate,
                        (udp::server_condition, udp::server_receive)
                            .chain()
                            .in_set(RenetReceive)
                            .after(RenetServerPlugin::update_system)
                            .before(RenetServerPlugin::emit_server_events_system),
                    )
                    .add_systems(PostUpdate, udp::server_send.in_set(RenetSend))
                    .add_systems(Last, udp::server_disconnect_on_exit);
            }
            ServerTransport::Memory(network) => memory::add_server_systems(app, network.clone()),
        }
    }
}

/// Runs renet for a client: over UDP ([`Self::udp`], or later with [`connect_udp`]) or an
/// in-memory link.
pub struct ClientNetPlugin(ClientTransport);

enum ClientTransport {
    Udp(TakeOnce<Box<UdpClientTransport>>),
    Deferred,
    Memory(MemoryClientLink),
}

/// Connects a client app to `server` over UDP now, replacing any connection it had.
pub fn connect_udp(
    world: &mut World,
    server: SocketAddr,
    security: &ClientSecurity,
) -> Result<(), UdpSetupError> {
    disconnect_udp(world);
    install_udp(world, udp_client(server, security)?);
    Ok(())
}

/// Connects a client app to `server` over UDP now with a connect token issued elsewhere
/// (a matchmaker's), replacing any connection it had.
pub fn connect_udp_with_token(
    world: &mut World,
    server: SocketAddr,
    token: ConnectToken,
) -> Result<(), UdpSetupError> {
    disconnect_udp(world);
    install_udp(world, udp_client_with_token(server, token)?);
    Ok(())
}

/// A new connection's transport, and renet's client on it.
fn install_udp(world: &mut World, transport: UdpClientTransport) {
    let mut client = RenetClient::new(sightline_protocol::connection_config());
    client.set_connecting();
    world.insert_resource(client);
    world.insert_resource(transport);
}

/// Says goodbye to the server (if connected over UDP) and drops the connection.
pub fn disconnect_udp(world: &mut World) {
    if let Some(mut transport) = world.remove_resource::<UdpClientTransport>() {
        transport.goodbye();
    }
    world.remove_resource::<RenetClient>();
}

impl ClientNetPlugin {
    /// No connection yet: the game connects later with [`connect_udp`].
    pub fn deferred() -> Self {
        Self(ClientTransport::Deferred)
    }

    /// Opens a UDP socket toward `server`.
    pub fn udp(server: SocketAddr, security: &ClientSecurity) -> Result<Self, UdpSetupError> {
        Ok(Self::from_transport(udp_client(server, security)?))
    }

    /// Uses a UDP transport made elsewhere (for example with a matchmaker's token,
    /// [`udp_client_with_token`]).
    pub fn from_transport(transport: UdpClientTransport) -> Self {
        Self(ClientTransport::Udp(TakeOnce::new(Box::new(transport))))
    }

    /// Uses a link of an in-process network.
    pub fn memory(link: MemoryClientLink) -> Self {
        Self(ClientTransport::Memory(link))
    }
}

impl Plugin for ClientNetPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(RenetClientPlugin)
            .init_resource::<LinkConditions>();
        let mut client = RenetClient::new(sightline_protocol::connection_config());
        let udp_systems = |app: &mut App| {
            let connected =
                resource_exists::<UdpClientTransport>.and_then(resource_exists::<RenetClient>);
            app.add_systems(
                PreUpdate,
                (udp::client_condition, udp::client_receive)
                    .chain()
                    .in_set(RenetReceive)
                    .after(RenetClientPlugin::update_system)
                    .run_if(connected.clone()),
            )
            .add_systems(
                PostUpdate,
                udp::client_send.in_set(RenetSend).run_if(connected),
            )
            .add_systems(
                Last,
                udp::client_disconnect_on_exit.run_if(resource_exists::<UdpClientTransport>),
            );
        };
        match &self.0 {
            ClientTransport::Udp(ready) => {
                let transport = ready.take("ClientNetPlugin");
                client.set_connecting();
                app.insert_resource(client).insert_resource(*transport);
                udp_systems(app);
            }
            ClientTransport::Deferred => udp_systems(app),
            ClientTransport::Memory(link) => {
                client.set_connected();
                app.insert_resource(client);
                memory::add_client_systems(app, link.clone());
            }
        }
    }
}
