//! The handshake: version and map checks on both sides, refusals with reasons.

use crate::support::raw;
use sightline_client::{Autopilot, ClientPlugin, ConnectionStatus, InputSource, Roster};
use sightline_harness::{Stepper, manual_app};
use sightline_net::{ClientNetPlugin, MemoryNetwork, RenetClient, RenetServer, ServerNetPlugin};
use sightline_protocol::{Channel, PROTOCOL_VERSION, ServerMessage, Welcome, Wire};
use sightline_server::ServerConfig;
use sightline_sim::{PlayerId, TickConfig};
use std::time::Duration;

#[test]
fn server_refuses_a_client_of_another_protocol_version_naming_both() {
    let mut s = Stepper::new(ServerConfig::default(), "duel");
    let c = s.add_raw_client();
    s.step();
    raw::hello(&mut s, c, PROTOCOL_VERSION + 98, "old");
    s.steps(5);
    let msgs = raw::reliable(&mut s, c);
    let Some(ServerMessage::Refused { reason }) = msgs.first() else {
        panic!("expected a refusal, got {msgs:?}");
    };
    assert!(
        reason.contains(&format!("version {PROTOCOL_VERSION}")),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("version {}", PROTOCOL_VERSION + 98)),
        "{reason}"
    );
    // Dropped after a grace period to read the reason.
    s.run_for(1.5);
    assert!(
        s.clients[c]
            .world()
            .resource::<RenetClient>()
            .is_disconnected()
    );
}

/// A client with the real client plugin against a scripted fake server that answers
/// Hello with `welcome` (as raw bytes).
fn client_status_after_welcome(welcome: Vec<u8>) -> ConnectionStatus {
    let dt = Duration::from_millis(10);
    let network = MemoryNetwork::new();
    let mut server = manual_app(dt);
    server.add_plugins(ServerNetPlugin::memory(network.clone()));
    let mut client = sightline_client::client_app(
        ClientNetPlugin::memory(network.connect()),
        ClientPlugin {
            name: "tester".into(),
            input: InputSource::Autopilot(Autopilot::new(1)),
        },
        sightline_runtime::Pacing::Manual(dt),
    );
    let mut sent = false;
    for _ in 0..30 {
        server.update();
        client.update();
        let mut renet = server.world_mut().resource_mut::<RenetServer>();
        for id in renet.clients_id() {
            while renet.receive_message(id, Channel::Reliable).is_some() {
                if !sent {
                    renet.send_message(id, Channel::Reliable, welcome.clone());
                    sent = true;
                }
            }
        }
    }
    assert!(sent, "the client never said Hello");
    client.world().resource::<ConnectionStatus>().clone()
}

fn welcome(version: u32, map: &str, hash: u64) -> Welcome {
    Welcome {
        protocol_version: version,
        tick_hz: 64,
        snapshot_hz: 32,
        server_name: "fake".into(),
        map_name: map.into(),
        map_hash: hash,
        your_id: Some(PlayerId(0)),
        resume: [7; 16],
    }
}

fn disconnect_reason(status: ConnectionStatus) -> String {
    match status {
        ConnectionStatus::Disconnected(reason) => reason,
        other => panic!("expected the client to leave, it is {other:?}"),
    }
}

#[test]
fn client_refuses_a_server_of_another_protocol_version_naming_both() {
    let future = PROTOCOL_VERSION + 1;
    // Same layout, other version.
    let bytes = ServerMessage::Welcome(welcome(future, "duel", 0))
        .encode()
        .unwrap();
    let reason = disconnect_reason(client_status_after_welcome(bytes.clone()));
    assert!(reason.contains(&format!("version {future}")), "{reason}");
    assert!(
        reason.contains(&format!("version {PROTOCOL_VERSION}")),
        "{reason}"
    );
    // A later version whose Welcome this client cannot fully decode.
    let mut longer = bytes;
    longer.extend_from_slice(&[7, 7, 7]);
    let reason = disconnect_reason(client_status_after_welcome(longer));
    assert!(reason.contains(&format!("version {future}")), "{reason}");
}

#[test]
fn client_refuses_a_server_whose_map_file_differs() {
    let map = sightline_harness::load_map("duel");
    let ok = ServerMessage::Welcome(welcome(PROTOCOL_VERSION, "duel", map.hash))
        .encode()
        .unwrap();
    assert!(client_status_after_welcome(ok).is_connected());

    let other = ServerMessage::Welcome(welcome(PROTOCOL_VERSION, "duel", map.hash ^ 1))
        .encode()
        .unwrap();
    let reason = disconnect_reason(client_status_after_welcome(other));
    assert!(
        reason.contains("differs from the server's copy"),
        "{reason}"
    );

    let missing = ServerMessage::Welcome(welcome(PROTOCOL_VERSION, "nowhere", 5))
        .encode()
        .unwrap();
    let reason = disconnect_reason(client_status_after_welcome(missing));
    assert!(reason.contains("cannot load map \"nowhere\""), "{reason}");
}

#[test]
fn a_full_server_refuses_with_a_reason() {
    let config = ServerConfig {
        max_players: 2,
        bots: 2,
        tick: TickConfig::new(64, 32).unwrap(),
        ..Default::default()
    };
    let mut s = Stepper::new(config, "duel");
    s.add_client("late", 3);
    s.run_for(0.5);
    let reason = disconnect_reason(s.clients[0].world().resource::<ConnectionStatus>().clone());
    assert!(reason.contains("server is full (2 players)"), "{reason}");
}

#[test]
fn names_are_cleaned_and_made_unique() {
    let mut s = Stepper::new(ServerConfig::default(), "duel");
    s.add_client("  ann  ", 1);
    s.add_client("ann", 2);
    s.run_for(0.5);
    let roster = s.clients[0].world().resource::<Roster>();
    let mut names: Vec<&str> = roster.0.values().map(|p| p.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["ann", "ann (2)"]);
}

#[test]
fn client_refuses_a_welcome_naming_a_path_without_opening_it() {
    for name in ["../../etc/passwd", "/dev/zero", "duel/../duel", "C:\\x", ""] {
        // A hostile server's encoder checks nothing; the client's decoder must.
        let bytes = ServerMessage::Welcome(welcome(PROTOCOL_VERSION, name, 0))
            .encode()
            .unwrap();
        let reason = disconnect_reason(client_status_after_welcome(bytes));
        assert!(reason.contains("invalid Welcome"), "{name:?}: {reason}");
        assert!(reason.contains("map name"), "{name:?}: {reason}");
    }
}

#[test]
fn look_alike_and_reserved_names_are_not_given_out() {
    let mut s = Stepper::new(ServerConfig::default(), "duel");
    let asked = [
        "alice",
        "ＡＬＩＣＥ",
        "al\u{200B}ice",
        "\u{430}lice",
        "Server",
    ];
    for (seed, name) in asked.iter().enumerate() {
        s.add_client(name, seed as u64 + 1);
    }
    s.run_for(0.5);
    let roster = s.clients[0].world().resource::<Roster>();
    let names: Vec<&str> = roster.0.values().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), asked.len(), "{names:?}");
    let mut keys: Vec<String> = names
        .iter()
        .map(|n| sightline_protocol::name_key(n))
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), names.len(), "two names look alike: {names:?}");
    assert!(
        !names
            .iter()
            .any(|n| sightline_protocol::is_reserved_name(n)),
        "{names:?}"
    );
    assert!(names.contains(&"player"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains('\u{200B}')), "{names:?}");
}

#[test]
fn a_held_place_is_claimed_once_when_two_connections_show_its_secret_in_one_frame() {
    use sightline_protocol::ClientMessage;
    let mut s = Stepper::new(ServerConfig::default(), "duel");
    let owner = s.add_raw_client();
    s.step();
    let welcome = raw::join(&mut s, owner, "owner");
    let twins = [s.add_raw_client(), s.add_raw_client()];
    s.steps(3);
    // Both Hellos leave in the same step, so the server reads them in one frame.
    for &twin in &twins {
        let hello = ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: "twin".into(),
            resume: Some(welcome.resume),
            player_key: None,
        };
        raw::send_bytes(&mut s, twin, Channel::Reliable, hello.encode().unwrap());
    }
    let mut ids = [None, None];
    for _ in 0..20 {
        s.step();
        for (i, &twin) in twins.iter().enumerate() {
            for msg in raw::reliable(&mut s, twin) {
                if let ServerMessage::Welcome(w) = msg {
                    ids[i] = w.your_id;
                }
            }
        }
    }
    let [Some(a), Some(b)] = ids else {
        panic!("both are welcomed: {ids:?}");
    };
    assert_ne!(a, b, "two connections were given one player");
    assert!(
        Some(a) == welcome.your_id || Some(b) == welcome.your_id,
        "{ids:?}"
    );
    // Everyone present has an id of their own.
    let mut present: Vec<PlayerId> = {
        let w = s.server.world_mut();
        w.query::<&PlayerId>().iter(w).copied().collect()
    };
    let all = present.len();
    present.sort();
    present.dedup();
    assert_eq!(present.len(), all, "a player id is held twice");
    // The taken-over player keeps its name; the other joined as someone new.
    let names: Vec<String> = {
        let w = s.server.world_mut();
        w.query::<&sightline_sim::PlayerName>()
            .iter(w)
            .map(|n| n.0.clone())
            .collect()
    };
    assert!(names.contains(&"owner".to_string()), "{names:?}");
}
