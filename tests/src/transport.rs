//! The transport under attack, against the real binaries over real UDP: datagrams whose
//! netcode header is crafted, renet packets crafted by hand (with renetcode directly,
//! holding a real connect token) to the server and from a malicious server to the client,
//! reliable messages hoarded ahead of a missing one, a flood of impossible slices, a client
//! that never acknowledges, and two connections resuming one player at once.

use crate::support::{Attacker, Server, check_honest, honest};
use crate::support::{binaries, field, wait};
use renetcode::{
    ClientAuthentication, NetcodeClient, NetcodeServer, ServerAuthentication, ServerConfig,
    ServerResult,
};
use sightline_net::NETCODE_PROTOCOL_ID;
use sightline_net::{ClientSecurity, RenetClient, fetch_token, unbundle};
use sightline_protocol::{
    Channel, ClientDatagram, ClientMessage, InputPacket, PROTOCOL_VERSION, ServerMessage, Wire,
};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn unix_now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

/// A renet packet written by hand: an unreliable slice (type 3) of a message on channel 1.
fn slice(seq: u8, message: u8, index: u8, count: u32, len: usize) -> Vec<u8> {
    let mut p = vec![3, seq, 1, message, index];
    // The count as a 4-byte QUIC varint, so a large one fits.
    p.extend_from_slice(&(count | 0x8000_0000).to_be_bytes());
    p.extend_from_slice(&(len as u16 | 0x4000).to_be_bytes());
    p.extend(std::iter::repeat_n(0xab, len));
    p
}

/// A client speaking netcode itself, with a real token: a renet connection for the game's
/// messages, and any bytes sent as renet packets besides.
struct RawClient {
    socket: UdpSocket,
    netcode: NetcodeClient,
    renet: RenetClient,
    last: Instant,
    /// Bytes of datagrams the server sent it, and when the last came.
    received: u64,
    heard_at: Instant,
    /// Whether renet's acknowledgements are left out of what it sends.
    mute: bool,
}

impl RawClient {
    fn connect(server: SocketAddr) -> Self {
        let token = fetch_token(server, "", None).expect("a token").token;
        let netcode = NetcodeClient::new(
            unix_now(),
            ClientAuthentication::Secure {
                connect_token: token,
            },
        )
        .unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        let mut renet = RenetClient::new(sightline_protocol::connection_config());
        renet.set_connected();
        let mut client = Self {
            socket,
            netcode,
            renet,
            last: Instant::now(),
            received: 0,
            heard_at: Instant::now(),
            mute: false,
        };
        let start = Instant::now();
        while !client.netcode.is_connected() {
            assert!(start.elapsed() < Duration::from_secs(5), "no handshake");
            client.pump_for(0.01);
        }
        client
    }

    fn pump(&mut self) {
        let now = Instant::now();
        let dt = now - self.last;
        self.last = now;
        let mut buffer = [0u8; 1500];
        while let Ok((len, _)) = self.socket.recv_from(&mut buffer) {
            self.received += len as u64;
            self.heard_at = now;
            if let Some(payload) = self.netcode.process_packet(&mut buffer[..len])
                && let Ok(packets) = unbundle(payload)
            {
                packets
                    .into_iter()
                    .for_each(|p| self.renet.process_packet(p));
            }
        }
        self.renet.update(dt);
        if let Some((packet, addr)) = self.netcode.update(dt) {
            let _ = self.socket.send_to(packet, addr);
        }
        if self.netcode.is_connected() {
            for packet in self.renet.get_packets_to_send() {
                if !(self.mute && packet[0] == 4) {
                    self.inject(&packet);
                }
            }
        }
    }

    fn pump_for(&mut self, seconds: f64) {
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        while Instant::now() < end {
            self.pump();
            std::thread::sleep(Duration::from_millis(4));
        }
    }

    /// Sends `packet` as a renet packet, whatever it holds.
    fn inject(&mut self, packet: &[u8]) {
        if let Ok((addr, payload)) = self.netcode.generate_payload_packet(packet) {
            let _ = self.socket.send_to(payload, addr);
        }
    }

    fn reliable(&mut self) -> Vec<ServerMessage> {
        std::iter::from_fn(|| self.renet.receive_message(Channel::Reliable))
            .filter_map(|b| ServerMessage::decode(&b).ok())
            .collect()
    }

    /// Says Hello and pumps until the Welcome.
    fn join(&mut self, name: &str) {
        let hello = ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: name.into(),
            resume: None,
            player_key: None,
        };
        self.renet
            .send_message(Channel::Reliable, hello.encode().unwrap());
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            self.pump_for(0.02);
            if self
                .reliable()
                .iter()
                .any(|m| matches!(m, ServerMessage::Welcome(_)))
            {
                return;
            }
        }
        panic!("no Welcome for {name}");
    }

    /// Pumps until the server refuses it, returning why; `None` if it never does.
    fn refusal(&mut self, limit: f64) -> Option<String> {
        let end = Instant::now() + Duration::from_secs_f64(limit);
        while Instant::now() < end {
            self.pump_for(0.02);
            let why = self.reliable().into_iter().find_map(|m| match m {
                ServerMessage::Refused { reason } => Some(reason),
                _ => None,
            });
            if why.is_some() {
                return why;
            }
        }
        None
    }
}

#[test]
fn crafted_transport_packets_cost_the_server_nothing_and_their_senders_their_connection() {
    let mut server = Server::start(60, &["--max-per-address", "16"]);
    let player = honest(server.addr, 14);

    // The packet that stopped renet 2.0.1: a slice index past its count, before Hello.
    // Then slices that disagree on their count, reliable slices, unknown types and
    // channels, a truncated acknowledgement: each refused, and the sender struck.
    let mut crasher = RawClient::connect(server.addr);
    crasher.inject(&slice(0, 0, 5, 3, 1200));
    crasher.pump_for(0.2);
    assert!(
        server.child_running(),
        "one packet stopped the server:\n{}",
        server.log()
    );
    // Datagrams whose netcode header renetcode 2.0.0 reads past its arrays (a nine-byte
    // sequence number) or its end (a tag cut short), from a connected address: before the
    // transport checked headers, either one stopped the server. Junk now, counted.
    let mut cut_short = vec![0; 18];
    cut_short[0] = 0x85;
    for datagram in [vec![0x95; 18], cut_short] {
        crasher.socket.send_to(&datagram, server.addr).unwrap();
    }
    crasher.pump_for(0.2);
    assert!(
        server.child_running(),
        "one datagram stopped the server:\n{}",
        server.log()
    );
    let mut variants = vec![
        slice(1, 1, 0, 2, 1200),
        slice(2, 1, 1, 3, 10),
        vec![2, 3, 0, 0, 0, 2, 4, 1, 2, 3, 4],
        vec![9, 4, 0],
        vec![1, 5, 7, 0, 0],
        vec![4, 6, 3, 9, 0],
    ];
    for i in 0..40u8 {
        variants.push(slice(10 + i, 20 + i, 9, 2, 1200));
    }
    for p in &variants {
        crasher.inject(p);
    }
    let why = crasher.refusal(3.0).expect("the crasher is kicked");
    assert!(why.contains("malformed"), "{why}");

    // Oversized slices by the thousand, as fast as the socket takes them: counted and
    // struck, never a log line each.
    let mut slicer = RawClient::connect(server.addr);
    slicer.join("slicer");
    for i in 0..5000u32 {
        slicer.inject(&slice((i % 60) as u8, (i % 60) as u8, 0, 1_000_000, 1200));
        if i % 500 == 0 {
            slicer.pump();
        }
    }
    let why = slicer.refusal(3.0).expect("the slicer is kicked");
    assert!(why.contains("malformed"), "{why}");

    // Reliable messages numbered far ahead of one it never sends, which renet would hold
    // waiting for it (empty ones, which its memory limit does not count, without bound).
    // Refused, and the sender struck.
    let mut hoarder = RawClient::connect(server.addr);
    hoarder.join("hoarder");
    for id in 10_000..10_050u16 {
        let mut p = vec![0, 60, 0, 0, 1];
        p.extend_from_slice(&(id | 0x4000).to_be_bytes());
        p.extend_from_slice(&[1, 0x2a]);
        hoarder.inject(&p);
    }
    let why = hoarder.refusal(3.0).expect("the hoarder is kicked");
    assert!(why.contains("malformed"), "{why}");

    // Plays (sends a command a tick) but never acknowledges anything it is sent: dropped
    // (silently, as a departure) within a few seconds, having been sent little.
    let mut mute = RawClient::connect(server.addr);
    mute.join("mute");
    mute.mute = true;
    let (start, mut seq) = (Instant::now(), 1);
    while mute.heard_at.elapsed() < Duration::from_secs(1)
        && start.elapsed() < Duration::from_secs(10)
    {
        let packet = InputPacket::new(0, 0, None, &[crate::support::cmd(seq)]);
        let input = ClientDatagram::Input(packet).encode().unwrap();
        mute.renet.send_message(Channel::Unreliable, input);
        seq += 1;
        mute.pump_for(1.0 / 64.0);
    }
    let lasted = mute.heard_at.duration_since(start);
    eprintln!(
        "a client that never acknowledges: dropped after {lasted:?}, sent {} bytes",
        mute.received
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "a client that never acknowledges stayed"
    );
    assert!(
        lasted < Duration::from_secs(7),
        "dropped only after {lasted:?}"
    );
    assert!(
        mute.received < 150_000,
        "sent {} bytes in {lasted:?}",
        mute.received
    );

    let summary = check_honest(player, 14);
    let (log, status) = server.stop();
    eprintln!("{status}\n{} log lines", log.lines().count());
    assert!(field(&status, "bad_packets") >= 100, "{status}");
    assert!(field(&status, "ack_stalls") >= 1, "{status}");
    assert!(field(&status, "kicks") >= 3, "{status}");
    assert!(field(&status, "junk_datagrams") >= 2, "{status}");
    crate::support::assert_tick_in_budget(&status);
    assert!(
        log.lines().count() < 100,
        "{} log lines:\n{log}",
        log.lines().count()
    );
    assert!(log.contains("honest joined"), "{log}\n{summary}");
}

#[test]
fn a_crafted_packet_from_a_malicious_server_is_refused_by_the_client() {
    // An insecure netcode server in this process that speaks renet by hand.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_nonblocking(true).unwrap();
    let addr = socket.local_addr().unwrap();
    let mut netcode = NetcodeServer::new(ServerConfig {
        current_time: unix_now(),
        max_clients: 4,
        protocol_id: NETCODE_PROTOCOL_ID,
        public_addresses: vec![addr],
        authentication: ServerAuthentication::Unsecure,
    });
    let client = Command::new(binaries().join("sightline"))
        .args(["--headless", "--insecure", "--connect", &addr.to_string()])
        .args(["--name", "victim", "--run-seconds", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("client starts");
    let bad = [
        slice(0, 0, 5, 3, 1200),
        slice(1, 1, 0, 2, 1200),
        slice(2, 1, 2, 4, 1200),
        vec![2, 3, 0, 0, 0, 2, 4, 1, 2, 3, 4],
    ];
    let (start, mut last, mut sent) = (Instant::now(), Instant::now(), 0);
    let mut buffer = [0u8; 1500];
    while start.elapsed() < Duration::from_secs(4) {
        netcode.update(last.elapsed());
        last = Instant::now();
        while let Ok((len, from)) = socket.recv_from(&mut buffer) {
            match netcode.process_packet(from, &mut buffer[..len]) {
                ServerResult::PacketToSend { addr, payload }
                | ServerResult::ClientConnected { addr, payload, .. } => {
                    let _ = socket.send_to(payload, addr);
                }
                _ => {}
            }
        }
        for id in netcode.clients_id() {
            if let ServerResult::PacketToSend { addr, payload } = netcode.update_client(id) {
                let _ = socket.send_to(payload, addr);
            }
            for p in &bad {
                if let Ok((addr, payload)) = netcode.generate_payload_packet(id, p) {
                    let _ = socket.send_to(payload, addr);
                    sent += 1;
                }
            }
            // Headers renetcode 2.0.0 reads past their end: a nine-byte sequence number,
            // a tag cut short (what anyone forging the server's address could send).
            if let Some(addr) = netcode.client_addr(id) {
                let _ = socket.send_to(&[0x95; 18], addr);
                let _ = socket.send_to(
                    &[0x85, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0],
                    addr,
                );
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = wait(client, Duration::from_secs(30), "client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(sent > 0, "the client never connected:\n{stdout}\n{stderr}");
    assert!(
        !stderr.contains("panicked") && out.status.code() != Some(101),
        "the client fell over:\n{stdout}\n{stderr}"
    );
    let summary = stdout
        .lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("no summary:\n{stdout}\n{stderr}"));
    assert!(field(summary, "malformed") >= 4, "{summary}");
}

#[test]
fn two_connections_resuming_one_player_at_once_get_it_once() {
    let server = Server::start(40, &["--max-per-address", "16"]);
    let watcher = honest(server.addr, 8);
    let security = ClientSecurity::default();
    let mut owner = Attacker::connect(server.addr, &security);
    let welcome = owner.join("twin");
    let (held, secret) = (welcome.your_id.expect("joined as a player"), welcome.resume);
    // Two more connections, ready to speak; both present the secret in one breath.
    let mut twins = [
        Attacker::connect(server.addr, &security),
        Attacker::connect(server.addr, &security),
    ];
    for twin in &mut twins {
        assert!(twin.connected(5.0));
    }
    for twin in &mut twins {
        let hello = ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: "twin".into(),
            resume: Some(secret),
            player_key: None,
        };
        twin.send(Channel::Reliable, hello.encode().unwrap());
    }
    for twin in &mut twins {
        twin.app.update();
    }
    let mut ids = Vec::new();
    for twin in &mut twins {
        let start = Instant::now();
        let mut id = None;
        while id.is_none() && start.elapsed() < Duration::from_secs(5) {
            twin.pump(0.02);
            id = twin.reliable().into_iter().find_map(|m| match m {
                ServerMessage::Welcome(w) => w.your_id,
                _ => None,
            });
        }
        ids.push(id.expect("a Welcome"));
    }
    assert_eq!(
        ids.iter().filter(|id| **id == held).count(),
        1,
        "the held player went to {ids:?}"
    );
    assert_ne!(ids[0], ids[1]);
    // Whoever plays on sees one player per id: no snapshot is malformed.
    for twin in &mut twins {
        twin.pump(0.5);
        twin.snapshots();
    }
    drop((owner, twins));
    check_honest(watcher, 8);
    let (log, _) = server.stop();
    assert_eq!(log.matches("twin came back").count(), 1, "{log}");
}
