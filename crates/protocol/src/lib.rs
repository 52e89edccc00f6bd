//! Sightline's wire protocol: the messages client and server exchange, how they are
//! encoded (serde + bincode 2, little-endian varints), the size cap and validation every
//! decode goes through, and the renet channels they travel on.
//!
//! Version history: 1, the first; 2, unreliable traffic wrapped in [`ClientDatagram`] and
//! [`ServerDatagram`] to carry clock-sync pings beside inputs and snapshots; 3, combat:
//! health, weapons and rockets in snapshots, combat events, the scoreboard, and the view
//! time in input commands for lag compensation; 4, connect tokens over TCP
//! ([`TokenRequest`], [`TokenReply`]), a resume secret in [`Welcome`] and Hello for
//! players coming back after a dropped connection, full scoreboards of 64 players; 5,
//! weapons, teams and game modes as enums (an unknown value fails to decode) instead of
//! bytes checked by hand; 6, input packets carry every unacknowledged command within a
//! window (up to [`MAX_PACKET_CMDS`]), each encoded against the next ([`cmds`]), and each
//! player's state its spawn count ([`PlayerSnap::spawn_count`]), so a respawn or a new
//! match is known for a teleport rather than taken for movement; 7, the count of pushes
//! a player took; 8, combat events stamped with their tick; 9, player states as grid
//! integers; 10, snapshots sent as changes from one the client acknowledged ([`delta`]);
//! 11, input packets written against a command the server already holds ([`cmds`]: the
//! base named by its offset from the acknowledged snapshot's), view times in steps of
//! 1/256 tick, and others' view angles and velocities in coarser steps than a player's own
//! ([`OTHERS_ANGLE_STEP`], [`OTHERS_VEL_STEP`]); 12, the token exchange encrypted and
//! authenticated (X25519 with the server's static key, SPAKE2 for the password, which no
//! longer travels; it opens with [`TOKEN_EXCHANGE_MAGIC`]: see [`token`]), a player's
//! `rcon` line ([`ClientMessage::Rcon`]) and the server's own words
//! ([`ServerMessage::ServerText`]: the host's `say`, the message of the day, rcon output);
//! 13 to 18 as the git history tells; 19, a client's own weapons once a second
//! ([`WeaponCheck`]), so a prediction of them that drifted is found and corrected; 20,
//! spectators ([`ClientMessage::Spectate`], [`ClientMessage::Follow`], their
//! acknowledgements in [`ClientDatagram::Ack`], and no player in their [`Welcome`]); 21,
//! the ticks the server held a player waiting for its client's command, among its
//! [`Touches`]; 22 to 29 as the git history tells; 30, snapshots entropy-coded against a
//! model trained on recorded fights ([`coder`]); 31, input packets' commands coded bit by
//! bit at trained odds ([`coder::binary`], [`cmds`]).
//!
//! Decoding never trusts the sender: oversized, truncated, trailing-garbage, out-of-range
//! and non-finite inputs all come back as a [`DecodeError`] for the caller to drop and
//! count.

pub mod bits;
pub mod bytes;
mod channel;
pub mod cmds;
mod codec;
pub mod coder;
mod datagrams;
pub mod delta;
mod messages;
mod text;
pub mod token;

#[cfg(test)]
mod tests;

pub use channel::{Channel, connection_config};
pub use cmds::{CmdsError, INPUT_BASE_SPAN, InputPacket, MAX_PACKET_CMDS};
pub use codec::{DecodeError, EncodeError, Wire, peek_welcome_version};
pub use datagrams::{ClientDatagram, ServerDatagram, WeaponCheck};
pub use delta::{
    CLIENT_BASELINES, MAX_BASELINE_AGE, OTHERS_ANGLE_STEP, OTHERS_VEL_STEP, SnapshotHistory,
    SnapshotPacket, Unresolved,
};
pub use messages::{
    Award, AwardKind, ClientMessage, DropSnap, EventSnap, FlagSpot, KIT_QUAD, KIT_REGEN,
    KIT_WEAPONS, Lifetime, MAX_AWARDS, MAX_CHAT_LEN, MAX_NAME_LEN, MAX_RCON_COMMAND_LEN,
    MAX_RCON_PASSWORD_LEN, MAX_SERVER_NAME_LEN, MAX_SNAPSHOT_DROPS, MAX_SNAPSHOT_EVENTS,
    MAX_SNAPSHOT_PLAYERS, MAX_SNAPSHOT_PROJECTILES, MatchReport, PlayerEvent, PlayerKey,
    PlayerSnap, ProjectileSnap, ResumeSecret, ScoreLine, ServerMessage, ServerTextKind, Snapshot,
    TeamChoice, Touches, VoteProposal, VoteTally, Warmup, Welcome, kit,
};
pub use text::{RESERVED_NAMES, clean_text, is_reserved_name, name_key};
pub use token::{
    CLIENT_FINISH_MAX_BYTES, CLIENT_HELLO_BYTES, EXCHANGE_KEY_BYTES, ExchangeTag, Framed,
    MAX_PASSWORD_LEN, MAX_TOKEN_BYTES, SEAL_TAG_BYTES, SERVER_FRAME_MAX_BYTES, SERVER_HELLO_BYTES,
    SPAKE2_MESSAGE_BYTES, TOKEN_EXCHANGE_MAGIC, TOKEN_EXCHANGE_VERSION, TokenReply, TokenRequest,
    frame, framed,
};

/// Version of this protocol; a client and server must agree on it exactly.
pub const PROTOCOL_VERSION: u32 = 31;
