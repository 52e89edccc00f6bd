//! Where the connection stands, and whether we join (and are in the game) to play or to
//! watch.

use bevy::prelude::*;
use sightline_protocol::Welcome;
use sightline_sim::PlayerId;

/// What the server told us about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The Welcome message as received.
    pub welcome: Welcome,
}

/// Where the connection stands, for the HUD and for tests.
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub enum ConnectionStatus {
    /// Transport connecting.
    #[default]
    Connecting,
    /// Hello sent; waiting for Welcome.
    AwaitingWelcome,
    /// In the game.
    Connected(ServerInfo),
    /// The link dropped, and why; reconnecting by itself while the server keeps our place.
    Reconnecting(String),
    /// Gone, and why.
    Disconnected(String),
}

impl ConnectionStatus {
    /// Whether the client is in the game.
    pub fn is_connected(&self) -> bool {
        matches!(self, Self::Connected(_))
    }
}

/// How this client joins a server: as a player (Hello) or as a spectator (Spectate).
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JoinAs {
    /// Plays: the server gives it a player.
    #[default]
    Player,
    /// Watches: no player, no input.
    Spectator,
}

/// Present while this client watches a server: whom it follows.
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub struct Watching {
    /// The player followed (`None`: a free camera).
    pub follow: Option<PlayerId>,
    /// What the server was last told of `follow` (`None`: nothing yet).
    pub(crate) told: Option<Option<PlayerId>>,
    /// The newest snapshot acknowledged.
    pub(crate) acked: u32,
}

impl Watching {
    /// Follows the player `step` places after the one followed among `present` (in id
    /// order, wrapping round; from a free camera, the first or the last); nobody when
    /// nobody is present.
    pub fn cycle(&mut self, present: &[PlayerId], step: i32) {
        let mut ids = present.to_vec();
        ids.sort();
        ids.dedup();
        if ids.is_empty() {
            self.follow = None;
            return;
        }
        let n = ids.len() as i64;
        let at = self
            .follow
            .and_then(|f| ids.iter().position(|id| *id == f))
            .map(|i| i as i64);
        let next = match at {
            Some(i) => (i + i64::from(step)).rem_euclid(n),
            None if step < 0 => n - 1,
            None => 0,
        };
        self.follow = Some(ids[next as usize]);
    }
}
