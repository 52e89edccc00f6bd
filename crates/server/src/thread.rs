//! The server on a thread of its own, in real time: offline play runs the dedicated
//! server's own code this way, and so do the harness's soak and load test. The program
//! that runs it can give it orders ([`LocalOrders`]): the game records its practice.

use crate::demo::{demo_path, start_recording, stop_recording};
use crate::{ServerConfig, server_app};
use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_net::ServerNetPlugin;
use sightline_runtime::{Pacing, ShutdownSignal};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
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

/// What the program running a server thread asks of it: the game's `record` and `stop`
/// on its practice server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalOrder {
    /// Record the game into the demo folder under this name (as the console's `record`).
    Record(String),
    /// Stop recording.
    StopRecording,
}

/// The program's end of a server thread's orders: each order is answered with what the
/// server's console would print, or why it could not.
pub struct LocalOrders {
    orders: Sender<LocalOrder>,
    answers: Mutex<Receiver<Result<String, String>>>,
}

impl LocalOrders {
    /// Sends `order`; `false` if the server is gone.
    pub fn send(&self, order: LocalOrder) -> bool {
        self.orders.send(order).is_ok()
    }

    /// The answers that came since the last call, in order.
    pub fn answers(&self) -> Vec<Result<String, String>> {
        self.answers
            .lock()
            .map(|a| a.try_iter().collect())
            .unwrap_or_default()
    }
}

/// The server's end of [`LocalOrders`], to install in its app.
#[derive(Resource)]
pub struct OrderInbox {
    orders: Mutex<Receiver<LocalOrder>>,
    answers: Sender<Result<String, String>>,
}

impl OrderInbox {
    /// Carries out the orders in the app's frames.
    pub fn install(self, app: &mut App) {
        app.insert_resource(self)
            .add_systems(Update, carry_out_local_orders);
    }
}

/// A pair of ends for a server thread's orders.
pub fn local_orders() -> (LocalOrders, OrderInbox) {
    let (orders, inbox) = channel();
    let (answer, answers) = channel();
    (
        LocalOrders {
            orders,
            answers: Mutex::new(answers),
        },
        OrderInbox {
            orders: Mutex::new(inbox),
            answers: answer,
        },
    )
}

/// Carries out what the program asked, answering each order.
fn carry_out_local_orders(world: &mut World) {
    let orders: Vec<LocalOrder> = world
        .resource::<OrderInbox>()
        .orders
        .lock()
        .map(|o| o.try_iter().collect())
        .unwrap_or_default();
    for order in orders {
        let answer = match order {
            LocalOrder::Record(name) => {
                demo_path(&name).and_then(|path| start_recording(world, &path))
            }
            LocalOrder::StopRecording => stop_recording(world),
        };
        // The program may have stopped listening; the recording goes on regardless.
        let _ = world.resource::<OrderInbox>().answers.send(answer);
    }
}
