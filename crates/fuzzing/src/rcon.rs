//! The body for RCON's session logic as a sequence of packets: [`RconSession`] (what
//! the service keeps of each connection: its reading and handling of packets, its queue
//! of answers, their release and writing) and [`admit_rcon`] (who gets a slot), run over
//! in-memory connections frame by frame as the service's systems run them, with a
//! console that answers some commands a frame late (as statistics questions are).
//!
//! An input is operations, each after its length as two little-endian bytes and led by
//! a control byte: the operation in its low two bits ([`CONNECT`] to [`SLOW`]), the
//! client slot it acts on in the next two ([`slot`]), [`HOLD`] to keep the console from
//! running this frame, and in its top three bits the half seconds the clock moves
//! first ([`after_halves`]). One frame runs after each.

use crate::transport::payloads;
use sightline_dedicated::{
    ANSWER_CHUNK, AUTH_DEADLINE, MAX_CONNECTIONS, MAX_PER_HOST, MAX_UNAUTHENTICATED, MAX_UNSENT,
    MAX_WAITING, RconLockout, RconSession, UNAUTHENTICATED, admit_rcon,
};
use sightline_limits::{Admit, HostKey, NetworkKey};
use sightline_net::test_support::MemoryStream;
use sightline_query::{
    MAX_REQUEST_SIZE, RconPacket, SERVERDATA_AUTH, SERVERDATA_AUTH_RESPONSE,
    SERVERDATA_EXECCOMMAND, SERVERDATA_RESPONSE_VALUE,
};
use sightline_server::{AdminInbox, AdminOrigin, HostingStats, MAX_PENDING_LINES};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The server's `rcon_password`.
pub const RCON_PASSWORD: &str = "hunter2";

/// Where a connection comes from ([`CONNECT`]'s first byte picks): a host, the same host
/// IPv4-mapped, two /24 neighbours, two addresses of one IPv6 /64 (one host to the
/// limits), and two strangers.
pub const RCON_PEERS: [&str; 8] = [
    "198.51.100.7:50000",
    "[::ffff:198.51.100.7]:50001",
    "198.51.100.8:50000",
    "198.51.100.9:50000",
    "[2001:db8::7]:50000",
    "[2001:db8::8]:50000",
    "203.0.113.9:50000",
    "192.0.2.33:50000",
];

/// Operation: a new connection in the slot from [`RCON_PEERS`]`[data[0]]`, `data[1..]`
/// read already (as the token service hands a stream over); one the slot held is left
/// as it is, stalled.
pub const CONNECT: u8 = 0;
/// Operation: `data` to the slot's connection.
pub const SEND: u8 = 1;
/// Operation: the slot's client closes its side.
pub const CLOSE: u8 = 2;
/// Operation: the slot's client reads `data[0]` bytes a frame from now on (all without
/// it).
pub const SLOW: u8 = 3;
/// Control bit: the console does not run this frame; its lines wait.
pub const HOLD: u8 = 0x10;

/// Control bits 2 and 3: the client slot an operation acts on.
pub const fn slot(slot: u8) -> u8 {
    (slot & 3) << 2
}

/// Control bits 5 to 7: half seconds the clock moves on first.
pub const fn after_halves(halves: u8) -> u8 {
    (if halves > 7 { 7 } else { halves }) << 5
}

/// What the console prints for `line`: `big N` prints N KiB (at most 48, so sixteen
/// answers at once stay under [`MAX_UNSENT`] for a client that reads), an empty line
/// nothing, anything else a line naming it with a zero in it (which answers drop).
fn console(line: &str) -> Vec<String> {
    if let Some(n) = line.strip_prefix("big ") {
        let kib = n.trim().parse::<usize>().unwrap_or(1).min(48);
        return vec!["x".repeat(1023); kib];
    }
    if line.is_empty() {
        return Vec::new();
    }
    vec![format!("ran {line}"), "\0done".into()]
}

/// Whether the console answers `line` a frame late: statistics questions do.
fn answered_late(line: &str) -> bool {
    line.starts_with("top")
}

/// What a connection must answer, in the order asked.
#[derive(Debug)]
enum Group {
    /// These packets.
    Packets(Vec<RconPacket>),
    /// The console's answer to command `id`, not given yet.
    Waiting(i32),
}

/// The body's view of one connection.
struct Model {
    peer: SocketAddr,
    opened: Instant,
    /// Every byte the client sent, what was read with the connection included.
    sent: Vec<u8>,
    /// The packets in `sent`, each with the offset it ends at, as far as they decode.
    requests: Vec<(RconPacket, usize)>,
    decoded: usize,
    /// `sent` stops decoding at `decoded`.
    bad: bool,
    /// Requests the server has handled.
    handled: usize,
    authenticated: bool,
    /// The server stops reading it: a refused password, a command before the password,
    /// a packet of an unknown kind.
    ended: bool,
    groups: Vec<Group>,
    /// The next answer packet due: its group and its place in it.
    cursor: (usize, usize),
    received: Vec<u8>,
    slowed: bool,
    closed: bool,
    window: Option<usize>,
    /// The server gave up on it while writing: more unsent than [`MAX_UNSENT`].
    cut: bool,
}

impl Model {
    fn new(peer: SocketAddr, read: &[u8], now: Instant) -> Self {
        let mut m = Self {
            peer,
            opened: now,
            sent: Vec::new(),
            requests: Vec::new(),
            decoded: 0,
            bad: false,
            handled: 0,
            authenticated: false,
            ended: false,
            groups: Vec::new(),
            cursor: (0, 0),
            received: Vec::new(),
            slowed: false,
            closed: false,
            window: None,
            cut: false,
        };
        m.send(read);
        m
    }

    /// The client sends `bytes`: decoded as far as they go, as the server decodes.
    fn send(&mut self, bytes: &[u8]) {
        self.sent.extend_from_slice(bytes);
        while !self.bad {
            match RconPacket::decode(&self.sent[self.decoded..]) {
                Ok(Some((packet, used))) => {
                    self.decoded += used;
                    self.requests.push((packet, self.decoded));
                }
                Ok(None) => break,
                Err(_) => self.bad = true,
            }
        }
    }

    fn waiting(&self) -> usize {
        self.groups
            .iter()
            .filter(|g| matches!(g, Group::Waiting(_)))
            .count()
    }

    /// The console answered command `id` with `lines`: the first of its commands still
    /// waiting gets the answer, in packets of at most [`ANSWER_CHUNK`] bytes. Whether
    /// one was waiting.
    fn answered(&mut self, id: i32, lines: &[String]) -> bool {
        let Some(group) = self
            .groups
            .iter_mut()
            .find(|g| matches!(g, Group::Waiting(w) if *w == id))
        else {
            return false;
        };
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        let body: Vec<u8> = text.into_bytes().into_iter().filter(|&b| b != 0).collect();
        let packet = |body: &[u8]| RconPacket {
            id,
            kind: SERVERDATA_RESPONSE_VALUE,
            body: body.to_vec(),
        };
        *group = Group::Packets(if body.is_empty() {
            vec![packet(&[])]
        } else {
            body.chunks(ANSWER_CHUNK).map(packet).collect()
        });
        true
    }

    /// Reads the answer packets received so far against those due, in order: nothing
    /// nobody asked for, nothing from behind a command still waiting.
    fn check_received(&mut self) {
        while let Some((packet, used)) = answer_packet(&self.received) {
            self.received.drain(..used);
            loop {
                match self.groups.get(self.cursor.0) {
                    Some(Group::Packets(p)) if self.cursor.1 == p.len() => {
                        self.cursor = (self.cursor.0 + 1, 0);
                    }
                    _ => break,
                }
            }
            match self.groups.get(self.cursor.0) {
                None => panic!("an answer nobody asked for: {packet:?}"),
                Some(Group::Waiting(id)) => {
                    panic!("{packet:?} sent before the answer to command {id}, asked before it")
                }
                Some(Group::Packets(p)) => {
                    assert_eq!(packet, p[self.cursor.1], "answers out of order");
                    self.cursor.1 += 1;
                }
            }
        }
    }

    /// Whether every answer due has been received.
    fn all_received(&self) -> bool {
        let rest = &self.groups[self.cursor.0.min(self.groups.len())..];
        self.received.is_empty()
            && match rest {
                [] => true,
                [Group::Packets(p)] => self.cursor.1 == p.len(),
                _ => false,
            }
    }
}

/// One answer packet from the front of `bytes`, checked to be well formed: a size
/// within an answer chunk's, a body without zeros, the two zeros that end it.
fn answer_packet(bytes: &[u8]) -> Option<(RconPacket, usize)> {
    let size = i32::from_le_bytes(*bytes.first_chunk::<4>()?);
    assert!(
        (10..=ANSWER_CHUNK as i32 + 10).contains(&size),
        "an answer of size {size}"
    );
    let total = 4 + size as usize;
    let packet = bytes.get(4..total)?;
    let id = i32::from_le_bytes(packet[0..4].try_into().expect("4 bytes"));
    let kind = i32::from_le_bytes(packet[4..8].try_into().expect("4 bytes"));
    let (body, end) = packet[8..].split_at(packet.len() - 10);
    assert_eq!(end, [0, 0], "an answer not ended by two zeros");
    assert!(!body.contains(&0), "a zero inside an answer's body");
    let body = body.to_vec();
    Some((RconPacket { id, kind, body }, total))
}

/// The service's state and the body's, frame by frame.
struct Service {
    connections: Vec<(RconSession, MemoryStream)>,
    models: HashMap<u64, Model>,
    slots: [Option<u64>; 4],
    next_number: u64,
    arrivals: Vec<(usize, SocketAddr, Vec<u8>)>,
    lockout: RconLockout,
    inbox: AdminInbox,
    stats: HostingStats,
    late: Vec<(AdminOrigin, Vec<String>)>,
    now: Instant,
}

/// RCON's session logic over connections in memory, a frame after each operation as
/// the service runs one: every session reads what arrived and handles its packets, new
/// connections are admitted, the console runs (unless held), its answers go to their
/// sessions, every session releases and writes what is ready, finished ones go. After
/// the input, frames run until everything is answered.
///
/// Checked: the server handles exactly whole packets, in order; a command reaches the
/// console only from a connection that gave the right password, and a password is
/// accepted only when right (a right one may be refused while its host is locked out);
/// a refused password, or any packet but a password before one, ends the connection's
/// reading, and the connection goes once its answers are written. Each request gets its
/// answer (a password the empty `RESPONSE_VALUE` then the `AUTH_RESPONSE`, a command
/// the console's answer or a refusal while [`MAX_WAITING`] commands wait, the empty
/// probe its mirror), and answers leave in the order asked: nothing behind a command
/// still waiting leaves before it. A client that reads gets every answer due before its
/// connection goes, and all of them once the console has answered. Sessions stay
/// bounded (what is unsent within [`MAX_UNSENT`], what is read within two packets, at
/// most [`MAX_WAITING`] commands waiting), unauthenticated ones close past
/// [`AUTH_DEADLINE`], and admission keeps [`MAX_CONNECTIONS`], [`MAX_PER_HOST`] and the
/// unauthenticated pool's shares, never giving a stalled newcomer the place of a
/// connection that logged in, and always a place to a host and network holding none
/// while there is room.
pub fn rcon_session(data: &[u8]) {
    let mut s = Service {
        connections: Vec::new(),
        models: HashMap::new(),
        slots: [None; 4],
        next_number: 0,
        arrivals: Vec::new(),
        lockout: RconLockout::default(),
        inbox: AdminInbox::default(),
        stats: HostingStats::default(),
        late: Vec::new(),
        now: Instant::now(),
    };
    for op in payloads(data) {
        let Some((&control, data)) = op.split_first() else {
            continue;
        };
        s.now += Duration::from_millis(500 * u64::from(control >> 5));
        let slot = usize::from((control >> 2) & 3);
        let number = s.slots[slot].filter(|n| s.models.contains_key(n));
        match control & 3 {
            CONNECT => {
                let (who, read) = data.split_first().unwrap_or((&0, &[]));
                let peer: SocketAddr = RCON_PEERS[usize::from(*who) % RCON_PEERS.len()]
                    .parse()
                    .expect("a socket address");
                s.arrivals.push((slot, peer, read.to_vec()));
            }
            SEND => {
                if let Some(n) = number {
                    s.pipe(n).incoming.extend(data);
                    s.models.get_mut(&n).expect("modelled").send(data);
                }
            }
            CLOSE => {
                if let Some(n) = number {
                    s.pipe(n).eof = true;
                    s.models.get_mut(&n).expect("modelled").closed = true;
                }
            }
            _ => {
                if let Some(n) = number {
                    let window = data.first().map(|&w| usize::from(w)).filter(|&w| w > 0);
                    let m = s.models.get_mut(&n).expect("modelled");
                    m.window = window;
                    m.slowed |= window.is_some();
                }
            }
        }
        s.frame(control & HOLD == 0);
    }
    // Everyone reads, the console answers: everything due is sent.
    for m in s.models.values_mut() {
        m.window = None;
    }
    for _ in 0..4 {
        s.frame(true);
    }
    for (session, _) in &s.connections {
        let m = &s.models[&session.number()];
        assert!(!m.ended, "a connection that ended is still open");
        assert!(m.all_received(), "answers left unsent: {:?}", m.groups);
    }
}

impl Service {
    fn pipe(&mut self, number: u64) -> &mut MemoryStream {
        &mut self
            .connections
            .iter_mut()
            .find(|(s, _)| s.number() == number)
            .expect("an open connection")
            .1
    }

    /// One frame of the service.
    fn frame(&mut self, console_runs: bool) {
        let now = self.now;
        let before = self.inbox.lines.len();
        for (session, pipe) in &mut self.connections {
            session.read_from(
                pipe,
                RCON_PASSWORD,
                &mut self.lockout,
                &mut self.inbox,
                &mut self.stats,
                now,
            );
        }
        self.check_reads(before);
        for (slot, peer, read) in std::mem::take(&mut self.arrivals) {
            self.admit(slot, peer, read);
        }
        self.check_pool();
        if console_runs {
            let mut replies = std::mem::take(&mut self.late);
            for line in std::mem::take(&mut self.inbox.lines) {
                let output = console(&line.line);
                if answered_late(&line.line) {
                    self.late.push((line.origin, output));
                } else {
                    replies.push((line.origin, output));
                }
            }
            self.inbox.replies.extend(replies);
        }
        for (origin, lines) in self
            .inbox
            .take_replies(|o| matches!(o, AdminOrigin::Rcon { .. }))
        {
            let AdminOrigin::Rcon {
                connection,
                request,
            } = origin
            else {
                continue;
            };
            let Some((session, _)) = self
                .connections
                .iter_mut()
                .find(|(s, _)| s.number() == connection)
            else {
                continue;
            };
            let m = self.models.get_mut(&connection).expect("modelled");
            assert_eq!(
                session.answer(request, &lines),
                m.answered(request, &lines),
                "an answer for command {request} taken otherwise"
            );
        }
        for (session, pipe) in &mut self.connections {
            let m = self.models.get_mut(&session.number()).expect("modelled");
            pipe.window = m.window;
            let closing = session.closing();
            session.write_to(pipe);
            m.cut |= !closing && session.closing();
            assert!(session.unsent_len() <= MAX_UNSENT, "unsent past its bound");
            m.received.append(&mut pipe.written);
            m.check_received();
        }
        let models = &mut self.models;
        self.connections.retain(|(session, _)| {
            if !session.finished() {
                return true;
            }
            let m = models.remove(&session.number()).expect("modelled");
            if !m.slowed {
                assert!(
                    m.all_received(),
                    "a connection went before its answers: {:?}",
                    m.groups
                );
            }
            false
        });
    }

    /// After every session read: what each handled, against what its client sent.
    fn check_reads(&mut self, lines_before: usize) {
        let now = self.now;
        let mut lines: HashMap<u64, VecDeque<(i32, String)>> = HashMap::new();
        for line in &self.inbox.lines[lines_before..] {
            let AdminOrigin::Rcon {
                connection,
                request,
            } = line.origin
            else {
                panic!("{line:?} from RCON with another origin");
            };
            let m = &self.models[&connection];
            assert_eq!(line.from, Some(m.peer), "a line from another address");
            assert!(line.password.is_none(), "an RCON line asks for a password");
            lines
                .entry(connection)
                .or_default()
                .push_back((request, line.line.clone()));
        }
        for (session, pipe) in &self.connections {
            let number = session.number();
            let m = self.models.get_mut(&number).expect("modelled");
            let read = m.sent.len() - pipe.incoming.len();
            let consumed = read - session.inbox_len();
            let first = m.handled;
            while m
                .requests
                .get(m.handled)
                .is_some_and(|(_, end)| *end <= consumed)
            {
                m.handled += 1;
            }
            let boundary = m.handled.checked_sub(1).map_or(0, |i| m.requests[i].1);
            assert_eq!(
                boundary, consumed,
                "bytes handled that are no whole packets"
            );
            let mine = lines.remove(&number).unwrap_or_default();
            handle(m, session, first, mine, self.inbox.lines.len());
            assert!(
                session.inbox_len() <= 2 * (MAX_REQUEST_SIZE as usize + 4) + 4096,
                "{} bytes kept unread",
                session.inbox_len()
            );
            assert_eq!(session.authenticated(), m.authenticated);
            let age = now.saturating_duration_since(m.opened);
            if !m.authenticated && age > AUTH_DEADLINE {
                assert!(session.closing(), "unauthenticated past its deadline");
            }
            if session.closing() {
                let why = m.ended
                    || m.cut
                    || m.closed
                    || m.bad
                    || (!m.authenticated && age > Duration::from_secs(1))
                    || age > Duration::from_secs(600);
                assert!(why, "closed for no reason");
            }
        }
        assert!(lines.is_empty(), "lines from no open connection: {lines:?}");
    }

    /// A newcomer from `peer` into `slot`, as the service admits one.
    fn admit(&mut self, slot: usize, peer: SocketAddr, read: Vec<u8>) {
        let now = self.now;
        let open = |s: &RconSession| !s.authenticated() && !s.closing();
        let host = HostKey::of(peer.ip());
        let network = NetworkKey::of(peer.ip());
        let of_host = self
            .connections
            .iter()
            .filter(|(s, _)| HostKey::of(s.peer().ip()) == host)
            .count();
        let pool: Vec<&RconSession> = self
            .connections
            .iter()
            .map(|(s, _)| s)
            .filter(|s| open(s))
            .collect();
        let of_network = pool
            .iter()
            .filter(|s| NetworkKey::of(s.peer().ip()) == network)
            .count();
        let pool_full = pool.len() >= MAX_UNAUTHENTICATED;
        let room = of_host == 0
            && of_network == 0
            && !pool_full
            && self.connections.len() < MAX_CONNECTIONS;
        let admitted = admit_rcon(self.connections.iter().map(|(s, _)| s), peer, now);
        self.slots[slot] = None;
        match admitted {
            Admit::No => {
                assert!(!room, "{peer} refused with room for it");
                return;
            }
            Admit::Instead(i) => {
                let (gone, _) = self.connections.swap_remove(i);
                assert!(open(&gone), "a logged-in or closing connection pushed out");
                assert!(
                    NetworkKey::of(gone.peer().ip()) == network || pool_full,
                    "a stranger's network pushed out with room in the pool"
                );
                self.models.remove(&gone.number());
            }
            Admit::Yes => {}
        }
        self.next_number += 1;
        let number = self.next_number;
        self.connections.push((
            RconSession::new(number, peer, read.clone(), now),
            MemoryStream::default(),
        ));
        self.models.insert(number, Model::new(peer, &read, now));
        self.slots[slot] = Some(number);
    }

    /// The limits admission keeps.
    fn check_pool(&self) {
        assert!(self.connections.len() <= MAX_CONNECTIONS);
        let mut hosts: HashMap<HostKey, usize> = HashMap::new();
        let mut open_hosts: HashMap<HostKey, usize> = HashMap::new();
        let mut open_networks: HashMap<NetworkKey, usize> = HashMap::new();
        let mut open = 0;
        for (s, _) in &self.connections {
            let ip = s.peer().ip();
            *hosts.entry(HostKey::of(ip)).or_default() += 1;
            if !s.authenticated() && !s.closing() {
                open += 1;
                *open_hosts.entry(HostKey::of(ip)).or_default() += 1;
                *open_networks.entry(NetworkKey::of(ip)).or_default() += 1;
            }
        }
        assert!(
            hosts.values().all(|&n| n <= MAX_PER_HOST),
            "over MAX_PER_HOST"
        );
        assert!(open <= MAX_UNAUTHENTICATED, "over MAX_UNAUTHENTICATED");
        assert!(open_hosts.values().all(|&n| n <= UNAUTHENTICATED.per_host));
        assert!(
            open_networks
                .values()
                .all(|&n| n <= UNAUTHENTICATED.per_network)
        );
        for (s, _) in &self.connections {
            assert!(s.waiting() <= MAX_WAITING, "over MAX_WAITING");
        }
    }
}

/// The requests a session handled this frame (from `first`), against the lines it
/// gave the console (`lines`, in order): each request's answer is due, in order.
fn handle(
    m: &mut Model,
    session: &RconSession,
    first: usize,
    mut lines: VecDeque<(i32, String)>,
    pending_lines: usize,
) {
    let empty = |id| RconPacket {
        id,
        kind: SERVERDATA_RESPONSE_VALUE,
        body: Vec::new(),
    };
    if m.handled > first {
        assert!(
            !m.ended,
            "requests handled after the connection's reading ended"
        );
    }
    for i in first..m.handled {
        let packet = m.requests[i].0.clone();
        let last = i + 1 == m.handled;
        let id = packet.id;
        match packet.kind {
            SERVERDATA_AUTH => {
                // Accepted unless this was the last request handled and left it
                // unauthenticated: a refused one stops the reading.
                let accepted = !last || session.authenticated();
                if accepted {
                    assert_eq!(
                        packet.body,
                        RCON_PASSWORD.as_bytes(),
                        "a wrong password accepted"
                    );
                }
                let answer = RconPacket {
                    id: if accepted { id } else { -1 },
                    kind: SERVERDATA_AUTH_RESPONSE,
                    body: Vec::new(),
                };
                m.groups.push(Group::Packets(vec![empty(id), answer]));
                m.authenticated = accepted;
                if !accepted {
                    assert!(session.closing(), "open after a refused password");
                    m.ended = true;
                }
            }
            _ if !m.authenticated => {
                assert!(
                    session.closing(),
                    "open after a request before the password"
                );
                m.ended = true;
            }
            SERVERDATA_EXECCOMMAND => {
                let line = String::from_utf8_lossy(&packet.body).into_owned();
                if lines.front() == Some(&(id, line)) {
                    lines.pop_front();
                    m.groups.push(Group::Waiting(id));
                } else {
                    assert!(
                        m.waiting() >= MAX_WAITING || pending_lines >= MAX_PENDING_LINES,
                        "command {id} refused with room for it"
                    );
                    m.groups.push(Group::Packets(vec![RconPacket {
                        id,
                        kind: SERVERDATA_RESPONSE_VALUE,
                        body: b"too many commands waiting; try again".to_vec(),
                    }]));
                }
            }
            SERVERDATA_RESPONSE_VALUE => m.groups.push(Group::Packets(vec![empty(id)])),
            _ => {
                assert!(
                    session.closing(),
                    "open after a packet of kind {}",
                    packet.kind
                );
                m.ended = true;
            }
        }
        if m.ended {
            assert!(
                last,
                "requests handled after the connection's reading ended"
            );
        }
    }
    assert!(
        lines.is_empty(),
        "lines the connection did not send: {lines:?}"
    );
    assert_eq!(
        session.waiting(),
        m.waiting(),
        "commands waiting miscounted"
    );
}
