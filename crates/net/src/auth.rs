//! Who may connect: netcode's secure mode with short-lived connect tokens, the server's
//! own token service over TCP, and the limits that keep unauthenticated traffic from
//! occupying anything.
//!
//! The model is netcode.io's: a connect token is sealed with a key only the server (and
//! a matchmaker it trusts) holds; it names a client id the server chose, expires within
//! seconds, and carries the keys that encrypt the session. Without a token, UDP can reach
//! nothing but a counter. A server hands tokens out itself over TCP on its game port
//! number: TCP's handshake proves the asker's address, so tokens cannot be farmed from
//! forged addresses, and the asker's address goes into the token so it can only be used
//! from there.

use crate::NetStats;
use crate::bans::AddressBans;
use crate::limits::{GlobalBucket, HostKey, NetworkKey, RateLimiter, canonical_ip};
use bevy::log::debug;
use renetcode::{ConnectToken, NETCODE_KEY_BYTES, NETCODE_USER_DATA_BYTES, NetcodeServer};
use sightline_protocol::{
    Framed, MAX_PASSWORD_LEN, NETCODE_PROTOCOL_ID, PROTOCOL_VERSION, TokenReply, TokenRequest,
    Wire, frame, framed,
};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Seconds a connect token stays usable: long enough to start a handshake, too short to
/// hoard.
pub const TOKEN_EXPIRE_SECONDS: u64 = 10;
/// Seconds of silence after which netcode drops a connection (chosen by the server and
/// sealed into the token, never by the client).
pub const CONNECTION_TIMEOUT_SECONDS: i32 = 10;
/// How long a client waits to connect to the token service, and then for one exchange
/// (asking and reading the whole answer); an exchange the service closed unanswered is
/// tried again a few times within `TOKEN_CONNECT_PATIENCE`.
pub const TOKEN_REQUEST_DEADLINE: Duration = Duration::from_secs(3);
/// How long a client keeps trying a token service that refuses connections (a server
/// still starting).
pub const TOKEN_CONNECT_PATIENCE: Duration = Duration::from_secs(5);
/// How long the service waits for a request's first bytes after accepting its
/// connection: a client sends its request at once, so only a lost segment delays it.
pub const FIRST_BYTES_DEADLINE: Duration = Duration::from_secs(1);
/// How long the service gives a request, start to finish (reading it and writing the
/// answer).
pub const SERVE_DEADLINE: Duration = Duration::from_secs(2);
/// Token requests being served at once: a pool a few dozen addresses cannot fill, as
/// each host may hold [`MAX_TCP_PER_HOST`] and each network [`MAX_TCP_PER_NETWORK`].
const MAX_TCP_PENDING: usize = 512;
const MAX_TCP_PER_HOST: usize = 2;
const MAX_TCP_PER_NETWORK: usize = 16;
/// TCP connections accepted per frame, so a connection flood cannot stall the tick.
const ACCEPTS_PER_FRAME: usize = 64;
/// Time between two polls of the token service that counts as the server standing
/// still rather than a request being slow.
const STALL_GAP: Duration = Duration::from_millis(250);
/// Token requests one host may make in a burst, and regains per second.
const TOKEN_BURST: f32 = 8.0;
const TOKENS_PER_SECOND: f32 = 1.0;
/// Wrong passwords the whole server takes in a burst, and per second: past them every
/// request is refused unchecked for a moment, so many addresses together still guess
/// slowly.
const PASSWORD_GUESS_BURST: f32 = 30.0;
const PASSWORD_GUESSES_PER_SECOND: f32 = 5.0;
/// Handshake packets one address may send in a burst and per second (a netcode client
/// sends ten a second while connecting).
pub(crate) const HANDSHAKE_BURST: f32 = 20.0;
pub(crate) const HANDSHAKES_PER_SECOND: f32 = 20.0;
/// Size of a netcode connection request packet: prefix, version info, protocol id,
/// expiry, nonce and the sealed private token.
pub(crate) const CONNECTION_REQUEST_BYTES: usize = 1 + 13 + 8 + 8 + 24 + 1024;

/// How a server admits clients.
#[derive(Clone)]
pub enum Security {
    /// Connect tokens sealed with a key: the default.
    Secure(SecureConfig),
    /// No tokens, no encryption: any UDP packet may open a connection. Only for tests on
    /// a LAN (`--insecure`).
    Insecure,
}

/// The secure mode's settings.
#[derive(Clone)]
pub struct SecureConfig {
    /// The key tokens are sealed with.
    pub key: [u8; NETCODE_KEY_BYTES],
    /// The password a client must give for a token; `None` for a public server.
    pub password: Option<String>,
    /// Whether the server hands out tokens itself over TCP; off when only an external
    /// matchmaker holding the key issues them.
    pub issue_tokens: bool,
}

impl SecureConfig {
    /// A public server with a fresh random key, issuing its own tokens.
    pub fn random() -> Self {
        Self {
            key: renetcode::generate_random_bytes(),
            password: None,
            issue_tokens: true,
        }
    }
}

/// Limits on admissions that apply in both modes.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionLimits {
    /// Connections (and token requests at once) from one IP address.
    pub max_per_address: usize,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        Self { max_per_address: 4 }
    }
}

/// Reads a key file: 64 hexadecimal digits (32 bytes), whitespace around them allowed.
pub fn load_key_file(path: &Path) -> Result<[u8; NETCODE_KEY_BYTES], String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() || meta.len() > 1024 {
        return Err(format!("{}: not a key file", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_key(text.trim()).ok_or_else(|| {
        format!(
            "{}: a key file holds 64 hexadecimal digits (32 bytes)",
            path.display()
        )
    })
}

/// Parses 64 hexadecimal digits into a key.
pub fn parse_key(hex: &str) -> Option<[u8; NETCODE_KEY_BYTES]> {
    if hex.len() != 2 * NETCODE_KEY_BYTES || !hex.is_ascii() {
        return None;
    }
    let mut key = [0; NETCODE_KEY_BYTES];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// Makes a connect token for `client_ip` to join the server whose tokens name `server`,
/// sealed with `key`: what the token service hands out, and what a matchmaker holding the
/// server's key (`--key-file`) issues. `now` is the Unix time.
///
/// The token is netcode.io 1.02's, for protocol id [`NETCODE_PROTOCOL_ID`], expiring in
/// [`TOKEN_EXPIRE_SECONDS`] with a [`CONNECTION_TIMEOUT_SECONDS`] timeout; its user data
/// holds the client's address (byte 0 is 4 or 6, then the address's bytes), which the
/// server checks against where the handshake comes from.
pub fn issue_token(
    key: &[u8; NETCODE_KEY_BYTES],
    client_id: u64,
    client_ip: IpAddr,
    server: SocketAddr,
    now: Duration,
) -> Result<ConnectToken, String> {
    ConnectToken::generate(
        now,
        NETCODE_PROTOCOL_ID,
        TOKEN_EXPIRE_SECONDS,
        client_id,
        CONNECTION_TIMEOUT_SECONDS,
        vec![server],
        Some(&address_user_data(canonical_ip(client_ip))),
        key,
    )
    .map_err(|e| format!("cannot make a connect token: {e}"))
}

/// The asker's address, sealed into its token's user data.
pub(crate) fn address_user_data(ip: IpAddr) -> [u8; NETCODE_USER_DATA_BYTES] {
    let mut data = [0; NETCODE_USER_DATA_BYTES];
    match ip {
        IpAddr::V4(v4) => {
            data[0] = 4;
            data[1..5].copy_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            data[0] = 6;
            data[1..17].copy_from_slice(&v6.octets());
        }
    }
    data
}

/// Whether a token's user data names `ip` (IPv4 and its IPv6-mapped form are one).
pub(crate) fn user_data_matches(data: &[u8; NETCODE_USER_DATA_BYTES], ip: IpAddr) -> bool {
    address_user_data(canonical_ip(ip)) == *data
}

/// Who holds a place in the token service's pool, and since when.
#[derive(Debug, Clone, Copy)]
struct Place {
    host: HostKey,
    network: NetworkKey,
    started: Instant,
}

/// What a newcomer gets in the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admit {
    Yes,
    /// Yes, in the place of the request at this index, which is dropped.
    Instead(usize),
    No,
}

/// Whether a connection from `host` in `network` gets a place among `pool`, where one
/// host may hold `per_host` (more than [`MAX_TCP_PER_HOST`] when the server lets one
/// address hold more connections). Within its host's and network's shares it does, if there is room; when the pool is full, the
/// network holding the most places gives up its oldest request for it, unless the
/// newcomer's own network would then hold as many (max-min fairness: however many
/// connections a few networks open, a newcomer from elsewhere is served).
fn admit(pool: &[Place], host: HostKey, network: NetworkKey, per_host: usize) -> Admit {
    let of_host = pool.iter().filter(|p| p.host == host).count();
    let of_network = pool.iter().filter(|p| p.network == network).count();
    if of_host >= per_host || of_network >= MAX_TCP_PER_NETWORK.max(per_host) {
        return Admit::No;
    }
    if pool.len() < MAX_TCP_PENDING {
        return Admit::Yes;
    }
    let mut per_network: HashMap<NetworkKey, usize> = HashMap::new();
    for p in pool {
        *per_network.entry(p.network).or_default() += 1;
    }
    let Some((&crowded, &most)) = per_network.iter().max_by_key(|(k, n)| (**n, **k)) else {
        return Admit::Yes;
    };
    if most <= of_network + 1 {
        return Admit::No;
    }
    pool.iter()
        .enumerate()
        .filter(|(_, p)| p.network == crowded)
        .min_by_key(|(_, p)| p.started)
        .map_or(Admit::No, |(i, _)| Admit::Instead(i))
}

/// A token request being read or answered.
struct Pending {
    stream: TcpStream,
    peer: IpAddr,
    place: Place,
    inbox: Vec<u8>,
    outbox: Option<(Vec<u8>, usize)>,
}

impl Pending {
    /// Whether it has had its time: no first bytes within [`FIRST_BYTES_DEADLINE`], or
    /// not served within [`SERVE_DEADLINE`].
    fn overdue(&self, now: Instant) -> bool {
        let age = now.saturating_duration_since(self.place.started);
        age > SERVE_DEADLINE || (self.inbox.is_empty() && age > FIRST_BYTES_DEADLINE)
    }
}

/// The server's token service: a non-blocking TCP listener polled once a frame, with
/// every cost bounded per frame and the pool of requests shared fairly between hosts
/// and networks.
pub struct TokenService {
    listener: TcpListener,
    pending: Vec<Pending>,
    limiter: RateLimiter,
    guesses: GlobalBucket,
    /// When it was last polled, to tell the server's own stalls from slow requests.
    polled_at: Option<Instant>,
}

impl TokenService {
    /// Listens on `bind` (the game's address and port, over TCP).
    pub fn bind(bind: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        Ok(Self {
            listener,
            pending: Vec::new(),
            limiter: RateLimiter::new(TOKEN_BURST, TOKENS_PER_SECOND),
            guesses: GlobalBucket::new(PASSWORD_GUESS_BURST, PASSWORD_GUESSES_PER_SECOND),
            polled_at: None,
        })
    }

    /// Accepts, reads and answers requests without ever blocking.
    pub(crate) fn poll(
        &mut self,
        netcode: &NetcodeServer,
        config: &SecureConfig,
        limits: AdmissionLimits,
        public: SocketAddr,
        bans: &AddressBans,
        stats: &mut NetStats,
    ) {
        let now = Instant::now();
        // A request is not late for the time the server itself stood still: the
        // deadlines move on by a stall's length.
        let gap = self
            .polled_at
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        self.polled_at = Some(now);
        if gap > STALL_GAP {
            for p in &mut self.pending {
                p.place.started += gap;
            }
        }
        for _ in 0..ACCEPTS_PER_FRAME {
            let (stream, peer) = match self.listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            };
            let place = Place {
                host: HostKey::of(peer.ip()),
                network: NetworkKey::of(peer.ip()),
                started: now,
            };
            let pool: Vec<Place> = self.pending.iter().map(|p| p.place).collect();
            let per_host = MAX_TCP_PER_HOST.max(limits.max_per_address);
            let admitted = admit(&pool, place.host, place.network, per_host);
            if admitted == Admit::No || stream.set_nonblocking(true).is_err() {
                stats.token_requests_dropped += 1;
                continue; // dropping the stream closes it
            }
            if let Admit::Instead(i) = admitted {
                stats.token_requests_dropped += 1;
                self.pending.swap_remove(i);
            }
            self.pending.push(Pending {
                stream,
                peer: peer.ip(),
                place,
                inbox: Vec::new(),
                outbox: None,
            });
        }
        let mut finished = Vec::new();
        let Self {
            pending,
            limiter,
            guesses,
            ..
        } = self;
        for (i, p) in pending.iter_mut().enumerate() {
            if p.overdue(now) {
                stats.token_requests_dropped += 1;
                finished.push(i);
                continue;
            }
            if p.outbox.is_none() {
                match read_request(p) {
                    Ok(Some(request)) => {
                        let issuer = Issuer { limiter, guesses };
                        let reply = match bans.refusal(p.peer) {
                            // Before any other work: a banned address costs nothing more.
                            Some(reason) => {
                                stats.tokens_refused += 1;
                                TokenReply::Refused {
                                    reason: format!("banned from this server: {reason}"),
                                }
                            }
                            None => issuer
                                .answer(&request, p, netcode, config, limits, public, stats, now),
                        };
                        let bytes = reply
                            .encode()
                            .ok()
                            .and_then(|b| frame(&b))
                            .unwrap_or_default();
                        p.outbox = Some((bytes, 0));
                    }
                    Ok(None) => continue,
                    Err(()) => {
                        stats.token_requests_dropped += 1;
                        finished.push(i);
                        continue;
                    }
                }
            }
            if let Some((bytes, sent)) = &mut p.outbox {
                match p.stream.write(&bytes[*sent..]) {
                    Ok(n) => *sent += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => *sent = bytes.len(),
                }
                if *sent >= bytes.len() {
                    let _ = p.stream.shutdown(Shutdown::Write);
                    finished.push(i);
                }
            }
        }
        for i in finished.into_iter().rev() {
            self.pending.swap_remove(i);
        }
    }
}

/// What answering a request changes: the per-host rate limiter and the server's
/// allowance of wrong passwords.
struct Issuer<'a> {
    limiter: &'a mut RateLimiter,
    guesses: &'a mut GlobalBucket,
}

impl Issuer<'_> {
    fn answer(
        self,
        request: &TokenRequest,
        p: &Pending,
        netcode: &NetcodeServer,
        config: &SecureConfig,
        limits: AdmissionLimits,
        public: SocketAddr,
        stats: &mut NetStats,
        now: Instant,
    ) -> TokenReply {
        let refuse = |stats: &mut NetStats, reason: String| {
            stats.tokens_refused += 1;
            TokenReply::Refused { reason }
        };
        if !self.limiter.allow(p.peer, now) {
            return refuse(stats, "too many token requests; wait a few seconds".into());
        }
        if request.protocol_version != PROTOCOL_VERSION {
            return refuse(
                stats,
                format!(
                    "protocol mismatch: server speaks version {PROTOCOL_VERSION}, client \
                     speaks version {}",
                    request.protocol_version
                ),
            );
        }
        if let Some(password) = &config.password {
            // Refused unchecked while the allowance is spent, or a guess could still
            // come out right.
            if !self.guesses.has(now) {
                return refuse(
                    stats,
                    "too many wrong passwords on this server; try again in a few seconds".into(),
                );
            }
            if !constant_time_eq(password.as_bytes(), request.password.as_bytes()) {
                self.guesses.take();
                return refuse(stats, "wrong password".into());
            }
        }
        let connected_here = netcode
            .clients_id_iter()
            .filter_map(|id| netcode.client_addr(id))
            .filter(|addr| p.place.host == HostKey::of(addr.ip()))
            .count();
        if connected_here >= limits.max_per_address {
            return refuse(
                stats,
                format!(
                    "too many connections from your address ({})",
                    limits.max_per_address
                ),
            );
        }
        // Unpredictable, so one client cannot guess another's id (nor learn from its own
        // how many came before), and unused.
        let client_id = loop {
            let id = u64::from_le_bytes(renetcode::generate_random_bytes());
            if netcode.client_addr(id).is_none() {
                break id;
            }
        };
        let token = issue_token(
            &config.key,
            client_id,
            p.peer,
            public,
            netcode.current_time(),
        );
        let mut bytes = Vec::new();
        match token.map(|t| t.write(&mut bytes)) {
            Ok(Ok(())) => {
                stats.tokens_issued += 1;
                TokenReply::Granted { token: bytes }
            }
            _ => refuse(stats, "the server could not make a token".into()),
        }
    }
}

/// Reads what has arrived; `Ok(Some)` once a whole request is in, `Err` for anything
/// that is not one.
fn read_request(p: &mut Pending) -> Result<Option<TokenRequest>, ()> {
    let max = TokenRequest::MAX_BYTES;
    let mut chunk = [0u8; 256];
    loop {
        match p.stream.read(&mut chunk) {
            Ok(0) => return Err(()),
            Ok(n) => {
                p.inbox.extend_from_slice(&chunk[..n]);
                if p.inbox.len() > max + 2 {
                    return Err(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return Err(()),
        }
    }
    match framed(&p.inbox, max) {
        Framed::Incomplete => Ok(None),
        Framed::TooLarge => Err(()),
        Framed::Complete(len) => TokenRequest::decode(&p.inbox[2..2 + len])
            .map(Some)
            .map_err(|_| ()),
    }
}

/// Compares secrets without revealing through timing how much of them matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// Asks `server` for a connect token on a background thread, so a slow or silent server
/// never stalls the game; the answer (or why there is none) arrives on the channel.
pub fn request_token(
    server: SocketAddr,
    password: String,
) -> mpsc::Receiver<Result<ConnectToken, String>> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(fetch_token(server, &password));
    });
    receive
}

/// Asks for a token, blocking up to [`TOKEN_REQUEST_DEADLINE`] once connected (and up
/// to `TOKEN_CONNECT_PATIENCE` knocking on a service that is still starting).
pub fn fetch_token(server: SocketAddr, password: &str) -> Result<ConnectToken, String> {
    fetch_token_within(server, password, TOKEN_REQUEST_DEADLINE)
}

/// [`fetch_token`] with `deadline` for each exchange once connected. A busy service may
/// close a connection unanswered (its pool was full, or the server stood still past the
/// request's deadline): that is tried again, a few times within
/// `TOKEN_CONNECT_PATIENCE`, while an answer (a token or a refusal) is final.
fn fetch_token_within(
    server: SocketAddr,
    password: &str,
    deadline: Duration,
) -> Result<ConnectToken, String> {
    if password.len() > MAX_PASSWORD_LEN {
        return Err(format!("passwords are at most {MAX_PASSWORD_LEN} bytes"));
    }
    let started = Instant::now();
    let mut tries = 0;
    loop {
        tries += 1;
        match exchange(server, password, deadline, started) {
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
struct Unanswered(String);

/// One token exchange: connect, ask, read the answer. `Ok` holds the answer (a token, or
/// why not); `Err`, a connection that ended without one.
fn exchange(
    server: SocketAddr,
    password: &str,
    deadline: Duration,
    started: Instant,
) -> Result<Result<ConnectToken, String>, Unanswered> {
    // A server that is starting refuses connections for a moment: keep knocking for a
    // few seconds, as netcode keeps sending its connection request.
    let mut stream = loop {
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
    // One deadline for the whole exchange, not one per read: a server dripping a byte
    // at a time cannot hold the client past it. Running out of time is an answer (the
    // server is too slow), not a reason to ask again.
    let deadline = Instant::now() + deadline;
    let too_slow = || format!("{server} took too long to answer the token request");
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    let unanswered = |e: io::Error| Unanswered(format!("token request to {server}: {e}"));
    let Some(timeout) = left() else {
        return Ok(Err(too_slow()));
    };
    stream
        .set_write_timeout(Some(timeout))
        .map_err(unanswered)?;
    let request = TokenRequest {
        protocol_version: PROTOCOL_VERSION,
        password: password.to_string(),
    };
    let Some(bytes) = request.encode().ok().and_then(|b| frame(&b)) else {
        return Ok(Err("the token request is too large".into()));
    };
    stream.write_all(&bytes).map_err(unanswered)?;
    // Reads at most one whole reply; a server cannot make the client buffer more.
    let mut reply = Vec::new();
    let mut chunk = [0u8; 512];
    while reply.len() < TokenReply::MAX_BYTES + 2 {
        let Some(timeout) = left() else {
            return Ok(Err(too_slow()));
        };
        stream.set_read_timeout(Some(timeout)).map_err(unanswered)?;
        let want = chunk.len().min(TokenReply::MAX_BYTES + 2 - reply.len());
        match stream.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(unanswered(e)),
        }
        if let Framed::Complete(_) | Framed::TooLarge = framed(&reply, TokenReply::MAX_BYTES) {
            break;
        }
    }
    let len = match framed(&reply, TokenReply::MAX_BYTES) {
        Framed::Complete(len) => len,
        Framed::Incomplete if reply.is_empty() => {
            return Err(Unanswered(format!(
                "{server} closed the token request unanswered"
            )));
        }
        _ => return Ok(Err(format!("{server} did not answer with a token"))),
    };
    Ok(read_reply(server, &reply[2..2 + len]))
}

/// What a token reply says: a token for `server`, or why not.
fn read_reply(server: SocketAddr, reply: &[u8]) -> Result<ConnectToken, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn keys_are_64_hex_digits() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        let key = parse_key(hex).expect("valid");
        assert_eq!(key[1], 0x11);
        assert_eq!(key[31], 0xff);
        assert_eq!(parse_key(&hex[..62]), None);
        assert_eq!(parse_key(&hex.replace('0', "g")), None);
        assert_eq!(parse_key("é".repeat(32).as_str()), None);
    }

    #[test]
    fn the_address_in_a_token_matches_only_its_host() {
        let ip = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3));
        let data = address_user_data(ip);
        assert!(user_data_matches(&data, ip));
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 1, 2, 3).to_ipv6_mapped());
        assert!(user_data_matches(&data, mapped));
        assert!(!user_data_matches(
            &data,
            IpAddr::V4(Ipv4Addr::new(10, 1, 2, 4))
        ));
        assert!(!user_data_matches(&data, IpAddr::V6(Ipv6Addr::LOCALHOST)));
    }

    fn place(ip: &str, started: Instant) -> Place {
        let ip: IpAddr = ip.parse().unwrap();
        Place {
            host: HostKey::of(ip),
            network: NetworkKey::of(ip),
            started,
        }
    }

    #[test]
    fn the_pool_is_shared_by_host_and_network_and_a_newcomer_displaces_the_crowd() {
        let t0 = Instant::now();
        let newcomer = place("198.51.100.7", t0);
        // Each host and network has its share.
        let two = vec![place("10.0.0.1", t0); MAX_TCP_PER_HOST];
        assert_eq!(
            admit(&two, two[0].host, two[0].network, MAX_TCP_PER_HOST),
            Admit::No
        );
        // A server letting one address hold more connections lets it ask for more.
        assert_eq!(admit(&two, two[0].host, two[0].network, 4), Admit::Yes);
        let net: Vec<Place> = (0..MAX_TCP_PER_NETWORK)
            .map(|i| place(&format!("10.0.0.{i}"), t0))
            .collect();
        let other_host = place("10.0.0.200", t0);
        assert_eq!(
            admit(&net, other_host.host, other_host.network, MAX_TCP_PER_HOST),
            Admit::No
        );
        assert_eq!(
            admit(&net, newcomer.host, newcomer.network, MAX_TCP_PER_HOST),
            Admit::Yes
        );
        // A full pool, held by a few dozen networks: the crowded one gives way.
        // 32 networks of 8 hosts, each holding its full shares.
        let full: Vec<Place> = (0..MAX_TCP_PENDING)
            .map(|i| {
                let at = t0 + Duration::from_millis(i as u64);
                place(&format!("10.0.{}.{}", i / 16, i % 16 / 2 + 1), at)
            })
            .collect();
        match admit(&full, newcomer.host, newcomer.network, MAX_TCP_PER_HOST) {
            Admit::Instead(i) => {
                let gone = full[i].network;
                let count = full.iter().filter(|p| p.network == gone).count();
                assert_eq!(
                    count, MAX_TCP_PER_NETWORK,
                    "a most crowded network gives way"
                );
                let same = full.iter().filter(|p| p.network == gone);
                assert!(
                    same.clone().all(|p| p.started >= full[i].started),
                    "its oldest"
                );
            }
            other => panic!("a newcomer from elsewhere must get in, got {other:?}"),
        }
        // A network already holding as many as the most crowded gets no more.
        let even: Vec<Place> = (0..MAX_TCP_PENDING)
            .map(|i| place(&format!("10.{}.0.{}", i / 2, i % 2 + 1), t0))
            .collect();
        let third = place("10.0.0.3", t0);
        assert_eq!(
            admit(&even, third.host, third.network, MAX_TCP_PER_HOST),
            Admit::No
        );
    }

    #[test]
    fn a_token_service_that_drips_its_reply_cannot_hold_a_client_past_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let dripper = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            // A length prefix promising a whole reply, then a byte now and then.
            let _ = stream.write_all(&[0x40, 0x00]);
            for _ in 0..40 {
                std::thread::sleep(Duration::from_millis(50));
                if stream.write_all(&[0]).is_err() {
                    break;
                }
            }
        });
        let start = Instant::now();
        let result = fetch_token_within(addr, "", Duration::from_millis(400));
        let took = start.elapsed();
        assert!(result.is_err(), "{result:?}");
        assert!(took < Duration::from_millis(1000), "took {took:?}");
        dripper.join().unwrap();
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(constant_time_eq(b"hunter2", b"hunter2"));
        assert!(!constant_time_eq(b"hunter2", b"hunter3"));
        assert!(!constant_time_eq(b"hunter2", b"hunter22"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }
}
