//! Speaking the protocol by hand, for tests of what the server does with odd clients.

use bevy::prelude::World;
use sightline_harness::Stepper;
use sightline_net::RenetClient;
use sightline_protocol::ServerTextKind;
use sightline_protocol::{
    Channel, ClientDatagram, ClientMessage, InputPacket, PROTOCOL_VERSION, ServerDatagram,
    ServerMessage, Snapshot, SnapshotHistory, SnapshotPacket, Welcome, Wire,
};
use sightline_sim::{InputCmd, PlayerId};

/// Sends raw bytes from client `i` on a channel.
pub fn send_bytes(s: &mut Stepper, i: usize, channel: Channel, bytes: Vec<u8>) {
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
    send_bytes(s, i, Channel::Reliable, msg.encode().unwrap());
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
    send_bytes(
        s,
        i,
        Channel::Unreliable,
        ClientDatagram::Input(packet).encode().unwrap(),
    );
}

/// Sends a reliable message from raw client `i`.
pub fn send(s: &mut Stepper, i: usize, msg: ClientMessage) {
    send_bytes(s, i, Channel::Reliable, msg.encode().unwrap());
}

/// Joins raw clients as players, one after another, and returns their ids.
pub fn players(s: &mut Stepper, names: &[&str]) -> Vec<(usize, PlayerId)> {
    names
        .iter()
        .map(|name| {
            let i = s.add_raw_client();
            s.step();
            let id = join(s, i, name).your_id.expect("a player");
            (i, id)
        })
        .collect()
}

/// Joins a raw client as a spectator.
pub fn spectator(s: &mut Stepper, name: &str) -> usize {
    let i = s.add_raw_client();
    s.step();
    send(
        s,
        i,
        ClientMessage::Spectate {
            protocol_version: PROTOCOL_VERSION,
            name: name.into(),
        },
    );
    s.steps(5);
    i
}

/// Steps a little and returns what each raw client received meanwhile.
pub fn heard(s: &mut Stepper, clients: &[usize]) -> Vec<Vec<ServerMessage>> {
    s.steps(5);
    clients.iter().map(|&i| reliable(s, i)).collect()
}

/// The chat texts among messages, with whether each went to a team.
pub fn chat(msgs: &[ServerMessage]) -> Vec<(String, bool)> {
    msgs.iter()
        .filter_map(|m| match m {
            ServerMessage::Chat { text, team, .. } => Some((text.clone(), *team)),
            ServerMessage::SpectatorChat { text, .. } => Some((text.clone(), false)),
            _ => None,
        })
        .collect()
}

/// The game's notices among messages.
pub fn notices(msgs: &[ServerMessage]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| match m {
            ServerMessage::ServerText {
                kind: ServerTextKind::Notice,
                text,
            } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Sets a player's frags on the server, as though it had made them.
pub fn set_frags(s: &mut Stepper, id: PlayerId, frags: i32) {
    let world = s.server.world_mut();
    let mut q = world.query::<(&PlayerId, &mut sightline_combat::Score)>();
    for (p, mut score) in q.iter_mut(world) {
        if *p == id {
            score.frags = frags;
        }
    }
}

/// Steps a little and checks that raw client `i` was told a notice holding `part`.
#[track_caller]
pub fn assert_told(s: &mut Stepper, i: usize, part: &str) {
    let got = heard(s, &[i]);
    let told = notices(&got[0]);
    assert!(
        told.iter().any(|t| t.contains(part)),
        "no notice holding {part:?}: {:?}",
        got[0]
    );
}
