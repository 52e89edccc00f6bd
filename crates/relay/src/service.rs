//! The relay itself: a control port where hosts register games, and for each game a port
//! of the relay's own (UDP and TCP, one number, as a game server has) whose traffic it
//! forwards to the game's host and back. Threads, not an event loop: a few per game and
//! per stream, every count bounded below.

use crate::counters::Counters;
use crate::wire::{
    ATTACH_BYTES, Cookie, HostMessage, MAX_DATAGRAM, MAX_PAYLOAD, Refusal, RelayMessage, Session,
    probe_datagram, read_attach,
};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use sightline_limits::{Bucket, HostKey, LruMap, NetworkKey, Rate, ShareRates, Shares};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket,
};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a cookie's time slot lasts; a cookie is good in its slot and the next.
const COOKIE_SLOT_SECONDS: u64 = 30;
/// Cookies and refusals a host is sent (and probes it may ask for) at once, and a
/// second: enough for a host's retries, too few to aim at anyone.
const ASKING: Rate = Rate::new(8.0, 1.0);
/// Probes a host may ask for at once, and a second.
const PROBES: Rate = Rate::new(3.0, 0.2);
/// Datagrams a game's player (host) may send to it at once, and a second: a 144 fps
/// client sends about 300 a second.
const PLAYER_PACKETS: Rate = Rate::new(1024.0, 1024.0);
/// Datagrams a network's players may send to one game at once, and a second.
const NETWORK_PACKETS: Rate = Rate::new(4096.0, 4096.0);
/// Datagrams a host may send a second to addresses that have not spoken to its game
/// lately (announcements to master lists), and at once.
const UNSOLICITED: Rate = Rate::new(4.0, 1.0);
/// How long an address that sent to a game may be sent to without limit.
const PEER_MEMORY: Duration = Duration::from_secs(60);
/// Addresses a game remembers as its peers.
const MAX_PEERS: usize = 1024;
/// TCP streams a game may have waiting or joined at once, and from one host.
const STREAMS_PER_GAME: usize = 8;
const STREAMS_PER_HOST: usize = 2;
/// Joined streams at once, over every game.
const MAX_STREAMS: usize = 256;
/// Attaches under way at once (their header being read, or their stream joined), and
/// from one host: a host attaches only as many streams as its two games may have.
const MAX_ATTACHING: usize = MAX_STREAMS;
const ATTACHING_PER_HOST: usize = 2 * STREAMS_PER_GAME;
/// How long a stream waits for its host to attach.
const ATTACH_WAIT: Duration = Duration::from_secs(5);
/// How long a joined stream lives, and what it may carry each way: a token exchange
/// is two round trips of under a kilobyte.
const STREAM_LIFETIME: Duration = Duration::from_secs(20);
const STREAM_BYTES: u64 = 64 * 1024;
/// How often the control thread wakes to expire games and streams.
const HOUSEKEEPING: Duration = Duration::from_millis(250);

/// What a relay allows.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// The control port's address (UDP and TCP).
    pub listen: SocketAddr,
    /// Ports games are given, each UDP and TCP.
    pub ports: RangeInclusive<u16>,
    /// Games at once.
    pub max_games: usize,
    /// Games one host (an IPv4 address, an IPv6 /64) may hold.
    pub games_per_host: usize,
    /// Games one network (an IPv4 /24, an IPv6 /48) may hold.
    pub games_per_network: usize,
    /// Bytes a second each game may move each way (and at once).
    pub game_bytes_per_second: f64,
    /// A game whose host is silent this long is closed.
    pub idle: Duration,
}

impl RelayConfig {
    /// A relay on `listen` with games on `ports` and the usual limits.
    pub fn new(listen: SocketAddr, ports: RangeInclusive<u16>) -> Self {
        Self {
            listen,
            ports,
            max_games: 64,
            games_per_host: 2,
            games_per_network: 8,
            game_bytes_per_second: 2.0 * 1024.0 * 1024.0,
            idle: Duration::from_secs(30),
        }
    }
}

/// A running relay; dropping it stops it.
pub struct Relay {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

struct Shared {
    config: RelayConfig,
    control: UdpSocket,
    /// Sends probes: another socket than the one hosts speak to, so a probe passes only
    /// a router that lets strangers in.
    prober: UdpSocket,
    cookie_key: [u8; 32],
    table: Mutex<Table>,
    counters: Counters,
    stop: AtomicBool,
    /// Attaches under way (their header being read, or their stream joined), per host.
    attaching: Mutex<HashMap<HostKey, usize>>,
}

#[derive(Default)]
struct Table {
    games: HashMap<u64, Game>,
    next_stream: u32,
    /// Streams joined now.
    joined: usize,
    asking: Option<Shares>,
    probing: Option<Shares>,
}

struct Game {
    session: Session,
    cookie: Cookie,
    host: SocketAddr,
    heard: Instant,
    port: u16,
    udp: Arc<UdpSocket>,
    tcp_wake: SocketAddr,
    closed: Arc<AtomicBool>,
    peers: LruMap<SocketAddr, Instant>,
    inbound: Shares,
    unsolicited: Bucket,
    to_host: Bucket,
    to_players: Bucket,
    waiting: HashMap<u32, Waiting>,
    /// Streams waiting or joined, per host.
    streams: HashMap<HostKey, usize>,
}

struct Waiting {
    stream: TcpStream,
    from: SocketAddr,
    since: Instant,
}

impl Game {
    fn streams(&self) -> usize {
        self.streams.values().sum()
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        // Wakes the accepting thread, which then sees the flag.
        let _ = TcpStream::connect_timeout(&self.tcp_wake, Duration::from_millis(200));
    }
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(|e| e.into_inner())
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The address to connect to when waking a listener bound to `bind`.
fn wake_address(bind: SocketAddr) -> SocketAddr {
    let ip = match bind.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bind.port())
}

impl Relay {
    /// Opens the control port and starts serving.
    pub fn start(config: RelayConfig) -> io::Result<Self> {
        let control = UdpSocket::bind(config.listen)?;
        let addr = control.local_addr()?;
        let listener = TcpListener::bind(addr)?;
        control.set_read_timeout(Some(HOUSEKEEPING))?;
        let prober = UdpSocket::bind(SocketAddr::new(addr.ip(), 0))?;
        let mut cookie_key = [0; 32];
        cookie_key[..16].copy_from_slice(&sightline_tokens::random_secret());
        cookie_key[16..].copy_from_slice(&sightline_tokens::random_secret());
        let shared = Arc::new(Shared {
            config,
            control,
            prober,
            cookie_key,
            table: Mutex::new(Table {
                asking: Some(Shares::per_host(ASKING)),
                probing: Some(Shares::per_host(PROBES)),
                ..Table::default()
            }),
            counters: Counters::default(),
            stop: AtomicBool::new(false),
            attaching: Mutex::new(HashMap::new()),
        });
        let control_side = shared.clone();
        std::thread::Builder::new()
            .name("relay-control".into())
            .spawn(move || control_side.serve_control())?;
        let attach_side = shared.clone();
        std::thread::Builder::new()
            .name("relay-attach".into())
            .spawn(move || attach_side.accept_attaches(listener))?;
        Ok(Self { shared, addr })
    }

    /// The control port's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it has counted.
    pub fn counters(&self) -> &Counters {
        &self.shared.counters
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect_timeout(&wake_address(self.addr), Duration::from_millis(200));
        let games: Vec<Game> = lock(&self.shared.table)
            .games
            .drain()
            .map(|(_, g)| g)
            .collect();
        for game in games {
            game.close();
        }
    }
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The cookie for `addr` in time slot `slot`.
    fn cookie(&self, addr: SocketAddr, slot: u64) -> Cookie {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.cookie_key)
            .expect("HMAC takes a key of any length");
        mac.update(&slot.to_be_bytes());
        mac.update(addr.to_string().as_bytes());
        let full = mac.finalize().into_bytes();
        let mut cookie = [0; 16];
        cookie.copy_from_slice(&full[..16]);
        cookie
    }

    fn cookie_now(&self, addr: SocketAddr) -> Cookie {
        self.cookie(addr, unix_seconds() / COOKIE_SLOT_SECONDS)
    }

    fn cookie_valid(&self, addr: SocketAddr, cookie: &Cookie) -> bool {
        let slot = unix_seconds() / COOKIE_SLOT_SECONDS;
        [slot, slot.saturating_sub(1)]
            .into_iter()
            .any(|s| constant_time_eq(&self.cookie(addr, s), cookie))
    }

    fn reply(&self, to: SocketAddr, message: &RelayMessage) {
        if self.control.send_to(&message.encode(), to).is_err() {
            self.counters.send_errors.add(1);
        }
    }

    /// Answers an unproven asker within its host's allowance.
    fn reply_to_stranger(&self, table: &mut Table, to: SocketAddr, message: &RelayMessage) {
        let allowed = table
            .asking
            .as_mut()
            .is_some_and(|s| s.allow(to.ip(), Instant::now()).is_ok());
        if allowed {
            self.reply(to, message);
        } else {
            self.counters.asking_refused.add(1);
        }
    }

    /// The control port's loop: hosts' messages, and every [`HOUSEKEEPING`] the games
    /// and streams whose time is up.
    fn serve_control(self: Arc<Self>) {
        let mut buffer = vec![0u8; MAX_DATAGRAM + 1];
        let mut swept = Instant::now();
        while !self.stopped() {
            match self.control.recv_from(&mut buffer) {
                Ok((len, from)) => self.from_host(from, &buffer[..len]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(_) => self.counters.receive_errors.add(1),
            }
            if swept.elapsed() >= HOUSEKEEPING {
                swept = Instant::now();
                self.sweep(swept);
            }
        }
    }

    fn sweep(&self, now: Instant) {
        let mut table = lock(&self.table);
        let idle = self.config.idle;
        let expired: Vec<u64> = table
            .games
            .iter()
            .filter(|(_, g)| now.saturating_duration_since(g.heard) > idle)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some(game) = table.games.remove(&id) {
                game.close();
                self.counters.games_expired.add(1);
            }
        }
        for game in table.games.values_mut() {
            let late: Vec<u32> = game
                .waiting
                .iter()
                .filter(|(_, w)| now.saturating_duration_since(w.since) > ATTACH_WAIT)
                .map(|(n, _)| *n)
                .collect();
            for n in late {
                if let Some(w) = game.waiting.remove(&n) {
                    release_stream(&mut game.streams, w.from);
                    self.counters.streams_unattached.add(1);
                }
            }
        }
        self.counters.games_open.set(table.games.len() as u64);
    }

    fn from_host(self: &Arc<Self>, from: SocketAddr, bytes: &[u8]) {
        let Ok(message) = HostMessage::decode(bytes) else {
            self.counters.malformed.add(1);
            return;
        };
        let now = Instant::now();
        let mut table = lock(&self.table);
        match message {
            HostMessage::Register { cookie } => self.register(&mut table, from, cookie, now),
            HostMessage::Probe {
                cookie,
                port,
                nonce,
            } => {
                if !self.cookie_valid(from, &cookie) {
                    let cookie = self.cookie_now(from);
                    self.reply_to_stranger(&mut table, from, &RelayMessage::Cookie { cookie });
                    return;
                }
                let allowed = table
                    .probing
                    .as_mut()
                    .is_some_and(|s| s.allow(from.ip(), now).is_ok());
                if !allowed {
                    self.counters.probes_refused.add(1);
                    return;
                }
                // Only ever the asker's own address, which its cookie proved.
                let target = SocketAddr::new(from.ip(), port);
                if self.prober.send_to(&probe_datagram(nonce), target).is_ok() {
                    self.counters.probes_sent.add(1);
                } else {
                    self.counters.send_errors.add(1);
                }
            }
            HostMessage::Keepalive { session } => {
                if let Some(game) = self.host_game(&mut table, from, &session, now) {
                    let id = game.session.id;
                    self.reply(from, &RelayMessage::Alive { id });
                }
            }
            HostMessage::Close { session } => {
                if self.host_game(&mut table, from, &session, now).is_some()
                    && let Some(game) = table.games.remove(&session.id)
                {
                    game.close();
                    self.counters.games_closed.add(1);
                    self.counters.games_open.set(table.games.len() as u64);
                }
            }
            HostMessage::Send {
                session,
                to,
                payload,
            } => {
                let Some(game) = self.host_game(&mut table, from, &session, now) else {
                    return;
                };
                let heard_lately = game
                    .peers
                    .peek(&to)
                    .is_some_and(|t| now.saturating_duration_since(*t) < PEER_MEMORY);
                if !heard_lately && !game.unsolicited.take(now) {
                    self.counters.unsolicited_dropped.add(1);
                    return;
                }
                if !game.to_players.take_n(payload.len() as f64, now) {
                    self.counters.over_budget.add(1);
                    return;
                }
                if game.udp.send_to(payload, to).is_ok() {
                    self.counters.to_players.add(1, payload.len());
                } else {
                    self.counters.send_errors.add(1);
                }
            }
        }
    }

    /// The game `session` names, if its secret is right; the host is heard, at `from`
    /// (a host whose router changed its port keeps its game). A wrong session is told
    /// so, within the asker's allowance.
    fn host_game<'t>(
        &self,
        table: &'t mut Table,
        from: SocketAddr,
        session: &Session,
        now: Instant,
    ) -> Option<&'t mut Game> {
        let known = table
            .games
            .get(&session.id)
            .is_some_and(|g| constant_time_eq(&g.session.secret, &session.secret));
        if !known {
            self.counters.unknown_session.add(1);
            let refused = RelayMessage::Refused {
                reason: Refusal::UnknownSession,
            };
            self.reply_to_stranger(table, from, &refused);
            return None;
        }
        let game = table.games.get_mut(&session.id)?;
        game.heard = now;
        if game.host != from {
            game.host = from;
            self.counters.hosts_moved.add(1);
        }
        Some(game)
    }

    fn register(
        self: &Arc<Self>,
        table: &mut Table,
        from: SocketAddr,
        cookie: Cookie,
        now: Instant,
    ) {
        if !self.cookie_valid(from, &cookie) {
            let cookie = self.cookie_now(from);
            self.counters.cookies_sent.add(1);
            self.reply_to_stranger(table, from, &RelayMessage::Cookie { cookie });
            return;
        }
        // The same registration again (its answer was lost): the same answer.
        if let Some(game) = table
            .games
            .values()
            .find(|g| g.host == from && g.cookie == cookie)
        {
            let allocated = RelayMessage::Allocated {
                session: game.session,
                port: game.port,
                observed: from,
            };
            self.reply(from, &allocated);
            return;
        }
        let host = HostKey::of(from.ip());
        let network = NetworkKey::of(from.ip());
        let from_host = table
            .games
            .values()
            .filter(|g| HostKey::of(g.host.ip()) == host)
            .count();
        let from_network = table
            .games
            .values()
            .filter(|g| NetworkKey::of(g.host.ip()) == network)
            .count();
        let refusal = if table.games.len() >= self.config.max_games {
            Some(Refusal::Full)
        } else if from_host >= self.config.games_per_host
            || from_network >= self.config.games_per_network
        {
            Some(Refusal::TooManyFromYou)
        } else {
            None
        };
        if let Some(reason) = refusal {
            self.counters.games_refused.add(1);
            self.reply(from, &RelayMessage::Refused { reason });
            return;
        }
        let used: Vec<u16> = table.games.values().map(|g| g.port).collect();
        let Some((udp, tcp, port)) = self.open_game_port(&used) else {
            self.counters.games_refused.add(1);
            self.reply(
                from,
                &RelayMessage::Refused {
                    reason: Refusal::NoPort,
                },
            );
            return;
        };
        let session = Session {
            id: loop {
                let id = u64::from_le_bytes(
                    sightline_tokens::random_secret()[..8]
                        .try_into()
                        .unwrap_or_default(),
                );
                if !table.games.contains_key(&id) {
                    break id;
                }
            },
            secret: sightline_tokens::random_secret(),
        };
        let udp = Arc::new(udp);
        let closed = Arc::new(AtomicBool::new(false));
        let bytes = self.config.game_bytes_per_second;
        let game = Game {
            session,
            cookie,
            host: from,
            heard: now,
            port,
            udp: udp.clone(),
            tcp_wake: wake_address(SocketAddr::new(self.config.listen.ip(), port)),
            closed: closed.clone(),
            peers: LruMap::new(MAX_PEERS),
            inbound: Shares::new(ShareRates {
                host: PLAYER_PACKETS,
                network: NETWORK_PACKETS,
                everyone: Rate::new(16_384.0, 16_384.0),
            }),
            unsolicited: Bucket::new(UNSOLICITED.burst, UNSOLICITED.per_second),
            to_host: Bucket::new(bytes, bytes),
            to_players: Bucket::new(bytes, bytes),
            waiting: HashMap::new(),
            streams: HashMap::new(),
        };
        let id = session.id;
        let (datagrams, streams) = (self.clone(), self.clone());
        let (udp_closed, tcp_closed) = (closed.clone(), closed);
        let spawned = std::thread::Builder::new()
            .name(format!("relay-game-{port}"))
            .spawn(move || datagrams.forward_datagrams(id, udp, udp_closed))
            .and_then(|_| {
                std::thread::Builder::new()
                    .name(format!("relay-streams-{port}"))
                    .spawn(move || streams.accept_streams(id, tcp, tcp_closed))
            });
        if spawned.is_err() {
            game.close();
            self.counters.games_refused.add(1);
            self.reply(
                from,
                &RelayMessage::Refused {
                    reason: Refusal::Full,
                },
            );
            return;
        }
        table.games.insert(id, game);
        self.counters.games_allocated.add(1);
        self.counters.games_open.set(table.games.len() as u64);
        self.reply(
            from,
            &RelayMessage::Allocated {
                session,
                port,
                observed: from,
            },
        );
    }

    /// A port of the range free for both UDP and TCP.
    fn open_game_port(&self, used: &[u16]) -> Option<(UdpSocket, TcpListener, u16)> {
        let ip = self.config.listen.ip();
        for port in self.config.ports.clone() {
            if used.contains(&port) {
                continue;
            }
            let Ok(udp) = UdpSocket::bind((ip, port)) else {
                continue;
            };
            let Ok(tcp) = TcpListener::bind((ip, port)) else {
                continue;
            };
            if udp
                .set_read_timeout(Some(Duration::from_millis(500)))
                .is_ok()
            {
                return Some((udp, tcp, port));
            }
        }
        None
    }

    /// A game's UDP port: players' datagrams, within their shares and the game's
    /// budget, go to the host inside `Deliver`.
    fn forward_datagrams(&self, id: u64, udp: Arc<UdpSocket>, closed: Arc<AtomicBool>) {
        let mut buffer = vec![0u8; MAX_PAYLOAD + 1];
        while !closed.load(Ordering::Relaxed) && !self.stopped() {
            let (len, from) = match udp.recv_from(&mut buffer) {
                Ok(got) => got,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    continue;
                }
                Err(_) => {
                    self.counters.receive_errors.add(1);
                    continue;
                }
            };
            if len == 0 || len > MAX_PAYLOAD {
                self.counters.malformed.add(1);
                continue;
            }
            let now = Instant::now();
            let host = {
                let mut table = lock(&self.table);
                let Some(game) = table.games.get_mut(&id) else {
                    return;
                };
                if game.inbound.allow(from.ip(), now).is_err() {
                    self.counters.flood_dropped.add(1);
                    continue;
                }
                if !game.to_host.take_n(len as f64, now) {
                    self.counters.over_budget.add(1);
                    continue;
                }
                *game.peers.get_or_insert_with(from, || now) = now;
                game.host
            };
            let deliver = RelayMessage::Deliver {
                id,
                from,
                payload: &buffer[..len],
            };
            if self.control.send_to(&deliver.encode(), host).is_ok() {
                self.counters.to_hosts.add(1, len);
            } else {
                self.counters.send_errors.add(1);
            }
        }
    }

    /// A game's TCP port: each stream, within the game's and its host's counts, waits for
    /// the game's host to attach, told by `Open`.
    fn accept_streams(&self, id: u64, listener: TcpListener, closed: Arc<AtomicBool>) {
        loop {
            let accepted = listener.accept();
            if closed.load(Ordering::Relaxed) || self.stopped() {
                return;
            }
            let Ok((stream, from)) = accepted else {
                continue;
            };
            let now = Instant::now();
            let mut table = lock(&self.table);
            let joined = table.joined;
            table.next_stream = table.next_stream.wrapping_add(1);
            let number = table.next_stream;
            let Some(game) = table.games.get_mut(&id) else {
                return;
            };
            let key = HostKey::of(from.ip());
            if game.streams() >= STREAMS_PER_GAME
                || game.streams.get(&key).copied().unwrap_or(0) >= STREAMS_PER_HOST
                || joined >= MAX_STREAMS
            {
                self.counters.streams_refused.add(1);
                continue; // dropping it closes it
            }
            *game.streams.entry(key).or_default() += 1;
            game.waiting.insert(
                number,
                Waiting {
                    stream,
                    from,
                    since: now,
                },
            );
            let host = game.host;
            self.counters.streams_opened.add(1);
            self.reply(
                host,
                &RelayMessage::Open {
                    id,
                    stream: number,
                    from,
                },
            );
        }
    }

    /// The control port's TCP: hosts attaching to their games' streams, each header read
    /// on a thread of its own; [`MAX_ATTACHING`] at once, [`ATTACHING_PER_HOST`] from one
    /// host, so silent connections from a few hosts cannot keep the others' out.
    fn accept_attaches(self: Arc<Self>, listener: TcpListener) {
        loop {
            let accepted = listener.accept();
            if self.stopped() {
                return;
            }
            let Ok((stream, from)) = accepted else {
                continue;
            };
            let host = HostKey::of(from.ip());
            {
                let mut attaching = self.attaching.lock().unwrap_or_else(|e| e.into_inner());
                let total: usize = attaching.values().sum();
                let here = attaching.get(&host).copied().unwrap_or(0);
                if total >= MAX_ATTACHING || here >= ATTACHING_PER_HOST {
                    self.counters.streams_refused.add(1);
                    continue;
                }
                *attaching.entry(host).or_default() += 1;
            }
            let shared = self.clone();
            let spawned = std::thread::Builder::new()
                .name("relay-attach-stream".into())
                .spawn(move || {
                    shared.attach(stream);
                    shared.attached(host);
                });
            if spawned.is_err() {
                self.attached(host);
            }
        }
    }

    /// A host's attach is done (its header read, and its stream joined or refused).
    fn attached(&self, host: HostKey) {
        let mut attaching = self.attaching.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = attaching.get_mut(&host) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                attaching.remove(&host);
            }
        }
    }

    /// Reads a host's attach header and joins its stream to the player's.
    fn attach(&self, mut host_stream: TcpStream) {
        let mut header = [0u8; ATTACH_BYTES];
        let read = host_stream
            .set_read_timeout(Some(Duration::from_secs(3)))
            .and_then(|()| host_stream.read_exact(&mut header));
        let Ok((session, number)) = read
            .map_err(|_| ())
            .and_then(|()| read_attach(&header).map_err(|_| ()))
        else {
            self.counters.malformed.add(1);
            return;
        };
        let (player_stream, from) = {
            let mut table = lock(&self.table);
            let Some(game) = table
                .games
                .get_mut(&session.id)
                .filter(|g| constant_time_eq(&g.session.secret, &session.secret))
            else {
                self.counters.unknown_session.add(1);
                return;
            };
            let Some(waiting) = game.waiting.remove(&number) else {
                self.counters.unknown_session.add(1);
                return;
            };
            table.joined += 1;
            (waiting.stream, waiting.from)
        };
        self.counters.streams_joined.add(1);
        splice(player_stream, host_stream);
        let mut table = lock(&self.table);
        table.joined = table.joined.saturating_sub(1);
        if let Some(game) = table.games.get_mut(&session.id) {
            release_stream(&mut game.streams, from);
        }
    }
}

fn release_stream(streams: &mut HashMap<HostKey, usize>, from: SocketAddr) {
    let key = HostKey::of(from.ip());
    if let Some(n) = streams.get_mut(&key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            streams.remove(&key);
        }
    }
}

/// Copies both ways until both sides are done, [`STREAM_BYTES`] at most each way and
/// [`STREAM_LIFETIME`] at most in all.
fn splice(a: TcpStream, b: TcpStream) {
    let deadline = Instant::now() + STREAM_LIFETIME;
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let back = std::thread::Builder::new()
        .name("relay-splice".into())
        .spawn(move || copy_until(b2, a2, deadline));
    copy_until(a, b, deadline);
    if let Ok(back) = back {
        let _ = back.join();
    }
}

fn copy_until(mut from: TcpStream, mut to: TcpStream, deadline: Instant) {
    let mut buffer = [0u8; 4096];
    let mut carried = 0u64;
    while let Some(left) = deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
    {
        if from.set_read_timeout(Some(left)).is_err() || to.set_write_timeout(Some(left)).is_err() {
            break;
        }
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        carried += n as u64;
        if carried > STREAM_BYTES || to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

fn constant_time_eq(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{attach_header, probe_nonce};

    const WAIT: Duration = Duration::from_secs(3);

    fn relay(config: impl FnOnce(&mut RelayConfig)) -> Relay {
        let mut c = RelayConfig::new("127.0.0.1:0".parse().unwrap(), 41000..=41999);
        config(&mut c);
        Relay::start(c).expect("a relay")
    }

    fn socket() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        s
    }

    fn receive(s: &UdpSocket) -> (Vec<u8>, SocketAddr) {
        let mut buffer = [0u8; 2048];
        let (len, from) = s.recv_from(&mut buffer).expect("a datagram in time");
        (buffer[..len].to_vec(), from)
    }

    fn ask(host: &UdpSocket, relay: SocketAddr, message: HostMessage) -> Vec<u8> {
        host.send_to(&message.encode(), relay).unwrap();
        receive(host).0
    }

    /// Registers `host`: the cookie, then the game.
    fn register(host: &UdpSocket, relay: SocketAddr) -> Result<(Session, u16, Cookie), Refusal> {
        let Ok(RelayMessage::Cookie { cookie }) =
            RelayMessage::decode(&ask(host, relay, HostMessage::Register { cookie: [0; 16] }))
        else {
            panic!("a cookie first");
        };
        let answer = ask(host, relay, HostMessage::Register { cookie });
        match RelayMessage::decode(&answer) {
            Ok(RelayMessage::Allocated {
                session,
                port,
                observed,
            }) => {
                assert_eq!(observed, host.local_addr().unwrap());
                Ok((session, port, cookie))
            }
            Ok(RelayMessage::Refused { reason }) => Err(reason),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_game_is_reached_through_the_relay_by_datagrams_and_streams_both_ways() {
        let r = relay(|_| {});
        let host = socket();
        let (session, port, cookie) = register(&host, r.addr()).expect("allocated");
        let game = SocketAddr::new(r.addr().ip(), port);

        // A player's datagram reaches the host, named with the player's address.
        let player = socket();
        player.send_to(b"connect me", game).unwrap();
        let (bytes, from) = receive(&host);
        assert_eq!(from, r.addr());
        let me = player.local_addr().unwrap();
        assert_eq!(
            RelayMessage::decode(&bytes),
            Ok(RelayMessage::Deliver {
                id: session.id,
                from: me,
                payload: b"connect me"
            })
        );
        // The host's answer reaches the player from the game's port.
        let send = HostMessage::Send {
            session,
            to: me,
            payload: b"welcome",
        };
        host.send_to(&send.encode(), r.addr()).unwrap();
        assert_eq!(receive(&player), (b"welcome".to_vec(), game));

        // A stream to the game's port is offered to the host, which attaches to it.
        let mut stream = TcpStream::connect(game).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        stream.write_all(b"token please").unwrap();
        let Ok(RelayMessage::Open {
            id,
            stream: n,
            from,
        }) = RelayMessage::decode(&receive(&host).0)
        else {
            panic!("an Open");
        };
        assert_eq!((id, from), (session.id, stream.local_addr().unwrap()));
        let mut attached = TcpStream::connect(r.addr()).unwrap();
        attached.set_read_timeout(Some(WAIT)).unwrap();
        attached.write_all(&attach_header(&session, n)).unwrap();
        let mut got = [0u8; 12];
        attached.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"token please");
        attached.write_all(b"sealed token").unwrap();
        let mut back = [0u8; 12];
        stream.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"sealed token");

        // The host's router gives it a new port: its keepalive from there keeps the game,
        // and players' datagrams follow it.
        let moved = socket();
        let alive = ask(&moved, r.addr(), HostMessage::Keepalive { session });
        assert_eq!(
            RelayMessage::decode(&alive),
            Ok(RelayMessage::Alive { id: session.id })
        );
        player.send_to(b"still here", game).unwrap();
        assert!(matches!(
            RelayMessage::decode(&receive(&moved).0),
            Ok(RelayMessage::Deliver {
                payload: b"still here",
                ..
            })
        ));
        assert_eq!(r.counters().hosts_moved.get(), 1);

        // A wrong secret is refused; the probe comes from another port than the relay's.
        let forged = Session {
            secret: [0; 16],
            ..session
        };
        let refused = ask(&moved, r.addr(), HostMessage::Keepalive { session: forged });
        assert_eq!(
            RelayMessage::decode(&refused),
            Ok(RelayMessage::Refused {
                reason: Refusal::UnknownSession
            })
        );
        let probe = HostMessage::Probe {
            cookie,
            port: host.local_addr().unwrap().port(),
            nonce: 0xabc,
        };
        host.send_to(&probe.encode(), r.addr()).unwrap();
        let (bytes, from) = receive(&host);
        assert_eq!(probe_nonce(&bytes), Some(0xabc));
        assert_ne!(from, r.addr());
        assert_ne!(from, game);
    }

    #[test]
    fn silent_attaches_from_one_host_hold_no_more_than_its_share() {
        let r = relay(|_| {});
        let silent: Vec<TcpStream> = (0..ATTACHING_PER_HOST)
            .map(|_| TcpStream::connect(r.addr()).unwrap())
            .collect();
        let mut one_more = TcpStream::connect(r.addr()).unwrap();
        one_more.set_read_timeout(Some(WAIT)).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(one_more.read(&mut byte).ok(), Some(0), "closed at once");
        assert_eq!(r.counters().streams_refused.get(), 1);
        // A silent one gives its place back when its time to speak is up.
        drop(silent);
        std::thread::sleep(Duration::from_millis(300));
        let mut again = TcpStream::connect(r.addr()).unwrap();
        again.write_all(&[0u8; ATTACH_BYTES]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(r.counters().streams_refused.get(), 1);
        // Read and refused; the silent ones, closed before a header, counted alike.
        assert_eq!(r.counters().malformed.get(), ATTACHING_PER_HOST as u64 + 1);
    }

    #[test]
    fn games_are_bounded_per_host_and_in_all_and_a_silent_host_s_game_closes() {
        let r = relay(|c| {
            c.games_per_host = 1;
            c.max_games = 2;
            c.idle = Duration::from_millis(600);
        });
        let host = socket();
        let (session, port, _) = register(&host, r.addr()).expect("allocated");
        assert_eq!(register(&socket(), r.addr()), Err(Refusal::TooManyFromYou));
        // Other hosts (loopback has a whole /8 of them): one more fits, then none.
        let from = |ip: [u8; 4]| {
            let s = UdpSocket::bind(SocketAddr::from((ip, 0))).unwrap();
            s.set_read_timeout(Some(WAIT)).unwrap();
            s
        };
        let second = from([127, 0, 0, 2]);
        assert!(register(&second, r.addr()).is_ok());
        assert_eq!(
            register(&from([127, 0, 0, 3]), r.addr()),
            Err(Refusal::Full)
        );
        assert_eq!(r.counters().games_refused.get(), 2);
        // Silent past the idle time: both close, and a port no longer forwards.
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(r.counters().games_expired.get(), 2);
        assert_eq!(r.counters().games_open.get(), 0);
        let player = socket();
        player
            .send_to(b"anyone?", SocketAddr::new(r.addr().ip(), port))
            .unwrap();
        host.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buffer = [0u8; 64];
        assert!(host.recv_from(&mut buffer).is_err(), "nothing forwarded");
        let gone = ask(&host, r.addr(), HostMessage::Keepalive { session });
        assert_eq!(
            RelayMessage::decode(&gone),
            Ok(RelayMessage::Refused {
                reason: Refusal::UnknownSession
            })
        );
    }

    #[test]
    fn a_flooding_player_and_a_host_aiming_at_strangers_are_held_to_their_rates() {
        let r = relay(|_| {});
        let host = socket();
        let (session, port, _) = register(&host, r.addr()).expect("allocated");
        let game = SocketAddr::new(r.addr().ip(), port);
        let flooder = socket();
        let sent = 3 * PLAYER_PACKETS.burst as usize;
        let started = Instant::now();
        for _ in 0..sent {
            let _ = flooder.send_to(&[1u8; 32], game);
        }
        let elapsed = started.elapsed().as_secs_f64();
        let allowed = PLAYER_PACKETS.burst + PLAYER_PACKETS.per_second * (elapsed + 0.5);
        std::thread::sleep(Duration::from_millis(300));
        let forwarded = r.counters().to_hosts.datagrams.get();
        let dropped = r.counters().flood_dropped.get();
        assert!(forwarded as f64 <= allowed, "{forwarded} forwarded");
        assert!(dropped > 0, "the rest are counted as dropped");

        // To addresses that never spoke to the game: a few announcements, no stream.
        let stranger = socket();
        for _ in 0..50 {
            let send = HostMessage::Send {
                session,
                to: stranger.local_addr().unwrap(),
                payload: b"unasked",
            };
            host.send_to(&send.encode(), r.addr()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        let reached = r.counters().to_players.datagrams.get();
        assert!(
            reached <= UNSOLICITED.burst as u64 + 1,
            "{reached} reached a stranger"
        );
        assert!(r.counters().unsolicited_dropped.get() >= 40);

        // Junk on the control port is counted, never answered.
        host.send_to(b"\xFF\xFF\xFF\xFFgetstatus", r.addr())
            .unwrap();
        host.send_to(b"SLR\x01\x03short", r.addr()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(r.counters().malformed.get(), 2);
    }
}
