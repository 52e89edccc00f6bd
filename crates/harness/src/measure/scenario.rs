//! What a measurement plays: who, where, over what link, and whether they fight.

use crate::stepper::Frames;
use sightline_bots::BotSkill;
use sightline_net::ConditionerSettings;
use sightline_sim::TickConfig;
use sightline_sim::hash::hash;

/// Network conditions for a lab measurement: the same both ways, independent loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// Round-trip latency added, milliseconds (half each way).
    pub rtt_ms: f32,
    /// One-way jitter, milliseconds (each packet's delay varies by up to this either way).
    pub jitter_ms: f32,
    /// Loss each way, percent.
    pub loss_pct: f32,
}

impl Conditions {
    /// One direction's settings.
    pub fn one_way(&self) -> ConditionerSettings {
        ConditionerSettings {
            latency_ms: self.rtt_ms / 2.0,
            jitter_ms: self.jitter_ms,
            loss_pct: self.loss_pct,
            ..Default::default()
        }
    }

    /// The link: these settings both ways, no route change.
    pub fn link(&self) -> Link {
        Link {
            up: self.one_way(),
            down: self.one_way(),
            route_change: None,
        }
    }
}

/// A client's link, each direction on its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Client to server.
    pub up: ConditionerSettings,
    /// Server to client.
    pub down: ConditionerSettings,
    /// A change of route during the measured span.
    pub route_change: Option<RouteChange>,
}

impl Link {
    /// Round-trip latency before any route change, milliseconds.
    pub fn rtt_ms(&self) -> f32 {
        self.up.latency_ms + self.down.latency_ms
    }
}

/// The route changes: from `after_seconds` into the measured span, every packet takes
/// `extra_ms` longer each way (shorter when negative, never below no latency).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteChange {
    /// Seconds after the measurement starts.
    pub after_seconds: f64,
    /// Latency added each way, milliseconds.
    pub extra_ms: f32,
}

/// A fight: server bots, and the measured clients played by [`PlayerBot`](crate::player::PlayerBot)s that fire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Combat {
    /// Bots on the server.
    pub bots: u8,
    /// How well everyone fights.
    pub skill: BotSkill,
}

/// Who plays, where, and over what.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Map.
    pub map: String,
    /// Tick and snapshot rates.
    pub tick: TickConfig,
    /// Every measured client's link (each client's own seeded copy).
    pub link: Link,
    /// The measured clients, one per entry: how their frames come.
    pub clients: Vec<Frames>,
    /// `None`: the clients are driven by their own bot input and never fire, and no bots
    /// are on the server.
    pub combat: Option<Combat>,
    /// Seconds played before measuring.
    pub warmup: f64,
    /// Seconds measured.
    pub seconds: f64,
    /// Makes the run reproducible.
    pub seed: u64,
}

/// The frame rates of the realistic scenario's clients, one client each.
pub const REALISTIC_FPS: [f64; 4] = [30.0, 60.0, 144.0, 240.0];

impl Scenario {
    /// The lab baseline: `clients` bot-driven clients in lockstep with a 128 Hz server
    /// (64 Hz snapshots) on `map`, never firing, under `conditions` both ways.
    pub fn lab(conditions: Conditions, clients: usize, map: &str, seconds: f64, seed: u64) -> Self {
        let tick = TickConfig::new(128, 64).expect("valid rates");
        Self {
            map: map.into(),
            tick,
            link: conditions.link(),
            clients: vec![Frames::lockstep(tick.tick_hz); clients],
            combat: None,
            warmup: 3.0,
            seconds,
            seed,
        }
    }

    /// The realistic scenario: a 128 Hz server (64 Hz snapshots) on `map` with four
    /// bots, and one client at each of [`REALISTIC_FPS`], every frame's length varying by
    /// up to 20 % and clocks running 0.1 % fast or slow (alternately), all fighting.
    pub fn realistic(link: Link, map: &str, seconds: f64, seed: u64) -> Self {
        let tick = TickConfig::new(128, 64).expect("valid rates");
        let clients = REALISTIC_FPS
            .iter()
            .enumerate()
            .map(|(i, &fps)| Frames {
                fps,
                jitter: 0.2,
                drift: if i % 2 == 0 { 0.001 } else { -0.001 },
                seed: hash(seed, i as u64, 0x0066_7073),
            })
            .collect();
        Self {
            map: map.into(),
            tick,
            link,
            clients,
            combat: Some(Combat {
                bots: 4,
                skill: BotSkill::Normal,
            }),
            warmup: 5.0,
            seconds,
            seed,
        }
    }
}
