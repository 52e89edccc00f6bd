//! `rate`: the most this client's downlink takes, bytes a second (0: no limit), as in
//! Quake and Source. The server keeps its snapshots within it by updating far players
//! less often; this client tells it the rate once in the game and whenever it changes.

use crate::sets::playing;
use bevy::prelude::*;
use sightline_net::RenetClient;
use sightline_protocol::{Channel, ClientMessage};
use sightline_sim::SessionAppExt;

/// `rate`: bytes a second the server may send us, UDP/IP headers included (0: no limit).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DownloadRate(pub u32);

/// The rate the server was last told this session (`None`: none, which it takes as no
/// limit).
#[derive(Resource, Debug, Default)]
pub(crate) struct RateTold(Option<u32>);

/// Tells the server our rate when it differs from what it was last told.
pub(crate) fn tell_rate(
    rate: Res<DownloadRate>,
    mut told: ResMut<RateTold>,
    mut client: ResMut<RenetClient>,
) {
    let unlimited_untold = told.0.is_none() && rate.0 == 0;
    if told.0 == Some(rate.0) || unlimited_untold {
        return;
    }
    let msg = ClientMessage::Rate {
        bytes_per_second: rate.0,
    };
    crate::send_to_server(&mut client, Channel::Reliable, &msg);
    told.0 = Some(rate.0);
}

/// The download rate this client asks for, told to the server when it changes.
pub(crate) struct RatePlugin;

impl Plugin for RatePlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<DownloadRate>()
            .init_session_resource::<RateTold>()
            .add_systems(Update, tell_rate.run_if(playing));
    }
}
