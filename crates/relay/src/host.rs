//! A host's end of the relay, without sockets: the game server's transport hands it what
//! arrives and asks it where each datagram goes, so the same server serves players on
//! its own port and through the relay's. It registers, keeps the game alive, answers a
//! lost game by registering again, and asks for a probe that says whether strangers
//! could reach the host without the relay.

use crate::wire::{
    ATTACH_BYTES, Cookie, HostMessage, PROBE_BYTES, Refusal, RelayMessage, Session, attach_header,
    is_relay, probe_nonce,
};
use sightline_limits::LruMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// Time between keepalives (the relay closes a game silent for 30 s).
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// Time between registration tries while the relay has not answered.
const REGISTER_RETRY: Duration = Duration::from_secs(1);
/// Tries before the host is told the relay is silent (it goes on trying, slower).
const SILENT_AFTER: u32 = 5;
/// Time between tries once the relay was silent, or after it refused.
const SLOW_RETRY: Duration = Duration::from_secs(15);
/// A game whose keepalives go unanswered this long is registered again.
const LOST_AFTER: Duration = Duration::from_secs(15);
/// How long a probe may take to arrive, per try, and the tries.
const PROBE_WAIT: Duration = Duration::from_secs(1);
const PROBE_TRIES: u32 = 3;
/// How long a player heard through the relay is answered through it.
const ROUTE_MEMORY: Duration = Duration::from_secs(120);
/// Players remembered as reached through the relay.
const MAX_ROUTES: usize = 4096;

/// What the host is told, for its player or its log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum News {
    /// Players can join through the relay at `public`; the relay sees the host at
    /// `observed`.
    Open {
        /// The address players dial.
        public: SocketAddr,
        /// The host's address as the relay sees it.
        observed: SocketAddr,
    },
    /// The relay allocated nothing.
    Refused(Refusal),
    /// The relay has not answered.
    Silent(SocketAddr),
    /// The relay stopped answering, or forgot the game: registering again.
    Lost,
    /// A stranger's datagram reached the host's own port.
    Reachable(Probed),
    /// None did: only the relay (or the LAN) reaches the host.
    Unreachable(Probed),
}

/// The host's port a probe tried, and the host's address as the relay saw it (known once
/// a game is open there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probed {
    /// The host's address as the relay saw it.
    pub ip: Option<IpAddr>,
    /// The port probed.
    pub port: u16,
}

impl fmt::Display for Probed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            Some(ip) => write!(f, "at {}", SocketAddr::new(ip, self.port)),
            None => write!(f, "on port {}", self.port),
        }
    }
}

impl fmt::Display for News {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Open { public, .. } => write!(
                f,
                "relay: players on the internet can join at {public} (through the relay)"
            ),
            Self::Refused(reason) => write!(f, "relay: {}", reason.describe()),
            Self::Silent(relay) => write!(f, "relay: {relay} does not answer; still trying"),
            Self::Lost => f.write_str("relay: the relay lost the game; registering again"),
            Self::Reachable(probed) => write!(
                f,
                "reachability: players on the internet can reach you directly {probed}"
            ),
            Self::Unreachable(probed) => write!(
                f,
                "reachability: players on the internet cannot reach you directly {probed} \
                 (the router lets no stranger in)"
            ),
        }
    }
}

#[derive(Debug)]
enum State {
    Asking {
        next: Instant,
        tries: u32,
    },
    Open {
        session: Session,
        public: SocketAddr,
        heard: Instant,
        next: Instant,
    },
}

#[derive(Debug)]
struct Probe {
    nonce: u64,
    port: u16,
    sent: Option<Instant>,
    tries: u32,
}

impl Probe {
    fn new(port: u16) -> Self {
        let random = sightline_tokens::random_secret();
        Self {
            nonce: u64::from_le_bytes(random[..8].try_into().unwrap_or_default()),
            port,
            sent: None,
            tries: 0,
        }
    }
}

/// What a datagram that reached the host's port is.
#[derive(Debug, PartialEq, Eq)]
pub enum Sorted<'a> {
    /// A player's datagram through the relay: the game reads it as from `from`.
    Game {
        /// The player's address.
        from: SocketAddr,
        /// The datagram.
        payload: &'a [u8],
    },
    /// The relay's own message, or the probe: taken here.
    Taken,
    /// Not the relay's: the game reads it as it came.
    Direct,
}

/// Where a datagram the host sends goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// Straight to its address.
    Direct,
    /// To the relay, wrapped.
    Relay(Vec<u8>),
    /// Nowhere yet: an announcement while the game is not open on the relay (the
    /// master would list the host's own address, which strangers may not reach).
    Hold,
}

/// A host's link to one relay.
#[derive(Debug)]
pub struct HostLink {
    relay: SocketAddr,
    state: State,
    cookie: Option<Cookie>,
    /// Addresses always reached through the relay (master lists, so they list the
    /// relay's address).
    announce: Vec<SocketAddr>,
    routes: LruMap<SocketAddr, Instant>,
    probe: Option<Probe>,
    news: Vec<News>,
    opens: Vec<(u32, SocketAddr)>,
    generation: u64,
    observed: Option<SocketAddr>,
    reachable: Option<bool>,
    /// Whether it opens a game (or only asks for the probe).
    registering: bool,
    /// Relay messages that were not understood.
    pub malformed: u64,
}

impl HostLink {
    /// A link to `relay`, registering from `now`; `announce` are reached through the
    /// relay once the game is open there.
    pub fn new(relay: SocketAddr, announce: Vec<SocketAddr>, now: Instant) -> Self {
        Self {
            relay,
            state: State::Asking {
                next: now,
                tries: 0,
            },
            cookie: None,
            announce,
            routes: LruMap::new(MAX_ROUTES),
            probe: None,
            news: Vec::new(),
            opens: Vec::new(),
            generation: 0,
            observed: None,
            reachable: None,
            registering: true,
            malformed: 0,
        }
    }

    /// A link that opens no game: it only has `relay` probe the host's `port` (a cookie
    /// first, then the probe), to say whether strangers reach the host directly.
    pub fn probe_only(relay: SocketAddr, port: u16, now: Instant) -> Self {
        let mut link = Self::new(relay, Vec::new(), now);
        link.registering = false;
        link.probe = Some(Probe::new(port));
        link
    }

    /// The relay's control address.
    pub fn relay(&self) -> SocketAddr {
        self.relay
    }

    /// The address players dial through the relay, once the game is open there.
    pub fn public_addr(&self) -> Option<SocketAddr> {
        match self.state {
            State::Open { public, .. } => Some(public),
            State::Asking { .. } => None,
        }
    }

    /// Counts the games opened: it changes when the public address does.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether strangers reach the host's own port: `None` until a probe's verdict.
    pub fn reachable(&self) -> Option<bool> {
        self.reachable
    }

    /// What happened since the last call.
    pub fn take_news(&mut self) -> Vec<News> {
        std::mem::take(&mut self.news)
    }

    /// Streams the relay holds for the host: attach to each ([`Self::attach_header`]).
    pub fn take_opens(&mut self) -> Vec<(u32, SocketAddr)> {
        std::mem::take(&mut self.opens)
    }

    /// The header that attaches to stream `stream` of the open game.
    pub fn attach_header(&self, stream: u32) -> Option<[u8; ATTACH_BYTES]> {
        match &self.state {
            State::Open { session, .. } => Some(attach_header(session, stream)),
            State::Asking { .. } => None,
        }
    }

    /// What to send the relay now: registrations, keepalives, probe requests.
    pub fn due(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        match &mut self.state {
            State::Asking { next, tries } => {
                // Only for a cookie, without a game: asked until one comes.
                let asking = self.registering || self.cookie.is_none();
                if asking && now >= *next {
                    *tries += 1;
                    let cookie = self.cookie.unwrap_or_default();
                    out.push(HostMessage::Register { cookie }.encode());
                    if *tries == SILENT_AFTER {
                        self.news.push(News::Silent(self.relay));
                    }
                    let wait = if *tries >= SILENT_AFTER {
                        SLOW_RETRY
                    } else {
                        REGISTER_RETRY
                    };
                    *next = now + wait;
                }
            }
            State::Open {
                session,
                heard,
                next,
                ..
            } => {
                if now.saturating_duration_since(*heard) > LOST_AFTER {
                    self.lose(now);
                    return self.due(now);
                }
                if now >= *next {
                    *next = now + KEEPALIVE_INTERVAL;
                    out.push(HostMessage::Keepalive { session: *session }.encode());
                }
            }
        }
        if let (Some(probe), Some(cookie)) = (&mut self.probe, self.cookie) {
            let waited = probe
                .sent
                .is_none_or(|t| now.saturating_duration_since(t) >= PROBE_WAIT);
            if waited && probe.tries < PROBE_TRIES {
                probe.tries += 1;
                probe.sent = Some(now);
                out.push(
                    HostMessage::Probe {
                        cookie,
                        port: probe.port,
                        nonce: probe.nonce,
                    }
                    .encode(),
                );
            } else if waited {
                let probed = Probed {
                    ip: self.observed.map(|a| a.ip()),
                    port: probe.port,
                };
                self.news.push(News::Unreachable(probed));
                self.reachable = Some(false);
                self.probe = None;
            }
        }
        out
    }

    fn lose(&mut self, now: Instant) {
        self.news.push(News::Lost);
        self.state = State::Asking {
            next: now,
            tries: 0,
        };
    }

    /// Sorts a datagram that reached the host's port from `from`.
    pub fn sort<'a>(&mut self, from: SocketAddr, bytes: &'a [u8], now: Instant) -> Sorted<'a> {
        if bytes.len() == PROBE_BYTES
            && let Some(nonce) = probe_nonce(bytes)
        {
            if let Some(probe) = self.probe.take_if(|p| p.nonce == nonce) {
                let probed = Probed {
                    ip: self.observed.map(|a| a.ip()),
                    port: probe.port,
                };
                self.news.push(News::Reachable(probed));
                self.reachable = Some(true);
            }
            return Sorted::Taken;
        }
        if from != self.relay || !is_relay(bytes) {
            // A player who now reaches the host directly is answered directly.
            self.routes.remove(&from);
            return Sorted::Direct;
        }
        let Ok(message) = RelayMessage::decode(bytes) else {
            self.malformed += 1;
            return Sorted::Taken;
        };
        match message {
            RelayMessage::Cookie { cookie } => {
                let fresh = self.cookie != Some(cookie);
                self.cookie = Some(cookie);
                if let State::Asking { next, .. } = &mut self.state
                    && fresh
                    && self.registering
                {
                    *next = now; // register with it at once
                }
            }
            RelayMessage::Allocated {
                session,
                port,
                observed,
            } => {
                let public = SocketAddr::new(self.relay.ip(), port);
                if self.public_addr() != Some(public) {
                    self.generation += 1;
                    self.news.push(News::Open { public, observed });
                    self.probe = Some(Probe::new(observed.port()));
                }
                self.observed = Some(observed);
                self.state = State::Open {
                    session,
                    public,
                    heard: now,
                    next: now + KEEPALIVE_INTERVAL,
                };
            }
            RelayMessage::Refused { reason } => match (&mut self.state, reason) {
                (State::Open { .. }, Refusal::UnknownSession) => self.lose(now),
                (State::Asking { next, .. }, Refusal::BadCookie) => {
                    self.cookie = None;
                    *next = now;
                }
                (State::Asking { next, .. }, reason) if reason != Refusal::UnknownSession => {
                    self.news.push(News::Refused(reason));
                    *next = now + SLOW_RETRY;
                }
                _ => {}
            },
            RelayMessage::Alive { id } => {
                if let State::Open { session, heard, .. } = &mut self.state
                    && session.id == id
                {
                    *heard = now;
                }
            }
            RelayMessage::Deliver { id, from, payload } => {
                if !self.is_open(id) {
                    return Sorted::Taken;
                }
                *self.routes.get_or_insert_with(from, || now) = now;
                return Sorted::Game { from, payload };
            }
            RelayMessage::Open { id, stream, from } => {
                if self.is_open(id) {
                    self.opens.push((stream, from));
                }
            }
        }
        Sorted::Taken
    }

    fn is_open(&self, id: u64) -> bool {
        matches!(&self.state, State::Open { session, .. } if session.id == id)
    }

    /// Whether `addr` is reached through the relay now (it spoke to the game there
    /// lately): it dialled the relay's port, so that is the game's port to it.
    pub fn reached_through(&self, addr: SocketAddr, now: Instant) -> bool {
        matches!(self.state, State::Open { .. })
            && self
                .routes
                .peek(&addr)
                .is_some_and(|t| now.saturating_duration_since(*t) < ROUTE_MEMORY)
    }

    /// Where a datagram for `to` goes: through the relay when `to` was heard through it
    /// lately or is one of the announced-to addresses, otherwise straight.
    pub fn route(&self, to: SocketAddr, payload: &[u8], now: Instant) -> Route {
        let announced = self.announce.contains(&to);
        let State::Open { session, .. } = &self.state else {
            return if announced {
                Route::Hold
            } else {
                Route::Direct
            };
        };
        if !(self.reached_through(to, now) || announced)
            || payload.is_empty()
            || payload.len() > crate::MAX_PAYLOAD
        {
            return Route::Direct;
        }
        Route::Relay(
            HostMessage::Send {
                session: *session,
                to,
                payload,
            }
            .encode(),
        )
    }

    /// The goodbye that frees the game on the relay at once.
    pub fn close(&self) -> Option<Vec<u8>> {
        match &self.state {
            State::Open { session, .. } => Some(HostMessage::Close { session: *session }.encode()),
            State::Asking { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::probe_datagram;

    fn relay() -> SocketAddr {
        "203.0.113.9:27960".parse().unwrap()
    }

    fn observed() -> SocketAddr {
        "198.51.100.4:40123".parse().unwrap()
    }

    fn player() -> SocketAddr {
        "192.0.2.77:51000".parse().unwrap()
    }

    fn session() -> Session {
        Session {
            id: 11,
            secret: [5; 16],
        }
    }

    /// A link taken through the cookie to an open game on port 28001.
    fn opened(t0: Instant, announce: Vec<SocketAddr>) -> HostLink {
        let mut link = HostLink::new(relay(), announce, t0);
        let first = link.due(t0);
        assert_eq!(
            HostMessage::decode(&first[0]),
            Ok(HostMessage::Register { cookie: [0; 16] })
        );
        let cookie = RelayMessage::Cookie { cookie: [7; 16] }.encode();
        assert_eq!(link.sort(relay(), &cookie, t0), Sorted::Taken);
        let again = link.due(t0);
        assert_eq!(
            HostMessage::decode(&again[0]),
            Ok(HostMessage::Register { cookie: [7; 16] }),
            "registers with the cookie at once"
        );
        let allocated = RelayMessage::Allocated {
            session: session(),
            port: 28001,
            observed: observed(),
        }
        .encode();
        assert_eq!(link.sort(relay(), &allocated, t0), Sorted::Taken);
        link
    }

    #[test]
    fn a_host_registers_with_its_cookie_and_is_told_where_players_join() {
        let t0 = Instant::now();
        let mut link = opened(t0, Vec::new());
        let public: SocketAddr = "203.0.113.9:28001".parse().unwrap();
        assert_eq!(link.public_addr(), Some(public));
        assert_eq!(link.generation(), 1);
        assert_eq!(
            link.take_news(),
            vec![News::Open {
                public,
                observed: observed()
            }]
        );
        // Keepalives every 5 s, each answered.
        assert!(
            link.due(t0 + Duration::from_secs(1))
                .iter()
                .all(|m| !matches!(HostMessage::decode(m), Ok(HostMessage::Keepalive { .. })))
        );
        let at5 = t0 + KEEPALIVE_INTERVAL;
        assert!(
            link.due(at5).iter().any(
                |m| HostMessage::decode(m) == Ok(HostMessage::Keepalive { session: session() })
            )
        );
        let alive = RelayMessage::Alive { id: 11 }.encode();
        link.sort(relay(), &alive, at5);
        assert_eq!(link.public_addr(), Some(public), "still open at 20 s");
        link.due(at5 + Duration::from_secs(14));
        assert!(link.take_news().iter().all(|n| *n != News::Lost));
    }

    #[test]
    fn a_game_whose_relay_falls_silent_or_forgets_it_is_registered_again() {
        let t0 = Instant::now();
        let mut link = opened(t0, Vec::new());
        link.take_news();
        let late = t0 + LOST_AFTER + Duration::from_secs(1);
        let sent = link.due(late);
        assert_eq!(link.take_news(), vec![News::Lost]);
        assert_eq!(link.public_addr(), None);
        assert!(matches!(
            HostMessage::decode(&sent[0]),
            Ok(HostMessage::Register { .. })
        ));
        // Open again; then the relay restarts and forgets the game.
        let allocated = RelayMessage::Allocated {
            session: Session {
                id: 12,
                secret: [6; 16],
            },
            port: 28002,
            observed: observed(),
        }
        .encode();
        link.sort(relay(), &allocated, late);
        assert_eq!(link.generation(), 2, "a new address");
        let forgot = RelayMessage::Refused {
            reason: Refusal::UnknownSession,
        }
        .encode();
        link.sort(relay(), &forgot, late);
        assert_eq!(link.public_addr(), None);
        assert!(link.take_news().contains(&News::Lost));
    }

    #[test]
    fn a_silent_or_refusing_relay_is_named_and_asked_again_slowly() {
        let t0 = Instant::now();
        let mut link = HostLink::new(relay(), Vec::new(), t0);
        let mut t = t0;
        for _ in 0..SILENT_AFTER {
            assert_eq!(link.due(t).len(), 1);
            t += REGISTER_RETRY;
        }
        assert_eq!(link.take_news(), vec![News::Silent(relay())]);
        assert!(link.due(t).is_empty(), "slower now");
        assert_eq!(link.due(t + SLOW_RETRY).len(), 1);
        let full = RelayMessage::Refused {
            reason: Refusal::Full,
        }
        .encode();
        link.sort(relay(), &full, t);
        assert_eq!(link.take_news(), vec![News::Refused(Refusal::Full)]);
        assert!(
            News::Refused(Refusal::Full)
                .to_string()
                .contains("no room for another game")
        );
    }

    #[test]
    fn players_heard_through_the_relay_are_answered_through_it_and_others_directly() {
        let t0 = Instant::now();
        let master: SocketAddr = "192.0.2.200:27950".parse().unwrap();
        let link = HostLink::new(relay(), vec![master], t0);
        assert_eq!(link.route(master, b"heartbeat", t0), Route::Hold);
        assert_eq!(link.route(player(), b"x", t0), Route::Direct);
        let mut link = opened(t0, vec![master]);
        let deliver = RelayMessage::Deliver {
            id: 11,
            from: player(),
            payload: b"connect",
        }
        .encode();
        assert_eq!(
            link.sort(relay(), &deliver, t0),
            Sorted::Game {
                from: player(),
                payload: b"connect"
            }
        );
        assert!(link.reached_through(player(), t0));
        let Route::Relay(wrapped) = link.route(player(), b"welcome", t0) else {
            panic!("a relayed player is answered through the relay");
        };
        assert_eq!(
            HostMessage::decode(&wrapped),
            Ok(HostMessage::Send {
                session: session(),
                to: player(),
                payload: b"welcome"
            })
        );
        assert!(matches!(link.route(master, b"hb", t0), Route::Relay(_)));
        let lan: SocketAddr = "192.168.1.20:50000".parse().unwrap();
        assert_eq!(link.route(lan, b"x", t0), Route::Direct);
        // Silent past the route's memory, or heard directly since: answered directly.
        assert_eq!(link.route(player(), b"x", t0 + ROUTE_MEMORY), Route::Direct);
        assert_eq!(link.sort(player(), b"direct now", t0), Sorted::Direct);
        assert_eq!(link.route(player(), b"x", t0), Route::Direct);
        // Another game's delivery, or a forged one from elsewhere, is not the game's.
        let other = RelayMessage::Deliver {
            id: 99,
            from: player(),
            payload: b"x",
        }
        .encode();
        assert_eq!(link.sort(relay(), &other, t0), Sorted::Taken);
        let stranger: SocketAddr = "192.0.2.66:27960".parse().unwrap();
        assert_eq!(link.sort(stranger, &deliver, t0), Sorted::Direct);
    }

    #[test]
    fn a_probe_that_arrives_says_reachable_and_one_that_never_does_unreachable() {
        let t0 = Instant::now();
        let mut link = opened(t0, Vec::new());
        let asked = link.due(t0);
        let nonce = asked
            .iter()
            .find_map(|m| match HostMessage::decode(m) {
                Ok(HostMessage::Probe { port, nonce, .. }) => {
                    assert_eq!(port, observed().port(), "the port the relay sees");
                    Some(nonce)
                }
                _ => None,
            })
            .expect("a probe is asked for once the game is open");
        assert_eq!(link.reachable(), None);
        let from_elsewhere: SocketAddr = "203.0.113.9:45555".parse().unwrap();
        let wrong = probe_datagram(nonce ^ 1);
        assert_eq!(link.sort(from_elsewhere, &wrong, t0), Sorted::Taken);
        assert_eq!(link.reachable(), None, "another nonce proves nothing");
        link.sort(from_elsewhere, &probe_datagram(nonce), t0);
        assert_eq!(link.reachable(), Some(true));
        let probed = Probed {
            ip: Some(observed().ip()),
            port: observed().port(),
        };
        assert!(link.take_news().contains(&News::Reachable(probed)));

        let mut link = opened(t0, Vec::new());
        let mut probes = 0;
        for s in 0..=PROBE_TRIES {
            probes += link
                .due(t0 + PROBE_WAIT * s)
                .iter()
                .filter(|m| matches!(HostMessage::decode(m), Ok(HostMessage::Probe { .. })))
                .count();
        }
        assert_eq!(probes as u32, PROBE_TRIES);
        assert_eq!(link.reachable(), Some(false));
        let news = link.take_news();
        assert!(news.contains(&News::Unreachable(probed)));
        assert_eq!(
            news.last().map(|n| n.to_string()).as_deref(),
            Some(
                "reachability: players on the internet cannot reach you directly at \
                 198.51.100.4:40123 (the router lets no stranger in)"
            )
        );
    }

    #[test]
    fn a_probe_alone_asks_for_a_cookie_and_the_probe_and_opens_no_game() {
        let t0 = Instant::now();
        let mut link = HostLink::probe_only(relay(), 27015, t0);
        let first = link.due(t0);
        assert_eq!(
            first
                .iter()
                .map(|m| HostMessage::decode(m))
                .collect::<Vec<_>>(),
            vec![Ok(HostMessage::Register { cookie: [0; 16] })],
            "a zero cookie asks for one and allocates nothing"
        );
        let cookie = RelayMessage::Cookie { cookie: [7; 16] }.encode();
        link.sort(relay(), &cookie, t0);
        let mut nonce = None;
        for s in 0..30 {
            for m in link.due(t0 + Duration::from_secs(s)) {
                match HostMessage::decode(&m) {
                    Ok(HostMessage::Probe { port, nonce: n, .. }) => {
                        assert_eq!(port, 27015);
                        nonce = Some(n);
                    }
                    other => panic!("only probes once the cookie came: {other:?}"),
                }
            }
            if s == 1 {
                let nonce = nonce.expect("asked for at once");
                let from: SocketAddr = "203.0.113.9:45555".parse().unwrap();
                link.sort(from, &probe_datagram(nonce), t0 + Duration::from_secs(1));
            }
        }
        assert_eq!(link.reachable(), Some(true));
        assert_eq!(link.public_addr(), None);
        assert_eq!(
            link.take_news(),
            vec![News::Reachable(Probed {
                ip: None,
                port: 27015
            })]
        );
        assert_eq!(
            News::Reachable(Probed {
                ip: None,
                port: 27015
            })
            .to_string(),
            "reachability: players on the internet can reach you directly on port 27015"
        );
    }

    #[test]
    fn streams_are_attached_with_the_session_s_secret() {
        let t0 = Instant::now();
        let mut link = opened(t0, Vec::new());
        let open = RelayMessage::Open {
            id: 11,
            stream: 4,
            from: player(),
        }
        .encode();
        link.sort(relay(), &open, t0);
        assert_eq!(link.take_opens(), vec![(4, player())]);
        let header = link.attach_header(4).expect("open");
        assert_eq!(crate::read_attach(&header), Ok((session(), 4)));
        assert!(link.close().is_some());
    }
}
