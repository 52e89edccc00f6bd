//! The server's end: its netcode endpoint with the gatekeeping in front of it (screening,
//! admission, per-peer pacing and budgets), and the systems that drive it.

use super::arrivals::{Arrivals, payload_sequence};
use super::header::netcode_readable;
use super::relayed::RelayDuties;
use super::socket::{ConditionedSocket, PacketRate, UdpSetupError, unix_now};
use crate::auth::{self, AdmissionLimits, SecureConfig, Security, TokenService};
use crate::bundle;
use crate::guard::{self, PacketGuard};
use crate::{AddressBans, Connectionless, ForeignStreams};
use crate::{
    ConditionerSettings, LinkConditions, NetStats, PacketFault, PacketFaults, SentToClients,
    UDP_IP_HEADER,
};
use bevy::prelude::*;
use bevy_renet::RenetServer;
use renetcode::{NetcodeServer, ServerAuthentication, ServerConfig, ServerResult};
use sightline_limits::{HostKey, LruMap, Rate, Shares, canonical_ip};
use sightline_tokens::NETCODE_PROTOCOL_ID;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

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

/// Bytes of resent reliable packets a connection may be sent per second (and at once):
/// renet resends every unacknowledged message each 100 ms, so a client that withholds
/// acknowledgements would otherwise be sent its whole backlog ten times a second. An
/// honest client at 400 ms round trip on a full server needs about a third of this.
pub const RESEND_BYTES_PER_SECOND: f32 = 48.0 * 1024.0;

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
    handshake_limiter: Shares,
    /// Each connected client's packet checks, pacing and budgets.
    peers: HashMap<u64, Peer>,
    /// What it does for a relay, when players reach it through one.
    relay: Option<RelayDuties>,
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
    /// Which of its numbered datagrams arrived.
    arrivals: Arrivals,
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
            arrivals: Arrivals::default(),
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
    let mut bound = Err(UdpSetupError::new(format!("cannot bind {bind}")));
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
        .map_err(|e| UdpSetupError::new(format!("cannot configure the socket: {e}")))?;
    Ok(UdpServerTransport {
        netcode,
        socket,
        secure,
        tokens,
        limits,
        public,
        handshaking: LruMap::new(MAX_HANDSHAKING),
        handshake_limiter: Shares::per_host(Rate::new(
            auth::HANDSHAKE_BURST,
            auth::HANDSHAKES_PER_SECOND,
        )),
        peers: HashMap::new(),
        relay: None,
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
    let socket = UdpSocket::bind(bind)
        .map_err(|e| UdpSetupError::new(format!("cannot bind UDP {bind}: {e}")))?;
    // Best effort: a smaller buffer only loses more of a long stall's input.
    let buffer = socket2::SockRef::from(&socket);
    if buffer.set_recv_buffer_size(SERVER_RECEIVE_BUFFER).is_err() {
        debug!("cannot enlarge the socket's receive buffer");
    }
    let local = socket
        .local_addr()
        .map_err(|e| UdpSetupError::new(format!("cannot read the bound address: {e}")))?;
    let tokens = if issue_tokens {
        Some(TokenService::bind(local).map_err(|e| {
            UdpSetupError::new(format!(
                "cannot listen for token requests on TCP {local}: {e}"
            ))
        })?)
    } else {
        None
    };
    Ok((socket, local, tokens))
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
    /// Addresses refused even with a valid token (a matchmaker's, or none at all).
    bans: &'a AddressBans,
    now: Instant,
}

/// Does what a netcode server result asks: send a reply, deliver a payload to renet,
/// add or drop a connection.
fn handle(
    result: ServerResult,
    sequence: Option<u64>,
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
            // netcode accepted it, so its number is the client's own.
            if let Some(seq) = sequence {
                peer.arrivals.arrived(seq);
            }
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
            let wrong_address =
                admission.secure && !sightline_tokens::user_data_matches(&user_data, ip);
            let banned = admission.bans.refusal(ip).is_some();
            if wrong_address || banned || *here >= admission.limits.max_per_address {
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
    /// The address a connected client sends from.
    pub fn client_addr(&self, client_id: u64) -> Option<SocketAddr> {
        self.netcode.client_addr(client_id)
    }

    /// The share of a connected client's datagrams lost on the way in, 0 to 1, over its
    /// last few seconds of sending (`None` until enough were numbered).
    pub fn upstream_loss(&self, client_id: u64) -> Option<f32> {
        self.peers.get(&client_id)?.arrivals.lost()
    }

    /// The address clients dial.
    pub fn public_addr(&self) -> SocketAddr {
        self.public
    }

    /// Whether a token needs a password (what server lists show as a lock).
    pub fn password_protected(&self) -> bool {
        self.secure.as_ref().is_some_and(|c| c.password.is_some())
    }

    /// Changes the password players must give (`None`: none); `false` on an insecure
    /// server, which checks no password.
    pub fn set_password(&mut self, password: Option<String>) -> bool {
        match &mut self.secure {
            Some(config) => {
                config.password = password;
                true
            }
            None => false,
        }
    }

    /// Serves players through the relay whose control port is `relay` too, registering
    /// from the game's own port (so the relay reaches it through any router that lets
    /// its replies in). `announce` (master lists) are then told of the relay's address,
    /// not this one; `news` hears what the relay and its probe say, as lines for a
    /// player (they are logged too).
    pub fn use_relay(
        &mut self,
        relay: SocketAddr,
        announce: Vec<SocketAddr>,
        news: Option<std::sync::mpsc::Sender<String>>,
    ) {
        let link = sightline_relay::HostLink::new(relay, announce, Instant::now());
        self.socket.set_relay(link);
        self.relay = Some(RelayDuties::new(news));
    }

    /// Has the relay whose control port is `relay` probe this server's port from a port
    /// it never spoke to, opening no game there: `news` hears whether strangers reach
    /// the server directly (it is logged too).
    pub fn probe_reachability(
        &mut self,
        relay: SocketAddr,
        news: Option<std::sync::mpsc::Sender<String>>,
    ) {
        let port = self
            .socket
            .local_addr()
            .map_or(self.public.port(), |a| a.port());
        let link = sightline_relay::HostLink::probe_only(relay, port, Instant::now());
        self.socket.set_relay(link);
        self.relay = Some(RelayDuties::new(news));
    }

    /// The game port `peer` dialled: the relay's, for a player who came through it.
    pub fn port_for(&self, peer: SocketAddr) -> u16 {
        self.socket
            .relay()
            .filter(|r| r.reached_through(peer, Instant::now()))
            .and_then(|r| r.public_addr())
            .map_or(self.public.port(), |relayed| relayed.port())
    }

    /// The address players dial through the relay, once the relay opened the game.
    pub fn relayed_addr(&self) -> Option<SocketAddr> {
        self.socket.relay()?.public_addr()
    }

    /// Counts the games the relay opened: when it changes, so did [`Self::relayed_addr`]
    /// (masters should hear of it again).
    pub fn relay_generation(&self) -> u64 {
        self.socket.relay().map_or(0, |r| r.generation())
    }

    /// Whether the relay's probe reached this server's own port from a stranger's
    /// address (`None`: no relay, or no verdict yet).
    pub fn reachable(&self) -> Option<bool> {
        self.socket.relay()?.reachable()
    }

    /// Changes the most connections one address may hold.
    pub fn set_max_per_address(&mut self, max: usize) {
        self.limits.max_per_address = max;
    }

    /// Whether a datagram may go to netcode. From a connected or handshaking address,
    /// anything whose header netcode reads safely may ([`netcode_readable`]: netcode
    /// authenticates it); from anyone else, only a connection request whose token opens
    /// and names the sender's address ([`sightline_tokens::request_address`]), within that address's
    /// rate. Everything else is junk, counted and dropped before netcode or a log line
    /// sees it.
    fn screen(
        &mut self,
        addr: SocketAddr,
        bytes: &[u8],
        connected: &[SocketAddr],
        now: Instant,
        stats: &mut NetStats,
    ) -> bool {
        if !netcode_readable(bytes) {
            stats.junk_datagrams += 1;
            return false;
        }
        if connected.contains(&addr) {
            return true;
        }
        let request = bytes.len() == sightline_tokens::CONNECTION_REQUEST_BYTES && bytes[0] == 0;
        if let Some(since) = self.handshaking.peek(&addr)
            && now.duration_since(*since)
                < Duration::from_secs(sightline_tokens::TOKEN_EXPIRE_SECONDS)
            && !request
        {
            return true;
        }
        if !request {
            stats.junk_datagrams += 1;
            return false;
        }
        // Only a request whose token was issued to this address counts against its
        // allowance (and enters the handshake table): one forged with a victim's address
        // as its source cannot spend the victim's handshakes.
        if let Some(secure) = &self.secure
            && sightline_tokens::request_address(bytes, &secure.key, unix_now().as_secs())
                .is_none_or(|ip| ip != canonical_ip(addr.ip()))
        {
            stats.junk_datagrams += 1;
            return false;
        }
        if self.handshake_limiter.allow(addr.ip(), now).is_err() {
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
    mut connectionless: ResMut<Connectionless>,
    mut foreign: ResMut<ForeignStreams>,
    bans: Res<AddressBans>,
    time: Res<Time<Real>>,
) {
    let transport = &mut *transport;
    transport.netcode.update(time.delta());
    connectionless.begin_frame();
    if let Some(duties) = &mut transport.relay {
        for (stream, peer) in duties.tend(&mut transport.socket) {
            match &mut transport.tokens {
                Some(tokens) => tokens.adopt(stream, peer, &mut stats),
                None => stats.token_requests_dropped += 1,
            }
        }
    }
    if let (Some(tokens), Some(config)) = (&mut transport.tokens, &transport.secure) {
        tokens.poll(
            &transport.netcode,
            config,
            transport.limits,
            transport.public,
            &bans,
            &mut stats,
        );
        for f in tokens.take_foreign() {
            foreign.push(f.stream, f.peer, f.read);
        }
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
    stats.sent_datagrams = transport.socket.sent.datagrams;
    stats.received_datagrams = transport.socket.received.datagrams;
    // The peers leave the transport for the frame, so one admission can hold them (and
    // the frame's counts) while the transport screens datagrams and netcode reads them.
    let mut peers = std::mem::take(&mut transport.peers);
    let mut admission = Admission {
        secure: transport.secure.is_some(),
        limits: transport.limits,
        per_host: &mut per_host,
        rejected: &mut rejected,
        stats: &mut stats,
        peers: &mut peers,
        faults: &mut faults,
        bans: &bans,
        now,
    };
    for (addr, mut bytes) in datagrams {
        if Connectionless::is_connectionless(&bytes) {
            connectionless.receive(addr, &bytes);
            continue;
        }
        if !transport.screen(addr, &bytes, &connected, now, admission.stats) {
            continue;
        }
        let sequence = payload_sequence(&bytes);
        let result = transport.netcode.process_packet(addr, &mut bytes);
        handle(
            result,
            sequence,
            &mut transport.socket,
            &mut server,
            &mut admission,
        );
    }
    let UdpServerTransport {
        netcode, socket, ..
    } = &mut *transport;
    // Checked after this frame's datagrams: acknowledgements that waited in the socket
    // while the server itself stalled count as arrived.
    let mut stalled = Vec::new();
    for (client_id, peer) in admission.peers.iter() {
        if !server.is_connected(*client_id) {
            continue; // already on its way out
        }
        let backlog = renet_reliable_backlog(&server, *client_id);
        if peer.stopped_acknowledging(now) || backlog > MAX_RELIABLE_BACKLOG {
            stalled.push((*client_id, backlog));
        }
    }
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
            handle(silent, None, socket, &mut server, &mut admission);
        }
    }
    for client_id in netcode.clients_id() {
        let result = netcode.update_client(client_id);
        handle(result, None, socket, &mut server, &mut admission);
    }
    for client_id in server.disconnections_id() {
        let result = netcode.disconnect(client_id);
        handle(result, None, socket, &mut server, &mut admission);
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
    transport.peers = peers;
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
    mut connectionless: ResMut<Connectionless>,
    mut sent: ResMut<SentToClients>,
) {
    let UdpServerTransport {
        netcode,
        socket,
        peers,
        ..
    } = &mut *transport;
    for (addr, bytes) in connectionless.outbox.drain(..) {
        socket.send_to(&bytes, addr);
    }
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
                    sent.add(client_id, (payload.len() + UDP_IP_HEADER) as u64);
                    socket.send_to(payload, addr);
                }
                Err(e) => {
                    error!("cannot wrap a packet for client {client_id}: {e}");
                    break;
                }
            }
        }
    }
    sent.keep_only(|id| peers.contains_key(&id));
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
    RelayDuties::close(socket);
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

#[cfg(test)]
mod tests {
    use super::*;

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
