//! The game server's side of the master protocol: heartbeats on a schedule, and the
//! answer to each master's `getinfo` that echoes the current heartbeat's nonce. Pure:
//! the caller owns the socket and the clock.

use crate::master_protocol::{GAME_TAG, MASTER_PROTOCOL, MasterPacket, decode, encode};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How often a game server sends heartbeats by default (Quake 3's rate); the master
/// forgets a server after 15 minutes, so two may be lost.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(300);
/// `getinfo` answers allowed per heartbeat: a master asks once, a duplicate is allowed,
/// and a `getinfo` replayed from the path cannot make the server flood a master.
const ANSWERS_PER_HEARTBEAT: u8 = 2;

#[derive(Debug)]
struct MasterLink {
    addr: SocketAddr,
    next: Option<Instant>,
    answers_left: u8,
    /// The nonce of the last heartbeat sent to it, which its `getinfo` must echo.
    nonce: u32,
}

/// Announces one game server to its masters.
#[derive(Debug)]
pub struct Announcer {
    masters: Vec<MasterLink>,
    interval: Duration,
    /// Keyed hashing of a counter: nonces nobody off the path can predict, without a
    /// random number crate.
    secret: RandomState,
    sent: u64,
}

fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

impl Announcer {
    /// An announcer for `masters`, heartbeating every `interval` (the first at once).
    pub fn new(masters: Vec<SocketAddr>, interval: Duration) -> Self {
        Self {
            masters: masters
                .into_iter()
                .map(|addr| MasterLink {
                    addr,
                    next: None,
                    answers_left: 0,
                    nonce: 0,
                })
                .collect(),
            interval,
            secret: RandomState::new(),
            sent: 0,
        }
    }

    /// The heartbeats to send now, each with its master's address.
    pub fn due(&mut self, now: Instant) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut out = Vec::new();
        for m in &mut self.masters {
            if m.next.is_none_or(|t| now >= t) {
                self.sent += 1;
                m.next = Some(now + self.interval);
                m.answers_left = ANSWERS_PER_HEARTBEAT;
                m.nonce = self.secret.hash_one(self.sent) as u32;
                let heartbeat = encode(&MasterPacket::Heartbeat {
                    game: GAME_TAG.into(),
                    protocol: MASTER_PROTOCOL,
                    nonce: m.nonce,
                });
                out.push((m.addr, heartbeat));
            }
        }
        out
    }

    /// Makes every heartbeat due now: the address masters should list changed (a relay
    /// opened the game on a port of its own).
    pub fn announce_now(&mut self) {
        for m in &mut self.masters {
            m.next = None;
        }
    }

    /// The info response to a master's `getinfo`, echoing its challenge with
    /// `protocol_version` (the game protocol). Anything else, from anyone else, without
    /// the current heartbeat's nonce, or past the answers one heartbeat allows, gets
    /// `None` and spends nothing.
    pub fn answer(
        &mut self,
        from: SocketAddr,
        bytes: &[u8],
        protocol_version: u32,
    ) -> Option<Vec<u8>> {
        let from = canonical(from);
        let master = self
            .masters
            .iter_mut()
            .find(|m| canonical(m.addr) == from && m.answers_left > 0)?;
        let Ok(MasterPacket::GetInfo { challenge, nonce }) = decode(bytes) else {
            return None;
        };
        if nonce != master.nonce {
            return None;
        }
        master.answers_left -= 1;
        Some(encode(&MasterPacket::InfoResponse {
            challenge,
            protocol: protocol_version,
            game: GAME_TAG.into(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master() -> SocketAddr {
        "192.0.2.50:27950".parse().unwrap()
    }

    #[test]
    fn heartbeats_follow_the_interval() {
        let mut a = Announcer::new(vec![master()], Duration::from_secs(300));
        let t0 = Instant::now();
        let first = a.due(t0);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].0, master());
        assert!(matches!(
            decode(&first[0].1),
            Ok(MasterPacket::Heartbeat {
                protocol: MASTER_PROTOCOL,
                ..
            })
        ));
        assert!(a.due(t0 + Duration::from_secs(299)).is_empty());
        assert_eq!(a.due(t0 + Duration::from_secs(300)).len(), 1);
        a.announce_now();
        assert_eq!(a.due(t0 + Duration::from_secs(301)).len(), 1, "at once");
        assert!(a.due(t0 + Duration::from_secs(302)).is_empty());
    }

    /// The nonce a heartbeat carries.
    fn nonce_of(heartbeat: &[u8]) -> u32 {
        match decode(heartbeat) {
            Ok(MasterPacket::Heartbeat { nonce, .. }) => nonce,
            other => panic!("not a heartbeat: {other:?}"),
        }
    }

    #[test]
    fn answers_only_its_masters_and_only_after_a_heartbeat() {
        let mut a = Announcer::new(vec![master()], Duration::from_secs(300));
        let early = encode(&MasterPacket::GetInfo {
            challenge: 0xabc,
            nonce: 0,
        });
        assert_eq!(a.answer(master(), &early, 11), None, "no heartbeat yet");
        let nonce = nonce_of(&a.due(Instant::now())[0].1);
        let getinfo = encode(&MasterPacket::GetInfo {
            challenge: 0xabc,
            nonce,
        });
        let stranger: SocketAddr = "192.0.2.51:27950".parse().unwrap();
        assert_eq!(a.answer(stranger, &getinfo, 11), None);
        assert_eq!(a.answer(master(), b"\xFF\xFF\xFF\xFFgetinfo", 11), None);
        let mapped: SocketAddr = "[::ffff:192.0.2.50]:27950".parse().unwrap();
        let reply = a.answer(mapped, &getinfo, 11).expect("answered");
        assert_eq!(
            decode(&reply),
            Ok(MasterPacket::InfoResponse {
                challenge: 0xabc,
                protocol: 11,
                game: GAME_TAG.into()
            })
        );
        assert!(a.answer(master(), &getinfo, 11).is_some());
        assert_eq!(a.answer(master(), &getinfo, 11), None, "two per heartbeat");
    }

    #[test]
    fn forged_getinfos_without_the_heartbeats_nonce_spend_nothing() {
        // Forged in the master's name with wrong nonces (and challenges), many of them:
        // before, the first two used up the heartbeat's answers and the master's real
        // getinfo was dropped, so the server fell off the list.
        let mut a = Announcer::new(vec![master()], Duration::from_secs(300));
        let t0 = Instant::now();
        let nonce = nonce_of(&a.due(t0)[0].1);
        for forged in 0..1000u32 {
            let guess = nonce.wrapping_add(1 + forged);
            let bytes = encode(&MasterPacket::GetInfo {
                challenge: forged,
                nonce: guess,
            });
            assert_eq!(a.answer(master(), &bytes, 11), None);
        }
        let real = encode(&MasterPacket::GetInfo {
            challenge: 0x5eed,
            nonce,
        });
        assert!(a.answer(master(), &real, 11).is_some());
        // The next heartbeat has a new nonce; the old one no longer counts.
        let next = nonce_of(&a.due(t0 + Duration::from_secs(300))[0].1);
        assert_ne!(next, nonce);
        assert_eq!(a.answer(master(), &real, 11), None);
    }
}
