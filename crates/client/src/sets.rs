//! The sets the client's systems run in, and when they may run (in a game, as a player or
//! a spectator, with a transport), with the markers of whose player is whose.

use crate::status::{ConnectionStatus, Watching};
use bevy::prelude::*;
use sightline_net::RenetClient;

/// Marks the player this client controls.
#[derive(Component, Debug, Default, Clone, Copy)]
pub struct LocalPlayer;

/// Marks players controlled by others.
#[derive(Component, Debug, Default, Clone, Copy)]
pub struct RemotePlayer;

/// Client work outside the fixed tick, in `PreUpdate` after renet has received.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientSet {
    /// Handshake, roster, chat and snapshots.
    Receive,
}

/// The steps of [`ClientSet::Receive`], in order: what the transport brought, then what
/// the server said (from the network or a demo), then the snapshots and what they tell of
/// the clock, then whether the session goes on.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ReceiveStep {
    /// Refused packets counted, the Hello sent, reliable messages decoded.
    Transport,
    /// A Welcome taken, and the map it names loaded.
    Welcome,
    /// Who is in the game.
    Roster,
    /// Kills, chat and the match.
    Feeds,
    /// Combat cues and events.
    Cues,
    /// Snapshots read and applied.
    Snapshots,
    /// The round trip the snapshots' acknowledgements tell.
    Clock,
    /// A lost connection noticed.
    Disconnect,
    /// Standing by to resume, when the server said it would keep us.
    Standby,
}

/// Whether this client is in a server's game as a player.
pub(crate) fn in_game(status: Res<ConnectionStatus>, local: Query<(), With<LocalPlayer>>) -> bool {
    status.is_connected() && !local.is_empty()
}

/// Whether this client is in a server's game as a spectator.
pub(crate) fn watching(status: Res<ConnectionStatus>, watching: Option<Res<Watching>>) -> bool {
    status.is_connected() && watching.is_some()
}

/// Whether this client is in a server's game as a player with a transport to send on
/// (between sessions there is none). A condition per system, not per set: a set's
/// condition does not spare its systems' parameter checks.
pub(crate) fn playing(
    status: Res<ConnectionStatus>,
    local: Query<(), With<LocalPlayer>>,
    client: Option<Res<RenetClient>>,
) -> bool {
    client.is_some() && in_game(status, local)
}
