//! The network graph, after Source's `net_graph` and Quake 3's lagometer: `cl_netgraph 1`
//! shows text (ping, snapshot rate and gaps, interpolation delay, command rate,
//! reconciliations, clock offset, bandwidth, server tick time, frame time), `2` adds rolling
//! graphs: one bar per snapshot (green interpolated, yellow extrapolated, red after a gap),
//! prediction corrections, and ping. The text repaints at 10 Hz so it can be read.

mod draw;
mod gather;
mod stats;

pub use gather::Netgraph;
pub use stats::{History, RateMeter, SnapshotBar};

use bevy::prelude::*;
use bevy_egui::EguiPrimaryContextPass;
use sightline_sim::SessionAppExt;

/// What the graph shows: 0 nothing, 1 text, 2 text and graphs (`cl_netgraph`).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NetgraphMode(pub u8);

/// Draws the network graph when [`NetgraphMode`] is 1 or 2.
pub struct NetgraphPlugin;

impl Plugin for NetgraphPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<NetgraphMode>()
            .init_session_resource::<Netgraph>()
            // Its counters are differences against the client's, which start again at zero.
            .add_systems(Update, gather::gather)
            .add_systems(EguiPrimaryContextPass, draw::draw);
    }
}
