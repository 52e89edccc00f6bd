//! The fixed tick: its rate, its counter and how snapshots divide it.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The slowest tick rate the simulation supports.
pub const MIN_TICK_HZ: u32 = 20;
/// The fastest tick rate the simulation supports.
pub const MAX_TICK_HZ: u32 = 128;

/// How fast the simulation ticks and how often snapshots are sent.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickConfig {
    /// Simulation ticks per second.
    pub tick_hz: u32,
    /// A snapshot is built every this many ticks (2 at 128 Hz gives 64 Hz snapshots).
    pub snapshot_every: u32,
}

impl Default for TickConfig {
    fn default() -> Self {
        Self {
            tick_hz: 128,
            snapshot_every: 2,
        }
    }
}

/// Why a tick configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickConfigError {
    /// The tick rate is outside [`MIN_TICK_HZ`]..=[`MAX_TICK_HZ`].
    TickRateOutOfRange(u32),
    /// The snapshot rate is zero, above the tick rate, or does not divide it.
    SnapshotRateDoesNotDivide {
        /// The requested tick rate.
        tick_hz: u32,
        /// The requested snapshot rate.
        snapshot_hz: u32,
    },
}

impl fmt::Display for TickConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TickRateOutOfRange(hz) => write!(
                f,
                "tick rate {hz} Hz is outside the supported {MIN_TICK_HZ}-{MAX_TICK_HZ} Hz"
            ),
            Self::SnapshotRateDoesNotDivide {
                tick_hz,
                snapshot_hz,
            } => write!(
                f,
                "snapshot rate {snapshot_hz} Hz must be between 1 Hz and the tick rate \
                 {tick_hz} Hz and divide it exactly"
            ),
        }
    }
}

impl std::error::Error for TickConfigError {}

impl TickConfig {
    /// Builds a configuration from a tick rate and a snapshot rate, both in Hz.
    pub fn new(tick_hz: u32, snapshot_hz: u32) -> Result<Self, TickConfigError> {
        if !(MIN_TICK_HZ..=MAX_TICK_HZ).contains(&tick_hz) {
            return Err(TickConfigError::TickRateOutOfRange(tick_hz));
        }
        if snapshot_hz == 0 || snapshot_hz > tick_hz || !tick_hz.is_multiple_of(snapshot_hz) {
            return Err(TickConfigError::SnapshotRateDoesNotDivide {
                tick_hz,
                snapshot_hz,
            });
        }
        Ok(Self {
            tick_hz,
            snapshot_every: tick_hz / snapshot_hz,
        })
    }

    /// Seconds per tick.
    pub fn dt(&self) -> f32 {
        1.0 / self.tick_hz as f32
    }

    /// Snapshots per second.
    pub fn snapshot_hz(&self) -> u32 {
        self.tick_hz / self.snapshot_every
    }

    /// Whether `tick` is one on which a snapshot is built.
    pub fn is_snapshot_tick(&self, tick: Tick) -> bool {
        tick.0.is_multiple_of(self.snapshot_every)
    }

    /// Simulation time at the end of `tick`, in microseconds.
    pub fn tick_time_us(&self, tick: Tick) -> u64 {
        tick.0 as u64 * 1_000_000 / self.tick_hz as u64
    }
}

/// The number of the tick being simulated; 0 before the first tick.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tick(pub u32);

pub(crate) fn advance_tick(mut tick: ResMut<Tick>) {
    tick.0 = tick.0.wrapping_add(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_rate_with_a_dividing_snapshot_rate_is_accepted() {
        for hz in MIN_TICK_HZ..=MAX_TICK_HZ {
            let cfg = TickConfig::new(hz, hz).unwrap();
            assert_eq!(cfg.snapshot_every, 1);
            assert_eq!(cfg.snapshot_hz(), hz);
        }
        let cfg = TickConfig::new(128, 64).unwrap();
        assert_eq!(cfg.snapshot_every, 2);
        assert!(cfg.is_snapshot_tick(Tick(4)));
        assert!(!cfg.is_snapshot_tick(Tick(5)));
    }

    #[test]
    fn bad_rates_are_refused_with_a_reason() {
        assert_eq!(
            TickConfig::new(19, 19),
            Err(TickConfigError::TickRateOutOfRange(19))
        );
        assert_eq!(
            TickConfig::new(129, 1),
            Err(TickConfigError::TickRateOutOfRange(129))
        );
        let err = TickConfig::new(128, 60).unwrap_err();
        assert!(err.to_string().contains("divide"), "{err}");
        assert!(TickConfig::new(64, 0).is_err());
        assert!(TickConfig::new(64, 128).is_err());
    }

    #[test]
    fn tick_time_is_exact() {
        let cfg = TickConfig::new(64, 32).unwrap();
        assert_eq!(cfg.tick_time_us(Tick(64)), 1_000_000);
        assert_eq!(cfg.tick_time_us(Tick(1)), 15_625);
    }

    #[test]
    fn plugin_advances_the_tick_once_per_fixed_step() {
        let mut app = App::new();
        app.add_plugins((bevy::time::TimePlugin, crate::SimulationPlugin));
        app.insert_resource(bevy::time::TimeUpdateStrategy::FixedTimesteps(3));
        app.update();
        app.update();
        // The first update only initialises the clock.
        assert!(app.world().resource::<Tick>().0 >= 3);
        let before = app.world().resource::<Tick>().0;
        app.update();
        assert_eq!(app.world().resource::<Tick>().0, before + 3);
    }
}
