//! The master server's state, without a socket: [`Master::handle`] turns one packet into
//! the packets to send back, [`Master::expire`] forgets servers gone quiet. The protocol
//! is described in [`crate::master_protocol`].

use crate::guard::Challenges;
use crate::master_protocol::{
    GAME_TAG, MASTER_PROTOCOL, MasterPacket, decode, encode, encode_server_list,
};
use crate::wire::DecodeError;
use sightline_limits::{HostKey, Rate, ShareRates, Shares};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The master's limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MasterConfig {
    /// Forget a listed server not confirmed again for this long.
    pub expire: Duration,
    /// How long a challenge epoch lasts: a challenge is valid for its epoch and the
    /// next, which is how long an unconfirmed server (nothing is stored for it) can take
    /// to answer.
    pub challenge_epoch: Duration,
    /// Most listed servers per source IP (per /64 for IPv6).
    pub max_per_address: usize,
    /// Most listed servers overall.
    pub max_servers: usize,
    /// Challenges (`getinfo` and `challenge` replies) sent a second, shared by host,
    /// network and everyone, so one host's flood of heartbeats or first requests
    /// costs only its own.
    pub challenges: ShareRates,
    /// Server lists sent a second, shared the same way.
    pub lists: ShareRates,
}

impl Default for MasterConfig {
    /// A host running 16 servers heartbeats 16 at once every five minutes, and a
    /// browser asks for the list once a refresh: a host gets 40 challenges at once and
    /// 10 a second, 10 lists at once and one a second; a /24 or /48 five times that;
    /// everyone 1000 challenges and 50 lists a second.
    fn default() -> Self {
        Self {
            expire: Duration::from_secs(15 * 60),
            challenge_epoch: Duration::from_secs(10),
            max_per_address: 16,
            max_servers: 8192,
            challenges: ShareRates {
                host: Rate::new(40.0, 10.0),
                network: Rate::new(200.0, 50.0),
                everyone: Rate::new(1000.0, 1000.0),
            },
            lists: ShareRates {
                host: Rate::new(10.0, 1.0),
                network: Rate::new(50.0, 5.0),
                everyone: Rate::new(100.0, 50.0),
            },
        }
    }
}

/// Why the master did not act on a packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Not a valid master-protocol packet (or another game's).
    pub malformed: u64,
    /// A packet only masters send, or of an unknown command.
    pub unexpected: u64,
    /// An info response or a list request with a wrong or expired challenge (the list
    /// request gets a fresh challenge).
    pub bad_challenge: u64,
    /// A new server from an address already at its limit.
    pub per_address: u64,
    /// A new server while the list is full.
    pub full: u64,
    /// Over a share of challenges or lists a second (the asker's, its network's or
    /// everyone's).
    pub rate: u64,
}

/// The master's counters, for its status line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MasterStats {
    /// Servers listed now.
    pub listed: usize,
    /// Heartbeats received.
    pub heartbeats: u64,
    /// Info responses accepted (new servers and refreshes).
    pub confirmed: u64,
    /// Server lists sent.
    pub lists: u64,
    /// Challenges sent (`getinfo` and `challenge`).
    pub challenges: u64,
    /// Servers forgotten for silence.
    pub expired: u64,
    /// What was refused, by reason.
    pub refused: Refusals,
}

#[derive(Debug, Clone, Copy)]
struct Listed {
    protocol: u32,
    last_confirmed: Instant,
}

/// The master server: confirmed servers, their per-address counts, budgets, counters.
#[derive(Debug)]
pub struct Master {
    config: MasterConfig,
    challenges: Challenges,
    challenge_budget: Shares,
    list_budget: Shares,
    servers: HashMap<SocketAddr, Listed>,
    per_address: HashMap<HostKey, usize>,
    stats: MasterStats,
}

fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

impl Master {
    /// An empty master with a fresh random secret.
    pub fn new(config: MasterConfig) -> Self {
        Self {
            config,
            challenges: Challenges::new(config.challenge_epoch),
            challenge_budget: Shares::new(config.challenges),
            list_budget: Shares::new(config.lists),
            servers: HashMap::new(),
            per_address: HashMap::new(),
            stats: MasterStats::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> MasterStats {
        MasterStats {
            listed: self.servers.len(),
            ..self.stats
        }
    }

    /// The servers listed for `protocol`, in no particular order.
    pub fn servers(&self, protocol: u32) -> Vec<SocketAddr> {
        self.servers
            .iter()
            .filter(|(_, s)| s.protocol == protocol)
            .map(|(a, _)| *a)
            .collect()
    }

    /// Handles one packet from `from`; gives the packets to send, each with its
    /// destination (`from` as given, so a dual-stack socket can send to it).
    pub fn handle(
        &mut self,
        from: SocketAddr,
        bytes: &[u8],
        now: Instant,
    ) -> Vec<(SocketAddr, Vec<u8>)> {
        let packet = match decode(bytes) {
            Ok(p) => p,
            Err(DecodeError::UnexpectedType(_)) => {
                self.stats.refused.unexpected += 1;
                return Vec::new();
            }
            Err(_) => {
                self.stats.refused.malformed += 1;
                return Vec::new();
            }
        };
        let source = canonical(from);
        match packet {
            MasterPacket::Heartbeat {
                game,
                protocol,
                nonce,
            } => {
                self.stats.heartbeats += 1;
                if game != GAME_TAG || protocol != MASTER_PROTOCOL {
                    self.stats.refused.malformed += 1;
                    return Vec::new();
                }
                if !self.servers.contains_key(&source) && !self.has_room(source) {
                    return Vec::new();
                }
                let reply = encode(&MasterPacket::GetInfo {
                    challenge: self.challenges.issue(source, now),
                    nonce,
                });
                self.challenge(from, bytes, reply, now)
            }
            MasterPacket::InfoResponse {
                challenge,
                protocol,
                game,
            } => {
                if game != GAME_TAG {
                    self.stats.refused.malformed += 1;
                } else if !self.challenges.check(source, challenge, now) {
                    self.stats.refused.bad_challenge += 1;
                } else {
                    self.confirm(source, protocol, now);
                }
                Vec::new()
            }
            MasterPacket::GetServers {
                protocol,
                challenge,
            } => {
                if !challenge.is_some_and(|c| self.challenges.check(source, c, now)) {
                    if challenge.is_some() {
                        self.stats.refused.bad_challenge += 1;
                    }
                    let reply =
                        encode(&MasterPacket::Challenge(self.challenges.issue(source, now)));
                    return self.challenge(from, bytes, reply, now);
                }
                if self.list_budget.allow(from.ip(), now).is_err() {
                    self.stats.refused.rate += 1;
                    return Vec::new();
                }
                self.stats.lists += 1;
                encode_server_list(&self.servers(protocol))
                    .into_iter()
                    .map(|p| (from, p))
                    .collect()
            }
            MasterPacket::GetInfo { .. }
            | MasterPacket::Challenge(_)
            | MasterPacket::Servers { .. } => {
                self.stats.refused.unexpected += 1;
                Vec::new()
            }
        }
    }

    /// Sends a challenge to an unproven address: never larger than what it sent, and
    /// within its shares.
    fn challenge(
        &mut self,
        to: SocketAddr,
        request: &[u8],
        reply: Vec<u8>,
        now: Instant,
    ) -> Vec<(SocketAddr, Vec<u8>)> {
        if reply.len() > request.len() {
            self.stats.refused.malformed += 1;
            return Vec::new();
        }
        if self.challenge_budget.allow(to.ip(), now).is_err() {
            self.stats.refused.rate += 1;
            return Vec::new();
        }
        self.stats.challenges += 1;
        vec![(to, reply)]
    }

    /// Whether a new server at `addr` fits both limits; counts the refusal if not.
    fn has_room(&mut self, addr: SocketAddr) -> bool {
        let from_address = self
            .per_address
            .get(&HostKey::of(addr.ip()))
            .copied()
            .unwrap_or(0);
        if from_address >= self.config.max_per_address {
            self.stats.refused.per_address += 1;
            false
        } else if self.servers.len() >= self.config.max_servers {
            self.stats.refused.full += 1;
            false
        } else {
            true
        }
    }

    fn confirm(&mut self, addr: SocketAddr, protocol: u32, now: Instant) {
        if let Some(listed) = self.servers.get_mut(&addr) {
            listed.protocol = protocol;
            listed.last_confirmed = now;
        } else {
            // Limits again: others may have filled the room since the heartbeat.
            if !self.has_room(addr) {
                return;
            }
            self.servers.insert(
                addr,
                Listed {
                    protocol,
                    last_confirmed: now,
                },
            );
            *self.per_address.entry(HostKey::of(addr.ip())).or_default() += 1;
        }
        self.stats.confirmed += 1;
    }

    /// Forgets servers not confirmed within the expiry.
    pub fn expire(&mut self, now: Instant) {
        let expire = self.config.expire;
        let per_address = &mut self.per_address;
        let mut expired = 0;
        self.servers.retain(|addr, s| {
            let keep = now.saturating_duration_since(s.last_confirmed) < expire;
            if !keep {
                expired += 1;
                let key = HostKey::of(addr.ip());
                if let Some(n) = per_address.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        per_address.remove(&key);
                    }
                }
            }
            keep
        });
        self.stats.expired += expired;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2s::tests::Rng;

    const GAME_PROTOCOL: u32 = 11;

    fn heartbeat() -> Vec<u8> {
        encode(&MasterPacket::Heartbeat {
            game: GAME_TAG.into(),
            protocol: MASTER_PROTOCOL,
            nonce: 0x1234_abcd,
        })
    }

    /// Heartbeat, getinfo, info response: the server at `addr` is confirmed.
    fn announce(master: &mut Master, addr: SocketAddr, now: Instant) {
        let replies = master.handle(addr, &heartbeat(), now);
        let [(to, getinfo)] = &replies[..] else {
            panic!("no getinfo for {addr}: {replies:?}");
        };
        assert_eq!(*to, addr);
        let Ok(MasterPacket::GetInfo { challenge, nonce }) = decode(getinfo) else {
            panic!("not a getinfo");
        };
        assert_eq!(nonce, 0x1234_abcd, "the heartbeat's nonce, echoed");
        let answer = encode(&MasterPacket::InfoResponse {
            challenge,
            protocol: GAME_PROTOCOL,
            game: GAME_TAG.into(),
        });
        assert!(master.handle(addr, &answer, now).is_empty());
    }

    /// A list request with the challenge dance; the raw list packets.
    fn list_packets(
        master: &mut Master,
        client: SocketAddr,
        protocol: u32,
        now: Instant,
    ) -> Vec<Vec<u8>> {
        let first = encode(&MasterPacket::GetServers {
            protocol,
            challenge: None,
        });
        let replies = master.handle(client, &first, now);
        let Ok(MasterPacket::Challenge(c)) = decode(&replies[0].1) else {
            panic!("no challenge");
        };
        let again = encode(&MasterPacket::GetServers {
            protocol,
            challenge: Some(c),
        });
        let replies = master.handle(client, &again, now);
        assert!(replies.iter().all(|(to, _)| *to == client));
        replies.into_iter().map(|(_, p)| p).collect()
    }

    fn list(
        master: &mut Master,
        client: SocketAddr,
        protocol: u32,
        now: Instant,
    ) -> Vec<SocketAddr> {
        let mut out = Vec::new();
        for p in list_packets(master, client, protocol, now) {
            let Ok(MasterPacket::Servers { servers, .. }) = decode(&p) else {
                panic!("not a list");
            };
            out.extend(servers);
        }
        out
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn confirmed_servers_are_listed_by_protocol_and_expire() {
        let mut master = Master::new(MasterConfig::default());
        let now = Instant::now();
        let server = addr("192.0.2.10:27015");
        announce(&mut master, server, now);
        let client = addr("198.51.100.1:5000");
        assert_eq!(list(&mut master, client, GAME_PROTOCOL, now), vec![server]);
        assert!(list(&mut master, client, GAME_PROTOCOL + 1, now).is_empty());
        master.expire(now + Duration::from_secs(14 * 60));
        assert_eq!(master.stats().listed, 1);
        master.expire(now + Duration::from_secs(15 * 60));
        assert_eq!(master.stats().listed, 0);
        assert_eq!(master.stats().expired, 1);
        assert!(master.per_address.is_empty());
    }

    #[test]
    fn a_heartbeat_alone_lists_nothing() {
        let mut master = Master::new(MasterConfig::default());
        let now = Instant::now();
        let forged = addr("203.0.113.5:27015");
        let request = heartbeat();
        let replies = master.handle(forged, &request, now);
        assert!(replies.iter().all(|(_, p)| p.len() <= request.len()));
        // A guessed or another address's challenge does not confirm it.
        let other = addr("203.0.113.6:27015");
        let Ok(MasterPacket::GetInfo { challenge, .. }) =
            decode(&master.handle(other, &request, now)[0].1)
        else {
            panic!("no getinfo");
        };
        for c in [challenge, 0, 1, u32::MAX] {
            let answer = encode(&MasterPacket::InfoResponse {
                challenge: c,
                protocol: GAME_PROTOCOL,
                game: GAME_TAG.into(),
            });
            master.handle(forged, &answer, now);
        }
        assert_eq!(master.stats().listed, 0);
        assert_eq!(master.stats().refused.bad_challenge, 4);
        // Too late: the challenge has expired.
        let Ok(MasterPacket::GetInfo { challenge, .. }) = decode(&replies[0].1) else {
            panic!("no getinfo");
        };
        let late = encode(&MasterPacket::InfoResponse {
            challenge,
            protocol: GAME_PROTOCOL,
            game: GAME_TAG.into(),
        });
        master.handle(forged, &late, now + Duration::from_secs(21));
        assert_eq!(master.stats().listed, 0);
    }

    #[test]
    fn limits_per_address_and_overall() {
        let mut master = Master::new(MasterConfig {
            max_per_address: 2,
            max_servers: 3,
            ..MasterConfig::default()
        });
        let now = Instant::now();
        announce(&mut master, addr("192.0.2.1:1"), now);
        announce(&mut master, addr("192.0.2.1:2"), now);
        assert!(
            master
                .handle(addr("192.0.2.1:3"), &heartbeat(), now)
                .is_empty()
        );
        // A listed server still gets its refresh.
        assert_eq!(
            master.handle(addr("192.0.2.1:2"), &heartbeat(), now).len(),
            1
        );
        announce(&mut master, addr("[2001:db8::1]:1"), now);
        assert!(
            master
                .handle(addr("[2001:db8::2]:1"), &heartbeat(), now)
                .is_empty()
        );
        let refused = master.stats().refused;
        assert_eq!((refused.per_address, refused.full), (1, 1));
        assert_eq!(master.stats().listed, 3);
    }

    #[test]
    fn ipv6_sixty_fours_share_a_limit() {
        let mut master = Master::new(MasterConfig {
            max_per_address: 1,
            ..MasterConfig::default()
        });
        let now = Instant::now();
        announce(&mut master, addr("[2001:db8::1]:1"), now);
        assert!(
            master
                .handle(addr("[2001:db8::ffff:2]:1"), &heartbeat(), now)
                .is_empty()
        );
        announce(&mut master, addr("[2001:db8:0:1::1]:1"), now);
    }

    #[test]
    fn challenges_and_lists_are_budgeted() {
        let mut master = Master::new(MasterConfig {
            challenges: ShareRates::all(Rate::new(3.0, 3.0)),
            lists: ShareRates::all(Rate::new(1.0, 1.0)),
            ..MasterConfig::default()
        });
        let now = Instant::now();
        let sent = (0..10)
            .filter(|i| {
                !master
                    .handle(addr(&format!("192.0.2.{i}:1")), &heartbeat(), now)
                    .is_empty()
            })
            .count();
        assert_eq!(sent, 3);
        assert_eq!(master.stats().refused.rate, 7);
        let later = now + Duration::from_secs(1);
        let client = addr("198.51.100.1:5000");
        assert!(!list_packets(&mut master, client, 1, later).is_empty());
        assert!(list_packets(&mut master, client, 1, later).is_empty());
        assert_eq!(master.stats().refused.rate, 8);
        assert_eq!(master.stats().lists, 1);
    }

    #[test]
    fn one_host_flooding_lists_or_heartbeats_leaves_others_served() {
        // One host holds a valid challenge and asks for the list 5,000 times a second
        // (for a protocol with no servers, so each answer is tiny), and floods
        // heartbeats as fast: before, both budgets were everyone's, so honest browsers
        // got no list and real servers no getinfo.
        let mut master = Master::new(MasterConfig::default());
        let t0 = Instant::now();
        let flooder = addr("203.0.113.1:5000");
        let browser = addr("203.0.113.2:5000");
        let stranger = addr("198.51.100.9:5000");
        let server = addr("192.0.2.77:27015");
        announce(&mut master, server, t0);
        let first = encode(&MasterPacket::GetServers {
            protocol: 99,
            challenge: None,
        });
        let Ok(MasterPacket::Challenge(c)) = decode(&master.handle(flooder, &first, t0)[0].1)
        else {
            panic!("no challenge");
        };
        let flood = encode(&MasterPacket::GetServers {
            protocol: 99,
            challenge: Some(c),
        });
        let (mut honest_lists, mut asked) = (0, 0);
        for ms in 1..=2000u64 {
            let now = t0 + Duration::from_millis(ms);
            for _ in 0..5 {
                master.handle(flooder, &flood, now);
                master.handle(flooder, &heartbeat(), now);
            }
            if ms % 500 == 0 {
                for client in [browser, stranger] {
                    asked += 1;
                    if list(&mut master, client, GAME_PROTOCOL, now) == vec![server] {
                        honest_lists += 1;
                    }
                }
                // The real server's refresh still gets its getinfo.
                assert_eq!(master.handle(server, &heartbeat(), now).len(), 1);
            }
        }
        assert_eq!(honest_lists, asked);
        assert!(master.stats().refused.rate > 19_000, "{:?}", master.stats());
    }

    #[test]
    fn never_larger_to_the_unproven_and_never_panics() {
        let mut master = Master::new(MasterConfig::default());
        let now = Instant::now();
        let seeds = [
            heartbeat(),
            encode(&MasterPacket::GetServers {
                protocol: 1,
                challenge: None,
            }),
            encode(&MasterPacket::InfoResponse {
                challenge: 5,
                protocol: 1,
                game: GAME_TAG.into(),
            }),
            encode(&MasterPacket::GetServers {
                protocol: 1,
                challenge: Some(7),
            }),
        ];
        let mut rng = Rng(99);
        for i in 0..30_000 {
            let bytes = rng.mutate(&seeds[i % seeds.len()]);
            let from = SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27015));
            for (_, reply) in master.handle(from, &bytes, now) {
                assert!(reply.len() <= bytes.len(), "{bytes:?}");
            }
        }
        assert_eq!(master.stats().listed, 0);
    }
}
