//! Remote admin over Valve's Source RCON protocol, so existing tools (panels, bots,
//! `rcon` clients) can run the host's console: TCP, little-endian packets of
//! `size, id, type, body\0, \0`; `SERVERDATA_AUTH` with the `rcon_password`, then
//! `SERVERDATA_EXECCOMMAND` lines answered by `SERVERDATA_RESPONSE_VALUE` packets (a long
//! answer in several, and an empty `RESPONSE_VALUE` from the client mirrored back after
//! them, which is how clients find the end of a split answer).
//!
//! It listens on the game's port number, sharing the token service's TCP listener (which
//! hands over every connection that does not open with the token exchange's magic), or
//! on a port of its own. It is off while `rcon_password` is empty. Everything is
//! non-blocking and bounded: connections, bytes a connection may buffer, time to
//! authenticate, and wrong passwords by address ([`RconLockout`]).

use crate::admin::{PasswordCheck, RconLockout, ServerCvars};
use crate::cvars::cvar;
use bevy::prelude::*;
use sightline_limits::{Admit, Claim, HostKey, NetworkKey, PoolLimits, admit};
use sightline_net::ForeignStreams;
use sightline_query::{
    MAX_REQUEST_SIZE, RconPacket, SERVERDATA_AUTH, SERVERDATA_AUTH_RESPONSE,
    SERVERDATA_EXECCOMMAND, SERVERDATA_RESPONSE_VALUE,
};
use sightline_runtime::TakeOnce;
use sightline_server::{AdminInbox, AdminLine, AdminOrigin, HostingStats};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Body bytes in one answer packet; longer answers are split.
pub const ANSWER_CHUNK: usize = 4096;
/// Most connections at once.
pub const MAX_CONNECTIONS: usize = 16;
/// Most connections from one host at once.
pub const MAX_PER_HOST: usize = 4;
/// Connections not yet authenticated: at most half the slots, so admins who logged in
/// always have the rest, shared by host and network ([`UNAUTHENTICATED`]).
pub const MAX_UNAUTHENTICATED: usize = MAX_CONNECTIONS / 2;
/// The pool of connections not yet authenticated: a host may hold two, a network four;
/// a newcomer takes the place of the oldest stalled one of a busier host or network
/// ([`sightline_limits::admit`]), so connections that send a partial packet and wait
/// cannot keep an admin out.
pub const UNAUTHENTICATED: PoolLimits = PoolLimits {
    capacity: MAX_UNAUTHENTICATED,
    per_host: 2,
    per_network: 4,
};
/// Time for a connection's first bytes: a client sends its login at once.
pub const FIRST_BYTES_DEADLINE: Duration = Duration::from_secs(1);
/// Time to authenticate after connecting.
pub const AUTH_DEADLINE: Duration = Duration::from_secs(2);
/// An authenticated connection silent this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Most answer bytes waiting for a client that does not read; past it the connection is
/// closed.
pub const MAX_UNSENT: usize = 1 << 20;
/// Most commands a connection may have waiting to run.
pub const MAX_WAITING: usize = 16;

/// What a connection waits to send, in order: answers to commands not yet run hold back
/// what comes after them.
#[derive(Debug)]
enum Queued {
    Waiting(i32),
    Ready(Vec<u8>),
    /// Ready a frame later: the authentication answer follows its empty
    /// `RESPONSE_VALUE` in a segment of its own, as clients that read one packet per
    /// buffered read (and drop the rest of the buffer) need.
    NextFrame(Vec<u8>),
}

/// One RCON connection: its socket and its session.
struct RconConnection {
    stream: TcpStream,
    session: RconSession,
}

/// One RCON connection apart from its socket: the bytes read and not yet decoded, its
/// answers in the order asked, the bytes to write, whether it logged in and whether it
/// is closing. It reads and writes through any stream ([`Self::read_from`],
/// [`Self::write_to`]): the service's TCP stream, or a fuzz body's bytes in memory.
#[derive(Debug)]
pub struct RconSession {
    number: u64,
    peer: SocketAddr,
    inbox: Vec<u8>,
    queue: Vec<Queued>,
    unsent: Vec<u8>,
    authenticated: bool,
    opened: Instant,
    heard: Instant,
    closing: bool,
}

impl RconSession {
    /// Connection `number` (never reused: answers find their connection by it) from
    /// `peer`, opened at `now` with `read` already read from it.
    pub fn new(number: u64, peer: SocketAddr, read: Vec<u8>, now: Instant) -> Self {
        Self {
            number,
            peer,
            inbox: read,
            queue: Vec::new(),
            unsent: Vec::new(),
            authenticated: false,
            opened: now,
            heard: now,
            closing: false,
        }
    }

    /// Its number, which its commands' [`AdminOrigin::Rcon`] name.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Who opened it.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Whether it gave the right password.
    pub fn authenticated(&self) -> bool {
        self.authenticated
    }

    /// Whether it is closing: it reads nothing more, and goes once answered.
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// Commands it has waiting for the console's answer.
    pub fn waiting(&self) -> usize {
        self.queue
            .iter()
            .filter(|q| matches!(q, Queued::Waiting(_)))
            .count()
    }

    /// Bytes read and not yet decoded.
    pub fn inbox_len(&self) -> usize {
        self.inbox.len()
    }

    /// Bytes released to write and not yet written.
    pub fn unsent_len(&self) -> usize {
        self.unsent.len()
    }

    /// Whether it can go: closing, with everything it was answered written (or given up).
    pub fn finished(&self) -> bool {
        self.closing && self.unsent.is_empty() && self.queue.is_empty()
    }

    /// Queues `packet` to send once everything before it is ready.
    fn send(&mut self, packet: RconPacket) {
        self.queue.push(Queued::Ready(packet.encode()));
    }

    /// Moves what is ready at the front of the queue to the bytes to write.
    fn release(&mut self) {
        let ready = self
            .queue
            .iter()
            .take_while(|q| matches!(q, Queued::Ready(_)))
            .count();
        for q in self.queue.drain(..ready) {
            if let Queued::Ready(bytes) = q {
                self.unsent.extend_from_slice(&bytes);
            }
        }
        if let Some(front) = self.queue.first_mut()
            && let Queued::NextFrame(bytes) = front
        {
            *front = Queued::Ready(std::mem::take(bytes));
        }
        if self.unsent.len() > MAX_UNSENT {
            // A client that does not read its answers is not waited for.
            self.closing = true;
            self.unsent.clear();
            self.queue.clear();
        }
    }

    /// Reads what `stream` (non-blocking) has and handles its packets: authentication is
    /// answered here, commands go to the console's `inbox`; closes the session past its
    /// deadlines.
    pub fn read_from(
        &mut self,
        stream: &mut impl Read,
        password: &str,
        lockout: &mut RconLockout,
        inbox: &mut AdminInbox,
        stats: &mut HostingStats,
        now: Instant,
    ) {
        if self.closing {
            return;
        }
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => {
                    self.closing = true;
                    break;
                }
                Ok(n) => {
                    self.inbox.extend_from_slice(&chunk[..n]);
                    self.heard = now;
                    // At most one whole packet and the next's start is kept unread.
                    if self.inbox.len() > 2 * (MAX_REQUEST_SIZE as usize + 4) {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.closing = true;
                    break;
                }
            }
        }
        loop {
            let (packet, used) = match RconPacket::decode(&self.inbox) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(_) => {
                    stats.rcon_refused += 1;
                    self.closing = true;
                    break;
                }
            };
            self.inbox.drain(..used);
            handle_packet(self, packet, password, lockout, inbox, stats, now);
            if self.closing {
                break;
            }
        }
        let age = now.saturating_duration_since(self.opened);
        let overdue = if self.authenticated {
            now.saturating_duration_since(self.heard) > IDLE_TIMEOUT
        } else {
            age > AUTH_DEADLINE || (self.inbox.is_empty() && age > FIRST_BYTES_DEADLINE)
        };
        if overdue || password.is_empty() {
            self.closing = true;
        }
    }

    /// The console's answer (`lines`) to command `request`: it takes the place of the
    /// first command of that id still waiting. `false` when none waits.
    pub fn answer(&mut self, request: i32, lines: &[String]) -> bool {
        let Some(slot) = self
            .queue
            .iter()
            .position(|q| matches!(q, Queued::Waiting(id) if *id == request))
        else {
            return false;
        };
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        // Zeros would end a body early.
        let body: Vec<u8> = text.into_bytes().into_iter().filter(|&b| b != 0).collect();
        let mut bytes = Vec::new();
        let chunks: Vec<&[u8]> = if body.is_empty() {
            vec![&[]]
        } else {
            body.chunks(ANSWER_CHUNK).collect()
        };
        for chunk in chunks {
            bytes.extend(
                RconPacket {
                    id: request,
                    kind: SERVERDATA_RESPONSE_VALUE,
                    body: chunk.to_vec(),
                }
                .encode(),
            );
        }
        self.queue[slot] = Queued::Ready(bytes);
        true
    }

    /// Releases what is ready to send and writes what `stream` (non-blocking) takes.
    pub fn write_to(&mut self, stream: &mut impl Write) {
        self.release();
        while !self.unsent.is_empty() {
            match stream.write(&self.unsent) {
                Ok(0) => {
                    self.closing = true;
                    break;
                }
                Ok(n) => {
                    self.unsent.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.closing = true;
                    self.unsent.clear();
                    break;
                }
            }
        }
    }
}

/// Where RCON connections come from.
pub enum RconListen {
    /// The token service's listener on the game's port (it hands them over).
    Shared,
    /// A listener of RCON's own.
    Own(TcpListener),
}

/// The RCON service.
#[derive(Resource)]
struct Rcon {
    listen: RconListen,
    connections: Vec<RconConnection>,
    next_number: u64,
}

/// Source RCON for the host's console.
pub struct RconPlugin {
    /// Where connections come from; taken when the plugin is built.
    pub listen: TakeOnce<RconListen>,
}

impl RconPlugin {
    /// RCON on `listen`.
    pub fn new(listen: RconListen) -> Self {
        Self {
            listen: TakeOnce::new(listen),
        }
    }
}

impl Plugin for RconPlugin {
    fn build(&self, app: &mut App) {
        let listen = self.listen.take("RconPlugin");
        if let RconListen::Own(listener) = &listen
            && let Err(e) = listener.set_nonblocking(true)
        {
            warn!("rcon: cannot make the listener non-blocking ({e}); remote admin is off");
            return;
        }
        app.insert_resource(Rcon {
            listen,
            connections: Vec::new(),
            next_number: 0,
        })
        .add_systems(Update, read_rcon.before(crate::admin::AdminSet))
        .add_systems(Update, answer_rcon.after(crate::admin::AdminSet));
    }
}

/// Accepts connections and reads their packets: authentication is answered here,
/// commands go to the console.
fn read_rcon(
    mut rcon: ResMut<Rcon>,
    foreign: Option<ResMut<ForeignStreams>>,
    cvars: Res<ServerCvars>,
    mut lockout: ResMut<RconLockout>,
    mut inbox: ResMut<AdminInbox>,
    mut stats: ResMut<HostingStats>,
) {
    let now = Instant::now();
    let password = cvars.0.read(cvar::RCON_PASSWORD);
    let rcon = &mut *rcon;
    let mut arrivals: Vec<(TcpStream, SocketAddr, Vec<u8>)> = Vec::new();
    match &rcon.listen {
        RconListen::Shared => {
            if let Some(mut foreign) = foreign {
                arrivals.append(&mut foreign.0);
            }
        }
        RconListen::Own(listener) => {
            for _ in 0..MAX_CONNECTIONS {
                match listener.accept() {
                    Ok((stream, peer)) => arrivals.push((stream, peer, Vec::new())),
                    Err(_) => break,
                }
            }
        }
    }
    for conn in &mut rcon.connections {
        conn.session.read_from(
            &mut conn.stream,
            &password,
            &mut lockout,
            &mut inbox,
            &mut stats,
            now,
        );
    }
    // Admitted after the reading, so every connection is read once before a newcomer
    // can take its place; and those that came with a whole packet (an admin's login, sent
    // as it connects) first, each read at once, so a login made in the same frame as a
    // burst of stalling newcomers is answered before they can fill the pool.
    arrivals.sort_by_key(|(_, _, read)| !matches!(RconPacket::decode(read), Ok(Some(_))));
    for (stream, peer, read) in arrivals {
        if password.is_empty() || stream.set_nonblocking(true).is_err() {
            stats.rcon_refused += 1;
            continue; // dropping the stream closes it
        }
        match admit_rcon(rcon.connections.iter().map(|c| &c.session), peer, now) {
            Admit::No => {
                stats.rcon_refused += 1;
                continue;
            }
            Admit::Instead(i) => {
                stats.rcon_refused += 1;
                rcon.connections.swap_remove(i);
            }
            Admit::Yes => {}
        }
        rcon.next_number += 1;
        let number = rcon.next_number;
        let mut conn = RconConnection {
            stream,
            session: RconSession::new(number, peer, read, now),
        };
        conn.session.read_from(
            &mut conn.stream,
            &password,
            &mut lockout,
            &mut inbox,
            &mut stats,
            now,
        );
        rcon.connections.push(conn);
    }
}

/// Whether a connection from `peer` gets a slot: within its host's, among the
/// unauthenticated pool's ([`UNAUTHENTICATED`]), perhaps in the place of the connection at
/// the index given (in the order `sessions` come), and within [`MAX_CONNECTIONS`].
pub fn admit_rcon<'a>(
    sessions: impl IntoIterator<Item = &'a RconSession>,
    peer: SocketAddr,
    now: Instant,
) -> Admit {
    let connections: Vec<&RconSession> = sessions.into_iter().collect();
    let host = HostKey::of(peer.ip());
    let from_host = connections
        .iter()
        .filter(|c| HostKey::of(c.peer.ip()) == host)
        .count();
    if from_host >= MAX_PER_HOST {
        return Admit::No;
    }
    // The pool lists the unauthenticated connections still open; its indices map back.
    let (index, pool): (Vec<usize>, Vec<Claim>) = connections
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.authenticated && !c.closing)
        .map(|(i, c)| {
            let claim = Claim {
                host: HostKey::of(c.peer.ip()),
                network: NetworkKey::of(c.peer.ip()),
                since: c.opened,
                settled: false,
            };
            (i, claim)
        })
        .unzip();
    match admit(&pool, host, NetworkKey::of(peer.ip()), UNAUTHENTICATED, now) {
        Admit::Instead(i) => Admit::Instead(index[i]),
        Admit::Yes if connections.len() < MAX_CONNECTIONS => Admit::Yes,
        _ => Admit::No,
    }
}

/// One packet from a connection.
fn handle_packet(
    conn: &mut RconSession,
    packet: RconPacket,
    password: &str,
    lockout: &mut RconLockout,
    inbox: &mut AdminInbox,
    stats: &mut HostingStats,
    now: Instant,
) {
    let empty = |id| RconPacket {
        id,
        kind: SERVERDATA_RESPONSE_VALUE,
        body: Vec::new(),
    };
    match packet.kind {
        SERVERDATA_AUTH => {
            let given = String::from_utf8_lossy(&packet.body);
            let check = lockout.check(Some(conn.peer.ip()), password, &given, now, stats);
            conn.authenticated = check == PasswordCheck::Accepted;
            conn.send(empty(packet.id));
            let id = if conn.authenticated { packet.id } else { -1 };
            let answer = RconPacket {
                id,
                kind: SERVERDATA_AUTH_RESPONSE,
                body: Vec::new(),
            };
            conn.queue.push(Queued::NextFrame(answer.encode()));
            if !conn.authenticated {
                // Answered, then closed: one guess a connection.
                conn.closing = true;
            }
        }
        _ if !conn.authenticated => conn.closing = true,
        SERVERDATA_EXECCOMMAND => {
            let waiting = conn.waiting();
            let line = String::from_utf8_lossy(&packet.body).into_owned();
            let queued = waiting < MAX_WAITING
                && inbox.push(AdminLine {
                    origin: AdminOrigin::Rcon {
                        connection: conn.number,
                        request: packet.id,
                    },
                    line,
                    password: None,
                    from: Some(conn.peer),
                });
            if queued {
                conn.queue.push(Queued::Waiting(packet.id));
            } else {
                conn.send(RconPacket {
                    id: packet.id,
                    kind: SERVERDATA_RESPONSE_VALUE,
                    body: b"too many commands waiting; try again".to_vec(),
                });
            }
        }
        // The end-of-answer probe: mirrored back after everything before it.
        SERVERDATA_RESPONSE_VALUE => conn.send(empty(packet.id)),
        _ => conn.closing = true,
    }
}

/// Sends the console's answers and whatever else is ready; closes what should close.
fn answer_rcon(mut rcon: ResMut<Rcon>, mut inbox: ResMut<AdminInbox>) {
    let replies = inbox.take_replies(|o| matches!(o, AdminOrigin::Rcon { .. }));
    for (origin, lines) in replies {
        let AdminOrigin::Rcon {
            connection,
            request,
        } = origin
        else {
            continue;
        };
        if let Some(conn) = rcon
            .connections
            .iter_mut()
            .find(|c| c.session.number == connection)
        {
            conn.session.answer(request, &lines);
        }
    }
    for conn in &mut rcon.connections {
        conn.session.write_to(&mut conn.stream);
    }
    // A closing connection goes once what it was answered is written (or cannot be).
    // Commands run within the frame they arrive in, so nothing waits for long.
    rcon.connections.retain(|c| !c.session.finished());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_keep_their_order_behind_commands_still_running() {
        let peer = SocketAddr::from(([127, 0, 0, 1], 40000));
        let mut conn = RconSession::new(1, peer, Vec::new(), Instant::now());
        conn.queue.push(Queued::Waiting(5));
        conn.send(RconPacket {
            id: 6,
            kind: SERVERDATA_RESPONSE_VALUE,
            body: Vec::new(),
        });
        conn.release();
        assert!(
            conn.unsent.is_empty(),
            "the mirror waits for the answer before it"
        );
        conn.queue[0] = Queued::Ready(b"answer".to_vec());
        conn.release();
        assert!(conn.unsent.starts_with(b"answer"));
    }
}
