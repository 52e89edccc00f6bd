//! Encoding a message, and sending a reliable one at once: for the few sends that must go
//! out in a given order against the handshake or a kick. Everything else game logic sends
//! goes through the outbox (`crate::outbox`).

use bevy::log::warn;
use sightline_net::{ClientId, RenetServer};
use sightline_protocol::{Channel, ServerMessage, Wire};

/// Encodes a message to send. One above its cap would be refused by every peer; it can
/// only come from a server bug, so it is dropped with a warning instead of sent.
pub(crate) fn encoded(msg: &impl Wire) -> Option<Vec<u8>> {
    match msg.encode() {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            warn!("a message was not sent: {e}");
            None
        }
    }
}

/// Sends a reliable message to one client now, ahead of anything still in the outbox.
pub(crate) fn send_reliable(server: &mut RenetServer, client: ClientId, msg: &ServerMessage) {
    if let Some(bytes) = encoded(msg) {
        server.send_message(client, Channel::Reliable, bytes);
    }
}
