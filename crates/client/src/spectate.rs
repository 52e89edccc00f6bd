//! Watching instead of playing. A spectator's client says Spectate where a player's says
//! Hello, has no player of its own (every player is drawn from snapshots, as a player's
//! client draws the others), sends no input, acknowledges each snapshot in a datagram of
//! its own, and tells the server whom it follows, so the server can send it what that
//! player's client is sent. The server shows it the game `sv_spectator_delay` late.

use crate::sets::watching;
use crate::snapshots::LatestSnapshot;
use crate::status::Watching;
use bevy::prelude::*;
use sightline_net::RenetClient;
use sightline_protocol::{Channel, ClientDatagram, ClientMessage};
use sightline_sim::EndSession;

/// Acknowledges the newest snapshot once, as a player's input packets would: the server
/// writes later ones as changes from it.
pub(crate) fn acknowledge_snapshots(
    mut client: ResMut<RenetClient>,
    latest: Res<LatestSnapshot>,
    mut watching: ResMut<Watching>,
) {
    let Some(newest) = latest.0.as_ref().map(|s| s.seq) else {
        return;
    };
    if newest != watching.acked {
        watching.acked = newest;
        let ack = ClientDatagram::Ack { snapshot: newest };
        crate::send_to_server(&mut client, Channel::Unreliable, &ack);
    }
}

/// Tells the server whom this spectator follows, whenever that changes.
pub(crate) fn tell_follow(mut client: ResMut<RenetClient>, mut watching: ResMut<Watching>) {
    if watching.told != Some(watching.follow) {
        watching.told = Some(watching.follow);
        let follow = ClientMessage::Follow {
            target: watching.follow,
        };
        crate::send_to_server(&mut client, Channel::Reliable, &follow);
    }
}

/// A session over, this client no longer watches it.
pub(crate) fn stop_watching(mut commands: Commands) {
    commands.remove_resource::<Watching>();
}

/// Watching: snapshots acknowledged and the followed player told, and an end to it with
/// the session.
pub(crate) struct SpectatePlugin;

impl Plugin for SpectatePlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(EndSession, stop_watching).add_systems(
            Update,
            (acknowledge_snapshots, tell_follow)
                .run_if(watching.and_then(resource_exists::<RenetClient>)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::PlayerId;

    #[test]
    fn cycling_goes_round_the_players_present_in_id_order() {
        let ids = [PlayerId(5), PlayerId(1), PlayerId(3)];
        let mut w = Watching::default();
        w.cycle(&ids, 1);
        assert_eq!(w.follow, Some(PlayerId(1)), "from a free camera, the first");
        w.cycle(&ids, 1);
        w.cycle(&ids, 1);
        assert_eq!(w.follow, Some(PlayerId(5)));
        w.cycle(&ids, 1);
        assert_eq!(w.follow, Some(PlayerId(1)), "round again");
        w.cycle(&ids, -1);
        assert_eq!(w.follow, Some(PlayerId(5)), "and back");
        // The one followed left: start again from the first.
        w.cycle(&[PlayerId(1), PlayerId(3)], 1);
        assert_eq!(w.follow, Some(PlayerId(1)));
        w.cycle(&[], 1);
        assert_eq!(w.follow, None, "nobody to follow");
        w.cycle(&ids, -1);
        assert_eq!(
            w.follow,
            Some(PlayerId(5)),
            "from a free camera backwards, the last"
        );
    }
}
