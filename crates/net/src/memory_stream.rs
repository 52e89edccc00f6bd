//! A non-blocking stream in memory, for the token bench and fuzz bodies: what a TCP
//! socket does to the service that polls it, without a socket.

use std::collections::VecDeque;
use std::io::{self, Read, Write};

/// One end of a connection in memory: what the client sent waits to be read, and what
/// the service writes is kept for the client, at most `window` bytes a poll while the
/// client reads slowly.
#[derive(Default)]
pub struct MemoryStream {
    /// What the client sent, not yet read.
    pub incoming: VecDeque<u8>,
    /// Whether the client closed its side: reads then end.
    pub eof: bool,
    /// What the server wrote, for the client.
    pub written: Vec<u8>,
    /// Bytes the client still takes (`None`: all); a write past it would block.
    pub window: Option<usize>,
}

impl Read for MemoryStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.incoming.is_empty() {
            // As a non-blocking socket: nothing yet, or the client closed its side.
            return if self.eof {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = buf.len().min(self.incoming.len());
        for (to, from) in buf.iter_mut().zip(self.incoming.drain(..n)) {
            *to = from;
        }
        Ok(n)
    }
}

impl Write for MemoryStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.window.map_or(buf.len(), |w| w.min(buf.len()));
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        if let Some(window) = &mut self.window {
            *window -= n;
        }
        self.written.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
