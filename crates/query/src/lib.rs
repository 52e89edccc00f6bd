//! Finding Sightline servers, without Bevy: Valve's A2S server queries (info, players,
//! rules) answered by the game server and asked by the browser, LAN discovery by
//! broadcast, and the master list protocol (the game server's announcer, the master's
//! state, the browser's list fetch), and the Source RCON packet hosting tools send.
//!
//! Everything from the network is hostile: decoders are total, buffers bounded, and no
//! reply larger than its request goes to an address that has not echoed a challenge, so
//! neither the game server nor the master can be used to amplify a flood. Budgets of
//! replies a second, shared by host, network and everyone ([`sightline_limits::Shares`]),
//! bound what a flood costs and whom it costs.

mod a2s;
mod announcer;
mod client;
mod guard;
mod lan;
mod master;
pub mod master_protocol;
mod rcon_packet;
mod responder;
mod screen;
mod server_list;
mod split;
mod wire;

pub use a2s::{
    GAME_FOLDER, GAME_NAME, PlayerInfo, Request, Response, ServerInfo, decode_request,
    decode_response, encode_challenge, encode_info, encode_players, encode_request, encode_rules,
    is_connectionless,
};
pub use announcer::{Announcer, HEARTBEAT_INTERVAL};
pub use client::{MAX_IN_FLIGHT, QueryError, query_info, query_many, query_players, query_rules};
pub use lan::{LAN_PORTS, discover_lan, discover_on};
pub use master::{Master, MasterConfig, MasterStats, Refusals};
pub use master_protocol::{DEFAULT_MASTER_PORT, MASTER_PROTOCOL};
pub use rcon_packet::{
    MAX_REQUEST_SIZE, RconPacket, SERVERDATA_AUTH, SERVERDATA_AUTH_RESPONSE,
    SERVERDATA_EXECCOMMAND, SERVERDATA_RESPONSE_VALUE,
};
pub use responder::{
    Answer, CHALLENGE_EPOCH, DropReason, QuerySource, Responder, ResponderConfig, ResponderStats,
};
pub use screen::{
    ListScreen, MAX_ASKED, MAX_PER_HOST, MAX_PER_LIST, MAX_PER_NETWORK, Reach, Skipped,
};
pub use server_list::{MAX_LISTED, fetch_server_list};
pub use sightline_limits::{Rate, ShareRates};
pub use split::{
    MAX_MESSAGE, MAX_PACKET, MAX_SPLIT_PACKETS, Reassembly, SPLIT_PAYLOAD, is_split, split,
};
pub use wire::{DecodeError, is_transient};
