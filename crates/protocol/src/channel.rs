//! The renet channels and their limits.

use renet::{ChannelConfig, ConnectionConfig, SendType};
use std::time::Duration;

/// Which renet channel a message travels on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Channel {
    /// Reliable and ordered: handshake, chat, game events.
    Reliable = 0,
    /// Unreliable: input packets (client to server) and snapshots (server to client).
    /// Both are sent every tick and carry redundancy, so a resend would only be stale.
    Unreliable = 1,
}

impl From<Channel> for u8 {
    fn from(c: Channel) -> u8 {
        c as u8
    }
}

/// The channel layout both sides must use.
pub fn connection_config() -> ConnectionConfig {
    let channels = vec![
        ChannelConfig {
            channel_id: Channel::Reliable.into(),
            max_memory_usage_bytes: 1024 * 1024,
            send_type: SendType::ReliableOrdered {
                resend_time: Duration::from_millis(100),
            },
        },
        ChannelConfig {
            channel_id: Channel::Unreliable.into(),
            max_memory_usage_bytes: 2 * 1024 * 1024,
            send_type: SendType::Unreliable,
        },
    ];
    ConnectionConfig {
        available_bytes_per_tick: 256 * 1024,
        server_channels_config: channels.clone(),
        client_channels_config: channels,
    }
}
