//! renet_netcode over a UDP socket.

use bevy_renet::netcode::{
    ClientAuthentication, NetcodeClientTransport, NetcodeServerTransport, ServerAuthentication,
    ServerConfig,
};
use bevy_renet::{RenetClient, RenetServer};
use renet::ConnectionConfig;
use sightline_protocol::NETCODE_PROTOCOL_ID;
use std::fmt;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A socket could not be set up.
#[derive(Debug)]
pub struct UdpSetupError(String);

impl fmt::Display for UdpSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UdpSetupError {}

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Binds a server socket. Connections are unauthenticated (no connect tokens), as for a
/// community dedicated server.
pub fn udp_server(
    config: ConnectionConfig,
    bind: SocketAddr,
    public: Option<SocketAddr>,
    max_clients: usize,
) -> Result<(RenetServer, NetcodeServerTransport), UdpSetupError> {
    let socket =
        UdpSocket::bind(bind).map_err(|e| UdpSetupError(format!("cannot bind UDP {bind}: {e}")))?;
    let local = socket
        .local_addr()
        .map_err(|e| UdpSetupError(format!("cannot read the bound address: {e}")))?;
    let server_config = ServerConfig {
        current_time: now(),
        max_clients,
        protocol_id: NETCODE_PROTOCOL_ID,
        public_addresses: vec![public.unwrap_or(local)],
        authentication: ServerAuthentication::Unsecure,
    };
    let transport = NetcodeServerTransport::new(server_config, socket)
        .map_err(|e| UdpSetupError(format!("cannot start netcode on {bind}: {e}")))?;
    Ok((RenetServer::new(config), transport))
}

/// Opens a client socket toward `server`.
pub fn udp_client(
    config: ConnectionConfig,
    server: SocketAddr,
) -> Result<(RenetClient, NetcodeClientTransport), UdpSetupError> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().expect("valid address")
    } else {
        "[::]:0".parse().expect("valid address")
    };
    let socket = UdpSocket::bind(bind)
        .map_err(|e| UdpSetupError(format!("cannot open a UDP socket: {e}")))?;
    let current_time = now();
    // Unique enough among the clients of one server: time in nanoseconds mixed with pid.
    let client_id = current_time.as_nanos() as u64 ^ ((std::process::id() as u64) << 40);
    let authentication = ClientAuthentication::Unsecure {
        protocol_id: NETCODE_PROTOCOL_ID,
        client_id,
        server_addr: server,
        user_data: None,
    };
    let transport = NetcodeClientTransport::new(current_time, authentication, socket)
        .map_err(|e| UdpSetupError(format!("cannot start netcode toward {server}: {e}")))?;
    Ok((RenetClient::new(config), transport))
}
