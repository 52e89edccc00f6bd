//! The player's own changes while connected: a new `name` is told to the server, which
//! takes it with the checks of joining or says why not.

use crate::DesiredName;
use crate::status::ConnectionStatus;
use bevy::prelude::*;
use sightline_net::RenetClient;
use sightline_protocol::{Channel, ClientMessage, MAX_NAME_LEN, clean_text};
use sightline_sim::SessionAppExt;

/// The name last told to the server (in the Hello, or since): `None` before the Welcome.
#[derive(Resource, Debug, Default)]
pub(crate) struct NameTold(Option<String>);

/// Tells the server a name the player chose after joining.
pub(crate) fn tell_name(
    name: Res<DesiredName>,
    status: Res<ConnectionStatus>,
    mut told: ResMut<NameTold>,
    client: Option<ResMut<RenetClient>>,
) {
    let (Some(mut client), true) = (client, status.is_connected()) else {
        return;
    };
    // Cleaned as the Hello's is, so an edit that cleans to the same name is no rename.
    let wanted = clean_text(&name.0, MAX_NAME_LEN);
    match &told.0 {
        // The Hello carried the name the player joined with.
        None => told.0 = Some(wanted),
        Some(said) if *said == wanted || wanted.is_empty() => {}
        Some(_) => {
            let msg = ClientMessage::Rename {
                name: wanted.clone(),
            };
            crate::send_to_server(&mut client, Channel::Reliable, &msg);
            told.0 = Some(wanted);
        }
    }
}

/// Renames told to the server.
pub(crate) struct ChangesPlugin;

impl Plugin for ChangesPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<NameTold>()
            .add_systems(Update, tell_name.run_if(resource_exists::<DesiredName>));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_name_changed_after_joining_is_told() {
        let mut server = sightline_net::RenetServer::new(sightline_protocol::connection_config());
        let mut app = App::new();
        app.insert_resource(DesiredName("ann".into()))
            .insert_resource(ConnectionStatus::Connected(crate::ServerInfo {
                welcome: sightline_protocol::Welcome {
                    protocol_version: sightline_protocol::PROTOCOL_VERSION,
                    tick_hz: 64,
                    snapshot_hz: 32,
                    server_name: "s".into(),
                    map_name: "duel".into(),
                    map_hash: 0,
                    your_id: None,
                    resume: [0; 16],
                },
            }))
            .insert_resource(RenetClient(server.new_local_client(1)))
            .init_resource::<NameTold>()
            .add_systems(Update, tell_name);
        let mut renames = |app: &mut App| {
            let client = &mut *app.world_mut().resource_mut::<RenetClient>();
            server.process_local_client(1, &mut client.0).unwrap();
            let mut names = Vec::new();
            while let Some(bytes) = server.receive_message(1, Channel::Reliable) {
                if let Ok(ClientMessage::Rename { name }) =
                    <ClientMessage as sightline_protocol::Wire>::decode(&bytes)
                {
                    names.push(name);
                }
            }
            names
        };
        app.update();
        assert!(renames(&mut app).is_empty(), "the Hello said it");
        app.world_mut().resource_mut::<DesiredName>().0 = " ann ".into();
        app.update();
        assert!(renames(&mut app).is_empty(), "the same name, cleaned");
        app.world_mut().resource_mut::<DesiredName>().0 = "bob".into();
        app.update();
        app.update();
        assert_eq!(renames(&mut app), ["bob"], "told once");
    }
}
