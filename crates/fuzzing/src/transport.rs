//! Bodies for the transport path: a datagram as netcode reads it, before it is known to
//! be genuine ([`netcode_datagram`]), and what a netcode payload becomes once decrypted,
//! as the server reads a client's and a client reads the server's. Each payload is unbundled,
//! every renet packet in it checked by [`PacketGuard`], and the ones it passes handed to
//! a real renet connection, exactly as the UDP transports do.
//!
//! An input is several payloads, each after its length as two little-endian bytes, so
//! one input can build up the state a later packet meets (a slice's first half, a sent
//! packet an acknowledgement names). Besides not panicking, renet must never give up on
//! a packet the guard passed: the guard passes only what renet reads cleanly. (renet may
//! still give up on its own side: a peer whose packet numbers leave hundreds of gaps
//! makes renet's acknowledgement too long to write, which ends that peer's connection and
//! nothing else. The guard keeps each gap within 256 of the newest number, and the
//! transports' packet rate bounds how many a peer can leave before that happens.)

use sightline_net::test_support::connected_netcode;
use sightline_net::{
    Bytes, DisconnectReason, PacketGuard, RenetClient, RenetServer, netcode_readable, unbundle,
};
use sightline_protocol::{Channel, connection_config};
use std::time::Duration;

/// The payloads in an input.
pub(crate) fn payloads(mut data: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let (len, rest) = data.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
        let (payload, rest) = rest.split_at(len);
        data = rest;
        Some(payload)
    })
}

/// One side of a connection, for the body to drive.
trait Side {
    fn send(&mut self, channel: Channel, message: Bytes);
    fn process(&mut self, packet: &[u8]);
    fn update(&mut self);
    fn disconnected(&self) -> Option<DisconnectReason>;
}

struct Server(RenetServer);

impl Side for Server {
    fn send(&mut self, channel: Channel, message: Bytes) {
        self.0.send_message(1, channel, message);
    }
    fn process(&mut self, packet: &[u8]) {
        self.0
            .process_packet_from(packet, 1)
            .expect("client 1 is there");
    }
    fn update(&mut self) {
        self.0.update(Duration::from_millis(10));
        let _ = self.0.get_packets_to_send(1);
        for channel in [Channel::Reliable, Channel::Unreliable] {
            while self.0.receive_message(1, channel).is_some() {}
        }
    }
    fn disconnected(&self) -> Option<DisconnectReason> {
        self.0.disconnect_reason(1)
    }
}

struct Client(RenetClient);

impl Side for Client {
    fn send(&mut self, channel: Channel, message: Bytes) {
        self.0.send_message(channel, message);
    }
    fn process(&mut self, packet: &[u8]) {
        self.0.process_packet(packet);
    }
    fn update(&mut self) {
        self.0.update(Duration::from_millis(10));
        let _ = self.0.get_packets_to_send();
        for channel in [Channel::Reliable, Channel::Unreliable] {
            while self.0.receive_message(channel).is_some() {}
        }
    }
    fn disconnected(&self) -> Option<DisconnectReason> {
        self.0.disconnect_reason()
    }
}

/// Feeds `data`'s payloads to `side` through `guard`.
fn run(mut side: impl Side, mut guard: PacketGuard, data: &[u8]) {
    // Something in flight both ways, for acknowledgements to name.
    side.send(Channel::Reliable, Bytes::from_static(&[7; 40]));
    side.send(Channel::Unreliable, Bytes::from(vec![9; 3000]));
    side.update();
    for payload in payloads(data) {
        let Ok(packets) = unbundle(payload) else {
            continue;
        };
        for packet in packets {
            if guard.check(packet).is_ok() {
                side.process(packet);
                if let Some(reason) = side.disconnected() {
                    panic!("renet gave up on a packet the guard passed ({reason}): {packet:?}");
                }
            }
        }
        side.update();
        match side.disconnected() {
            None => {}
            Some(DisconnectReason::PacketSerialization(_)) => return,
            Some(reason) => panic!("renet gave up after what the guard passed ({reason})"),
        }
    }
}

/// A client's payloads as the server reads them.
pub fn transport_from_client(data: &[u8]) {
    let mut server = RenetServer::new(connection_config());
    server.add_connection(1);
    run(Server(server), PacketGuard::from_client(), data);
}

/// The server's payloads as a client reads them.
pub fn transport_from_server(data: &[u8]) {
    let mut client = RenetClient::new(connection_config());
    client.set_connected();
    run(Client(client), PacketGuard::from_server(), data);
}

/// Datagrams as the UDP transports take them from the socket, from a connected peer's
/// address (a player's, or a forger's): each one [`netcode_readable`] passes is read by a
/// renetcode server as its client's and by that client as its server's, both through
/// the handshake. Nothing may panic, and no forgery may end the connection (it takes the
/// session's keys to make a datagram netcode accepts).
pub fn netcode_datagram(data: &[u8]) {
    let (mut server, mut client, client_addr) = connected_netcode();
    for datagram in payloads(data).filter(|d| netcode_readable(d)) {
        let _ = server.process_packet(client_addr, &mut datagram.to_vec());
        let _ = client.process_packet(&mut datagram.to_vec());
    }
    assert!(
        server.is_client_connected(1),
        "a forgery ended the server's side"
    );
    assert!(client.is_connected(), "a forgery ended the client's side");
}
