//! LAN discovery: A2S_INFO broadcast to the usual game ports, challenges followed by
//! unicast, Sightline servers collected until the timeout.

use crate::a2s::{GAME_FOLDER, Response, ServerInfo};
use crate::client::{Ask, Finished, Session};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

/// The ports LAN discovery asks by default: Source's usual game ports.
pub const LAN_PORTS: RangeInclusive<u16> = 27015..=27020;
/// Most servers one discovery talks to, so a hostile LAN cannot grow it without bound.
const MAX_DISCOVERED: usize = 256;

/// Finds Sightline servers on the local network: broadcasts A2S_INFO to
/// 255.255.255.255 and asks 127.0.0.1 (a broadcast is not always looped back) on each
/// of `ports`, and gives every distinct address that answered within `timeout`, with its
/// info and ping. Servers of other games are left out. A socket that cannot be opened
/// gives an empty list.
pub fn discover_lan(
    ports: RangeInclusive<u16>,
    timeout: Duration,
) -> Vec<(SocketAddr, ServerInfo, Duration)> {
    discover_on(
        &[
            IpAddr::V4(Ipv4Addr::BROADCAST),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        ],
        ports,
        timeout,
    )
}

/// [`discover_lan`] with an explicit list of (broadcast or unicast) IPv4 addresses to
/// ask; other addresses are skipped.
pub fn discover_on(
    targets: &[IpAddr],
    ports: RangeInclusive<u16>,
    timeout: Duration,
) -> Vec<(SocketAddr, ServerInfo, Duration)> {
    let any = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
    let Ok(mut session) = Session::new(any) else {
        return Vec::new();
    };
    if session.socket().set_broadcast(true).is_err() {
        return Vec::new();
    }
    let sent_at = Instant::now();
    let deadline = sent_at + timeout;
    let first = crate::a2s::encode_request(crate::a2s::Request::Info { challenge: None });
    for ip in targets.iter().filter(|ip| ip.is_ipv4()) {
        for port in ports.clone() {
            // An unreachable broadcast (no network) just finds nothing there.
            let _ = session.socket().send_to(&first, (*ip, port));
        }
    }
    let mut found: Vec<(SocketAddr, ServerInfo, Duration)> = Vec::new();
    let mut answered: HashSet<SocketAddr> = HashSet::new();
    let mut done = |addr: SocketAddr, r: Finished| {
        if let Ok((Response::Info(info), ping)) = r
            && info.folder == GAME_FOLDER
        {
            found.push((addr, info, ping));
        }
    };
    let mut stray = |session: &mut Session,
                     from: SocketAddr,
                     packet: &[u8],
                     done: &mut dyn FnMut(SocketAddr, Finished)| {
        // Each address gets one exchange; later strays from it are late duplicates.
        if answered.len() < MAX_DISCOVERED && answered.insert(from) && !session.has(from) {
            session.adopt(from, Ask::Info, sent_at, deadline, packet, &mut &mut *done);
        }
    };
    while Instant::now() < deadline {
        session.step(Some(deadline), &mut done, &mut stray);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::tests::TestServer;

    #[test]
    fn finds_a_server_on_loopback_once() {
        let server = TestServer::start("127.0.0.1:0".parse().unwrap(), 1).unwrap();
        let port = server.addr.port();
        // Asked twice (two unicast targets naming it), listed once.
        let found = discover_on(
            &[
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V4(Ipv4Addr::LOCALHOST),
            ],
            port..=port,
            Duration::from_millis(500),
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, server.addr);
        assert_eq!(found[0].1.folder, GAME_FOLDER);
    }

    #[test]
    fn discover_lan_includes_loopback() {
        let server = TestServer::start("0.0.0.0:0".parse().unwrap(), 1).unwrap();
        let port = server.addr.port();
        let found = discover_lan(port..=port, Duration::from_millis(500));
        assert!(
            found
                .iter()
                .any(|(a, _, _)| *a == SocketAddr::from((Ipv4Addr::LOCALHOST, port))),
            "{found:?}"
        );
    }
}
