//! The body for the master server's packet handler ([`Master::handle`]): datagrams from
//! a few sources, the clock moving between them and [`Master::expire`] run as it does,
//! checked against what the master protocol promises (`sightline_query::master_protocol`).
//!
//! An input is several datagrams, each after its length as two little-endian bytes and
//! led by a control byte, as [`crate::query::server_query`] takes them.

use crate::query::ECHO;
use crate::transport::payloads;
use sightline_limits::HostKey;
use sightline_query::master_protocol::{GAME_TAG, MAX_LIST_PACKET, MasterPacket, decode, encode};
use sightline_query::{Master, MasterConfig, MasterStats, Rate, Refusals, ShareRates};
use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Where a datagram comes from, by the low three bits of its control byte: a host, the
/// same host IPv4-mapped (one address to the master), two more ports of that host (its
/// third server is over the per-address limit), a /24 neighbour, an IPv6 host, another
/// address in the same /64 (one host to the limits), and a stranger.
pub const MASTER_SOURCES: [&str; 8] = [
    "198.51.100.7:27015",
    "[::ffff:198.51.100.7]:27015",
    "198.51.100.7:27016",
    "198.51.100.7:27017",
    "198.51.100.8:27015",
    "[2001:db8::7]:27015",
    "[2001:db8::8]:27015",
    "203.0.113.9:27015",
];

/// The master under test: limits small enough for a short input to reach them (two
/// servers an address, five in all, a few challenges and lists a second), and a
/// challenge epoch and expiry the clock's steps cross.
pub fn master_config() -> MasterConfig {
    MasterConfig {
        expire: Duration::from_secs(120),
        challenge_epoch: Duration::from_secs(10),
        max_per_address: 2,
        max_servers: 5,
        challenges: ShareRates {
            host: Rate::new(6.0, 1.0),
            network: Rate::new(10.0, 2.0),
            everyone: Rate::new(16.0, 4.0),
        },
        lists: ShareRates {
            host: Rate::new(3.0, 0.5),
            network: Rate::new(5.0, 1.0),
            everyone: Rate::new(8.0, 2.0),
        },
    }
}

fn canonical(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(a.ip().to_canonical(), a.port())
}

fn refusals(r: &Refusals) -> u64 {
    r.malformed + r.unexpected + r.bad_challenge + r.per_address + r.full + r.rate
}

/// What the body knows: the challenges the master sent and the servers it must list.
struct Model {
    config: MasterConfig,
    /// When each (canonical address, challenge) was last sent.
    issued: HashMap<(SocketAddr, u32), Instant>,
    /// The challenge each canonical address was last sent.
    last: HashMap<SocketAddr, u32>,
    /// Listed servers: protocol and when last confirmed.
    listed: HashMap<SocketAddr, (u32, Instant)>,
}

impl Model {
    /// How long ago `challenge` was sent to `source`, if it was.
    fn age(&self, source: SocketAddr, challenge: u32, now: Instant) -> Option<Duration> {
        self.issued
            .get(&(source, challenge))
            .map(|&at| now.saturating_duration_since(at))
    }

    fn issue(&mut self, source: SocketAddr, challenge: u32, now: Instant) {
        assert!(
            challenge != 0 && challenge != u32::MAX,
            "challenge {challenge} means none to clients"
        );
        self.issued.insert((source, challenge), now);
        self.last.insert(source, challenge);
    }

    fn of_host(&self, host: HostKey) -> usize {
        self.listed
            .keys()
            .filter(|a| HostKey::of(a.ip()) == host)
            .count()
    }

    fn listed_for(&self, protocol: u32) -> BTreeSet<SocketAddr> {
        self.listed
            .iter()
            .filter(|(_, (p, _))| *p == protocol)
            .map(|(a, _)| *a)
            .collect()
    }

    /// The master lists exactly the model's servers, within its limits, and counts them.
    fn check(&self, master: &Master, also: Option<u32>) {
        let stats = master.stats();
        assert_eq!(stats.listed, self.listed.len(), "listed servers miscounted");
        assert!(
            self.listed.len() <= self.config.max_servers,
            "over max_servers"
        );
        let protocols: BTreeSet<u32> = self.listed.values().map(|(p, _)| *p).chain(also).collect();
        let mut total = 0;
        for p in protocols {
            let servers = master.servers(p);
            let set: BTreeSet<SocketAddr> = servers.iter().copied().collect();
            assert_eq!(set.len(), servers.len(), "a server listed twice");
            assert_eq!(set, self.listed_for(p), "the servers of protocol {p}");
            total += servers.len();
        }
        assert_eq!(total, stats.listed, "servers listed under no protocol");
        for a in self.listed.keys() {
            assert!(
                self.of_host(HostKey::of(a.ip())) <= self.config.max_per_address,
                "over max_per_address at {a}"
            );
        }
    }
}

/// The master's handler over datagrams from [`MASTER_SOURCES`]: the control byte before
/// each picks its source (low three bits), whether a `getservers` or `infoResponse`
/// echoes the challenge last sent to that source ([`ECHO`], so inputs get past
/// challenges), and how far the clock moves first ([`crate::query::after_seconds`]);
/// when it moves, [`Master::expire`] runs.
///
/// Checked after every datagram: every reply goes to the sender and decodes; nothing
/// larger than the datagram goes to an address that has not echoed a challenge sent to
/// it within two epochs, and only such an address gets a list; a challenge under one
/// epoch old is always accepted; a `getinfo` echoes the heartbeat's nonce. A server is
/// listed (under the protocol it gave) only once it echoed a challenge sent to its own
/// canonical address, and always then while the limits leave room; a listed server is
/// refreshed by each such echo and forgotten once not confirmed for the expiry. The
/// master lists exactly those servers, never more than `max_servers` nor
/// `max_per_address` per host, and a list names exactly the listed servers of the
/// protocol asked for, in packets of at most [`MAX_LIST_PACKET`] bytes, the last marked.
/// The counters agree: heartbeats, challenges and lists as sent, and every datagram
/// that got nothing and listed nothing counted as refused.
pub fn master_packets(data: &[u8]) {
    let config = master_config();
    let mut master = Master::new(config);
    let mut now = Instant::now();
    let mut model = Model {
        config,
        issued: HashMap::new(),
        last: HashMap::new(),
        listed: HashMap::new(),
    };
    let epoch = config.challenge_epoch;
    for payload in payloads(data) {
        let Some((&control, bytes)) = payload.split_first() else {
            continue;
        };
        let wait = Duration::from_secs(5 * u64::from(control >> 4));
        if !wait.is_zero() {
            now += wait;
            let before = master.stats().expired;
            master.expire(now);
            let gone = model.listed.len();
            model
                .listed
                .retain(|_, (_, at)| now.saturating_duration_since(*at) < config.expire);
            let gone = (gone - model.listed.len()) as u64;
            assert_eq!(master.stats().expired, before + gone, "expiries miscounted");
            model.check(&master, None);
        }
        let from: SocketAddr = MASTER_SOURCES[usize::from(control & 7)]
            .parse()
            .expect("a socket address");
        let source = canonical(from);
        let mut request = bytes.to_vec();
        if control & ECHO != 0
            && let Some(&c) = model.last.get(&source)
        {
            match decode(&request) {
                Ok(MasterPacket::GetServers { protocol, .. }) => {
                    request = encode(&MasterPacket::GetServers {
                        protocol,
                        challenge: Some(c),
                    });
                }
                Ok(MasterPacket::InfoResponse { protocol, game, .. }) => {
                    request = encode(&MasterPacket::InfoResponse {
                        challenge: c,
                        protocol,
                        game,
                    });
                }
                _ => {}
            }
        }
        let before = master.stats();
        let replies = master.handle(from, &request, now);
        let after = master.stats();
        step(
            &mut model, &request, source, &replies, &before, &after, now, epoch,
        );
        assert!(
            replies.iter().all(|(to, _)| *to == from),
            "a reply elsewhere"
        );
        let also = match decode(&request) {
            Ok(MasterPacket::GetServers { protocol, .. }) => Some(protocol),
            _ => None,
        };
        model.check(&master, also);
    }
}

/// Checks one datagram's replies and counters, and updates the model.
fn step(
    model: &mut Model,
    request: &[u8],
    source: SocketAddr,
    replies: &[(SocketAddr, Vec<u8>)],
    before: &MasterStats,
    after: &MasterStats,
    now: Instant,
    epoch: Duration,
) {
    let packets: Vec<MasterPacket> = replies
        .iter()
        .map(|(_, p)| decode(p).unwrap_or_else(|e| panic!("a reply that does not decode: {e:?}")))
        .collect();
    let sent: usize = replies.iter().map(|(_, p)| p.len()).sum();
    let challenges_sent = packets
        .iter()
        .filter(|p| matches!(p, MasterPacket::GetInfo { .. } | MasterPacket::Challenge(_)))
        .count() as u64;
    assert_eq!(after.challenges, before.challenges + challenges_sent);
    let mut proven = false;
    let mut confirmed = false;
    match decode(request) {
        Ok(MasterPacket::Heartbeat { nonce, .. }) => {
            assert_eq!(after.heartbeats, before.heartbeats + 1);
            match packets.as_slice() {
                [] => {}
                [
                    MasterPacket::GetInfo {
                        challenge,
                        nonce: echoed,
                    },
                ] => {
                    assert_eq!(*echoed, nonce, "a getinfo without the heartbeat's nonce");
                    model.issue(source, *challenge, now);
                }
                other => panic!("a heartbeat answered with {other:?}"),
            }
        }
        Ok(MasterPacket::InfoResponse {
            challenge,
            protocol,
            game,
        }) => {
            assert!(packets.is_empty(), "an infoResponse answered");
            confirmed = after.confirmed > before.confirmed;
            assert!(after.confirmed <= before.confirmed + 1);
            let age = model.age(source, challenge, now);
            let fresh = game == GAME_TAG && age.is_some_and(|a| a < epoch);
            if confirmed {
                assert_eq!(game, GAME_TAG, "another game's server confirmed");
                assert!(
                    age.is_some_and(|a| a < 2 * epoch),
                    "{source} confirmed without a challenge sent to it lately ({age:?})"
                );
                model.listed.insert(source, (protocol, now));
            } else if fresh {
                let room = model.listed.contains_key(&source)
                    || (model.of_host(HostKey::of(source.ip())) < model.config.max_per_address
                        && model.listed.len() < model.config.max_servers);
                assert!(
                    !room,
                    "{source} echoed a fresh challenge and was not listed"
                );
            }
        }
        Ok(MasterPacket::GetServers {
            protocol,
            challenge,
        }) => {
            let age = challenge.and_then(|c| model.age(source, c, now));
            match packets.as_slice() {
                [] => {}
                [MasterPacket::Challenge(c)] => {
                    assert!(
                        age.is_none_or(|a| a >= epoch),
                        "a challenge {age:?} old was refused"
                    );
                    model.issue(source, *c, now);
                }
                lists => {
                    proven = true;
                    assert!(
                        age.is_some_and(|a| a < 2 * epoch),
                        "a list for {source} without a challenge sent to it lately ({age:?})"
                    );
                    assert_eq!(after.lists, before.lists + 1, "a list not counted");
                    let mut named = BTreeSet::new();
                    for (i, (packet, (_, bytes))) in lists.iter().zip(replies).enumerate() {
                        assert!(bytes.len() <= MAX_LIST_PACKET, "a list packet too long");
                        let MasterPacket::Servers { servers, end } = packet else {
                            panic!("{packet:?} in a list");
                        };
                        assert_eq!(*end, i + 1 == lists.len(), "the list's end misplaced");
                        for s in servers {
                            assert!(named.insert(*s), "{s} named twice in a list");
                        }
                    }
                    assert_eq!(named, model.listed_for(protocol), "the list of {protocol}");
                }
            }
            if !proven {
                assert_eq!(after.lists, before.lists, "a list counted but not sent");
            }
        }
        Ok(_) | Err(_) => assert!(packets.is_empty(), "{request:?} answered"),
    }
    if !proven {
        assert!(
            sent <= request.len(),
            "{sent} bytes to an unproven address for {} bytes",
            request.len()
        );
    }
    assert!(refusals(&after.refused) >= refusals(&before.refused));
    if replies.is_empty() && !confirmed {
        assert!(
            refusals(&after.refused) > refusals(&before.refused),
            "{request:?} dropped without a count"
        );
    }
}
