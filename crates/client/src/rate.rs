//! What this client's downlink takes: `rate`, the most bytes a second (0: no limit), as
//! in Quake and Source, and `cl_updaterate`, the snapshots a second asked for, as in
//! Source. The server keeps its snapshots within the bytes by updating far players less
//! often, and sends the snapshots asked for where the bytes carry them; this client
//! tells it both on joining and whenever either changes.

use crate::sets::playing;
use bevy::prelude::*;
use sightline_net::RenetClient;
use sightline_protocol::{Channel, ClientMessage};
use sightline_sim::SessionAppExt;

/// Snapshots a second a client asks for unless told otherwise: a 128 Hz server's every
/// tick, which the server sends only where the client's `rate` carries it.
pub const DEFAULT_UPDATE_RATE: u32 = 128;

/// `rate`: bytes a second the server may send us, UDP/IP headers included (0: no limit).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DownloadRate(pub u32);

/// `cl_updaterate`: snapshots a second we ask the server for (0: the server's choice).
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateRate(pub u32);

impl Default for UpdateRate {
    fn default() -> Self {
        Self(DEFAULT_UPDATE_RATE)
    }
}

/// The rate and update rate the server was last told this session (`None`: nothing
/// yet, which it takes as no limit at its own snapshot rate).
#[derive(Resource, Debug, Default)]
pub(crate) struct RateTold(Option<(u32, u32)>);

/// Tells the server our rate and update rate when they differ from what it was last
/// told.
pub(crate) fn tell_rate(
    rate: Res<DownloadRate>,
    update: Res<UpdateRate>,
    mut told: ResMut<RateTold>,
    mut client: ResMut<RenetClient>,
) {
    let now = (rate.0, update.0);
    if told.0 == Some(now) || (told.0.is_none() && now == (0, 0)) {
        return;
    }
    let msg = ClientMessage::Rate {
        bytes_per_second: rate.0,
        snapshots_per_second: update.0,
    };
    crate::send_to_server(&mut client, Channel::Reliable, &msg);
    told.0 = Some(now);
}

/// The download rate this client asks for, told to the server when it changes.
pub(crate) struct RatePlugin;

impl Plugin for RatePlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<DownloadRate>()
            .init_resource::<UpdateRate>()
            .init_session_resource::<RateTold>()
            .add_systems(Update, tell_rate.run_if(playing));
    }
}
