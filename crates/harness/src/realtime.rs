//! A real server over UDP on loopback, on a thread of its own in real time, and what it
//! measures about itself for the caller: the server the chaos soak and the load test run
//! against.

use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_net::{AdmissionLimits, Security, ServerNetPlugin};
use sightline_server::{
    PlayerSlots, ServerConfig, ServerStats, ServerThread, SnapshotStats, Stalls, TickTimes,
};
use sightline_sim::Tick;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What the server thread shares, copied out at the end of each of its frames.
#[derive(Resource, Clone, Default)]
pub struct Shared {
    tick: Arc<AtomicU32>,
    tick_us: Arc<Mutex<Vec<f32>>>,
    snapshots: Arc<Mutex<SnapshotStats>>,
    joins: Arc<Mutex<JoinTimes>>,
    /// A stall asked of the server's thread, milliseconds (0: none).
    stall_ms: Arc<AtomicU32>,
    /// Strikes given and connections kicked so far.
    conduct: Arc<Mutex<(u64, u64)>>,
    /// The server's stalls so far.
    stalls: Arc<Mutex<Stalls>>,
}

/// How long the server's frames took when players joined: what a join costs the loop.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JoinTimes {
    /// Players who took a slot.
    pub joins: u64,
    /// The longest tick in those frames and the frames after them (a newcomer's first
    /// snapshot, sent in full, may fall in the next), microseconds.
    pub tick_max_us: f32,
    /// The longest of those frames as a whole, microseconds: receiving (the handshake
    /// and the spawn happen there), the ticks, and sending to everyone.
    pub frame_max_us: f32,
    /// The longest of the other frames meanwhile, for comparison, microseconds.
    pub other_frame_max_us: f32,
}

/// When the server's current frame began, and how many players it had before it.
#[derive(Resource, Default)]
struct FrameStart {
    at: Option<std::time::Instant>,
    players: usize,
    joined_last_frame: bool,
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

    /// What joins have cost since the last call.
    pub fn take_joins(&self) -> JoinTimes {
        std::mem::take(&mut *self.joins.lock().expect("poisoned"))
    }

    /// Strikes given and connections kicked so far.
    pub fn conduct(&self) -> (u64, u64) {
        *self.conduct.lock().expect("poisoned")
    }

    /// The stalls the server has noticed so far.
    pub fn stalls(&self) -> Stalls {
        self.stalls.lock().expect("poisoned").clone()
    }

    /// Makes the server's thread stand still for `stall` at the start of its next frame,
    /// as a paused VM or a swapping host would.
    pub fn stall(&self, stall: std::time::Duration) {
        let ms = u32::try_from(stall.as_millis()).unwrap_or(u32::MAX);
        self.stall_ms.store(ms, Ordering::Relaxed);
    }
}

/// Stands still when asked ([`Shared::stall`]).
fn stall_when_asked(shared: Res<Shared>) {
    let ms = shared.stall_ms.swap(0, Ordering::Relaxed);
    if ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(ms.into()));
    }
}

fn start_frame(mut start: ResMut<FrameStart>) {
    start.at = Some(std::time::Instant::now());
}

/// Runs last in a frame: copies out what the caller reads, and times the frame when a
/// player joined in it (or in the frame before).
fn share(
    tick: Res<Tick>,
    mut times: ResMut<TickTimes>,
    snapshots: Res<SnapshotStats>,
    slots: Res<PlayerSlots>,
    mut start: ResMut<FrameStart>,
    shared: Res<Shared>,
    stats: Res<ServerStats>,
    stalls: Res<Stalls>,
) {
    *shared.conduct.lock().expect("poisoned") = (stats.strikes, stats.kicks);
    if stalls.is_changed() {
        *shared.stalls.lock().expect("poisoned") = stalls.clone();
    }
    let joined = slots.len() > start.players;
    let frame_us = start.at.map_or(0.0, |at| at.elapsed().as_secs_f32() * 1e6);
    let mut joins = shared.joins.lock().expect("poisoned");
    if joined || start.joined_last_frame {
        joins.joins += slots.len().saturating_sub(start.players) as u64;
        let tick_max = times.samples_us.iter().copied().fold(0.0, f32::max);
        joins.tick_max_us = joins.tick_max_us.max(tick_max);
        joins.frame_max_us = joins.frame_max_us.max(frame_us);
    } else {
        joins.other_frame_max_us = joins.other_frame_max_us.max(frame_us);
    }
    drop(joins);
    start.players = slots.len();
    start.joined_last_frame = joined;
    shared.tick.store(tick.0, Ordering::Relaxed);
    if !times.samples_us.is_empty() {
        shared
            .tick_us
            .lock()
            .expect("poisoned")
            .append(&mut times.samples_us);
        // The harness reads wall-clock ticks only.
        times.cpu_samples_us.clear();
    }
    *shared.snapshots.lock().expect("poisoned") = *snapshots;
}

/// A real server on a thread of its own ([`ServerThread`]), with what it measures about
/// itself shared for the caller.
pub struct MeasuredServer {
    /// Where clients reach it.
    pub addr: SocketAddr,
    /// What it measures.
    pub shared: Shared,
    thread: ServerThread,
}

impl MeasuredServer {
    /// Binds a server for `config` on 127.0.0.1 (a free port) and runs it in real time.
    pub fn start(
        config: ServerConfig,
        map: CurrentMap,
        security: Security,
        limits: AdmissionLimits,
    ) -> Self {
        Self::start_with(config, map, security, limits, |_| {})
    }

    /// As [`Self::start`], with `host` adding to the server's app what a dedicated
    /// server's host would (metrics, statistics), to measure them too.
    pub fn start_with(
        config: ServerConfig,
        map: CurrentMap,
        security: Security,
        limits: AdmissionLimits,
        host: impl FnOnce(&mut App) + Send + 'static,
    ) -> Self {
        let (net, addr) = ServerNetPlugin::udp(
            "127.0.0.1:0".parse().expect("valid address"),
            None,
            config.max_players as usize,
            security,
            limits,
        )
        .expect("the server binds");
        let shared = Shared::default();
        let probes = shared.clone();
        let thread = ServerThread::spawn("server", config, map, net, move |app| {
            host(app);
            app.insert_resource(probes)
                .init_resource::<FrameStart>()
                // The stall falls inside a frame, after its clock was read: the harder
                // case (a process stopped between frames shows as a long frame, which the
                // server sees at once).
                .add_systems(
                    First,
                    (stall_when_asked, start_frame)
                        .chain()
                        .after(bevy::time::TimeSystems),
                )
                .add_systems(Last, share);
        })
        .expect("the server thread starts");
        Self {
            addr,
            shared,
            thread,
        }
    }

    /// Whether the server has stopped (it should not before [`Self::stop`]).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Stops the server; whether it had panicked.
    pub fn stop(self) -> bool {
        self.thread.stop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_client::{Autopilot, ClientPlugin, ConnectionStatus, InputSource, client_app};
    use sightline_net::{AdmissionLimits, ClientNetPlugin, ClientSecurity, SecureConfig};
    use sightline_runtime::Pacing;
    use std::time::Duration;

    /// A client app over UDP, its own frames as fast as it goes (a command a tick, and
    /// an input packet a frame), on a thread of its own until `stop`.
    fn fast_client(
        addr: SocketAddr,
        seed: u64,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> std::thread::JoinHandle<bool> {
        std::thread::spawn(move || {
            let mut app = client_app(
                ClientNetPlugin::udp(addr, &ClientSecurity::default()).expect("socket"),
                ClientPlugin {
                    name: format!("fast{seed}"),
                    input: InputSource::Autopilot(Autopilot::new(seed)),
                },
                Pacing::Stepped,
            );
            app.finish();
            app.cleanup();
            while !stop.load(Ordering::Relaxed) {
                app.update();
                std::thread::sleep(Duration::from_millis(1));
            }
            app.world().resource::<ConnectionStatus>().is_connected()
        })
    }

    #[test]
    fn a_stall_inside_a_frame_strikes_no_honest_client() {
        let config = ServerConfig {
            bots: 2,
            ..Default::default()
        };
        let server = MeasuredServer::start(
            config,
            crate::load_map("duel"),
            Security::Secure(SecureConfig::random()),
            AdmissionLimits { max_per_address: 8 },
        );
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let clients: Vec<_> = (0..2)
            .map(|i| fast_client(server.addr, i, Arc::clone(&stop)))
            .collect();
        std::thread::sleep(Duration::from_secs(3));
        let before = server.shared.tick();
        // The server's thread stands still 2.5 s after reading its clock for a frame.
        server.shared.stall(Duration::from_millis(2500));
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::Relaxed);
        let still_in: Vec<bool> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        let (strikes, kicks) = server.shared.conduct();
        let ticks = server.shared.tick() - before;
        let stalls = server.shared.stalls();
        assert!(!server.stop(), "the server panicked");
        assert_eq!((strikes, kicks), (0, 0), "honest clients struck");
        assert_eq!(still_in, [true, true]);
        // A server whose own ticks overrun (a debug build on a loaded machine can) keeps
        // Bevy's quarter second of catching up by design, and does not count the stall;
        // one that counted it ran every tick the stall owed (2.5 s at 128 Hz) at once. How
        // many more it ran in the 5 s depends on the machine's load, so is not checked.
        if stalls.count > 0 {
            assert!(stalls.longest >= 2.4, "{stalls:?}");
            assert!(stalls.ticks_caught_up >= 300, "{stalls:?}");
            assert!(u64::from(ticks) >= stalls.ticks_caught_up, "{ticks} ticks");
        } else {
            eprintln!("the server was overrunning: the stall's ticks were not caught up");
        }
    }
}
