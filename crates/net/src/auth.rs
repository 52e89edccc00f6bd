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
/// How long a TCP token request may take, start to finish.
pub const TOKEN_REQUEST_DEADLINE: Duration = Duration::from_secs(3);
/// How long a client keeps trying a token service that refuses connections (a server
/// still starting).
pub const TOKEN_CONNECT_PATIENCE: Duration = Duration::from_secs(5);
/// Token requests being served at once, and from one address.
const MAX_TCP_PENDING: usize = 64;
const MAX_TCP_PER_ADDRESS: usize = 4;
/// TCP connections accepted per frame, so a connection flood cannot stall the tick.
const ACCEPTS_PER_FRAME: usize = 16;
/// Token requests one address may make in a burst, and regains per second.
const TOKEN_BURST: f32 = 8.0;
const TOKENS_PER_SECOND: f32 = 1.0;
/// Handshake packets one address may send in a burst and per second (a netcode client
/// sends ten a second while connecting).
pub(crate) const HANDSHAKE_BURST: f32 = 20.0;
pub(crate) const HANDSHAKES_PER_SECOND: f32 = 20.0;
/// Addresses tracked by the rate limiters; the oldest are forgotten past this.
const MAX_TRACKED_ADDRESSES: usize = 4096;
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

/// A token bucket per address: `burst` at once, `per_second` regained.
pub(crate) struct RateLimiter {
    burst: f32,
    per_second: f32,
    buckets: HashMap<IpAddr, (f32, Instant)>,
}

impl RateLimiter {
    pub(crate) fn new(burst: f32, per_second: f32) -> Self {
        Self {
            burst,
            per_second,
            buckets: HashMap::new(),
        }
    }

    /// Takes one from `ip`'s bucket; false when it is empty.
    pub(crate) fn allow(&mut self, ip: IpAddr, now: Instant) -> bool {
        if self.buckets.len() >= MAX_TRACKED_ADDRESSES && !self.buckets.contains_key(&ip) {
            // Full buckets tell nothing; forgetting them is free. If every address is
            // active, forget them all rather than grow: worst case a burst more each.
            let (burst, per_second) = (self.burst, self.per_second);
            self.buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f32() * per_second < burst
            });
            if self.buckets.len() >= MAX_TRACKED_ADDRESSES {
                self.buckets.clear();
            }
        }
        let (tokens, at) = self.buckets.entry(ip).or_insert((self.burst, now));
        *tokens =
            (*tokens + now.duration_since(*at).as_secs_f32() * self.per_second).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// A token request being read or answered.
struct Pending {
    stream: TcpStream,
    peer: IpAddr,
    started: Instant,
    inbox: Vec<u8>,
    outbox: Option<(Vec<u8>, usize)>,
}

/// The server's token service: a non-blocking TCP listener polled once a frame, with
/// every cost bounded per frame.
pub struct TokenService {
    listener: TcpListener,
    pending: Vec<Pending>,
    limiter: RateLimiter,
    next_client_id: u64,
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
            // Unpredictable ids: one client cannot guess another's.
            next_client_id: u64::from_le_bytes(renetcode::generate_random_bytes()),
        })
    }

    /// Accepts, reads and answers requests without ever blocking.
    pub(crate) fn poll(
        &mut self,
        netcode: &NetcodeServer,
        config: &SecureConfig,
        limits: AdmissionLimits,
        public: SocketAddr,
        stats: &mut NetStats,
    ) {
        let now = Instant::now();
        for _ in 0..ACCEPTS_PER_FRAME {
            let (stream, peer) = match self.listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            };
            let from_peer = self.pending.iter().filter(|p| p.peer == peer.ip()).count();
            if self.pending.len() >= MAX_TCP_PENDING
                || from_peer >= MAX_TCP_PER_ADDRESS
                || stream.set_nonblocking(true).is_err()
            {
                stats.token_requests_dropped += 1;
                continue; // dropping the stream closes it
            }
            self.pending.push(Pending {
                stream,
                peer: peer.ip(),
                started: now,
                inbox: Vec::new(),
                outbox: None,
            });
        }
        let mut finished = Vec::new();
        let Self {
            pending,
            limiter,
            next_client_id,
            ..
        } = self;
        for (i, p) in pending.iter_mut().enumerate() {
            if now.duration_since(p.started) > TOKEN_REQUEST_DEADLINE {
                stats.token_requests_dropped += 1;
                finished.push(i);
                continue;
            }
            if p.outbox.is_none() {
                match read_request(p) {
                    Ok(Some(request)) => {
                        let issuer = Issuer {
                            limiter,
                            next_client_id,
                        };
                        let reply =
                            issuer.answer(&request, p, netcode, config, limits, public, stats, now);
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

/// What answering a request changes: the rate limiter and the client id counter.
struct Issuer<'a> {
    limiter: &'a mut RateLimiter,
    next_client_id: &'a mut u64,
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
        if let Some(password) = &config.password
            && !constant_time_eq(password.as_bytes(), request.password.as_bytes())
        {
            return refuse(stats, "wrong password".into());
        }
        let connected_here = netcode
            .clients_id_iter()
            .filter_map(|id| netcode.client_addr(id))
            .filter(|addr| same_ip(addr.ip(), p.peer))
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
        *self.next_client_id = self.next_client_id.wrapping_add(1);
        let token = issue_token(
            &config.key,
            *self.next_client_id,
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

/// The IPv4 address behind an IPv4-mapped IPv6 one, so both forms count as one host.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Whether two addresses are the same host (an IPv4 address and its IPv6-mapped form
/// are).
pub(crate) fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    canonical_ip(a) == canonical_ip(b)
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

/// Asks for a token, blocking up to [`TOKEN_REQUEST_DEADLINE`] for each step.
pub fn fetch_token(server: SocketAddr, password: &str) -> Result<ConnectToken, String> {
    if password.len() > MAX_PASSWORD_LEN {
        return Err(format!("passwords are at most {MAX_PASSWORD_LEN} bytes"));
    }
    // A server that is starting refuses connections for a moment: keep knocking for a
    // few seconds, as netcode keeps sending its connection request.
    let started = Instant::now();
    let mut stream = loop {
        match TcpStream::connect_timeout(&server, TOKEN_REQUEST_DEADLINE) {
            Ok(stream) => break stream,
            Err(e)
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && started.elapsed() < TOKEN_CONNECT_PATIENCE =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => {
                return Err(format!(
                    "cannot reach {server}'s token service over TCP ({e}); if it runs with \
                     --insecure, connect with --insecure too"
                ));
            }
        }
    };
    let timeouts = stream
        .set_read_timeout(Some(TOKEN_REQUEST_DEADLINE))
        .and_then(|()| stream.set_write_timeout(Some(TOKEN_REQUEST_DEADLINE)));
    timeouts.map_err(|e| format!("token request to {server}: {e}"))?;
    let request = TokenRequest {
        protocol_version: PROTOCOL_VERSION,
        password: password.to_string(),
    };
    let bytes = request
        .encode()
        .ok()
        .and_then(|b| frame(&b))
        .ok_or("the token request is too large")?;
    stream
        .write_all(&bytes)
        .map_err(|e| format!("token request to {server}: {e}"))?;
    // Reads at most one whole reply; a server cannot make the client buffer more.
    let mut reply = Vec::new();
    stream
        .take((TokenReply::MAX_BYTES + 2) as u64)
        .read_to_end(&mut reply)
        .map_err(|e| format!("token reply from {server}: {e}"))?;
    let Framed::Complete(len) = framed(&reply, TokenReply::MAX_BYTES) else {
        return Err(format!("{server} did not answer with a token"));
    };
    let reply = TokenReply::decode(&reply[2..2 + len])
        .map_err(|e| format!("bad token reply from {server}: {e}"))?;
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

    #[test]
    fn rate_limits_allow_a_burst_then_a_steady_trickle() {
        let mut limiter = RateLimiter::new(5.0, 0.5);
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let t0 = Instant::now();
        assert_eq!((0..10).filter(|_| limiter.allow(ip, t0)).count(), 5);
        assert!(!limiter.allow(ip, t0 + Duration::from_millis(1500)));
        assert!(limiter.allow(ip, t0 + Duration::from_millis(2100)));
        // Another address has its own bucket, and the table stays bounded.
        for i in 0..(MAX_TRACKED_ADDRESSES as u32 + 10) {
            assert!(limiter.allow(IpAddr::V4(Ipv4Addr::from(i)), t0));
        }
        assert!(limiter.buckets.len() <= MAX_TRACKED_ADDRESSES);
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
