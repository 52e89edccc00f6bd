//! The browser's side of A2S: query one server, or many at once from one socket,
//! following challenges and reassembling split replies with bounded buffers.

use crate::a2s::{PlayerInfo, Request, Response, ServerInfo, decode_response, encode_request};
use crate::split::{Reassembly, is_split};
use crate::wire::{DecodeError, strip_connectionless};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// Most challenge rounds one query follows before giving up.
const MAX_CHALLENGES: u8 = 3;
/// Queries in flight at once in [`query_many`]: enough to fill a browser quickly, few
/// enough that the replies fit in the socket's receive buffer.
pub const MAX_IN_FLIGHT: usize = 64;
/// Receive buffer: any UDP datagram fits, so none is cut short.
const RECV_BUFFER: usize = 65_536;

/// Why a query gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The socket failed.
    Io(ErrorKind),
    /// No complete answer within the timeout.
    Timeout,
    /// The server replied with something that is not a valid answer.
    Malformed(DecodeError),
    /// The server kept sending challenges.
    TooManyChallenges,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Io(kind) => write!(f, "socket error: {kind}"),
            QueryError::Timeout => write!(f, "no answer in time"),
            QueryError::Malformed(e) => write!(f, "bad reply: {e}"),
            QueryError::TooManyChallenges => write!(f, "server keeps sending challenges"),
        }
    }
}

impl std::error::Error for QueryError {}

impl From<io::Error> for QueryError {
    fn from(e: io::Error) -> Self {
        QueryError::Io(e.kind())
    }
}

/// Which A2S query an exchange makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    Info,
    Players,
    Rules,
}

impl Ask {
    fn request(self, challenge: Option<u32>) -> Vec<u8> {
        let slot = challenge.unwrap_or(u32::MAX);
        encode_request(match self {
            Ask::Info => Request::Info { challenge },
            Ask::Players => Request::Players { challenge: slot },
            Ask::Rules => Request::Rules { challenge: slot },
        })
    }
}

/// What an exchange wants next.
enum Progress {
    Wait,
    Send(Vec<u8>),
    Done(Result<Response, QueryError>),
}

/// One query to one server: the request, its challenge rounds and the split reassembly.
struct Exchange {
    ask: Ask,
    request: Vec<u8>,
    sent_at: Instant,
    /// Round trip of the first reply (the challenge, usually): the ping.
    rtt: Option<Duration>,
    deadline: Instant,
    /// When to send the request again if nothing came back; one resend per query.
    resend_at: Option<Instant>,
    challenges: u8,
    split: Reassembly,
}

impl Exchange {
    fn new(ask: Ask, now: Instant, timeout: Duration) -> Self {
        Self {
            ask,
            request: ask.request(None),
            sent_at: now,
            rtt: None,
            deadline: now + timeout,
            resend_at: Some(now + timeout / 2),
            challenges: 0,
            split: Reassembly::new(),
        }
    }

    fn on_packet(&mut self, bytes: &[u8], now: Instant) -> Progress {
        self.rtt
            .get_or_insert(now.saturating_duration_since(self.sent_at));
        self.resend_at = None;
        let message = if is_split(bytes) {
            match self.split.push(bytes) {
                Ok(Some(message)) => message,
                Ok(None) => return Progress::Wait,
                Err(e) => return Progress::Done(Err(QueryError::Malformed(e))),
            }
        } else {
            bytes.to_vec()
        };
        match decode_response(&message) {
            Ok(Response::Challenge(c)) => {
                if self.challenges >= MAX_CHALLENGES {
                    return Progress::Done(Err(QueryError::TooManyChallenges));
                }
                self.challenges += 1;
                self.request = self.ask.request(Some(c));
                self.split = Reassembly::new();
                Progress::Send(self.request.clone())
            }
            Ok(response) => {
                let expected = matches!(
                    (self.ask, &response),
                    (Ask::Info, Response::Info(_))
                        | (Ask::Players, Response::Players(_))
                        | (Ask::Rules, Response::Rules(_))
                );
                if expected {
                    Progress::Done(Ok(response))
                } else {
                    let kind = strip_connectionless(&message).map_or(0, |m| m[0]);
                    Progress::Done(Err(QueryError::Malformed(DecodeError::UnexpectedType(
                        kind,
                    ))))
                }
            }
            Err(e) => Progress::Done(Err(QueryError::Malformed(e))),
        }
    }
}

/// A socket and the exchanges in flight on it, keyed by server address.
pub(crate) struct Session {
    socket: UdpSocket,
    exchanges: HashMap<SocketAddr, Exchange>,
    buf: Vec<u8>,
}

/// A finished exchange: the reply and the ping.
pub(crate) type Finished = Result<(Response, Duration), QueryError>;

impl Session {
    /// A session on an ephemeral port of the family `like` needs.
    pub(crate) fn new(like: SocketAddr) -> io::Result<Self> {
        let bind: SocketAddr = if like.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        Ok(Self {
            socket: UdpSocket::bind(bind)?,
            exchanges: HashMap::new(),
            buf: vec![0; RECV_BUFFER],
        })
    }

    pub(crate) fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.exchanges.len()
    }

    pub(crate) fn has(&self, addr: SocketAddr) -> bool {
        self.exchanges.contains_key(&addr)
    }

    /// Starts a query to `addr`; a send that fails finishes it at once.
    pub(crate) fn start(
        &mut self,
        addr: SocketAddr,
        ask: Ask,
        timeout: Duration,
        done: &mut impl FnMut(SocketAddr, Finished),
    ) {
        let now = Instant::now();
        let exchange = Exchange::new(ask, now, timeout);
        match self.socket.send_to(&exchange.request, addr) {
            Ok(_) => {
                self.exchanges.insert(addr, exchange);
            }
            Err(e) => done(addr, Err(e.into())),
        }
    }

    /// Adopts a server that answered a request sent elsewhere (a broadcast at
    /// `sent_at`): its first reply is fed to a new exchange as if it had been asked.
    pub(crate) fn adopt(
        &mut self,
        addr: SocketAddr,
        ask: Ask,
        sent_at: Instant,
        deadline: Instant,
        first: &[u8],
        done: &mut impl FnMut(SocketAddr, Finished),
    ) {
        let mut exchange = Exchange::new(ask, sent_at, deadline.saturating_duration_since(sent_at));
        exchange.resend_at = None;
        self.exchanges.insert(addr, exchange);
        self.feed(addr, first, Instant::now(), done);
    }

    fn feed(
        &mut self,
        addr: SocketAddr,
        bytes: &[u8],
        now: Instant,
        done: &mut impl FnMut(SocketAddr, Finished),
    ) {
        let Some(exchange) = self.exchanges.get_mut(&addr) else {
            return;
        };
        match exchange.on_packet(bytes, now) {
            Progress::Wait => {}
            Progress::Send(request) => {
                exchange.resend_at =
                    Some(now + exchange.deadline.saturating_duration_since(now) / 2);
                if let Err(e) = self.socket.send_to(&request, addr) {
                    self.exchanges.remove(&addr);
                    done(addr, Err(e.into()));
                }
            }
            Progress::Done(result) => {
                let rtt = exchange.rtt.unwrap_or_default();
                self.exchanges.remove(&addr);
                done(addr, result.map(|r| (r, rtt)));
            }
        }
    }

    /// Waits for one packet (at most until the next deadline, resend or `until`), routes
    /// it, then times out and resends. Packets from addresses without an exchange go to
    /// `stray`.
    pub(crate) fn step(
        &mut self,
        until: Option<Instant>,
        done: &mut impl FnMut(SocketAddr, Finished),
        stray: &mut impl FnMut(&mut Self, SocketAddr, &[u8], &mut dyn FnMut(SocketAddr, Finished)),
    ) {
        let now = Instant::now();
        let next = self
            .exchanges
            .values()
            .flat_map(|e| [Some(e.deadline), e.resend_at])
            .flatten()
            .chain(until)
            .min();
        let wait = next.map_or(Duration::from_millis(100), |t| {
            t.saturating_duration_since(now)
        });
        // A zero read timeout is an error in std; a millisecond is the floor.
        let received = match self
            .socket
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
        {
            Ok(()) => self.socket.recv_from(&mut self.buf),
            Err(e) => Err(e),
        };
        match received {
            Ok((n, from)) => {
                let from = SocketAddr::new(from.ip().to_canonical(), from.port());
                let packet = self.buf[..n].to_vec();
                if self.exchanges.contains_key(&from) {
                    self.feed(from, &packet, Instant::now(), done);
                } else {
                    stray(self, from, &packet, done);
                }
            }
            Err(e) if crate::wire::is_transient(&e) => {}
            Err(e) => {
                for (addr, _) in self.exchanges.drain() {
                    done(addr, Err(QueryError::Io(e.kind())));
                }
                return;
            }
        }
        self.expire(Instant::now(), done);
    }

    fn expire(&mut self, now: Instant, done: &mut impl FnMut(SocketAddr, Finished)) {
        let timed_out: Vec<SocketAddr> = self
            .exchanges
            .iter()
            .filter(|(_, e)| e.deadline <= now)
            .map(|(a, _)| *a)
            .collect();
        for addr in timed_out {
            self.exchanges.remove(&addr);
            done(addr, Err(QueryError::Timeout));
        }
        let mut failed = Vec::new();
        for (addr, e) in &mut self.exchanges {
            if e.resend_at.is_some_and(|t| t <= now) {
                e.resend_at = None;
                // The ping is timed from the request that got through.
                if e.rtt.is_none() {
                    e.sent_at = now;
                }
                if let Err(err) = self.socket.send_to(&e.request, *addr) {
                    failed.push((*addr, err.kind()));
                }
            }
        }
        for (addr, kind) in failed {
            self.exchanges.remove(&addr);
            done(addr, Err(QueryError::Io(kind)));
        }
    }
}

/// Packets from addresses that were not asked are ignored.
pub(crate) fn ignore_stray(
    _: &mut Session,
    _: SocketAddr,
    _: &[u8],
    _: &mut dyn FnMut(SocketAddr, Finished),
) {
}

/// Runs one query to completion.
fn query_one(addr: SocketAddr, ask: Ask, timeout: Duration) -> Finished {
    let addr = SocketAddr::new(addr.ip().to_canonical(), addr.port());
    let mut session = Session::new(addr)?;
    let mut result = None;
    let mut done = |_: SocketAddr, r: Finished| result = Some(r);
    session.start(addr, ask, timeout, &mut done);
    while session.in_flight() > 0 {
        session.step(None, &mut done, &mut ignore_stray);
    }
    result.unwrap_or(Err(QueryError::Timeout))
}

/// Asks one server for its info (A2S_INFO); gives the info and the ping.
pub fn query_info(
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(ServerInfo, Duration), QueryError> {
    match query_one(addr, Ask::Info, timeout)? {
        (Response::Info(info), ping) => Ok((info, ping)),
        _ => Err(QueryError::Malformed(DecodeError::Invalid("reply type"))),
    }
}

/// Asks one server for its players (A2S_PLAYER).
pub fn query_players(addr: SocketAddr, timeout: Duration) -> Result<Vec<PlayerInfo>, QueryError> {
    match query_one(addr, Ask::Players, timeout)? {
        (Response::Players(players), _) => Ok(players),
        _ => Err(QueryError::Malformed(DecodeError::Invalid("reply type"))),
    }
}

/// Asks one server for its rules (A2S_RULES).
pub fn query_rules(
    addr: SocketAddr,
    timeout: Duration,
) -> Result<Vec<(String, String)>, QueryError> {
    match query_one(addr, Ask::Rules, timeout)? {
        (Response::Rules(rules), _) => Ok(rules),
        _ => Err(QueryError::Malformed(DecodeError::Invalid("reply type"))),
    }
}

/// Asks many servers for their info from one socket, [`MAX_IN_FLIGHT`] at a time, each
/// with `timeout`; `on_result` hears about each address once, as its answer comes. For
/// the browser's background thread. Duplicate addresses are asked once; IPv6 addresses
/// are skipped (with an error) when the socket is IPv4, and the other way round.
pub fn query_many(
    addrs: &[SocketAddr],
    timeout: Duration,
    mut on_result: impl FnMut(SocketAddr, Result<(ServerInfo, Duration), QueryError>),
) {
    let mut seen = HashSet::new();
    let mut queue = addrs
        .iter()
        .map(|a| SocketAddr::new(a.ip().to_canonical(), a.port()))
        .filter(|a| seen.insert(*a))
        .collect::<Vec<_>>()
        .into_iter();
    let Some(first) = queue.as_slice().first().copied() else {
        return;
    };
    let mut done = |addr: SocketAddr, r: Finished| {
        on_result(
            addr,
            r.and_then(|(response, ping)| match response {
                Response::Info(info) => Ok((info, ping)),
                _ => Err(QueryError::Malformed(DecodeError::Invalid("reply type"))),
            }),
        )
    };
    let mut session = match Session::new(first) {
        Ok(s) => s,
        Err(e) => {
            for addr in queue {
                done(addr, Err(QueryError::Io(e.kind())));
            }
            return;
        }
    };
    loop {
        while session.in_flight() < MAX_IN_FLIGHT {
            let Some(addr) = queue.next() else { break };
            if addr.is_ipv4() != first.is_ipv4() {
                done(addr, Err(QueryError::Io(ErrorKind::Unsupported)));
                continue;
            }
            session.start(addr, Ask::Info, timeout, &mut done);
        }
        if session.in_flight() == 0 {
            return;
        }
        session.step(None, &mut done, &mut ignore_stray);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::responder::tests::Fixed;
    use crate::responder::{Answer, Responder};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread::JoinHandle;

    /// A game server's query socket on 127.0.0.1, answering with [`Responder`] on a
    /// thread until dropped.
    pub(crate) struct TestServer {
        pub(crate) addr: SocketAddr,
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    }

    impl TestServer {
        pub(crate) fn start(bind: SocketAddr, players: usize) -> io::Result<Self> {
            let socket = UdpSocket::bind(bind)?;
            socket.set_read_timeout(Some(Duration::from_millis(20)))?;
            let addr = socket.local_addr()?;
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let thread = std::thread::spawn(move || {
                let server = Fixed::new(players);
                let mut responder = Responder::new();
                let mut buf = [0u8; 2048];
                while !flag.load(Ordering::Relaxed) {
                    let Ok((n, from)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    if let Answer::Replies(packets) =
                        responder.answer(from, &buf[..n], Instant::now(), &server)
                    {
                        for p in packets {
                            let _ = socket.send_to(&p, from);
                        }
                    }
                }
            });
            Ok(Self {
                addr,
                stop,
                thread: Some(thread),
            })
        }
    }

    impl Drop for TestServer {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    const LOOPBACK: &str = "127.0.0.1:0";
    const TIMEOUT: Duration = Duration::from_secs(5);

    #[test]
    fn queries_over_real_udp() {
        let server = TestServer::start(LOOPBACK.parse().unwrap(), 64).unwrap();
        let expected = Fixed::new(64);
        let (info, ping) = query_info(server.addr, TIMEOUT).unwrap();
        assert_eq!(info, expected.info);
        assert!(ping < TIMEOUT);
        assert_eq!(
            query_players(server.addr, TIMEOUT).unwrap(),
            expected.players
        );
        assert_eq!(query_rules(server.addr, TIMEOUT).unwrap(), expected.rules);
    }

    #[test]
    fn many_servers_from_one_socket() {
        let servers: Vec<_> = (0..3)
            .map(|_| TestServer::start(LOOPBACK.parse().unwrap(), 2).unwrap())
            .collect();
        // A bound socket that never answers: its query must time out.
        let silent = UdpSocket::bind(LOOPBACK).unwrap();
        let mut addrs: Vec<_> = servers.iter().map(|s| s.addr).collect();
        addrs.push(silent.local_addr().unwrap());
        addrs.push(servers[0].addr);
        let mut results = HashMap::new();
        query_many(&addrs, Duration::from_millis(800), |addr, r| {
            assert!(results.insert(addr, r).is_none(), "one result per address");
        });
        assert_eq!(results.len(), 4);
        for s in &servers {
            assert!(matches!(&results[&s.addr], Ok((i, _)) if i.name == "Sightline test"));
        }
        assert_eq!(
            results[&silent.local_addr().unwrap()],
            Err(QueryError::Timeout)
        );
    }

    #[test]
    fn garbage_replies_end_a_query_with_an_error() {
        let fake = UdpSocket::bind(LOOPBACK).unwrap();
        let addr = fake.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            let (_, from) = fake.recv_from(&mut buf).unwrap();
            fake.send_to(b"\xFF\xFF\xFF\xFFI\x11no terminator", from)
                .unwrap();
        });
        assert_eq!(
            query_info(addr, TIMEOUT),
            Err(QueryError::Malformed(DecodeError::Truncated))
        );
        t.join().unwrap();
    }

    /// python-a2s (a third-party client) against the responder. Set
    /// SIGHTLINE_A2S_PYTHON to a python with the `a2s` package to run it.
    #[test]
    fn python_a2s_reads_our_replies() {
        let Ok(python) = std::env::var("SIGHTLINE_A2S_PYTHON") else {
            eprintln!("skipped: set SIGHTLINE_A2S_PYTHON to a python with python-a2s");
            return;
        };
        let server = TestServer::start(LOOPBACK.parse().unwrap(), 64).unwrap();
        let script = format!(
            "import a2s\naddr=('127.0.0.1',{})\ni=a2s.info(addr,timeout=5)\n\
             p=a2s.players(addr,timeout=5)\nr=a2s.rules(addr,timeout=5)\n\
             print(i.server_name,i.map_name,i.folder,i.game,i.player_count,i.max_players,\
             i.bot_count,i.password_protected,i.port,i.keywords,sep='|')\n\
             print(len(p),p[63].name,p[63].score,p[63].duration,sep='|')\nprint(r)\n",
            server.addr.port()
        );
        let out = std::process::Command::new(python)
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let expected = Fixed::new(64);
        let last = &expected.players[63];
        assert_eq!(
            text,
            format!(
                "Sightline test|depot|sightline|Sightline|3|16|2|True|27015|dm\n\
                 64|{}|{}|{}\n{{'mp_timelimit': '10'}}\n",
                last.name, last.score, last.duration
            )
        );
    }
}
