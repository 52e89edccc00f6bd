//! netcode over UDP, with a link conditioner in the socket path.
//!
//! renet_netcode's transports own their socket, so nothing can be put between them and
//! the network; these transports drive renetcode's connection state machines (the same
//! ones renet_netcode uses) over a [`ConditionedSocket`], which can delay, drop, duplicate
//! and reorder datagrams both ways for `--fake-latency` and friends. With the conditioner
//! idle, datagrams pass straight through.

use crate::auth::{
    self, AdmissionLimits, CONNECTION_REQUEST_BYTES, SecureConfig, Security, TokenService,
};
use crate::bundle;
use crate::guard::{self, PacketGuard};
use crate::limits::{HostKey, LruMap, RateLimiter};
use crate::{
    ConditionerSettings, LinkConditioner, LinkConditions, NetStats, PacketFault, PacketFaults,
};
use bevy::prelude::*;
use bevy_renet::{RenetClient, RenetServer};
use renetcode::{
    ClientAuthentication, ConnectToken, NETCODE_MAX_PACKET_BYTES, NetcodeClient, NetcodeServer,
    ServerAuthentication, ServerConfig, ServerResult,
};
use sightline_protocol::NETCODE_PROTOCOL_ID;
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Addresses in the middle of a handshake remembered at once; a flood of well-formed
/// requests from many addresses forgets the oldest.
const MAX_HANDSHAKING: usize = 4096;
/// How long a connection may go on sending without acknowledging anything it was sent,
/// seconds. An honest client acknowledges every 50 ms ([`crate::ACK_HOLD`]) while packets
/// reach it; one whose packets stop reaching it notices the silence within 1.5 s and
/// reconnects.
pub const ACK_SILENCE: Duration = Duration::from_secs(4);
/// Datagrams each way since the last acknowledgement before [`ACK_SILENCE`] counts: the
/// peer must have been sending, and been sent something to acknowledge.
const ACK_SILENCE_DATAGRAMS: u32 = 20;
/// Largest reliable backlog a connection may leave unacknowledged, bytes: an honest one
/// holds a few kilobytes (joining a full server, a second of loss), and after the
/// server caught up 5 s of a full server's ticks at once, under a hundred. One that
/// acknowledges everything but the reliable channel reaches it; renet would resend the
/// backlog every 100 ms (held to [`RESEND_BYTES_PER_SECOND`]) until its own 1 MiB.
pub const MAX_RELIABLE_BACKLOG: usize = 256 * 1024;
/// renet packets a peer may send per second (and at once): a 144 fps client sends about
/// three a frame, a 128 Hz server a few hundred a second. More are dropped before renet
/// reads them: renet's work per packet is small, but not nothing.
pub const PACKETS_PER_SECOND: f64 = 1024.0;

/// A peer's packets counted against [`PACKETS_PER_SECOND`] over the time they had to
/// arrive: the allowance grows at the rate over the time since the last count, up to
/// what that time allows and never less than a second's worth, so a backlog that waited
/// in the socket while this side stood still is not a flood.
#[derive(Debug, Clone)]
struct PacketRate {
    allowance: f64,
    counted_at: Instant,
    flood_noted_at: Option<Instant>,
}

impl PacketRate {
    fn new(now: Instant) -> Self {
        Self {
            allowance: PACKETS_PER_SECOND,
            counted_at: now,
            flood_noted_at: None,
        }
    }

    /// Takes one packet's allowance at `now`; false when it is spent.
    fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.counted_at).as_secs_f64();
        // Packets read together (one `now`) share one refill.
        if elapsed > 0.0 {
            self.counted_at = now;
            self.allowance = (self.allowance + PACKETS_PER_SECOND * elapsed)
                .min(PACKETS_PER_SECOND * elapsed.max(1.0));
        }
        if self.allowance < 1.0 {
            return false;
        }
        self.allowance -= 1.0;
        true
    }

    /// Whether a flood should be reported now: once a second while it lasts.
    fn report_flood(&mut self, now: Instant) -> bool {
        let due = self
            .flood_noted_at
            .is_none_or(|at| now.saturating_duration_since(at) >= Duration::from_secs(1));
        if due {
            self.flood_noted_at = Some(now);
        }
        due
    }
}

/// Bytes of resent reliable packets a connection may be sent per second (and at once):
/// renet resends every unacknowledged message each 100 ms, so a client that withholds
/// acknowledgements would otherwise be sent its whole backlog ten times a second. An
/// honest client at 400 ms round trip on a full server needs about a third of this.
pub const RESEND_BYTES_PER_SECOND: f32 = 48.0 * 1024.0;

/// A socket could not be set up.
#[derive(Debug)]
pub struct UdpSetupError(String);

impl fmt::Display for UdpSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UdpSetupError {}

impl UdpSetupError {
    pub(crate) fn new(message: String) -> Self {
        Self(message)
    }
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

type Datagram = (SocketAddr, Vec<u8>);

/// Bytes of IPv4 and UDP headers around each datagram.
const UDP_IPV4_HEADER_BYTES: u64 = 28;

/// What crossed a socket one way: datagrams, and bytes as the link carries them (each
/// datagram with its 28 bytes of UDP/IPv4 headers).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WireCount {
    /// Datagrams.
    pub datagrams: u64,
    /// Bytes, headers included.
    pub bytes: u64,
    /// The largest datagram's payload, bytes.
    pub largest: usize,
}

impl WireCount {
    fn count(&mut self, payload: usize) {
        self.datagrams += 1;
        self.bytes += payload as u64 + UDP_IPV4_HEADER_BYTES;
        self.largest = self.largest.max(payload);
    }
}

/// A non-blocking UDP socket whose traffic passes through a conditioner each way.
pub struct ConditionedSocket {
    socket: UdpSocket,
    outgoing: LinkConditioner<Datagram>,
    incoming: LinkConditioner<Datagram>,
    start: Instant,
    buffer: Box<[u8; NETCODE_MAX_PACKET_BYTES]>,
    /// Datagrams that failed to send.
    pub send_errors: u64,
    /// Datagrams sent.
    pub sent: WireCount,
    /// Datagrams received (before the conditioner drops any).
    pub received: WireCount,
}

impl ConditionedSocket {
    fn new(socket: UdpSocket) -> io::Result<Self> {
        socket.set_nonblocking(true)?;
        let seed = unix_now().as_nanos() as u64;
        Ok(Self {
            socket,
            outgoing: LinkConditioner::new(ConditionerSettings::default(), seed),
            incoming: LinkConditioner::new(ConditionerSettings::default(), seed ^ 0xa5a5),
            start: Instant::now(),
            buffer: Box::new([0; NETCODE_MAX_PACKET_BYTES]),
            send_errors: 0,
            sent: WireCount::default(),
            received: WireCount::default(),
        })
    }

    /// Sets how both directions misbehave: each way gets the full latency, so the round
    /// trip grows by twice `latency_ms`.
    pub fn set_conditions(&mut self, settings: ConditionerSettings) {
        self.outgoing.settings = settings;
        self.incoming.settings = settings;
    }

    /// How it misbehaves now.
    pub fn conditions(&self) -> ConditionerSettings {
        self.outgoing.settings
    }

    /// Adds what another socket counted (one this one replaced) to its own counts.
    fn absorb(&mut self, other: &ConditionedSocket) {
        self.send_errors += other.send_errors;
        for (mine, theirs) in [
            (&mut self.sent, other.sent),
            (&mut self.received, other.received),
        ] {
            mine.datagrams += theirs.datagrams;
            mine.bytes += theirs.bytes;
            mine.largest = mine.largest.max(theirs.largest);
        }
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Queues a datagram; it leaves when the conditioner lets it.
    pub fn send_to(&mut self, bytes: &[u8], addr: SocketAddr) {
        let now = self.now();
        self.outgoing.send(now, (addr, bytes.to_vec()));
        self.flush();
    }

    /// Sends whatever the conditioner has released.
    pub fn flush(&mut self) {
        for (addr, bytes) in self.outgoing.ready(self.now()) {
            match self.socket.send_to(&bytes, addr) {
                Ok(_) => self.sent.count(bytes.len()),
                Err(e) => {
                    self.send_errors += 1;
                    debug!("UDP send to {addr} failed: {e}");
                }
            }
        }
    }

    /// Everything received that the conditioner has released.
    pub fn receive(&mut self) -> io::Result<Vec<Datagram>> {
        let now = self.now();
        loop {
            match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((len, addr)) => {
                    self.received.count(len);
                    self.incoming.send(now, (addr, self.buffer[..len].to_vec()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                // A previous send bounced (Windows reports it on the next receive).
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(self.incoming.ready(now))
    }
}

/// The server's netcode endpoint, with its gatekeeping: the token service, the
/// screening of datagrams from unknown addresses, and the per-address limits.
#[derive(Resource)]
pub struct UdpServerTransport {
    netcode: NetcodeServer,
    /// The socket, for conditions and statistics.
    pub socket: ConditionedSocket,
    secure: Option<SecureConfig>,
    tokens: Option<TokenService>,
    limits: AdmissionLimits,
    public: SocketAddr,
    /// Addresses that sent a well-formed connection request lately, and when.
    handshaking: LruMap<SocketAddr, Instant>,
    handshake_limiter: RateLimiter,
    /// Each connected client's packet checks, pacing and budgets.
    peers: HashMap<u64, Peer>,
}

/// What the server's transport keeps for one connected client.
struct Peer {
    /// Its packets' checks and rate.
    guard: PacketGuard,
    rate: PacketRate,
    /// Acknowledgement pacing toward it.
    pacer: bundle::Pacer,
    /// Resent reliable bytes it may still be sent now.
    resend_allowance: f32,
    /// The newest reliable message id sent to it, plus one.
    reliable_sent: u64,
    /// When an acknowledgement from it last arrived, and payload datagrams each way since.
    acked_at: Instant,
    heard_since_ack: u32,
    sent_since_ack: u32,
    updated: Instant,
}

impl Peer {
    fn new(now: Instant) -> Self {
        Self {
            guard: PacketGuard::from_client(),
            rate: PacketRate::new(now),
            pacer: bundle::Pacer::default(),
            resend_allowance: RESEND_BYTES_PER_SECOND,
            reliable_sent: 0,
            acked_at: now,
            heard_since_ack: 0,
            sent_since_ack: 0,
            updated: now,
        }
    }

    /// Whether it has gone on sending without acknowledging what it was sent.
    fn stopped_acknowledging(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.acked_at) > ACK_SILENCE
            && self.heard_since_ack >= ACK_SILENCE_DATAGRAMS
            && self.sent_since_ack >= ACK_SILENCE_DATAGRAMS
    }

    /// Whether `packet` may go now: a resent reliable packet spends the resend allowance
    /// (refilled over time), anything else always may.
    fn may_send(&mut self, packet: &[u8], now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f32();
        self.updated = now;
        self.resend_allowance = (self.resend_allowance + elapsed * RESEND_BYTES_PER_SECOND)
            .min(RESEND_BYTES_PER_SECOND);
        let Some((first, last)) = guard::reliable_ids(packet) else {
            return true;
        };
        let resend = first < self.reliable_sent;
        self.reliable_sent = self.reliable_sent.max(last.saturating_add(1));
        if !resend {
            return true;
        }
        let cost = packet.len() as f32;
        if self.resend_allowance < cost {
            return false;
        }
        self.resend_allowance -= cost;
        true
    }
}

/// Where a client's connection stands before netcode takes over.
enum ClientPhase {
    /// Waiting for the token service's answer.
    /// (In a mutex only because resources must be `Sync`.)
    AwaitingToken(Mutex<mpsc::Receiver<Result<ConnectToken, String>>>),
    /// Speaking netcode.
    Netcode(Box<NetcodeClient>),
    /// No connection could be made, and why.
    Failed(String),
}

/// How long the server may be silent to a connected client before it opens a standby
/// connection: the server sends at least ten datagrams a second (snapshots, or netcode's
/// keep-alives), so silence this long means its packets no longer reach us (a NAT that
/// changed our port) or it stands still.
pub const SILENCE_BEFORE_STANDBY: Duration = Duration::from_millis(1500);
/// How long after one standby connection another may be tried while the silence lasts.
const STANDBY_RETRY: Duration = Duration::from_secs(3);

/// The client's netcode endpoint.
///
/// When the server falls silent ([`SILENCE_BEFORE_STANDBY`]) it opens a *standby*
/// connection from a fresh socket, beside the old one. If the old one speaks again (the
/// server had stood still), the standby is dropped and nothing changed. If the standby
/// connects first, the old path is dead (a NAT rebinding: the server sees our packets
/// from a port it does not know and its answers go to one that is gone); the standby
/// takes over ([`Self::timed_out`] says so) and the game resumes on it with its resume
/// secret at once ([`resume_udp`]), not after netcode's 10 s timeout.
#[derive(Resource)]
pub struct UdpClientTransport {
    phase: ClientPhase,
    server: SocketAddr,
    security: ClientSecurity,
    /// The socket, for conditions and statistics.
    pub socket: ConditionedSocket,
    /// Acknowledgement pacing toward the server.
    pacer: bundle::Pacer,
    /// Datagrams from the server holding a malformed bundle (dropped).
    pub malformed_bundles: u64,
    /// The server's packets' checks and rate.
    guard: PacketGuard,
    rate: PacketRate,
    /// renet packets from the server refused before renet read them.
    pub bad_packets: u64,
    /// When a datagram from the server last arrived (or the connection started).
    heard_at: Instant,
    /// Whether the game could resume on a standby (it was welcomed, with a secret).
    standby_allowed: bool,
    /// A second connection, opened while the server is silent.
    standby: Option<Standby>,
    standby_opened_at: Option<Instant>,
    /// Whether a standby took over and the game has yet to start a session on it.
    rebound: bool,
    /// Standby connections opened, and those that took over.
    pub standbys: u32,
    /// See `standbys`.
    pub rebinds: u32,
}

/// A standby connection (see [`UdpClientTransport`]).
struct Standby {
    phase: ClientPhase,
    socket: ConditionedSocket,
}

/// How a client connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientSecurity {
    /// Ask the server's token service for a connect token, giving this password (empty
    /// for a public server).
    Secure {
        /// The server's password.
        password: String,
    },
    /// Connect without a token, to a server started with `--insecure`.
    Insecure,
}

impl Default for ClientSecurity {
    fn default() -> Self {
        Self::Secure {
            password: String::new(),
        }
    }
}

/// Binds a server socket (and, in secure mode, the token service's TCP listener on the
/// same port number). `public` is the address clients dial when it differs from `bind`.
pub fn udp_server(
    bind: SocketAddr,
    public: Option<SocketAddr>,
    max_clients: usize,
    security: Security,
    limits: AdmissionLimits,
) -> Result<UdpServerTransport, UdpSetupError> {
    let (authentication, secure) = match security {
        Security::Secure(config) => (
            ServerAuthentication::Secure {
                private_key: config.key,
            },
            Some(config),
        ),
        Security::Insecure => (ServerAuthentication::Unsecure, None),
    };
    let issue_tokens = secure.as_ref().is_some_and(|c| c.issue_tokens);
    // Port 0 asks for any free port: try again until TCP has the same number free too.
    let attempts = if bind.port() == 0 { 16 } else { 1 };
    let mut bound = Err(UdpSetupError(format!("cannot bind {bind}")));
    for _ in 0..attempts {
        bound = bind_game_port(bind, issue_tokens);
        if bound.is_ok() {
            break;
        }
    }
    let (socket, local, tokens) = bound?;
    let public = public.unwrap_or(local);
    let netcode = NetcodeServer::new(ServerConfig {
        current_time: unix_now(),
        max_clients,
        protocol_id: NETCODE_PROTOCOL_ID,
        public_addresses: vec![public],
        authentication,
    });
    let socket = ConditionedSocket::new(socket)
        .map_err(|e| UdpSetupError(format!("cannot configure the socket: {e}")))?;
    Ok(UdpServerTransport {
        netcode,
        socket,
        secure,
        tokens,
        limits,
        public,
        handshaking: LruMap::new(MAX_HANDSHAKING),
        handshake_limiter: RateLimiter::new(auth::HANDSHAKE_BURST, auth::HANDSHAKES_PER_SECOND),
        peers: HashMap::new(),
    })
}

/// The receive buffer the server asks for, bytes: what clients send while the server
/// stands still waits there, and on waking the server reads it rather than lose it.
/// About 2.5 s of 16 players' input; the kernel gives at most `net.core.rmem_max`
/// (raise it for larger servers).
pub const SERVER_RECEIVE_BUFFER: usize = 8 * 1024 * 1024;

/// Binds the game's UDP socket and, when it issues tokens, the TCP listener on the same
/// port number.
fn bind_game_port(
    bind: SocketAddr,
    issue_tokens: bool,
) -> Result<(UdpSocket, SocketAddr, Option<TokenService>), UdpSetupError> {
    let socket =
        UdpSocket::bind(bind).map_err(|e| UdpSetupError(format!("cannot bind UDP {bind}: {e}")))?;
    // Best effort: a smaller buffer only loses more of a long stall's input.
    let buffer = socket2::SockRef::from(&socket);
    if buffer.set_recv_buffer_size(SERVER_RECEIVE_BUFFER).is_err() {
        debug!("cannot enlarge the socket's receive buffer");
    }
    let local = socket
        .local_addr()
        .map_err(|e| UdpSetupError(format!("cannot read the bound address: {e}")))?;
    let tokens = if issue_tokens {
        Some(TokenService::bind(local).map_err(|e| {
            UdpSetupError(format!(
                "cannot listen for token requests on TCP {local}: {e}"
            ))
        })?)
    } else {
        None
    };
    Ok((socket, local, tokens))
}

/// Opens a client socket toward `server`; in secure mode the token request starts at
/// once on a background thread.
pub fn udp_client(
    server: SocketAddr,
    security: &ClientSecurity,
) -> Result<UdpClientTransport, UdpSetupError> {
    let phase = open_phase(server, security)?;
    Ok(UdpClientTransport::new(
        phase,
        server,
        security.clone(),
        client_socket(server)?,
    ))
}

/// How a new connection to `server` starts: asking for a token, or (insecure) speaking
/// netcode at once.
fn open_phase(server: SocketAddr, security: &ClientSecurity) -> Result<ClientPhase, UdpSetupError> {
    Ok(match security {
        ClientSecurity::Secure { password } => {
            ClientPhase::AwaitingToken(Mutex::new(auth::request_token(server, password.clone())))
        }
        ClientSecurity::Insecure => {
            let now = unix_now();
            // Unique enough among the clients of one server: time in nanoseconds mixed
            // with pid.
            let client_id = now.as_nanos() as u64 ^ ((std::process::id() as u64) << 40);
            let netcode = NetcodeClient::new(
                now,
                ClientAuthentication::Unsecure {
                    protocol_id: NETCODE_PROTOCOL_ID,
                    client_id,
                    server_addr: server,
                    user_data: None,
                },
            )
            .map_err(|e| UdpSetupError(format!("cannot start netcode toward {server}: {e}")))?;
            ClientPhase::Netcode(Box::new(netcode))
        }
    })
}

/// Opens a client socket toward `server` with a connect token issued elsewhere (by a
/// matchmaker holding the server's key). The token's first address is replaced by
/// `server`, the address actually dialled. Reconnecting after a drop asks the server's
/// own token service, as a matchmaker's token is good for one connection.
pub fn udp_client_with_token(
    server: SocketAddr,
    mut token: ConnectToken,
) -> Result<UdpClientTransport, UdpSetupError> {
    token.server_addresses = [None; 32];
    token.server_addresses[0] = Some(server);
    let netcode = NetcodeClient::new(
        unix_now(),
        ClientAuthentication::Secure {
            connect_token: token,
        },
    )
    .map_err(|e| UdpSetupError(format!("cannot start netcode toward {server}: {e}")))?;
    Ok(UdpClientTransport::new(
        ClientPhase::Netcode(Box::new(netcode)),
        server,
        ClientSecurity::default(),
        client_socket(server)?,
    ))
}

/// A client's socket, of the server's address family.
fn client_socket(server: SocketAddr) -> Result<ConditionedSocket, UdpSetupError> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().expect("valid address")
    } else {
        "[::]:0".parse().expect("valid address")
    };
    let socket = UdpSocket::bind(bind)
        .map_err(|e| UdpSetupError(format!("cannot open a UDP socket: {e}")))?;
    ConditionedSocket::new(socket)
        .map_err(|e| UdpSetupError(format!("cannot configure the socket: {e}")))
}

/// What [`handle`] needs to vet a new connection.
struct Admission<'a> {
    secure: bool,
    limits: AdmissionLimits,
    /// Connections per host, kept up to date as clients come and go.
    per_host: &'a mut HashMap<HostKey, usize>,
    /// Connections netcode accepted that the server turns away.
    rejected: &'a mut Vec<u64>,
    stats: &'a mut NetStats,
    /// Each connected client's checks and budgets.
    peers: &'a mut HashMap<u64, Peer>,
    faults: &'a mut PacketFaults,
    now: Instant,
}

/// Does what a netcode server result asks: send a reply, deliver a payload to renet,
/// add or drop a connection.
fn handle(
    result: ServerResult,
    socket: &mut ConditionedSocket,
    server: &mut RenetServer,
    admission: &mut Admission,
) {
    match result {
        ServerResult::None => {}
        ServerResult::PacketToSend { addr, payload } => socket.send_to(payload, addr),
        ServerResult::Payload { client_id, payload } => {
            let Some(peer) = admission.peers.get_mut(&client_id) else {
                return; // turned away: renet never heard of it
            };
            let Ok(packets) = bundle::unbundle(payload) else {
                admission.stats.malformed_bundles += 1;
                return;
            };
            let acks = peer.guard.acks;
            for packet in packets {
                if !peer.rate.take(admission.now) {
                    admission.stats.bad_packets += 1;
                    if peer.rate.report_flood(admission.now) {
                        admission.faults.push(client_id, PacketFault::TooMany);
                    }
                    continue;
                }
                match peer.guard.check(packet) {
                    // A payload for a connection renet already dropped is discarded.
                    Ok(()) => drop(server.process_packet_from(packet, client_id)),
                    Err(fault) => {
                        admission.stats.bad_packets += 1;
                        admission.faults.push(client_id, fault);
                    }
                }
            }
            if peer.guard.acks != acks {
                (peer.acked_at, peer.heard_since_ack, peer.sent_since_ack) = (admission.now, 0, 0);
            } else {
                peer.heard_since_ack = peer.heard_since_ack.saturating_add(1);
            }
        }
        ServerResult::ClientConnected {
            client_id,
            addr,
            payload,
            user_data,
        } => {
            let ip = addr.ip();
            let here = admission.per_host.entry(HostKey::of(ip)).or_default();
            // A token only works from the address that asked for it.
            let wrong_address = admission.secure && !auth::user_data_matches(&user_data, ip);
            if wrong_address || *here >= admission.limits.max_per_address {
                admission.stats.connections_refused += 1;
                admission.rejected.push(client_id);
                return;
            }
            *here += 1;
            server.add_connection(client_id);
            admission.peers.insert(client_id, Peer::new(admission.now));
            socket.send_to(payload, addr);
        }
        ServerResult::ClientDisconnected {
            client_id,
            addr,
            payload,
        } => {
            if let Some(n) = admission.per_host.get_mut(&HostKey::of(addr.ip())) {
                *n = n.saturating_sub(1);
            }
            admission.peers.remove(&client_id);
            server.remove_connection(client_id);
            if let Some(payload) = payload {
                socket.send_to(payload, addr);
            }
        }
    }
}

impl UdpServerTransport {
    /// Whether a datagram may go to netcode. From a connected or handshaking address,
    /// anything may (netcode authenticates it); from anyone else, only a connection
    /// request of the right size within the address's rate. Everything else is junk,
    /// counted and dropped before it costs a decryption or a log line.
    fn screen(
        &mut self,
        addr: SocketAddr,
        bytes: &[u8],
        connected: &[SocketAddr],
        now: Instant,
        stats: &mut NetStats,
    ) -> bool {
        if connected.contains(&addr) {
            return true;
        }
        let request = bytes.len() == CONNECTION_REQUEST_BYTES && bytes[0] == 0;
        if let Some(since) = self.handshaking.peek(&addr)
            && now.duration_since(*since) < Duration::from_secs(auth::TOKEN_EXPIRE_SECONDS)
            && !request
        {
            return true;
        }
        if !request {
            stats.junk_datagrams += 1;
            return false;
        }
        if !self.handshake_limiter.allow(addr.ip(), now) {
            stats.handshakes_refused += 1;
            return false;
        }
        // Full, the table forgets the address least recently heard from.
        *self.handshaking.get_or_insert_with(addr, || now) = now;
        true
    }
}

/// Serves token requests, receives datagrams into renet (screened first, each renet
/// packet checked by its connection's [`PacketGuard`]) and keeps netcode's connections
/// alive; drops connections that go on sending without acknowledging.
pub(crate) fn server_receive(
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
    mut stats: ResMut<NetStats>,
    mut faults: ResMut<PacketFaults>,
    time: Res<Time<Real>>,
) {
    let transport = &mut *transport;
    transport.netcode.update(time.delta());
    if let (Some(tokens), Some(config)) = (&mut transport.tokens, &transport.secure) {
        tokens.poll(
            &transport.netcode,
            config,
            transport.limits,
            transport.public,
            &mut stats,
        );
    }
    let connected: Vec<SocketAddr> = transport
        .netcode
        .clients_id_iter()
        .filter_map(|id| transport.netcode.client_addr(id))
        .collect();
    let mut per_host: HashMap<HostKey, usize> = HashMap::new();
    for addr in &connected {
        *per_host.entry(HostKey::of(addr.ip())).or_default() += 1;
    }
    let mut rejected = Vec::new();
    let now = Instant::now();
    let datagrams = match transport.socket.receive() {
        Ok(datagrams) => datagrams,
        Err(e) => {
            stats.receive_errors += 1;
            debug!("UDP receive failed: {e}");
            Vec::new()
        }
    };
    // What the socket carried so far, headers included, for the status line's bandwidth
    // (renet's own count includes the acknowledgements the pacer left out).
    stats.sent_bytes = transport.socket.sent.bytes;
    stats.received_bytes = transport.socket.received.bytes;
    let (secure, limits) = (transport.secure.is_some(), transport.limits);
    for (addr, mut bytes) in datagrams {
        if !transport.screen(addr, &bytes, &connected, now, &mut stats) {
            continue;
        }
        let UdpServerTransport {
            netcode,
            socket,
            peers,
            ..
        } = &mut *transport;
        let result = netcode.process_packet(addr, &mut bytes);
        let mut admission = Admission {
            secure,
            limits,
            per_host: &mut per_host,
            rejected: &mut rejected,
            stats: &mut stats,
            peers,
            faults: &mut faults,
            now,
        };
        handle(result, socket, &mut server, &mut admission);
    }
    let UdpServerTransport {
        netcode,
        socket,
        secure,
        limits,
        peers,
        ..
    } = &mut *transport;
    // Checked after this frame's datagrams: acknowledgements that waited in the socket
    // while the server itself stalled count as arrived.
    let mut stalled = Vec::new();
    for (client_id, peer) in peers.iter() {
        if !server.is_connected(*client_id) {
            continue; // already on its way out
        }
        let backlog = renet_reliable_backlog(&server, *client_id);
        if peer.stopped_acknowledging(now) || backlog > MAX_RELIABLE_BACKLOG {
            stalled.push((*client_id, backlog));
        }
    }
    let mut admission = Admission {
        secure: secure.is_some(),
        limits: *limits,
        per_host: &mut per_host,
        rejected: &mut rejected,
        stats: &mut stats,
        peers,
        faults: &mut faults,
        now,
    };
    for (client_id, backlog) in stalled {
        // A departure, not a kick: a client whose packets stopped reaching it may still
        // come back with its resume secret.
        warn!(
            "client {client_id} went on sending without acknowledging ({} KiB unacknowledged); \
             dropped",
            backlog / 1024
        );
        admission.stats.ack_stalls += 1;
        // Without netcode's goodbye: a client still listening hears nothing more, as when
        // its path died, and resumes on a new connection instead of taking the goodbye
        // as final.
        if let ServerResult::ClientDisconnected {
            client_id, addr, ..
        } = netcode.disconnect(client_id)
        {
            let silent = ServerResult::ClientDisconnected {
                client_id,
                addr,
                payload: None,
            };
            handle(silent, socket, &mut server, &mut admission);
        }
    }
    for client_id in netcode.clients_id() {
        let result = netcode.update_client(client_id);
        handle(result, socket, &mut server, &mut admission);
    }
    for client_id in server.disconnections_id() {
        let result = netcode.disconnect(client_id);
        handle(result, socket, &mut server, &mut admission);
    }
    // Turned away: netcode's goodbye, and renet never hears of them.
    for client_id in rejected {
        if let ServerResult::ClientDisconnected {
            addr,
            payload: Some(payload),
            ..
        } = netcode.disconnect(client_id)
        {
            socket.send_to(payload, addr);
        }
    }
}

/// Bytes of reliable messages sent to a client and not yet acknowledged.
fn renet_reliable_backlog(server: &RenetServer, client_id: u64) -> usize {
    let most = sightline_protocol::connection_config().server_channels_config
        [usize::from(u8::from(sightline_protocol::Channel::Reliable))]
    .max_memory_usage_bytes;
    most.saturating_sub(
        server.channel_available_memory(client_id, sightline_protocol::Channel::Reliable),
    )
}

/// Sends renet's outgoing packets through netcode, bundled, holding back
/// acknowledgements alone (see [`bundle`]) and resends past a connection's budget.
pub(crate) fn server_send(
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
    mut stats: ResMut<NetStats>,
) {
    let UdpServerTransport {
        netcode,
        socket,
        peers,
        ..
    } = &mut *transport;
    let now = Instant::now();
    for client_id in server.clients_id() {
        let Ok(mut packets) = server.get_packets_to_send(client_id) else {
            continue;
        };
        let Some(peer) = peers.get_mut(&client_id) else {
            continue;
        };
        let before = packets.len();
        packets.retain(|p| peer.may_send(p, now));
        stats.resends_held += (before - packets.len()) as u64;
        for packet in peer.pacer.payloads(packets, now) {
            match netcode.generate_payload_packet(client_id, &packet) {
                Ok((addr, payload)) => {
                    peer.sent_since_ack = peer.sent_since_ack.saturating_add(1);
                    socket.send_to(payload, addr);
                }
                Err(e) => {
                    error!("cannot wrap a packet for client {client_id}: {e}");
                    break;
                }
            }
        }
    }
    socket.flush();
}

/// Tells every client goodbye when the app exits.
pub(crate) fn server_disconnect_on_exit(
    exit: MessageReader<AppExit>,
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
) {
    if exit.is_empty() {
        return;
    }
    let UdpServerTransport {
        netcode, socket, ..
    } = &mut *transport;
    for client_id in netcode.clients_id() {
        if let ServerResult::ClientDisconnected { addr, payload, .. } =
            netcode.disconnect(client_id)
        {
            server.remove_connection(client_id);
            if let Some(payload) = payload {
                socket.send_to(payload, addr);
            }
        }
    }
    // Goodbyes go out now, whatever the conditioner would say.
    socket.set_conditions(ConditionerSettings::default());
    socket.flush();
}

/// Waits for the connect token, then receives datagrams into renet (each renet packet
/// checked by the [`PacketGuard`]) and keeps the connection alive; opens, drives and
/// drops the standby connection.
pub(crate) fn client_receive(
    mut transport: ResMut<UdpClientTransport>,
    mut client: ResMut<RenetClient>,
    time: Res<Time<Real>>,
) {
    let transport = &mut *transport;
    let now = Instant::now();
    if let ClientPhase::AwaitingToken(answer) = &transport.phase {
        let answer = answer.lock().map(|a| a.try_recv());
        let next = match answer.unwrap_or(Err(mpsc::TryRecvError::Disconnected)) {
            Err(mpsc::TryRecvError::Empty) => {
                client.set_connecting();
                return;
            }
            Err(mpsc::TryRecvError::Disconnected) => {
                ClientPhase::Failed("the token request ended without an answer".into())
            }
            Ok(Err(reason)) => ClientPhase::Failed(reason),
            Ok(Ok(token)) => match NetcodeClient::new(
                unix_now(),
                ClientAuthentication::Secure {
                    connect_token: token,
                },
            ) {
                Ok(netcode) => ClientPhase::Netcode(Box::new(netcode)),
                Err(e) => ClientPhase::Failed(format!("cannot use the connect token: {e}")),
            },
        };
        transport.phase = next;
        transport.heard_at = now;
    }
    let ClientPhase::Netcode(netcode) = &mut transport.phase else {
        if !client.is_disconnected() {
            client.disconnect_due_to_transport();
        }
        return;
    };
    let socket = &mut transport.socket;
    if netcode.disconnect_reason().is_some() {
        if !client.is_disconnected() {
            client.disconnect_due_to_transport();
        }
        return;
    }
    // Taken over by a standby: keep it alive until the game starts a session on it.
    if client.is_disconnected() && !transport.rebound {
        if let Ok((addr, packet)) = netcode.disconnect() {
            socket.send_to(packet, addr);
        }
        return;
    }
    if !transport.rebound {
        if netcode.is_connected() {
            client.set_connected();
        } else if netcode.is_connecting() {
            client.set_connecting();
        }
    }
    let mut heard = false;
    match socket.receive() {
        Ok(datagrams) => {
            for (addr, mut bytes) in datagrams {
                if addr != netcode.server_addr() {
                    continue;
                }
                heard = true;
                if let Some(payload) = netcode.process_packet(&mut bytes) {
                    let Ok(packets) = bundle::unbundle(payload) else {
                        transport.malformed_bundles += 1;
                        continue;
                    };
                    for packet in packets {
                        if !transport.rate.take(now) {
                            transport.bad_packets += 1;
                            continue;
                        }
                        match transport.guard.check(packet) {
                            Ok(()) if !transport.rebound => client.process_packet(packet),
                            Ok(()) => {}
                            Err(_) => transport.bad_packets += 1,
                        }
                    }
                }
            }
        }
        Err(e) => debug!("UDP receive failed: {e}"),
    }
    if let Some((packet, addr)) = netcode.update(time.delta()) {
        socket.send_to(packet, addr);
    }
    if heard {
        transport.heard_at = now;
        if transport.drop_standby() {
            info!(
                "{} spoke again; standby connection dropped",
                transport.server
            );
        }
        return;
    }
    transport.open_standby_if_silent(now);
    if transport.drive_standby(time.delta()) {
        transport.take_standby(now);
        client.disconnect_due_to_transport();
    }
}

/// Starts a session on the connection a standby took over (see [`UdpClientTransport`]):
/// a fresh renet client on it, the old one's state gone with the old path. False when
/// there is none to resume on.
pub fn resume_udp(world: &mut World) -> bool {
    let Some(mut transport) = world.get_resource_mut::<UdpClientTransport>() else {
        return false;
    };
    if !transport.rebound {
        return false;
    }
    transport.rebound = false;
    let mut client = RenetClient::new(sightline_protocol::connection_config());
    client.set_connecting();
    world.insert_resource(client);
    true
}

/// Sends renet's outgoing packets through netcode, bundled, holding back
/// acknowledgements alone (see [`bundle`]).
pub(crate) fn client_send(
    mut transport: ResMut<UdpClientTransport>,
    mut client: ResMut<RenetClient>,
) {
    let transport = &mut *transport;
    if let ClientPhase::Netcode(netcode) = &mut transport.phase
        && netcode.is_connected()
    {
        let now = Instant::now();
        let packets = client.get_packets_to_send();
        for packet in transport.pacer.payloads(packets, now) {
            match netcode.generate_payload_packet(&packet) {
                Ok((addr, payload)) => transport.socket.send_to(payload, addr),
                Err(e) => {
                    error!("cannot wrap a packet for the server: {e}");
                    break;
                }
            }
        }
    }
    transport.socket.flush();
}

impl UdpClientTransport {
    fn new(
        phase: ClientPhase,
        server: SocketAddr,
        security: ClientSecurity,
        socket: ConditionedSocket,
    ) -> Self {
        Self {
            phase,
            server,
            security,
            socket,
            pacer: bundle::Pacer::default(),
            malformed_bundles: 0,
            guard: PacketGuard::from_server(),
            rate: PacketRate::new(Instant::now()),
            bad_packets: 0,
            heard_at: Instant::now(),
            standby_allowed: false,
            standby: None,
            standby_opened_at: None,
            rebound: false,
            standbys: 0,
            rebinds: 0,
        }
    }

    /// Opens a standby connection when a connected server has been silent too long (at
    /// most one at a time, and one per [`STANDBY_RETRY`]).
    fn open_standby_if_silent(&mut self, now: Instant) {
        let connected = self.standby_allowed
            && matches!(&self.phase, ClientPhase::Netcode(n) if n.is_connected());
        let silent = now.saturating_duration_since(self.heard_at) > SILENCE_BEFORE_STANDBY;
        let may_retry = self
            .standby_opened_at
            .is_none_or(|at| now.saturating_duration_since(at) > STANDBY_RETRY);
        if !connected || !silent || !may_retry || self.standby.is_some() {
            return;
        }
        self.standby_opened_at = Some(now);
        let opened = open_phase(self.server, &self.security)
            .and_then(|phase| Ok((phase, client_socket(self.server)?)));
        match opened {
            Ok((phase, mut socket)) => {
                info!(
                    "no packets from {} for {:.1} s; opening a standby connection",
                    self.server,
                    now.saturating_duration_since(self.heard_at).as_secs_f32()
                );
                socket.set_conditions(self.socket.conditions());
                self.standbys += 1;
                self.standby = Some(Standby { phase, socket });
            }
            Err(e) => debug!("cannot open a standby connection: {e}"),
        }
    }

    /// Drops the standby connection, if there is one (saying goodbye on it if it got
    /// as far as connecting); true if there was.
    fn drop_standby(&mut self) -> bool {
        let Some(mut standby) = self.standby.take() else {
            return false;
        };
        if let ClientPhase::Netcode(netcode) = &mut standby.phase
            && let Ok((addr, packet)) = netcode.disconnect()
        {
            standby.socket.send_to(packet, addr);
        }
        standby.socket.flush();
        true
    }

    /// Moves the standby connection along; true once it is connected.
    fn drive_standby(&mut self, delta: Duration) -> bool {
        let Some(standby) = &mut self.standby else {
            return false;
        };
        if let ClientPhase::AwaitingToken(answer) = &standby.phase {
            let answer = answer.lock().map(|a| a.try_recv());
            standby.phase = match answer.unwrap_or(Err(mpsc::TryRecvError::Disconnected)) {
                Err(mpsc::TryRecvError::Empty) => return false,
                Ok(Ok(token)) => match NetcodeClient::new(
                    unix_now(),
                    ClientAuthentication::Secure {
                        connect_token: token,
                    },
                ) {
                    Ok(netcode) => ClientPhase::Netcode(Box::new(netcode)),
                    Err(e) => ClientPhase::Failed(e.to_string()),
                },
                Ok(Err(reason)) => ClientPhase::Failed(reason),
                Err(mpsc::TryRecvError::Disconnected) => ClientPhase::Failed(String::new()),
            };
        }
        let ClientPhase::Netcode(netcode) = &mut standby.phase else {
            self.standby = None; // it failed; the old connection may still time out
            return false;
        };
        if netcode.disconnect_reason().is_some() {
            self.standby = None;
            return false;
        }
        if let Ok(datagrams) = standby.socket.receive() {
            for (addr, mut bytes) in datagrams {
                // Nothing but netcode's own packets comes before the game says Hello.
                if addr == netcode.server_addr() {
                    let _ = netcode.process_packet(&mut bytes);
                }
            }
        }
        if let Some((packet, addr)) = netcode.update(delta) {
            standby.socket.send_to(packet, addr);
        }
        standby.socket.flush();
        netcode.is_connected()
    }

    /// Makes the standby connection the one in use, and says goodbye on the old one.
    fn take_standby(&mut self, now: Instant) {
        let Some(standby) = self.standby.take() else {
            return;
        };
        let mut old_socket = std::mem::replace(&mut self.socket, standby.socket);
        let old_phase = std::mem::replace(&mut self.phase, standby.phase);
        if let ClientPhase::Netcode(mut old) = old_phase
            && let Ok((addr, packet)) = old.disconnect()
        {
            old_socket.send_to(packet, addr);
            old_socket.flush();
        }
        self.socket.absorb(&old_socket);
        self.pacer = bundle::Pacer::default();
        self.guard = PacketGuard::from_server();
        self.rate = PacketRate::new(now);
        self.heard_at = now;
        self.rebound = true;
        self.rebinds += 1;
        warn!(
            "the old connection to {} went silent and a new one answered; resuming on it",
            self.server
        );
    }

    /// Sends from a new local port from now on, without telling anyone, as a NAT that
    /// rebinds does: the server sees the connection's packets come from an address it
    /// does not know, and what it sends to the old one is lost. For fault tests (the
    /// chaos soak).
    pub fn change_port(&mut self) -> Result<(), UdpSetupError> {
        let mut socket = client_socket(self.server)?;
        socket.set_conditions(self.socket.conditions());
        let old = std::mem::replace(&mut self.socket, socket);
        self.socket.absorb(&old);
        Ok(())
    }

    /// Sets how its sockets (the one in use and a standby's) misbehave.
    pub fn set_conditions(&mut self, settings: ConditionerSettings) {
        self.socket.set_conditions(settings);
        if let Some(standby) = &mut self.standby {
            standby.socket.set_conditions(settings);
        }
    }

    /// Tells the server this client is leaving, at once (and drops a standby).
    pub fn goodbye(&mut self) {
        self.drop_standby();
        self.socket.set_conditions(ConditionerSettings::default());
        if let ClientPhase::Netcode(netcode) = &mut self.phase
            && let Ok((addr, packet)) = netcode.disconnect()
        {
            self.socket.send_to(packet, addr);
        }
        self.socket.flush();
    }

    /// Why the transport gave up, in words a player can act on: the token service's
    /// refusal, or netcode's reason (timed out, denied...). `None` while it is fine.
    pub fn failure(&self) -> Option<String> {
        if self.rebound {
            return Some(format!(
                "no packets from {} for {:.1} s; resuming on a new connection",
                self.server,
                SILENCE_BEFORE_STANDBY.as_secs_f32()
            ));
        }
        match &self.phase {
            ClientPhase::AwaitingToken(_) => None,
            ClientPhase::Failed(reason) => Some(reason.clone()),
            ClientPhase::Netcode(netcode) => netcode.disconnect_reason().map(|r| match r {
                renetcode::DisconnectReason::ConnectionDenied => {
                    "the server denied the connection (full, or too many from your address)"
                        .to_string()
                }
                other => format!("{} ({other})", self.server),
            }),
        }
    }

    /// The server's address.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// Whether an established connection went silent (as opposed to being closed by the
    /// server, refused or never made): the case worth reconnecting for. True too once a
    /// standby connection took over, which the game resumes on at once.
    pub fn timed_out(&self) -> bool {
        self.rebound
            || matches!(
                &self.phase,
                ClientPhase::Netcode(n)
                    if n.disconnect_reason() == Some(renetcode::DisconnectReason::ConnectionTimedOut)
            )
    }

    /// Lets a silent connection be replaced by a standby, or not: only a game that could
    /// resume on one (in it, with a resume secret) should allow it.
    pub fn allow_standby(&mut self, allowed: bool) {
        self.standby_allowed = allowed;
    }

    /// Whether a standby may be opened ([`Self::allow_standby`]).
    pub fn standby_allowed(&self) -> bool {
        self.standby_allowed
    }

    /// Whether a standby connection took over and waits for the game to resume on it
    /// ([`resume_udp`]).
    pub fn rebound(&self) -> bool {
        self.rebound
    }

    /// How this transport connects (to connect again the same way).
    pub fn security(&self) -> &ClientSecurity {
        &self.security
    }
}

/// Tells the server goodbye when the app exits.
pub(crate) fn client_disconnect_on_exit(
    exit: MessageReader<AppExit>,
    mut transport: ResMut<UdpClientTransport>,
) {
    if !exit.is_empty() {
        transport.goodbye();
    }
}

/// Applies [`LinkConditions`] to the server's socket when they change.
pub(crate) fn server_condition(
    conditions: Res<LinkConditions>,
    mut transport: ResMut<UdpServerTransport>,
) {
    if conditions.is_changed() {
        transport.socket.set_conditions(conditions.0);
    }
}

/// Applies [`LinkConditions`] to the client's socket when they change.
pub(crate) fn client_condition(
    conditions: Res<LinkConditions>,
    mut transport: ResMut<UdpClientTransport>,
) {
    // A new transport (a reconnection) gets the conditions too.
    if conditions.is_changed() || transport.is_added() {
        transport.set_conditions(conditions.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_s_packets_are_counted_over_the_time_they_had_to_arrive() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut rate = PacketRate::new(t0);
        let burst = PACKETS_PER_SECOND as usize;
        assert_eq!((0..2 * burst).filter(|_| rate.take(t0)).count(), burst);
        assert!(rate.report_flood(t0));
        assert!(!rate.report_flood(at(500)), "once a second");
        assert_eq!((0..burst).filter(|_| rate.take(at(500))).count(), burst / 2);
        // This side stood still 3 s: what waited meanwhile is read.
        assert_eq!(
            (0..4 * burst).filter(|_| rate.take(at(3500))).count(),
            3 * burst
        );
    }

    #[test]
    fn resends_spend_a_budget_and_new_messages_do_not() {
        let t0 = Instant::now();
        let mut peer = Peer::new(t0);
        let reliable = |id: u8, len: usize| {
            let mut p = vec![0, 0, 0, 0, 1, id, 0x40 | (len >> 8) as u8, len as u8];
            p.extend(std::iter::repeat_n(7, len));
            p
        };
        for id in 0..40 {
            assert!(
                peer.may_send(&reliable(id, 1000), t0),
                "new messages always go"
            );
        }
        let resent = (0..100)
            .filter(|_| peer.may_send(&reliable(3, 1000), t0))
            .count();
        assert_eq!(resent, (RESEND_BYTES_PER_SECOND / 1008.0) as usize);
        assert!(
            peer.may_send(&[1, 0, 1, 0, 0], t0),
            "unreliable packets always go"
        );
        assert!(peer.may_send(&reliable(3, 1000), t0 + Duration::from_secs(1)));
    }
}
