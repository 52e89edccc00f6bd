//! A client of this process that speaks the protocol by hand over real UDP.

use bevy::prelude::*;
use sightline_net::{ClientNetPlugin, ClientSecurity, RenetClient, UdpClientTransport};
use sightline_protocol::{
    Channel, ClientDatagram, ClientMessage, InputPacket, PROTOCOL_VERSION, ServerMessage, Snapshot,
    Welcome, Wire,
};
use sightline_sim::InputCmd;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A client of this process that speaks the protocol by hand over real UDP.
pub(crate) struct Attacker {
    pub(crate) app: App,
}

impl Attacker {
    pub(crate) fn connect(server: SocketAddr, security: &ClientSecurity) -> Self {
        Self::with(ClientNetPlugin::udp(server, security).expect("socket opens"))
    }

    pub(crate) fn with_transport(transport: UdpClientTransport) -> Self {
        Self::with(ClientNetPlugin::from_transport(transport))
    }

    pub(crate) fn with(net: ClientNetPlugin) -> Self {
        let mut app = App::new();
        app.add_plugins((TaskPoolPlugin::default(), bevy::time::TimePlugin, net));
        app.finish();
        app.cleanup();
        Self { app }
    }

    /// Runs the app for a while, about 250 frames a second.
    pub(crate) fn pump(&mut self, seconds: f64) {
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        while Instant::now() < end {
            self.app.update();
            std::thread::sleep(Duration::from_millis(4));
        }
    }

    /// Pumps until connected; false if the transport gave up or time ran out.
    pub(crate) fn connected(&mut self, limit: f64) -> bool {
        let end = Instant::now() + Duration::from_secs_f64(limit);
        while Instant::now() < end {
            self.pump(0.02);
            let client = self.app.world().resource::<RenetClient>();
            if client.is_connected() {
                return true;
            }
            if client.is_disconnected() {
                return false;
            }
        }
        false
    }

    pub(crate) fn client(&mut self) -> Mut<'_, RenetClient> {
        self.app.world_mut().resource_mut::<RenetClient>()
    }

    pub(crate) fn send(&mut self, channel: Channel, bytes: Vec<u8>) {
        self.client().send_message(channel, bytes);
    }

    pub(crate) fn hello(&mut self, name: &str) {
        let hello = ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: name.into(),
            resume: None,
            player_key: None,
        };
        self.send(Channel::Reliable, hello.encode().unwrap());
    }

    /// Reliable messages received since last asked (junk from a server would panic).
    pub(crate) fn reliable(&mut self) -> Vec<ServerMessage> {
        let mut client = self.client();
        std::iter::from_fn(|| client.receive_message(Channel::Reliable))
            .map(|b| ServerMessage::decode(&b).expect("the server sends valid messages"))
            .collect()
    }

    /// Snapshots received since last asked.
    pub(crate) fn snapshots(&mut self) -> Vec<Snapshot> {
        crate::support::raw::received_snapshots(self.app.world_mut())
    }

    /// Says Hello and pumps until the Welcome, which it returns.
    pub(crate) fn join(&mut self, name: &str) -> Welcome {
        assert!(self.connected(10.0), "{name} could not connect");
        self.hello(name);
        for _ in 0..500 {
            self.pump(0.01);
            if let Some(welcome) = self.reliable().into_iter().find_map(|m| match m {
                ServerMessage::Welcome(w) => Some(w),
                _ => None,
            }) {
                return welcome;
            }
        }
        panic!("no Welcome for {name}");
    }

    /// Pumps until the server refuses it, returning why; `None` if it never does.
    pub(crate) fn refusal(&mut self, limit: f64) -> Option<String> {
        let end = Instant::now() + Duration::from_secs_f64(limit);
        while Instant::now() < end {
            self.pump(0.02);
            let refused = self.reliable().into_iter().find_map(|m| match m {
                ServerMessage::Refused { reason } => Some(reason),
                _ => None,
            });
            if refused.is_some() {
                return refused;
            }
        }
        None
    }

    pub(crate) fn input(&mut self, ack: u32, cmds: Vec<InputCmd>) {
        let packet = InputPacket::new(ack, 0, None, &cmds);
        let bytes = ClientDatagram::Input(packet).encode().unwrap();
        self.send(Channel::Unreliable, bytes);
    }
}

pub(crate) fn cmd(seq: u32) -> InputCmd {
    InputCmd {
        seq,
        forward: 1.0,
        ..Default::default()
    }
}
