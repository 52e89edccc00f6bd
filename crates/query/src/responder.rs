//! The game server's side of A2S: [`Responder`] turns a request into replies, under one
//! rule: no reply larger than its request goes to an address that has not echoed a valid
//! challenge, so a forged source address cannot turn the server into an amplifier.

use crate::a2s::{
    PlayerInfo, Request, ServerInfo, decode_request, encode_challenge, encode_info, encode_players,
    encode_rules, is_placeholder,
};
use crate::guard::Challenges;
use crate::split::split;
use crate::wire::DecodeError;
use sightline_limits::{Rate, ShareRates, Shares};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long one challenge epoch lasts; a challenge is accepted for its epoch and the next.
pub const CHALLENGE_EPOCH: Duration = Duration::from_secs(30);

/// What the server reports; called only for a request that will be answered.
pub trait QuerySource {
    /// The A2S_INFO contents.
    fn info(&self) -> ServerInfo;
    /// The players, in the order to list them.
    fn players(&self) -> Vec<PlayerInfo>;
    /// The rules (public cvars), name and value.
    fn rules(&self) -> Vec<(String, String)>;
}

/// What to do with one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Send these packets, in order, to the sender.
    Replies(Vec<Vec<u8>>),
    /// Send nothing; the reason is for the server's counters.
    Dropped(DropReason),
}

/// Why a query got no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Not a well-formed A2S request.
    Malformed,
    /// A connectionless packet of a type Sightline does not answer.
    UnknownType,
    /// Over the responder's answers-a-second budget.
    RateLimited,
}

/// The responder's budgets: how many replies a second, shared by host, by network and by
/// everyone ([`Shares`]), so a flood costs bounded time and one host's or one network's
/// flood costs only its own answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResponderConfig {
    /// Info, player and rules responses.
    pub answers: ShareRates,
    /// Challenge replies; kept apart so forged-address floods of first contacts
    /// cannot use up the answers of clients that proved their address.
    pub challenges: ShareRates,
}

impl Default for ResponderConfig {
    /// A browser asks a server three questions a refresh and a panel a few a minute: a
    /// host may ask 10 a second (20 at once), a /24 or /48 50, everyone 500. Challenges,
    /// no larger than what asked for them, twice as many.
    fn default() -> Self {
        Self {
            answers: ShareRates {
                host: Rate::new(20.0, 10.0),
                network: Rate::new(100.0, 50.0),
                everyone: Rate::new(500.0, 500.0),
            },
            challenges: ShareRates {
                host: Rate::new(40.0, 20.0),
                network: Rate::new(200.0, 100.0),
                everyone: Rate::new(2000.0, 2000.0),
            },
        }
    }
}

/// Counts of what the responder did, for the server's status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponderStats {
    /// A2S_INFO responses sent.
    pub info: u64,
    /// A2S_PLAYER responses sent.
    pub players: u64,
    /// A2S_RULES responses sent.
    pub rules: u64,
    /// Challenges sent (first contacts and stale or wrong challenges).
    pub challenges: u64,
    /// Of those, the ones answering a wrong or expired challenge.
    pub stale_challenges: u64,
    /// Queries dropped as malformed.
    pub malformed: u64,
    /// Queries dropped for an unknown type.
    pub unknown_type: u64,
    /// Queries dropped over budget (the asker's, its network's or everyone's).
    pub rate_limited: u64,
}

/// Answers A2S queries for one game server; owned by it, driven by its socket.
#[derive(Debug)]
pub struct Responder {
    challenges: Challenges,
    answers: Shares,
    challenge_budget: Shares,
    next_split_id: u32,
    stats: ResponderStats,
}

impl Default for Responder {
    fn default() -> Self {
        Self::new()
    }
}

impl Responder {
    /// A responder with a fresh random secret and the default budgets.
    pub fn new() -> Self {
        Self::with_config(ResponderConfig::default())
    }

    /// A responder with a fresh random secret and the given budgets.
    pub fn with_config(config: ResponderConfig) -> Self {
        Self {
            challenges: Challenges::new(CHALLENGE_EPOCH),
            answers: Shares::new(config.answers),
            challenge_budget: Shares::new(config.challenges),
            next_split_id: 1,
            stats: ResponderStats::default(),
        }
    }

    /// What the responder has done so far.
    pub fn stats(&self) -> ResponderStats {
        self.stats
    }

    /// Answers one packet that arrived from `from`. `server` is asked for its state only
    /// when a full response will be sent.
    pub fn answer(
        &mut self,
        from: SocketAddr,
        request: &[u8],
        now: Instant,
        server: &dyn QuerySource,
    ) -> Answer {
        let parsed = match decode_request(request) {
            Ok(parsed) => parsed,
            Err(DecodeError::UnexpectedType(_)) => return self.drop(DropReason::UnknownType),
            Err(_) => return self.drop(DropReason::Malformed),
        };
        let challenge = match parsed {
            Request::Info { challenge } => challenge,
            Request::Players { challenge } | Request::Rules { challenge } => Some(challenge),
        };
        let proven = challenge.is_some_and(|c| self.challenges.check(from, c, now));
        if !proven {
            let reply = encode_challenge(self.challenges.issue(from, now));
            // Every request that decodes is at least as long as the 9-byte challenge.
            if reply.len() > request.len() {
                return self.drop(DropReason::Malformed);
            }
            if self.challenge_budget.allow(from.ip(), now).is_err() {
                return self.drop(DropReason::RateLimited);
            }
            self.stats.challenges += 1;
            if challenge.is_some_and(|c| !is_placeholder(c)) {
                self.stats.stale_challenges += 1;
            }
            return Answer::Replies(vec![reply]);
        }
        if self.answers.allow(from.ip(), now).is_err() {
            return self.drop(DropReason::RateLimited);
        }
        let message = match parsed {
            Request::Info { .. } => {
                self.stats.info += 1;
                encode_info(&server.info())
            }
            Request::Players { .. } => {
                self.stats.players += 1;
                encode_players(&server.players())
            }
            Request::Rules { .. } => {
                self.stats.rules += 1;
                encode_rules(&server.rules())
            }
        };
        let id = self.next_split_id;
        self.next_split_id = self.next_split_id.wrapping_add(1);
        Answer::Replies(split(message, id))
    }

    fn drop(&mut self, reason: DropReason) -> Answer {
        match reason {
            DropReason::Malformed => self.stats.malformed += 1,
            DropReason::UnknownType => self.stats.unknown_type += 1,
            DropReason::RateLimited => self.stats.rate_limited += 1,
        }
        Answer::Dropped(reason)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::a2s::tests::{Rng, sample_info, sample_players};
    use crate::a2s::{Response, decode_response, encode_request};
    use crate::split::{MAX_PACKET, Reassembly, is_split};
    use std::cell::Cell;

    /// A server's state as plain data, counting how often it was asked.
    pub(crate) struct Fixed {
        pub(crate) info: ServerInfo,
        pub(crate) players: Vec<PlayerInfo>,
        pub(crate) rules: Vec<(String, String)>,
        pub(crate) asked: Cell<u32>,
    }

    impl Fixed {
        pub(crate) fn new(players: usize) -> Self {
            Self {
                info: sample_info(),
                players: sample_players(players),
                rules: vec![("mp_timelimit".into(), "10".into())],
                asked: Cell::new(0),
            }
        }
    }

    impl QuerySource for Fixed {
        fn info(&self) -> ServerInfo {
            self.asked.set(self.asked.get() + 1);
            self.info.clone()
        }
        fn players(&self) -> Vec<PlayerInfo> {
            self.asked.set(self.asked.get() + 1);
            self.players.clone()
        }
        fn rules(&self) -> Vec<(String, String)> {
            self.asked.set(self.asked.get() + 1);
            self.rules.clone()
        }
    }

    fn from() -> SocketAddr {
        "198.51.100.7:40000".parse().unwrap()
    }

    fn replies(answer: Answer) -> Vec<Vec<u8>> {
        match answer {
            Answer::Replies(r) => r,
            Answer::Dropped(reason) => panic!("dropped: {reason:?}"),
        }
    }

    fn challenge_of(answer: Answer) -> u32 {
        let r = replies(answer);
        assert_eq!(r.len(), 1);
        match decode_response(&r[0]) {
            Ok(Response::Challenge(c)) => c,
            other => panic!("expected a challenge, got {other:?}"),
        }
    }

    fn message(packets: Vec<Vec<u8>>) -> Response {
        let mut reassembly = Reassembly::new();
        for p in &packets {
            assert!(p.len() <= MAX_PACKET);
            if !is_split(p) {
                return decode_response(p).unwrap();
            }
            if let Some(m) = reassembly.push(p).unwrap() {
                return decode_response(&m).unwrap();
            }
        }
        panic!("incomplete response");
    }

    #[test]
    fn each_query_is_challenged_then_answered() {
        let server = Fixed::new(64);
        let mut responder = Responder::new();
        let now = Instant::now();
        for (first, kind) in [
            (Request::Info { challenge: None }, 0),
            (
                Request::Players {
                    challenge: u32::MAX,
                },
                1,
            ),
            (Request::Rules { challenge: 0 }, 2),
        ] {
            let c = challenge_of(responder.answer(from(), &encode_request(first), now, &server));
            let again = match kind {
                0 => Request::Info { challenge: Some(c) },
                1 => Request::Players { challenge: c },
                _ => Request::Rules { challenge: c },
            };
            let got = message(replies(responder.answer(
                from(),
                &encode_request(again),
                now,
                &server,
            )));
            match (kind, got) {
                (0, Response::Info(i)) => assert_eq!(i, server.info),
                (1, Response::Players(p)) => assert_eq!(p, server.players),
                (2, Response::Rules(r)) => assert_eq!(r, server.rules),
                (_, other) => panic!("wrong response {other:?}"),
            }
        }
        assert_eq!(server.asked.get(), 3);
        let stats = responder.stats();
        assert_eq!(
            (stats.info, stats.players, stats.rules, stats.challenges),
            (1, 1, 1, 3)
        );
    }

    #[test]
    fn no_unchallenged_reply_is_larger_than_its_request() {
        let server = Fixed::new(64);
        let mut responder = Responder::with_config(ResponderConfig {
            answers: ShareRates::all(Rate::new(1e6, 1e6)),
            challenges: ShareRates::all(Rate::new(1e6, 1e6)),
        });
        let now = Instant::now();
        let mut rng = Rng(77);
        let seeds = [
            encode_request(Request::Info { challenge: None }),
            encode_request(Request::Info { challenge: Some(5) }),
            encode_request(Request::Players {
                challenge: u32::MAX,
            }),
            encode_request(Request::Rules { challenge: 0 }),
            encode_request(Request::Rules { challenge: 123 }),
        ];
        for i in 0..20_000 {
            let request = if i < seeds.len() {
                seeds[i].clone()
            } else {
                rng.mutate(&seeds[i % seeds.len()])
            };
            let addr = SocketAddr::new(from().ip(), 1000 + (i % 5000) as u16);
            if let Answer::Replies(r) = responder.answer(addr, &request, now, &server) {
                let sent: usize = r.iter().map(Vec::len).sum();
                assert!(sent <= request.len(), "{sent} bytes for {request:?}");
            }
        }
        assert_eq!(server.asked.get(), 0, "the server's state was never needed");
    }

    #[test]
    fn a_challenge_binds_the_address_and_expires() {
        let server = Fixed::new(1);
        let mut responder = Responder::new();
        let now = Instant::now();
        let request = encode_request(Request::Players {
            challenge: u32::MAX,
        });
        let c = challenge_of(responder.answer(from(), &request, now, &server));
        let other: SocketAddr = "198.51.100.8:40000".parse().unwrap();
        let with = encode_request(Request::Players { challenge: c });
        challenge_of(responder.answer(other, &with, now, &server));
        let later = now + 2 * CHALLENGE_EPOCH + Duration::from_secs(1);
        challenge_of(responder.answer(from(), &with, later, &server));
        assert!(matches!(
            message(replies(responder.answer(
                from(),
                &with,
                now + CHALLENGE_EPOCH,
                &server
            ))),
            Response::Players(_)
        ));
        assert_eq!(responder.stats().stale_challenges, 2);
    }

    #[test]
    fn floods_are_bounded_and_drops_counted() {
        let server = Fixed::new(1);
        let mut responder = Responder::with_config(ResponderConfig {
            answers: ShareRates::all(Rate::new(5.0, 5.0)),
            challenges: ShareRates::all(Rate::new(10.0, 10.0)),
        });
        let now = Instant::now();
        let first = encode_request(Request::Info { challenge: None });
        let c = challenge_of(responder.answer(from(), &first, now, &server));
        let full = encode_request(Request::Info { challenge: Some(c) });
        let answered = (0..100)
            .filter(|_| {
                matches!(
                    responder.answer(from(), &full, now, &server),
                    Answer::Replies(_)
                )
            })
            .count();
        assert_eq!(answered, 5);
        let challenged = (0..100)
            .filter(|_| {
                matches!(
                    responder.answer(from(), &first, now, &server),
                    Answer::Replies(_)
                )
            })
            .count();
        assert_eq!(challenged, 9);
        assert_eq!(
            responder.answer(from(), b"\xFF\xFF\xFF\xFFW", now, &server),
            Answer::Dropped(DropReason::UnknownType)
        );
        assert_eq!(
            responder.answer(from(), b"\xFE\xFF\xFF\xFFU\0\0\0\0", now, &server),
            Answer::Dropped(DropReason::Malformed)
        );
        let stats = responder.stats();
        assert_eq!(stats.rate_limited, 95 + 91);
        assert_eq!((stats.unknown_type, stats.malformed), (1, 1));
    }

    #[test]
    fn one_host_flooding_with_a_valid_challenge_leaves_others_answered() {
        // One address holds a valid challenge and floods A2S_INFO at 5,000 a second;
        // another address of its /24, and one elsewhere, ask once every 100 ms. Before,
        // all shared one budget of 200 answers a second and most honest queries were
        // dropped.
        let server = Fixed::new(8);
        let mut responder = Responder::new();
        let t0 = Instant::now();
        let flooder: SocketAddr = "198.51.100.1:27005".parse().unwrap();
        let honest: [SocketAddr; 2] = [
            "198.51.100.2:27005".parse().unwrap(),
            "203.0.113.5:27005".parse().unwrap(),
        ];
        let first = encode_request(Request::Info { challenge: None });
        let full = |from: SocketAddr, now: Instant, responder: &mut Responder| {
            let c = challenge_of(responder.answer(from, &first, now, &server));
            encode_request(Request::Info { challenge: Some(c) })
        };
        let flood = full(flooder, t0, &mut responder);
        let honest_requests: Vec<Vec<u8>> = honest
            .iter()
            .map(|a| full(*a, t0, &mut responder))
            .collect();
        let (mut flood_answered, mut honest_answered, mut honest_asked) = (0, 0, 0);
        for ms in 0..2000u64 {
            let now = t0 + Duration::from_millis(ms);
            for _ in 0..5 {
                if let Answer::Replies(_) = responder.answer(flooder, &flood, now, &server) {
                    flood_answered += 1;
                }
            }
            if ms % 100 == 0 {
                for (addr, request) in honest.iter().zip(&honest_requests) {
                    honest_asked += 1;
                    if let Answer::Replies(_) = responder.answer(*addr, request, now, &server) {
                        honest_answered += 1;
                    }
                }
            }
        }
        assert_eq!(honest_answered, honest_asked);
        // The flooder had its burst and its rate, nothing more.
        assert!(flood_answered <= 20 + 2 * 10 + 1, "{flood_answered}");
        assert!(responder.stats().rate_limited >= 9_900);
    }
}
