//! Where the connection stands.

use bevy::prelude::*;
use sightline_protocol::Welcome;

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
