//! The in-process stepper, in the manner of lightyear's: one server app and any number of
//! client apps joined by a [`MemoryNetwork`], all advanced together on one manual clock,
//! tick by tick. What happens is exactly reproducible, and a failure replays the same way.

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use sightline_client::{ClientPlugin, InputSource};
use sightline_map::{CurrentMap, MapSource, find_map};
use sightline_net::{
    ClientNetPlugin, ConditionerSettings, MemoryClientLink, MemoryNetwork, ServerNetPlugin,
};
use sightline_server::{Pacing, ServerConfig, server_app};
use std::time::Duration;

/// A server and its clients on one manual clock.
pub struct Stepper {
    /// The server app.
    pub server: App,
    /// Client apps, in the order they were added.
    pub clients: Vec<App>,
    /// The network joining them.
    pub network: MemoryNetwork,
    /// Time each step advances every app by: one server tick.
    pub dt: Duration,
    /// Each client's link, in the order the clients were added.
    pub links: Vec<MemoryClientLink>,
}

/// Loads one of the shipped maps.
pub fn load_map(name: &str) -> CurrentMap {
    CurrentMap::new(MapSource::load(&find_map(name)).unwrap_or_else(|e| panic!("{e}")))
}

/// An app with time under manual control, advancing `dt` per update.
pub fn manual_app(dt: Duration) -> App {
    let mut app = App::new();
    app.add_plugins((TaskPoolPlugin::default(), bevy::time::TimePlugin))
        .insert_resource(TimeUpdateStrategy::ManualDuration(dt));
    app
}

impl Stepper {
    /// A server running `map` with `config`, and no clients yet.
    pub fn new(config: ServerConfig, map: &str) -> Self {
        let dt = Duration::from_nanos(1_000_000_000 / config.tick.tick_hz as u64);
        let network = MemoryNetwork::new();
        let mut server = server_app(
            config,
            load_map(map),
            ServerNetPlugin::memory(network.clone()),
            Pacing::Manual,
        );
        server.finish();
        server.cleanup();
        Self {
            server,
            clients: Vec::new(),
            network,
            dt,
            links: Vec::new(),
        }
    }

    /// Adds a client with the Sightline client plugin, a bot at its controls.
    pub fn add_client(&mut self, name: &str, seed: u64) -> usize {
        let link = self.network.connect();
        self.add_client_on(link, name, seed)
    }

    /// Adds a client whose link misbehaves as set (`up` is client to server).
    pub fn add_conditioned_client(
        &mut self,
        name: &str,
        seed: u64,
        up: ConditionerSettings,
        down: ConditionerSettings,
    ) -> usize {
        let link = self.network.connect_conditioned(up, down, seed);
        self.add_client_on(link, name, seed)
    }

    fn add_client_on(&mut self, link: MemoryClientLink, name: &str, seed: u64) -> usize {
        let mut app = manual_app(self.dt);
        self.links.push(link.clone());
        app.add_plugins((
            ClientNetPlugin::memory(link),
            ClientPlugin {
                name: name.to_string(),
                input: InputSource::Bot { seed },
            },
        ));
        self.push_client(app)
    }

    /// Adds a bare client: transport only, for tests that speak the protocol by hand.
    pub fn add_raw_client(&mut self) -> usize {
        let mut app = manual_app(self.dt);
        let link = self.network.connect();
        self.links.push(link.clone());
        app.add_plugins(ClientNetPlugin::memory(link));
        self.push_client(app)
    }

    fn push_client(&mut self, mut app: App) -> usize {
        app.finish();
        app.cleanup();
        self.clients.push(app);
        self.clients.len() - 1
    }

    /// Advances every app by one step: the server first, then each client.
    pub fn step(&mut self) {
        self.server.update();
        for c in &mut self.clients {
            c.update();
        }
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
