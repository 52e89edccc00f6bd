//! Encoding and checked decoding.

use serde::{Serialize, de::DeserializeOwned};
use std::fmt;

/// Why received bytes were dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Longer than this message type may ever be.
    TooLarge {
        /// Bytes received.
        len: usize,
        /// The cap for this message type.
        max: usize,
    },
    /// Not a valid encoding (truncated, bad enum tag, bad UTF-8...).
    Malformed(String),
    /// A valid message followed by extra bytes.
    TrailingBytes(usize),
    /// Decoded, but a value is out of range or not finite.
    Invalid(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the {max}-byte cap")
            }
            Self::Malformed(e) => write!(f, "malformed message: {e}"),
            Self::TrailingBytes(n) => write!(f, "{n} unexpected bytes after the message"),
            Self::Invalid(e) => write!(f, "invalid message: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a message could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// Larger than this message type may ever be, so no peer would accept it.
    TooLarge {
        /// Bytes it would take.
        len: usize,
        /// The cap for this message type.
        max: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the {max}-byte cap")
            }
        }
    }
}

impl std::error::Error for EncodeError {}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
}

/// A message type with a size cap and a validity check, encoded with bincode.
pub trait Wire: Serialize + DeserializeOwned {
    /// Largest encoded size accepted.
    const MAX_BYTES: usize;

    /// Checks ranges, lengths and finiteness after decoding.
    fn validate(&self) -> Result<(), DecodeError>;

    /// Encodes the message, refusing one above [`Self::MAX_BYTES`]: the receiver would
    /// drop it, so the sender must know (in every build profile).
    fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let bytes =
            bincode::serde::encode_to_vec(self, config()).expect("encoding into a Vec cannot fail");
        if bytes.len() > Self::MAX_BYTES {
            return Err(EncodeError::TooLarge {
                len: bytes.len(),
                max: Self::MAX_BYTES,
            });
        }
        Ok(bytes)
    }

    /// Decodes and validates untrusted bytes.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        if bytes.len() > Self::MAX_BYTES {
            return Err(DecodeError::TooLarge {
                len: bytes.len(),
                max: Self::MAX_BYTES,
            });
        }
        // The length check above bounds every allocation the decoder can make, since
        // lengths inside the message cannot exceed the bytes that carry them.
        let config = bincode::config::standard().with_limit::<65536>();
        let (msg, used): (Self, usize) = bincode::serde::decode_from_slice(bytes, config)
            .map_err(|e| DecodeError::Malformed(e.to_string()))?;
        if used != bytes.len() {
            return Err(DecodeError::TrailingBytes(bytes.len() - used));
        }
        msg.validate()?;
        Ok(msg)
    }
}

/// Reads just the protocol version from a Welcome message. The Welcome variant and its
/// first field never change between versions, so a client can name the server's version
/// even when it cannot decode the rest.
pub fn peek_welcome_version(bytes: &[u8]) -> Option<u32> {
    let (tag_and_version, _): ((u32, u32), usize) =
        bincode::serde::decode_from_slice(bytes, config()).ok()?;
    (tag_and_version.0 == 0).then_some(tag_and_version.1)
}
