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

/// What goes wrong besides the link: the measured clients' frames hitching, the server
/// standing still, the link going dark altogether. Each hitch and stall falls at a
/// seeded moment, on average once per the interval given.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Trouble {
    /// Mean seconds between one measured client's hitches (0: none); each is a frame of
    /// [`HITCHES_MS`] (one of them, drawn).
    pub hitch_every_s: f64,
    /// Mean seconds between the server's stalls (0: none); each lasts [`STALL_MS`].
    pub stall_every_s: f64,
    /// Spells with the link dark both ways for every measured client: (seconds into the
    /// measured span, length in seconds).
    pub outages: [Option<(f64, f64)>; 2],
}

/// The lengths of a client's hitches, milliseconds: a frame that loaded a texture, one
/// that compiled a shader, one the OS took away.
pub const HITCHES_MS: [u64; 3] = [120, 250, 600];
/// The shortest and longest of the server's stalls, milliseconds.
pub const STALL_MS: (u64, u64) = (50, 150);

impl Trouble {
    /// Whether anything goes wrong at all.
    pub fn is_any(&self) -> bool {
        self.hitch_every_s > 0.0
            || self.stall_every_s > 0.0
            || self.outages.iter().any(Option::is_some)
    }

    /// How the tables name it ("" when nothing goes wrong).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.hitch_every_s > 0.0 {
            let ms: Vec<String> = HITCHES_MS.iter().map(u64::to_string).collect();
            parts.push(format!(
                "client hitches of {} ms every {} s",
                ms.join("/"),
                self.hitch_every_s
            ));
        }
        if self.stall_every_s > 0.0 {
            parts.push(format!(
                "server stalls of {}-{} ms every {} s",
                STALL_MS.0, STALL_MS.1, self.stall_every_s
            ));
        }
        for (at, length) in self.outages.iter().flatten() {
            parts.push(format!("dark {length} s at {at} s"));
        }
        parts.join(", ")
    }
}

/// A fight: server bots, and the measured clients played by [`Autopilot`](sightline_client::Autopilot)s that fire.
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
    /// Snapshots a second each measured client asks for (`cl_updaterate`): what it is
    /// sent, up to the tick rate and never less than `tick`'s snapshot rate.
    pub update_rate: u32,
    /// Every measured client's link (each client's own seeded copy).
    pub link: Link,
    /// The measured clients, one per entry: how their frames come.
    pub clients: Vec<Frames>,
    /// `None`: the clients are driven by their own bot input and never fire, and no bots
    /// are on the server.
    pub combat: Option<Combat>,
    /// What goes wrong besides the link.
    pub trouble: Trouble,
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
    /// The lab baseline: `clients` bot-driven clients in lockstep with a 128 Hz server,
    /// each asking for 64 snapshots a second, on `map`, never firing, under `conditions`
    /// both ways.
    pub fn lab(conditions: Conditions, clients: usize, map: &str, seconds: f64, seed: u64) -> Self {
        let tick = TickConfig::new(128, 64).expect("valid rates");
        Self {
            map: map.into(),
            tick,
            update_rate: 64,
            link: conditions.link(),
            clients: vec![Frames::lockstep(tick.tick_hz); clients],
            combat: None,
            trouble: Trouble::default(),
            warmup: 3.0,
            seconds,
            seed,
        }
    }

    /// The realistic scenario: a 128 Hz server (64 Hz snapshots, and what each client
    /// asks for by default: 128) on `map` with four bots, and one client at each of
    /// [`REALISTIC_FPS`], every frame's length varying by up to 20 % and clocks running
    /// 0.1 % fast or slow (alternately), all fighting.
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
            update_rate: sightline_client::DEFAULT_UPDATE_RATE,
            link,
            clients,
            combat: Some(Combat {
                bots: 4,
                skill: BotSkill::Normal,
            }),
            trouble: Trouble::default(),
            warmup: 5.0,
            seconds,
            seed,
        }
    }
}
