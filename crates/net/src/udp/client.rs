//! The client's end: its netcode endpoint, the token request before it, the standby
//! connection that survives a NAT rebinding, and the systems that drive it.

use super::header::netcode_readable;
use super::socket::{ConditionedSocket, PacketRate, UdpSetupError, WireCount, unix_now};
use crate::auth;
use crate::bundle;
use crate::guard::PacketGuard;
use crate::{ConditionerSettings, LinkConditions};
use bevy::prelude::*;
use bevy_renet::RenetClient;
use renetcode::{ClientAuthentication, ConnectToken, NetcodeClient};
use sightline_tokens::NETCODE_PROTOCOL_ID;
use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak, mpsc};
use std::time::{Duration, Instant};

/// Where a client's connection stands before netcode takes over.
enum ClientPhase {
    /// Waiting for the token service's answer.
    /// (In a mutex only because resources must be `Sync`.)
    AwaitingToken(Mutex<mpsc::Receiver<Result<auth::Granted, String>>>),
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
/// Longest a connect token may last, its expiry less its creation: Sightline's tokens
/// last [`sightline_tokens::TOKEN_EXPIRE_SECONDS`], and netcode keeps knocking for that long.
const MAX_TOKEN_LIFETIME_SECONDS: u64 = 300;
/// Longest connection timeout a token may set: Sightline's is
/// [`sightline_tokens::CONNECTION_TIMEOUT_SECONDS`].
const MAX_TOKEN_TIMEOUT_SECONDS: i32 = 60;

/// How long the game may go without reading the network before the keeper reads for it
/// (see [`UdpClientTransport`]): several frames even at 10 frames a second, so a game
/// that keeps up never meets it.
pub const KEEPER_AFTER: Duration = Duration::from_millis(250);
/// How often the keeper looks.
const KEEPER_POLL: Duration = Duration::from_millis(50);
/// A covered frame this long is logged, at most once per [`KEEPER_LOG_EVERY`].
const KEEPER_LOG_AFTER: Duration = Duration::from_secs(1);
const KEEPER_LOG_EVERY: Duration = Duration::from_secs(10);
/// Most renet packets the keeper holds for a game that stands still: about 30 s of a
/// server's stream at 64 snapshots a second, at most 1,200 bytes each (under 6 MB).
/// What comes beyond is dropped and counted; renet resends what was reliable.
pub const MAX_HELD_PACKETS: usize = 4096;

/// The client's netcode endpoint.
///
/// When the server falls silent ([`SILENCE_BEFORE_STANDBY`]) it opens a *standby*
/// connection from a fresh socket, beside the old one. If the old one speaks again (the
/// server had stood still), the standby is dropped and nothing changed. If the standby
/// connects first, the old path is dead (a NAT rebinding: the server sees our packets
/// from a port it does not know and its answers go to one that is gone); the standby
/// takes over ([`Self::timed_out`] says so) and the game resumes on it with its resume
/// secret at once ([`resume_udp`]), not after netcode's 10 s timeout.
///
/// A frame that runs long (a shader compiled, a swap storm, a software renderer's worst
/// frame) must not end the connection either: a *keeper* thread shares the connection's
/// state, and when the game has not read the network for [`KEEPER_AFTER`] it reads for
/// it, checks and holds what arrives (at most [`MAX_HELD_PACKETS`]) and sends netcode's
/// keep-alives, so neither end times out; the game's next frame takes what was held, in
/// order. The keeper sends nothing of the game's own: a player whose game stands still
/// sends no input, and the server's idle kick (`sv_idle_kick`) still applies.
#[derive(Resource)]
pub struct UdpClientTransport {
    link: Arc<Mutex<Link>>,
    server: SocketAddr,
    security: ClientSecurity,
}

/// What [`UdpClientTransport`] shares with its keeper.
struct Link {
    phase: ClientPhase,
    server: SocketAddr,
    security: ClientSecurity,
    socket: ConditionedSocket,
    /// Acknowledgement pacing toward the server.
    pacer: bundle::Pacer,
    /// Datagrams from the server holding a malformed bundle (dropped).
    malformed_bundles: u64,
    /// The server's packets' checks and rate.
    guard: PacketGuard,
    rate: PacketRate,
    /// renet packets from the server refused before renet read them.
    bad_packets: u64,
    /// When a datagram from the server last arrived (or the connection started).
    heard_at: Instant,
    /// Whether its token came from elsewhere (a matchmaker), so that a server that never
    /// answers it is named as refusing that token.
    token_from_elsewhere: bool,
    /// Whether the game could resume on a standby (it was welcomed, with a secret).
    standby_allowed: bool,
    /// A second connection, opened while the server is silent.
    standby: Option<Standby>,
    standby_opened_at: Option<Instant>,
    /// Whether a standby took over and the game has yet to start a session on it.
    rebound: bool,
    /// Standby connections opened, and those that took over.
    standbys: u32,
    /// See `standbys`.
    rebinds: u32,
    /// When the game last read the network, and when netcode's clock last moved (by the
    /// game or the keeper): netcode is told the time that passed, not a frame's delta,
    /// so a frame the keeper covered is not counted twice.
    game_read_at: Instant,
    netcode_at: Instant,
    /// renet packets the keeper received for the game, checked, in order of arrival.
    held: VecDeque<Vec<u8>>,
    /// Packets the keeper dropped with `held` full.
    held_dropped: u64,
    /// When the keeper took over, while it covers a long frame.
    kept_since: Option<Instant>,
    /// Long frames the keeper covered.
    frames_kept: u32,
    /// When a covered frame was last logged.
    logged_at: Option<Instant>,
    /// Whether the keeper heard the server since the game last read: the server spoke,
    /// though the game's own read may find the socket empty.
    keeper_heard: bool,
}

/// A standby connection (see [`UdpClientTransport`]).
struct Standby {
    phase: ClientPhase,
    socket: ConditionedSocket,
    /// When its netcode's clock last moved (it follows real time, as the main one does).
    netcode_at: Instant,
}

/// How a client connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientSecurity {
    /// Ask the server's token service for a connect token, proving this password (empty
    /// for a public server).
    Secure {
        /// The server's password.
        password: String,
        /// The file of servers' identity keys to check and remember (`None`: none).
        known_servers: Option<PathBuf>,
    },
    /// Connect without a token, to a server started with `--insecure`.
    Insecure,
}

impl Default for ClientSecurity {
    fn default() -> Self {
        Self::Secure {
            password: String::new(),
            known_servers: None,
        }
    }
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
        ClientSecurity::Secure {
            password,
            known_servers,
        } => ClientPhase::AwaitingToken(Mutex::new(auth::request_token(
            server,
            password.clone(),
            known_servers.clone(),
        ))),
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
            .map_err(|e| {
                UdpSetupError::new(format!("cannot start netcode toward {server}: {e}"))
            })?;
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
    let netcode = secure_netcode(token).map_err(|e| {
        UdpSetupError::new(format!("cannot use the connect token for {server}: {e}"))
    })?;
    let transport = UdpClientTransport::new(
        ClientPhase::Netcode(Box::new(netcode)),
        server,
        ClientSecurity::default(),
        client_socket(server)?,
    );
    transport.lock().token_from_elsewhere = true;
    Ok(transport)
}

/// A netcode client on `token`, once [`check_token`] passed it.
fn secure_netcode(token: ConnectToken) -> Result<NetcodeClient, String> {
    check_token(&token)?;
    NetcodeClient::new(
        unix_now(),
        ClientAuthentication::Secure {
            connect_token: token,
        },
    )
    .map_err(|e| e.to_string())
}

/// Whether netcode can use `token`, which a server or matchmaker made and may have made
/// to harm: renetcode subtracts its creation from its expiry (a panic where overflow is
/// checked), and a timeout of zero or less, or of years, never times out, so a silent
/// server would hold the player forever. Its first address must be set (renetcode
/// expects it); the callers set it to the address dialled.
fn check_token(token: &ConnectToken) -> Result<(), String> {
    let (made, expires) = (token.create_timestamp, token.expire_timestamp);
    let Some(lifetime) = expires.checked_sub(made) else {
        return Err(format!(
            "the token expires before it was made (made at {made}, expires at {expires}): \
             its issuer is broken or hostile"
        ));
    };
    if !(1..=MAX_TOKEN_LIFETIME_SECONDS).contains(&lifetime) {
        return Err(format!(
            "the token lasts {lifetime} s, where 1 to {MAX_TOKEN_LIFETIME_SECONDS} s is \
             usable: its issuer is broken or hostile"
        ));
    }
    let timeout = token.timeout_seconds;
    if !(1..=MAX_TOKEN_TIMEOUT_SECONDS).contains(&timeout) {
        return Err(format!(
            "the token times out after {timeout} s, where 1 to \
             {MAX_TOKEN_TIMEOUT_SECONDS} s is usable: its issuer is broken or hostile"
        ));
    }
    if token.server_addresses[0].is_none() {
        return Err("the token names no server".into());
    }
    Ok(())
}

/// A client's socket, of the server's address family.
fn client_socket(server: SocketAddr) -> Result<ConditionedSocket, UdpSetupError> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().expect("valid address")
    } else {
        "[::]:0".parse().expect("valid address")
    };
    let socket = UdpSocket::bind(bind)
        .map_err(|e| UdpSetupError::new(format!("cannot open a UDP socket: {e}")))?;
    ConditionedSocket::new(socket)
        .map_err(|e| UdpSetupError::new(format!("cannot configure the socket: {e}")))
}

/// Waits for the connect token, then receives datagrams into renet (each renet packet
/// checked by the [`PacketGuard`]) and keeps the connection alive; opens, drives and
/// drops the standby connection.
pub(crate) fn client_receive(transport: Res<UdpClientTransport>, mut client: ResMut<RenetClient>) {
    transport.lock().receive(&mut client, Instant::now());
}

/// Starts a session on the connection a standby took over (see [`UdpClientTransport`]):
/// a fresh renet client on it, the old one's state gone with the old path. False when
/// there is none to resume on.
pub fn resume_udp(world: &mut World) -> bool {
    let Some(transport) = world.get_resource::<UdpClientTransport>() else {
        return false;
    };
    {
        let mut link = transport.lock();
        if !link.rebound {
            return false;
        }
        link.rebound = false;
    }
    let mut client = RenetClient::new(sightline_protocol::connection_config());
    client.set_connecting();
    world.insert_resource(client);
    true
}

/// Sends renet's outgoing packets through netcode, bundled, holding back
/// acknowledgements alone (see [`bundle`]).
pub(crate) fn client_send(transport: Res<UdpClientTransport>, mut client: ResMut<RenetClient>) {
    let link = &mut *transport.lock();
    if let ClientPhase::Netcode(netcode) = &mut link.phase
        && netcode.is_connected()
    {
        let now = Instant::now();
        let packets = client.get_packets_to_send();
        for packet in link.pacer.payloads(packets, now) {
            match netcode.generate_payload_packet(&packet) {
                Ok((addr, payload)) => link.socket.send_to(payload, addr),
                Err(e) => {
                    error!("cannot wrap a packet for the server: {e}");
                    break;
                }
            }
        }
    }
    link.socket.flush();
}

impl UdpClientTransport {
    fn new(
        phase: ClientPhase,
        server: SocketAddr,
        security: ClientSecurity,
        socket: ConditionedSocket,
    ) -> Self {
        let now = Instant::now();
        let link = Arc::new(Mutex::new(Link {
            phase,
            server,
            security: security.clone(),
            socket,
            pacer: bundle::Pacer::default(),
            malformed_bundles: 0,
            guard: PacketGuard::from_server(),
            rate: PacketRate::new(now),
            bad_packets: 0,
            heard_at: now,
            token_from_elsewhere: false,
            standby_allowed: false,
            standby: None,
            standby_opened_at: None,
            rebound: false,
            standbys: 0,
            rebinds: 0,
            game_read_at: now,
            netcode_at: now,
            held: VecDeque::new(),
            held_dropped: 0,
            kept_since: None,
            frames_kept: 0,
            logged_at: None,
            keeper_heard: false,
        }));
        spawn_keeper(Arc::downgrade(&link));
        Self {
            link,
            server,
            security,
        }
    }

    /// The state shared with the keeper. A panic elsewhere while it was held leaves
    /// nothing half-done that matters here (counters, queues), so it is used anyway.
    fn lock(&self) -> MutexGuard<'_, Link> {
        self.link.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends from a new local port from now on, without telling anyone, as a NAT that
    /// rebinds does: the server sees the connection's packets come from an address it
    /// does not know, and what it sends to the old one is lost. For fault tests (the
    /// chaos soak).
    pub fn change_port(&mut self) -> Result<(), UdpSetupError> {
        let mut link = self.lock();
        let mut socket = client_socket(self.server)?;
        socket.set_conditions(link.socket.conditions());
        let old = std::mem::replace(&mut link.socket, socket);
        link.socket.absorb(&old);
        Ok(())
    }

    /// Sets how its sockets (the one in use and a standby's) misbehave.
    pub fn set_conditions(&mut self, settings: ConditionerSettings) {
        let link = &mut *self.lock();
        link.socket.set_conditions(settings);
        if let Some(standby) = &mut link.standby {
            standby.socket.set_conditions(settings);
        }
    }

    /// Tells the server this client is leaving, at once (and drops a standby).
    pub fn goodbye(&mut self) {
        let link = &mut *self.lock();
        link.drop_standby();
        link.socket.set_conditions(ConditionerSettings::default());
        if let ClientPhase::Netcode(netcode) = &mut link.phase
            && let Ok((addr, packet)) = netcode.disconnect()
        {
            link.socket.send_to(packet, addr);
        }
        link.socket.flush();
    }

    /// Why the transport gave up, in words a player can act on: the token service's
    /// refusal, or netcode's reason (timed out, denied...). `None` while it is fine.
    pub fn failure(&self) -> Option<String> {
        let link = self.lock();
        if link.rebound {
            return Some(format!(
                "no packets from {} for {:.1} s; resuming on a new connection",
                self.server,
                SILENCE_BEFORE_STANDBY.as_secs_f32()
            ));
        }
        match &link.phase {
            ClientPhase::AwaitingToken(_) => None,
            ClientPhase::Failed(reason) => Some(reason.clone()),
            ClientPhase::Netcode(netcode) => netcode.disconnect_reason().map(|r| match r {
                renetcode::DisconnectReason::ConnectionDenied => {
                    "the server denied the connection (full, or too many from your address)"
                        .to_string()
                }
                // netcode's server says nothing to a token it cannot open or will not
                // take: the client only sees the token run out unanswered.
                renetcode::DisconnectReason::ConnectTokenExpired
                | renetcode::DisconnectReason::ConnectionRequestTimedOut
                    if link.token_from_elsewhere =>
                {
                    format!(
                        "{} did not take the matchmaker's token: refused (sealed with a key \
                         it does not hold, for another address, or already used) or the \
                         server is not answering",
                        self.server
                    )
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
        let link = self.lock();
        link.rebound
            || matches!(
                &link.phase,
                ClientPhase::Netcode(n)
                    if n.disconnect_reason() == Some(renetcode::DisconnectReason::ConnectionTimedOut)
            )
    }

    /// Lets a silent connection be replaced by a standby, or not: only a game that could
    /// resume on one (in it, with a resume secret) should allow it.
    pub fn allow_standby(&mut self, allowed: bool) {
        self.lock().standby_allowed = allowed;
    }

    /// Whether a standby may be opened ([`Self::allow_standby`]).
    pub fn standby_allowed(&self) -> bool {
        self.lock().standby_allowed
    }

    /// Whether a standby connection took over and waits for the game to resume on it
    /// ([`resume_udp`]).
    pub fn rebound(&self) -> bool {
        self.lock().rebound
    }

    /// How this transport connects (to connect again the same way).
    pub fn security(&self) -> &ClientSecurity {
        &self.security
    }

    /// What its sockets received and sent (datagrams, bytes with headers, largest).
    pub fn wire(&self) -> (WireCount, WireCount) {
        let link = self.lock();
        (link.socket.received, link.socket.sent)
    }

    /// renet packets from the server refused before renet read them (malformed, or
    /// beyond the packet rate), and datagrams holding a malformed bundle.
    pub fn refused(&self) -> (u64, u64) {
        let link = self.lock();
        (link.bad_packets, link.malformed_bundles)
    }

    /// Standby connections opened, and those that took over.
    pub fn standbys(&self) -> (u32, u32) {
        let link = self.lock();
        (link.standbys, link.rebinds)
    }

    /// Long frames the keeper covered, and packets it dropped with its store full.
    pub fn frames_kept(&self) -> (u32, u64) {
        let link = self.lock();
        (link.frames_kept, link.held_dropped)
    }
}

/// Starts the thread that reads for a game whose frame runs long (see
/// [`UdpClientTransport`]). It ends when the transport is dropped.
fn spawn_keeper(link: Weak<Mutex<Link>>) {
    let keeper = std::thread::Builder::new()
        .name("sightline-net-keeper".into())
        .spawn(move || {
            while let Some(link) = link.upgrade() {
                link.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .keep(Instant::now());
                drop(link);
                std::thread::sleep(KEEPER_POLL);
            }
        });
    if let Err(e) = keeper {
        // The connection works without it; only a long frame would end it.
        warn!("cannot start the connection's keeper thread: {e}");
    }
}

impl Link {
    /// The game's read: the token's answer, what the keeper held, then the socket;
    /// netcode's clock and keep-alives; the standby connection.
    fn receive(&mut self, client: &mut RenetClient, now: Instant) {
        if let ClientPhase::AwaitingToken(answer) = &self.phase {
            let answer = answer.lock().map(|a| a.try_recv());
            let next = match answer.unwrap_or(Err(mpsc::TryRecvError::Disconnected)) {
                Err(mpsc::TryRecvError::Empty) => {
                    client.set_connecting();
                    self.game_read_at = now;
                    self.netcode_at = now;
                    return;
                }
                Err(mpsc::TryRecvError::Disconnected) => {
                    ClientPhase::Failed("the token request ended without an answer".into())
                }
                Ok(Err(reason)) => ClientPhase::Failed(reason),
                Ok(Ok(granted)) => match secure_netcode(granted.token) {
                    Ok(netcode) => ClientPhase::Netcode(Box::new(netcode)),
                    Err(e) => ClientPhase::Failed(format!("cannot use the connect token: {e}")),
                },
            };
            self.phase = next;
            self.heard_at = now;
            self.netcode_at = now;
        }
        self.game_read_at = now;
        let ClientPhase::Netcode(netcode) = &mut self.phase else {
            if !client.is_disconnected() {
                client.disconnect_due_to_transport();
            }
            return;
        };
        if netcode.disconnect_reason().is_some() {
            if !client.is_disconnected() {
                client.disconnect_due_to_transport();
            }
            return;
        }
        // Taken over by a standby: keep it alive until the game starts a session on it.
        if client.is_disconnected() && !self.rebound {
            if let Ok((addr, packet)) = netcode.disconnect() {
                self.socket.send_to(packet, addr);
            }
            return;
        }
        if !self.rebound {
            if netcode.is_connected() {
                client.set_connected();
            } else if netcode.is_connecting() {
                client.set_connecting();
            }
        }
        self.take_held(client, now);
        let heard = self.read_datagrams(now, Some(client)) | std::mem::take(&mut self.keeper_heard);
        self.update_netcode(now);
        if heard {
            self.heard_at = now;
            if self.drop_standby() {
                info!("{} spoke again; standby connection dropped", self.server);
            }
            return;
        }
        self.open_standby_if_silent(now);
        if self.drive_standby(now) {
            self.take_standby(now);
            client.disconnect_due_to_transport();
        }
    }

    /// The keeper's look: while the game has not read for [`KEEPER_AFTER`], reads for it
    /// and keeps netcode's keep-alives going. Nothing of the standby's: silence during a
    /// long frame is judged when the game reads again.
    fn keep(&mut self, now: Instant) {
        let ClientPhase::Netcode(netcode) = &self.phase else {
            return;
        };
        let stalled = now.saturating_duration_since(self.game_read_at) >= KEEPER_AFTER;
        if !stalled || self.rebound || netcode.disconnect_reason().is_some() {
            return;
        }
        self.kept_since.get_or_insert(self.game_read_at);
        if self.read_datagrams(now, None) {
            self.heard_at = now;
            self.keeper_heard = true;
        }
        self.update_netcode(now);
        self.socket.flush();
    }

    /// Gives the game what the keeper held during a long frame, and says how long that
    /// frame was (a frame over [`KEEPER_LOG_AFTER`], once per [`KEEPER_LOG_EVERY`]: a
    /// game that always draws slowly is covered every frame).
    fn take_held(&mut self, client: &mut RenetClient, now: Instant) {
        let Some(since) = self.kept_since.take() else {
            return;
        };
        self.frames_kept = self.frames_kept.saturating_add(1);
        let frame = now.saturating_duration_since(since);
        let quiet = self
            .logged_at
            .is_some_and(|at| now.saturating_duration_since(at) < KEEPER_LOG_EVERY);
        if frame >= KEEPER_LOG_AFTER && !quiet {
            self.logged_at = Some(now);
            info!(
                "a frame of {:.1} s: the connection was kept alive meanwhile ({} packets \
                 held; {} frames covered and {} packets dropped in all)",
                frame.as_secs_f32(),
                self.held.len(),
                self.frames_kept,
                self.held_dropped
            );
        }
        for packet in self.held.drain(..) {
            client.process_packet(&packet);
        }
    }

    /// Reads what the server sent, each renet packet checked (the [`PacketGuard`], the
    /// rate) and then given to `client`, or held for the game when the keeper reads
    /// (`None`). True if a datagram came from the server.
    fn read_datagrams(&mut self, now: Instant, mut client: Option<&mut RenetClient>) -> bool {
        let Self {
            phase,
            socket,
            rate,
            guard,
            held,
            held_dropped,
            bad_packets,
            malformed_bundles,
            rebound,
            ..
        } = self;
        let ClientPhase::Netcode(netcode) = phase else {
            return false;
        };
        let datagrams = match socket.receive() {
            Ok(datagrams) => datagrams,
            Err(e) => {
                debug!("UDP receive failed: {e}");
                return false;
            }
        };
        let mut heard = false;
        for (addr, mut bytes) in datagrams {
            if addr != netcode.server_addr() {
                continue;
            }
            // Forged in the server's name, perhaps: netcode would panic on it.
            if !netcode_readable(&bytes) {
                *bad_packets += 1;
                continue;
            }
            heard = true;
            let Some(payload) = netcode.process_packet(&mut bytes) else {
                continue;
            };
            let Ok(packets) = bundle::unbundle(payload) else {
                *malformed_bundles += 1;
                continue;
            };
            for packet in packets {
                if !rate.take(now) || guard.check(packet).is_err() {
                    *bad_packets += 1;
                } else if *rebound {
                    // For a session not started yet (see `resume_udp`).
                } else if let Some(client) = client.as_deref_mut() {
                    client.process_packet(packet);
                } else if held.len() < MAX_HELD_PACKETS {
                    held.push_back(packet.to_vec());
                } else {
                    *held_dropped += 1;
                }
            }
        }
        heard
    }

    /// Moves netcode's clock to `now`, sending a keep-alive or a connection request when
    /// one is due.
    fn update_netcode(&mut self, now: Instant) {
        let delta = now.saturating_duration_since(self.netcode_at);
        self.netcode_at = now;
        if let ClientPhase::Netcode(netcode) = &mut self.phase
            && let Some((packet, addr)) = netcode.update(delta)
        {
            self.socket.send_to(packet, addr);
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
                self.standby = Some(Standby {
                    phase,
                    socket,
                    netcode_at: now,
                });
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
    fn drive_standby(&mut self, now: Instant) -> bool {
        let Some(standby) = &mut self.standby else {
            return false;
        };
        if let ClientPhase::AwaitingToken(answer) = &standby.phase {
            let answer = answer.lock().map(|a| a.try_recv());
            standby.phase = match answer.unwrap_or(Err(mpsc::TryRecvError::Disconnected)) {
                Err(mpsc::TryRecvError::Empty) => return false,
                Ok(Ok(granted)) => match secure_netcode(granted.token) {
                    Ok(netcode) => ClientPhase::Netcode(Box::new(netcode)),
                    Err(e) => ClientPhase::Failed(e),
                },
                Ok(Err(reason)) => ClientPhase::Failed(reason),
                Err(mpsc::TryRecvError::Disconnected) => ClientPhase::Failed(String::new()),
            };
            standby.netcode_at = now;
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
                if addr == netcode.server_addr() && netcode_readable(&bytes) {
                    let _ = netcode.process_packet(&mut bytes);
                }
            }
        }
        let delta = now.saturating_duration_since(standby.netcode_at);
        standby.netcode_at = now;
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
    use crate::known::KeyStatus;
    use bevy::ecs::system::RunSystemOnce;
    use std::net::{IpAddr, Ipv4Addr};

    const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9);

    /// A token as the token service makes it, then changed as a hostile issuer would.
    fn token(change: impl FnOnce(&mut ConnectToken)) -> ConnectToken {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut token = sightline_tokens::issue_token(&[7; 32], 1, ip, SERVER, unix_now()).unwrap();
        change(&mut token);
        token
    }

    /// Hostile tokens: made after they expire (renetcode subtracts the two), made and
    /// expired at once, lasting for ages, or never timing out.
    fn hostile_tokens() -> Vec<(&'static str, ConnectToken)> {
        vec![
            (
                "expires before it was made",
                token(|t| t.create_timestamp = t.expire_timestamp + 1),
            ),
            (
                "expires before it was made",
                token(|t| (t.create_timestamp, t.expire_timestamp) = (u64::MAX, 0)),
            ),
            (
                "lasts 0 s",
                token(|t| t.expire_timestamp = t.create_timestamp),
            ),
            (
                "lasts 18446744073709551615 s",
                token(|t| (t.create_timestamp, t.expire_timestamp) = (0, u64::MAX)),
            ),
            ("times out after 0 s", token(|t| t.timeout_seconds = 0)),
            ("times out after -1 s", token(|t| t.timeout_seconds = -1)),
            (
                "times out after 2147483647 s",
                token(|t| t.timeout_seconds = i32::MAX),
            ),
        ]
    }

    #[test]
    fn a_matchmakers_hostile_token_is_refused_before_netcode_sees_it() {
        assert!(udp_client_with_token(SERVER, token(|_| {})).is_ok());
        for (why, token) in hostile_tokens() {
            match udp_client_with_token(SERVER, token) {
                Err(e) => assert!(e.to_string().contains(why), "{why}: {e}"),
                // Without the check renetcode panics here on the first (overflow checks
                // are on in the dev profile, dependencies included).
                Ok(transport) => {
                    if let ClientPhase::Netcode(netcode) = &mut transport.lock().phase {
                        netcode.update(Duration::from_millis(10));
                    }
                    panic!("{why}: accepted");
                }
            }
        }
    }

    #[test]
    fn a_token_services_hostile_token_fails_the_connection_with_a_reason() {
        for (why, token) in hostile_tokens() {
            let (send, receive) = mpsc::channel();
            let phase = ClientPhase::AwaitingToken(Mutex::new(receive));
            let socket = client_socket(SERVER).unwrap();
            let transport =
                UdpClientTransport::new(phase, SERVER, ClientSecurity::default(), socket);
            send.send(Ok(auth::Granted {
                token,
                key: KeyStatus::New,
                server_key: [0; 32],
            }))
            .unwrap();
            let mut world = World::new();
            world.insert_resource(transport);
            world.insert_resource(RenetClient::new(sightline_protocol::connection_config()));
            world.insert_resource(Time::<Real>::default());
            world.run_system_once(client_receive).unwrap();
            let failure = world.resource::<UdpClientTransport>().failure();
            let failure = failure.unwrap_or_else(|| panic!("{why}: accepted"));
            assert!(failure.contains(why), "{why}: {failure}");
            assert!(world.resource::<RenetClient>().is_disconnected());
        }
    }
}
