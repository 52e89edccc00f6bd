//! The in-process stepper, in the manner of lightyear's: one server app and any number of
//! client apps joined by a [`MemoryNetwork`], advanced together on one simulated wall
//! clock. What happens is exactly reproducible, and a failure replays the same way.
//!
//! It is an event-driven scheduler: the server updates once per tick of wall time (one
//! tick per update, as the dedicated server's loop runs), and each client updates when
//! its next frame is due, at its own frame rate ([`Frames`]): each frame's length varies
//! by a seeded jitter, and the client's clock may run fast or slow against the server's
//! (drift), so the time the client's app is told has passed (its
//! `TimeUpdateStrategy::ManualDuration`, set before each update) is its frame's wall time
//! scaled by the drift. Packets cross the network on the wall clock. Clients added with
//! [`Frames::lockstep`] (the default) update once per server tick right after it, the
//! stepper's original lockstep.

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use sightline_client::{Autopilot, ClientPlugin, InputSource, JoinAs, client_app};
use sightline_map::{CurrentMap, MapSource, find_map};
use sightline_net::{
    ClientNetPlugin, ConditionerSettings, MemoryClientLink, MemoryNetwork, ServerNetPlugin,
};
use sightline_runtime::{Pacing, paced_app};
use sightline_server::{ServerConfig, server_app};
use sightline_sim::PlayerId;
use sightline_sim::hash::{hash, unit};
use std::time::Duration;

/// How a client's frames come: its frame rate, how much each frame's length varies, and
/// how fast its clock runs against the server's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frames {
    /// Frames per second, on average (of wall time).
    pub fps: f64,
    /// Each frame's length varies uniformly by up to this fraction either way (0.2:
    /// +-20 %), from `seed`.
    pub jitter: f64,
    /// How much faster the client's clock runs than the server's (0.001: 0.1 % fast; a
    /// negative value runs slow): the time its app is told has passed is each frame's
    /// wall time times (1 + drift).
    pub drift: f64,
    /// Makes the frame lengths reproducible.
    pub seed: u64,
}

impl Frames {
    /// One frame per server tick of `tick_hz`, exactly, on the server's clock.
    pub fn lockstep(tick_hz: u32) -> Self {
        Self {
            fps: tick_hz as f64,
            jitter: 0.0,
            drift: 0.0,
            seed: 0,
        }
    }

    /// Wall-clock length of frame `n`, nanoseconds (at least 1).
    pub fn wall_ns(&self, n: u64) -> u64 {
        let vary = (unit(hash(self.seed, n, 0x6672_616d)) as f64 * 2.0 - 1.0) * self.jitter;
        ((1e9 / self.fps) * (1.0 + vary)).round().max(1.0) as u64
    }

    /// The time the client's clock counts over `wall_ns` of wall time, nanoseconds.
    pub fn local_ns(&self, wall_ns: u64) -> u64 {
        (wall_ns as f64 * (1.0 + self.drift)).round() as u64
    }
}

/// A client app's place on the wall clock. The stepper keeps it in each client app, so a
/// client removed from [`Stepper::clients`] takes its schedule with it.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct FrameClock {
    /// How its frames come.
    pub frames: Frames,
    /// Frames run so far.
    pub count: u64,
    /// Wall time of its latest frame, nanoseconds (when it was added, before the first).
    pub last_ns: u64,
    /// Wall time of the frame before the latest, nanoseconds: the latest frame covered
    /// the time from there to `last_ns`.
    pub previous_ns: u64,
    /// Wall time its next frame is due, nanoseconds.
    pub due_ns: u64,
}

impl FrameClock {
    /// A clock of `frames` whose first frame is at wall time `now_ns`.
    pub(crate) fn new(frames: Frames, now_ns: u64) -> Self {
        Self {
            frames,
            count: 0,
            last_ns: now_ns,
            previous_ns: now_ns,
            due_ns: now_ns + frames.wall_ns(0),
        }
    }

    /// Wall time of the latest frame, seconds.
    pub fn last_seconds(&self) -> f64 {
        self.last_ns as f64 / 1e9
    }
}

/// Which app the stepper has just updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updated {
    /// The server (one tick).
    Server,
    /// Client number `i` (one frame).
    Client(usize),
}

/// A server and its clients on one simulated wall clock.
pub struct Stepper {
    /// The server app.
    pub server: App,
    /// Client apps, in the order they were added.
    pub clients: Vec<App>,
    /// The network joining them.
    pub network: MemoryNetwork,
    /// One server tick: the time each [`Self::step`] advances the wall clock by.
    pub dt: Duration,
    /// Each client's link, in the order the clients were added.
    pub links: Vec<MemoryClientLink>,
    /// Wall time the stepper has advanced to, nanoseconds.
    now_ns: u64,
    /// Wall time of the server's next update, nanoseconds.
    server_due_ns: u64,
    /// A stall the server's next update wakes from, nanoseconds (0: none).
    server_stall_ns: u64,
}

/// Loads one of the shipped maps.
pub fn load_map(name: &str) -> CurrentMap {
    CurrentMap::new(MapSource::load(&find_map(name)).unwrap_or_else(|e| panic!("{e}")))
}

/// An app with time under manual control, advancing `dt` per update.
pub fn manual_app(dt: Duration) -> App {
    paced_app(Pacing::Manual(dt), dt)
}

impl Stepper {
    /// A server running `map` with `config`, and no clients yet.
    pub fn new(config: ServerConfig, map: &str) -> Self {
        Self::new_with(config, map, |_| {})
    }

    /// [`Self::new`], with `extend` adding to the server app before it starts (the
    /// host's console, say, which only the dedicated server adds).
    pub fn new_with(config: ServerConfig, map: &str, extend: impl FnOnce(&mut App)) -> Self {
        let dt = Duration::from_nanos(1_000_000_000 / config.tick.tick_hz as u64);
        let network = MemoryNetwork::on_shared_clock();
        let mut server = server_app(
            config,
            load_map(map),
            ServerNetPlugin::memory(network.clone()),
            Pacing::Manual(dt),
        );
        extend(&mut server);
        Self::around(server, network, dt)
    }

    /// A stepper around a server app already built (a demo's playback, say) on
    /// `network`, ticking every `dt`, and no clients yet.
    pub fn around(mut server: App, network: MemoryNetwork, dt: Duration) -> Self {
        server.finish();
        server.cleanup();
        Self {
            server,
            clients: Vec::new(),
            network,
            dt,
            links: Vec::new(),
            now_ns: 0,
            server_due_ns: dt.as_nanos() as u64,
            server_stall_ns: 0,
        }
    }

    /// Wall time the stepper has advanced to, seconds.
    pub fn now(&self) -> f64 {
        self.now_ns as f64 / 1e9
    }

    /// Reads component `C` of player `id` on the server; `None` if no such player has one.
    pub fn on_server<C: Component, R>(
        &mut self,
        id: PlayerId,
        read: impl FnOnce(&C) -> R,
    ) -> Option<R> {
        let w = self.server.world_mut();
        w.query::<(&PlayerId, &C)>()
            .iter(w)
            .find(|(p, _)| **p == id)
            .map(|(_, c)| read(c))
    }

    /// Makes the server's process stand still for `stall` before its next update: the
    /// update comes that much later, and its clock counts the whole gap, so the server
    /// catches up the ticks it owes in that one update, as the dedicated server does on
    /// waking.
    pub fn stall_server(&mut self, stall: Duration) {
        let ns = u64::try_from(stall.as_nanos()).unwrap_or(u64::MAX);
        self.server_due_ns = self.server_due_ns.saturating_add(ns);
        self.server_stall_ns = self.server_stall_ns.saturating_add(ns);
    }

    /// Makes client `i` hitch: its next frame comes `hitch` later than due, and covers
    /// the whole gap (a frame that took that long: a shader compiling, the disk, the OS).
    pub fn hitch_client(&mut self, i: usize, hitch: Duration) {
        let ns = u64::try_from(hitch.as_nanos()).unwrap_or(u64::MAX);
        if let Some(mut clock) = self.clients[i].world_mut().get_resource_mut::<FrameClock>() {
            clock.due_ns = clock.due_ns.saturating_add(ns);
        }
    }

    /// The server's tick rate.
    pub fn tick_hz(&self) -> u32 {
        (1e9 / self.dt.as_nanos() as f64).round() as u32
    }

    /// Adds a client with the Sightline client plugin, a bot at its controls, updating
    /// in lockstep with the server.
    pub fn add_client(&mut self, name: &str, seed: u64) -> usize {
        let link = self.network.connect();
        let frames = Frames::lockstep(self.tick_hz());
        self.add_client_on(link, name, seed, frames)
    }

    /// Adds a client whose link misbehaves as set (`up` is client to server), updating
    /// in lockstep with the server.
    pub fn add_conditioned_client(
        &mut self,
        name: &str,
        seed: u64,
        up: ConditionerSettings,
        down: ConditionerSettings,
    ) -> usize {
        let frames = Frames::lockstep(self.tick_hz());
        self.add_client_with(name, seed, up, down, frames)
    }

    /// Adds a client whose link misbehaves as set (`up` is client to server) and whose
    /// frames come as `frames` says.
    pub fn add_client_with(
        &mut self,
        name: &str,
        seed: u64,
        up: ConditionerSettings,
        down: ConditionerSettings,
        frames: Frames,
    ) -> usize {
        let link = self.network.connect_conditioned(up, down, seed);
        self.add_client_on(link, name, seed, frames)
    }

    fn add_client_on(
        &mut self,
        link: MemoryClientLink,
        name: &str,
        seed: u64,
        frames: Frames,
    ) -> usize {
        self.links.push(link.clone());
        let app = client_app(
            ClientNetPlugin::memory(link),
            ClientPlugin {
                name: name.to_string(),
                input: InputSource::Autopilot(Autopilot::new(seed)),
            },
            Pacing::Manual(self.dt),
        );
        self.push_client(app, frames)
    }

    /// Adds a client that watches rather than plays ([`JoinAs::Spectator`]), updating in
    /// lockstep with the server.
    pub fn add_spectator(&mut self, name: &str) -> usize {
        let i = self.add_client(name, 0);
        self.clients[i].insert_resource(JoinAs::Spectator);
        i
    }

    /// Adds a bare client: transport only, for tests that speak the protocol by hand.
    pub fn add_raw_client(&mut self) -> usize {
        let mut app = manual_app(self.dt);
        let link = self.network.connect();
        self.links.push(link.clone());
        app.add_plugins(ClientNetPlugin::memory(link));
        let frames = Frames::lockstep(self.tick_hz());
        self.push_client(app, frames)
    }

    fn push_client(&mut self, mut app: App, frames: Frames) -> usize {
        app.finish();
        app.cleanup();
        // A lockstep client's frames fall on the server's ticks.
        let now = if frames == Frames::lockstep(self.tick_hz()) {
            self.server_due_ns - self.dt.as_nanos() as u64
        } else {
            self.now_ns
        };
        app.insert_resource(FrameClock::new(frames, now));
        self.clients.push(app);
        self.clients.len() - 1
    }

    /// The app due next at or before wall time `until_ns`: the server first on a tie,
    /// then clients in order.
    fn next_due(&self, until_ns: u64) -> Option<(u64, Updated)> {
        let mut best =
            (self.server_due_ns <= until_ns).then_some((self.server_due_ns, Updated::Server));
        for (i, c) in self.clients.iter().enumerate() {
            let Some(clock) = c.world().get_resource::<FrameClock>() else {
                continue;
            };
            if clock.due_ns <= until_ns && best.is_none_or(|(t, _)| clock.due_ns < t) {
                best = Some((clock.due_ns, Updated::Client(i)));
            }
        }
        best
    }

    /// Runs the next update due by wall time `until_ns`, if any, and says which app it
    /// was. The wall clock moves to that update's time.
    pub fn advance_one(&mut self, until_ns: u64) -> Option<Updated> {
        let (at, which) = self.next_due(until_ns)?;
        self.now_ns = self.now_ns.max(at);
        self.network.set_time(Duration::from_nanos(at));
        match which {
            Updated::Server => {
                if self.server_stall_ns > 0 {
                    let woke = self.dt + Duration::from_nanos(self.server_stall_ns);
                    self.server_stall_ns = 0;
                    self.server
                        .insert_resource(TimeUpdateStrategy::ManualDuration(woke));
                    self.server.update();
                    self.server
                        .insert_resource(TimeUpdateStrategy::ManualDuration(self.dt));
                } else {
                    self.server.update();
                }
                self.server_due_ns += self.dt.as_nanos() as u64;
            }
            Updated::Client(i) => {
                let app = &mut self.clients[i];
                let mut clock = *app.world().resource::<FrameClock>();
                let local = clock.frames.local_ns(at - clock.last_ns);
                app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_nanos(
                    local,
                )));
                clock.count += 1;
                clock.previous_ns = clock.last_ns;
                clock.last_ns = at;
                clock.due_ns = at + clock.frames.wall_ns(clock.count);
                app.insert_resource(clock);
                app.update();
            }
        }
        Some(which)
    }

    /// Advances the wall clock by one server tick, updating every app whose frame falls
    /// in it, calling `each` after every update.
    pub fn step_with(&mut self, mut each: impl FnMut(&mut Self, Updated)) {
        let until = self.now_ns + self.dt.as_nanos() as u64;
        while let Some(which) = self.advance_one(until) {
            each(self, which);
        }
        self.now_ns = until;
    }

    /// Advances the wall clock by one server tick: the server's tick, then every client
    /// frame due (in lockstep, each client once).
    pub fn step(&mut self) {
        self.step_with(|_, _| {});
    }

    /// Advances `n` steps.
    pub fn steps(&mut self, n: usize) {
        for _ in 0..n {
            self.step();
        }
    }

    /// Advances by `seconds` of simulated time.
    pub fn run_for(&mut self, seconds: f64) {
        let n = (seconds / self.dt.as_secs_f64()).round() as usize;
        self.steps(n);
    }

    /// Advances until `done` holds, at most `max_steps`; returns whether it held.
    pub fn run_until(&mut self, max_steps: usize, mut done: impl FnMut(&mut Self) -> bool) -> bool {
        for _ in 0..max_steps {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::TickConfig;

    fn server() -> Stepper {
        let config = ServerConfig {
            tick: TickConfig::new(128, 64).unwrap(),
            ..Default::default()
        };
        Stepper::new(config, "duel")
    }

    #[test]
    fn every_app_runs_at_its_own_rate_with_jittery_frames_and_a_drifting_clock() {
        let mut s = server();
        let rates = [
            (30.0, 0.001),
            (60.0, -0.001),
            (144.0, 0.001),
            (240.0, -0.001),
        ];
        for (i, &(fps, drift)) in rates.iter().enumerate() {
            let frames = Frames {
                fps,
                jitter: 0.2,
                drift,
                seed: i as u64,
            };
            let link = ConditionerSettings::default();
            s.add_client_with(&format!("c{i}"), i as u64, link, link, frames);
        }
        let mut lengths = vec![Vec::new(); rates.len()];
        let mut ticks = 0;
        for _ in 0..(128 * 3) {
            s.step_with(|s, which| match which {
                Updated::Server => ticks += 1,
                Updated::Client(i) => {
                    let c = s.clients[i].world().resource::<FrameClock>();
                    lengths[i].push((c.last_ns - c.previous_ns) as f64 / 1e9);
                }
            });
        }
        assert_eq!(
            ticks,
            128 * 3,
            "the server ticks once per tick of wall time"
        );
        assert!((s.now() - 3.0).abs() < 1e-9);
        for (i, &(fps, drift)) in rates.iter().enumerate() {
            let frames = s.clients[i].world().resource::<FrameClock>().count;
            let want = fps * 3.0;
            assert!(
                (frames as f64 - want).abs() < want * 0.02 + 1.0,
                "{fps} fps: {frames} frames in 3 s"
            );
            // Past the first, each frame lasts its nominal length give or take 20 %, and
            // the spread is used.
            let spread = &lengths[i][1..];
            let (short, long) = spread
                .iter()
                .fold((f64::MAX, 0.0f64), |(a, b), &l| (a.min(l), b.max(l)));
            assert!(
                short >= 0.8 / fps - 1e-9 && long <= 1.2 / fps + 1e-9,
                "{fps}"
            );
            assert!(
                short < 0.85 / fps && long > 1.15 / fps,
                "{fps}: {short} {long}"
            );
            // The client's clock counts its frames' wall time scaled by its drift.
            let wall: f64 = spread.iter().sum();
            let clock = s.clients[i].world().resource::<Time<Real>>();
            let counted = clock.elapsed_secs_f64();
            let ratio = counted / wall;
            assert!((ratio - (1.0 + drift)).abs() < 1e-6, "{fps}: {ratio}");
        }
    }

    #[test]
    fn a_stalled_server_wakes_late_and_catches_up_every_tick_it_owes() {
        let mut s = server();
        let frames = Frames {
            fps: 60.0,
            jitter: 0.0,
            drift: 0.0,
            seed: 1,
        };
        let link = ConditionerSettings::default();
        let c = s.add_client_with("c", 1, link, link, frames);
        s.run_for(1.0);
        let tick = |s: &Stepper| s.server.world().resource::<sightline_sim::Tick>().0;
        let before = tick(&s);
        s.stall_server(Duration::from_millis(125));
        let mut updates = Vec::new();
        let mut client_frames = 0;
        // The 16 ticks the stall owes and the next one, all in the one update that wakes.
        s.step_with(|s, which| match which {
            Updated::Server => updates.push((s.now(), tick(s))),
            Updated::Client(_) => client_frames += 1,
        });
        assert!(updates.is_empty(), "the server woke during its stall");
        assert!(
            client_frames > 0,
            "the client went on while the server stood still"
        );
        for _ in 0..16 {
            s.step_with(|s, which| {
                if which == Updated::Server {
                    updates.push((s.now(), tick(s)));
                }
            });
        }
        assert_eq!(updates.len(), 1, "{updates:?}");
        let (at, ticks) = updates[0];
        assert_eq!(ticks - before, 17, "caught up in one update");
        assert!((at - (1.0 + 17.0 / 128.0)).abs() < 1e-6, "woke at {at}");
        // From then on, a tick per tick of wall time again.
        s.steps(128);
        assert_eq!(tick(&s) - before, 17 + 128);
        assert!(s.clients[c].world().resource::<FrameClock>().count > 60);
    }

    #[test]
    fn a_hitch_is_one_frame_covering_the_whole_gap() {
        let mut s = server();
        let frames = Frames {
            fps: 100.0,
            jitter: 0.0,
            drift: 0.0,
            seed: 1,
        };
        let link = ConditionerSettings::default();
        let c = s.add_client_with("c", 1, link, link, frames);
        s.run_for(1.0);
        let count = s.clients[c].world().resource::<FrameClock>().count;
        s.hitch_client(c, Duration::from_millis(250));
        s.run_for(0.25);
        let clock = *s.clients[c].world().resource::<FrameClock>();
        assert_eq!(clock.count, count, "a frame ran during the hitch");
        s.steps(2);
        let clock = *s.clients[c].world().resource::<FrameClock>();
        assert_eq!(clock.count, count + 1);
        assert_eq!(clock.last_ns - clock.previous_ns, 260_000_000);
        let delta = s.clients[c].world().resource::<Time<Real>>().delta();
        assert_eq!(delta, Duration::from_millis(260), "the app is told so");
    }

    #[test]
    fn lockstep_clients_update_right_after_each_server_tick() {
        let mut s = server();
        s.add_client("a", 1);
        s.step();
        s.add_client("b", 2);
        let mut order = Vec::new();
        for _ in 0..3 {
            s.step_with(|_, which| order.push(which));
        }
        use Updated::{Client, Server};
        let step = [Server, Client(0), Client(1)];
        assert_eq!(order, [step, step, step].concat());
        let dt = s.dt;
        for c in &s.clients {
            assert_eq!(
                c.world().resource::<Time<Real>>().delta(),
                dt,
                "a lockstep client's frame is one tick"
            );
        }
    }
}
