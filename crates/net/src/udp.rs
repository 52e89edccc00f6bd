//! netcode over UDP, with a link conditioner in the socket path.
//!
//! renet_netcode's transports own their socket, so nothing can be put between them and
//! the network; these transports drive renetcode's connection state machines (the same
//! ones renet_netcode uses) over a [`ConditionedSocket`], which can delay, drop, duplicate
//! and reorder datagrams both ways for `--fake-latency` and friends. With the conditioner
//! idle, datagrams pass straight through.

use crate::auth::{
    self, AdmissionLimits, CONNECTION_REQUEST_BYTES, RateLimiter, SecureConfig, Security,
    TokenService,
};
use crate::bundle;
use crate::{ConditionerSettings, LinkConditioner, LinkConditions, NetStats};
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
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Addresses in the middle of a handshake remembered at once; a flood of well-formed
/// requests from many addresses forgets the oldest.
const MAX_HANDSHAKING: usize = 4096;

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
    handshaking: HashMap<SocketAddr, Instant>,
    handshake_limiter: RateLimiter,
    /// Each client's acknowledgement pacing.
    pacers: HashMap<u64, bundle::Pacer>,
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

/// The client's netcode endpoint.
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
        handshaking: HashMap::new(),
        handshake_limiter: RateLimiter::new(auth::HANDSHAKE_BURST, auth::HANDSHAKES_PER_SECOND),
        pacers: HashMap::new(),
    })
}

/// Binds the game's UDP socket and, when it issues tokens, the TCP listener on the same
/// port number.
fn bind_game_port(
    bind: SocketAddr,
    issue_tokens: bool,
) -> Result<(UdpSocket, SocketAddr, Option<TokenService>), UdpSetupError> {
    let socket =
        UdpSocket::bind(bind).map_err(|e| UdpSetupError(format!("cannot bind UDP {bind}: {e}")))?;
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
    let socket = client_socket(server)?;
    let phase = match security {
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
    };
    Ok(UdpClientTransport {
        phase,
        server,
        security: security.clone(),
        socket,
        pacer: bundle::Pacer::default(),
        malformed_bundles: 0,
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
    Ok(UdpClientTransport {
        phase: ClientPhase::Netcode(Box::new(netcode)),
        server,
        security: ClientSecurity::default(),
        socket: client_socket(server)?,
        pacer: bundle::Pacer::default(),
        malformed_bundles: 0,
    })
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
    /// Connections per IP address, kept up to date as clients come and go.
    per_ip: &'a mut HashMap<IpAddr, usize>,
    /// Connections netcode accepted that the server turns away.
    rejected: &'a mut Vec<u64>,
    stats: &'a mut NetStats,
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
        ServerResult::Payload { client_id, payload } => match bundle::unbundle(payload) {
            Ok(packets) => {
                for packet in packets {
                    // A payload for a connection renet already dropped is discarded.
                    let _ = server.process_packet_from(packet, client_id);
                }
            }
            Err(_) => admission.stats.malformed_bundles += 1,
        },
        ServerResult::ClientConnected {
            client_id,
            addr,
            payload,
            user_data,
        } => {
            let ip = addr.ip();
            let here = admission.per_ip.entry(ip).or_default();
            // A token only works from the address that asked for it.
            let wrong_address = admission.secure && !auth::user_data_matches(&user_data, ip);
            if wrong_address || *here >= admission.limits.max_per_address {
                admission.stats.connections_refused += 1;
                admission.rejected.push(client_id);
                return;
            }
            *here += 1;
            server.add_connection(client_id);
            socket.send_to(payload, addr);
        }
        ServerResult::ClientDisconnected {
            client_id,
            addr,
            payload,
        } => {
            if let Some(n) = admission.per_ip.get_mut(&addr.ip()) {
                *n = n.saturating_sub(1);
            }
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
        if let Some(since) = self.handshaking.get(&addr)
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
        if self.handshaking.len() >= MAX_HANDSHAKING && !self.handshaking.contains_key(&addr) {
            let horizon = Duration::from_secs(auth::TOKEN_EXPIRE_SECONDS);
            self.handshaking
                .retain(|_, since| now.duration_since(*since) < horizon);
            if self.handshaking.len() >= MAX_HANDSHAKING {
                self.handshaking.clear();
            }
        }
        self.handshaking.insert(addr, now);
        true
    }
}

/// Serves token requests, receives datagrams into renet (screened first) and keeps
/// netcode's connections alive.
pub(crate) fn server_receive(
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
    mut stats: ResMut<NetStats>,
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
    let mut per_ip: HashMap<IpAddr, usize> = HashMap::new();
    for addr in &connected {
        *per_ip.entry(addr.ip()).or_default() += 1;
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
            netcode, socket, ..
        } = &mut *transport;
        let result = netcode.process_packet(addr, &mut bytes);
        let mut admission = Admission {
            secure,
            limits,
            per_ip: &mut per_ip,
            rejected: &mut rejected,
            stats: &mut stats,
        };
        handle(result, socket, &mut server, &mut admission);
    }
    let UdpServerTransport {
        netcode,
        socket,
        secure,
        limits,
        ..
    } = &mut *transport;
    let mut admission = Admission {
        secure: secure.is_some(),
        limits: *limits,
        per_ip: &mut per_ip,
        rejected: &mut rejected,
        stats: &mut stats,
    };
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

/// Sends renet's outgoing packets through netcode, bundled, holding back
/// acknowledgements alone (see [`bundle`]).
pub(crate) fn server_send(
    mut transport: ResMut<UdpServerTransport>,
    mut server: ResMut<RenetServer>,
) {
    let UdpServerTransport {
        netcode,
        socket,
        pacers,
        ..
    } = &mut *transport;
    let now = Instant::now();
    let clients = server.clients_id();
    pacers.retain(|id, _| clients.contains(id));
    for client_id in clients {
        let Ok(packets) = server.get_packets_to_send(client_id) else {
            continue;
        };
        let pacer = pacers.entry(client_id).or_default();
        for packet in pacer.payloads(packets, now) {
            match netcode.generate_payload_packet(client_id, &packet) {
                Ok((addr, payload)) => socket.send_to(payload, addr),
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

/// Waits for the connect token, then receives datagrams into renet and keeps the
/// connection alive.
pub(crate) fn client_receive(
    mut transport: ResMut<UdpClientTransport>,
    mut client: ResMut<RenetClient>,
    time: Res<Time<Real>>,
) {
    let transport = &mut *transport;
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
    if client.is_disconnected() {
        if let Ok((addr, packet)) = netcode.disconnect() {
            socket.send_to(packet, addr);
        }
        return;
    }
    if netcode.is_connected() {
        client.set_connected();
    } else if netcode.is_connecting() {
        client.set_connecting();
    }
    match socket.receive() {
        Ok(datagrams) => {
            for (addr, mut bytes) in datagrams {
                if addr != netcode.server_addr() {
                    continue;
                }
                if let Some(payload) = netcode.process_packet(&mut bytes) {
                    match bundle::unbundle(payload) {
                        Ok(packets) => packets.into_iter().for_each(|p| client.process_packet(p)),
                        Err(_) => transport.malformed_bundles += 1,
                    }
                }
            }
        }
        Err(e) => debug!("UDP receive failed: {e}"),
    }
    if let Some((packet, addr)) = netcode.update(time.delta()) {
        socket.send_to(packet, addr);
    }
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
    /// Tells the server this client is leaving, at once.
    pub fn goodbye(&mut self) {
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
    /// server, refused or never made): the case worth reconnecting for.
    pub fn timed_out(&self) -> bool {
        matches!(
            &self.phase,
            ClientPhase::Netcode(n)
                if n.disconnect_reason() == Some(renetcode::DisconnectReason::ConnectionTimedOut)
        )
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
        transport.socket.set_conditions(conditions.0);
    }
}
