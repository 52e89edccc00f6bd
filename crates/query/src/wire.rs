//! Byte-level helpers shared by the A2S and master codecs: a bounds-checked reader that
//! never panics, and capped null-terminated strings.

use std::fmt;

/// The four bytes every connectionless packet (A2S and master list) starts with.
pub const CONNECTIONLESS: [u8; 4] = [0xFF; 4];

/// Why bytes from the network were not a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The packet ended before a field did.
    Truncated,
    /// It does not start with `FF FF FF FF`.
    NotConnectionless,
    /// A packet of another type than the one expected (the type byte).
    UnexpectedType(u8),
    /// A field holds a value the format does not allow.
    Invalid(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated => write!(f, "packet truncated"),
            DecodeError::NotConnectionless => write!(f, "not a connectionless packet"),
            DecodeError::UnexpectedType(t) => write!(f, "unexpected packet type 0x{t:02x}"),
            DecodeError::Invalid(what) => write!(f, "invalid packet: {what}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Reads little-endian fields from a slice; every read is checked.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.bytes.len() {
            return Err(DecodeError::Truncated);
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn i32(&mut self) -> Result<i32, DecodeError> {
        self.array().map(i32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_le_bytes)
    }

    pub(crate) fn f32(&mut self) -> Result<f32, DecodeError> {
        self.array().map(f32::from_le_bytes)
    }

    /// A null-terminated string; invalid UTF-8 is replaced, not refused, as other
    /// servers' names are not ours to police.
    pub(crate) fn cstr(&mut self) -> Result<String, DecodeError> {
        let end = self
            .bytes
            .iter()
            .position(|&b| b == 0)
            .ok_or(DecodeError::Truncated)?;
        let text = String::from_utf8_lossy(&self.bytes[..end]).into_owned();
        self.bytes = &self.bytes[end + 1..];
        Ok(text)
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }
}

/// Appends `text` without NULs, cut to at most `cap` bytes on a character boundary, then
/// the terminating NUL.
pub(crate) fn put_cstr(out: &mut Vec<u8>, text: &str, cap: usize) {
    let mut len = 0;
    for ch in text.chars().filter(|&c| c != '\0') {
        if len + ch.len_utf8() > cap {
            break;
        }
        len += ch.len_utf8();
        let mut buf = [0; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
    out.push(0);
}

/// Strips a `FF FF FF FF` header, or says the packet has none.
pub(crate) fn strip_connectionless(bytes: &[u8]) -> Result<&[u8], DecodeError> {
    bytes
        .strip_prefix(&CONNECTIONLESS)
        .ok_or(DecodeError::NotConnectionless)
}

/// Whether a UDP receive error says nothing about the socket: no datagram yet, a
/// timeout, a signal, or (on Windows) the ICMP answer to an earlier send to some other
/// address. A loop reading a socket goes on after these.
pub fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::WouldBlock
            | ErrorKind::TimedOut
            | ErrorKind::Interrupted
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionRefused
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cstr_caps_on_char_boundary_and_strips_nul() {
        let mut out = Vec::new();
        put_cstr(&mut out, "a\0béc", 3);
        assert_eq!(out, b"ab\0");
        let mut out = Vec::new();
        put_cstr(&mut out, "aé", 3);
        assert_eq!(out, "aé\0".as_bytes());
    }

    #[test]
    fn reader_reports_truncation() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16(), Ok(0x0201));
        assert_eq!(r.u16(), Err(DecodeError::Truncated));
        assert_eq!(r.u8(), Ok(3));
        assert_eq!(r.cstr(), Err(DecodeError::Truncated));
    }
}
