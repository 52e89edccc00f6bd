//! What the server says on the reliable channel, decoded once and handed on as a Bevy
//! message: each part of the client (the connection, the roster, the feeds, the match,
//! combat cues) reads the messages it cares for. Whatever writes them — the network, a
//! demo being played back, a spectator's relay — drives the same systems.

use bevy::prelude::*;
use sightline_protocol::ServerMessage;

/// A reliable server message, decoded and checked (`ServerMessage::decode` validates).
#[derive(Message, Debug, Clone, PartialEq)]
pub struct FromServer(pub ServerMessage);
