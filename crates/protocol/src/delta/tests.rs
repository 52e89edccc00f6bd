//! Deltas round-trip exactly, cost little, and refuse every other form.

use super::*;
use sightline_movement::MoveFlags;

fn player(id: u8) -> PlayerSnap {
    PlayerSnap {
        id: PlayerId(id),
        pos: [10_240 * id as i32, 0, -5_000],
        vel: [1_792, 0, -256],
        yaw: 1_000 * id as i16,
        pitch: -300,
        flags: MoveFlags::ON_GROUND,
        health: 100,
        armor: 25,
        weapon: WeaponKind::Rifle,
        ammo: 30,
        spawn_count: 1,
        intent: [127, 0],
        held: Buttons::default(),
        kit: 0b111,
    }
}

/// Snapshot `seq`, 64 a second, with players `ids`.
fn snapshot(seq: u32, ids: &[u8]) -> Snapshot {
    Snapshot {
        seq,
        baseline: 0,
        server_tick: seq * 2,
        server_time_us: seq as u64 * 15_625,
        ack_input_seq: 500 + seq,
        input_queue: 1,
        repeated_inputs: 3,
        touches: crate::Touches {
            own_pushes: 1,
            pushes: 2,
            contacts: 3,
            contact_with: PlayerId(4),
            held: 6,
            owed: 7,
        },
        server_tick_us: 150,
        players: ids.iter().map(|&id| player(id)).collect(),
        projectiles: vec![ProjectileSnap {
            id: 300,
            kind: sightline_combat::ProjectileKind::Plasma,
            owner: PlayerId(1),
            pos: [1.0, 2.0, 3.0],
            vel: [0.0, -1.5, 20.0],
        }],
        items: 0b101,
        drops: vec![DropSnap {
            id: 2,
            weapon: WeaponKind::Railgun,
            pos: [4.0, 0.0, -1.0],
        }],
        flags: None,
        events: vec![],
        held: vec![],
    }
}

/// `s` one snapshot later with every player run along its velocity.
fn ran(s: &Snapshot, gap: u32) -> Snapshot {
    let mut next = s.clone();
    next.seq += gap;
    next.server_tick += 2 * gap;
    next.server_time_us += 15_625 * gap as u64;
    for p in &mut next.players {
        for axis in 0..3 {
            p.pos[axis] += p.vel[axis] as i32 * 4 * 15_625 * gap as i32 / 1_000_000;
        }
    }
    next
}

/// Encodes, writes, reads and resolves.
fn round_trip(s: &Snapshot, baseline: Option<&Snapshot>) -> (Snapshot, usize) {
    let bytes = SnapshotPacket::encode(s, baseline).to_bytes();
    let packet = SnapshotPacket::from_bytes(&bytes).expect("reads back");
    assert_eq!(packet.to_bytes(), bytes, "one encoding");
    let resolved = packet.resolve(baseline).expect("resolves");
    (resolved, bytes.len())
}

#[test]
fn full_and_delta_snapshots_resolve_to_exactly_what_was_sent() {
    let base = snapshot(10, &[0, 1, 2, 5]);
    let (full, _) = round_trip(&base, None);
    assert_eq!(full, base);
    let mut next = ran(&base, 3);
    next.players.remove(1); // player 1 left
    next.players.push(player(9)); // player 9 joined
    next.players[0].yaw = -32_000; // turned the long way round
    next.players[1].health = 0;
    next.players[1].weapon = WeaponKind::Rockets;
    next.players[2].vel = [0, 1_000, 0]; // jumped
    next.players[2].ammo = 65_535;
    next.items = 0;
    next.projectiles.clear();
    // Events, one numbered past a gap, one of a world older than the baseline.
    next.events = vec![
        crate::EventSnap {
            seq: 7,
            tick: next.server_tick - 1,
            event: crate::PlayerEvent::Damaged {
                attacker: PlayerId(2),
                damage: 1_000,
                from: [1.0, -2.0, 3.5],
            },
        },
        crate::EventSnap {
            seq: 9,
            tick: 3,
            event: crate::PlayerEvent::HitConfirm {
                target: PlayerId(5),
                damage: 12,
                head: false,
            },
        },
    ];
    let (resolved, _) = round_trip(&next, Some(&base));
    assert_eq!(
        resolved,
        Snapshot {
            baseline: 10,
            ..next
        }
    );
}

#[test]
fn flags_ride_only_when_they_move_and_their_end_is_sent_too() {
    use crate::FlagSpot;
    let mut base = snapshot(10, &[0, 1]);
    base.flags = Some([FlagSpot::Home, FlagSpot::Home]);
    let (full, _) = round_trip(&base, None);
    assert_eq!(full.flags, base.flags);
    // Unchanged: no flag bit, no bytes.
    let same = ran(&base, 1);
    assert_eq!(SnapshotPacket::encode(&same, Some(&base)).flags, None);
    let (resolved, _) = round_trip(&same, Some(&base));
    assert_eq!(resolved.flags, base.flags, "kept from the baseline");
    // Taken and dropped, then capture the flag over: each change is sent.
    for flags in [
        Some([FlagSpot::Carried(PlayerId(1)), FlagSpot::Home]),
        Some([FlagSpot::Home, FlagSpot::Dropped([3.5, 0.05, -2.0])]),
        None,
    ] {
        let next = Snapshot {
            flags,
            ..ran(&base, 1)
        };
        let (resolved, _) = round_trip(&next, Some(&base));
        assert_eq!(resolved.flags, flags);
    }
    // What no server sends: a flag lying at NaN, or an unknown place.
    let lying = Snapshot {
        flags: Some([FlagSpot::Dropped([f32::NAN, 0.0, 0.0]), FlagSpot::Home]),
        ..base.clone()
    };
    let bytes = SnapshotPacket::encode(&lying, None).to_bytes();
    assert!(SnapshotPacket::from_bytes(&bytes).is_err());
    let both = Snapshot {
        flags: Some([
            FlagSpot::Carried(PlayerId(1)),
            FlagSpot::Carried(PlayerId(1)),
        ]),
        ..base
    };
    assert!(both.validate().is_err(), "one player, two flags");
}

#[test]
fn a_runner_costs_nothing_and_a_turning_runner_a_few_bytes() {
    let ids: Vec<u8> = (0..16).collect();
    let base = snapshot(100, &ids);
    let next = ran(&base, 1);
    let header = SnapshotPacket::encode(&snapshot(101, &[]), Some(&snapshot(100, &[]))).to_bytes();
    let packet = SnapshotPacket::encode(&next, Some(&base));
    assert!(
        packet.changed.is_empty(),
        "running straight matches the reference"
    );
    assert_eq!(packet.to_bytes().len(), header.len());
    // Turning and steering: yaw, pitch and both horizontal velocities change, so the
    // position leaves the straight line by a few steps.
    let mut turning = next.clone();
    for p in &mut turning.players {
        p.yaw += 90;
        p.pitch -= 20;
        p.vel[0] -= 40;
        p.vel[2] += 30;
        p.pos[0] -= 1;
        p.pos[2] += 1;
    }
    let (resolved, bytes) = round_trip(&turning, Some(&base));
    assert_eq!(resolved.players, turning.players);
    let per_player = (bytes - header.len()) as f32 / 16.0;
    assert!(per_player <= 10.0, "{per_player} bytes per turning runner");
}

#[test]
fn players_seen_coarsely_turn_and_steer_for_a_byte_a_field() {
    let ids: Vec<u8> = (0..16).collect();
    let coarse = |s: &Snapshot| Snapshot {
        players: s.players.iter().map(|p| p.as_seen_by_others()).collect(),
        ..s.clone()
    };
    let base = coarse(&snapshot(100, &ids));
    let header = SnapshotPacket::encode(&snapshot(101, &[]), Some(&snapshot(100, &[]))).to_bytes();
    // Turning 4 degrees and steering by 0.6 m/s between the two snapshots.
    let mut turning = ran(&base, 1);
    for p in &mut turning.players {
        p.yaw += 728;
        p.vel[0] -= 150;
        p.vel[2] += 140;
        p.pos[0] -= 1;
    }
    let turning = coarse(&turning);
    let (resolved, bytes) = round_trip(&turning, Some(&base));
    assert_eq!(resolved.players, turning.players);
    // Id, mask, what the glide misses of the position on either axis, yaw, and the two
    // velocities: a byte each.
    let per_player = (bytes - header.len()) as f32 / 16.0;
    assert!(per_player <= 7.0, "{per_player} bytes per turning runner");
    // Exact values pay a bit more, and come back exact.
    let mut own = turning.clone();
    own.players[3].yaw += 1;
    own.players[3].vel[1] -= 3;
    let (resolved, own_bytes) = round_trip(&own, Some(&base));
    assert_eq!(resolved.players, own.players);
    assert!(own_bytes > bytes);
}

#[test]
fn others_see_angles_and_velocity_rounded_within_their_ranges() {
    let mut p = player(1);
    p.yaw = i16::MAX;
    p.pitch = sightline_sim::MAX_PITCH_STEPS;
    p.vel = [i16::MAX, i16::MIN, 23];
    let seen = p.as_seen_by_others();
    assert_eq!(seen.yaw, i16::MIN, "the half turn wraps");
    assert_eq!(seen.pitch % OTHERS_ANGLE_STEP, 0);
    assert!(
        seen.pitch <= sightline_sim::MAX_PITCH_STEPS,
        "never past the tilt limit"
    );
    assert_eq!(seen.vel, [i16::MAX / 16 * 16, i16::MIN, 16]);
    assert_eq!(seen.pos, p.pos, "positions stay exact");
    assert_eq!((seen.health, seen.weapon), (p.health, p.weapon));
    assert_eq!(
        seen.as_seen_by_others(),
        seen,
        "rounding twice changes nothing"
    );
    p.yaw = -40;
    p.vel = [-8, 8, -9];
    let seen = p.as_seen_by_others();
    assert_eq!((seen.yaw, seen.vel), (-64, [0, 16, -16]));
}

#[test]
fn others_are_not_sent_a_players_magazine_armour_or_weapons_carried() {
    use crate::{KIT_QUAD, KIT_WEAPONS};
    let mut p = player(1);
    (p.ammo, p.armor, p.kit) = (17, 50, KIT_QUAD | KIT_WEAPONS);
    let seen = p.as_seen_by_others();
    assert_eq!((seen.ammo, seen.armor, seen.kit), (0, 0, KIT_QUAD));
    // A firing player's rounds cost its watchers nothing.
    let mut fired = p;
    fired.ammo -= 1;
    assert_eq!(fired.as_seen_by_others(), seen);
}

#[test]
fn a_whole_number_of_quanta_sent_in_steps_is_refused() {
    let base = Snapshot {
        projectiles: vec![],
        ..snapshot(10, &[1])
    };
    let mut next = ran(&base, 1);
    next.players[0].yaw += 64;
    let mut bytes = SnapshotPacket::encode(&next, Some(&base)).to_bytes();
    // The yaw change, one quantum: zigzag 2, shifted: 4. In steps: 128 zigzagged, shifted,
    // the low bit set: 257, two bytes.
    let at = bytes.iter().rposition(|&b| b == 4).expect("the yaw change");
    bytes.splice(at..=at, [0x81, 0x02]);
    assert!(SnapshotPacket::from_bytes(&bytes).is_err());
}

#[test]
fn a_delta_needs_its_own_baseline() {
    let base = snapshot(10, &[1, 2]);
    let next = ran(&base, 1);
    let packet = SnapshotPacket::encode(&next, Some(&base));
    assert!(packet.resolve(None).is_err());
    assert!(packet.resolve(Some(&snapshot(9, &[1, 2]))).is_err());
    // A full packet ignores a baseline offered to it.
    let full = SnapshotPacket::encode(&next, None);
    assert_eq!(full.resolve(Some(&base)), Ok(next));
}

#[test]
fn resolving_refuses_what_no_server_sends() {
    let base = snapshot(10, &[1, 2]);
    let next = ran(&base, 1);
    let mut removed_stranger = SnapshotPacket::encode(&next, Some(&base));
    removed_stranger.removed.push(PlayerId(7));
    assert!(removed_stranger.resolve(Some(&base)).is_err());
    let mut listed_unchanged = SnapshotPacket::encode(&next, Some(&base));
    listed_unchanged.changed.push(PlayerChange {
        id: PlayerId(2),
        mask: 0,
        deltas: [0; FIELDS],
    });
    assert!(listed_unchanged.resolve(Some(&base)).is_err());
    let mut same_items = SnapshotPacket::encode(&next, Some(&base));
    same_items.items = Some(base.items);
    assert!(same_items.resolve(Some(&base)).is_err());
    // What it resolves to is validated: a weapon past the last, a pitch past the limit,
    // a position off the grid.
    for (field, delta) in [(15, 7), (6, 20_000), (0, i32::MAX)] {
        let mut bad = SnapshotPacket::encode(&next, Some(&base));
        bad.changed.push(PlayerChange {
            id: PlayerId(1),
            mask: 1 << field,
            deltas: std::array::from_fn(|i| if i == field { delta } else { 0 }),
        });
        assert!(bad.resolve(Some(&base)).is_err(), "field {field}");
    }
}

#[test]
fn hostile_bytes_are_refused() {
    let base = snapshot(40, &[1, 2, 3]);
    let mut next = ran(&base, 2);
    next.players[1].yaw = 5;
    next.items = 1;
    let good = SnapshotPacket::encode(&next, Some(&base)).to_bytes();
    for cut in 0..good.len() {
        assert!(
            SnapshotPacket::from_bytes(&good[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(SnapshotPacket::from_bytes(&trailing).is_err());
    // Hand-made packets: header, then the parts after it.
    let header = |gap: u32| {
        let mut b = vec![5];
        crate::bytes::put_varint(&mut b, u64::from(gap));
        b.extend_from_slice(&[10, 1, 1, 0, 0, 1]);
        b
    };
    let packet = |gap: u32, flags: u8, tail: &[u8]| {
        let mut b = header(gap);
        b.push(flags);
        b.extend_from_slice(tail);
        SnapshotPacket::from_bytes(&b)
    };
    assert!(packet(0, 0, &[0, 0, 0]).is_ok(), "an empty full snapshot");
    assert!(packet(5, 0, &[0, 0, 0]).is_err(), "baseline 0 as a delta");
    let beyond = CLIENT_BASELINES as u32 + 1;
    assert!(
        packet(beyond, 0, &[0, 0, 0]).is_err(),
        "further back than kept"
    );
    assert!(packet(0, 32, &[0, 0, 0]).is_err(), "unknown flag");
    assert!(
        packet(0, 16, &[0, 0, 0, 0]).is_err(),
        "the held flag with none"
    );
    assert!(packet(0, 16, &[0, 0, 0, 2, 5, 5]).is_err(), "held twice");
    // Events, after the (empty) removed, changed and projectile lists: a count, then each
    // one's number gap, age in ticks, kind and fields.
    let events = |tail: &[u8]| packet(0, 8, &[&[0, 0, 0][..], tail].concat());
    let refused = events(&[1, 1, 5, 4]).expect("a refused shot");
    assert_eq!(
        refused.resolve(None).map(|s| s.events),
        Ok(vec![crate::EventSnap {
            seq: 1,
            tick: 5,
            event: crate::PlayerEvent::ShotRefused,
        }]),
        "tick 10 less an age of 5"
    );
    assert!(events(&[0]).is_err(), "the events flag with none");
    assert!(events(&[1, 0, 0, 4]).is_err(), "event number 0");
    assert!(events(&[2, 3, 0, 4, 0, 0, 4]).is_err(), "a repeated number");
    assert!(events(&[2, 3, 0, 4, 1, 0, 4]).is_ok());
    assert!(
        events(&[2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 4, 1, 0, 4]).is_err(),
        "numbered past the maximum"
    );
    assert!(events(&[1, 1, 0, 5]).is_err(), "no such kind");
    assert!(events(&[1, 1, 0, 1, 3, 27, 1]).is_ok(), "a head hit");
    assert!(events(&[1, 1, 0, 1, 3, 27, 2]).is_err(), "a head flag of 2");
    assert!(
        events(&[1, 1, 0, 0, 3, 2, 1]).is_ok(),
        "a kill with a shotgun"
    );
    assert!(events(&[1, 1, 0, 0, 3, 2, 9]).is_err(), "no such weapon");
    let hurt = |x: f32| events(&[&[1, 1, 0, 2, 3, 9][..], &x.to_le_bytes(), &[0; 8]].concat());
    assert!(hurt(2.0).is_ok());
    assert!(hurt(f32::NAN).is_err(), "hurt from NaN");
    assert!(
        events(&[1, 1, 0, 3, 0x80, 0x80, 0x04]).is_err(),
        "a delay past u16"
    );
    let mut seventeen = vec![17];
    for _ in 0..17 {
        seventeen.extend([1, 0, 4]);
    }
    assert!(events(&seventeen).is_err(), "too many events");
    // Touches: six bytes after the flags.
    let touched = packet(0, 4, &[1, 2, 3, 4, 5, 6, 0, 0, 0]).expect("touches");
    assert_eq!(
        touched.resolve(None).map(|s| s.touches),
        Ok(crate::Touches {
            own_pushes: 1,
            pushes: 2,
            contacts: 3,
            contact_with: PlayerId(4),
            held: 5,
            owed: 6,
        })
    );
    assert!(packet(0, 4, &[1, 2, 3]).is_err(), "touches cut short");
    let unchanged = packet(0, 4, &[0, 0, 0, 0, 0, 0, 0, 0, 0]).expect("decodes");
    assert!(
        unchanged.resolve(None).is_err(),
        "touches sent equal to the baseline's"
    );
    let drop = |weapon: u8, x: f32| {
        let mut tail = vec![0, 0, 0, 1, 5, weapon];
        tail.extend(x.to_le_bytes());
        tail.extend([0; 8]);
        tail
    };
    assert!(packet(0, 2, &drop(3, 1.0)).is_ok(), "a dropped railgun");
    assert!(packet(0, 2, &drop(9, 1.0)).is_err(), "no such weapon");
    assert!(packet(0, 2, &drop(3, f32::NAN)).is_err(), "a drop at NaN");
    assert!(
        packet(0, 2, &[0, 0, 0, 0]).is_err(),
        "the drops flag with none"
    );
    assert!(
        packet(0, 0, &drop(3, 1.0)).is_err(),
        "drops without their flag"
    );
    assert!(packet(0, 1, &[0, 0, 0]).is_err(), "items missing");
    assert!(packet(0, 0, &[2, 3, 3, 0, 0]).is_err(), "removed twice");
    assert!(packet(0, 0, &[65]).is_err(), "too many removed");
    // A change: its head (mask above two bits of ids skipped; 3: the id follows), then
    // the fields. Player 4 first: mask 1 (field 0), id written out.
    assert!(
        packet(0, 0, &[0, 1, 7, 4, 0, 0]).is_err(),
        "a change of zero"
    );
    assert!(packet(0, 0, &[0, 1, 7, 4, 2, 0]).is_ok(), "a change of one");
    // Field 9 (health) is 8 bits wide: 127 fits, 128 would be a second encoding of -128.
    assert!(packet(0, 0, &[0, 1, 0x83, 0x10, 4, 0xfe, 0x01, 0]).is_ok());
    assert!(packet(0, 0, &[0, 1, 0x83, 0x10, 4, 0x80, 0x02, 0]).is_err());
    assert!(
        packet(0, 0, &[0, 1, 0x83, 0x80, 0x20, 4, 2, 0]).is_ok(),
        "field 17, the last"
    );
    assert!(
        packet(0, 0, &[0, 1, 0x83, 0x80, 0x40, 4, 1, 0]).is_err(),
        "field 18"
    );
    assert!(packet(0, 0, &[0, 2, 3, 4, 3, 4, 0]).is_err(), "ids repeat");
    assert!(packet(0, 0, &[0, 2, 3, 4, 3, 2, 0]).is_err(), "ids fall");
    // Player 1, one id skipped, in the head; written out it is a second encoding.
    assert!(packet(0, 0, &[0, 1, 1, 0]).is_ok());
    assert!(packet(0, 0, &[0, 1, 3, 1, 0]).is_err(), "an id written out");
    assert!(packet(0, 0, &[0, 2, 0, 0, 0]).is_ok(), "players 0 and 1");
    assert!(
        packet(0, 0, &[1, 4, 1, 3, 4, 0]).is_err(),
        "removed and changed"
    );
    assert!(
        packet(0, 0, &[0, 0, 1, 0x80, 0x80, 0x04]).is_err(),
        "projectile id"
    );
    // A projectile: its id, its flags (a bit per coordinate, then owner and kind) and
    // what they flag, against all zeros (none in a full snapshot's baseline).
    let projectile = |rest: &[u8]| {
        let mut tail = vec![0, 0, 1, 7];
        tail.extend(rest);
        packet(0, 0, &tail).and_then(|p| p.resolve(None))
    };
    assert!(
        projectile(&[0]).is_ok(),
        "a rocket of player 0's at rest at 0"
    );
    assert!(projectile(&[1, 2]).is_ok(), "one step along x");
    assert!(
        projectile(&[1, 0]).is_err(),
        "a coordinate flagged unchanged"
    );
    assert!(projectile(&[0x80, 2]).is_ok(), "a plasma ball");
    assert!(projectile(&[0x80, 3]).is_err(), "no such projectile");
    assert!(projectile(&[0x80, 0]).is_err(), "the kind sent unchanged");
    assert!(projectile(&[0x40, 0]).is_err(), "the owner sent unchanged");
    assert!(projectile(&[0x40, 5]).is_ok(), "player 5's");
    let far = |steps: i32| {
        let mut rest = vec![1];
        crate::bytes::put_zigzag(&mut rest, steps);
        projectile(&rest)
    };
    assert!(far(1 << 24).is_ok(), "the grid's edge");
    assert!(far((1 << 24) + 1).is_err(), "off the grid");
    assert!(far(-(1 << 24) - 1).is_err());
    let fast = |steps: i32| {
        let mut rest = vec![1 << 3];
        crate::bytes::put_zigzag(&mut rest, steps);
        projectile(&rest)
    };
    assert!(fast(1 << 20).is_ok(), "the top speed");
    assert!(fast((1 << 20) + 1).is_err(), "faster than the grid");
}

#[test]
fn a_rocket_in_flight_costs_its_id_and_a_byte() {
    let mut base = snapshot(40, &[1]);
    let rocket = ProjectileSnap {
        id: 300,
        kind: sightline_combat::ProjectileKind::Rocket,
        owner: PlayerId(1),
        pos: [10.0, 1.5, -4.0],
        vel: [18.0, -2.5, 7.0],
    }
    .on_grid();
    base.projectiles = vec![rocket];
    let bytes = |s: &Snapshot, b: Option<&Snapshot>| SnapshotPacket::encode(s, b).to_bytes();
    let mut next = ran(&base, 6);
    next.projectiles.clear();
    let without = bytes(&next, Some(&base)).len();
    // Six snapshots later it has flown on as the server moves it, tick by tick in f32.
    let dt = 1.0 / 128.0;
    let mut flown = rocket;
    for _ in 0..12 {
        for axis in 0..3 {
            flown.pos[axis] += flown.vel[axis] * dt;
        }
    }
    next.projectiles = vec![flown.on_grid()];
    let (resolved, _) = round_trip(&next, Some(&base));
    let next = Snapshot {
        baseline: base.seq,
        ..next
    };
    assert_eq!(resolved, next);
    assert_eq!(
        bytes(&next, Some(&base)).len() - without,
        3,
        "an id of two bytes and no coordinate off its reference"
    );
    // New to the client, it is sent in full: still well under its f32s' 27 bytes.
    let full = bytes(&next, None).len()
        - bytes(
            &Snapshot {
                projectiles: vec![],
                ..next.clone()
            },
            None,
        )
        .len();
    assert!(full <= 18, "{full} bytes");
    // Off the grid, it arrives on it.
    let mut off = next.clone();
    off.projectiles[0].pos[0] += 0.0001;
    assert_eq!(round_trip(&off, Some(&base)).0, next);
}

#[test]
fn garbage_never_panics() {
    let base = snapshot(40, &[1, 2, 3]);
    for bytes in crate::bytes::byte_soup(0x2545_f491_4f6c_dd1d, 600) {
        if let Ok(p) = SnapshotPacket::from_bytes(&bytes) {
            let _ = p.resolve(Some(&base));
            let _ = p.resolve(None);
        }
    }
}

#[test]
fn the_history_resolves_against_what_it_kept_and_forgets_the_oldest() {
    let mut history = SnapshotHistory::default();
    let first = snapshot(1, &[1, 2]);
    let full = SnapshotPacket::encode(&first, None);
    assert_eq!(history.resolve(&full), Ok(first.clone()));
    let mut prev = first.clone();
    for seq in 2..=CLIENT_BASELINES as u32 + 16 {
        let next = ran(&prev, 1);
        assert_eq!(next.seq, seq);
        let packet = SnapshotPacket::encode(&next, Some(&prev));
        assert_eq!(history.resolve(&packet).unwrap().players, next.players);
        prev = next;
    }
    // Snapshot 1 is gone; a delta against it is dropped, named by its baseline.
    let late = SnapshotPacket::encode(&ran(&prev, 1), Some(&first));
    assert_eq!(history.resolve(&late), Err(Unresolved::NoBaseline(1)));
    // The oldest kept still serves.
    let kept = ran(&first, 16);
    let packet = SnapshotPacket::encode(&ran(&prev, 1), Some(&kept));
    assert!(history.resolve(&packet).is_ok());
}

#[test]
fn a_held_player_goes_as_its_reference_and_is_marked() {
    let base = snapshot(10, &[1, 2, 3]);
    let ran_on = ran(&base, 2);
    let mut next = ran_on.clone();
    next.players[0].yaw += 640; // player 1 turned
    next.players[1].pos[0] += 5_000; // player 2 went on, but is held back
    next.held = vec![PlayerId(2)];
    let (resolved, held_bytes) = round_trip(&next, Some(&base));
    assert_eq!(resolved.held, vec![PlayerId(2)]);
    // Where its baseline self ran on to, not where it went; the others as sent.
    assert_eq!(resolved.players[1], ran_on.players[1]);
    assert_eq!(resolved.players[0], next.players[0]);
    let (_, sent_bytes) = round_trip(
        &Snapshot {
            held: vec![],
            ..next.clone()
        },
        Some(&base),
    );
    assert!(held_bytes < sent_bytes, "{held_bytes} against {sent_bytes}");
    // A newcomer cannot be held: it is sent in full.
    let mut newcomer = next.clone();
    newcomer.players.push(player(9));
    newcomer.held = vec![PlayerId(2), PlayerId(9)];
    let (resolved, _) = round_trip(&newcomer, Some(&base));
    assert_eq!(resolved.held, vec![PlayerId(2)]);
    assert_eq!(resolved.players[3], player(9));
    // A held player the client does not hold as it is (not in the baseline, removed or
    // changed) is refused.
    for held in [PlayerId(7), PlayerId(1)] {
        let mut packet = SnapshotPacket::encode(&next, Some(&base));
        packet.held = vec![held];
        assert!(packet.resolve(Some(&base)).is_err(), "{held:?}");
    }
    let mut gone = next.clone();
    gone.players.remove(2);
    let mut packet = SnapshotPacket::encode(&gone, Some(&base));
    packet.held = vec![PlayerId(3)];
    assert!(packet.resolve(Some(&base)).is_err(), "removed");
}

#[test]
fn the_trained_model_is_well_formed() {
    assert!(Coder::new(&model::SNAPSHOTS).is_ok());
}
