//! Servers from a fixed list, without a fleet: each handed out while it has room, as its
//! A2S answer says. A server is asked at most once a second (its A2S budget is shared by
//! every browser), and tickets handed out since it answered count as its players, so a
//! burst of players fills it without overfilling it. A server that does not answer has
//! no room.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a server's answer stands.
pub const ASK_EVERY: Duration = Duration::from_secs(1);

/// A fixed list of servers and what each last said of its room.
#[derive(Debug, Clone)]
pub struct ServerList {
    servers: Vec<Listed>,
    turn: usize,
}

#[derive(Debug, Clone)]
struct Listed {
    addr: SocketAddr,
    asked: Option<Instant>,
    /// Places left: its answer's free places, less the tickets handed out since.
    room: u32,
}

impl ServerList {
    /// The servers, asked in turn.
    pub fn new(servers: &[SocketAddr]) -> Self {
        Self {
            servers: servers
                .iter()
                .map(|&addr| Listed {
                    addr,
                    asked: None,
                    room: 0,
                })
                .collect(),
            turn: 0,
        }
    }

    /// The next server in turn with room, its place taken; `ask` gives a server's
    /// players and places (`None`: no answer). `None`: every server is full or silent.
    pub fn pick(
        &mut self,
        now: Instant,
        mut ask: impl FnMut(SocketAddr) -> Option<(u8, u8)>,
    ) -> Option<SocketAddr> {
        let n = self.servers.len();
        for i in 0..n {
            let index = (self.turn + i) % n;
            let server = &mut self.servers[index];
            if server
                .asked
                .is_none_or(|at| now.saturating_duration_since(at) >= ASK_EVERY)
            {
                server.asked = Some(now);
                server.room = ask(server.addr).map_or(0, |(players, places)| {
                    u32::from(places.saturating_sub(players))
                });
            }
            if server.room > 0 {
                server.room -= 1;
                self.turn = index + 1;
                return Some(server.addr);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    #[test]
    fn servers_are_handed_out_in_turn_while_they_have_room_and_asked_once_a_second() {
        let mut list = ServerList::new(&[addr(1), addr(2), addr(3)]);
        let t0 = Instant::now();
        let mut asked = Vec::new();
        // 1 has two places, 2 is full, 3 is silent.
        let mut answers = |a: SocketAddr| {
            asked.push(a.port());
            match a.port() {
                1 => Some((6, 8)),
                2 => Some((8, 8)),
                _ => None,
            }
        };
        assert_eq!(list.pick(t0, &mut answers), Some(addr(1)));
        assert_eq!(
            list.pick(t0, &mut answers),
            Some(addr(1)),
            "its second place"
        );
        assert_eq!(list.pick(t0, &mut answers), None, "the tickets filled it");
        assert_eq!(asked, [1, 2, 3], "each asked once within the second");
        // A second later each is asked again: 2 has room now.
        let mut later = |a: SocketAddr| match a.port() {
            2 => Some((7, 8)),
            _ => None,
        };
        assert_eq!(list.pick(t0 + ASK_EVERY, &mut later), Some(addr(2)));
        assert_eq!(list.pick(t0 + ASK_EVERY, &mut later), None);
        assert_eq!(ServerList::new(&[]).pick(t0, |_| Some((0, 8))), None);
    }
}
