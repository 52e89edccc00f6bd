//! Fixtures for tests and fuzz bodies in other crates (the `test-support` feature): an
//! in-memory netcode session, an in-memory non-blocking stream ([`MemoryStream`]), and
//! the token service's steps without a socket with the client's side of the exchange to
//! drive them.

pub use crate::auth::bench::{BenchStage, Polled, TokenBench};
pub use crate::auth::{
    FIRST_BYTES_DEADLINE, PASSWORD_GUESS_BURST, PASSWORD_GUESSES_PER_SECOND, SERVE_DEADLINE,
    TOKEN_BURST, TOKENS_PER_SECOND,
};
pub use crate::kex::{ClientHello, ClientKeys, KexError};
pub use crate::memory_stream::MemoryStream;

use renetcode::{
    ClientAuthentication, NETCODE_USER_DATA_BYTES, NetcodeClient, NetcodeServer,
    ServerAuthentication, ServerConfig, ServerResult,
};
use std::net::SocketAddr;
use std::time::Duration;

/// A renetcode server and its one client (id 1), through the handshake in memory, and
/// the client's address: what a datagram from a connected player meets, both ways.
pub fn connected_netcode() -> (NetcodeServer, NetcodeClient, SocketAddr) {
    const PROTOCOL: u64 = 7;
    let server_addr = SocketAddr::from(([127, 0, 0, 1], 5000));
    let client_addr = SocketAddr::from(([127, 0, 0, 1], 6000));
    let now = Duration::from_secs(1_000_000);
    let mut server = NetcodeServer::new(ServerConfig {
        current_time: now,
        max_clients: 4,
        protocol_id: PROTOCOL,
        public_addresses: vec![server_addr],
        authentication: ServerAuthentication::Unsecure,
    });
    let mut client = NetcodeClient::new(
        now,
        ClientAuthentication::Unsecure {
            protocol_id: PROTOCOL,
            client_id: 1,
            server_addr,
            user_data: Some([0; NETCODE_USER_DATA_BYTES]),
        },
    )
    .expect("an unsecure client needs no token");
    let step = Duration::from_millis(10);
    for _ in 0..100 {
        server.update(step);
        let Some((packet, _)) = client.update(step) else {
            continue;
        };
        let mut packet = packet.to_vec();
        let mut reply = match server.process_packet(client_addr, &mut packet) {
            ServerResult::PacketToSend { payload, .. }
            | ServerResult::ClientConnected { payload, .. } => payload.to_vec(),
            _ => continue,
        };
        client.process_packet(&mut reply);
        if client.is_connected() {
            return (server, client, client_addr);
        }
    }
    panic!("the in-memory netcode handshake did not finish");
}
