//! Every decoder against malformed, truncated, oversized and non-finite input.

use crate::*;
use sightline_combat::{GameMode, Team, WeaponKind};
use sightline_map::test_support::HOSTILE_MAP_NAMES;
use sightline_movement::MoveFlags;
use sightline_sim::test_support::wire_cmd as cmd;
use sightline_sim::{Buttons, PlayerId};

fn welcome() -> ServerMessage {
    ServerMessage::Welcome(Welcome {
        protocol_version: PROTOCOL_VERSION,
        tick_hz: 128,
        snapshot_hz: 64,
        server_name: "Test server".into(),
        map_name: "duel".into(),
        map_hash: 0xdead_beef_1234,
        your_id: Some(PlayerId(3)),
        resume: [7; 16],
    })
}

fn snapshot(n: usize) -> Snapshot {
    Snapshot {
        seq: 7,
        baseline: 0,
        server_tick: 1234,
        server_time_us: 9_640_625,
        ack_input_seq: 99,
        input_queue: 1,
        repeated_inputs: 0,
        touches: Default::default(),
        server_tick_us: 312,
        players: (0..n)
            .map(|i| PlayerSnap {
                id: PlayerId(i as u8),
                pos: [1024, 2048, 3072],
                vel: [-1792, 0, 128],
                yaw: 10_430,
                pitch: 1_043,
                flags: MoveFlags::ON_GROUND,
                health: 100,
                armor: 50,
                weapon: WeaponKind::Shotgun,
                ammo: 30,
                spawn_count: i as u8,
                intent: [127, -64],
                held: Buttons::CROUCH,
                kit: crate::kit(0b111, true, false),
            })
            .collect(),
        projectiles: vec![],
        items: 0b1011,
        drops: vec![],
        flags: None,
        events: vec![],
        held: vec![],
    }
}

/// `s` as a full snapshot datagram.
fn full_bytes(s: &Snapshot) -> Vec<u8> {
    ServerDatagram::Snapshot(SnapshotPacket::encode(s, None))
        .encode()
        .unwrap()
}

/// Decodes a full snapshot datagram and resolves it.
fn decode_full(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
    match ServerDatagram::decode(bytes)? {
        ServerDatagram::Snapshot(p) => p.resolve(None),
        ServerDatagram::Pong { .. } => Err(DecodeError::Invalid("a pong".into())),
        ServerDatagram::WeaponCheck(_) => Err(DecodeError::Invalid("a weapon check".into())),
    }
}

#[test]
fn weapon_checks_round_trip_and_hostile_ones_are_refused() {
    let check = crate::WeaponCheck {
        ack_input_seq: 812,
        tick: 99_000,
        current: sightline_combat::WeaponKind::Rockets,
        timers: [0.0, -0.003, 1.5, 0.0],
        alt_held: false,
        owned: 0b111,
        ammo: [(30, 90), (8, 24), (5, 15), (0, 0), (0, 0)],
    };
    let bytes = ServerDatagram::WeaponCheck(check).encode().unwrap();
    assert_eq!(
        ServerDatagram::decode(&bytes).unwrap(),
        ServerDatagram::WeaponCheck(check)
    );
    for bad in [
        crate::WeaponCheck {
            timers: [f32::NAN, 0.0, 0.0, 0.0],
            ..check
        },
        crate::WeaponCheck {
            timers: [0.0, 0.0, 1e9, 0.0],
            ..check
        },
        crate::WeaponCheck {
            owned: 0x80,
            ..check
        },
    ] {
        let bytes = ServerDatagram::WeaponCheck(bad).encode().unwrap();
        assert!(ServerDatagram::decode(&bytes).is_err(), "{bad:?}");
    }
}

fn samples() -> (Vec<Vec<u8>>, Vec<fn(&[u8]) -> bool>) {
    let encoded = vec![
        ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: "alice".into(),
            resume: None,
            player_key: None,
        }
        .encode()
        .unwrap(),
        welcome().encode().unwrap(),
        InputPacket::new(5, 0, None, &[cmd(4), cmd(3), cmd(2), cmd(1)])
            .encode()
            .unwrap(),
        full_bytes(&snapshot(MAX_SNAPSHOT_PLAYERS)),
    ];
    let decoders: Vec<fn(&[u8]) -> bool> = vec![
        |b| ClientMessage::decode(b).is_ok(),
        |b| ServerMessage::decode(b).is_ok(),
        |b| InputPacket::decode(b).is_ok(),
        |b| decode_full(b).is_ok(),
    ];
    (encoded, decoders)
}

#[test]
fn every_message_round_trips() {
    let hello = ClientMessage::Hello {
        protocol_version: PROTOCOL_VERSION,
        name: "alice".into(),
        resume: None,
        player_key: None,
    };
    assert_eq!(ClientMessage::decode(&hello.encode().unwrap()), Ok(hello));
    assert_eq!(
        ServerMessage::decode(&welcome().encode().unwrap()),
        Ok(welcome())
    );
    let packet = InputPacket::new(5, 0, None, &[cmd(4), cmd(3)]);
    let read = InputPacket::decode(&packet.encode().unwrap()).unwrap();
    assert_eq!(read, packet);
    assert_eq!(read.commands(None), Ok(vec![cmd(4), cmd(3)]));
    let full = snapshot(MAX_SNAPSHOT_PLAYERS);
    assert_eq!(decode_full(&full_bytes(&full)), Ok(full));
}

#[test]
fn encoded_sizes_stay_under_their_caps() {
    let (encoded, _) = samples();
    assert!(
        encoded[2].len() <= InputPacket::MAX_BYTES,
        "{}",
        encoded[2].len()
    );
    assert!(
        encoded[3].len() <= ServerDatagram::MAX_BYTES,
        "{}",
        encoded[3].len()
    );
    // A player sent in full costs about 30 bytes.
    let per_player = (full_bytes(&snapshot(2)).len() - full_bytes(&snapshot(1)).len()) as f32;
    assert!(per_player <= 44.0, "{per_player} bytes per player");
}

#[test]
fn truncated_messages_are_refused() {
    let (encoded, decoders) = samples();
    for (bytes, decode) in encoded.iter().zip(&decoders) {
        assert!(decode(bytes));
        for cut in 0..bytes.len() {
            assert!(!decode(&bytes[..cut]), "accepted a message cut at {cut}");
        }
    }
}

#[test]
fn trailing_bytes_and_oversized_input_are_refused() {
    let (encoded, decoders) = samples();
    for (bytes, decode) in encoded.iter().zip(&decoders) {
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(!decode(&longer));
        assert!(!decode(&[0u8; 70_000]));
    }
    assert_eq!(
        decode_full(&[1u8; ServerDatagram::MAX_BYTES + 1]),
        Err(DecodeError::TooLarge {
            len: ServerDatagram::MAX_BYTES + 1,
            max: ServerDatagram::MAX_BYTES
        })
    );
}

#[test]
fn garbage_never_panics() {
    let (_, decoders) = samples();
    // Every decoder must answer, never panic.
    for bytes in crate::bytes::byte_soup(0x9e37_79b9_7f4a_7c15, 400) {
        for decode in &decoders {
            let _ = decode(&bytes);
        }
    }
}

#[test]
fn non_finite_numbers_are_refused() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut c = cmd(2);
        c.forward = bad;
        let packet = InputPacket::new(0, 0, None, &[c]);
        // Refused as it is read: the packet's own encoding checks its numbers.
        assert!(matches!(
            InputPacket::decode(&packet.encode().unwrap()),
            Err(DecodeError::Malformed(_))
        ));
    }
}

#[test]
fn player_states_beyond_the_grid_or_the_pitch_limit_are_refused() {
    let refused = |change: fn(&mut PlayerSnap)| {
        let mut snap = snapshot(3);
        change(&mut snap.players[1]);
        matches!(
            decode_full(&full_bytes(&snap)),
            Err(DecodeError::Invalid(_))
        )
    };
    assert!(refused(|p| p.pos[2] = (1 << 23) + 1));
    assert!(refused(|p| p.pos[0] = i32::MIN));
    assert!(refused(|p| p.pitch = 16_300), "past 89 degrees");
    assert!(refused(|p| p.pitch = sightline_sim::MAX_PITCH_STEPS + 1));
    assert!(
        !refused(|p| p.pitch = -sightline_sim::MAX_PITCH_STEPS),
        "looking straight down, as far as the grid tilts"
    );
    assert!(!refused(|p| p.pos[1] = -(1 << 23)), "the grid's edge");
    assert!(!refused(|p| p.yaw = i16::MIN), "any yaw");
}

#[test]
fn held_buttons_other_than_jump_and_crouch_are_refused() {
    let mut snap = snapshot(2);
    snap.players[0].held = Buttons::FIRE;
    assert!(decode_full(&full_bytes(&snap)).is_err());
    snap.players[0].held = Buttons::JUMP.with(Buttons::CROUCH);
    assert!(decode_full(&full_bytes(&snap)).is_ok());
}

#[test]
fn out_of_range_values_are_refused() {
    let too_many = InputPacket::new(
        0,
        0,
        None,
        &(1..=MAX_PACKET_CMDS as u32 + 1)
            .rev()
            .map(cmd)
            .collect::<Vec<_>>(),
    );
    assert!(InputPacket::decode(&too_many.encode().unwrap()).is_err());
    let empty = InputPacket::new(0, 0, None, &[]);
    assert!(InputPacket::decode(&empty.encode().unwrap()).is_err());
    // Out of order, the older command's gap runs the sequence past its range.
    let unordered = InputPacket::new(0, 0, None, &[cmd(1), cmd(2)]);
    let read = InputPacket::decode(&unordered.encode().unwrap()).unwrap();
    assert!(read.commands(None).is_err());
    let mut slot = cmd(1);
    slot.weapon_slot = 9;
    let bad_slot = InputPacket::new(0, 0, None, &[slot]);
    assert!(InputPacket::decode(&bad_slot.encode().unwrap()).is_err());

    let mut snap = snapshot(2);
    snap.players[1].flags = 0x80;
    assert!(decode_full(&full_bytes(&snap)).is_err());
    let mut snap = snapshot(2);
    snap.players[1].id = PlayerId(0);
    assert!(decode_full(&full_bytes(&snap)).is_err());
    let mut snap = snapshot(1);
    snap.seq = 0;
    assert!(decode_full(&full_bytes(&snap)).is_err());

    let long_name = ClientMessage::Hello {
        protocol_version: 1,
        name: "x".repeat(MAX_NAME_LEN + 1),
        resume: None,
        player_key: None,
    };
    assert!(ClientMessage::decode(&long_name.encode().unwrap()).is_err());
    let control = ClientMessage::Hello {
        protocol_version: 1,
        name: "bad\u{7}name".into(),
        resume: None,
        player_key: None,
    };
    assert!(ClientMessage::decode(&control.encode().unwrap()).is_err());
    let mut w = welcome();
    if let ServerMessage::Welcome(w) = &mut w {
        w.snapshot_hz = 60;
    }
    assert!(ServerMessage::decode(&w.encode().unwrap()).is_err());
    // An enum tag past the last variant.
    assert!(ServerMessage::decode(&[9, 0, 0]).is_err());
}

#[test]
fn welcome_version_can_be_read_from_any_version() {
    assert_eq!(
        peek_welcome_version(&welcome().encode().unwrap()),
        Some(PROTOCOL_VERSION)
    );
    let future = ServerMessage::Welcome(Welcome {
        protocol_version: 77,
        ..match welcome() {
            ServerMessage::Welcome(w) => w,
            _ => unreachable!(),
        }
    });
    let mut bytes = future.encode().unwrap();
    // Later versions may append fields the current decoder does not know.
    bytes.extend_from_slice(&[1, 2, 3]);
    assert!(ServerMessage::decode(&bytes).is_err());
    assert_eq!(peek_welcome_version(&bytes), Some(77));
    let chat = ServerMessage::Chat {
        from: PlayerId(1),
        text: "hi".into(),
        team: false,
    };
    assert_eq!(peek_welcome_version(&chat.encode().unwrap()), None);
}

#[test]
fn datagrams_wrap_inputs_snapshots_and_pings() {
    let ping = ClientDatagram::Ping {
        client_time_us: 123_456,
    };
    assert_eq!(ClientDatagram::decode(&ping.encode().unwrap()), Ok(ping));
    let input = ClientDatagram::Input(InputPacket::new(1, 0, None, &[cmd(2), cmd(1)]));
    assert_eq!(ClientDatagram::decode(&input.encode().unwrap()), Ok(input));
    let full = ServerDatagram::Snapshot(SnapshotPacket::encode(
        &snapshot(MAX_SNAPSHOT_PLAYERS),
        None,
    ));
    let bytes = full.encode().unwrap();
    assert!(bytes.len() <= ServerDatagram::MAX_BYTES);
    assert_eq!(ServerDatagram::decode(&bytes), Ok(full));
    let pong = ServerDatagram::Pong {
        client_time_us: 1,
        server_time_us: 2,
    };
    assert_eq!(ServerDatagram::decode(&pong.encode().unwrap()), Ok(pong));
    // Resolving validates what the packet describes.
    let mut bad = snapshot(2);
    bad.players[0].pitch = i16::MAX;
    assert!(decode_full(&full_bytes(&bad)).is_err());
    for cut in 0..bytes.len() {
        assert!(ServerDatagram::decode(&bytes[..cut]).is_err());
    }
    assert!(ClientDatagram::decode(&[7, 0]).is_err());
}

#[test]
fn a_full_scoreboard_of_extreme_scores_fits_its_cap() {
    let lines: Vec<ScoreLine> = (0..MAX_SNAPSHOT_PLAYERS as u8)
        .map(|id| ScoreLine {
            id: PlayerId(id),
            ping_ms: Some(u16::MAX),
            frags: i32::MIN,
            deaths: u32::MAX,
            team: Some(Team::Blue),
            captures: u8::MAX,
        })
        .collect();
    let msg = ServerMessage::Scoreboard(lines);
    let bytes = msg.encode().expect("the largest scoreboard fits");
    assert_eq!(ServerMessage::decode(&bytes), Ok(msg));
}

#[test]
fn full_lifetimes_fit_the_cap_and_out_of_order_ones_are_refused() {
    let most = Lifetime {
        kills: u32::MAX,
        deaths: u32::MAX,
    };
    let rows: Vec<_> = (0..MAX_SNAPSHOT_PLAYERS as u8)
        .map(|id| (PlayerId(id), most))
        .collect();
    let msg = ServerMessage::Lifetimes(rows);
    let bytes = msg.encode().expect("the largest fits");
    assert_eq!(ServerMessage::decode(&bytes), Ok(msg));
    let backwards = ServerMessage::Lifetimes(vec![(PlayerId(2), most), (PlayerId(1), most)]);
    let bytes = bincode::serde::encode_to_vec(&backwards, bincode::config::standard()).unwrap();
    assert!(ServerMessage::decode(&bytes).is_err());
}

#[test]
fn encoding_refuses_a_message_above_its_cap() {
    let long = ServerMessage::Chat {
        from: PlayerId(0),
        text: "x".repeat(ServerMessage::MAX_BYTES),
        team: false,
    };
    assert!(matches!(
        long.encode(),
        Err(crate::EncodeError::TooLarge { .. })
    ));
}

#[test]
fn scoreboards_out_of_order_or_with_unknown_teams_are_refused() {
    let line = |id, team| ScoreLine {
        id: PlayerId(id),
        ping_ms: None,
        frags: 0,
        deaths: 0,
        team,
        captures: 0,
    };
    for lines in [
        vec![line(1, None), line(1, None)],
        vec![line(2, None), line(1, None)],
    ] {
        let bytes = bincode::serde::encode_to_vec(
            ServerMessage::Scoreboard(lines),
            bincode::config::standard(),
        )
        .unwrap();
        assert!(ServerMessage::decode(&bytes).is_err());
    }
    // A third team: the byte before the last (the captures) is the team's variant number.
    let mut bytes = ServerMessage::Scoreboard(vec![line(0, Some(Team::Blue))])
        .encode()
        .unwrap();
    let team = bytes.len() - 2;
    assert_eq!(bytes[team], 1);
    bytes[team] = 2;
    assert!(ServerMessage::decode(&bytes).is_err());
}

#[test]
fn unknown_weapons_and_game_modes_are_refused() {
    // The last byte of each is the enum's variant number, one past the last known: a
    // snapshot whose last event is a kill ends with its weapon.
    let weapon_last = |weapon| Snapshot {
        events: vec![crate::EventSnap {
            seq: 1,
            tick: 1200,
            event: crate::PlayerEvent::Killed {
                victim: PlayerId(1),
                killer: PlayerId(2),
                weapon,
            },
        }],
        ..snapshot(1)
    };
    // The snapshot's own bytes, before the entropy coder.
    let read = |bytes: &[u8]| SnapshotPacket::from_bytes(bytes).and_then(|p| p.resolve(None));
    let mut bytes = SnapshotPacket::encode(&weapon_last(WeaponKind::Rockets), None).to_bytes();
    assert_eq!(bytes.last(), Some(&2));
    assert!(read(&bytes).is_ok());
    *bytes.last_mut().unwrap() = WeaponKind::ALL.len() as u8;
    assert!(read(&bytes).is_err());
    let mut bytes = ServerMessage::Match {
        fraglimit: 0,
        capturelimit: 0,
        time_left_s: 0,
        intermission: false,
        mode: GameMode::TeamDeathmatch,
        warmup: None,
    }
    .encode()
    .unwrap();
    // The mode is the first field after the variant tag; capture the flag is the last.
    assert_eq!(bytes[1], 1);
    assert!(ServerMessage::decode(&bytes).is_ok());
    bytes[1] = 2;
    assert!(ServerMessage::decode(&bytes).is_ok());
    bytes[1] = GameMode::ALL.len() as u8;
    assert!(ServerMessage::decode(&bytes).is_err());
}

#[test]
fn map_names_that_are_paths_are_refused() {
    let with_map = |name: &str| {
        let mut w = welcome();
        if let ServerMessage::Welcome(w) = &mut w {
            w.map_name = name.into();
        }
        w
    };
    assert!(with_map("duel").validate().is_ok());
    assert!(with_map("depot_2-b").validate().is_ok());
    for bad in HOSTILE_MAP_NAMES.into_iter().chain(["-x", "\u{430}"]) {
        let err = with_map(bad).validate().unwrap_err();
        assert!(err.to_string().contains("map name"), "{bad:?}: {err}");
        let change = ServerMessage::MapChange {
            map_name: bad.into(),
            map_hash: 1,
        };
        assert!(change.validate().is_err(), "{bad:?}");
    }
}

#[test]
fn shown_text_holding_invisible_characters_is_refused() {
    for bad in ["al\u{200B}ice", "bob\u{202E}txt", "\u{3164}", "x\u{1b}"] {
        let joined = ServerMessage::PlayerJoined {
            id: PlayerId(1),
            name: bad.into(),
            bot: false,
        };
        assert!(joined.validate().is_err(), "{bad:?}");
        let chat = ServerMessage::Chat {
            from: PlayerId(1),
            text: bad.into(),
            team: false,
        };
        assert!(chat.validate().is_err(), "{bad:?}");
        let hello = ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: bad.into(),
            resume: None,
            player_key: None,
        };
        assert!(hello.validate().is_err(), "{bad:?}");
    }
    // Whatever clean_text makes of a name is valid to send.
    let hello = ClientMessage::Hello {
        protocol_version: PROTOCOL_VERSION,
        name: crate::clean_text("al\u{200B}ice\u{202E} ", MAX_NAME_LEN),
        resume: None,
        player_key: None,
    };
    assert!(hello.validate().is_ok());
}

#[test]
fn a_shot_is_a_few_bytes_and_its_pitch_within_the_limit() {
    let shot = |pitch| ServerMessage::Fired {
        shooter: PlayerId(7),
        weapon: WeaponKind::Rifle,
        aim: [-30_000, pitch],
        tick: 1_000_000,
    };
    let limit = sightline_sim::MAX_PITCH_STEPS;
    let bytes = shot(-limit).encode().unwrap();
    assert_eq!(ServerMessage::decode(&bytes).unwrap(), shot(-limit));
    // Who, what, two angles and the tick; the position is the shooter's in the snapshot.
    assert!(bytes.len() <= 14, "{} bytes", bytes.len());
    assert!(matches!(
        ServerMessage::decode(&shot(limit + 1).encode().unwrap()),
        Err(DecodeError::Invalid(_))
    ));
}
