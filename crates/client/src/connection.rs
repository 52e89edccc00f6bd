//! Connecting: Hello, decoding what the server sends, checking the Welcome, changing
//! maps, disconnection.

use crate::sets::ReceiveStep;
use crate::status::{ConnectionStatus, JoinAs, ServerInfo, Watching};
use crate::{ClientStats, FromServer, LocalPlayer};
use bevy::prelude::*;
use sightline_map::{CurrentMap, MapSource, find_map_by_name};
use sightline_movement::PlayerState;
use sightline_net::RenetClient;
use sightline_protocol::{
    Channel, ClientMessage, DecodeError, MAX_NAME_LEN, PROTOCOL_VERSION, PlayerKey, ServerMessage,
    Welcome, Wire, clean_text, peek_welcome_version,
};
use sightline_sim::TickConfig;
use sightline_sim::{EndSession, SessionAppExt};

/// The name this client asks the server for (the server may adjust it).
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub struct DesiredName(pub String);

/// The player's own key for servers' lifetime statistics, sent in the Hello; `None`
/// keeps none. The windowed game keeps it in its config (`cl_guid`).
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsKey(pub Option<PlayerKey>);

/// Says Hello once the transport is up (with the resume secret when coming back).
pub(crate) fn send_hello(
    mut client: ResMut<RenetClient>,
    mut status: ResMut<ConnectionStatus>,
    name: Res<DesiredName>,
    key: Res<StatsKey>,
    reconnect: Res<crate::Reconnect>,
    join_as: Res<JoinAs>,
) {
    if *status == ConnectionStatus::Connecting && client.is_connected() {
        // The server cleans names too; cleaning here keeps the Hello valid.
        let name = clean_text(&name.0, MAX_NAME_LEN);
        let hello = match *join_as {
            JoinAs::Player => ClientMessage::Hello {
                protocol_version: PROTOCOL_VERSION,
                name,
                resume: reconnect.secret.filter(|_| reconnect.resuming),
                player_key: key.0,
            },
            // A spectator comes back as a spectator: it has no player to resume.
            JoinAs::Spectator => ClientMessage::Spectate {
                protocol_version: PROTOCOL_VERSION,
                name,
            },
        };
        crate::send_to_server(&mut client, Channel::Reliable, &hello);
        *status = ConnectionStatus::AwaitingWelcome;
    }
}

/// A Welcome received in the game: the server moved this connection between playing and
/// watching (`team spectator`, `team auto`), and a new session starts on it.
#[derive(Resource, Debug, Default)]
pub(crate) struct RoleChange(Option<Welcome>);

/// Starts the session a second Welcome opens, on the same connection: the old one is
/// forgotten as on a reconnection (players, snapshots, predictions, feeds), the Welcome
/// taken as the first was, and a later reconnection comes back in the new role.
pub(crate) fn change_role(world: &mut World) {
    let Some(welcome) = world.resource_mut::<RoleChange>().0.take() else {
        return;
    };
    sightline_sim::end_session(world);
    world.insert_resource(match welcome.your_id {
        Some(_) => JoinAs::Player,
        None => JoinAs::Spectator,
    });
    *world.resource_mut::<ConnectionStatus>() = ConnectionStatus::AwaitingWelcome;
    world.write_message(FromServer(ServerMessage::Welcome(welcome)));
}

/// Gives up on the server with a reason the player can read. Without a transport (a
/// demo played back) there is nothing to disconnect.
fn leave(client: Option<&mut RenetClient>, status: &mut ConnectionStatus, reason: String) {
    error!("{reason}");
    if let Some(client) = client {
        client.disconnect();
    }
    *status = ConnectionStatus::Disconnected(reason);
}

/// Decodes what the server sent on the reliable channel, once, into [`FromServer`]
/// messages. A message that cannot be decoded is counted and dropped, unless it ends the
/// connection (a Welcome of another protocol version, or one this client cannot take).
pub(crate) fn decode_reliable(
    mut client: ResMut<RenetClient>,
    mut status: ResMut<ConnectionStatus>,
    mut stats: ResMut<ClientStats>,
    mut inbound: MessageWriter<FromServer>,
    mut role: ResMut<RoleChange>,
) {
    if role.0.is_some() {
        return; // the rest waits for the new session
    }
    while let Some(bytes) = client.receive_message(Channel::Reliable) {
        match ServerMessage::decode(&bytes) {
            // Welcomed again in the game: a new role. What follows is the next session's,
            // read once `change_role` has started it.
            Ok(ServerMessage::Welcome(welcome)) if status.is_connected() => {
                role.0 = Some(welcome);
                return;
            }
            Ok(msg) => {
                inbound.write(FromServer(msg));
            }
            Err(e) => {
                if let Some(reason) = fatal_decode_error(&status, &bytes, &e) {
                    leave(Some(&mut client), &mut status, reason);
                    return;
                }
                stats.malformed += 1;
                debug!("dropped a server message: {e}");
            }
        }
    }
}

/// Takes the server's Welcome (or refusal): the map, the tick rate and this client's own
/// player; a second Welcome is counted as malformed.
pub(crate) fn take_welcome(
    mut commands: Commands,
    mut inbound: MessageReader<FromServer>,
    mut client: Option<ResMut<RenetClient>>,
    mut status: ResMut<ConnectionStatus>,
    mut stats: ResMut<ClientStats>,
    mut fixed: ResMut<Time<Fixed>>,
    mut reconnect: ResMut<crate::Reconnect>,
) {
    for FromServer(msg) in inbound.read() {
        match msg {
            ServerMessage::Welcome(welcome) => {
                if *status != ConnectionStatus::AwaitingWelcome {
                    stats.malformed += 1;
                    continue;
                }
                match accept_welcome(welcome) {
                    Ok((map, tick)) => {
                        let role = match welcome.your_id {
                            Some(id) => format!("player {}", id.0),
                            None => "a spectator".into(),
                        };
                        info!(
                            "joined \"{}\" as {role} on {} ({} Hz tick, {} Hz snapshots)",
                            welcome.server_name,
                            welcome.map_name,
                            welcome.tick_hz,
                            welcome.snapshot_hz
                        );
                        fixed.set_timestep_hz(tick.tick_hz as f64);
                        commands.insert_resource(tick);
                        commands.insert_resource(map);
                        match welcome.your_id {
                            Some(id) => {
                                commands.spawn((
                                    crate::snapshots::player_bundle(id, PlayerState::default()),
                                    LocalPlayer,
                                ));
                            }
                            None => commands.insert_resource(Watching::default()),
                        }
                        reconnect.welcomed(welcome.resume);
                        *status = ConnectionStatus::Connected(ServerInfo {
                            welcome: welcome.clone(),
                        });
                    }
                    Err(reason) => {
                        leave(client.as_deref_mut(), &mut status, reason);
                        return;
                    }
                }
            }
            ServerMessage::Refused { reason } => {
                let reason = format!("server refused the connection: {reason}");
                leave(client.as_deref_mut(), &mut status, reason);
                return;
            }
            _ => {}
        }
    }
}

/// Moves to the server's next map, which must be the same file as the server's; the
/// remote players' snapshot buffers start over there.
pub(crate) fn change_map(
    mut commands: Commands,
    mut inbound: MessageReader<FromServer>,
    mut client: Option<ResMut<RenetClient>>,
    mut status: ResMut<ConnectionStatus>,
    buffers: Query<Entity, With<sightline_interpolation::SnapshotBuffer>>,
) {
    for FromServer(msg) in inbound.read() {
        let ServerMessage::MapChange { map_name, map_hash } = msg else {
            continue;
        };
        match load_map(map_name, *map_hash) {
            Ok(map) => {
                info!("the server moves to {map_name}");
                commands.insert_resource(map);
                for entity in &buffers {
                    commands
                        .entity(entity)
                        .insert(sightline_interpolation::SnapshotBuffer::default());
                }
            }
            Err(reason) => {
                leave(client.as_deref_mut(), &mut status, reason);
                return;
            }
        }
    }
}

fn version_mismatch(server: u32) -> String {
    format!(
        "cannot join: the server speaks protocol version {server}, this client speaks version \
         {PROTOCOL_VERSION}; use a client and server of the same release"
    )
}

/// Whether a server message that failed to decode ends the connection, and why: a
/// Welcome of another protocol version, or, while waiting for one, a Welcome this client
/// cannot take (such as one naming a map by a path). Anything else is dropped and counted.
fn fatal_decode_error(
    status: &ConnectionStatus,
    bytes: &[u8],
    error: &DecodeError,
) -> Option<String> {
    let version = peek_welcome_version(bytes)?;
    if version != PROTOCOL_VERSION {
        return Some(version_mismatch(version));
    }
    (*status == ConnectionStatus::AwaitingWelcome)
        .then(|| format!("cannot join: the server sent an invalid Welcome ({error})"))
}

/// Checks a Welcome against what this client has: same protocol, same map file.
fn accept_welcome(w: &Welcome) -> Result<(CurrentMap, TickConfig), String> {
    if w.protocol_version != PROTOCOL_VERSION {
        return Err(version_mismatch(w.protocol_version));
    }
    let tick = TickConfig::new(w.tick_hz, w.snapshot_hz)
        .map_err(|e| format!("server sent an unusable tick configuration: {e}"))?;
    Ok((load_map(&w.map_name, w.map_hash)?, tick))
}

/// Loads the map the server plays and checks it is the same file. The name comes from
/// the server, so it is only ever looked up as a name in the maps folder, never as a path.
fn load_map(name: &str, hash: u64) -> Result<CurrentMap, String> {
    let cannot =
        |e: sightline_map::MapError| format!("cannot load map {name:?} the server plays: {e}");
    let map = MapSource::load(&find_map_by_name(name).map_err(cannot)?).map_err(cannot)?;
    if map.hash != hash {
        return Err(format!(
            "map \"{name}\" differs from the server's copy (local hash {:016x}, server hash {hash:016x}); \
             install the server's version of the map",
            map.hash
        ));
    }
    Ok(CurrentMap::new(map))
}

/// Notices the transport going away (timeout, server shutdown, kick, a refused token),
/// with the transport's own words when it has them.
pub(crate) fn notice_disconnect(
    client: Res<RenetClient>,
    transport: Option<Res<sightline_net::UdpClientTransport>>,
    mut status: ResMut<ConnectionStatus>,
    mut reconnect: ResMut<crate::Reconnect>,
    time: Res<Time<Real>>,
) {
    let settled = matches!(
        *status,
        ConnectionStatus::Disconnected(_) | ConnectionStatus::Reconnecting(_)
    );
    if client.is_disconnected() && !settled {
        let timed_out = transport.as_ref().is_some_and(|t| t.timed_out());
        let reason = transport
            .and_then(|t| t.failure())
            .or_else(|| client.disconnect_reason().map(|r| r.to_string()))
            .unwrap_or_else(|| "connection lost".to_string());
        // A link that went silent in the game, or a failed try to come back: try again
        // while the server still keeps the place. A kick or a closed server is final.
        let in_game = matches!(*status, ConnectionStatus::Connected(_));
        let retry = (in_game && timed_out) || reconnect.active();
        if retry && reconnect.lost(time.elapsed_secs_f64()) {
            warn!("connection lost ({reason}); reconnecting");
            *status = ConnectionStatus::Reconnecting(reason);
        } else {
            warn!("disconnected: {reason}");
            *status = ConnectionStatus::Disconnected(reason);
        }
    }
}

/// A new session may be on another map: the old one is not kept.
pub(crate) fn forget_map(mut commands: Commands) {
    commands.remove_resource::<sightline_map::CurrentMap>();
}

/// The connection: the Hello, what the server says decoded once, its Welcome and map, and
/// noticing the end.
pub(crate) struct ConnectionPlugin {
    /// Name to ask the server for.
    pub(crate) name: String,
}

impl Plugin for ConnectionPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(DesiredName(self.name.clone()))
            .init_resource::<StatsKey>()
            .init_resource::<JoinAs>()
            .init_session_resource::<ConnectionStatus>()
            .add_message::<FromServer>()
            .init_resource::<RoleChange>()
            .add_systems(EndSession, forget_map)
            .add_systems(
                PreUpdate,
                (
                    (change_role, send_hello, decode_reliable)
                        .chain()
                        .after(crate::stats::count_refused_packets)
                        .in_set(ReceiveStep::Transport)
                        .run_if(resource_exists::<RenetClient>),
                    (take_welcome, change_map)
                        .chain()
                        .in_set(ReceiveStep::Welcome),
                    notice_disconnect
                        .in_set(ReceiveStep::Disconnect)
                        .run_if(resource_exists::<RenetClient>),
                ),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_map::test_support::HOSTILE_MAP_NAMES;
    use sightline_sim::PlayerId;

    fn welcome(map_name: &str, map_hash: u64) -> Welcome {
        Welcome {
            protocol_version: PROTOCOL_VERSION,
            tick_hz: 128,
            snapshot_hz: 64,
            server_name: "test".into(),
            map_name: map_name.into(),
            map_hash,
            your_id: Some(PlayerId(3)),
            resume: [9; 16],
        }
    }

    /// A Welcome encoded by hand, as a hostile server could, bypassing the checks a
    /// well-behaved encoder makes: variant 0, then the fields in order (numbers under
    /// 251 take one byte, strings a length byte then their bytes, the resume secret its
    /// 16 bytes).
    fn raw_welcome(map_name: &str) -> Vec<u8> {
        let mut bytes = vec![0, PROTOCOL_VERSION as u8, 128, 64];
        for text in ["test", map_name] {
            bytes.push(text.len() as u8);
            bytes.extend_from_slice(text.as_bytes());
        }
        // The map hash, then Some(player 3).
        bytes.extend([7, 1, 3]);
        bytes.extend([9; 16]);
        bytes
    }

    /// Why `accept_welcome` refuses `w` (the accepted map has no Debug to unwrap with).
    fn refusal(w: &Welcome) -> String {
        match accept_welcome(w) {
            Ok(_) => panic!("{w:?} was accepted"),
            Err(reason) => reason,
        }
    }

    #[test]
    fn a_welcome_for_a_shipped_map_is_accepted() {
        let path = find_map_by_name("duel").unwrap_or_else(|e| panic!("{e}"));
        let hash = MapSource::load(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .hash;
        let (map, tick) = accept_welcome(&welcome("duel", hash)).unwrap();
        assert_eq!((map.def.name.as_str(), tick.tick_hz), ("duel", 128));
        let err = refusal(&welcome("duel", hash ^ 1));
        assert!(err.contains("differs from the server's copy"), "{err}");
    }

    #[test]
    fn a_welcome_naming_a_path_is_refused_before_anything_is_opened() {
        for name in HOSTILE_MAP_NAMES {
            let err = refusal(&welcome(name, 0));
            // Refused by the name alone: the lookup fails before any file is touched.
            assert!(err.contains("is not a map name"), "{name:?}: {err}");
            assert!(err.starts_with("cannot load map"), "{name:?}: {err}");
        }
        let err = refusal(&welcome("no_such_map", 0));
        assert!(err.contains("no map named"), "{err}");
    }

    #[test]
    fn an_undecodable_welcome_ends_the_handshake_with_a_reason() {
        let good = raw_welcome("duel");
        assert_eq!(
            ServerMessage::decode(&good),
            Ok(ServerMessage::Welcome(welcome("duel", 7))),
            "the hand encoding matches the real one"
        );
        for name in HOSTILE_MAP_NAMES {
            let bytes = raw_welcome(name);
            let err = ServerMessage::decode(&bytes).unwrap_err();
            let reason = fatal_decode_error(&ConnectionStatus::AwaitingWelcome, &bytes, &err)
                .unwrap_or_else(|| panic!("{name:?} did not end the handshake"));
            assert!(reason.contains("invalid Welcome"), "{reason}");
            assert!(reason.contains("map name"), "{reason}");
        }
        // Once in the game, a stray bad message is only dropped.
        let bytes = raw_welcome("/dev/zero");
        let err = ServerMessage::decode(&bytes).unwrap_err();
        let playing = ConnectionStatus::Connected(ServerInfo {
            welcome: welcome("duel", 7),
        });
        assert_eq!(fatal_decode_error(&playing, &bytes, &err), None);
        // Another protocol version is named, whatever the stage.
        let mut other = good.clone();
        other[1] = PROTOCOL_VERSION as u8 + 1;
        let err = ServerMessage::decode(&[1]).unwrap_err();
        let reason = fatal_decode_error(&playing, &other, &err).unwrap();
        assert!(reason.contains("protocol version"), "{reason}");
    }
}
