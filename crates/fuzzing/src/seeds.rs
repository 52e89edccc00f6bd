//! Seed inputs for every target: valid examples, so the fuzzer starts inside the formats
//! instead of having to discover them. Checked in as `fuzz/corpus/<target>/seed-<n>`;
//! the corpus test fails when those files drift from these (for example after a protocol
//! change) and rewrites them when run with `SIGHTLINE_WRITE_SEEDS=1`.

use crate::console::{CONFIG, Shell};
use sightline_combat::{FlagNews, FriendlyFire, GameMode, ProjectileKind, Team, WeaponKind};
use sightline_console::render_config;
use sightline_movement::MoveFlags;
use sightline_protocol::{
    Award, AwardKind, ClientDatagram, ClientMessage, DropSnap, EventSnap, FlagSpot, InputPacket,
    Lifetime, MatchReport, PROTOCOL_VERSION, PlayerEvent, PlayerSnap, ProjectileSnap, ScoreLine,
    ServerDatagram, ServerMessage, ServerTextKind, Snapshot, SnapshotPacket, TeamChoice,
    VoteProposal, VoteTally, Warmup, Welcome, Wire,
};
use sightline_query::{
    RconPacket, SERVERDATA_AUTH, SERVERDATA_EXECCOMMAND, SERVERDATA_RESPONSE_VALUE,
};
use sightline_sim::{Buttons, InputCmd, PlayerId, angle_of_steps, angle_steps};

fn encoded<T: Wire>(messages: &[T]) -> Vec<Vec<u8>> {
    messages
        .iter()
        .map(|m| m.encode().expect("seed messages fit their caps"))
        .collect()
}

fn cmd(seq: u32) -> InputCmd {
    InputCmd {
        buttons: Buttons::JUMP.with(Buttons::FIRE),
        ..sightline_sim::test_support::wire_cmd(seq)
    }
}

/// What every fuzzed input packet's acknowledged snapshot says was the newest command
/// simulated: the packet's base offset counts back from it.
pub const INPUT_ACKED: u32 = 298;

/// The command every fuzzed input packet is applied to when it names a base.
pub fn input_base(seq: u32) -> InputCmd {
    cmd(seq)
}

/// Command `seq`, turned a little and a frame later in view.
fn turned(seq: u32) -> InputCmd {
    InputCmd {
        yaw: angle_of_steps(angle_steps(0.31)),
        view_tick: 1202,
        view_frac: 6_912,
        ..cmd(seq)
    }
}

fn welcome(protocol_version: u32) -> ServerMessage {
    ServerMessage::Welcome(Welcome {
        protocol_version,
        tick_hz: 128,
        snapshot_hz: 64,
        server_name: "Sightline server".into(),
        map_name: "duel".into(),
        map_hash: 0xdead_beef_1234,
        your_id: Some(PlayerId(3)),
        resume: [7; 16],
    })
}

/// The snapshot every fuzzed delta is resolved against when it names its number: three
/// players and a rocket, mid-match.
pub fn baseline(seq: u32) -> Snapshot {
    snapshot(3, seq)
}

/// Snapshot `seq`, with `players` players (ids 0, 2, 4...).
fn snapshot(players: u8, seq: u32) -> Snapshot {
    Snapshot {
        seq,
        baseline: 0,
        server_tick: 1234,
        server_time_us: 9_640_625,
        ack_input_seq: 99,
        input_queue: 1,
        repeated_inputs: 2,
        touches: sightline_protocol::Touches {
            own_pushes: 1,
            pushes: 3,
            contacts: 2,
            contact_with: PlayerId(1),
            held: 4,
            owed: 2,
        },
        server_tick_us: 312,
        players: (0..players)
            .map(|i| PlayerSnap {
                id: PlayerId(i * 2),
                pos: [1024, 2048, -3072],
                vel: [-1792, 0, 128],
                yaw: 10_430,
                pitch: 1_043,
                flags: MoveFlags::ON_GROUND,
                health: 100,
                armor: 50,
                weapon: WeaponKind::ALL[i as usize % WeaponKind::ALL.len()],
                ammo: 30,
                spawn_count: i,
                intent: [127, 0],
                held: Buttons::default(),
                kit: 0b0100_0111,
            })
            .collect(),
        projectiles: (0..players.min(2) as u16)
            .map(|id| ProjectileSnap {
                id,
                kind: ProjectileKind::ALL[usize::from(id) % ProjectileKind::ALL.len()],
                owner: PlayerId(0),
                pos: [0.0, 1.5, -4.0],
                vel: [0.0, 0.0, -25.0],
            })
            .collect(),
        items: 0b1011,
        drops: (0..players.min(2) as u16)
            .map(|id| DropSnap {
                id: id + 1,
                weapon: WeaponKind::Plasma,
                pos: [3.0, 0.0, -7.5],
            })
            .collect(),
        // Capture the flag, its red flag carried and its blue one lying.
        flags: Some([
            FlagSpot::Carried(PlayerId(2)),
            FlagSpot::Dropped([4.0, 0.05, 2.5]),
        ]),
        events: Vec::new(),
        held: Vec::new(),
    }
}

/// Seeds for [`crate::wire::client_message`].
pub fn client_message() -> Vec<Vec<u8>> {
    encoded(&[
        ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: "alice".into(),
            resume: None,
            player_key: Some([0x5a; 16]),
        },
        ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: "Zoë «the quick»".into(),
            resume: None,
            player_key: None,
        },
        ClientMessage::Chat {
            text: "gg, well played".into(),
            team: false,
        },
        ClientMessage::Chat {
            text: "rockets at mid".into(),
            team: true,
        },
        ClientMessage::Rate {
            bytes_per_second: 25_000,
            snapshots_per_second: 128,
        },
        ClientMessage::Spectate {
            protocol_version: PROTOCOL_VERSION,
            name: "watcher".into(),
        },
        ClientMessage::Follow {
            target: Some(PlayerId(2)),
        },
        ClientMessage::Follow { target: None },
        ClientMessage::Rename {
            name: "alice the great".into(),
        },
        ClientMessage::JoinTeam {
            choice: TeamChoice::Auto,
        },
        ClientMessage::JoinTeam {
            choice: TeamChoice::Blue,
        },
        ClientMessage::JoinTeam {
            choice: TeamChoice::Spectator,
        },
        ClientMessage::CallVote {
            proposal: VoteProposal::Map("depot".into()),
        },
        ClientMessage::CallVote {
            proposal: VoteProposal::Kick(PlayerId(3)),
        },
        ClientMessage::CallVote {
            proposal: VoteProposal::Fraglimit(30),
        },
        ClientMessage::CallVote {
            proposal: VoteProposal::Mode(GameMode::TeamDeathmatch),
        },
        ClientMessage::Vote { yes: true },
        ClientMessage::Ready,
    ])
}

/// Seeds for [`crate::wire::server_message`]: one of each variant.
pub fn server_message() -> Vec<Vec<u8>> {
    let at = [1.0, -2.5, 300.0];
    encoded(&[
        welcome(PROTOCOL_VERSION),
        ServerMessage::Refused {
            reason: "server is full (16 players)".into(),
        },
        ServerMessage::PlayerJoined {
            id: PlayerId(4),
            name: "bot Ada".into(),
            bot: true,
        },
        ServerMessage::PlayerLeft {
            id: PlayerId(4),
            reason: "timed out".into(),
        },
        ServerMessage::Chat {
            from: PlayerId(1),
            text: "hello".into(),
            team: false,
        },
        ServerMessage::Chat {
            from: PlayerId(3),
            text: "cover me".into(),
            team: true,
        },
        ServerMessage::SpectatorChat {
            name: "watcher".into(),
            text: "nice shot".into(),
        },
        ServerMessage::PlayerRenamed {
            id: PlayerId(1),
            name: "alice (2)".into(),
        },
        ServerMessage::ServerText {
            kind: ServerTextKind::Notice,
            text: "alice joined the Blue team".into(),
        },
        ServerMessage::Vote(Some(VoteTally {
            question: "change the map to depot?".into(),
            yes: 3,
            no: 1,
            voters: 6,
            seconds_left: 24,
        })),
        ServerMessage::Vote(None),
        ServerMessage::Awards(vec![
            Award {
                kind: AwardKind::MostFrags,
                player: PlayerId(2),
                value: 20,
            },
            Award {
                kind: AwardKind::BestAccuracy,
                player: PlayerId(0),
                value: 437,
            },
        ]),
        ServerMessage::YourMatch(MatchReport {
            damage: 2450,
            best_streak: 4,
            weapons: vec![(WeaponKind::Rifle, 120, 41), (WeaponKind::Railgun, 9, 5)],
        }),
        ServerMessage::Scoreboard(vec![
            ScoreLine {
                id: PlayerId(0),
                ping_ms: Some(35),
                frags: 12,
                deaths: 3,
                team: Some(Team::Red),
                captures: 2,
            },
            ScoreLine {
                id: PlayerId(5),
                ping_ms: None,
                frags: -1,
                deaths: 300,
                team: Some(Team::Blue),
                captures: 0,
            },
        ]),
        ServerMessage::Lifetimes(vec![(
            PlayerId(0),
            Lifetime {
                kills: 1200,
                deaths: 800,
            },
        )]),
        ServerMessage::Fired {
            shooter: PlayerId(2),
            weapon: WeaponKind::Shotgun,
            aim: [-12_000, 5_000],
            tick: 4_000_000,
        },
        ServerMessage::Exploded {
            kind: ProjectileKind::PlasmaBall,
            at,
            tick: 12,
        },
        ServerMessage::Flag {
            team: Team::Blue,
            news: FlagNews::Captured,
            by: Some(PlayerId(0)),
        },
        ServerMessage::Flag {
            team: Team::Red,
            news: FlagNews::Returned,
            by: None,
        },
        ServerMessage::Match {
            mode: GameMode::CaptureTheFlag,
            fraglimit: 0,
            capturelimit: 8,
            time_left_s: 900,
            intermission: false,
            warmup: None,
        },
        ServerMessage::Match {
            mode: GameMode::TeamDeathmatch,
            fraglimit: 30,
            capturelimit: 0,
            time_left_s: 600,
            intermission: false,
            warmup: None,
        },
        ServerMessage::Match {
            mode: GameMode::Deathmatch,
            fraglimit: 20,
            capturelimit: 0,
            time_left_s: 600,
            intermission: false,
            warmup: Some(Warmup {
                countdown: false,
                seconds_left: 45,
                ready: 1,
                needed: 4,
            }),
        },
        ServerMessage::MatchEnded {
            winner: "Red team".into(),
        },
        ServerMessage::MapChange {
            map_name: "depot".into(),
            map_hash: 42,
        },
    ])
}

/// Seeds for [`crate::wire::client_datagram`].
pub fn client_datagram() -> Vec<Vec<u8>> {
    encoded(&[
        ClientDatagram::Input(InputPacket::new(
            5,
            INPUT_ACKED,
            Some(&input_base(296)),
            &[turned(300), turned(299), cmd(298), cmd(297)],
        )),
        ClientDatagram::Input(InputPacket::new(0, 0, None, &[cmd(1)])),
        ClientDatagram::Ping {
            client_time_us: 123_456_789,
        },
        ClientDatagram::Ack { snapshot: 77 },
    ])
}

/// The fuzz baseline four snapshots on: one player turned and ran, one left, one joined,
/// one was held back, an item was taken.
fn moved() -> Snapshot {
    let mut s = snapshot(4, 12);
    s.server_time_us += 62_500;
    s.players.remove(1);
    s.players[0].pos[0] += 300;
    s.players[0].yaw -= 700;
    s.players[1].health = 40;
    s.items = 0b1001;
    s.events = shown_events();
    // One held back for the client's rate.
    s.held = vec![s.players[2].id];
    s
}

/// One event of each kind, numbered from 40 with a gap, ticks a little before the
/// snapshot's.
fn shown_events() -> Vec<EventSnap> {
    let events = [
        PlayerEvent::Killed {
            victim: PlayerId(3),
            killer: PlayerId(2),
            weapon: WeaponKind::Rockets,
        },
        PlayerEvent::HitConfirm {
            target: PlayerId(3),
            damage: 27,
            head: true,
        },
        PlayerEvent::Damaged {
            attacker: PlayerId(2),
            damage: 300,
            from: [1.5, 0.0, -3.25],
        },
        PlayerEvent::ShotLate { excess_ms: 180 },
        PlayerEvent::ShotRefused,
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| EventSnap {
            seq: 40 + i as u32 * 2,
            tick: 1230 - i as u32 * 9,
            event,
        })
        .collect()
}

/// Seeds for [`crate::wire::server_datagram`].
pub fn server_datagram() -> Vec<Vec<u8>> {
    encoded(&[
        ServerDatagram::Snapshot(SnapshotPacket::encode(&snapshot(3, 7), None)),
        ServerDatagram::Snapshot(SnapshotPacket::encode(&snapshot(0, 7), None)),
        ServerDatagram::Snapshot(SnapshotPacket::encode(&moved(), Some(&baseline(8)))),
        ServerDatagram::Pong {
            client_time_us: 1,
            server_time_us: 2_000_000,
        },
        ServerDatagram::WeaponCheck(sightline_protocol::WeaponCheck {
            ack_input_seq: 4711,
            tick: 90_210,
            current: WeaponKind::Railgun,
            timers: [0.0, -0.0039, 1.25, 0.5],
            alt_held: true,
            owned: 0b1_1011,
            ammo: [(30, 90), (8, 24), (5, 15), (1, 9), (0, 0)],
        }),
    ])
}

/// Netcode payloads one side of a real renet connection sends the other for Sightline's
/// messages (a Hello or Welcome, input packets or snapshots, a message long enough to be
/// sliced, acknowledgements), as the transport seeds take them: each after its length
/// as two little-endian bytes. `from_client` picks the side.
fn renet_payloads(from_client: bool) -> Vec<Vec<u8>> {
    use sightline_net::{RenetClient, RenetServer};
    use sightline_protocol::{Channel, connection_config};
    use std::time::Duration;
    let mut server = RenetServer::new(connection_config());
    let mut client = RenetClient::new(connection_config());
    client.set_connected();
    server.add_connection(1);
    let mut seeds = Vec::new();
    for round in 0..4u32 {
        let hello = &client_message()[0];
        client.send_message(Channel::Reliable, hello.clone());
        for d in client_datagram() {
            client.send_message(Channel::Unreliable, d);
        }
        client.send_message(Channel::Unreliable, vec![round as u8; 1500]);
        for m in server_message().into_iter().take(3) {
            server.send_message(1, Channel::Reliable, m);
        }
        for d in server_datagram() {
            server.send_message(1, Channel::Unreliable, d);
        }
        server.send_message(1, Channel::Unreliable, vec![round as u8; 2500]);
        let up = client.get_packets_to_send();
        let down = server.get_packets_to_send(1).expect("client 1");
        up.iter()
            .for_each(|p| server.process_packet_from(p, 1).expect("client 1"));
        down.iter().for_each(|p| client.process_packet(p));
        seeds.push(framed(if from_client { &up } else { &down }));
        client.update(Duration::from_millis(60));
        server.update(Duration::from_millis(60));
    }
    seeds
}

/// Seeds for [`crate::transport::transport_from_client`].
pub fn transport_from_client() -> Vec<Vec<u8>> {
    renet_payloads(true)
}

/// Seeds for [`crate::transport::netcode_datagram`], each datagram after its length as
/// two little-endian bytes: netcode's kinds with sequence numbers of one to eight bytes
/// and the tag after them; a connection request's size; and the two headers renetcode
/// would panic on (a nine-byte sequence number, a tag cut short).
pub fn netcode_datagram() -> Vec<Vec<u8>> {
    let datagram = |prefix: u8, len: usize| {
        let mut d = vec![0x5a; len];
        d[0] = prefix;
        d
    };
    let kinds: Vec<Vec<u8>> = (1..=6u8)
        .flat_map(|kind| {
            [1u8, 2, 8].map(|seq| datagram(kind | (seq << 4), 1 + usize::from(seq) + 16 + 8))
        })
        .collect();
    vec![
        framed(&kinds),
        framed(&[datagram(0, 1078)]),
        framed(&[datagram(0x95, 18), datagram(0x85, 18)]),
    ]
}

/// Seeds for [`crate::transport::transport_from_server`].
pub fn transport_from_server() -> Vec<Vec<u8>> {
    renet_payloads(false)
}

/// Seeds for [`crate::wire::welcome_version`]: this version's Welcome, a later one's with
/// fields this version does not know, and a message that is not a Welcome.
pub fn welcome_version() -> Vec<Vec<u8>> {
    let mut future = welcome(PROTOCOL_VERSION + 1)
        .encode()
        .expect("a Welcome fits");
    future.extend_from_slice(&[3, b'n', b'e', b'w']);
    vec![
        welcome(PROTOCOL_VERSION).encode().expect("a Welcome fits"),
        future,
        ServerMessage::Chat {
            from: PlayerId(1),
            text: "hi".into(),
            team: false,
        }
        .encode()
        .expect("a chat line fits"),
    ]
}

/// Seeds for [`crate::map::map_file`]: a map using every part of the format, and the
/// least a map can be.
pub fn map_file() -> Vec<Vec<u8>> {
    let full = r#"(
    name: "tiny",
    sky: (0.5, 0.6, 0.9),
    sun: (direction: (0.3, -1.0, 0.2), color: (1.0, 0.95, 0.9), illuminance: 10000.0),
    ambient: (color: (1.0, 1.0, 1.0), brightness: 200.0),
    brushes: [
        Box(min: (-5.0, -1.0, -5.0), max: (5.0, 0.0, 5.0), color: (0.5, 0.5, 0.5)),
        Rotated(center: (0.0, 1.0, 3.0), half_extents: (1.0, 0.1, 2.0), pitch: 20.0, color: (0.3, 0.3, 0.3)),
        Rotated(center: (3.0, 1.0, 0.0), half_extents: (0.5, 1.0, 0.5), yaw: -45.0, pitch: 10.0, roll: 5.0, color: (0.2, 0.4, 0.2)),
    ],
    spawns: [(pos: (0.0, 0.0, 0.0), yaw: 90.0), (pos: (2.0, 0.0, -2.0))],
    items: [(kind: Health, pos: (1.0, 0.0, 1.0)), (kind: Armor, pos: (-1.0, 0.0, 1.0)), (kind: Ammo, pos: (0.0, 0.0, -3.0))],
    lights: [(pos: (0.0, 4.0, 0.0), color: (1.0, 0.9, 0.8), intensity: 1000.0, range: 10.0)],
)
"#;
    let least = "(name:\"m\",sky:(0,0,0),sun:(direction:(0,-1,0),color:(1,1,1),illuminance:1),\
                 ambient:(color:(1,1,1),brightness:1),brushes:[Box(min:(0,0,0),max:(1,1,1),\
                 color:(1,1,1))],spawns:[(pos:(0,1,0))])";
    vec![full.as_bytes().to_vec(), least.as_bytes().to_vec()]
}

const LINES: &[&str] = &[
    "cl_netgraph 2; cl_interp 0.05 // tuned",
    "name \"Big Al\"; echo \"hello; world\"",
    "bind space +jump; bind f5 \"echo hi; cl_netgraph 1\"; unbind q",
    "r_vsync off; r_msaa 8; version 2; connect 127.0.0.1:27015",
    "help cl_interp; cvarlist; cl_time 1; exec missing.cfg",
];

/// Seeds for [`crate::console::console_line`].
pub fn console_line() -> Vec<Vec<u8>> {
    LINES.iter().map(|l| l.as_bytes().to_vec()).collect()
}

/// Seeds for [`crate::console::console_exec`].
pub fn console_exec() -> Vec<Vec<u8>> {
    console_line()
}

/// Seeds for [`crate::console::plus_commands`]: program arguments separated by NUL bytes.
pub fn plus_commands() -> Vec<Vec<u8>> {
    let args: &[&[&str]] = &[
        &[
            "--name",
            "ann",
            "+cl_netgraph",
            "2",
            "+connect",
            "host:1",
            "--map",
            "duel",
        ],
        &[
            "+bind",
            "f5",
            "echo hi; cl_netgraph 1",
            "+name",
            "two words",
            "x",
        ],
        &["+", "+exec", "my config.cfg", "-v", "--", "+quit"],
    ];
    args.iter().map(|a| a.join("\0").into_bytes()).collect()
}

/// Seeds for [`crate::console::config_file`]: a config as the game writes it, and one
/// edited by hand.
pub fn config_file() -> Vec<Vec<u8>> {
    let mut shell = Shell::new();
    shell.run(
        "cl_netgraph 1; cl_interp 0.03; name \"a b\"; r_vsync 0; bind space +jump; \
         bind f5 \"echo hi; cl_netgraph 2\"; bind mouse1 +attack",
        &[],
    );
    let written = render_config(&shell.cvars, &shell.bindings);
    let by_hand = format!(
        "// my settings\r\nname \"Zoë\"\r\n\r\n  cl_timenudge -5 ; fov 90\r\nexec {CONFIG}.local\r\n\
         bind \"kp enter\" \"say gg\"\r\n"
    );
    vec![written.into_bytes(), by_hand.into_bytes()]
}

/// Bytes `packets` make on a stream.
fn rcon_bytes(packets: &[(i32, i32, &str)]) -> Vec<u8> {
    packets
        .iter()
        .flat_map(|&(id, kind, body)| {
            RconPacket {
                id,
                kind,
                body: body.as_bytes().to_vec(),
            }
            .encode()
        })
        .collect()
}

/// Seeds for [`crate::server::rcon_stream`]: a client authenticating then running a
/// command; one running two and sending the empty `RESPONSE_VALUE` clients use to find
/// the end of a split answer; and a stream cut in the middle of its second packet.
pub fn rcon_stream() -> Vec<Vec<u8>> {
    let login = (1, SERVERDATA_AUTH, "hunter2");
    let mut cut = rcon_bytes(&[login, (2, SERVERDATA_EXECCOMMAND, "status")]);
    cut.truncate(cut.len() - 5);
    vec![
        rcon_bytes(&[login, (2, SERVERDATA_EXECCOMMAND, "status")]),
        rcon_bytes(&[
            login,
            (7, SERVERDATA_EXECCOMMAND, "say \"hello; all\""),
            (
                8,
                SERVERDATA_EXECCOMMAND,
                "ban 203.0.113.0/24 60 \"cheating\"",
            ),
            (9, SERVERDATA_RESPONSE_VALUE, ""),
        ]),
        cut,
    ]
}

/// `datagrams` as one server-query input: each its control byte and bytes, after their
/// length as two little-endian bytes.
fn datagrams(datagrams: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut input = Vec::new();
    for (control, bytes) in datagrams {
        input.extend_from_slice(&(bytes.len() as u16 + 1).to_le_bytes());
        input.push(*control);
        input.extend_from_slice(bytes);
    }
    input
}

/// Seeds for [`crate::query::server_query`]: each A2S query challenged and then asked
/// again echoing the challenge (from an IPv4 client, its IPv4-mapped form, an IPv6
/// client), a stale challenge and an unknown type, the master's `getinfo` (without the
/// heartbeat's nonce ignored; with it answered twice, then not; ignored from another
/// port), a heartbeat sent to the server, and a
/// challenge echoed 35 s later (still valid) and 65 s later (expired).
pub fn server_query() -> Vec<Vec<u8>> {
    use crate::query::{ECHO, after_seconds};
    use sightline_query::master_protocol::{self, GAME_TAG, MASTER_PROTOCOL, MasterPacket};
    use sightline_query::{Request, encode_request};
    let (client, mapped, other_port, v6, master, master_mapped, master_host) =
        (0, 1, 2, 3, 4, 5, 6);
    let info = encode_request(Request::Info { challenge: None });
    let info_with = |c| encode_request(Request::Info { challenge: Some(c) });
    let players = |challenge| encode_request(Request::Players { challenge });
    let rules = |challenge| encode_request(Request::Rules { challenge });
    let getinfo = master_protocol::encode(&MasterPacket::GetInfo {
        challenge: 0x0bad_f00d,
        nonce: 0,
    });
    let heartbeat = master_protocol::encode(&MasterPacket::Heartbeat {
        game: GAME_TAG.into(),
        protocol: MASTER_PROTOCOL,
        nonce: 0x5eed_5eed,
    });
    vec![
        datagrams(&[(client, info.clone()), (ECHO | client, info_with(u32::MAX))]),
        datagrams(&[
            (mapped, players(u32::MAX)),
            (ECHO | client, players(u32::MAX)),
        ]),
        datagrams(&[(v6, rules(0)), (ECHO | v6, rules(0))]),
        datagrams(&[
            (other_port, info_with(0x1234_5678)),
            (other_port, b"\xFF\xFF\xFF\xFFW\xFF\xFF\xFF\xFF".to_vec()),
        ]),
        datagrams(&[
            (master, getinfo.clone()),
            (ECHO | master, getinfo.clone()),
            (ECHO | master_mapped, getinfo.clone()),
            (ECHO | master, getinfo.clone()),
            (ECHO | master_host, getinfo),
        ]),
        datagrams(&[(client, heartbeat)]),
        datagrams(&[
            (client, players(0)),
            (after_seconds(35) | ECHO | client, players(0)),
            (after_seconds(65) | ECHO | client, players(0)),
        ]),
    ]
}

/// `packets` as one input (of replies, datagrams or payloads): each after its length as
/// two little-endian bytes.
fn framed(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut input = Vec::new();
    for p in packets {
        input.extend_from_slice(&(p.len() as u16).to_le_bytes());
        input.extend_from_slice(p);
    }
    input
}

/// Seeds for [`crate::query::query_reply`]: a challenge, the info, players and rules
/// replies of a real server's state, a players reply split into packets (arriving out
/// of order, one twice), and a master's challenge then its server list in two packets.
pub fn query_reply() -> Vec<Vec<u8>> {
    use crate::query::FixedServer;
    use sightline_query::master_protocol::{self, MasterPacket, encode_server_list};
    use sightline_query::{
        PlayerInfo, encode_challenge, encode_info, encode_players, encode_rules, split,
    };
    let server = FixedServer::new();
    let crowd: Vec<PlayerInfo> = (0..64)
        .map(|i| PlayerInfo {
            name: format!(
                "player {i:02} with a rather long name, {}",
                "x".repeat(i % 20)
            ),
            score: i as i32 - 5,
            duration: i as f32 * 1.5,
        })
        .collect();
    let mut parts = split(encode_players(&crowd), 0x0102_0304);
    parts.reverse();
    parts.insert(1, parts[0].clone());
    let servers: Vec<std::net::SocketAddr> =
        (0..200u16)
            .map(|i| std::net::SocketAddr::from(([198, 51, 100, i as u8], 27015 + i)))
            .chain((0..8u16).map(|i| {
                std::net::SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, i + 1], 27015))
            }))
            .collect();
    let mut master = vec![master_protocol::encode(&MasterPacket::Challenge(
        0x0bad_f00d,
    ))];
    master.extend(encode_server_list(&servers));
    vec![
        framed(&[encode_challenge(0xdead_beef)]),
        framed(&[encode_info(&server.info)]),
        framed(&[encode_players(&server.players)]),
        framed(&[encode_rules(&server.rules)]),
        framed(&parts),
        framed(&master),
    ]
}

/// Seeds for [`crate::server::ban_file`]: a file as the server writes it (a /24, an
/// IPv6 /48, one address for ever and one until a time), one edited by hand
/// (comments, blank lines, CRLF, bare words where quotes are optional), and one with
/// escapes in names and reasons, lines that do not read and the lines kept unread.
pub fn ban_file() -> Vec<Vec<u8>> {
    let written = "// Sightline bans: ADDRESS[/PREFIX] UNTIL(Unix seconds or never) \"NAME\" \
                   \"REASON\"\n// Written by the server's ban and unban commands.\n\
                   203.0.113.0/24 never \"\" \"a whole network of cheats\"\n\
                   2001:db8:1234::/48 1767225600 \"Zoë\" \"aimbot\"\n\
                   198.51.100.9 never \"Griefer 2\" \"\"\n\
                   ::1 4102444800 \"local\" \"testing; ignore\"\n";
    let by_hand = "// bans\r\n\r\n  10.0.0.1   never griefer spam // too much\r\n\
                   192.0.2.0/28 1700000000 \"two words\" \"a // not a comment\"\r\n\
                   ::ffff:192.0.2.77 never \"\" \"\"";
    let escapes_and_bad_lines: &[u8] =
        b"198.51.100.1 never \"x\\\"\" \"said \\\"hi\\\" \\\\ \\u{a}\"\n\
        10.0.0.2 soon \"\" \"\"\r\n10.0.0.3 never \"\xff\" \"\"\n10.0.0.4 never \"a\" \"b\"; x\n\
        // Lines the server could not read (its log says why), kept as they were:\n\
        10.0.0.5 never\n";
    vec![
        written.as_bytes().to_vec(),
        by_hand.as_bytes().to_vec(),
        escapes_and_bad_lines.to_vec(),
    ]
}

/// Seeds for [`crate::server::demo_file`]: a short demo of every record (a keyframe of
/// two players, their commands, one held, a checksum, a join, a leave, the host's order
/// and limits, the end), the same cut off inside a record, and one of another version.
pub fn demo_file() -> Vec<Vec<u8>> {
    use sightline_combat::{Arsenal, Pushes, Score, SpawnCount, Vitals};
    use sightline_movement::{Contacts, PlayerState, Solid};
    use sightline_server::demo::state::{Keyframe, PlayerRecord, Sums};
    use sightline_server::demo::{
        CommandChain, DemoEncoder, DemoHeader, DemoLimits, DemoOrder, Record, Step,
    };
    let place = |id: u8| {
        let mut state = PlayerState::default();
        (state.pos.x, state.pos.z, state.yaw) = (f32::from(id), -3.5, 1.25);
        state
    };
    let player = |id: u8, name: &str, bot: bool| PlayerRecord {
        id: PlayerId(id),
        name: name.into(),
        bot,
        team: None,
        state: place(id),
        vitals: Vitals::spawned(),
        arsenal: Arsenal::spawned(),
        score: Score::default(),
        spawns: SpawnCount(1),
        pushes: Pushes::default(),
        contacts: Contacts::default(),
        solid: Solid(true),
    };
    let header = DemoHeader {
        map_name: "duel".into(),
        map_hash: 0x1234_5678_9abc_def0,
        tick_hz: 128,
        snapshot_hz: 64,
        server_name: "Sightline server".into(),
        mode: GameMode::Deathmatch,
        fraglimit: 20,
        capturelimit: 8,
        timelimit: 600.0,
        rotation: vec!["duel".into()],
        friendly_fire: FriendlyFire::Reflect,
        overtime: true,
        warmup: 20.0,
        start_tick: 1000,
        recorded_at: 1_796_000_000,
    };
    let keyframe = Keyframe::of_players(
        1000,
        vec![player(0, "Bot 1", true), player(2, "Zoë", false)],
    );
    let mut chain = CommandChain::default();
    let mut demo = DemoEncoder::start(&header).expect("encodes");
    let sums = Sums::of(&keyframe);
    let mut records = vec![
        Record::Keyframe(Box::new(keyframe)),
        Record::Checksum(Box::new(sums)),
    ];
    for seq in 1..6u32 {
        let mut bot = turned(seq);
        bot.view_tick = 0;
        bot.view_frac = 0;
        // Held a tick, then repaying it with two commands in the next.
        let person = match seq {
            3 => Step::Held,
            4 => Step::Twice {
                cmd: cmd(3),
                honest_view: true,
                then: cmd(4),
                then_honest: false,
            },
            _ => Step::Ran {
                cmd: cmd(seq),
                honest_view: true,
            },
        };
        let steps = [
            (
                PlayerId(0),
                Step::Ran {
                    cmd: bot,
                    honest_view: false,
                },
            ),
            (PlayerId(2), person),
        ];
        records.push(Record::Tick(chain.write(&steps)));
    }
    records.extend([
        Record::Player(Box::new(player(5, "late", false))),
        Record::Order(DemoOrder::Restart),
        Record::Limits(DemoLimits {
            fraglimit: 5,
            capturelimit: 2,
            timelimit: 120.0,
            friendly_fire: FriendlyFire::On,
            overtime: false,
            warmup: 0.0,
        }),
        Record::Left(PlayerId(0)),
        Record::End("stopped by the host".into()),
    ]);
    for record in &records {
        demo.record(record).expect("encodes");
    }
    let whole = demo.take();
    let cut = whole[..whole.len() - 9].to_vec();
    let mut other_version = whole.clone();
    other_version[16..20].copy_from_slice(&99u32.to_le_bytes());
    vec![whole, cut, other_version]
}

/// Seeds for [`crate::server::metrics_request`]: Prometheus's scrape, a health check, the
/// leaderboard with a query string, a HEAD, and a head cut short.
pub fn metrics_request() -> Vec<Vec<u8>> {
    [
        "GET /metrics HTTP/1.1\r\nHost: 10.0.0.5:9100\r\nUser-Agent: Prometheus/2.53.0\r\nAccept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
        "GET /health HTTP/1.0\r\n\r\n",
        "GET /leaderboard?limit=10 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: loc",
    ]
    .map(|s| s.as_bytes().to_vec())
    .to_vec()
}

/// Seeds for [`crate::token::token_exchange`]: an honest exchange with the right
/// password (it gets a token); one with a public server, each message in two halves and
/// a client reading 40 bytes a poll; a wrong password; a finish whose sealed request was
/// changed, then a hello with a changed key; another protocol on the port, a banned
/// host, another exchange version and a request left to stall past its deadlines; an old
/// protocol's request, then a host banned while its exchange ran; and one host asking
/// more often than its rate allows (with hellos of another version, which cost no key
/// work).
pub fn token_exchange() -> Vec<Vec<u8>> {
    use crate::token::{BAN, CLOSE, FINISH, FLIP, HELLO, OPEN, RAW, SLOW, SPLIT, after_tenths};
    use sightline_protocol::{TOKEN_EXCHANGE_MAGIC, TokenRequest};
    let request = |protocol_version| {
        TokenRequest { protocol_version }
            .encode()
            .expect("a token request encodes")
    };
    let ok = request(PROTOCOL_VERSION);
    let private = |ops: &[(u8, Vec<u8>)]| [vec![0], datagrams(ops)].concat();
    let public = |ops: &[(u8, Vec<u8>)]| [vec![1], datagrams(ops)].concat();
    let right = b"hunter2".to_vec();
    let mut other_version = TOKEN_EXCHANGE_MAGIC.to_vec();
    other_version.push(9);
    other_version.extend_from_slice(&[0x5a; 65]);
    let rcon_login = rcon_bytes(&[(1, SERVERDATA_AUTH, "hunter2")]);
    // Hellos of another version cost the service no key work, but count against the
    // host's rate before their version is read.
    let mut hammer = Vec::new();
    for _ in 0..9 {
        hammer.push((OPEN, vec![1]));
        hammer.push((RAW, other_version.clone()));
    }
    vec![
        private(&[(HELLO, right.clone()), (FINISH, ok.clone())]),
        public(&[
            (SLOW, vec![40]),
            (HELLO | SPLIT, Vec::new()),
            (FINISH | SPLIT, ok.clone()),
            (SLOW, Vec::new()),
        ]),
        private(&[(HELLO, b"hunter3".to_vec()), (FINISH, ok.clone())]),
        private(&[
            (HELLO, right.clone()),
            (FLIP, vec![40, 0, 0x80]),
            (FINISH, ok.clone()),
            (OPEN, vec![2]),
            (FLIP, vec![10, 0, 4]),
            (HELLO, right.clone()),
            (FINISH, ok.clone()),
        ]),
        private(&[
            (RAW, rcon_login),
            (OPEN, vec![4]),
            (HELLO, right.clone()),
            (OPEN, vec![3]),
            (RAW, other_version.clone()),
            (OPEN, vec![0]),
            (RAW, TOKEN_EXCHANGE_MAGIC.to_vec()),
            (after_tenths(15) | SLOW, Vec::new()),
            (after_tenths(10) | CLOSE, Vec::new()),
        ]),
        private(&[
            (HELLO, right.clone()),
            (FINISH, request(PROTOCOL_VERSION - 1)),
            (OPEN, vec![1]),
            (HELLO, right.clone()),
            (BAN, [&[1u8][..], b"caught mid-exchange"].concat()),
            (FINISH, ok.clone()),
        ]),
        private(&hammer),
    ]
}

/// Seeds for [`crate::master::master_packets`] (sources by their index in
/// [`crate::master::MASTER_SOURCES`]): a server listed and a browser's list, for its
/// protocol and another; seven servers announcing, over the per-address and overall
/// limits; a heartbeat IPv4-mapped answered from the plain address; a server refreshed
/// while another expires; a challenge echoed too late, and one still valid; packets
/// only a master sends, another game's and malformed ones; and a browser asking for the
/// list faster than its share.
pub fn master_packets() -> Vec<Vec<u8>> {
    use crate::query::{ECHO, after_seconds};
    use sightline_query::master_protocol::{GAME_TAG, MASTER_PROTOCOL, MasterPacket, encode};
    let heartbeat = encode(&MasterPacket::Heartbeat {
        game: GAME_TAG.into(),
        protocol: MASTER_PROTOCOL,
        nonce: 0x5eed_0001,
    });
    let info = |protocol| {
        encode(&MasterPacket::InfoResponse {
            challenge: 0x0bad_f00d,
            protocol,
            game: GAME_TAG.into(),
        })
    };
    let get = |protocol| {
        encode(&MasterPacket::GetServers {
            protocol,
            challenge: None,
        })
    };
    let p = PROTOCOL_VERSION;
    let announce = |source: u8| [(source, heartbeat.clone()), (ECHO | source, info(p))];
    let list = |source: u8, protocol| [(source, get(protocol)), (ECHO | source, get(protocol))];
    let many: Vec<(u8, Vec<u8>)> = [0, 2, 3, 4, 5, 6, 7]
        .into_iter()
        .flat_map(announce)
        .chain(list(1, p))
        .collect();
    let mut flood = list(5, p).to_vec();
    flood.extend((0..6).map(|_| (ECHO | 5, get(p))));
    vec![
        datagrams(&[announce(0), list(5, p), list(4, p + 1)].concat()),
        datagrams(&many),
        datagrams(&[
            (1, heartbeat.clone()),
            (ECHO, info(p)),
            (7, get(p)),
            (ECHO | 7, get(p)),
        ]),
        datagrams(
            &[
                &announce(0)[..],
                &announce(4),
                &[
                    (after_seconds(60) | 4, heartbeat.clone()),
                    (ECHO | 4, info(p)),
                ],
                &[(after_seconds(65) | 6, get(p)), (ECHO | 6, get(p))],
            ]
            .concat(),
        ),
        datagrams(&[
            (0, heartbeat.clone()),
            (after_seconds(25) | ECHO, info(p)),
            (7, get(p)),
            (after_seconds(5) | ECHO | 7, get(p)),
        ]),
        datagrams(&[
            (
                0,
                encode(&MasterPacket::GetInfo {
                    challenge: 1,
                    nonce: 2,
                }),
            ),
            (2, encode(&MasterPacket::Challenge(7))),
            (3, b"\xFF\xFF\xFF\xFFgetserversResponse\\EOT".to_vec()),
            (
                4,
                encode(&MasterPacket::Heartbeat {
                    game: "othergame".into(),
                    protocol: MASTER_PROTOCOL,
                    nonce: 3,
                }),
            ),
            (5, b"\xFF\xFF\xFF\xFFheartbeat sightline".to_vec()),
            (6, b"\xFF\xFF\xFF\xFFgetservers 22".to_vec()),
            (7, b"not even connectionless".to_vec()),
        ]),
        datagrams(&flood),
    ]
}

/// Seeds for [`crate::rcon::rcon_session`] (slot and peer by number): an admin logging
/// in and running commands, one answered late and one at length, with end-of-answer
/// probes; a wrong password, a command before the password and a packet of an unknown
/// kind; commands held while the console does not run; seventeen commands at once and
/// then an oversized packet; stalled connections filling the pool while an admin logs
/// in; wrong passwords locking a host out; a client reading slowly a long answer, then
/// closing; and a partial packet left past the deadline.
pub fn rcon_session() -> Vec<Vec<u8>> {
    use crate::rcon::{CLOSE, CONNECT, HOLD, SEND, SLOW, after_halves, slot};
    let login = |id| rcon_bytes(&[(id, SERVERDATA_AUTH, "hunter2")]);
    let exec = |id, line| rcon_bytes(&[(id, SERVERDATA_EXECCOMMAND, line)]);
    let probe = |id| rcon_bytes(&[(id, SERVERDATA_RESPONSE_VALUE, "")]);
    let seventeen: Vec<u8> = (0..17).flat_map(|i| exec(10 + i, "status")).collect();
    let mut oversized = 4097i32.to_le_bytes().to_vec();
    oversized.extend_from_slice(&[0; 12]);
    // Eight stallers fill the unauthenticated pool (a /24 its share of four, an IPv6
    // /64 and a stranger two each), each sending a byte so the first-bytes deadline
    // spares them; half a second later a host of a fifth network takes the place of
    // the busiest network's oldest, and logs in; one more from the busy /24 is refused.
    let mut stallers: Vec<(u8, Vec<u8>)> = [0u8, 1, 2, 3, 4, 5, 6, 6]
        .into_iter()
        .flat_map(|peer| [(CONNECT, vec![peer]), (SEND, vec![0x0e])])
        .collect();
    stallers.extend([
        (after_halves(1) | CONNECT | slot(3), vec![7]),
        (SEND | slot(3), [login(1), exec(2, "status")].concat()),
        (CONNECT | slot(1), vec![2]),
        (after_halves(3) | SEND | slot(3), exec(3, "status")),
    ]);
    // Five wrong passwords from one host lock it out: the sixth, right, is refused.
    let guesses: Vec<(u8, Vec<u8>)> = (0..6)
        .flat_map(|i| {
            let password = if i < 5 { "hunter3" } else { "hunter2" };
            [
                (CONNECT | slot(0), vec![6]),
                (
                    SEND | slot(0),
                    rcon_bytes(&[(1, SERVERDATA_AUTH, password)]),
                ),
            ]
        })
        .collect();
    let mut partial = login(1);
    partial.truncate(7);
    vec![
        datagrams(&[
            (CONNECT | slot(0), vec![0]),
            (
                SEND | slot(0),
                [login(1), exec(2, "status"), probe(3)].concat(),
            ),
            (
                SEND | slot(0),
                [exec(4, "top 10"), exec(5, "big 10"), probe(6)].concat(),
            ),
        ]),
        datagrams(&[
            (CONNECT | slot(0), vec![2]),
            (
                SEND | slot(0),
                [
                    rcon_bytes(&[(1, SERVERDATA_AUTH, "hunter3")]),
                    exec(2, "status"),
                ]
                .concat(),
            ),
            (CONNECT | slot(1), vec![4]),
            (SEND | slot(1), exec(1, "status")),
            (CONNECT | slot(2), [&[6u8][..], &login(1)].concat()),
            (SEND | slot(2), rcon_bytes(&[(2, 9, "")])),
        ]),
        datagrams(&[
            (CONNECT | slot(0), vec![0]),
            (SEND | slot(0), login(1)),
            (HOLD | SEND | slot(0), exec(2, "status")),
            (HOLD | SEND | slot(0), exec(3, "top")),
            (HOLD | SEND | slot(0), probe(4)),
            (SEND | slot(0), exec(5, "")),
        ]),
        datagrams(&[
            (CONNECT | slot(0), vec![5]),
            (SEND | slot(0), login(1)),
            (HOLD | SEND | slot(0), seventeen),
            (SEND | slot(0), oversized),
        ]),
        datagrams(&stallers),
        datagrams(&guesses),
        datagrams(&[
            (CONNECT | slot(2), vec![3]),
            (SEND | slot(2), login(1)),
            (SLOW | slot(2), vec![100]),
            (
                SEND | slot(2),
                [exec(2, "big 48"), exec(3, "big 48"), probe(4)].concat(),
            ),
            (SEND | slot(2), Vec::new()),
            (CLOSE | slot(2), Vec::new()),
        ]),
        datagrams(&[
            (CONNECT | slot(1), vec![6]),
            (SEND | slot(1), partial),
            (after_halves(5) | SEND | slot(1), Vec::new()),
            (CONNECT | slot(0), [&[0u8][..], &login(1)].concat()),
            (SEND | slot(0), exec(2, "status")),
        ]),
    ]
}

/// Seeds for [`crate::relay::relay_link`] (sources by their index in
/// [`crate::relay::RELAY_SOURCES`]): a registration through its cookie to an open game, a
/// player's datagram delivered, a stream opened, keepalives answered, the probe arriving
/// from the relay's other port; the relay forgetting the game and opening it again; a
/// relay that refuses; and messages from the wrong source or of the wrong direction.
pub fn relay_link() -> Vec<Vec<u8>> {
    use sightline_relay::{HostMessage, Refusal, RelayMessage, Session, probe_datagram};
    let session = Session {
        id: 7,
        secret: [9; 16],
    };
    let player: std::net::SocketAddr = "198.51.100.20:50000".parse().expect("an address");
    let cookie = RelayMessage::Cookie { cookie: [3; 16] }.encode();
    let allocated = |id, port| {
        RelayMessage::Allocated {
            session: Session { id, ..session },
            port,
            observed: "198.51.100.4:40123".parse().expect("an address"),
        }
        .encode()
    };
    let deliver = RelayMessage::Deliver {
        id: 7,
        from: player,
        payload: b"netcode",
    }
    .encode();
    let open = RelayMessage::Open {
        id: 7,
        stream: 1,
        from: player,
    }
    .encode();
    let alive = RelayMessage::Alive { id: 7 }.encode();
    let forgot = RelayMessage::Refused {
        reason: Refusal::UnknownSession,
    }
    .encode();
    let full = RelayMessage::Refused {
        reason: Refusal::Full,
    }
    .encode();
    let register = HostMessage::Register { cookie: [3; 16] }.encode();
    let later = |seconds: u8| seconds << 4;
    vec![
        datagrams(&[
            (0, cookie.clone()),
            (0, allocated(7, 28000)),
            (0, deliver.clone()),
            (0, open),
            (later(5), alive.clone()),
            (1, probe_datagram(1).to_vec()),
            (2, b"direct datagram".to_vec()),
        ]),
        datagrams(&[
            (0, cookie.clone()),
            (0, allocated(7, 28000)),
            (0, forgot),
            (0, allocated(8, 28001)),
            (later(15), alive),
            (later(15), deliver.clone()),
        ]),
        datagrams(&[(0, full), (later(15), cookie), (0, register)]),
        datagrams(&[(2, deliver.clone()), (3, allocated(7, 28000)), (0, deliver)]),
    ]
}
