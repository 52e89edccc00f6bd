//! Quick play's request: a matchmaker service (`cl_matchmaker`) asked for a place on a
//! server, on a thread of its own while it queues; the session joins with the ticket it
//! hands back (`session::join_found_server`).

use bevy::prelude::*;
use sightline_matchmaker::{QuickPlay, Ticket};
use std::sync::{Mutex, mpsc};
use std::time::Instant;

/// A certificate authority (PEM) to trust for the matchmaker instead of the public ones
/// (`--matchmaker-ca`): a community's own, or a test's.
#[derive(Resource, Debug, Clone, Default)]
pub struct MatchmakerTrust(pub Option<Vec<u8>>);

/// A request to a matchmaker under way.
#[derive(Resource)]
pub struct QuickPlaySearch {
    /// The matchmaker asked.
    pub url: String,
    /// Since when.
    pub since: Instant,
    answer: Mutex<mpsc::Receiver<Result<Ticket, String>>>,
}

/// Asks the matchmaker at `url` on a thread of its own (it may queue the request for a
/// minute); [`answer`] has its answer once it comes.
pub(crate) fn start(world: &mut World, url: &str) -> Result<(), String> {
    let ask = QuickPlay {
        url: url.to_string(),
        ca_pem: world
            .get_resource::<MatchmakerTrust>()
            .and_then(|t| t.0.clone()),
    };
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("quick-play".into())
        .spawn(move || {
            tx.send(ask.ask()).ok();
        })
        .map_err(|e| format!("cannot ask the matchmaker: {e}"))?;
    world.insert_resource(QuickPlaySearch {
        url: url.to_string(),
        since: Instant::now(),
        answer: Mutex::new(rx),
    });
    Ok(())
}

/// Forgets a request under way (its thread's answer then goes nowhere).
pub(crate) fn stop(world: &mut World) {
    world.remove_resource::<QuickPlaySearch>();
}

/// The matchmaker's answer, once it came (the request is then over).
pub(crate) fn answer(world: &mut World) -> Option<Result<Ticket, String>> {
    let search = world.get_resource::<QuickPlaySearch>()?;
    let answer = match search.answer.lock().map(|rx| rx.try_recv()) {
        Ok(Err(mpsc::TryRecvError::Empty)) => return None,
        Ok(Ok(answer)) => answer,
        Ok(Err(mpsc::TryRecvError::Disconnected)) | Err(_) => {
            Err("the request to the matchmaker ended without an answer".into())
        }
    };
    stop(world);
    Some(answer)
}
