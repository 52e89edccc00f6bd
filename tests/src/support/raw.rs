//! Speaking the protocol by hand, for tests of what the server does with odd clients.

use bevy::prelude::World;
use sightline_harness::Stepper;
use sightline_net::RenetClient;
use sightline_protocol::{
    Channel, ClientDatagram, ClientMessage, InputPacket, PROTOCOL_VERSION, ServerDatagram,
    ServerMessage, Snapshot, SnapshotHistory, SnapshotPacket, Welcome, Wire,
};
use sightline_sim::InputCmd;

/// Sends raw bytes from client `i` on a channel.
pub fn send(s: &mut Stepper, i: usize, channel: Channel, bytes: Vec<u8>) {
    s.clients[i]
        .world_mut()
        .resource_mut::<RenetClient>()
        .send_message(channel, bytes);
}

/// Sends a Hello with the given protocol version.
pub fn hello(s: &mut Stepper, i: usize, version: u32, name: &str) {
    let msg = ClientMessage::Hello {
        protocol_version: version,
        name: name.into(),
        resume: None,
        player_key: None,
    };
    send(s, i, Channel::Reliable, msg.encode().unwrap());
}

/// Reliable messages client `i` has received since last asked.
pub fn reliable(s: &mut Stepper, i: usize) -> Vec<ServerMessage> {
    let mut client = s.clients[i].world_mut().resource_mut::<RenetClient>();
    std::iter::from_fn(|| client.receive_message(Channel::Reliable))
        .map(|b| ServerMessage::decode(&b).expect("server sent a valid message"))
        .collect()
}

/// Snapshots client `i` has received since last asked.
pub fn snapshots(s: &mut Stepper, i: usize) -> Vec<Snapshot> {
    received_snapshots(s.clients[i].world_mut())
}

/// Snapshots a bare client's world has received since last asked, resolved against the
/// ones it resolved before (kept in that world). An invalid datagram, or a delta it cannot
/// resolve, would be the server's fault: either panics.
pub fn received_snapshots(world: &mut World) -> Vec<Snapshot> {
    let packets: Vec<SnapshotPacket> = {
        let mut client = world.resource_mut::<RenetClient>();
        std::iter::from_fn(|| client.receive_message(Channel::Unreliable))
            .filter_map(|b| match ServerDatagram::decode(&b) {
                Ok(ServerDatagram::Snapshot(packet)) => Some(packet),
                Ok(ServerDatagram::Pong { .. } | ServerDatagram::WeaponCheck(_)) => None,
                Err(e) => panic!("server sent an invalid datagram: {e}"),
            })
            .collect()
    };
    let mut history = world.get_resource_or_init::<SnapshotHistory>();
    packets
        .iter()
        .map(|p| {
            history
                .resolve(p)
                .expect("server sent a resolvable snapshot")
        })
        .collect()
}

/// Says Hello and steps until the Welcome arrives.
pub fn join(s: &mut Stepper, i: usize, name: &str) -> Welcome {
    hello(s, i, PROTOCOL_VERSION, name);
    for _ in 0..50 {
        s.step();
        for msg in reliable(s, i) {
            if let ServerMessage::Welcome(w) = msg {
                return w;
            }
        }
    }
    panic!("no Welcome for {name}");
}

/// Sends input commands (newest first) in one packet.
pub fn inputs(s: &mut Stepper, i: usize, cmds: Vec<InputCmd>) {
    let packet = InputPacket::new(0, 0, None, &cmds);
    send(
        s,
        i,
        Channel::Unreliable,
        ClientDatagram::Input(packet).encode().unwrap(),
    );
}
