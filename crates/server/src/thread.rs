//! The server on a thread of its own, in real time: offline play runs the dedicated
//! server's own code this way, and so do the harness's soak and load test.

use crate::{ServerConfig, server_app};
use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_net::{Pacing, ServerNetPlugin, ShutdownSignal};
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

/// A running server thread. Dropping it stops the server and waits for it.
pub struct ServerThread {
    signal: ShutdownSignal,
    handle: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Runs [`server_app`] in real time on a thread called `name` (so a profiler can
    /// tell the server's time from the rest), after `extend` has added to the app (a
    /// harness's probes, say).
    pub fn spawn(
        name: &str,
        config: ServerConfig,
        map: CurrentMap,
        net: ServerNetPlugin,
        extend: impl FnOnce(&mut App) + Send + 'static,
    ) -> std::io::Result<Self> {
        Self::spawn_app(name, move |stop| {
            let mut app = server_app(config, map, net, Pacing::RealTime(stop));
            extend(&mut app);
            app
        })
    }

    /// Runs the server app `build` makes (in real time, stopping on the signal it is
    /// given: a demo's playback, say) on a thread called `name`.
    pub fn spawn_app(
        name: &str,
        build: impl FnOnce(ShutdownSignal) -> App + Send + 'static,
    ) -> std::io::Result<Self> {
        let signal = ShutdownSignal::default();
        let stop = signal.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                build(stop).run();
            })?;
        Ok(Self {
            signal,
            handle: Some(handle),
        })
    }

    /// Whether the server has stopped (it should not before [`Self::stop`]).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the server and waits for it; whether it had panicked.
    pub fn stop(mut self) -> bool {
        self.halt()
    }

    fn halt(&mut self) -> bool {
        self.signal.0.store(true, Ordering::Relaxed);
        self.handle.take().is_some_and(|h| h.join().is_err())
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if self.halt() {
            error!("the server thread panicked");
        }
    }
}
