//! The server's side of the exchange: the token service on the game port's TCP, its pool
//! of requests shared fairly by host and network, and the steps each request goes
//! through until it is answered or dropped.

use super::*;
use crate::NetStats;
use crate::bans::AddressBans;
use crate::kex::{FinishError, KexError, ServerKeys, server_hello};
use renetcode::NetcodeServer;
use sightline_limits::{
    Admit, Bucket, Claim, HostKey, NetworkKey, PoolLimits, Rate, Shares, admit, oldest_of_busiest,
};
use sightline_protocol::{
    CLIENT_FINISH_MAX_BYTES, CLIENT_HELLO_BYTES, ExchangeTag, Framed, MAX_CHAT_LEN,
    PROTOCOL_VERSION, TOKEN_EXCHANGE_MAGIC, TOKEN_EXCHANGE_VERSION, TokenReply, TokenRequest, Wire,
    clean_text, frame, framed,
};
use sightline_tokens::issue_token;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The token service's pool: a host may hold as many places as the connections it may
/// hold, a network [`MAX_TCP_PER_NETWORK`], and when either is at its share or the pool
/// is full a newcomer takes the place of the oldest stalled request of a busier host or
/// network ([`sightline_limits::admit`]): requests whose whole hello has arrived are
/// settled and never give way.
pub(super) fn pool_limits(limits: AdmissionLimits) -> PoolLimits {
    let per_host = MAX_TCP_PER_HOST.max(limits.max_per_address);
    PoolLimits {
        capacity: MAX_TCP_PENDING,
        per_host,
        per_network: MAX_TCP_PER_NETWORK.max(per_host),
    }
}

/// Where a token request stands.
pub(super) enum Stage {
    /// Reading the client's hello.
    Hello,
    /// Hello answered: reading the client's confirmation and sealed request. `guess`: a
    /// password guess was taken from the allowance for it, given back if it confirms.
    Finish { keys: Box<ServerKeys>, guess: bool },
    /// Writing the last answer, then closing.
    Closing,
}

/// A token request being read or answered, over its stream: a TCP stream, or in
/// fuzzing an in-memory one (`bench`), so the same steps run without a socket.
pub(super) struct Pending<S = TcpStream> {
    pub(super) stream: S,
    pub(super) peer: SocketAddr,
    pub(super) place: Claim,
    pub(super) inbox: Vec<u8>,
    pub(super) outbox: Option<(Vec<u8>, usize)>,
    pub(super) stage: Stage,
    /// The client closed its side: what is in the inbox is all there will be.
    pub(super) closed: bool,
}

impl<S> Pending<S> {
    /// Whether it has had its time: no first bytes within [`FIRST_BYTES_DEADLINE`], or
    /// not served within [`SERVE_DEADLINE`].
    pub(super) fn overdue(&self, now: Instant) -> bool {
        let age = now.saturating_duration_since(self.place.since);
        let silent = matches!(self.stage, Stage::Hello) && self.inbox.is_empty();
        age > SERVE_DEADLINE || (silent && age > FIRST_BYTES_DEADLINE)
    }

    /// Answers with `reply` in the clear and closes: for what is refused before any key
    /// exists, or to a client whose keys differ from ours.
    pub(super) fn answer_clear(&mut self, reply: &TokenReply) {
        let mut body = vec![ExchangeTag::Clear as u8];
        body.extend_from_slice(&reply.encode().unwrap_or_default());
        self.outbox = Some((frame(&body).unwrap_or_default(), 0));
        self.stage = Stage::Closing;
    }
}

impl<S: Read> Pending<S> {
    /// Reads what has arrived, up to `limit` bytes in the inbox; `Err` for a broken
    /// stream.
    pub(super) fn fill(&mut self, limit: usize) -> Result<(), ()> {
        let mut chunk = [0u8; 512];
        while self.inbox.len() < limit && !self.closed {
            let want = (limit - self.inbox.len()).min(chunk.len());
            match self.stream.read(&mut chunk[..want]) {
                Ok(0) => self.closed = true,
                Ok(n) => self.inbox.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        }
        Ok(())
    }
}

/// A stream that did not open with the token exchange's magic: another protocol on the
/// same port (Source RCON), handed over with the bytes already read from it. It is
/// non-blocking.
#[derive(Debug)]
pub struct ForeignStream {
    /// The connection.
    pub stream: TcpStream,
    /// Who opened it.
    pub peer: SocketAddr,
    /// What the token service read from it (at least 4 bytes).
    pub read: Vec<u8>,
}

/// A foreign stream waiting to be taken; it keeps its place in the pool until then.
pub(super) struct Waiting {
    pub(super) foreign: ForeignStream,
    pub(super) place: Claim,
}

/// The server's allowance of password guesses. Every exchange with a private server
/// lets the asker test one guess (SPAKE2), so each takes one from the allowance when the
/// server answers its hello, and gives it back once the asker proves it knew the
/// password; a returned guess is used before the bucket's.
pub(super) struct Guesses {
    pub(super) bucket: Bucket,
    pub(super) returned: u32,
}

impl Guesses {
    pub(super) fn new() -> Self {
        Self {
            bucket: Bucket::new(PASSWORD_GUESS_BURST, PASSWORD_GUESSES_PER_SECOND),
            returned: 0,
        }
    }

    /// Takes a guess, if one is left at `now`.
    pub(super) fn take(&mut self, now: Instant) -> bool {
        if self.returned > 0 {
            self.returned -= 1;
            true
        } else {
            self.bucket.take(now)
        }
    }

    /// Gives back a guess that proved right.
    pub(super) fn give_back(&mut self) {
        self.returned = (self.returned + 1).min(PASSWORD_GUESS_BURST as u32);
    }
}

/// The server's token service: a non-blocking TCP listener polled once a frame, with
/// every cost bounded per frame and the pool of requests shared fairly between hosts
/// and networks.
pub struct TokenService {
    pub(super) listener: TcpListener,
    pub(super) pending: Vec<Pending>,
    pub(super) foreign: VecDeque<Waiting>,
    pub(super) limiter: Shares,
    pub(super) guesses: Guesses,
    /// When it was last polled, to tell the server's own stalls from slow requests.
    pub(super) polled_at: Option<Instant>,
    /// Streams a relay joined, waiting to be taken in.
    pub(super) adopted: VecDeque<(TcpStream, SocketAddr)>,
}

/// Streams from a relay waiting to be taken in at once (a frame takes
/// `ACCEPTS_PER_FRAME`).
pub const MAX_ADOPTED: usize = 64;

/// What a request in its last stage changes: the per-host rate limiter, the server's
/// allowance of wrong passwords, and the statistics.
pub(super) struct Issuer<'a> {
    pub(super) limiter: &'a mut Shares,
    pub(super) guesses: &'a mut Guesses,
    pub(super) stats: &'a mut NetStats,
    pub(super) netcode: &'a NetcodeServer,
    pub(super) config: &'a SecureConfig,
    pub(super) limits: AdmissionLimits,
    pub(super) public: SocketAddr,
    pub(super) bans: &'a AddressBans,
    pub(super) now: Instant,
}

impl TokenService {
    /// Listens on `bind` (the game's address and port, over TCP).
    pub fn bind(bind: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        Ok(Self {
            listener,
            pending: Vec::new(),
            foreign: VecDeque::new(),
            limiter: Shares::per_host(Rate::new(TOKEN_BURST, TOKENS_PER_SECOND)),
            guesses: Guesses::new(),
            polled_at: None,
            adopted: VecDeque::new(),
        })
    }

    /// The streams of other protocols that arrived since the last call (at most
    /// [`MAX_FOREIGN_WAITING`]; older ones were dropped and counted in
    /// [`NetStats::token_requests_dropped`], as are those left waiting past the
    /// service's 2 s deadline). Until taken they hold their places in the pool: call it
    /// every frame.
    pub fn take_foreign(&mut self) -> Vec<ForeignStream> {
        self.foreign.drain(..).map(|w| w.foreign).collect()
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
                p.place.since += gap;
            }
            for w in &mut self.foreign {
                w.place.since += gap;
            }
        }
        // Foreign streams nobody took in time are closed, so they cannot hold places.
        let before = self.foreign.len();
        self.foreign
            .retain(|w| now.saturating_duration_since(w.place.since) <= SERVE_DEADLINE);
        stats.token_requests_dropped += (before - self.foreign.len()) as u64;
        let mut finished = Vec::new();
        let mut foreign = Vec::new();
        let mut hellos = 0;
        let Self {
            pending,
            limiter,
            guesses,
            ..
        } = self;
        let mut issuer = Issuer {
            limiter,
            guesses,
            stats,
            netcode,
            config,
            limits,
            public,
            bans,
            now,
        };
        for (i, p) in pending.iter_mut().enumerate() {
            match serve(p, &mut hellos, &mut issuer) {
                Served::Waiting => {}
                Served::Answered => {
                    let _ = p.stream.shutdown(Shutdown::Write);
                    finished.push(i);
                }
                Served::Dropped => finished.push(i),
                Served::Foreign => foreign.push(i),
            }
        }
        // Removed from the end, so the indices still to remove stay valid.
        let mut gone: Vec<(usize, bool)> = finished.into_iter().map(|i| (i, false)).collect();
        gone.extend(foreign.into_iter().map(|i| (i, true)));
        gone.sort_unstable();
        for (i, handed_over) in gone.into_iter().rev() {
            let p = self.pending.swap_remove(i);
            if handed_over {
                self.wait_foreign(p, stats);
            }
        }
        // Accepted after the reading, so every request is read once before a newcomer
        // can take its place: an honest client's hello, sent as it connects, is there by
        // the next poll and settles it.
        self.accept(limits, now, stats);
    }

    /// Accepts new connections into the pool, fairly ([`admit`]): those a relay joined
    /// to this server first, then the listener's.
    fn accept(&mut self, limits: AdmissionLimits, now: Instant, stats: &mut NetStats) {
        for _ in 0..ACCEPTS_PER_FRAME {
            let (stream, peer) = match self.adopted.pop_front() {
                Some(adopted) => adopted,
                None => match self.listener.accept() {
                    Ok(accepted) => accepted,
                    Err(_) => break, // WouldBlock: none waiting
                },
            };
            self.take_in(stream, peer, limits, now, stats);
        }
    }

    /// Takes a stream from `peer` into the pool, if [`admit`] lets it in.
    fn take_in(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        limits: AdmissionLimits,
        now: Instant,
        stats: &mut NetStats,
    ) {
        let place = Claim {
            host: HostKey::of(peer.ip()),
            network: NetworkKey::of(peer.ip()),
            since: now,
            settled: false,
        };
        // Foreign streams count until handed over: the pool lists them after the
        // requests.
        let pool: Vec<Claim> = self
            .pending
            .iter()
            .map(|p| p.place)
            .chain(self.foreign.iter().map(|w| w.place))
            .collect();
        let admitted = admit(&pool, place.host, place.network, pool_limits(limits), now);
        if admitted == Admit::No || stream.set_nonblocking(true).is_err() {
            stats.token_requests_dropped += 1;
            return; // dropping the stream closes it
        }
        if let Admit::Instead(i) = admitted {
            stats.token_requests_dropped += 1;
            if i < self.pending.len() {
                self.pending.swap_remove(i);
            } else {
                self.foreign.remove(i - self.pending.len());
            }
        }
        let mut p = Pending {
            stream,
            peer,
            place,
            inbox: Vec::new(),
            outbox: None,
            stage: Stage::Hello,
            closed: false,
        };
        // What came with the connection is read now: another protocol's stream
        // leaves the pool for its taker at once, and a whole hello settles its
        // request, so neither waits among the stalled for a later poll (where a
        // burst of newcomers made this same poll could keep an honest one out).
        if p.fill(CLIENT_HELLO_BYTES).is_err() {
            stats.token_requests_dropped += 1;
            return;
        }
        let magic = TOKEN_EXCHANGE_MAGIC.len();
        if p.inbox.len() >= magic && p.inbox[..magic] != TOKEN_EXCHANGE_MAGIC {
            self.wait_foreign(p, stats);
            return;
        }
        p.place.settled = p.inbox.len() >= CLIENT_HELLO_BYTES;
        self.pending.push(p);
    }

    /// Takes a stream a relay joined to this server, from `peer` (the player's address,
    /// as the relay says): served as if `peer` had connected to the listener, so the
    /// token it gets works from `peer` only. Past [`MAX_ADOPTED`] waiting, dropped.
    pub(crate) fn adopt(&mut self, stream: TcpStream, peer: SocketAddr, stats: &mut NetStats) {
        if self.adopted.len() >= MAX_ADOPTED {
            stats.token_requests_dropped += 1;
            return;
        }
        self.adopted.push_back((stream, peer));
    }

    /// Queues a stream of another protocol to be taken, past [`MAX_FOREIGN_WAITING`]
    /// dropping the oldest of the host with the most waiting.
    fn wait_foreign(&mut self, p: Pending, stats: &mut NetStats) {
        if self.foreign.len() >= MAX_FOREIGN_WAITING {
            let hosts: Vec<HostKey> = self.foreign.iter().map(|w| w.place.host).collect();
            if let Some(i) = oldest_of_busiest(&hosts) {
                self.foreign.remove(i);
            }
            stats.token_requests_dropped += 1;
        }
        self.foreign.push_back(Waiting {
            foreign: ForeignStream {
                stream: p.stream,
                peer: p.peer,
                read: p.inbox,
            },
            // Handed over within a frame; the foreign queue has bounds of its own.
            place: Claim {
                settled: true,
                ..p.place
            },
        });
    }
}

/// What became of a request this frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Served {
    /// Still being read or answered.
    Waiting,
    /// Its last answer is written: close it.
    Answered,
    /// Dropped unanswered (counted): overdue, malformed, or closed early.
    Dropped,
    /// Not a token exchange: hand it over.
    Foreign,
}

/// One frame's work on one request: drop it when overdue, write what it waits to send,
/// then read and answer its current stage. The only I/O is on `p.stream`.
pub(super) fn serve<S: Read + Write>(
    p: &mut Pending<S>,
    hellos: &mut usize,
    issuer: &mut Issuer,
) -> Served {
    if p.overdue(issuer.now) {
        issuer.stats.token_requests_dropped += 1;
        return Served::Dropped;
    }
    if let Some((bytes, sent)) = &mut p.outbox {
        match p.stream.write(&bytes[*sent..]) {
            Ok(n) => *sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => *sent = bytes.len(),
        }
        if *sent < bytes.len() {
            return Served::Waiting;
        }
        p.outbox = None;
        if matches!(p.stage, Stage::Closing) {
            return Served::Answered;
        }
    }
    let step = match p.stage {
        Stage::Hello => p
            .fill(CLIENT_HELLO_BYTES)
            .and_then(|()| read_hello(p, hellos, issuer)),
        Stage::Finish { .. } => p
            .fill(2 + CLIENT_FINISH_MAX_BYTES)
            .and_then(|()| read_finish(p, issuer)),
        Stage::Closing => Ok(Step::Wait),
    };
    match step {
        Ok(Step::Wait) => Served::Waiting,
        Ok(Step::Foreign) => Served::Foreign,
        Err(()) => {
            issuer.stats.token_requests_dropped += 1;
            Served::Dropped
        }
    }
}

/// What a request's stage did this frame.
pub(super) enum Step {
    /// Nothing more to do until the next frame.
    Wait,
    /// Not a token exchange: hand it over.
    Foreign,
}

/// Answers a whole client hello: cheap refusals first, in the clear and before any
/// cryptography (a ban, the rate, the exchange's version, the guess allowance), then the
/// server's hello.
pub(super) fn read_hello<S>(
    p: &mut Pending<S>,
    hellos: &mut usize,
    issuer: &mut Issuer,
) -> Result<Step, ()> {
    let magic = TOKEN_EXCHANGE_MAGIC.len();
    if p.inbox.len() >= magic && p.inbox[..magic] != TOKEN_EXCHANGE_MAGIC {
        return Ok(Step::Foreign);
    }
    if p.inbox.len() < CLIENT_HELLO_BYTES {
        return if p.closed { Err(()) } else { Ok(Step::Wait) };
    }
    // A whole hello came: this request is no longer stalling, whatever its turn.
    p.place.settled = true;
    if *hellos >= HELLOS_PER_FRAME {
        return Ok(Step::Wait);
    }
    *hellos += 1;
    let ip = p.peer.ip();
    let refusal = if let Some(reason) = issuer.bans.refusal(ip) {
        Some(format!("banned from this server: {reason}"))
    } else if issuer.limiter.allow(ip, issuer.now).is_err() {
        Some("too many token requests; wait a few seconds".into())
    } else if p.inbox[magic] != TOKEN_EXCHANGE_VERSION {
        Some(format!(
            "token exchange version {} is not this server's ({TOKEN_EXCHANGE_VERSION}); \
             update the game",
            p.inbox[magic]
        ))
    } else {
        None
    };
    if let Some(reason) = refusal {
        issuer.stats.tokens_refused += 1;
        p.answer_clear(&refused(&reason));
        return Ok(Step::Wait);
    }
    let password = issuer.config.password.as_deref().unwrap_or("");
    let guess = issuer.config.password.is_some();
    // Refused unchecked while the allowance is spent, or a guess could still come out
    // right.
    if guess && !issuer.guesses.take(issuer.now) {
        issuer.stats.tokens_refused += 1;
        p.answer_clear(&refused(
            "too many wrong passwords on this server; try again in a few seconds",
        ));
        return Ok(Step::Wait);
    }
    match server_hello(&issuer.config.identity, password, &p.inbox) {
        Ok((keys, hello)) => {
            let mut body = vec![ExchangeTag::ServerHello as u8];
            body.extend_from_slice(&hello);
            p.outbox = Some((frame(&body).unwrap_or_default(), 0));
            p.inbox.clear();
            p.stage = Stage::Finish {
                keys: Box::new(keys),
                guess,
            };
            Ok(Step::Wait)
        }
        Err(KexError::Malformed | KexError::Version(_)) => {
            if guess {
                issuer.guesses.give_back(); // nothing was tested
            }
            Err(())
        }
    }
}

/// A refusal the client can read, whatever went into its reason (a ban's reason is
/// whatever the ban file or an admin gave): control characters become spaces and the
/// reason is cleaned as chat is and cut to [`MAX_CHAT_LEN`], which is what
/// [`TokenReply`] accepts; a reason it refuses would leave the client with "bad token
/// reply" instead of why.
pub(super) fn refused(reason: &str) -> TokenReply {
    let spaced: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    TokenReply::Refused {
        reason: clean_text(&spaced, MAX_CHAT_LEN),
    }
}

/// Checks a whole client finish: a wrong confirmation is a wrong password (counted, and
/// answered in the clear); a right one gets the answer to its sealed request, sealed.
pub(super) fn read_finish<S>(p: &mut Pending<S>, issuer: &mut Issuer) -> Result<Step, ()> {
    let Stage::Finish { keys, guess } = &p.stage else {
        return Ok(Step::Wait);
    };
    let len = match framed(&p.inbox, CLIENT_FINISH_MAX_BYTES) {
        Framed::Incomplete if p.closed => return Err(()),
        Framed::Incomplete => return Ok(Step::Wait),
        Framed::TooLarge => return Err(()),
        Framed::Complete(len) => len,
    };
    let opened = keys.open_request(&p.inbox[2..2 + len]);
    if *guess && opened != Err(FinishError::WrongConfirmation) {
        issuer.guesses.give_back(); // the asker knew the password
    }
    let request = match opened {
        Err(FinishError::WrongConfirmation) => {
            issuer.stats.tokens_refused += 1;
            let reason = if issuer.config.password.is_some() {
                "wrong password"
            } else {
                "the token exchange failed (this server takes no password)"
            };
            p.answer_clear(&refused(reason));
            return Ok(Step::Wait);
        }
        Err(FinishError::Tampered) => return Err(()),
        Ok(bytes) => TokenRequest::decode(&bytes).map_err(|_| ())?,
    };
    let reply = issuer.answer(&request, p);
    let mut body = vec![ExchangeTag::Sealed as u8];
    body.extend_from_slice(&keys.seal_reply(&reply.encode().unwrap_or_default()));
    p.outbox = Some((frame(&body).unwrap_or_default(), 0));
    p.stage = Stage::Closing;
    Ok(Step::Wait)
}

impl Issuer<'_> {
    /// The answer to a confirmed request: a token, or why not.
    pub(super) fn answer<S>(&mut self, request: &TokenRequest, p: &Pending<S>) -> TokenReply {
        let stats = &mut *self.stats;
        let mut refuse = |reason: String| {
            stats.tokens_refused += 1;
            refused(&reason)
        };
        // Banned while the exchange ran.
        if let Some(reason) = self.bans.refusal(p.peer.ip()) {
            return refuse(format!("banned from this server: {reason}"));
        }
        if request.protocol_version != PROTOCOL_VERSION {
            return refuse(format!(
                "protocol mismatch: server speaks version {PROTOCOL_VERSION}, client speaks \
                 version {}",
                request.protocol_version
            ));
        }
        let netcode = self.netcode;
        let connected_here = netcode
            .clients_id_iter()
            .filter_map(|id| netcode.client_addr(id))
            .filter(|addr| p.place.host == HostKey::of(addr.ip()))
            .count();
        if connected_here >= self.limits.max_per_address {
            return refuse(format!(
                "too many connections from your address ({})",
                self.limits.max_per_address
            ));
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
            &self.config.key,
            client_id,
            p.peer.ip(),
            self.public,
            netcode.current_time(),
        );
        let mut bytes = Vec::new();
        match token.map(|t| t.write(&mut bytes)) {
            Ok(Ok(())) => {
                self.stats.tokens_issued += 1;
                TokenReply::Granted { token: bytes }
            }
            _ => {
                self.stats.tokens_refused += 1;
                refused("the server could not make a token")
            }
        }
    }
}
