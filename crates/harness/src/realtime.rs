//! A real server over UDP on loopback, on a thread of its own in real time, and what it
//! measures about itself for the caller: the server the chaos soak and the load test run
//! against.

use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_net::{AdmissionLimits, Security, ServerNetPlugin, ShutdownSignal};
use sightline_server::{Pacing, ServerConfig, SnapshotStats, TickTimes, server_app};
use sightline_sim::Tick;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What the server thread shares, copied out at the end of each of its frames.
#[derive(Resource, Clone, Default)]
pub struct Shared {
    tick: Arc<AtomicU32>,
    tick_us: Arc<Mutex<Vec<f32>>>,
    snapshots: Arc<Mutex<SnapshotStats>>,
}

impl Shared {
    /// The server's current tick.
    pub fn tick(&self) -> u32 {
        self.tick.load(Ordering::Relaxed)
    }

    /// The tick durations (microseconds) measured since the last call.
    pub fn take_ticks(&self) -> Vec<f32> {
        std::mem::take(&mut *self.tick_us.lock().expect("poisoned"))
    }

    /// What the snapshots sent so far weighed.
    pub fn snapshots(&self) -> SnapshotStats {
        *self.snapshots.lock().expect("poisoned")
    }
}

fn share(
    tick: Res<Tick>,
    mut times: ResMut<TickTimes>,
    snapshots: Res<SnapshotStats>,
    shared: Res<Shared>,
) {
    shared.tick.store(tick.0, Ordering::Relaxed);
    if !times.samples_us.is_empty() {
        shared
            .tick_us
            .lock()
            .expect("poisoned")
            .append(&mut times.samples_us);
    }
    *shared.snapshots.lock().expect("poisoned") = *snapshots;
}

/// A running server thread.
pub struct ServerThread {
    /// Where clients reach it.
    pub addr: SocketAddr,
    /// What it measures.
    pub shared: Shared,
    signal: ShutdownSignal,
    handle: JoinHandle<()>,
}

impl ServerThread {
    /// Binds a server for `config` on 127.0.0.1 (a free port) and runs it in real time.
    pub fn start(
        config: ServerConfig,
        map: CurrentMap,
        security: Security,
        limits: AdmissionLimits,
    ) -> Self {
        let (net, addr) = ServerNetPlugin::udp(
            "127.0.0.1:0".parse().expect("valid address"),
            None,
            config.max_players as usize,
            security,
            limits,
        )
        .expect("the server binds");
        let signal = ShutdownSignal::default();
        let shared = Shared::default();
        let handle = {
            let (signal, shared) = (signal.clone(), shared.clone());
            // Named, so a profiler can tell the server's time from the clients'.
            std::thread::Builder::new()
                .name("server".into())
                .spawn(move || {
                    server_app(config, map, net, Pacing::RealTime(signal))
                        .insert_resource(shared)
                        .add_systems(Last, share)
                        .run();
                })
                .expect("the server thread starts")
        };
        Self {
            addr,
            shared,
            signal,
            handle,
        }
    }

    /// Whether the server has stopped (it should not before [`Self::stop`]).
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Stops the server; whether it had panicked.
    pub fn stop(self) -> bool {
        self.signal.0.store(true, Ordering::Relaxed);
        self.handle.join().is_err()
    }
}
