//! The body for the server's side of the token exchange: the token service's steps
//! (`read_hello`, `kex::server_hello`, `read_finish`, run by the same per-request step
//! its poll runs) over an in-memory stream ([`TokenBench`]), driven by a client that can
//! be honest (a real [`ClientHello`] and finish, so inputs get past the cryptography)
//! or anything else.
//!
//! An input is its first byte (bit 0 set: a public server; clear: one with the password
//! [`PASSWORD`]), then operations, each after its length as two little-endian bytes and
//! led by a control byte: the operation in its low three bits ([`OPEN`] to [`BAN`]),
//! [`SPLIT`] to send in two halves with a poll between, and in its top four bits the
//! tenths of a second the clock moves first. The service polls once after each (and
//! while a finish waits for the server's hello), then a few times after the last while
//! the client reads what is still coming.

use crate::transport::payloads;
use sightline_limits::{Bucket, Rate, Shares};
use sightline_net::NETCODE_PROTOCOL_ID;
use sightline_net::test_support::{
    BenchStage, ClientHello, ClientKeys, FIRST_BYTES_DEADLINE, PASSWORD_GUESS_BURST,
    PASSWORD_GUESSES_PER_SECOND, Polled, SERVE_DEADLINE, TOKEN_BURST, TOKENS_PER_SECOND,
    TokenBench,
};
use sightline_net::{AddressBans, ConnectToken, IpPrefix};
use sightline_protocol::{
    CLIENT_FINISH_MAX_BYTES, CLIENT_HELLO_BYTES, ExchangeTag, Framed, MAX_PASSWORD_LEN,
    PROTOCOL_VERSION, SERVER_FRAME_MAX_BYTES, SERVER_HELLO_BYTES, TOKEN_EXCHANGE_MAGIC,
    TOKEN_EXCHANGE_VERSION, TokenReply, TokenRequest, Wire, frame, framed,
};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The password of the server the body runs, unless the input's first byte asks for a
/// public one.
pub const PASSWORD: &str = "hunter2";

/// Where a request comes from ([`OPEN`]'s first byte picks): a host, the same host
/// IPv4-mapped from another port (one host to the rate limit), a /24 neighbour, an IPv6
/// host, and a host banned from the start.
pub const TOKEN_PEERS: [&str; 5] = [
    "198.51.100.7:40000",
    "[::ffff:198.51.100.7]:40001",
    "198.51.100.8:40000",
    "[2001:db8::7]:40000",
    "203.0.113.66:40000",
];

/// Operation: a new request from [`TOKEN_PEERS`]`[data[0]]` (the first one by default);
/// one still open is given up.
pub const OPEN: u8 = 0;
/// Operation: an honest client hello proving the password `data` (lossy UTF-8).
pub const HELLO: u8 = 1;
/// Operation: the honest finish sealing the request `data`, once the client has read
/// the server's hello (it waits while the service polls); nothing without an honest
/// hello or when no server hello comes.
pub const FINISH: u8 = 2;
/// Operation: `data` as it is.
pub const RAW: u8 = 3;
/// Operation: the client closes its side.
pub const CLOSE: u8 = 4;
/// Operation: the next honest message has its byte at `data[0..2]` (little-endian,
/// modulo its length) xored with `data[2]` (1 without it).
pub const FLIP: u8 = 5;
/// Operation: the client reads `data[0]` bytes a poll from now on (all without it).
pub const SLOW: u8 = 6;
/// Operation: the ban list becomes [`TOKEN_PEERS`]`[data[0]]`'s address with the reason
/// `data[1..]` (lossy UTF-8); empty without `data`.
pub const BAN: u8 = 7;
/// Control bit: send in two halves, the service polling between them.
pub const SPLIT: u8 = 0x08;

/// Control bits 4 to 7: tenths of a second the clock moves on first.
pub const fn after_tenths(tenths: u8) -> u8 {
    (if tenths > 15 { 15 } else { tenths }) << 4
}

fn peer(i: usize) -> SocketAddr {
    TOKEN_PEERS[i % TOKEN_PEERS.len()]
        .parse()
        .expect("a socket address")
}

/// The frame the service must write next, as its poll decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A refusal in the clear, with its reason's start.
    Clear(&'static str),
    /// The server's hello.
    ServerHello,
    /// The sealed answer: a token, or a refusal.
    Sealed { granted: bool },
}

/// The body's side of one request.
struct Request {
    peer: SocketAddr,
    opened: Instant,
    /// Every byte sent, in order.
    sent: Vec<u8>,
    closed: bool,
    /// The honest client whose hello opened the stream, until it reads the server's.
    client: Option<ClientHello>,
    /// Its keys, once it read the server's hello.
    keys: Option<ClientKeys>,
    /// The honest finish messages sent (unframed, with the request each seals).
    finishes: Vec<(Vec<u8>, Vec<u8>)>,
    received: Vec<u8>,
    expected: VecDeque<Expect>,
    /// The server's hello, once received.
    server_hello: Option<Vec<u8>>,
    /// A guess was taken for it.
    guess: bool,
}

/// What the body checks the service against.
struct Exchange {
    bench: TokenBench,
    password: Option<&'static str>,
    banned: Vec<(SocketAddr, String)>,
    limiter: Shares,
    guesses: Bucket,
    returned: u32,
    /// Server hellos answered with a guess taken, and guesses given back.
    guessed: u64,
    given_back: u64,
    started: Instant,
    now: Instant,
    request: Option<Request>,
    window: Option<usize>,
    flip: Option<(usize, u8)>,
    /// Tokens due to honest finishes, and those the body received and checked.
    issued: u64,
    granted: u64,
}

/// What an input came to, for tests that run a body's input on purpose.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ExchangeSummary {
    /// Tokens the client received (and checked).
    pub granted: u64,
    /// Refusals the service counted.
    pub refused: u64,
    /// Requests it dropped unanswered.
    pub dropped: u64,
}

/// The server's side of the token exchange over [`TokenBench`], which runs the token
/// service's own per-request step.
///
/// Checked at every poll, against what the body sent: the service buffers no more than
/// a hello, or then a finish frame, and writes whole frames of at most
/// [`SERVER_FRAME_MAX_BYTES`]; a stream not opening with the magic is handed over as
/// foreign with exactly the bytes read; an overdue request is dropped. A whole hello is
/// refused in the clear, in this order, for a ban, the host's rate, the exchange's
/// version and (with a password) a spent allowance of guesses; else answered with the
/// server's hello (always, for an honest one) or dropped. A finish frame whose key
/// confirmation is wrong is refused in the clear, one whose confirmation is right but
/// sealed request was changed is dropped, and only an honest finish is answered sealed:
/// with a token (which names the asker's address, the service's and netcode's protocol)
/// exactly when its request is this protocol's and the asker is not banned. Every clear
/// frame is a refusal that decodes. The guess allowance is a bucket with returns, taken
/// once per server hello on a password server and given back once for a malformed hello
/// or a right confirmation, never more: server hellos answered to askers that did not
/// prove the password stay within the allowance's burst and rate.
pub fn token_exchange(data: &[u8]) {
    run_exchange(data);
}

/// Runs [`token_exchange`]'s checks on `data`, and what it came to.
pub fn run_exchange(data: &[u8]) -> ExchangeSummary {
    let Some((&mode, ops)) = data.split_first() else {
        return ExchangeSummary::default();
    };
    let password = (mode & 1 == 0).then_some(PASSWORD);
    let banned = vec![(peer(4), "cheating".to_string())];
    let now = Instant::now();
    let mut x = Exchange {
        bench: TokenBench::new(password, bans(&banned)),
        password,
        banned,
        limiter: Shares::per_host(Rate::new(TOKEN_BURST, TOKENS_PER_SECOND)),
        guesses: Bucket::new(PASSWORD_GUESS_BURST, PASSWORD_GUESSES_PER_SECOND),
        returned: 0,
        guessed: 0,
        given_back: 0,
        started: now,
        now,
        request: None,
        window: None,
        flip: None,
        issued: 0,
        granted: 0,
    };
    x.open(peer(0));
    for op in payloads(ops) {
        let Some((&control, data)) = op.split_first() else {
            continue;
        };
        x.now += Duration::from_millis(100 * u64::from(control >> 4));
        let split = control & SPLIT != 0;
        match control & 7 {
            OPEN => x.open(peer(data.first().copied().unwrap_or(0).into())),
            HELLO => {
                let password = String::from_utf8_lossy(data);
                let password = truncated(&password, MAX_PASSWORD_LEN);
                let client = ClientHello::start(password);
                let mut hello = client.bytes().to_vec();
                x.flip_into(&mut hello);
                if let Some(r) = &mut x.request
                    && r.sent.is_empty()
                {
                    r.client = Some(client);
                }
                x.send(&hello, split);
            }
            FINISH => {
                let Some(message) = x.finish_message(data) else {
                    x.poll();
                    continue;
                };
                // A request too long to frame is no finish a client could send.
                let Some(mut framed) = frame(&message) else {
                    x.poll();
                    continue;
                };
                x.flip_into(&mut framed);
                x.send(&framed, split);
            }
            RAW => x.send(data, split),
            CLOSE => {
                x.bench.close();
                if let Some(r) = &mut x.request {
                    r.closed = true;
                }
                x.poll();
            }
            FLIP => {
                let at = data
                    .first_chunk::<2>()
                    .map_or(0, |b| u16::from_le_bytes(*b));
                let mask = data.get(2).copied().filter(|&m| m != 0).unwrap_or(1);
                x.flip = Some((usize::from(at), mask));
                x.poll();
            }
            SLOW => {
                x.window = data.first().map(|&n| usize::from(n)).filter(|&n| n > 0);
                x.bench.read_slowly(x.window);
                x.poll();
            }
            _ => {
                x.banned = match data.split_first() {
                    Some((&who, reason)) => {
                        vec![(
                            peer(who.into()),
                            String::from_utf8_lossy(reason).into_owned(),
                        )]
                    }
                    None => Vec::new(),
                };
                x.bench.set_bans(bans(&x.banned));
                x.poll();
            }
        }
    }
    // The client reads whatever is still coming.
    x.window = None;
    x.bench.read_slowly(None);
    for _ in 0..4 {
        x.poll();
    }
    let stats = x.bench.stats();
    assert_eq!(
        stats.tokens_issued, x.issued,
        "tokens issued without an honest finish"
    );
    assert!(x.granted <= x.issued);
    ExchangeSummary {
        granted: x.granted,
        refused: stats.tokens_refused,
        dropped: stats.token_requests_dropped,
    }
}

fn bans(banned: &[(SocketAddr, String)]) -> AddressBans {
    AddressBans(
        banned
            .iter()
            .map(|(a, reason)| (IpPrefix::host(a.ip()), reason.clone()))
            .collect(),
    )
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn truncated(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Exchange {
    fn open(&mut self, peer: SocketAddr) {
        self.bench.open(peer, self.now);
        self.request = Some(Request {
            peer,
            opened: self.now,
            sent: Vec::new(),
            closed: false,
            client: None,
            keys: None,
            finishes: Vec::new(),
            received: Vec::new(),
            expected: VecDeque::new(),
            server_hello: None,
            guess: false,
        });
        self.poll();
    }

    fn flip_into(&mut self, bytes: &mut [u8]) {
        if let Some((at, mask)) = self.flip.take()
            && !bytes.is_empty()
        {
            let at = at % bytes.len();
            bytes[at] ^= mask;
        }
    }

    /// The honest finish sealing `request`, once the server's hello came: the client
    /// waits for it (the service polling meanwhile) while its request is open.
    fn finish_message(&mut self, request: &[u8]) -> Option<Vec<u8>> {
        for _ in 0..=2 + SERVER_HELLO_BYTES {
            match &self.request {
                Some(r) if r.server_hello.is_none() && r.client.is_some() => self.poll(),
                _ => break,
            }
        }
        let r = self.request.as_mut()?;
        if r.keys.is_none() {
            let hello = r.server_hello.as_ref()?;
            let client = r.client.take()?;
            let keys = client.finish(hello).expect("the service's own hello reads");
            r.keys = Some(keys);
        }
        let message = r.keys.as_ref()?.finish_message(request);
        r.finishes.push((message.clone(), request.to_vec()));
        Some(message)
    }

    fn send(&mut self, bytes: &[u8], split: bool) {
        let halves = if split {
            let (a, b) = bytes.split_at(bytes.len() / 2);
            vec![a, b]
        } else {
            vec![bytes]
        };
        for half in halves {
            self.bench.send(half);
            if let Some(r) = &mut self.request {
                r.sent.extend_from_slice(half);
            }
            self.poll();
        }
    }

    fn is_banned(&self, peer: SocketAddr) -> Option<&str> {
        self.banned
            .iter()
            .find(|(a, _)| a.ip().to_canonical() == peer.ip().to_canonical())
            .map(|(_, reason)| reason.as_str())
    }

    /// One poll of the service, checked.
    fn poll(&mut self) {
        let Some(mut r) = self.request.take() else {
            assert!(self.bench.poll(self.now).is_none());
            return;
        };
        let now = self.now;
        let stage = self.bench.stage().expect("the request is open");
        let inbox_before = self.bench.inbox_len();
        let outbox_before = self.bench.outbox_len();
        let before = self.bench.stats().clone();
        let (polled, written) = self.bench.poll(now).expect("the request is open");
        let after = self.bench.stats().clone();
        assert!(
            self.window.is_none_or(|w| written.len() <= w),
            "{} bytes written to a client reading {:?}",
            written.len(),
            self.window
        );
        assert!(self.bench.inbox_len() <= CLIENT_HELLO_BYTES.max(2 + CLIENT_FINISH_MAX_BYTES));
        assert!(self.bench.outbox_len() <= 2 + SERVER_FRAME_MAX_BYTES);
        r.received.extend_from_slice(&written);
        self.read_frames(&mut r);

        let age = now.saturating_duration_since(r.opened);
        let silent = stage == BenchStage::Hello && inbox_before == 0;
        let overdue = age > SERVE_DEADLINE || (silent && age > FIRST_BYTES_DEADLINE);
        if overdue {
            assert_eq!(polled, Polled::Dropped, "an overdue request kept");
            assert!(written.is_empty(), "written to an overdue request");
            assert_eq!(
                after.token_requests_dropped,
                before.token_requests_dropped + 1
            );
            return;
        }
        assert!(
            written.len() <= outbox_before,
            "more written than was queued"
        );
        if written.len() < outbox_before {
            // Still writing: nothing is read meanwhile.
            assert_eq!(
                polled,
                Polled::Waiting,
                "gone before its answer was written"
            );
            assert_eq!(self.bench.inbox_len(), inbox_before, "read while writing");
            self.request = Some(r);
            return;
        }
        match stage {
            BenchStage::Closing => {
                assert_eq!(polled, Polled::Answered, "not closed once answered");
                assert!(r.expected.is_empty(), "{:?} never written", r.expected);
                assert!(r.received.is_empty(), "a partial frame before closing");
                return;
            }
            BenchStage::Hello => self.hello(&mut r, polled.clone(), &before, &after),
            BenchStage::Finish => self.finish(&mut r, polled.clone(), &before, &after),
        }
        let guessed_unproven = self.guessed.saturating_sub(self.given_back) as f64;
        let elapsed = now.saturating_duration_since(self.started).as_secs_f64();
        assert!(
            guessed_unproven <= PASSWORD_GUESS_BURST + PASSWORD_GUESSES_PER_SECOND * elapsed + 1e-6,
            "{guessed_unproven} guesses tested in {elapsed} s"
        );
        if polled == Polled::Waiting {
            self.request = Some(r);
        }
    }

    /// Checks the frames received so far against those expected, in order.
    fn read_frames(&mut self, r: &mut Request) {
        while let Framed::Complete(len) = framed(&r.received, SERVER_FRAME_MAX_BYTES) {
            let body: Vec<u8> = r.received[2..2 + len].to_vec();
            r.received.drain(..2 + len);
            let expect = r
                .expected
                .pop_front()
                .unwrap_or_else(|| panic!("an unexpected frame {body:?}"));
            let (&tag, rest) = body.split_first().expect("a frame has its tag");
            match expect {
                Expect::Clear(reason) => {
                    assert_eq!(tag, ExchangeTag::Clear as u8, "{expect:?}");
                    match TokenReply::decode(rest) {
                        Ok(TokenReply::Refused { reason: said }) => assert!(
                            said.starts_with(reason),
                            "refused with {said:?}, expected {reason:?}"
                        ),
                        other => panic!("a clear frame that is no refusal: {other:?}"),
                    }
                }
                Expect::ServerHello => {
                    assert_eq!(tag, ExchangeTag::ServerHello as u8);
                    assert_eq!(rest.len(), SERVER_HELLO_BYTES);
                    r.server_hello = Some(rest.to_vec());
                }
                Expect::Sealed { granted } => {
                    assert_eq!(tag, ExchangeTag::Sealed as u8);
                    let keys = r.keys.as_ref().expect("sealed only for an honest finish");
                    let reply = keys.open_reply(rest).expect("the sealed reply opens");
                    match TokenReply::decode(&reply) {
                        Ok(TokenReply::Granted { token }) => {
                            assert!(granted, "a token where a refusal was due");
                            self.check_token(r.peer, &token);
                        }
                        Ok(TokenReply::Refused { .. }) => {
                            assert!(!granted, "refused where a token was due")
                        }
                        Err(e) => panic!("a sealed reply that does not decode: {e}"),
                    }
                }
            }
        }
        if let Framed::TooLarge = framed(&r.received, SERVER_FRAME_MAX_BYTES) {
            panic!("a frame over SERVER_FRAME_MAX_BYTES");
        }
    }

    /// A granted token names the asker, the service and our protocol.
    fn check_token(&mut self, asker: SocketAddr, token: &[u8]) {
        let token = ConnectToken::read(&mut &token[..]).expect("a granted token reads");
        assert_eq!(token.protocol_id, NETCODE_PROTOCOL_ID);
        assert_eq!(token.server_addresses[0], Some(self.bench.public_addr()));
        assert!(token.expire_timestamp > token.create_timestamp);
        assert!(token.create_timestamp <= self.bench.netcode_time().as_secs());
        assert_eq!(
            self.bench.token_asker(&token),
            Some(asker.ip().to_canonical()),
            "the token names another address"
        );
        self.granted += 1;
    }

    /// A poll in the hello stage.
    fn hello(
        &mut self,
        r: &mut Request,
        polled: Polled,
        before: &sightline_net::NetStats,
        after: &sightline_net::NetStats,
    ) {
        let inbox = &r.sent[..r.sent.len().min(CLIENT_HELLO_BYTES)];
        let magic = TOKEN_EXCHANGE_MAGIC.len();
        if inbox.len() >= magic && inbox[..magic] != TOKEN_EXCHANGE_MAGIC {
            assert_eq!(polled, Polled::Foreign(inbox.to_vec()), "not handed over");
            return;
        }
        assert!(
            !matches!(polled, Polled::Foreign(_)),
            "a token request handed over"
        );
        if inbox.len() < CLIENT_HELLO_BYTES {
            let expected = if r.closed {
                Polled::Dropped
            } else {
                Polled::Waiting
            };
            assert_eq!(polled, expected, "a partial hello, closed: {}", r.closed);
            return;
        }
        let ip = r.peer.ip();
        let refusal = if self.is_banned(r.peer).is_some() {
            Some("banned from this server")
        } else if self.limiter.allow(ip, self.now).is_err() {
            Some("too many token requests")
        } else if inbox[magic] != TOKEN_EXCHANGE_VERSION {
            Some("token exchange version")
        } else if self.password.is_some() && !self.take_guess() {
            Some("too many wrong passwords")
        } else {
            None
        };
        if let Some(reason) = refusal {
            assert_eq!(polled, Polled::Waiting);
            assert_eq!(self.bench.stage(), Some(BenchStage::Closing), "{reason}");
            assert_eq!(after.tokens_refused, before.tokens_refused + 1);
            r.expected.push_back(Expect::Clear(reason));
            return;
        }
        r.guess = self.password.is_some();
        if r.guess {
            self.guessed += 1;
        }
        match polled {
            Polled::Dropped => {
                let honest = r
                    .client
                    .as_ref()
                    .is_some_and(|c| c.bytes() == &r.sent[..CLIENT_HELLO_BYTES]);
                assert!(!honest, "an honest hello dropped");
                if r.guess {
                    self.give_back();
                }
            }
            Polled::Waiting => {
                assert_eq!(self.bench.stage(), Some(BenchStage::Finish));
                r.expected.push_back(Expect::ServerHello);
            }
            other => panic!("a whole hello came to {other:?}"),
        }
    }

    /// A poll in the finish stage, once the server's hello is written.
    fn finish(
        &mut self,
        r: &mut Request,
        polled: Polled,
        before: &sightline_net::NetStats,
        after: &sightline_net::NetStats,
    ) {
        let limit = 2 + CLIENT_FINISH_MAX_BYTES;
        let rest = &r.sent[CLIENT_HELLO_BYTES..];
        let inbox = &rest[..rest.len().min(limit)];
        let len = match framed(inbox, CLIENT_FINISH_MAX_BYTES) {
            Framed::Incomplete => {
                let expected = if r.closed {
                    Polled::Dropped
                } else {
                    Polled::Waiting
                };
                assert_eq!(polled, expected, "a partial finish, closed: {}", r.closed);
                return;
            }
            Framed::TooLarge => {
                assert_eq!(polled, Polled::Dropped, "a finish over its cap kept");
                return;
            }
            Framed::Complete(len) => len,
        };
        let body = &inbox[2..2 + len];
        // The confirmation is right when the client derived the server's keys (it saw
        // the server's confirmation) and sent its own; the rest is the sealed request.
        let right = r.keys.as_ref().is_some_and(|k| {
            k.server_confirmed && body.len() >= 32 && body[..32] == k.finish_message(&[])[..32]
        });
        if !right {
            assert_eq!(polled, Polled::Waiting);
            assert_eq!(after.tokens_refused, before.tokens_refused + 1);
            let reason = if self.password.is_some() {
                "wrong password"
            } else {
                "the token exchange failed"
            };
            r.expected.push_back(Expect::Clear(reason));
            return;
        }
        if r.guess {
            self.give_back();
        }
        let honest = r.finishes.iter().find(|(m, _)| m.as_slice() == body);
        let request = honest.and_then(|(_, req)| TokenRequest::decode(req).ok());
        let Some(request) = request else {
            // Changed on the way (it does not open), or not a request.
            assert_eq!(polled, Polled::Dropped, "a tampered finish answered");
            assert_eq!(after.tokens_issued, before.tokens_issued);
            return;
        };
        assert_eq!(polled, Polled::Waiting);
        let granted =
            request.protocol_version == PROTOCOL_VERSION && self.is_banned(r.peer).is_none();
        assert_eq!(
            after.tokens_issued,
            before.tokens_issued + u64::from(granted),
            "a token issued without an honest finish, or not for one"
        );
        self.issued += u64::from(granted);
        r.expected.push_back(Expect::Sealed { granted });
    }

    /// The model's guess allowance: a returned guess first, then the bucket.
    fn take_guess(&mut self) -> bool {
        if self.returned > 0 {
            self.returned -= 1;
            true
        } else {
            self.guesses.take(self.now)
        }
    }

    fn give_back(&mut self) {
        self.given_back += 1;
        self.returned = (self.returned + 1).min(PASSWORD_GUESS_BURST as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honest_seeds_get_a_token_and_a_wrong_password_gets_none() {
        let seeds = crate::seeds::token_exchange();
        // The right password, and a public server read in halves by a slow client.
        assert_eq!(run_exchange(&seeds[0]).granted, 1);
        assert_eq!(run_exchange(&seeds[1]).granted, 1);
        let wrong = run_exchange(&seeds[2]);
        assert_eq!((wrong.granted, wrong.refused), (0, 1));
        // Tampered finish dropped, tampered hello refused: no token either way.
        let tampered = run_exchange(&seeds[3]);
        assert_eq!(tampered.granted, 0);
        assert_eq!(tampered.refused + tampered.dropped, 2);
        // Nine hellos from one host: eight refused for their version, the ninth for the
        // host's rate, which is checked first.
        let hammer = run_exchange(&seeds[6]);
        assert_eq!(hammer.refused, 9);
    }
}
