//! The server's metrics in Prometheus's model: a registry the exporter serves, and the
//! distributions measured where they happen (a tick's time, a snapshot's size). The
//! counters the server already keeps are copied into it once a frame by the exporter
//! (`telemetry`), and the histograms take the game's [`Observers`]' values, so nothing in
//! the game knows about Prometheus.
//!
//! Observing is a few atomic additions: cheap enough for every tick and every snapshot.

use bevy::prelude::*;
use prometheus::{Histogram, HistogramOpts, Registry};
use sightline_server::Observers;
use std::sync::Arc;

/// A page the metrics listener serves besides metrics and health (the leaderboard):
/// given the query string, the body as JSON, or an error to answer with 503.
pub type JsonPage = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// Upper bounds of the tick-time buckets, seconds: fine below one 128 Hz tick (7.8 ms),
/// coarse above, where a tick is already late.
const TICK_SECONDS_BUCKETS: [f64; 12] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002, 0.003, 0.004, 0.006, 0.007_8, 0.016, 0.05, 0.25,
];
/// Upper bounds of the snapshot-size buckets, bytes: a delta of a few players is tens of
/// bytes, a full snapshot of 64 hundreds; past 1200 renet sends it in slices.
const SNAPSHOT_BYTES_BUCKETS: [f64; 10] = [
    16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 768.0, 1200.0, 2400.0, 4800.0,
];

/// The registry a metrics listener serves, with the histograms the tick observes.
/// Present only where a host asked for metrics (`--metrics`).
#[derive(Resource, Clone)]
pub struct Metrics {
    /// Everything exported; cloning shares it (the exporter's thread holds a clone).
    pub registry: Registry,
    /// Wall-clock time of each fixed tick.
    pub tick_seconds: Histogram,
    /// Encoded size of each snapshot sent.
    pub snapshot_bytes: Histogram,
}

impl Metrics {
    /// A registry with the histograms registered.
    pub fn new() -> Self {
        let registry = Registry::new();
        let histogram = |name: &str, help: &str, buckets: &[f64]| {
            let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))
                .expect("valid histogram options");
            registry
                .register(Box::new(h.clone()))
                .expect("registered once");
            h
        };
        let tick_seconds = histogram(
            "sightline_tick_seconds",
            "Wall-clock time of each simulation tick",
            &TICK_SECONDS_BUCKETS,
        );
        let snapshot_bytes = histogram(
            "sightline_snapshot_bytes",
            "Encoded size of each snapshot sent, bytes",
            &SNAPSHOT_BYTES_BUCKETS,
        );
        // The standard process_* series (CPU seconds, resident memory, open files), as
        // every Prometheus client exports them.
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("registered once");
        Self {
            registry,
            tick_seconds,
            snapshot_bytes,
        }
    }
}

impl Metrics {
    /// The game's [`Observers`], feeding these histograms.
    pub fn observers(&self) -> Observers {
        let (tick, snapshot) = (self.tick_seconds.clone(), self.snapshot_bytes.clone());
        Observers {
            tick_seconds: Arc::new(move |v| tick.observe(v)),
            snapshot_bytes: Arc::new(move |v| snapshot.observe(v)),
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
