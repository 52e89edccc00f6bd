//! The connect-token exchange: before it speaks netcode over UDP, a client asks the server
//! for a short-lived connect token over TCP on the game's port number. TCP's handshake
//! proves the client's address, so tokens (and the player slots they lead to) cannot be
//! requested from forged addresses.
//!
//! The exchange is encrypted and authenticated (the keys and checks are
//! `sightline_net`'s; the layout is here). Four messages:
//!
//! 1. client: [`TOKEN_EXCHANGE_MAGIC`], [`TOKEN_EXCHANGE_VERSION`], its ephemeral X25519
//!    public key (32 bytes) and its SPAKE2 message (33 bytes): [`CLIENT_HELLO_BYTES`] in
//!    all, unframed, so the listener can tell it from other protocols by its first bytes.
//! 2. server, framed: [`ExchangeTag::ServerHello`], its static public key, its ephemeral
//!    public key, its SPAKE2 message and its key confirmation (32 bytes each but SPAKE2's
//!    33): [`SERVER_HELLO_BYTES`]; or [`ExchangeTag::Clear`] and a [`TokenReply::Refused`]
//!    in the clear, for what is refused before any key exists (a ban, the rate).
//! 3. client, framed: its key confirmation (32 bytes), then the sealed [`TokenRequest`]
//!    (its encoding and a 16-byte tag).
//! 4. server, framed: [`ExchangeTag::Sealed`] and the sealed [`TokenReply`]; or
//!    [`ExchangeTag::Clear`] and a refusal when the client's confirmation is wrong.
//!
//! A frame is a two-byte big-endian length and then that many bytes.

use crate::codec::{DecodeError, Wire};
use serde::{Deserialize, Serialize};

/// Longest server password, in bytes.
pub const MAX_PASSWORD_LEN: usize = 64;
/// Largest connect token the server hands out, in bytes (netcode's own encoding: about
/// 1.2 kB with one server address).
pub const MAX_TOKEN_BYTES: usize = 2048;

/// The first bytes of a token exchange: what tells it apart from the other protocols
/// the server's TCP port serves (Source RCON).
pub const TOKEN_EXCHANGE_MAGIC: [u8; 4] = *b"SLTX";
/// The token exchange's own version, after the magic: the keys and checks cannot be
/// versioned inside the encrypted request.
pub const TOKEN_EXCHANGE_VERSION: u8 = 1;
/// Size of an X25519 public key, and of a key confirmation (HMAC-SHA256).
pub const EXCHANGE_KEY_BYTES: usize = 32;
/// Size of a SPAKE2 message (Ed25519 group: a side byte and a point).
pub const SPAKE2_MESSAGE_BYTES: usize = 33;
/// Size of an AEAD tag (ChaCha20-Poly1305).
pub const SEAL_TAG_BYTES: usize = 16;
/// The client's first message: magic, version, ephemeral key, SPAKE2 message.
pub const CLIENT_HELLO_BYTES: usize = 4 + 1 + EXCHANGE_KEY_BYTES + SPAKE2_MESSAGE_BYTES;
/// The server's first answer, after its tag: static key, ephemeral key, SPAKE2 message,
/// key confirmation.
pub const SERVER_HELLO_BYTES: usize = 3 * EXCHANGE_KEY_BYTES + SPAKE2_MESSAGE_BYTES;
/// Largest frame the client sends second: confirmation and sealed request.
pub const CLIENT_FINISH_MAX_BYTES: usize =
    EXCHANGE_KEY_BYTES + TokenRequest::MAX_BYTES + SEAL_TAG_BYTES;
/// Largest frame the server sends: a tag and a sealed reply.
pub const SERVER_FRAME_MAX_BYTES: usize = 1 + TokenReply::MAX_BYTES + SEAL_TAG_BYTES;

/// What a frame from the server holds, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeTag {
    /// A [`TokenReply`] in the clear; the client accepts only a refusal this way.
    Clear = 0,
    /// The server's hello (keys, SPAKE2 message, confirmation).
    ServerHello = 1,
    /// A sealed [`TokenReply`].
    Sealed = 2,
}

impl ExchangeTag {
    /// The tag a byte names, if any.
    pub fn of(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::Clear),
            1 => Some(Self::ServerHello),
            2 => Some(Self::Sealed),
            _ => None,
        }
    }
}

/// A client asks for a connect token (sealed; the password never travels, it is proven
/// by the exchange).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRequest {
    /// The client's [`crate::PROTOCOL_VERSION`]. Must stay the first field.
    pub protocol_version: u32,
}

impl Wire for TokenRequest {
    const MAX_BYTES: usize = 8;

    fn validate(&self) -> Result<(), DecodeError> {
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
        assert!(TokenRequest::decode(&[4, 0]).is_err(), "trailing bytes");
        let bad = TokenReply::Refused {
            reason: "a\u{7}b".into(),
        };
        let bytes = bincode::serde::encode_to_vec(&bad, bincode::config::standard()).unwrap();
        assert!(TokenReply::decode(&bytes).is_err());
    }
}
