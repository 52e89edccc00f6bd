//! The connect-token exchange: before it speaks netcode over UDP, a client asks the server
//! for a short-lived connect token over TCP on the game's port number. TCP's handshake
//! proves the client's address, so tokens (and the player slots they lead to) cannot be
//! requested from forged addresses.
//!
//! Each message travels as a two-byte big-endian length and then its bincode encoding.

use crate::codec::{DecodeError, Wire};
use serde::{Deserialize, Serialize};

/// Longest server password, in bytes.
pub const MAX_PASSWORD_LEN: usize = 64;
/// Largest connect token the server hands out, in bytes (netcode's own encoding: about
/// 1.2 kB with one server address).
pub const MAX_TOKEN_BYTES: usize = 2048;

/// A client asks for a connect token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRequest {
    /// The client's [`crate::PROTOCOL_VERSION`]. Must stay the first field.
    pub protocol_version: u32,
    /// The server's password, empty for a public server.
    pub password: String,
}

impl Wire for TokenRequest {
    const MAX_BYTES: usize = 8 + MAX_PASSWORD_LEN;

    fn validate(&self) -> Result<(), DecodeError> {
        if self.password.len() > MAX_PASSWORD_LEN {
            return Err(DecodeError::Invalid("password too long".into()));
        }
        Ok(())
    }
}

/// The server's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenReply {
    /// A connect token in netcode's encoding, valid for a few seconds.
    Granted {
        /// The token.
        token: Vec<u8>,
    },
    /// No token, and why (wrong password, too many connections from this address...).
    Refused {
        /// Why, in words.
        reason: String,
    },
}

impl Wire for TokenReply {
    const MAX_BYTES: usize = 4 + MAX_TOKEN_BYTES;

    fn validate(&self) -> Result<(), DecodeError> {
        match self {
            Self::Granted { token } if token.len() > MAX_TOKEN_BYTES => {
                Err(DecodeError::Invalid("token too long".into()))
            }
            Self::Granted { .. } => Ok(()),
            Self::Refused { reason } => {
                if reason.len() > crate::MAX_CHAT_LEN || reason.chars().any(char::is_control) {
                    Err(DecodeError::Invalid("bad refusal reason".into()))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Frames an encoded message: its length as two big-endian bytes, then the bytes.
/// `None` when it is too long to frame (no capped message is).
pub fn frame(bytes: &[u8]) -> Option<Vec<u8>> {
    let len = u16::try_from(bytes.len()).ok()?;
    let mut out = Vec::with_capacity(bytes.len() + 2);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
    Some(out)
}

/// What the start of a stream holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framed {
    /// Not all of the frame yet.
    Incomplete,
    /// A whole frame of this many bytes follows the two-byte length.
    Complete(usize),
    /// The announced length exceeds `max`: the peer is not speaking this protocol.
    TooLarge,
}

/// Looks for a whole frame of at most `max` bytes at the start of `buffer`.
pub fn framed(buffer: &[u8], max: usize) -> Framed {
    let [a, b, rest @ ..] = buffer else {
        return Framed::Incomplete;
    };
    let len = u16::from_be_bytes([*a, *b]) as usize;
    if len > max {
        Framed::TooLarge
    } else if rest.len() < len {
        Framed::Incomplete
    } else {
        Framed::Complete(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_through_frames() {
        let req = TokenRequest {
            protocol_version: 4,
            password: "hunter2".into(),
        };
        let framed_req = frame(&req.encode().unwrap()).unwrap();
        let Framed::Complete(len) = framed(&framed_req, TokenRequest::MAX_BYTES) else {
            panic!("whole frame expected");
        };
        assert_eq!(TokenRequest::decode(&framed_req[2..2 + len]), Ok(req));
        assert_eq!(
            framed(&framed_req[..framed_req.len() - 1], TokenRequest::MAX_BYTES),
            Framed::Incomplete
        );
        let reply = TokenReply::Granted {
            token: vec![7; MAX_TOKEN_BYTES],
        };
        assert_eq!(TokenReply::decode(&reply.encode().unwrap()), Ok(reply));
    }

    #[test]
    fn oversized_frames_and_fields_are_refused() {
        // "GE" of an HTTP request reads as a length of 18245.
        assert_eq!(
            framed(b"GET / HTTP/1.1", TokenRequest::MAX_BYTES),
            Framed::TooLarge
        );
        let long = TokenRequest {
            protocol_version: 4,
            password: "x".repeat(MAX_PASSWORD_LEN + 1),
        };
        let bytes = bincode::serde::encode_to_vec(&long, bincode::config::standard()).unwrap();
        assert!(TokenRequest::decode(&bytes).is_err());
        let bad = TokenReply::Refused {
            reason: "a\u{7}b".into(),
        };
        let bytes = bincode::serde::encode_to_vec(&bad, bincode::config::standard()).unwrap();
        assert!(TokenReply::decode(&bytes).is_err());
    }
}
