//! Sightline's connect tokens, without Bevy: what the server's token service and a
//! matchmaker holding the server's key (`--key-file`) both need, and nothing else.
//!
//! The model is netcode.io's: a connect token is sealed with a key only the server (and
//! a matchmaker it trusts) holds; it names a client id the server chose, expires within
//! seconds, carries the keys that encrypt the session, and here, in its user data, the
//! address it was issued to, which the server checks against where the handshake comes
//! from.

// Keys as text and in files; then tokens sealed with them, and requests opened.
mod keyfile;
mod seal;

pub use keyfile::{hex, load_key_file, parse_key, write_new_key_file};
pub use renetcode::{ConnectToken, NETCODE_KEY_BYTES, NETCODE_USER_DATA_BYTES};
#[doc(hidden)]
pub use seal::connection_request;
pub use seal::{
    CONNECTION_REQUEST_BYTES, CONNECTION_TIMEOUT_SECONDS, NETCODE_PROTOCOL_ID,
    TOKEN_EXPIRE_SECONDS, address_user_data, issue_token, request_address, user_data_matches,
};

/// Sixteen unguessable bytes from the operating system's generator (through netcode's
/// crypto), for secrets such as a player's resume secret or a matchmaker's client ids.
pub fn random_secret() -> [u8; 16] {
    renetcode::generate_random_bytes()
}
