//! Property tests for the wire format: every valid message of every type and variant
//! encodes within its cap and decodes to itself; arbitrary bytes, and valid encodings
//! with bytes flipped, cut off or added, either decode to a valid message that encodes
//! back or are refused, and never panic.
//!
//! The strategies build only valid messages, following each type's `validate` rules; a
//! new variant or rule that they miss fails [`every_variant_is_generated`] or the
//! round-trip property, which is the cue to extend them here.

use proptest::prelude::*;
use proptest::sample::Index;
use sightline_combat::{FlagNews, GameMode, ProjectileKind, Team, WeaponKind};
use sightline_movement::MoveFlags;
use sightline_protocol::{
    Award, AwardKind, ClientDatagram, ClientMessage, DecodeError, DropSnap, EventSnap, FlagSpot,
    InputPacket, Lifetime, MAX_AWARDS, MAX_BASELINE_AGE, MAX_CHAT_LEN, MAX_NAME_LEN,
    MAX_PACKET_CMDS, MAX_RCON_COMMAND_LEN, MAX_RCON_PASSWORD_LEN, MAX_SERVER_NAME_LEN,
    MAX_SNAPSHOT_DROPS, MAX_SNAPSHOT_EVENTS, MAX_SNAPSHOT_PLAYERS, MAX_SNAPSHOT_PROJECTILES,
    MatchReport, PlayerEvent, PlayerSnap, ProjectileSnap, ScoreLine, ServerDatagram, ServerMessage,
    ServerTextKind, Snapshot, SnapshotPacket, TeamChoice, Touches, VoteProposal, VoteTally, Warmup,
    Welcome, Wire, clean_text,
    delta::{MAX_PROJECTILE_POS_STEPS, MAX_PROJECTILE_VEL_STEPS},
};
use sightline_sim::{
    Buttons, InputCmd, MAX_PITCH_STEPS, MAX_TICK_HZ, MIN_TICK_HZ, PlayerId, VIEW_FRAC_STEP,
    WEAPON_SLOTS, angle_of_steps,
};
use std::fmt::Debug;

/// Few enough cases that each property takes well under a second in the dev profile;
/// `PROPTEST_CASES` raises it for a longer run by hand.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(256),
        // Integration tests have no lib.rs for proptest to store regressions beside;
        // a failure prints its minimal case instead.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---- Strategies: values ----

/// Any finite f32 of either sign: normal, subnormal or zero.
fn finite() -> impl Strategy<Value = f32> {
    use proptest::num::f32::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO
}

fn vec3() -> impl Strategy<Value = [f32; 3]> {
    prop::array::uniform3(finite())
}

/// Numbers spread over every varint width (1, 3 and 5 bytes), not only the largest.
fn u32_any() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..=250, 251u32..=0xffff, any::<u32>()]
}

fn u64_any() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..=250, 251u64..=0xffff_ffff, any::<u64>()]
}

fn u16_any() -> impl Strategy<Value = u16> {
    prop_oneof![0u16..=250, any::<u16>()]
}

fn player_id() -> impl Strategy<Value = PlayerId> {
    any::<u8>().prop_map(PlayerId)
}

/// A character the text checks accept: one that cleaning keeps (so neither a control nor
/// an invisible character), or a plain space. Others become '?' rather than being
/// rejected, which would make long texts rare.
fn shown_char() -> impl Strategy<Value = char> {
    any::<char>().prop_map(|c| {
        if c == ' ' || !clean_text(c.encode_utf8(&mut [0; 4]), 8).is_empty() {
            c
        } else {
            '?'
        }
    })
}

/// Text of at most `max` bytes from `chars`.
fn text_of(chars: impl Strategy<Value = char>, max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(chars, 0..=max).prop_map(move |chars| {
        let mut out = String::new();
        for c in chars {
            if out.len() + c.len_utf8() > max {
                break;
            }
            out.push(c);
        }
        out
    })
}

/// Names, reasons, chat from the server: shown characters only.
fn shown_text(max: usize) -> impl Strategy<Value = String> {
    text_of(shown_char(), max)
}

/// A map name: a plain identifier, as map files must have.
fn map_name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_][A-Za-z0-9_-]{0,31}"
}

/// Ids in strictly increasing order, `n` of them: a start and gaps that cannot pass 255
/// for up to 64 ids.
fn increasing_ids(n: usize) -> impl Strategy<Value = Vec<PlayerId>> {
    (0u8..=60, prop::collection::vec(0u8..=2, n)).prop_map(|(start, gaps)| {
        let mut id = start;
        gaps.iter()
            .enumerate()
            .map(|(i, gap)| {
                if i > 0 {
                    id += 1 + gap;
                }
                PlayerId(id)
            })
            .collect()
    })
}

// ---- Strategies: messages ----

fn input_cmd() -> impl Strategy<Value = InputCmd> {
    (
        u32_any(),
        (finite(), finite(), any::<i16>(), any::<i16>()),
        any::<u8>(),
        0..=WEAPON_SLOTS,
        u32_any(),
        any::<u8>(),
    )
        .prop_map(
            |(
                client_tick,
                (forward, right, yaw, pitch),
                buttons,
                weapon_slot,
                view_tick,
                view_frac,
            )| {
                InputCmd {
                    seq: 0,
                    client_tick,
                    forward,
                    right,
                    // Commands carry angles on the grid.
                    yaw: angle_of_steps(yaw),
                    pitch: angle_of_steps(pitch),
                    buttons: Buttons(buttons),
                    weapon_slot,
                    view_tick,
                    // Sanitized: the fraction on its steps.
                    view_frac: u16::from(view_frac) * VIEW_FRAC_STEP,
                }
            },
        )
}

/// 1 to [`MAX_PACKET_CMDS`] commands, newest (highest non-zero sequence) first, and the
/// base they are written against (below all of them), if any.
fn input_cmds() -> impl Strategy<Value = (Option<InputCmd>, Vec<InputCmd>)> {
    (
        prop::collection::btree_set(1u32.., 2..=MAX_PACKET_CMDS + 1),
        prop::collection::vec(input_cmd(), MAX_PACKET_CMDS + 1),
        any::<bool>(),
    )
        .prop_map(|(seqs, cmds, based)| {
            let mut cmds: Vec<InputCmd> = seqs
                .into_iter()
                .rev()
                .zip(cmds)
                .map(|(seq, cmd)| InputCmd { seq, ..cmd })
                .collect();
            let base = cmds.pop().expect("two or more");
            // Without a base, the lowest number is a command too, while there is room.
            if !based && cmds.len() < MAX_PACKET_CMDS {
                cmds.push(base);
            }
            (based.then_some(base), cmds)
        })
}

fn input_packet() -> impl Strategy<Value = InputPacket> {
    (u32_any(), u32_any(), input_cmds()).prop_map(|(ack_snapshot, acked, (base, cmds))| {
        InputPacket::new(ack_snapshot, acked, base.as_ref(), &cmds)
    })
}

fn weapon() -> impl Strategy<Value = WeaponKind> {
    prop::sample::select(WeaponKind::ALL.to_vec())
}

fn player_snap() -> impl Strategy<Value = PlayerSnap> {
    // On the grid: positions within +-2^23 steps, pitch within its limit.
    let coord = -(1i32 << 23)..=(1i32 << 23);
    (
        [coord.clone(), coord.clone(), coord],
        any::<[i16; 3]>(),
        any::<i16>(),
        -16_000i16..=16_000,
        0..=MoveFlags::ALL,
        any::<[u8; 2]>(),
        weapon(),
        u16_any(),
        (any::<u8>(), any::<[i8; 2]>(), 0u8..4, any::<u8>()),
    )
        .prop_map(
            |(
                pos,
                vel,
                yaw,
                pitch,
                flags,
                [health, armor],
                weapon,
                ammo,
                (spawn_count, intent, held, kit),
            )| {
                PlayerSnap {
                    id: PlayerId(0),
                    pos,
                    vel,
                    yaw,
                    pitch,
                    flags,
                    health,
                    armor,
                    weapon,
                    ammo,
                    spawn_count,
                    intent,
                    // Jump and crouch are bits 0 and 1.
                    held: Buttons(held),
                    kit,
                }
            },
        )
}

/// A projectile anywhere on the wire's grid (snapshots carry them on it), its
/// coordinates over every width from none to the grid's edge.
fn projectile_snap() -> impl Strategy<Value = ProjectileSnap> {
    let steps = |edge: i64| {
        let edge = edge as i32;
        prop_oneof![Just(0), -100..=100, -edge..=edge, Just(edge), Just(-edge)]
    };
    (
        u16_any(),
        projectile_kind(),
        player_id(),
        prop::array::uniform3(steps(MAX_PROJECTILE_POS_STEPS)),
        prop::array::uniform3(steps(MAX_PROJECTILE_VEL_STEPS)),
    )
        .prop_map(|(id, kind, owner, pos, vel)| {
            ProjectileSnap::from_grid(id, owner, kind, pos, vel)
        })
}

fn projectile_kind() -> impl Strategy<Value = ProjectileKind> {
    prop::sample::select(ProjectileKind::ALL.to_vec())
}

/// Up to [`MAX_SNAPSHOT_PLAYERS`] players in increasing id order, up to
/// [`MAX_SNAPSHOT_PROJECTILES`] rockets; full ones included, so the cap is tested.
fn snapshot() -> impl Strategy<Value = Snapshot> {
    let players = prop_oneof![
        0..=4usize,
        Just(MAX_SNAPSHOT_PLAYERS),
        0..=MAX_SNAPSHOT_PLAYERS
    ]
    .prop_flat_map(|n| (prop::collection::vec(player_snap(), n), increasing_ids(n)))
    .prop_map(|(players, ids)| {
        players
            .into_iter()
            .zip(ids)
            .map(|(p, id)| PlayerSnap { id, ..p })
            .collect::<Vec<_>>()
    });
    let projectiles = prop_oneof![
        prop::collection::vec(projectile_snap(), 0..=2),
        prop::collection::vec(projectile_snap(), MAX_SNAPSHOT_PROJECTILES),
    ];
    (
        (1u32.., u32_any(), u64_any(), u32_any()),
        (any::<u8>(), u32_any(), any::<[u8; 6]>(), u32_any()),
        players,
        projectiles,
        (any::<u64>(), flags()),
        drops(),
        events(),
    )
        .prop_map(
            |(
                (seq, server_tick, server_time_us, ack_input_seq),
                (
                    input_queue,
                    repeated_inputs,
                    [own_pushes, pushes, contacts, with, held, owed],
                    server_tick_us,
                ),
                players,
                projectiles,
                (items, flags),
                drops,
                events,
            )| Snapshot {
                seq,
                baseline: 0,
                server_tick,
                server_time_us,
                ack_input_seq,
                input_queue,
                repeated_inputs,
                touches: Touches {
                    own_pushes,
                    pushes,
                    contacts,
                    contact_with: PlayerId(with),
                    held,
                    owed,
                },
                server_tick_us,
                players,
                projectiles,
                items,
                drops,
                flags,
                events,
                // Players are held only against a baseline (see the delta tests).
                held: Vec::new(),
            },
        )
}

/// An event of any kind, with any fields a server could send.
fn player_event() -> impl Strategy<Value = PlayerEvent> {
    prop_oneof![
        (player_id(), player_id(), weapon()).prop_map(|(victim, killer, weapon)| {
            PlayerEvent::Killed {
                victim,
                killer,
                weapon,
            }
        }),
        (player_id(), u16_any(), any::<bool>()).prop_map(|(target, damage, head)| {
            PlayerEvent::HitConfirm {
                target,
                damage,
                head,
            }
        }),
        (player_id(), u16_any(), vec3()).prop_map(|(attacker, damage, from)| {
            PlayerEvent::Damaged {
                attacker,
                damage,
                from,
            }
        }),
        u16_any().prop_map(|excess_ms| PlayerEvent::ShotLate { excess_ms }),
        Just(PlayerEvent::ShotRefused),
    ]
}

/// Events numbered in increasing order from any start, with any ticks: none, a few, or
/// as many as a snapshot holds.
fn events() -> impl Strategy<Value = Vec<EventSnap>> {
    let event = || (1u32..=1_000, u32_any(), player_event());
    prop_oneof![
        prop::collection::vec(event(), 0..=2),
        prop::collection::vec(event(), MAX_SNAPSHOT_EVENTS),
    ]
    .prop_map(|events| {
        let mut seq = 0u32;
        events
            .into_iter()
            .map(|(gap, tick, event)| {
                seq += gap;
                EventSnap { seq, tick, event }
            })
            .collect()
    })
}

/// Dropped weapons in increasing id order: none, a few, or as many as a snapshot holds.
/// The flags' places, when capture the flag is played: home, carried by anyone, or
/// lying anywhere.
fn flags() -> impl Strategy<Value = Option<[FlagSpot; 2]>> {
    let spot = || {
        prop_oneof![
            Just(FlagSpot::Home),
            player_id().prop_map(FlagSpot::Carried),
            vec3().prop_map(FlagSpot::Dropped),
        ]
    };
    prop::option::of((spot(), spot()).prop_map(|(red, blue)| [red, blue])).prop_filter(
        "one player carries one flag",
        |f| !matches!(f, Some([FlagSpot::Carried(a), FlagSpot::Carried(b)]) if a == b),
    )
}

fn drops() -> impl Strategy<Value = Vec<DropSnap>> {
    let drop = || (weapon(), vec3()).prop_map(|(weapon, pos)| DropSnap { id: 0, weapon, pos });
    prop_oneof![
        prop::collection::vec(drop(), 0..=2),
        prop::collection::vec(drop(), MAX_SNAPSHOT_DROPS),
    ]
    .prop_map(|mut drops| {
        for (i, d) in drops.iter_mut().enumerate() {
            d.id = i as u16 * 3 + 1;
        }
        drops
    })
}

fn client_message() -> impl Strategy<Value = ClientMessage> {
    prop_oneof![
        (
            u32_any(),
            shown_text(MAX_NAME_LEN),
            prop::option::of(any::<[u8; 16]>())
        )
            .prop_map(|(protocol_version, name, player_key)| {
                ClientMessage::Hello {
                    protocol_version,
                    name,
                    resume: None,
                    player_key,
                }
            }),
        // The server cleans chat itself, so any characters may come.
        (text_of(any::<char>(), MAX_CHAT_LEN), any::<bool>())
            .prop_map(|(text, team)| ClientMessage::Chat { text, team }),
        (
            text_of(any::<char>(), MAX_RCON_PASSWORD_LEN / 4),
            text_of(any::<char>(), MAX_RCON_COMMAND_LEN / 4)
        )
            .prop_map(|(password, command)| ClientMessage::Rcon { password, command }),
        (u32_any(), u32_any()).prop_map(|(bytes_per_second, snapshots_per_second)| {
            ClientMessage::Rate {
                bytes_per_second,
                snapshots_per_second,
            }
        }),
        (u32_any(), shown_text(MAX_NAME_LEN)).prop_map(|(protocol_version, name)| {
            ClientMessage::Spectate {
                protocol_version,
                name,
            }
        }),
        prop::option::of(player_id()).prop_map(|target| ClientMessage::Follow { target }),
        shown_text(MAX_NAME_LEN).prop_map(|name| ClientMessage::Rename { name }),
        prop::sample::select(vec![TeamChoice::Red, TeamChoice::Blue, TeamChoice::Auto])
            .prop_map(|choice| ClientMessage::JoinTeam { choice }),
        prop_oneof![
            map_name().prop_map(VoteProposal::Map),
            Just(VoteProposal::NextMap),
            player_id().prop_map(VoteProposal::Kick),
            Just(VoteProposal::Restart),
            u16_any().prop_map(VoteProposal::Fraglimit),
            prop::sample::select(vec![GameMode::Deathmatch, GameMode::TeamDeathmatch])
                .prop_map(VoteProposal::Mode),
        ]
        .prop_map(|proposal| ClientMessage::CallVote { proposal }),
        any::<bool>().prop_map(|yes| ClientMessage::Vote { yes }),
        Just(ClientMessage::Ready),
    ]
}

/// A tick rate in range and a snapshot rate that divides it.
fn rates() -> impl Strategy<Value = (u32, u32)> {
    (MIN_TICK_HZ..=MAX_TICK_HZ).prop_flat_map(|tick| {
        let divisors: Vec<u32> = (1..=tick).filter(|d| tick % d == 0).collect();
        (Just(tick), prop::sample::select(divisors))
    })
}

fn welcome() -> impl Strategy<Value = ServerMessage> {
    (
        u32_any(),
        rates(),
        shown_text(MAX_SERVER_NAME_LEN),
        map_name(),
        u64_any(),
        prop::option::of(player_id()),
    )
        .prop_map(
            |(
                protocol_version,
                (tick_hz, snapshot_hz),
                server_name,
                map_name,
                map_hash,
                your_id,
            )| {
                ServerMessage::Welcome(Welcome {
                    protocol_version,
                    tick_hz,
                    snapshot_hz,
                    server_name,
                    map_name,
                    map_hash,
                    your_id,
                    resume: [7; 16],
                })
            },
        )
}

/// Scoreboards in increasing id order with either team or none, up to a full one with the
/// widest numbers.
fn scoreboard() -> impl Strategy<Value = ServerMessage> {
    let line = || {
        (
            prop::option::of(u16_any()),
            any::<i32>(),
            u32_any(),
            prop::option::of(prop::sample::select(Team::ALL.to_vec())),
            any::<u8>(),
        )
    };
    prop_oneof![0..=4usize, Just(MAX_SNAPSHOT_PLAYERS)]
        .prop_flat_map(move |n| (prop::collection::vec(line(), n), increasing_ids(n)))
        .prop_map(|(lines, ids)| {
            ServerMessage::Scoreboard(
                lines
                    .into_iter()
                    .zip(ids)
                    .map(|((ping_ms, frags, deaths, team, captures), id)| ScoreLine {
                        id,
                        ping_ms,
                        frags,
                        deaths,
                        team,
                        captures,
                    })
                    .collect(),
            )
        })
}

fn server_message() -> impl Strategy<Value = ServerMessage> {
    prop_oneof![
        welcome(),
        shown_text(MAX_CHAT_LEN).prop_map(|reason| ServerMessage::Refused { reason }),
        (player_id(), shown_text(MAX_NAME_LEN), any::<bool>())
            .prop_map(|(id, name, bot)| ServerMessage::PlayerJoined { id, name, bot }),
        (player_id(), shown_text(MAX_CHAT_LEN))
            .prop_map(|(id, reason)| ServerMessage::PlayerLeft { id, reason }),
        (player_id(), shown_text(MAX_CHAT_LEN), any::<bool>())
            .prop_map(|(from, text, team)| ServerMessage::Chat { from, text, team }),
        (shown_text(MAX_NAME_LEN), shown_text(MAX_CHAT_LEN))
            .prop_map(|(name, text)| ServerMessage::SpectatorChat { name, text }),
        (player_id(), shown_text(MAX_NAME_LEN))
            .prop_map(|(id, name)| ServerMessage::PlayerRenamed { id, name }),
        prop::option::of(
            (shown_text(MAX_CHAT_LEN), 0u8..=64, 0u8..=64, u16_any()).prop_map(
                |(question, yes, no, seconds_left)| VoteTally {
                    question,
                    yes,
                    no,
                    voters: yes.saturating_add(no),
                    seconds_left,
                }
            )
        )
        .prop_map(ServerMessage::Vote),
        prop::collection::vec(
            (
                prop::sample::select(vec![
                    AwardKind::MostFrags,
                    AwardKind::BestAccuracy,
                    AwardKind::MostDamage,
                    AwardKind::LongestStreak,
                    AwardKind::MostCaptures
                ]),
                player_id(),
                u32_any()
            )
                .prop_map(|(kind, player, value)| Award {
                    kind,
                    player,
                    value
                }),
            0..=MAX_AWARDS
        )
        .prop_map(ServerMessage::Awards),
        (
            u32_any(),
            any::<u16>(),
            prop::collection::vec(
                (weapon(), any::<u16>(), any::<u16>()).prop_map(|(w, a, b)| (
                    w,
                    a.max(b),
                    a.min(b)
                )),
                0..=WeaponKind::ALL.len()
            )
        )
            .prop_map(|(damage, best_streak, weapons)| {
                ServerMessage::YourMatch(MatchReport {
                    damage,
                    best_streak,
                    weapons,
                })
            }),
        scoreboard(),
        (
            player_id(),
            weapon(),
            any::<i16>(),
            -MAX_PITCH_STEPS..=MAX_PITCH_STEPS,
            u32_any()
        )
            .prop_map(|(shooter, weapon, yaw, pitch, tick)| ServerMessage::Fired {
                shooter,
                weapon,
                aim: [yaw, pitch],
                tick,
            }),
        (projectile_kind(), vec3(), u32_any())
            .prop_map(|(kind, at, tick)| ServerMessage::Exploded { kind, at, tick }),
        (
            prop::sample::select(GameMode::ALL.to_vec()),
            (u16_any(), u16_any()),
            u16_any(),
            any::<bool>(),
            prop::option::of(
                (any::<bool>(), u16_any(), any::<u8>(), any::<u8>()).prop_map(
                    |(countdown, seconds_left, ready, needed)| Warmup {
                        countdown,
                        seconds_left,
                        ready,
                        needed,
                    }
                )
            )
        )
            .prop_map(
                |(mode, (fraglimit, capturelimit), time_left_s, intermission, warmup)| {
                    ServerMessage::Match {
                        mode,
                        fraglimit,
                        capturelimit,
                        time_left_s,
                        intermission,
                        warmup,
                    }
                }
            ),
        (
            prop::sample::select(Team::ALL.to_vec()),
            prop::sample::select(vec![
                FlagNews::Taken,
                FlagNews::Dropped,
                FlagNews::Returned,
                FlagNews::Captured
            ]),
            prop::option::of(player_id())
        )
            .prop_map(|(team, news, by)| ServerMessage::Flag { team, news, by }),
        shown_text(MAX_CHAT_LEN).prop_map(|winner| ServerMessage::MatchEnded { winner }),
        (map_name(), u64_any())
            .prop_map(|(map_name, map_hash)| ServerMessage::MapChange { map_name, map_hash }),
        (
            prop::sample::select(vec![
                ServerTextKind::Say,
                ServerTextKind::Motd,
                ServerTextKind::Rcon,
                ServerTextKind::Notice
            ]),
            shown_text(MAX_CHAT_LEN)
        )
            .prop_map(|(kind, text)| ServerMessage::ServerText { kind, text }),
        lifetimes(),
    ]
}

/// Lifetimes in increasing id order, up to a full server's with the widest numbers.
fn lifetimes() -> impl Strategy<Value = ServerMessage> {
    prop_oneof![0..=4usize, Just(MAX_SNAPSHOT_PLAYERS)]
        .prop_flat_map(|n| {
            (
                prop::collection::vec((u32_any(), u32_any()), n),
                increasing_ids(n),
            )
        })
        .prop_map(|(records, ids)| {
            ServerMessage::Lifetimes(
                ids.into_iter()
                    .zip(records)
                    .map(|(id, (kills, deaths))| (id, Lifetime { kills, deaths }))
                    .collect(),
            )
        })
}

fn client_datagram() -> impl Strategy<Value = ClientDatagram> {
    prop_oneof![
        input_packet().prop_map(ClientDatagram::Input),
        u64_any().prop_map(|client_time_us| ClientDatagram::Ping { client_time_us }),
        u32_any().prop_map(|snapshot| ClientDatagram::Ack { snapshot }),
    ]
}

/// Two snapshots, the second 1 to [`MAX_BASELINE_AGE`] after the first, some players in
/// both: a baseline and a snapshot to encode against it.
fn snapshot_pair() -> impl Strategy<Value = (Snapshot, Snapshot)> {
    (snapshot(), snapshot(), 1..=MAX_BASELINE_AGE, any::<bool>()).prop_map(
        |(base, mut next, gap, same_players)| {
            next.seq = base.seq.wrapping_add(gap).max(1);
            if same_players {
                // The same players, moved a little: the common case.
                next.players = base.players.clone();
                for (i, p) in next.players.iter_mut().enumerate() {
                    p.pos[0] = p.pos[0].saturating_add(i as i32 * 37).min(1 << 23);
                    p.yaw = p.yaw.wrapping_add(i as i16);
                }
            }
            (base, next)
        },
    )
}

fn server_datagram() -> impl Strategy<Value = ServerDatagram> {
    prop_oneof![
        snapshot().prop_map(|s| ServerDatagram::Snapshot(SnapshotPacket::encode(&s, None))),
        snapshot_pair().prop_map(|(base, next)| {
            ServerDatagram::Snapshot(SnapshotPacket::encode(&next, Some(&base)))
        }),
        (u64_any(), u64_any()).prop_map(|(client_time_us, server_time_us)| {
            ServerDatagram::Pong {
                client_time_us,
                server_time_us,
            }
        }),
        weapon_check().prop_map(ServerDatagram::WeaponCheck),
    ]
}

fn weapon_check() -> impl Strategy<Value = sightline_protocol::WeaponCheck> {
    (
        (any::<u32>(), any::<u32>(), weapon()),
        prop::array::uniform4(-1.0f32..60.0),
        (any::<bool>(), 0u8..32),
        prop::array::uniform5((any::<u16>(), any::<u16>())),
    )
        .prop_map(
            |((ack_input_seq, tick, current), timers, (alt_held, owned), ammo)| {
                sightline_protocol::WeaponCheck {
                    ack_input_seq,
                    tick,
                    current,
                    timers,
                    alt_held,
                    owned,
                    ammo,
                }
            },
        )
}

// ---- Strategies: damaged bytes ----

/// One way to damage an encoding.
#[derive(Debug, Clone)]
enum Damage {
    Flip(Index, u8),
    Set(Index, u8),
    Cut(Index),
    Remove(Index),
    Insert(Index, u8),
    Append(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Vec<Damage>> {
    let one = prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, bit)| Damage::Flip(i, bit)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Set(i, b)),
        any::<Index>().prop_map(Damage::Cut),
        any::<Index>().prop_map(Damage::Remove),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Insert(i, b)),
        prop::collection::vec(any::<u8>(), 1..8).prop_map(Damage::Append),
    ];
    prop::collection::vec(one, 1..=4)
}

fn apply(mut bytes: Vec<u8>, damage: &[Damage]) -> Vec<u8> {
    for d in damage {
        let len = bytes.len();
        match d {
            Damage::Flip(i, bit) if len > 0 => bytes[i.index(len)] ^= 1u8 << bit,
            Damage::Set(i, b) if len > 0 => bytes[i.index(len)] = *b,
            Damage::Cut(i) => bytes.truncate(i.index(len + 1)),
            Damage::Remove(i) if len > 0 => {
                bytes.remove(i.index(len));
            }
            Damage::Insert(i, b) => bytes.insert(i.index(len + 1), *b),
            Damage::Append(more) => bytes.extend_from_slice(more),
            _ => {}
        }
    }
    bytes
}

// ---- Properties ----

/// A valid message encodes within its cap and decodes to itself.
fn round_trips<T: Wire + PartialEq + Debug>(msg: &T) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        msg.validate(),
        Ok(()),
        "the strategy made an invalid message"
    );
    let bytes = msg
        .encode()
        .map_err(|e| TestCaseError::fail(format!("a valid message does not encode: {e}")))?;
    prop_assert!(bytes.len() <= T::MAX_BYTES);
    let decoded = T::decode(&bytes);
    prop_assert_eq!(decoded.as_ref(), Ok(msg));
    Ok(())
}

/// Whatever `bytes` are, decoding refuses them or yields a valid message that encodes
/// back: to exactly `bytes` unless they hold a long-form varint (a prefix byte of 251 to
/// 253: bincode also accepts those for small numbers), and never to more bytes.
fn decodes_or_refuses<T: Wire + PartialEq + Debug>(bytes: &[u8]) -> Result<(), TestCaseError> {
    match T::decode(bytes) {
        Ok(msg) => {
            prop_assert_eq!(msg.validate(), Ok(()));
            let again = msg
                .encode()
                .map_err(|e| TestCaseError::fail(format!("decoded but cannot encode: {e}")))?;
            prop_assert!(again.len() <= bytes.len());
            if !bytes.iter().any(|b| (251..=253).contains(b)) {
                prop_assert_eq!(&again, &bytes.to_vec());
            }
            let decoded = T::decode(&again);
            prop_assert_eq!(decoded.as_ref(), Ok(&msg));
        }
        Err(DecodeError::TooLarge { len, .. }) => prop_assert!(len > T::MAX_BYTES),
        Err(_) => {}
    }
    Ok(())
}

fn encoded<T: Wire>(msg: &T) -> Vec<u8> {
    msg.encode().expect("a generated message fits its cap")
}

macro_rules! wire_properties {
    ($($module:ident: $ty:ident from $strategy:ident),* $(,)?) => {
        $(
            mod $module {
                use super::*;

                proptest! {
                    #![proptest_config(config())]

                    #[test]
                    fn valid_messages_round_trip(msg in $strategy()) {
                        round_trips(&msg)?;
                    }

                    #[test]
                    fn arbitrary_bytes_decode_or_are_refused(
                        bytes in prop::collection::vec(any::<u8>(), 0..=64)
                    ) {
                        decodes_or_refuses::<$ty>(&bytes)?;
                    }

                    #[test]
                    fn damaged_encodings_decode_or_are_refused(
                        msg in $strategy(),
                        damage in damage(),
                    ) {
                        decodes_or_refuses::<$ty>(&apply(encoded(&msg), &damage))?;
                    }
                }
            }
        )*
    };
}

wire_properties!(
    client_messages: ClientMessage from client_message,
    server_messages: ServerMessage from server_message,
    client_datagrams: ClientDatagram from client_datagram,
    server_datagrams: ServerDatagram from server_datagram,
    input_packets: InputPacket from input_packet,
);

proptest! {
    #![proptest_config(config())]

    /// Commands written against a base, or none, come back exactly from their bytes.
    #[test]
    fn input_packets_give_back_their_commands(
        ack in u32_any(),
        acked in u32_any(),
        (base, cmds) in input_cmds(),
    ) {
        let packet = InputPacket::new(ack, acked, base.as_ref(), &cmds);
        let read = InputPacket::decode(&packet.encode().unwrap());
        prop_assert_eq!(read.as_ref(), Ok(&packet));
        prop_assert_eq!(packet.base_seq(acked), base.map(|b| b.seq));
        prop_assert_eq!(packet.commands(base.as_ref()), Ok(cmds));
    }

    /// A snapshot encoded in full, or against any baseline, resolves to itself.
    #[test]
    fn snapshots_resolve_to_what_was_encoded((base, next) in snapshot_pair()) {
        let full = SnapshotPacket::encode(&next, None);
        prop_assert_eq!(full.resolve(None), Ok(next.clone()));
        let delta = SnapshotPacket::encode(&next, Some(&base));
        let read = SnapshotPacket::from_bytes(&delta.to_bytes());
        prop_assert_eq!(read.as_ref(), Ok(&delta));
        prop_assert_eq!(
            delta.resolve(Some(&base)),
            Ok(Snapshot { baseline: base.seq, ..next })
        );
    }

    /// Damaged deltas are refused, or resolve to a valid snapshot that encodes against
    /// the same baseline to the very same packet.
    #[test]
    fn damaged_deltas_resolve_or_are_refused(
        (base, next) in snapshot_pair(),
        damage in damage(),
    ) {
        let bytes = apply(SnapshotPacket::encode(&next, Some(&base)).to_bytes(), &damage);
        let Ok(packet) = SnapshotPacket::from_bytes(&bytes) else {
            return Ok(());
        };
        prop_assert_eq!(&packet.to_bytes(), &bytes, "one encoding");
        let baseline = Snapshot { seq: packet.baseline, ..base };
        let against = (packet.baseline != 0).then_some(&baseline);
        if let Ok(resolved) = packet.resolve(against) {
            prop_assert_eq!(resolved.validate(), Ok(()));
            prop_assert_eq!(SnapshotPacket::encode(&resolved, against), packet);
        }
    }
}

/// Which variant a message is. Matches without a wildcard, so a new variant stops this
/// file compiling until the strategies above make it too.
fn server_variant(msg: &ServerMessage) -> usize {
    match msg {
        ServerMessage::Welcome(_) => 0,
        ServerMessage::Refused { .. } => 1,
        ServerMessage::PlayerJoined { .. } => 2,
        ServerMessage::PlayerLeft { .. } => 3,
        ServerMessage::Chat { .. } => 4,
        ServerMessage::Scoreboard(_) => 5,
        ServerMessage::Fired { .. } => 6,
        ServerMessage::Exploded { .. } => 7,
        ServerMessage::Match { .. } => 8,
        ServerMessage::MatchEnded { .. } => 9,
        ServerMessage::MapChange { .. } => 10,
        ServerMessage::ServerText { .. } => 11,
        ServerMessage::Lifetimes(_) => 12,
        ServerMessage::SpectatorChat { .. } => 13,
        ServerMessage::PlayerRenamed { .. } => 14,
        ServerMessage::Vote(_) => 15,
        ServerMessage::Awards(_) => 16,
        ServerMessage::YourMatch(_) => 17,
        ServerMessage::Flag { .. } => 18,
    }
}

fn client_variant(msg: &ClientMessage) -> usize {
    match msg {
        ClientMessage::Hello { .. } => 0,
        ClientMessage::Chat { .. } => 1,
        ClientMessage::Rcon { .. } => 2,
        ClientMessage::Rate { .. } => 3,
        ClientMessage::Spectate { .. } => 4,
        ClientMessage::Follow { .. } => 5,
        ClientMessage::Rename { .. } => 6,
        ClientMessage::JoinTeam { .. } => 7,
        ClientMessage::CallVote { .. } => 8,
        ClientMessage::Vote { .. } => 9,
        ClientMessage::Ready => 10,
    }
}

fn client_datagram_variant(msg: &ClientDatagram) -> usize {
    match msg {
        ClientDatagram::Input(_) => 0,
        ClientDatagram::Ping { .. } => 1,
        ClientDatagram::Ack { .. } => 2,
    }
}

fn server_datagram_variant(msg: &ServerDatagram) -> usize {
    match msg {
        ServerDatagram::Snapshot(_) => 0,
        ServerDatagram::Pong { .. } => 1,
        ServerDatagram::WeaponCheck(_) => 2,
    }
}

/// The variants `strategy` makes in `draws` tries, as a count per variant.
fn variants_seen<T: Debug>(
    strategy: impl Strategy<Value = T>,
    variant: fn(&T) -> usize,
    count: usize,
) -> Vec<usize> {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = vec![0; count];
    for _ in 0..50 * count {
        let value = strategy
            .new_tree(&mut runner)
            .expect("the strategies reject nothing")
            .current();
        seen[variant(&value)] += 1;
    }
    seen
}

#[test]
fn every_variant_is_generated() {
    let checks = [
        (
            "ServerMessage",
            variants_seen(server_message(), server_variant, 19),
        ),
        (
            "ClientMessage",
            variants_seen(client_message(), client_variant, 11),
        ),
        (
            "ClientDatagram",
            variants_seen(client_datagram(), client_datagram_variant, 3),
        ),
        (
            "ServerDatagram",
            variants_seen(server_datagram(), server_datagram_variant, 3),
        ),
    ];
    for (name, seen) in checks {
        assert!(
            seen.iter().all(|&n| n > 0),
            "{name} variants never generated: {seen:?}"
        );
    }
}

#[test]
fn full_messages_are_generated_at_their_widest() {
    // The cap properties mean something only if the largest messages come up.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut largest = 0;
    for _ in 0..200 {
        use proptest::strategy::ValueTree;
        let snap = snapshot()
            .new_tree(&mut runner)
            .expect("the strategies reject nothing")
            .current();
        // The snapshot's own bytes: what the caps bound, before the entropy coder.
        largest = largest.max(SnapshotPacket::encode(&snap, None).to_bytes().len());
    }
    assert!(
        largest > SnapshotPacket::MAX_BYTES / 2,
        "largest snapshot {largest} bytes"
    );
}
