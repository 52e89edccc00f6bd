//! Bodies for server queries ([`sightline_query`]): the connectionless datagrams the game
//! server reads (A2S requests from anyone, `getinfo` from its masters) and the replies
//! the browser reads back from a server (A2S responses, split or whole) or a master (the
//! list protocol).
//!
//! An input is several datagrams, each after its length as two little-endian bytes (as
//! the transport bodies take their payloads), so one input can build up the state a later
//! datagram meets: a challenge to echo, a heartbeat's allowance of answers, a split
//! reply's first parts.

use crate::transport::payloads;
use sightline_protocol::PROTOCOL_VERSION;
use sightline_query::master_protocol::{
    self, GAME_TAG, MASTER_PROTOCOL, MAX_LIST_PACKET, MasterPacket, encode_server_list,
};
use sightline_query::{
    Announcer, Answer, CHALLENGE_EPOCH, DecodeError, DropReason, HEARTBEAT_INTERVAL, MAX_MESSAGE,
    MAX_PACKET, MAX_SPLIT_PACKETS, PlayerInfo, QuerySource, Reassembly, Request, Responder,
    Response, ServerInfo, decode_request, decode_response, encode_challenge, encode_info,
    encode_players, encode_request, encode_rules, is_connectionless, is_split,
};
use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A server's state as plain data: a few players and rules, every string within the caps
/// the encoders cut to, so replies decode to exactly this. Counts how often it was asked.
pub struct FixedServer {
    /// The A2S_INFO contents.
    pub info: ServerInfo,
    /// The players.
    pub players: Vec<PlayerInfo>,
    /// The rules.
    pub rules: Vec<(String, String)>,
    /// How often the responder asked for any of them.
    pub asked: Cell<u32>,
}

impl FixedServer {
    /// Three players (a bot among them) on depot, and the rules the game server lists.
    pub fn new() -> Self {
        Self {
            info: ServerInfo {
                name: "Sightline fuzz «server»".into(),
                map: "depot".into(),
                players: 3,
                max_players: 16,
                bots: 1,
                password: false,
                version: "0.1.0".into(),
                keywords: "tdm".into(),
                port: 27015,
                ..ServerInfo::default()
            },
            players: vec![
                PlayerInfo {
                    name: "alice".into(),
                    score: 12,
                    duration: 301.5,
                },
                PlayerInfo {
                    name: "Zoë".into(),
                    score: -1,
                    duration: 0.25,
                },
                PlayerInfo {
                    name: "bot Ada".into(),
                    score: 0,
                    duration: 3600.0,
                },
            ],
            rules: [
                ("mode", "tdm"),
                ("fraglimit", "30"),
                ("timelimit", "10"),
                ("sv_password", "0"),
            ]
            .iter()
            .map(|(name, value)| ((*name).into(), (*value).into()))
            .collect(),
            asked: Cell::new(0),
        }
    }

    fn ask(&self) {
        self.asked.set(self.asked.get() + 1);
    }
}

impl Default for FixedServer {
    fn default() -> Self {
        Self::new()
    }
}

impl QuerySource for FixedServer {
    fn info(&self) -> ServerInfo {
        self.ask();
        self.info.clone()
    }
    fn players(&self) -> Vec<PlayerInfo> {
        self.ask();
        self.players.clone()
    }
    fn rules(&self) -> Vec<(String, String)> {
        self.ask();
        self.rules.clone()
    }
}

/// The master the fuzzed server announces to.
pub const MASTER: &str = "192.0.2.50:27950";

/// Where a datagram comes from, by the low three bits of its control byte: a client, the
/// same client as an IPv4-mapped IPv6 address (one address to the challenges), the same
/// host from another port, an IPv6 client, the master, the master IPv4-mapped, the
/// master's host from another port, and a stranger on the master's port.
pub const SOURCES: [&str; 8] = [
    "198.51.100.7:40000",
    "[::ffff:198.51.100.7]:40000",
    "198.51.100.7:40001",
    "[2001:db8::7]:27005",
    MASTER,
    "[::ffff:192.0.2.50]:27950",
    "192.0.2.50:27951",
    "203.0.113.9:27950",
];

/// Control bit: replace the request's challenge with the last one this address was sent.
pub const ECHO: u8 = 0x08;

/// Control bits 4 to 7: seconds (times five) the clock moves on before the datagram.
pub const fn after_seconds(seconds: u8) -> u8 {
    (seconds / 5) << 4
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("a socket address")
}

fn canonical(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(a.ip().to_canonical(), a.port())
}

/// The challenge slot of a request, as the client filled it.
fn slot(request: Request) -> Option<u32> {
    match request {
        Request::Info { challenge } => challenge,
        Request::Players { challenge } | Request::Rules { challenge } => Some(challenge),
    }
}

/// `bytes` with its challenge slot set to `challenge`, when it is a request with one.
fn echo(bytes: &mut [u8], challenge: u32) {
    let Ok(request) = decode_request(bytes) else {
        return;
    };
    let at = match request {
        Request::Info { challenge: Some(_) } => 25,
        Request::Players { .. } | Request::Rules { .. } => 5,
        Request::Info { challenge: None } => return,
    };
    bytes[at..at + 4].copy_from_slice(&challenge.to_le_bytes());
    assert_eq!(
        decode_request(bytes).map(slot),
        Ok(Some(challenge)),
        "the challenge slot is not where the format puts it"
    );
}

/// The packets of a full answer, as a browser reads them: one packet, or split packets
/// that reassemble in order. Each is at most [`MAX_PACKET`] bytes.
fn reassemble(packets: &[Vec<u8>]) -> Response {
    for p in packets {
        assert!(p.len() <= MAX_PACKET, "a reply of {} bytes", p.len());
    }
    let message = match packets {
        [one] if !is_split(one) => one.clone(),
        [] => panic!("an answer with no packets"),
        [parts @ .., last] => {
            let mut split = Reassembly::new();
            for p in parts {
                assert_eq!(split.push(p), Ok(None), "a split answer ended early");
            }
            split
                .push(last)
                .expect("split answers reassemble")
                .expect("the last part completes the answer")
        }
    };
    decode_response(&message).expect("answers decode")
}

/// The game server's connectionless datagrams, routed as its query system routes them:
/// each to the [`Announcer`] first (it answers only its masters' `getinfo`), otherwise,
/// when it is connectionless, to the [`Responder`]; heartbeats go out as they fall due.
/// The control byte before each datagram picks its source ([`SOURCES`]), whether to
/// echo the challenge that source was last sent, or for a `getinfo` the current
/// heartbeat's nonce ([`ECHO`]), and how far the clock moves ([`after_seconds`]).
///
/// Checked: [`decode_request`] agrees with the responder's drops, and a request it
/// decodes re-encodes to a prefix of its bytes (trailing padding is ignored). The
/// responder's rule, as its own tests state it: no reply is larger than its request
/// unless the request echoed a challenge issued to its (canonical) address less than two
/// epochs ago, and every challenge under one epoch old is accepted; the server's state is
/// read only for such full answers, which reassemble to exactly that state. The
/// announcer answers only a `getinfo` from its master carrying the current heartbeat's
/// nonce, echoing its challenge, at most twice a heartbeat, and always while the
/// heartbeat's allowance lasts.
pub fn server_query(data: &[u8]) {
    let server = FixedServer::new();
    let master = addr(MASTER);
    let mut responder = Responder::new();
    let mut announcer = Announcer::new(vec![master], HEARTBEAT_INTERVAL);
    let mut now = Instant::now();
    // When each (canonical address, challenge) was last sent, and each address's last.
    let mut issued: HashMap<(SocketAddr, u32), Instant> = HashMap::new();
    let mut last: HashMap<SocketAddr, u32> = HashMap::new();
    let mut answered_since_heartbeat = 0u32;
    let beats = announcer.due(now);
    assert_eq!(beats.len(), 1, "the first heartbeat goes at once");
    let mut nonce = heartbeat_nonce(&beats[0].1);
    for payload in payloads(data) {
        let Some((&control, bytes)) = payload.split_first() else {
            continue;
        };
        now += Duration::from_secs(5 * u64::from(control >> 4));
        let from = addr(SOURCES[usize::from(control & 7)]);
        let canon = canonical(from);
        let mut request = bytes.to_vec();
        if control & ECHO != 0 {
            // A getinfo echoes the current heartbeat's nonce; an A2S request the
            // challenge its source was last sent.
            if let Ok(MasterPacket::GetInfo { challenge, .. }) = master_protocol::decode(&request) {
                request = master_protocol::encode(&MasterPacket::GetInfo { challenge, nonce });
            } else if let Some(&c) = last.get(&canon) {
                echo(&mut request, c);
            }
        }

        let master_packet = master_protocol::decode(&request);
        match announcer.answer(from, &request, PROTOCOL_VERSION) {
            Some(reply) => {
                assert_eq!(canon, master, "a getinfo answered for a stranger");
                let Ok(MasterPacket::GetInfo {
                    challenge,
                    nonce: echoed,
                }) = master_packet
                else {
                    panic!("{master_packet:?} answered as a getinfo");
                };
                assert_eq!(echoed, nonce, "a getinfo without the heartbeat's nonce");
                assert_eq!(
                    master_protocol::decode(&reply),
                    Ok(MasterPacket::InfoResponse {
                        challenge,
                        protocol: PROTOCOL_VERSION,
                        game: GAME_TAG.into(),
                    })
                );
                answered_since_heartbeat += 1;
                assert!(answered_since_heartbeat <= 2, "more than two per heartbeat");
            }
            None => {
                assert!(
                    !(canon == master
                        && matches!(master_packet, Ok(MasterPacket::GetInfo { nonce: n, .. }) if n == nonce)
                        && answered_since_heartbeat < 2),
                    "the master's getinfo went unanswered"
                );
                if is_connectionless(&request) {
                    let ask = Ask {
                        server: &server,
                        issued: &mut issued,
                        last: &mut last,
                    };
                    ask.check(&mut responder, from, &request, now);
                } else {
                    assert_eq!(
                        decode_request(&request),
                        Err(DecodeError::NotConnectionless)
                    );
                }
            }
        }

        for (to, heartbeat) in announcer.due(now) {
            assert_eq!(to, master);
            nonce = heartbeat_nonce(&heartbeat);
            answered_since_heartbeat = 0;
        }
    }
}

/// The nonce of one of the announcer's heartbeats, which must be well-formed.
fn heartbeat_nonce(heartbeat: &[u8]) -> u32 {
    match master_protocol::decode(heartbeat) {
        Ok(MasterPacket::Heartbeat {
            game,
            protocol: MASTER_PROTOCOL,
            nonce,
        }) if game == GAME_TAG => nonce,
        other => panic!("a heartbeat went out as {other:?}"),
    }
}

/// What [`server_query`] knows of the responder's challenges.
struct Ask<'a> {
    server: &'a FixedServer,
    issued: &'a mut HashMap<(SocketAddr, u32), Instant>,
    last: &'a mut HashMap<SocketAddr, u32>,
}

impl Ask<'_> {
    fn check(self, responder: &mut Responder, from: SocketAddr, request: &[u8], now: Instant) {
        let canon = canonical(from);
        let decoded = decode_request(request);
        let asked = self.server.asked.get();
        let answer = responder.answer(from, request, now, self.server);
        let parsed = match (decoded, answer.clone()) {
            (Err(DecodeError::UnexpectedType(_)), a) => {
                assert_eq!(a, Answer::Dropped(DropReason::UnknownType));
                None
            }
            (Err(_), a) => {
                assert_eq!(a, Answer::Dropped(DropReason::Malformed));
                None
            }
            (Ok(parsed), Answer::Dropped(reason)) => {
                assert_eq!(reason, DropReason::RateLimited, "{parsed:?} dropped");
                None
            }
            (Ok(parsed), Answer::Replies(replies)) => Some((parsed, replies)),
        };
        let Some((parsed, replies)) = parsed else {
            assert_eq!(
                self.server.asked.get(),
                asked,
                "the state read for no answer"
            );
            return;
        };
        assert!(
            request.starts_with(&encode_request(parsed)),
            "{parsed:?} re-encodes to other bytes"
        );
        let sent: usize = replies.iter().map(Vec::len).sum();
        // How long ago the echoed challenge was issued to this address, if it was.
        let age = slot(parsed)
            .and_then(|c| self.issued.get(&(canon, c)))
            .map(|&at| now.saturating_duration_since(at));
        if let [one] = replies.as_slice()
            && let Ok(Response::Challenge(c)) = decode_response(one)
        {
            assert!(sent <= request.len(), "{sent} bytes for {request:?}");
            assert!(
                c != 0 && c != u32::MAX,
                "challenge {c} means none to clients"
            );
            assert_eq!(
                self.server.asked.get(),
                asked,
                "the state read for a challenge"
            );
            assert!(
                age.is_none_or(|age| age >= CHALLENGE_EPOCH),
                "a challenge {age:?} old was refused"
            );
            self.issued.insert((canon, c), now);
            self.last.insert(canon, c);
            return;
        }
        // A full answer: only for a challenge this address was sent lately.
        assert!(
            age.is_some_and(|age| age < 2 * CHALLENGE_EPOCH),
            "{sent} bytes answered {parsed:?} without a valid challenge (sent {age:?} ago)"
        );
        assert_eq!(self.server.asked.get(), asked + 1, "the state read once");
        let server = self.server;
        match (parsed, reassemble(&replies)) {
            (Request::Info { .. }, Response::Info(info)) => assert_eq!(info, server.info),
            (Request::Players { .. }, Response::Players(p)) => assert_eq!(p, server.players),
            (Request::Rules { .. }, Response::Rules(r)) => assert_eq!(r, server.rules),
            (request, response) => panic!("{response:?} answered {request:?}"),
        }
    }
}

/// The longest string every A2S encoder sends whole (their smallest cap, for names).
const WHOLE_STRING: usize = 64;
/// The largest player or rule entry an encoder writes: two 128-byte strings and their
/// NULs. Encoders leave entries out only within this of [`MAX_MESSAGE`].
const LARGEST_ENTRY: usize = 2 * 129;

/// `cut` is `whole` cut on a character boundary, and all of it when `whole` fits
/// [`WHOLE_STRING`].
fn is_cut_from(cut: &str, whole: &str) -> bool {
    whole.starts_with(cut) && (whole.len() > WHOLE_STRING || cut == whole)
}

/// Entries `back` are the first of `whole`, each cut by `same`; fewer only when
/// `encoded` neared [`MAX_MESSAGE`].
fn entries_cut<T>(back: &[T], whole: &[T], encoded: &[u8], same: impl Fn(&T, &T) -> bool) {
    assert!(back.len() <= whole.len(), "entries appeared");
    assert!(
        back.len() == whole.len() || encoded.len() + LARGEST_ENTRY > MAX_MESSAGE,
        "{} of {} entries kept in {} bytes",
        back.len(),
        whole.len(),
        encoded.len()
    );
    for (b, w) in back.iter().zip(whole) {
        assert!(same(b, w), "an entry changed beyond cutting");
    }
}

/// One A2S response as the browser decodes it: one that decodes re-encodes (strings cut
/// to the encoders' caps, entries left out past [`MAX_MESSAGE`]) to bytes that decode
/// to it again, no more cut than that, and a second round changes nothing.
fn check_response(message: &[u8]) {
    let Ok(decoded) = decode_response(message) else {
        return;
    };
    let encode = |r: &Response| match r {
        Response::Challenge(c) => encode_challenge(*c),
        Response::Info(info) => encode_info(info),
        Response::Players(players) => encode_players(players),
        Response::Rules(rules) => encode_rules(rules),
    };
    let again = encode(&decoded);
    assert!(again.len() <= MAX_MESSAGE);
    let back = decode_response(&again)
        .unwrap_or_else(|e| panic!("{decoded:?} re-encodes to bytes that do not decode: {e}"));
    match (&back, &decoded) {
        (Response::Challenge(b), Response::Challenge(d)) => {
            assert_eq!(b, d);
            assert!(
                message.starts_with(&again),
                "a challenge re-encodes to other bytes"
            );
        }
        (Response::Info(b), Response::Info(d)) => {
            for (cut, whole) in [
                (&b.name, &d.name),
                (&b.map, &d.map),
                (&b.folder, &d.folder),
                (&b.game, &d.game),
                (&b.version, &d.version),
                (&b.keywords, &d.keywords),
            ] {
                assert!(is_cut_from(cut, whole), "{whole:?} came back as {cut:?}");
            }
            let numbers = |i: &ServerInfo| (i.players, i.max_players, i.bots, i.password, i.port);
            assert_eq!(numbers(b), numbers(d), "a number changed");
        }
        (Response::Players(b), Response::Players(d)) => {
            for p in d {
                assert!(p.duration.is_finite(), "a duration of {}", p.duration);
            }
            entries_cut(b, d, &again, |b, w| {
                is_cut_from(&b.name, &w.name) && b.score == w.score && b.duration == w.duration
            });
        }
        (Response::Rules(b), Response::Rules(d)) => {
            entries_cut(b, d, &again, |b, w| {
                is_cut_from(&b.0, &w.0) && is_cut_from(&b.1, &w.1)
            });
        }
        (b, d) => panic!("{d:?} came back as {b:?}"),
    }
    assert_eq!(
        encode(&back),
        again,
        "re-encoding a cut response cut it again"
    );
}

/// One master-protocol packet as the browser (or the master) decodes it: one that
/// decodes re-encodes to no more bytes than it came in, which decode to it again; a
/// server list holds only joinable, canonical addresses and survives the master's own
/// packing into [`MAX_LIST_PACKET`]-byte packets.
fn check_master(packet: &[u8]) {
    let Ok(decoded) = master_protocol::decode(packet) else {
        return;
    };
    let again = master_protocol::encode(&decoded);
    assert!(
        again.len() <= packet.len(),
        "{decoded:?} re-encodes longer than it came"
    );
    assert_eq!(master_protocol::decode(&again).as_ref(), Ok(&decoded));
    let MasterPacket::Servers { servers, .. } = &decoded else {
        return;
    };
    for s in servers {
        assert!(s.port() != 0 && !s.ip().is_unspecified(), "{s} listed");
        assert_eq!(*s, canonical(*s), "{s} listed in a mapped form");
    }
    let packed = encode_server_list(servers);
    let mut listed = Vec::new();
    for (i, p) in packed.iter().enumerate() {
        assert!(p.len() <= MAX_LIST_PACKET);
        match master_protocol::decode(p) {
            Ok(MasterPacket::Servers { servers, end }) => {
                assert_eq!(
                    end,
                    i + 1 == packed.len(),
                    "the list ends on its last packet"
                );
                listed.extend(servers);
            }
            other => panic!("a list packet decodes as {other:?}"),
        }
    }
    assert_eq!(&listed, servers);
}

/// What [`Reassembly`] should do, after the split format in `sightline_query`'s
/// documentation: a header of `FE FF FF FF`, an id (bit 31, compression, refused), the
/// total (1 to [`MAX_SPLIT_PACKETS`]), the number (below the total), a size, and 1 to
/// [`MAX_PACKET`] payload bytes. Packets of another message than the one started are
/// ignored, as are duplicate parts; the first of each part counts; a message is whole
/// when every part is in and must begin `FF FF FF FF`.
#[derive(Default)]
struct SplitModel {
    current: Option<(u32, Vec<Option<Vec<u8>>>)>,
}

impl SplitModel {
    /// The message `packet` completes (`Ok(None)` while parts are missing), or `Err(())`
    /// where the reassembly must refuse it.
    fn push(&mut self, packet: &[u8]) -> Result<Option<Vec<u8>>, ()> {
        let body = packet.strip_prefix(&[0xFE, 0xFF, 0xFF, 0xFF]).ok_or(())?;
        if body.len() < 8 {
            return Err(());
        }
        let id = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
        let (total, number) = (usize::from(body[4]), usize::from(body[5]));
        let payload = &body[8..];
        if id & 0x8000_0000 != 0
            || !(1..=MAX_SPLIT_PACKETS).contains(&total)
            || number >= total
            || payload.is_empty()
            || payload.len() > MAX_PACKET
        {
            return Err(());
        }
        let (current, parts) = self.current.get_or_insert_with(|| (id, vec![None; total]));
        if *current != id {
            return Ok(None);
        }
        if parts.len() != total {
            return Err(());
        }
        parts[number].get_or_insert_with(|| payload.to_vec());
        if parts.iter().any(Option::is_none) {
            return Ok(None);
        }
        let message: Vec<u8> = parts.iter().flatten().flatten().copied().collect();
        self.current = None;
        if message.starts_with(&[0xFF; 4]) {
            Ok(Some(message))
        } else {
            Err(())
        }
    }
}

/// What the browser reads back: A2S replies from a server (split packets through one
/// [`Reassembly`], whole messages and reassembled ones through [`decode_response`]) and
/// master-protocol packets ([`master_protocol::decode`]), every packet offered to both
/// decoders as the bytes could come from either. The reassembly matches a model of the
/// split format, never gives more than [`MAX_SPLIT_PACKETS`] × [`MAX_PACKET`] bytes, and
/// each decoded reply or packet passes the checks of what it claims to be.
pub fn query_reply(data: &[u8]) {
    let mut split = Reassembly::new();
    let mut model = SplitModel::default();
    for packet in payloads(data) {
        if is_split(packet) {
            let got = split.push(packet);
            let expected = model.push(packet);
            match (&got, &expected) {
                (Ok(g), Ok(e)) => assert_eq!(g, e, "the reassembly gave other bytes"),
                (Err(_), Err(())) => {}
                _ => panic!("the reassembly gave {got:?} where the format says {expected:?}"),
            }
            if let Ok(Some(message)) = got {
                assert!(message.len() <= MAX_SPLIT_PACKETS * MAX_PACKET);
                check_response(&message);
            }
        } else {
            check_response(packet);
        }
        check_master(packet);
    }
}
