//! The unreliable channel's two messages: what a client sends (inputs, pings) and what
//! the server sends (snapshots, pongs), each wrapped so one channel carries both.

use crate::cmds::InputPacket;
use crate::codec::{DecodeError, Wire};
use crate::delta::SnapshotPacket;
use serde::{Deserialize, Serialize};
use sightline_combat::WeaponKind;

/// Unreliable messages from a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientDatagram {
    /// This tick's input, with redundancy.
    Input(InputPacket),
    /// A clock-sync probe; the server answers at once with [`ServerDatagram::Pong`].
    Ping {
        /// The client's clock when sent, microseconds.
        client_time_us: u64,
    },
    /// A spectator's acknowledgement of the newest snapshot it holds, which players carry
    /// in their input packets: later snapshots are written as changes from it.
    Ack {
        /// The snapshot's number.
        snapshot: u32,
    },
}

impl Wire for ClientDatagram {
    const MAX_BYTES: usize = InputPacket::MAX_BYTES + 4;

    fn validate(&self) -> Result<(), DecodeError> {
        match self {
            Self::Input(p) => p.validate(),
            Self::Ping { .. } | Self::Ack { .. } => Ok(()),
        }
    }
}

/// The weapons the server holds for a client's own player after the last of its
/// commands it simulated, sent once a second: snapshots carry only the weapon in hand and its
/// magazine, so this is how a client learns its predicted weapons (timers, every
/// magazine and reserve) drifted from the server's, and takes the server's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WeaponCheck {
    /// The last of the client's commands the server simulated.
    pub ack_input_seq: u32,
    /// The server tick it was taken at.
    pub tick: u32,
    /// The weapon in hand.
    pub current: WeaponKind,
    /// Seconds left bringing it up, until the next shot, reloading, charging.
    pub timers: [f32; 4],
    /// Whether the last command held alternate fire.
    pub alt_held: bool,
    /// Weapons held, as [`WeaponKind::bit`]s.
    pub owned: u8,
    /// (magazine, reserve) of each weapon, in [`WeaponKind::ALL`] order.
    pub ammo: [(u16, u16); WeaponKind::ALL.len()],
}

/// Longest a weapon timer runs, seconds: a railgun's charge and reload are a few seconds.
const MAX_WEAPON_TIMER: f32 = 60.0;

impl WeaponCheck {
    fn validate(&self) -> Result<(), DecodeError> {
        let timers_ok = self
            .timers
            .iter()
            .all(|t| t.is_finite() && (-1.0..=MAX_WEAPON_TIMER).contains(t));
        let all = WeaponKind::ALL.iter().fold(0, |b, w| b | w.bit());
        if !timers_ok || self.owned & !all != 0 {
            return Err(DecodeError::Invalid("weapon check out of range".into()));
        }
        Ok(())
    }
}

/// Unreliable messages from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ServerDatagram {
    /// The world after a tick, as changes from a snapshot the client holds.
    Snapshot(SnapshotPacket),
    /// Answer to a ping.
    Pong {
        /// The client's time from the ping, echoed.
        client_time_us: u64,
        /// The server's clock when it answered, microseconds (the same clock snapshots'
        /// `server_time_us` is measured on).
        server_time_us: u64,
    },
    /// The client's own weapons as the server has them.
    WeaponCheck(WeaponCheck),
}

impl Wire for ServerDatagram {
    /// A variant tag, the packet's length and the packet.
    const MAX_BYTES: usize = SnapshotPacket::MAX_BYTES + crate::coder::RAW_OVERHEAD + 4;

    fn validate(&self) -> Result<(), DecodeError> {
        match self {
            // Its form is checked as it is read; what it resolves to, once resolved.
            Self::Snapshot(_) => Ok(()),
            Self::Pong { .. } => Ok(()),
            Self::WeaponCheck(c) => c.validate(),
        }
    }
}
