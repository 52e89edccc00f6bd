//! The client's side of the exchange: asking a server for a token, on a thread of its
//! own, checking the server's identity against the known servers on the way.

use super::*;
use crate::kex::{ClientHello, ClientKeys, PublicKeyBytes, fingerprint};
use crate::known::{KeyStatus, KnownServers};
use bevy::log::{debug, warn};
use renetcode::ConnectToken;
use sightline_protocol::{
    ExchangeTag, Framed, MAX_PASSWORD_LEN, PROTOCOL_VERSION, SERVER_FRAME_MAX_BYTES, TokenReply,
    TokenRequest, Wire, frame, framed,
};
use sightline_tokens::NETCODE_PROTOCOL_ID;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A connect token, and what the client learnt of the server's identity on the way.
#[derive(Debug, Clone)]
pub struct Granted {
    /// The token, its first server address the one dialled.
    pub token: ConnectToken,
    /// How the server's identity key compares with the one remembered for it.
    pub key: KeyStatus,
    /// The server's identity key.
    pub server_key: PublicKeyBytes,
}

/// Asks `server` for a connect token on a background thread, so a slow or silent server
/// never stalls the game; the answer (or why there is none) arrives on the channel.
/// `known_servers`: the file of servers' keys to check and remember (`None`: none).
pub fn request_token(
    server: SocketAddr,
    password: String,
    known_servers: Option<PathBuf>,
) -> mpsc::Receiver<Result<Granted, String>> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(fetch_token(server, &password, known_servers.as_deref()));
    });
    receive
}

/// Asks for a token, blocking up to [`TOKEN_REQUEST_DEADLINE`] once connected (and up
/// to `TOKEN_CONNECT_PATIENCE` knocking on a service that is still starting). The
/// server's key is checked against `known_servers` and remembered there (`None`: not
/// remembered, always [`KeyStatus::New`]); a changed key is logged as a warning, naming
/// the server and both keys' fingerprints, and the exchange goes on (the password is
/// never exposed to whoever answers).
pub fn fetch_token(
    server: SocketAddr,
    password: &str,
    known_servers: Option<&Path>,
) -> Result<Granted, String> {
    fetch_token_within(server, password, known_servers, TOKEN_REQUEST_DEADLINE)
}

/// [`fetch_token`] with `deadline` for each exchange once connected. A busy service may
/// close a connection unanswered (its pool was full, or the server stood still past the
/// request's deadline) or not answer within `deadline` (the server stood still): that is
/// tried again, a few times within `TOKEN_CONNECT_PATIENCE`, while an answer (a token or
/// a refusal) is final.
pub(super) fn fetch_token_within(
    server: SocketAddr,
    password: &str,
    known_servers: Option<&Path>,
    deadline: Duration,
) -> Result<Granted, String> {
    if password.len() > MAX_PASSWORD_LEN {
        return Err(format!("passwords are at most {MAX_PASSWORD_LEN} bytes"));
    }
    let started = Instant::now();
    let mut tries = 0;
    loop {
        tries += 1;
        match exchange(server, password, known_servers, deadline, started) {
            Err(Unanswered(why)) if tries < 4 && started.elapsed() < TOKEN_CONNECT_PATIENCE => {
                debug!("token request to {server} unanswered ({why}); trying again");
                std::thread::sleep(Duration::from_millis(100 * tries));
            }
            Err(Unanswered(why)) => return Err(why),
            Ok(answer) => return answer,
        }
    }
}

/// A token exchange that ended without an answer, and why.
pub(super) struct Unanswered(String);

/// The client's end of one connection to the token service, under one deadline for the
/// whole exchange, not one per read: a server dripping a byte at a time cannot hold the
/// client past it.
pub(super) struct Connection {
    stream: TcpStream,
    server: SocketAddr,
    deadline: Instant,
}

/// What reading a frame from the server came to.
pub(super) enum Received {
    Frame(Vec<u8>),
    /// Closed before a byte of it came.
    Closed,
    /// The deadline passed.
    TooSlow,
    /// Not a frame of ours.
    Garbage,
}

impl Connection {
    fn left(&self) -> Option<Duration> {
        self.deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    fn unanswered(&self, e: io::Error) -> Unanswered {
        Unanswered(format!("token request to {}: {e}", self.server))
    }

    fn too_slow(&self) -> String {
        format!("{} took too long to answer the token request", self.server)
    }

    /// Sends `bytes`; `Ok(false)` when the deadline passed first.
    fn send(&mut self, bytes: &[u8]) -> Result<bool, Unanswered> {
        let Some(timeout) = self.left() else {
            return Ok(false);
        };
        self.stream
            .set_write_timeout(Some(timeout))
            .map_err(|e| self.unanswered(e))?;
        self.stream
            .write_all(bytes)
            .map_err(|e| self.unanswered(e))?;
        Ok(true)
    }

    /// Reads one frame of at most [`SERVER_FRAME_MAX_BYTES`]: a server cannot make the
    /// client buffer more.
    fn receive(&mut self) -> Result<Received, Unanswered> {
        let max = SERVER_FRAME_MAX_BYTES;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 512];
        loop {
            match framed(&reply, max) {
                Framed::Complete(len) => return Ok(Received::Frame(reply[2..2 + len].to_vec())),
                Framed::TooLarge => return Ok(Received::Garbage),
                Framed::Incomplete => {}
            }
            let Some(timeout) = self.left() else {
                return Ok(Received::TooSlow);
            };
            self.stream
                .set_read_timeout(Some(timeout))
                .map_err(|e| self.unanswered(e))?;
            // Never past the frame: the length is known once two bytes are in.
            let whole = match reply.as_slice() {
                [a, b, ..] => 2 + u16::from_be_bytes([*a, *b]) as usize,
                _ => 2,
            };
            let want = chunk.len().min(whole - reply.len());
            match self.stream.read(&mut chunk[..want]) {
                Ok(0) if reply.is_empty() => return Ok(Received::Closed),
                Ok(0) => return Ok(Received::Garbage),
                Ok(n) => reply.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(self.unanswered(e)),
            }
        }
    }
}

/// One token exchange: connect, then the four messages (see `sightline_protocol::token`).
/// `Ok` holds the answer (a token, or why not); `Err`, a connection that ended without
/// one.
pub(super) fn exchange(
    server: SocketAddr,
    password: &str,
    known_servers: Option<&Path>,
    deadline: Duration,
    started: Instant,
) -> Result<Result<Granted, String>, Unanswered> {
    // A server that is starting refuses connections for a moment: keep knocking for a
    // few seconds, as netcode keeps sending its connection request.
    let stream = loop {
        match TcpStream::connect_timeout(&server, deadline) {
            Ok(stream) => break stream,
            Err(e)
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && started.elapsed() < TOKEN_CONNECT_PATIENCE =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => {
                return Ok(Err(format!(
                    "cannot reach {server}'s token service over TCP ({e}); if it runs with \
                     --insecure, connect with --insecure too"
                )));
            }
        }
    };
    // Running out of time is asked again like a closed connection: a server that stood
    // still a few seconds (a normal event) answers the next try.
    let mut conn = Connection {
        stream,
        server,
        deadline: Instant::now() + deadline,
    };
    let hello = ClientHello::start(password);
    if !conn.send(hello.bytes())? {
        return Err(Unanswered(conn.too_slow()));
    }
    let keys = match conn.receive()? {
        Received::Frame(body) => match body.split_first() {
            Some((&tag, rest)) if tag == ExchangeTag::ServerHello as u8 => {
                match hello.finish(rest) {
                    Ok(keys) => keys,
                    Err(_) => return Ok(Err(format!("{server} did not answer with a token"))),
                }
            }
            _ => return Ok(Err(read_clear(server, &body))),
        },
        Received::Closed => {
            return Err(Unanswered(format!(
                "{server} closed the token request unanswered"
            )));
        }
        Received::TooSlow => return Err(Unanswered(conn.too_slow())),
        Received::Garbage => return Ok(Err(format!("{server} did not answer with a token"))),
    };
    let request = TokenRequest {
        protocol_version: PROTOCOL_VERSION,
    };
    let finish = request
        .encode()
        .ok()
        .and_then(|r| frame(&keys.finish_message(&r)));
    let Some(finish) = finish else {
        return Ok(Err("the token request is too large".into()));
    };
    if !keys.server_confirmed {
        // Answer all the same, so the server counts the wrong guess; its answer adds
        // nothing.
        if conn.send(&finish).unwrap_or(false) {
            let _ = conn.receive();
        }
        return Ok(Err(format!(
            "{server}: wrong password, or someone between you and the server"
        )));
    }
    let key = check_known(server, &keys.server_key, known_servers);
    if !conn.send(&finish)? {
        return Err(Unanswered(conn.too_slow()));
    }
    let answer = match conn.receive()? {
        Received::Frame(body) => match body.split_first() {
            Some((&tag, rest)) if tag == ExchangeTag::Sealed as u8 => {
                open_reply(server, &keys, rest)
            }
            _ => Err(read_clear(server, &body)),
        },
        Received::Closed => {
            return Err(Unanswered(format!(
                "{server} closed the token request unanswered"
            )));
        }
        Received::TooSlow => return Err(Unanswered(conn.too_slow())),
        Received::Garbage => Err(format!("{server} did not answer with a token")),
    };
    Ok(answer.map(|token| Granted {
        token,
        key,
        server_key: keys.server_key,
    }))
}

/// A sealed reply: a token for `server`, or why not. One that does not open was changed
/// on the way.
pub(super) fn open_reply(
    server: SocketAddr,
    keys: &ClientKeys,
    sealed: &[u8],
) -> Result<ConnectToken, String> {
    match keys.open_reply(sealed) {
        Some(reply) => read_reply(server, &reply),
        None => Err(format!(
            "the token reply from {server} was changed on the way: someone may be between \
             you and the server"
        )),
    }
}

/// Why a frame in the clear ends the exchange: only a refusal may come this way; a
/// token never does.
pub(super) fn read_clear(server: SocketAddr, body: &[u8]) -> String {
    let reply = match body.split_first() {
        Some((&tag, rest)) if tag == ExchangeTag::Clear as u8 => TokenReply::decode(rest),
        _ => return format!("{server} did not answer with a token"),
    };
    match reply {
        Ok(TokenReply::Refused { reason }) => format!("the server refused: {reason}"),
        Ok(TokenReply::Granted { .. }) => {
            format!("{server} sent a token in the clear, which no Sightline server does; refused")
        }
        Err(e) => format!("bad token reply from {server}: {e}"),
    }
}

/// Checks `key` against the known servers at `path` and remembers it there; warns of a
/// changed key.
pub(super) fn check_known(
    server: SocketAddr,
    key: &PublicKeyBytes,
    path: Option<&Path>,
) -> KeyStatus {
    let Some(path) = path else {
        return KeyStatus::New;
    };
    let mut known = KnownServers::load(path);
    for problem in known.problems().iter().take(4) {
        warn!("known servers: {problem}");
    }
    let name = server.to_string();
    let status = known.check(&name, key);
    match status {
        KeyStatus::Known => return status,
        KeyStatus::New => debug!(
            "first connection to {server}: remembering its key {}",
            fingerprint(key)
        ),
        KeyStatus::Changed { previous } => warn!(
            "the server at {server} presents a different identity key than before: it was \
             {}, it is now {}. It may have been reinstalled, or someone may be between you \
             and it (your password is not exposed either way). Remembering the new key in {}.",
            fingerprint(&previous),
            fingerprint(key),
            path.display()
        ),
    }
    if let Err(e) = known.remember(&name, *key) {
        warn!("cannot remember {server}'s key in {}: {e}", path.display());
    }
    status
}

/// What a token reply says: a token for `server`, or why not.
pub(super) fn read_reply(server: SocketAddr, reply: &[u8]) -> Result<ConnectToken, String> {
    let reply =
        TokenReply::decode(reply).map_err(|e| format!("bad token reply from {server}: {e}"))?;
    match reply {
        TokenReply::Refused { reason } => Err(format!("the server refused: {reason}")),
        TokenReply::Granted { token } => {
            let mut token = ConnectToken::read(&mut token.as_slice())
                .map_err(|e| format!("bad connect token from {server}: {e}"))?;
            if token.protocol_id != NETCODE_PROTOCOL_ID {
                return Err(format!("{server} is not a Sightline server"));
            }
            // The client speaks to the address it dialled. The sealed copy inside the
            // token names the server's own address, which is what the server checks.
            token.server_addresses = [None; 32];
            token.server_addresses[0] = Some(server);
            Ok(token)
        }
    }
}
