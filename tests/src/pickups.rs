//! Weapons and power-ups on the map and dropped by the dead, run by the real server and
//! seen by a real client: a weapon found on the map falls with its holder, every client
//! sees it lying there, and whoever walks over it takes it.

use bevy::prelude::*;
use sightline_client::LatestSnapshot;
use sightline_combat::{Arsenal, CombatEvent, DroppedWeapon, Vitals, WeaponKind};
use sightline_harness::Stepper;
use sightline_movement::PlayerState;
use sightline_protocol::{KIT_QUAD, KIT_WEAPONS};
use sightline_server::ServerConfig;
use sightline_sim::PlayerId;

/// The only player's id, once it plays.
fn only_player(s: &mut Stepper) -> PlayerId {
    let w = s.server.world_mut();
    *w.query::<&PlayerId>().iter(w).next().expect("a player")
}

/// Runs `change` on player `id`'s components on the server.
fn on_player(
    s: &mut Stepper,
    id: PlayerId,
    change: impl FnOnce(&mut PlayerState, &mut Vitals, &mut Arsenal),
) {
    let w = s.server.world_mut();
    let mut q = w.query::<(&PlayerId, &mut PlayerState, &mut Vitals, &mut Arsenal)>();
    let (_, mut state, mut vitals, mut arsenal) =
        q.iter_mut(w).find(|(p, ..)| **p == id).expect("the player");
    change(&mut state, &mut vitals, &mut arsenal);
}

#[test]
fn a_weapon_dropped_at_death_is_seen_and_taken() {
    let mut s = Stepper::new(ServerConfig::default(), "duel");
    let c = s.add_client("holder", 5);
    s.run_for(2.0);
    let id = only_player(&mut s);
    // The railgun in hand, then dead, in the air over the central platform (1.2 m high),
    // away from every spawn point.
    on_player(&mut s, id, |state, vitals, arsenal| {
        state.pos = Vec3::new(0.0, 2.5, 0.0);
        arsenal.give(WeaponKind::Railgun);
        arsenal.current = WeaponKind::Railgun;
        vitals.health = 0.0;
        vitals.respawn_in = 1.0;
    });
    s.server.world_mut().write_message(CombatEvent::Killed {
        victim: id,
        killer: id,
        weapon: WeaponKind::Rockets,
    });
    s.run_for(0.5);
    let lying: Vec<DroppedWeapon> = {
        let w = s.server.world_mut();
        w.query::<&DroppedWeapon>().iter(w).copied().collect()
    };
    assert_eq!(lying.len(), 1, "one weapon dropped: {lying:?}");
    let drop = lying[0];
    assert_eq!(drop.weapon, WeaponKind::Railgun);
    assert!(
        (drop.pos.y - 1.2).abs() < 0.05,
        "on the platform: {}",
        drop.pos
    );
    let seen = s.clients[c]
        .world()
        .resource::<LatestSnapshot>()
        .0
        .as_ref()
        .map(|snap| snap.drops.clone())
        .unwrap_or_default();
    assert_eq!(seen.len(), 1, "the client sees it: {seen:?}");
    assert_eq!(seen[0].weapon, WeaponKind::Railgun);
    assert_eq!(seen[0].pos, drop.pos.to_array());
    // Respawned without it, the player walks over it and takes it.
    s.run_for(1.5);
    let respawned_with = s.on_server::<Arsenal, _>(id, |a| a.owns(WeaponKind::Railgun));
    assert_eq!(
        respawned_with,
        Some(false),
        "a respawn gives the spawn weapons"
    );
    on_player(&mut s, id, |state, _, _| {
        state.pos = drop.pos;
        state.vel = Vec3::ZERO;
    });
    s.steps(2);
    assert_eq!(
        s.on_server::<Arsenal, _>(id, |a| a.owns(WeaponKind::Railgun)),
        Some(true),
        "taken"
    );
    let w = s.server.world_mut();
    assert_eq!(w.query::<&DroppedWeapon>().iter(w).count(), 0, "and gone");
    // The player's own client learns it holds the railgun, and about quad damage.
    on_player(&mut s, id, |_, vitals, _| vitals.quad = 5.0);
    s.run_for(0.3);
    let own = s.clients[c]
        .world()
        .resource::<LatestSnapshot>()
        .0
        .as_ref()
        .and_then(|snap| snap.players.iter().find(|p| p.id == id).copied())
        .expect("our own player");
    assert_ne!(own.kit & KIT_WEAPONS & WeaponKind::Railgun.bit(), 0);
    assert_ne!(own.kit & KIT_QUAD, 0);
}
