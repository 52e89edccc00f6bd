//! netcode over UDP, with a link conditioner in the socket path.
//!
//! renet_netcode's transports own their socket, so nothing can be put between them and
//! the network; these transports drive renetcode's connection state machines (the same
//! ones renet_netcode uses) over a [`ConditionedSocket`], which can delay, drop, duplicate
//! and reorder datagrams both ways for `--fake-latency` and friends. With the conditioner
//! idle, datagrams pass straight through.

use crate::{ConditionerSettings, LinkConditioner, LinkConditions};
use bevy::prelude::*;
use bevy_renet::{RenetClient, RenetServer};
use renetcode::{
    ClientAuthentication, NETCODE_MAX_PACKET_BYTES, NetcodeClient, NetcodeServer,
    ServerAuthentication, ServerConfig, ServerResult,
};
use sightline_protocol::NETCODE_PROTOCOL_ID;
use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

type Datagram = (SocketAddr, Vec<u8>);

/// A non-blocking UDP socket whose traffic passes through a conditioner each way.
pub struct ConditionedSocket {
    socket: UdpSocket,
    outgoing: LinkConditioner<Datagram>,
    incoming: LinkConditioner<Datagram>,
    start: Instant,
    buffer: Box<[u8; NETCODE_MAX_PACKET_BYTES]>,
    /// Datagrams that failed to send.
    pub send_errors: u64,
}

impl ConditionedSocket {
    fn new(socket: UdpSocket) -> io::Result<Self> {
        socket.set_nonblocking(true)?;
        let seed = unix_now().as_nanos() as u64;
        Ok(Self {
            socket,
            outgoing: LinkConditioner::new(ConditionerSettings::default(), seed),
            incoming: LinkConditioner::new(ConditionerSettings::default(), seed ^ 0xa5a5),
            start: Instant::now(),
            buffer: Box::new([0; NETCODE_MAX_PACKET_BYTES]),
            send_errors: 0,
        })
    }

    /// Sets how both directions misbehave: each way gets the full latency, so the round
    /// trip grows by twice `latency_ms`.
    pub fn set_conditions(&mut self, settings: ConditionerSettings) {
        self.outgoing.settings = settings;
        self.incoming.settings = settings;
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

    /// Sends whatever the conditioner has released.
    pub fn flush(&mut self) {
        for (addr, bytes) in self.outgoing.ready(self.now()) {
            if let Err(e) = self.socket.send_to(&bytes, addr) {
                self.send_errors += 1;
                debug!("UDP send to {addr} failed: {e}");
            }
        }
    }

    /// Everything received that the conditioner has released.
    pub fn receive(&mut self) -> io::Result<Vec<Datagram>> {
        let now = self.now();
        loop {
            match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((len, addr)) => self.incoming.send(now, (addr, self.buffer[..len].to_vec())),
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

/// The server's netcode endpoint.
#[derive(Resource)]
pub struct UdpServerTransport {
    netcode: NetcodeServer,
    /// The socket, for conditions and statistics.
    pub socket: ConditionedSocket,
}

/// The client's netcode endpoint.
#[derive(Resource)]
pub struct UdpClientTransport {
    netcode: NetcodeClient,
    /// The socket, for conditions and statistics.
    pub socket: ConditionedSocket,
}

/// Binds a server socket. Connections are unauthenticated (no connect tokens), as for a
/// community dedicated server.
pub fn udp_server(
    bind: SocketAddr,
    public: Option<SocketAddr>,
    max_clients: usize,
) -> Result<UdpServerTransport, UdpSetupError> {
    let socket =
        UdpSocket::bind(bind).map_err(|e| UdpSetupError(format!("cannot bind UDP {bind}: {e}")))?;
    let local = socket
        .local_addr()
        .map_err(|e| UdpSetupError(format!("cannot read the bound address: {e}")))?;
    let netcode = NetcodeServer::new(ServerConfig {
        current_time: unix_now(),
        max_clients,
        protocol_id: NETCODE_PROTOCOL_ID,
        public_addresses: vec![public.unwrap_or(local)],
        authentication: ServerAuthentication::Unsecure,
    });
    let socket = ConditionedSocket::new(socket)
        .map_err(|e| UdpSetupError(format!("cannot configure the socket: {e}")))?;
    Ok(UdpServerTransport { netcode, socket })
}

/// Opens a client socket toward `server`.
pub fn udp_client(server: SocketAddr) -> Result<UdpClientTransport, UdpSetupError> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().expect("valid address")
    } else {
        "[::]:0".parse().expect("valid address")
    };
    let socket = UdpSocket::bind(bind)
        .map_err(|e| UdpSetupError(format!("cannot open a UDP socket: {e}")))?;
    let now = unix_now();
    // Unique enough among the clients of one server: time in nanoseconds mixed with pid.
    let client_id = now.as_nanos() as u64 ^ ((std::process::id() as u64) << 40);
    let netcode = NetcodeClient::new(
        now,
        ClientAuthentication::Unsecure {
            protocol_id: NETCODE_PROTOCOL_ID,
            client_id,
            server_addr: server,
            user_data: None,
        },
    )
    .map_err(|e| UdpSetupError(format!("cannot start netcode toward {server}: {e}")))?;
    let socket = ConditionedSocket::new(socket)
        .map_err(|e| UdpSetupError(format!("cannot configure the socket: {e}")))?;
    Ok(UdpClientTransport { netcode, socket })
}

/// Does what a netcode server result asks: send a reply, deliver a payload to renet,
/// add or drop a connection.
fn handle(result: ServerResult, socket: &mut ConditionedSocket, server: &mut RenetServer) {
    match result {
        ServerResult::None => {}
        ServerResult::PacketToSend { addr, payload } => socket.send_to(payload, addr),
        ServerResult::Payload { client_id, payload } => {
            // A payload for a connection renet already dropped is discarded.
            let _ = server.process_packet_from(payload, client_id);
        }
        ServerResult::ClientConnected {
            client_id,
            addr,
            payload,
            ..
        } => {
            server.add_connection(client_id);
            socket.send_to(payload, addr);
        }
        ServerResult::ClientDisconnected {
            client_id,
            addr,
            payload,
        } => {
            server.remove_connection(client_id);
            if let Some(payload) = payload {
                socket.send_to(payload, addr);
            }
        }
    }
}

/// Receives datagrams into renet and keeps netcode's connections alive.
pub(crate) fn server_receive(
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
    time: Res<Time<Real>>,
) {
    let UdpServerTransport { netcode, socket } = &mut *transport;
    netcode.update(time.delta());
    match socket.receive() {
        Ok(datagrams) => {
            for (addr, mut bytes) in datagrams {
                let result = netcode.process_packet(addr, &mut bytes);
                handle(result, socket, &mut server);
            }
        }
        Err(e) => error!("UDP receive failed: {e}"),
    }
    for client_id in netcode.clients_id() {
        let result = netcode.update_client(client_id);
        handle(result, socket, &mut server);
    }
    for client_id in server.disconnections_id() {
        let result = netcode.disconnect(client_id);
        handle(result, socket, &mut server);
    }
}

/// Sends renet's outgoing packets through netcode.
pub(crate) fn server_send(
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
) {
    let UdpServerTransport { netcode, socket } = &mut *transport;
    for client_id in server.clients_id() {
        let Ok(packets) = server.get_packets_to_send(client_id) else {
            continue;
        };
        for packet in packets {
            match netcode.generate_payload_packet(client_id, &packet) {
                Ok((addr, payload)) => socket.send_to(payload, addr),
                Err(e) => {
                    error!("cannot wrap a packet for client {client_id}: {e}");
                    break;
                }
            }
        }
    }
    socket.flush();
}

/// Tells every client goodbye when the app exits.
pub(crate) fn server_disconnect_on_exit(
    exit: MessageReader<AppExit>,
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
) {
    if exit.is_empty() {
        return;
    }
    let UdpServerTransport { netcode, socket } = &mut *transport;
    for client_id in netcode.clients_id() {
        let result = netcode.disconnect(client_id);
        handle(result, socket, &mut server);
    }
    // Goodbyes go out now, whatever the conditioner would say.
    socket.set_conditions(ConditionerSettings::default());
    socket.flush();
}

/// Receives datagrams into renet and keeps the connection alive.
pub(crate) fn client_receive(
    mut transport: ResMut<UdpClientTransport>,
    mut client: ResMut<RenetClient>,
    time: Res<Time<Real>>,
) {
    let UdpClientTransport { netcode, socket } = &mut *transport;
    if netcode.disconnect_reason().is_some() {
        if !client.is_disconnected() {
            client.disconnect_due_to_transport();
        }
        return;
    }
    if client.is_disconnected() {
        if let Ok((addr, packet)) = netcode.disconnect() {
            socket.send_to(packet, addr);
        }
        return;
    }
    if netcode.is_connected() {
        client.set_connected();
    } else if netcode.is_connecting() {
        client.set_connecting();
    }
    match socket.receive() {
        Ok(datagrams) => {
            for (addr, mut bytes) in datagrams {
                if addr != netcode.server_addr() {
                    continue;
                }
                if let Some(payload) = netcode.process_packet(&mut bytes) {
                    client.process_packet(payload);
                }
            }
        }
        Err(e) => error!("UDP receive failed: {e}"),
    }
    if let Some((packet, addr)) = netcode.update(time.delta()) {
        socket.send_to(packet, addr);
    }
}

/// Sends renet's outgoing packets through netcode.
pub(crate) fn client_send(
    mut transport: ResMut<UdpClientTransport>,
    mut client: ResMut<RenetClient>,
) {
    let UdpClientTransport { netcode, socket } = &mut *transport;
    if netcode.is_connected() {
        for packet in client.get_packets_to_send() {
            match netcode.generate_payload_packet(&packet) {
                Ok((addr, payload)) => socket.send_to(payload, addr),
                Err(e) => {
                    error!("cannot wrap a packet for the server: {e}");
                    break;
                }
            }
        }
    }
    socket.flush();
}

impl UdpClientTransport {
    /// Tells the server this client is leaving, at once.
    pub fn goodbye(&mut self) {
        self.socket.set_conditions(ConditionerSettings::default());
        if let Ok((addr, packet)) = self.netcode.disconnect() {
            self.socket.send_to(packet, addr);
        }
        self.socket.flush();
    }
}

/// Tells the server goodbye when the app exits.
pub(crate) fn client_disconnect_on_exit(
    exit: MessageReader<AppExit>,
    mut transport: ResMut<UdpClientTransport>,
) {
    if !exit.is_empty() {
        transport.goodbye();
    }
}

/// Applies [`LinkConditions`] to the server's socket when they change.
pub(crate) fn server_condition(
    conditions: Res<LinkConditions>,
    mut transport: ResMut<UdpServerTransport>,
) {
    if conditions.is_changed() {
        transport.socket.set_conditions(conditions.0);
    }
}

/// Applies [`LinkConditions`] to the client's socket when they change.
pub(crate) fn client_condition(
    conditions: Res<LinkConditions>,
    mut transport: ResMut<UdpClientTransport>,
) {
    if conditions.is_changed() {
        transport.socket.set_conditions(conditions.0);
    }
}
