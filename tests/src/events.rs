//! Combat events shown in step with the drawn world: an explosion the server stamps with
//! its tick is shown when the client draws the world at that tick, not when the message
//! arrives (a round trip and the interpolation delay earlier); deaths ride every snapshot
//! until acknowledged and reach the kill feed once each, loss or not.

use bevy::prelude::*;
use sightline_client::{CombatCue, ShownEvent};
use sightline_combat::{CombatEvent, ProjectileKind};
use sightline_harness::Stepper;
use sightline_interpolation::{InterpolationSettings, RenderTime};
use sightline_movement::PlayerState;
use sightline_net::ConditionerSettings;
use sightline_protocol::PlayerEvent;
use sightline_server::ServerConfig;
use sightline_sim::{PlayerId, Tick, TickConfig};

#[test]
fn an_explosion_is_shown_when_the_world_is_drawn_at_its_tick() {
    let mut s = Stepper::new(ServerConfig::default(), "duel");
    let way = ConditionerSettings {
        latency_ms: 20.0,
        ..Default::default()
    };
    let c = s.add_conditioned_client("watcher", 3, way, way);
    // Drawn 150 ms back: shown on arrival (20 ms after), the burst would come 130 ms
    // before the world it belongs to.
    s.clients[c]
        .world_mut()
        .resource_mut::<InterpolationSettings>()
        .cl_interp = 0.15;
    s.run_for(3.0);
    let tick = *s.server.world().resource::<Tick>();
    let at = s.server.world().resource::<TickConfig>().tick_time_us(tick) as f64 / 1e6;
    // Beside the watcher, who hears it (bursts out of sight and earshot are not sent).
    let beside = {
        let w = s.server.world_mut();
        let mut players = w.query::<&PlayerState>();
        players.iter(w).next().expect("the watcher plays").pos + Vec3::X
    };
    s.server.world_mut().write_message(CombatEvent::Exploded {
        kind: ProjectileKind::Rocket,
        at: beside,
        tick: tick.0,
        rocket: 1,
        owner: PlayerId(9),
    });
    let mut shown = None;
    for _ in 0..128 {
        s.step();
        let w = s.clients[c].world();
        let exploded = w
            .resource::<Messages<CombatCue>>()
            .iter_current_update_messages()
            .any(|cue| matches!(cue, CombatCue::Exploded { .. }));
        if exploded && shown.is_none() {
            shown = w.resource::<RenderTime>().server_time;
        }
    }
    let shown = shown.expect("the explosion was shown");
    // Shown once the drawn world reached the tick, and within a frame or two of it.
    assert!(shown >= at, "shown at {shown} s, before its tick at {at} s");
    assert!(shown < at + 0.03, "shown at {shown} s, its tick at {at} s");
}

#[test]
fn kills_ride_lossy_snapshots_to_the_feed_once_each_as_the_world_is_drawn() {
    let mut s = Stepper::new(ServerConfig::default(), "duel");
    let up = ConditionerSettings {
        latency_ms: 40.0,
        ..Default::default()
    };
    // A quarter of the snapshots lost: each kill still rides the next one, as no
    // reliable resend (100 ms and more) would.
    let down = ConditionerSettings {
        loss_pct: 25.0,
        ..up
    };
    let c = s.add_conditioned_client("watcher", 5, up, down);
    s.run_for(3.0);
    let config = *s.server.world().resource::<TickConfig>();
    let mut kills: Vec<(u8, f64)> = Vec::new();
    let mut shown: Vec<(u8, f64)> = Vec::new();
    // A cursor of our own: an update without a tick leaves the last one's messages
    // current, and reading them as new would count an event twice.
    let mut cursor = s.clients[c]
        .world()
        .resource::<Messages<ShownEvent>>()
        .get_cursor();
    for step in 0..400 {
        if step % 12 == 0 && kills.len() < 20 {
            let victim = 100 + kills.len() as u8;
            let tick = *s.server.world().resource::<Tick>();
            kills.push((victim, config.tick_time_us(tick) as f64 / 1e6));
            s.server.world_mut().write_message(CombatEvent::Killed {
                victim: PlayerId(victim),
                killer: PlayerId(99),
                weapon: sightline_combat::WeaponKind::Rifle,
            });
        }
        s.step();
        let w = s.clients[c].world();
        let drawn = w.resource::<RenderTime>().server_time.unwrap_or(0.0);
        for ShownEvent(event) in cursor.read(w.resource::<Messages<ShownEvent>>()) {
            if let PlayerEvent::Killed { victim, .. } = event {
                shown.push((victim.0, drawn));
            }
        }
    }
    assert_eq!(
        shown.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
        kills.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
        "every kill shown once, in order"
    );
    for ((victim, at), (_, drawn)) in kills.iter().zip(&shown) {
        // Its tick is the one after the kill was written, or the one after that.
        assert!(
            *drawn >= *at && *drawn < at + 0.05,
            "kill of {victim} at {at} s shown with the world drawn at {drawn} s"
        );
    }
    let stats = s.clients[c]
        .world()
        .resource::<sightline_client::ClientStats>();
    assert_eq!((stats.events, stats.events_missed), (20, 0));
    assert_eq!(
        s.clients[c]
            .world()
            .resource::<sightline_client::KillFeed>()
            .0
            .len(),
        20
    );
}
