//! Console lines for the server from its host: typed at its terminal, sent over Source
//! RCON, or sent by a player with the rcon password from the game's console. Each keeps
//! where it came from, so its output goes back there.

use bevy::prelude::*;
use sightline_net::ClientId;
use std::net::SocketAddr;

/// Where a console line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdminOrigin {
    /// The server's own terminal (standard input).
    Terminal,
    /// A Source RCON connection: its number and the request id to answer with.
    Rcon {
        /// The connection, as the RCON service numbers them.
        connection: u64,
        /// The request's id, echoed in the answer.
        request: i32,
    },
    /// A player in the game, by renet id.
    Player(ClientId),
}

/// A console line to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminLine {
    /// Who sent it.
    pub origin: AdminOrigin,
    /// The line.
    pub line: String,
    /// The password that came with it (in-game rcon): checked before it runs. `None`
    /// for lines already trusted (the terminal; an authenticated RCON connection).
    pub password: Option<String>,
    /// The sender's address, for the password lockout and the log.
    pub from: Option<SocketAddr>,
}

/// Most lines waiting at once; more are refused until the server has run these.
pub const MAX_PENDING_LINES: usize = 256;

/// Lines waiting to run, and the output of those that ran.
#[derive(Resource, Debug, Default)]
pub struct AdminInbox {
    /// To run, in order, once a frame.
    pub lines: Vec<AdminLine>,
    /// What each line printed, for its origin to collect.
    pub replies: Vec<(AdminOrigin, Vec<String>)>,
}

impl AdminInbox {
    /// Queues a line; `false` when too many wait already.
    pub fn push(&mut self, line: AdminLine) -> bool {
        if self.lines.len() >= MAX_PENDING_LINES {
            return false;
        }
        self.lines.push(line);
        true
    }

    /// Takes the replies for origins `wanted` picks, leaving the others.
    pub fn take_replies(
        &mut self,
        mut wanted: impl FnMut(&AdminOrigin) -> bool,
    ) -> Vec<(AdminOrigin, Vec<String>)> {
        let (taken, kept) = std::mem::take(&mut self.replies)
            .into_iter()
            .partition(|(origin, _)| wanted(origin));
        self.replies = kept;
        taken
    }
}
