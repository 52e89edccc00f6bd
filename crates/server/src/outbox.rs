//! The outbox: game logic writes an [`Outgoing`] message for each reliable message it
//! sends, and [`send_outgoing`] sends them all once a frame, just before renet sends its
//! packets, so what is written in `PreUpdate`, in the frame's ticks and in `Update` goes out
//! in that frame, once each, in the order written.
//!
//! Not everything goes through it. Snapshots and pongs (unreliable, per client) are sent
//! where they are built: they are the hot path. The handshake (a Welcome, then the players
//! already there), a refusal or kick, and the departure of a player are sent at once, so
//! that nothing written earlier reaches a client ahead of its Welcome or after its refusal.

use crate::connection::{ClientIndex, Connection, ConnectionStage};
use crate::wire::encoded;
use bevy::prelude::*;
use sightline_combat::Team;
use sightline_net::{ClientId, RenetServer};
use sightline_protocol::{Channel, ServerMessage};
use sightline_sim::PlayerId;

/// A reliable message to send to clients in the game.
#[derive(Message, Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// To every client in the game when it is sent.
    ToPlaying(ServerMessage),
    /// To every player's client when it is sent: not to spectators, who are shown it
    /// when their late world reaches it ([`MatchNews`](crate::MatchNews)).
    ToPlayers(ServerMessage),
    /// To one client, if it is still in the game when it is sent.
    To(ClientId, ServerMessage),
    /// To the clients of one team's players (team chat).
    ToTeam(Team, ServerMessage),
    /// To the spectators only (their own chat while a match runs): the connections in
    /// the game without a player.
    ToSpectators(ServerMessage),
}

/// Sends a reliable message to every client in the game now, ahead of the outbox.
pub(crate) fn send_to_playing<'a>(
    server: &mut RenetServer,
    connections: impl IntoIterator<Item = &'a Connection>,
    msg: &ServerMessage,
) {
    let Some(bytes) = encoded(msg) else {
        return;
    };
    for c in connections {
        if c.stage == ConnectionStage::Playing {
            server.send_message(c.client_id, Channel::Reliable, bytes.clone());
        }
    }
}

/// Sends everything written to the outbox since the last frame, each message encoded
/// once.
pub(crate) fn send_outgoing(
    mut outgoing: MessageReader<Outgoing>,
    mut server: ResMut<RenetServer>,
    connections: Query<(&Connection, Has<PlayerId>, Option<&Team>)>,
    index: Res<ClientIndex>,
) {
    for out in outgoing.read() {
        match out {
            Outgoing::ToPlaying(msg) => {
                send_to_playing(&mut server, connections.iter().map(|c| c.0), msg);
            }
            Outgoing::ToPlayers(msg) => {
                let players = connections.iter().filter(|c| c.1);
                send_to_playing(&mut server, players.map(|c| c.0), msg);
            }
            Outgoing::ToTeam(team, msg) => {
                let mates = connections.iter().filter(|c| c.1 && c.2 == Some(team));
                send_to_playing(&mut server, mates.map(|c| c.0), msg);
            }
            Outgoing::ToSpectators(msg) => {
                // A connection in the game without a player watches.
                let watching = connections.iter().filter(|c| !c.1);
                send_to_playing(&mut server, watching.map(|c| c.0), msg);
            }
            Outgoing::To(client, msg) => {
                let playing = index
                    .0
                    .get(client)
                    .and_then(|e| connections.get(*e).ok())
                    .is_some_and(|c| c.0.stage == ConnectionStage::Playing);
                if playing && let Some(bytes) = encoded(msg) {
                    server.send_message(*client, Channel::Reliable, bytes);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::time::TimeUpdateStrategy;
    use sightline_protocol::Wire;
    use std::time::Duration;

    fn chat(text: String) -> ServerMessage {
        ServerMessage::Chat {
            from: sightline_sim::PlayerId(0),
            text,
            team: false,
        }
    }

    /// The number of the frame being run, from 1.
    #[derive(Resource, Default)]
    struct Frame(u32);

    /// A system that writes `label` and the frame's number, to everyone in the game.
    fn say(label: &'static str) -> impl FnMut(MessageWriter<Outgoing>, Res<Frame>) {
        move |mut out, frame| {
            out.write(Outgoing::ToPlaying(chat(format!("{label} {}", frame.0))));
        }
    }

    #[test]
    fn messages_from_every_schedule_go_out_in_their_frame_once_each_in_order() {
        let mut app = App::new();
        let frame = Duration::from_millis(10);
        app.add_plugins((TaskPoolPlugin::default(), bevy::time::TimePlugin))
            .insert_resource(TimeUpdateStrategy::ManualDuration(frame))
            .insert_resource(Time::<Fixed>::from_duration(frame))
            .insert_resource(RenetServer::new(sightline_protocol::connection_config()))
            .init_resource::<ClientIndex>()
            .init_resource::<Frame>()
            .add_message::<Outgoing>()
            .add_systems(First, |mut frame: ResMut<Frame>| frame.0 += 1)
            .add_systems(PreUpdate, say("pre"))
            .add_systems(FixedUpdate, say("tick"))
            .add_systems(
                Update,
                |mut out: MessageWriter<Outgoing>, frame: Res<Frame>| {
                    let n = frame.0;
                    for client in 1..=4 {
                        out.write(Outgoing::To(client, chat(format!("to {client} {n}"))));
                    }
                    out.write(Outgoing::ToPlayers(chat(format!("players {n}"))));
                    out.write(Outgoing::ToTeam(Team::Red, chat(format!("red {n}"))));
                    out.write(Outgoing::ToSpectators(chat(format!("watchers {n}"))));
                },
            )
            .add_systems(PostUpdate, send_outgoing);
        // Clients 1 and 2 are players, red and blue; 3 is waiting for Hello; 4 is a
        // spectator, in the game without a player.
        let mut locals = [1, 2, 3, 4].map(|client| {
            let mut conn = Connection::new(client, 0.0);
            if client != 3 {
                conn.stage = ConnectionStage::Playing;
            }
            let mut entity = app.world_mut().spawn(conn);
            match client {
                1 => entity.insert((PlayerId(1), Team::Red)),
                2 => entity.insert((PlayerId(2), Team::Blue)),
                _ => &mut entity,
            };
            let entity = entity.id();
            let world = app.world_mut();
            world.resource_mut::<ClientIndex>().0.insert(client, entity);
            world.resource_mut::<RenetServer>().new_local_client(client)
        });
        // Frame 1 runs no tick (the fixed clock starts at zero), 2 to 4 one each, and 5,
        // three times as long, three.
        for (n, ticks) in [(1, 0), (2, 1), (3, 1), (4, 1), (5, 3)] {
            if n == 5 {
                app.insert_resource(TimeUpdateStrategy::ManualDuration(frame * 3));
            }
            app.update();
            let mut server = app.world_mut().resource_mut::<RenetServer>();
            let received = [1, 2, 3, 4].map(|client| {
                let local = &mut locals[client as usize - 1];
                server.process_local_client(client, local).unwrap();
                let mut texts = Vec::new();
                while let Some(bytes) = local.receive_message(Channel::Reliable) {
                    match ServerMessage::decode(&bytes).unwrap() {
                        ServerMessage::Chat { text, .. } => texts.push(text),
                        other => panic!("unexpected {other:?}"),
                    }
                }
                texts
            });
            let expected = |extra: &[String]| {
                let mut all = vec![format!("pre {n}")];
                all.extend(std::iter::repeat_n(format!("tick {n}"), ticks));
                all.extend_from_slice(extra);
                all
            };
            let player = |c: u8| vec![format!("to {c} {n}"), format!("players {n}")];
            let mut red = player(1);
            red.push(format!("red {n}"));
            assert_eq!(received[0], expected(&red), "frame {n}");
            assert_eq!(received[1], expected(&player(2)), "frame {n}");
            assert!(received[2].is_empty(), "{:?}", received[2]);
            // The spectator: not what goes to players only, but what goes to spectators.
            let watcher = [format!("to 4 {n}"), format!("watchers {n}")];
            assert_eq!(received[3], expected(&watcher), "frame {n}");
        }
    }
}
