//! The table of fuzz targets: each body with its seeds and the dictionary that helps
//! libFuzzer past the decoder's first checks.

use crate::{console, map, master, query, rcon, relay, seeds, server, token, transport, wire};

/// One fuzz target.
pub struct Target {
    /// Its name: `fuzz/fuzz_targets/<name>.rs` and the seed folder `fuzz/corpus/<name>/`.
    pub name: &'static str,
    /// Runs one input, panicking when an invariant breaks.
    pub body: fn(&[u8]),
    /// Valid inputs to start from; checked in as `fuzz/corpus/<name>/seed-<n>`.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Fragments worth splicing into inputs: keywords, separators, edge values.
    pub dictionary: &'static [&'static [u8]],
    /// Whether the input is text, where generated inputs should stay UTF-8 to get past
    /// the first check.
    pub text: bool,
    /// About how many ordinary inputs one of its inputs costs (1 for most; more for a
    /// body doing key work): the stable run generates that many times fewer, so it
    /// stays a few seconds.
    pub cost: usize,
}

/// Bytes that matter to bincode: varint prefixes (251 to 253 announce 2, 4 and 8 bytes
/// follow), NaN and infinity as little-endian f32, and the largest values.
const WIRE_DICTIONARY: &[&[u8]] = &[
    &[0],
    &[1],
    &[250],
    &[251, 0, 0],
    &[251, 0xff, 0xff],
    &[252, 0xff, 0xff, 0xff, 0xff],
    &[253, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    // The longest LEB128 varint (u64::MAX), which the input packets' own fields use.
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    &[0x00, 0x00, 0xc0, 0x7f],
    &[0x00, 0x00, 0x80, 0x7f],
    &[0x00, 0x00, 0x80, 0xff],
    &[64],
    &[0xc3, 0xa9],
    &[0x07],
];

/// Bytes that matter to the relay protocol: its magic, each kind, the address families,
/// the probe's prefix.
const RELAY_DICTIONARY: &[&[u8]] = &[
    b"SLR\x01",
    &[1],
    &[2],
    &[3],
    &[4],
    &[5],
    &[129],
    &[130],
    &[131],
    &[132],
    &[133],
    &[134],
    &[4, 127, 0, 0, 1],
    &[6],
    b"\xFF\xFF\xFF\xFFslrp",
];

/// Bytes that matter to a demo: its magic and versions, record lengths at and past the
/// cap, the records' tags, and the commands' flags (held, a raw angle, a sequence jump).
const DEMO_DICTIONARY: &[&[u8]] = &[
    b"SLDEMO\r\n",
    &[1, 0, 0, 0],
    &[0x80, 0x80, 0x80, 0x02],
    &[0x81, 0x80, 0x80, 0x02],
    &[0xff, 0xff, 0xff, 0xff, 0x0f],
    &[0],
    &[1],
    &[2],
    &[3],
    &[4],
    &[5],
    &[6],
    &[7],
    &[0x80, 0x02],
    &[0x80, 0x08],
    &[0x00, 0x00, 0xc0, 0x7f],
];

/// Bytes that matter to renet's packets: their types, QUIC varint length prefixes, a
/// slice's 1200 bytes and the largest counts, the bundle marker.
const TRANSPORT_DICTIONARY: &[&[u8]] = &[
    &[0],
    &[1],
    &[2],
    &[3],
    &[4],
    &[0xb5],
    &[0x44, 0xb0],
    &[0x40, 0x00],
    &[0x80, 0x00, 0x00, 0x00],
    &[0xbf, 0xff, 0xff, 0xff],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    &[0x00, 0x01],
    &[0xff, 0xff],
];

const MAP_DICTIONARY: &[&[u8]] = &[
    b"name: \"m\",",
    b"sky: (0.5, 0.5, 0.5),",
    b"sun: (direction: (0.0, -1.0, 0.0), color: (1.0, 1.0, 1.0), illuminance: 1.0),",
    b"ambient: (color: (1.0, 1.0, 1.0), brightness: 1.0),",
    b"brushes: [",
    b"Box(min: (-1.0, -1.0, -1.0), max: (1.0, 1.0, 1.0), color: (0.5, 0.5, 0.5)),",
    b"Rotated(center: (0.0, 0.0, 0.0), half_extents: (1.0, 1.0, 1.0), yaw: 45.0, color: (0.1, 0.1, 0.1)),",
    b"spawns: [(pos: (0.0, 0.0, 0.0), yaw: 90.0)],",
    b"items: [(kind: Ammo, pos: (0.0, 0.0, 0.0))],",
    b"lights: [(pos: (0.0, 1.0, 0.0), color: (1.0, 1.0, 1.0), intensity: 1.0, range: 1.0)],",
    b"NaN",
    b"inf",
    b"-inf",
    b"1e39",
    b"1e-40",
    b"-0.0",
    b"1000.0",
    b"360.0",
    b"(",
    b")",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"//",
    b"/*",
    b"*/",
    b"\r\n",
    b"Some(",
    b"#![enable(implicit_some)]",
];

const CONSOLE_DICTIONARY: &[&[u8]] = &[
    b";",
    b"\"",
    b"//",
    b"/",
    b" ",
    b"\t",
    b"\n",
    b"\r",
    b"\0",
    b"+",
    b"-",
    b"--name",
    b"exec ",
    b"exec config.cfg\n",
    b"bind ",
    b"unbind ",
    b"unbindall",
    b"echo ",
    b"help ",
    b"cvarlist",
    b"clear",
    b"name ",
    b"cl_netgraph ",
    b"cl_interp ",
    b"cl_timenudge ",
    b"r_vsync ",
    b"r_msaa ",
    b"version ",
    b"connect ",
    b"1e308",
    b"NaN",
    b"0.5",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\\\"",
    b"\\\\",
    b"\\u{",
    b"}",
    b"\\u{a}",
];

/// Bytes that matter to Source RCON: size fields at and past their limits (10, 4096,
/// 4097, negative), the packet types, the ids clients use, the two zeros that end a
/// packet, and commands.
const RCON_DICTIONARY: &[&[u8]] = &[
    &[10, 0, 0, 0],
    &[0x00, 0x10, 0, 0],
    &[0x01, 0x10, 0, 0],
    &[0xff, 0xff, 0xff, 0xff],
    &[0xff, 0xff, 0xff, 0x7f],
    &[3, 0, 0, 0],
    &[2, 0, 0, 0],
    &[0, 0, 0, 0],
    &[0, 0],
    b"status",
    b"say ",
    b"ban ",
    b"\"",
    b";",
];

/// Bytes that matter to server queries: the connectionless and split headers, the A2S
/// request and response types and the info query's payload, the challenge slot's
/// placeholders, the master protocol's words and its list's end, and the two-byte
/// lengths (with the control byte for the server's datagrams) that frame an input.
const QUERY_DICTIONARY: &[&[u8]] = &[
    &[0xFF, 0xFF, 0xFF, 0xFF],
    &[0xFE, 0xFF, 0xFF, 0xFF],
    b"TSource Engine Query\0",
    b"U",
    b"V",
    b"A",
    b"I",
    b"D",
    b"E",
    &[0, 0, 0, 0],
    &[0x80],
    &[0x08],
    &[0x04],
    &[0x0a, 0x00],
    &[0x1a, 0x00],
    &[0x1e, 0x00],
    &[0x78, 0x05],
    &[0xe0, 0x04],
    b"getinfo ",
    b"heartbeat ",
    b"heartbeat sightline 1",
    b"infoResponse\n\\challenge\\",
    b"\\protocol\\",
    b"\\gamename\\sightline",
    b"getservers ",
    b"challenge ",
    b"getserversResponse",
    b"\\EOT",
    b"00000000",
    b"ffffffff",
];

/// Bytes that matter to the token exchange: its magic and versions, the password and
/// near misses, frame lengths at the finish's cap and past it, and the control bytes of
/// the body's operations.
const TOKEN_DICTIONARY: &[&[u8]] = &[
    b"SLTX",
    b"SLTX\x01",
    &[1],
    &[2],
    b"hunter2",
    b"hunter3",
    &[0x00, 0x38],
    &[0x00, 0x39],
    &[0xff, 0xff],
    &[0x00, 0x00],
    &[token::OPEN],
    &[token::HELLO],
    &[token::FINISH],
    &[token::RAW],
    &[token::CLOSE],
    &[token::FLIP],
    &[token::SLOW],
    &[token::BAN],
    &[token::SPLIT | token::HELLO],
    &[0xf0 | token::SLOW],
];

/// Bytes that matter to RCON sessions: the packets' sizes, kinds and ids, the password
/// and a wrong one, the console's commands that answer late or at length, and the
/// control bytes of the body's operations.
const RCON_SESSION_DICTIONARY: &[&[u8]] = &[
    &[10, 0, 0, 0],
    &[0x00, 0x10, 0, 0],
    &[0x01, 0x10, 0, 0],
    &[3, 0, 0, 0],
    &[2, 0, 0, 0],
    &[0, 0, 0, 0],
    &[0xff, 0xff, 0xff, 0xff],
    &[0, 0],
    b"hunter2",
    b"hunter3",
    b"status",
    b"top",
    b"big 48",
    &[rcon::CONNECT],
    &[rcon::SEND],
    &[rcon::CLOSE],
    &[rcon::SLOW],
    &[rcon::HOLD | rcon::SEND],
    &[0xe0 | rcon::SEND],
];

/// Words and separators of the ban file: addresses and prefixes of both families,
/// `never` and Unix times at the edges of u64, quotes and comments.
/// HTTP's words and separators, for the metrics listener.
const HTTP_DICTIONARY: &[&[u8]] = &[
    b"GET ",
    b"HEAD ",
    b"POST ",
    b" HTTP/1.1",
    b" HTTP/1.0",
    b"\r\n",
    b"\r\n\r\n",
    b"\n",
    b": ",
    b"Host",
    b"Content-Length",
    b"Transfer-Encoding: chunked",
    b"/metrics",
    b"/health",
    b"/leaderboard?limit=",
    b"%00",
];

const BAN_DICTIONARY: &[&[u8]] = &[
    b"never",
    b"/24",
    b"/48",
    b"/0",
    b"/32",
    b"/128",
    b"/129",
    b"::",
    b"::ffff:",
    b"203.0.113.0",
    b"2001:db8::",
    b"18446744073709551615",
    b"18446744073709551616",
    b"+1",
    b"\"",
    b"\"\"",
    b" ",
    b"//",
    b";",
    b"\n",
    b"\r\n",
    b"\xc2\x85",
    b"\\\"",
    b"\\\\",
    b"\\u{",
    b"}",
    b"\\u{a}",
    b"\\u{10ffff}",
];

/// Every target, in the order of `fuzz/Cargo.toml`.
pub const TARGETS: &[Target] = &[
    Target {
        name: "transport_from_client",
        body: transport::transport_from_client,
        seeds: seeds::transport_from_client,
        dictionary: TRANSPORT_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "transport_from_server",
        body: transport::transport_from_server,
        seeds: seeds::transport_from_server,
        dictionary: TRANSPORT_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "netcode_datagram",
        body: transport::netcode_datagram,
        seeds: seeds::netcode_datagram,
        dictionary: TRANSPORT_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "client_message",
        body: wire::client_message,
        seeds: seeds::client_message,
        dictionary: WIRE_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "server_message",
        body: wire::server_message,
        seeds: seeds::server_message,
        dictionary: WIRE_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "client_datagram",
        body: wire::client_datagram,
        seeds: seeds::client_datagram,
        dictionary: WIRE_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "server_datagram",
        body: wire::server_datagram,
        seeds: seeds::server_datagram,
        dictionary: WIRE_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "welcome_version",
        body: wire::welcome_version,
        seeds: seeds::welcome_version,
        dictionary: WIRE_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "map_file",
        body: map::map_file,
        seeds: seeds::map_file,
        dictionary: MAP_DICTIONARY,
        text: true,
        cost: 1,
    },
    Target {
        name: "console_line",
        body: console::console_line,
        seeds: seeds::console_line,
        dictionary: CONSOLE_DICTIONARY,
        text: true,
        cost: 1,
    },
    Target {
        name: "plus_commands",
        body: console::plus_commands,
        seeds: seeds::plus_commands,
        dictionary: CONSOLE_DICTIONARY,
        text: true,
        cost: 1,
    },
    Target {
        name: "console_exec",
        body: console::console_exec,
        seeds: seeds::console_exec,
        dictionary: CONSOLE_DICTIONARY,
        text: true,
        cost: 1,
    },
    Target {
        name: "config_file",
        body: console::config_file,
        seeds: seeds::config_file,
        dictionary: CONSOLE_DICTIONARY,
        text: true,
        cost: 1,
    },
    Target {
        name: "rcon_stream",
        body: server::rcon_stream,
        seeds: seeds::rcon_stream,
        dictionary: RCON_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "server_query",
        body: query::server_query,
        seeds: seeds::server_query,
        dictionary: QUERY_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "query_reply",
        body: query::query_reply,
        seeds: seeds::query_reply,
        dictionary: QUERY_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "ban_file",
        body: server::ban_file,
        seeds: seeds::ban_file,
        dictionary: BAN_DICTIONARY,
        text: true,
        cost: 1,
    },
    Target {
        name: "demo_file",
        body: server::demo_file,
        seeds: seeds::demo_file,
        dictionary: DEMO_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "metrics_request",
        body: server::metrics_request,
        seeds: seeds::metrics_request,
        dictionary: HTTP_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "token_exchange",
        body: token::token_exchange,
        seeds: seeds::token_exchange,
        dictionary: TOKEN_DICTIONARY,
        text: false,
        // Each honest hello and finish costs a dozen elliptic-curve multiplications.
        cost: 5,
    },
    Target {
        name: "master_packets",
        body: master::master_packets,
        seeds: seeds::master_packets,
        dictionary: QUERY_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "relay_link",
        body: relay::relay_link,
        seeds: seeds::relay_link,
        dictionary: RELAY_DICTIONARY,
        text: false,
        cost: 1,
    },
    Target {
        name: "rcon_session",
        body: rcon::rcon_session,
        seeds: seeds::rcon_session,
        dictionary: RCON_SESSION_DICTIONARY,
        text: false,
        cost: 1,
    },
];

/// `target`'s dictionary in libFuzzer's format (`fuzz/dict/<name>.dict`): one quoted
/// token a line, bytes outside printable ASCII escaped as `\xNN`.
pub fn libfuzzer_dictionary(target: &Target) -> String {
    let mut out = format!(
        "# {}: written from sightline-fuzzing's TARGETS.\n",
        target.name
    );
    for token in target.dictionary {
        out.push('"');
        for &b in *token {
            match b {
                b'"' | b'\\' => out.push_str(&format!("\\{}", b as char)),
                0x20..=0x7e => out.push(b as char),
                _ => out.push_str(&format!("\\x{b:02X}")),
            }
        }
        out.push_str("\"\n");
    }
    out
}

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
