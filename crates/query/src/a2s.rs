//! Valve's server query packets (A2S, <https://developer.valvesoftware.com/wiki/Server_queries>):
//! the requests a browser sends, the challenge, and the info, player and rules responses.
//!
//! Every packet starts with `FF FF FF FF` and a type byte. Numbers are little-endian,
//! strings null-terminated. Encoders strip NULs and cap each string so a response stays
//! within [`MAX_MESSAGE`]; decoders are total: any bytes give a value or a
//! [`DecodeError`], never a panic.

use crate::split::MAX_MESSAGE;
use crate::wire::{CONNECTIONLESS, DecodeError, Reader, put_cstr, strip_connectionless};

/// The game directory Sightline reports; LAN discovery lists only servers with it.
pub const GAME_FOLDER: &str = "sightline";
/// The game name Sightline reports.
pub const GAME_NAME: &str = "Sightline";

const A2S_INFO: u8 = b'T';
const A2S_PLAYER: u8 = b'U';
const A2S_RULES: u8 = b'V';
const S2A_INFO: u8 = b'I';
const S2A_PLAYER: u8 = b'D';
const S2A_RULES: u8 = b'E';
const S2C_CHALLENGE: u8 = b'A';
const INFO_PAYLOAD: &[u8] = b"Source Engine Query\0";
/// The Source query protocol version the info response announces.
const PROTOCOL: u8 = 17;

const EDF_PORT: u8 = 0x80;
const EDF_STEAM_ID: u8 = 0x10;
const EDF_SOURCE_TV: u8 = 0x40;
const EDF_KEYWORDS: u8 = 0x20;
const EDF_GAME_ID: u8 = 0x01;

/// Longest server or player name sent, in bytes.
const NAME_CAP: usize = 64;
/// Longest map, folder, game or version string sent, in bytes.
const FIELD_CAP: usize = 64;
/// Longest keywords string sent, in bytes.
const KEYWORDS_CAP: usize = 128;
/// Longest rule name or value sent, in bytes.
const RULE_CAP: usize = 128;

/// "No challenge yet": clients send -1 (or 0, as python-a2s does) in the challenge slot.
pub(crate) fn is_placeholder(challenge: u32) -> bool {
    challenge == u32::MAX || challenge == 0
}

/// What a server says about itself in the A2S_INFO response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The server's name, as shown in the browser.
    pub name: String,
    /// The map being played.
    pub map: String,
    /// The game directory: [`GAME_FOLDER`] for Sightline.
    pub folder: String,
    /// The game name: [`GAME_NAME`] for Sightline.
    pub game: String,
    /// Players connected, bots included.
    pub players: u8,
    /// Player slots.
    pub max_players: u8,
    /// Bots among the players.
    pub bots: u8,
    /// Whether joining needs a password.
    pub password: bool,
    /// The server's version.
    pub version: String,
    /// The game mode, e.g. "dm" (A2S keywords).
    pub keywords: String,
    /// The game port (A2S extra data).
    pub port: u16,
}

impl Default for ServerInfo {
    fn default() -> Self {
        Self {
            name: String::new(),
            map: String::new(),
            folder: GAME_FOLDER.to_owned(),
            game: GAME_NAME.to_owned(),
            players: 0,
            max_players: 0,
            bots: 0,
            password: false,
            version: String::new(),
            keywords: String::new(),
            port: 0,
        }
    }
}

/// One player in the A2S_PLAYER response.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayerInfo {
    /// The player's name.
    pub name: String,
    /// Frags.
    pub score: i32,
    /// Seconds connected.
    pub duration: f32,
}

/// A query a client sent, as a server reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// A2S_INFO, with the challenge when the client has one.
    Info {
        /// The echoed challenge; `None` on first contact.
        challenge: Option<u32>,
    },
    /// A2S_PLAYER; the challenge is -1 (or 0) on first contact.
    Players {
        /// The echoed challenge.
        challenge: u32,
    },
    /// A2S_RULES; the challenge is -1 (or 0) on first contact.
    Rules {
        /// The echoed challenge.
        challenge: u32,
    },
}

/// A server's reply, as a client reads it (after reassembling split packets).
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// S2C_CHALLENGE: repeat the request with this value.
    Challenge(u32),
    /// The A2S_INFO response.
    Info(ServerInfo),
    /// The A2S_PLAYER response.
    Players(Vec<PlayerInfo>),
    /// The A2S_RULES response.
    Rules(Vec<(String, String)>),
}

/// Whether `bytes` is a single-packet connectionless packet (`FF FF FF FF`). The split
/// header `FE FF FF FF` is not: clients never send split packets.
pub fn is_connectionless(bytes: &[u8]) -> bool {
    bytes.starts_with(&CONNECTIONLESS)
}

/// Encodes a request. A2S_INFO on first contact is 25 bytes, the others 9.
pub fn encode_request(request: Request) -> Vec<u8> {
    let mut out = CONNECTIONLESS.to_vec();
    match request {
        Request::Info { challenge } => {
            out.push(A2S_INFO);
            out.extend_from_slice(INFO_PAYLOAD);
            if let Some(c) = challenge {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        Request::Players { challenge } => {
            out.push(A2S_PLAYER);
            out.extend_from_slice(&challenge.to_le_bytes());
        }
        Request::Rules { challenge } => {
            out.push(A2S_RULES);
            out.extend_from_slice(&challenge.to_le_bytes());
        }
    }
    out
}

/// Decodes a request. An unknown type byte is [`DecodeError::UnexpectedType`]; bytes
/// after the challenge are ignored, as some clients pad their queries.
pub fn decode_request(bytes: &[u8]) -> Result<Request, DecodeError> {
    let mut r = Reader::new(strip_connectionless(bytes)?);
    match r.u8()? {
        A2S_INFO => {
            if r.take(INFO_PAYLOAD.len())? != INFO_PAYLOAD {
                return Err(DecodeError::Invalid("A2S_INFO payload"));
            }
            let challenge = match r.remaining() {
                0 => None,
                _ => Some(r.u32()?),
            };
            Ok(Request::Info { challenge })
        }
        A2S_PLAYER => Ok(Request::Players {
            challenge: r.u32()?,
        }),
        A2S_RULES => Ok(Request::Rules {
            challenge: r.u32()?,
        }),
        other => Err(DecodeError::UnexpectedType(other)),
    }
}

/// Encodes S2C_CHALLENGE: 9 bytes, no larger than any request that gets it.
pub fn encode_challenge(challenge: u32) -> Vec<u8> {
    let mut out = CONNECTIONLESS.to_vec();
    out.push(S2C_CHALLENGE);
    out.extend_from_slice(&challenge.to_le_bytes());
    out
}

/// The environment byte: the server's operating system.
fn environment() -> u8 {
    if cfg!(target_os = "windows") {
        b'w'
    } else if cfg!(target_os = "macos") {
        b'm'
    } else {
        b'l'
    }
}

/// Encodes the A2S_INFO response (under 500 bytes with the string caps).
pub fn encode_info(info: &ServerInfo) -> Vec<u8> {
    let mut out = CONNECTIONLESS.to_vec();
    out.push(S2A_INFO);
    out.push(PROTOCOL);
    put_cstr(&mut out, &info.name, NAME_CAP);
    put_cstr(&mut out, &info.map, FIELD_CAP);
    put_cstr(&mut out, &info.folder, FIELD_CAP);
    put_cstr(&mut out, &info.game, FIELD_CAP);
    out.extend_from_slice(&0i16.to_le_bytes()); // app id: not a Steam game
    out.extend_from_slice(&[info.players, info.max_players, info.bots]);
    out.push(b'd');
    out.push(environment());
    out.push(u8::from(info.password));
    out.push(0); // VAC
    put_cstr(&mut out, &info.version, FIELD_CAP);
    out.push(EDF_PORT | EDF_KEYWORDS);
    out.extend_from_slice(&info.port.to_le_bytes());
    put_cstr(&mut out, &info.keywords, KEYWORDS_CAP);
    out
}

/// Encodes the A2S_PLAYER response, leaving out the players that would take it past
/// [`MAX_MESSAGE`] (or past 255, the count's limit).
pub fn encode_players(players: &[PlayerInfo]) -> Vec<u8> {
    let mut out = CONNECTIONLESS.to_vec();
    out.push(S2A_PLAYER);
    let count_at = out.len();
    out.push(0);
    let mut entry = Vec::with_capacity(NAME_CAP + 10);
    let mut count = 0u8;
    for player in players {
        entry.clear();
        entry.push(count);
        put_cstr(&mut entry, &player.name, NAME_CAP);
        entry.extend_from_slice(&player.score.to_le_bytes());
        entry.extend_from_slice(&player.duration.to_le_bytes());
        if count == u8::MAX || out.len() + entry.len() > MAX_MESSAGE {
            break;
        }
        out.extend_from_slice(&entry);
        count += 1;
    }
    out[count_at] = count;
    out
}

/// Encodes the A2S_RULES response, leaving out the rules that would take it past
/// [`MAX_MESSAGE`].
pub fn encode_rules(rules: &[(String, String)]) -> Vec<u8> {
    let mut out = CONNECTIONLESS.to_vec();
    out.push(S2A_RULES);
    let count_at = out.len();
    out.extend_from_slice(&[0, 0]);
    let mut entry = Vec::with_capacity(2 * RULE_CAP + 2);
    let mut count = 0u16;
    for (name, value) in rules {
        entry.clear();
        put_cstr(&mut entry, name, RULE_CAP);
        put_cstr(&mut entry, value, RULE_CAP);
        if count == u16::MAX || out.len() + entry.len() > MAX_MESSAGE {
            break;
        }
        out.extend_from_slice(&entry);
        count += 1;
    }
    out[count_at..count_at + 2].copy_from_slice(&count.to_le_bytes());
    out
}

/// Decodes a whole response message (a single packet, or split packets reassembled).
pub fn decode_response(message: &[u8]) -> Result<Response, DecodeError> {
    let mut r = Reader::new(strip_connectionless(message)?);
    match r.u8()? {
        S2C_CHALLENGE => Ok(Response::Challenge(r.u32()?)),
        S2A_INFO => decode_info(&mut r).map(Response::Info),
        S2A_PLAYER => decode_players(&mut r).map(Response::Players),
        S2A_RULES => decode_rules(&mut r).map(Response::Rules),
        other => Err(DecodeError::UnexpectedType(other)),
    }
}

fn decode_info(r: &mut Reader<'_>) -> Result<ServerInfo, DecodeError> {
    let _protocol = r.u8()?;
    let name = r.cstr()?;
    let map = r.cstr()?;
    let folder = r.cstr()?;
    let game = r.cstr()?;
    let _app_id = r.u16()?;
    let players = r.u8()?;
    let max_players = r.u8()?;
    let bots = r.u8()?;
    let _server_type = r.u8()?;
    let _environment = r.u8()?;
    let password = r.u8()? != 0;
    let _vac = r.u8()?;
    let version = r.cstr()?;
    let mut info = ServerInfo {
        name,
        map,
        folder,
        game,
        players,
        max_players,
        bots,
        password,
        version,
        keywords: String::new(),
        port: 0,
    };
    if r.remaining() == 0 {
        return Ok(info);
    }
    // Extra data, in the order the flags' documentation gives.
    let edf = r.u8()?;
    if edf & EDF_PORT != 0 {
        info.port = r.u16()?;
    }
    if edf & EDF_STEAM_ID != 0 {
        r.u64()?;
    }
    if edf & EDF_SOURCE_TV != 0 {
        r.u16()?;
        r.cstr()?;
    }
    if edf & EDF_KEYWORDS != 0 {
        info.keywords = r.cstr()?;
    }
    if edf & EDF_GAME_ID != 0 {
        r.u64()?;
    }
    Ok(info)
}

fn decode_players(r: &mut Reader<'_>) -> Result<Vec<PlayerInfo>, DecodeError> {
    let count = r.u8()?;
    let mut players = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let _index = r.u8()?;
        let name = r.cstr()?;
        let score = r.i32()?;
        let duration = r.f32()?;
        // A NaN or infinite time would poison sorting in a browser.
        let duration = if duration.is_finite() { duration } else { 0.0 };
        players.push(PlayerInfo {
            name,
            score,
            duration,
        });
    }
    Ok(players)
}

fn decode_rules(r: &mut Reader<'_>) -> Result<Vec<(String, String)>, DecodeError> {
    let count = r.u16()?;
    // Each rule takes at least two bytes, so a lying count cannot reserve much.
    let mut rules = Vec::with_capacity(usize::from(count).min(r.remaining() / 2));
    for _ in 0..count {
        let name = r.cstr()?;
        let value = r.cstr()?;
        rules.push((name, value));
    }
    Ok(rules)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample_info() -> ServerInfo {
        ServerInfo {
            name: "Sightline test".into(),
            map: "depot".into(),
            players: 3,
            max_players: 16,
            bots: 2,
            password: true,
            version: "0.1.0".into(),
            keywords: "dm".into(),
            port: 27015,
            ..ServerInfo::default()
        }
    }

    pub(crate) fn sample_players(n: usize) -> Vec<PlayerInfo> {
        (0..n)
            .map(|i| PlayerInfo {
                name: format!(
                    "player-{i:02}-with-a-rather-long-name-{}",
                    "x".repeat(i % 20)
                ),
                score: i as i32 - 5,
                duration: i as f32 * 1.5,
            })
            .collect()
    }

    #[test]
    fn requests_round_trip() {
        for request in [
            Request::Info { challenge: None },
            Request::Info {
                challenge: Some(0x1234_5678),
            },
            Request::Players {
                challenge: u32::MAX,
            },
            Request::Rules { challenge: 7 },
        ] {
            assert_eq!(decode_request(&encode_request(request)), Ok(request));
        }
        assert_eq!(encode_request(Request::Info { challenge: None }).len(), 25);
        assert_eq!(encode_request(Request::Players { challenge: 0 }).len(), 9);
    }

    #[test]
    fn request_errors_are_told_apart() {
        assert_eq!(
            decode_request(b"\xFF\xFF\xFF\xFFW\xFF\xFF\xFF\xFF"),
            Err(DecodeError::UnexpectedType(b'W'))
        );
        assert_eq!(
            decode_request(b"\xFE\xFF\xFF\xFFU\xFF\xFF\xFF\xFF"),
            Err(DecodeError::NotConnectionless)
        );
        assert_eq!(
            decode_request(b"\xFF\xFF\xFF\xFFU\xFF\xFF"),
            Err(DecodeError::Truncated)
        );
        assert!(!is_connectionless(b"\xFE\xFF\xFF\xFF"));
        assert!(is_connectionless(b"\xFF\xFF\xFF\xFFT"));
    }

    #[test]
    fn responses_round_trip() {
        let info = sample_info();
        assert_eq!(
            decode_response(&encode_info(&info)),
            Ok(Response::Info(info))
        );
        let players = sample_players(5);
        assert_eq!(
            decode_response(&encode_players(&players)),
            Ok(Response::Players(players))
        );
        let rules = vec![
            ("mp_fraglimit".to_owned(), "30".to_owned()),
            ("sv_mode".to_owned(), "dm".to_owned()),
        ];
        assert_eq!(
            decode_response(&encode_rules(&rules)),
            Ok(Response::Rules(rules))
        );
        assert_eq!(
            decode_response(&encode_challenge(0xDEAD_BEEF)),
            Ok(Response::Challenge(0xDEAD_BEEF))
        );
    }

    #[test]
    fn strings_are_stripped_and_capped() {
        let info = ServerInfo {
            name: format!("a\0b{}", "n".repeat(500)),
            keywords: "k".repeat(1000),
            ..sample_info()
        };
        let bytes = encode_info(&info);
        assert!(bytes.len() < 600);
        let Ok(Response::Info(back)) = decode_response(&bytes) else {
            panic!("info did not decode");
        };
        assert!(back.name.starts_with("ab"));
        assert_eq!(back.name.len(), NAME_CAP);
        assert_eq!(back.keywords.len(), KEYWORDS_CAP);
    }

    #[test]
    fn huge_lists_stay_within_the_split_limit() {
        let players = sample_players(300);
        let bytes = encode_players(&players);
        assert!(bytes.len() <= MAX_MESSAGE);
        let Ok(Response::Players(back)) = decode_response(&bytes) else {
            panic!("players did not decode");
        };
        assert!(!back.is_empty() && back.len() < 255);
        assert_eq!(back[..], players[..back.len()]);
        let rules: Vec<_> = (0..2000)
            .map(|i| (format!("rule{i}"), "v".repeat(100)))
            .collect();
        let bytes = encode_rules(&rules);
        assert!(bytes.len() <= MAX_MESSAGE);
        assert!(matches!(decode_response(&bytes), Ok(Response::Rules(r)) if r.len() > 50));
    }

    #[test]
    fn foreign_extra_data_is_skipped() {
        // An info response as a Steam game sends it: steam id, SourceTV and game id too.
        let mut bytes = encode_info(&sample_info());
        let edf_at = bytes.len() - (1 + 2 + 3);
        bytes.truncate(edf_at);
        bytes.push(EDF_PORT | EDF_STEAM_ID | EDF_SOURCE_TV | EDF_KEYWORDS | EDF_GAME_ID);
        bytes.extend_from_slice(&27015u16.to_le_bytes());
        bytes.extend_from_slice(&[9; 8]);
        bytes.extend_from_slice(&27020u16.to_le_bytes());
        bytes.extend_from_slice(b"tv\0dm\0");
        bytes.extend_from_slice(&[1; 8]);
        assert_eq!(decode_response(&bytes), Ok(Response::Info(sample_info())));
    }

    /// A small xorshift generator: deterministic, so a failure replays.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }

        /// `seed` truncated, with bytes flipped, inserted and removed.
        pub(crate) fn mutate(&mut self, seed: &[u8]) -> Vec<u8> {
            let mut bytes = seed[..self.below(seed.len() + 1)].to_vec();
            for _ in 0..self.below(6) {
                let at = self.below(bytes.len() + 1);
                match self.below(3) {
                    0 if at < bytes.len() => bytes[at] = self.next() as u8,
                    1 => bytes.insert(at, self.next() as u8),
                    _ if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    _ => {}
                }
            }
            bytes
        }
    }

    #[test]
    fn decoders_survive_mutated_and_random_bytes() {
        let seeds = [
            encode_info(&sample_info()),
            encode_players(&sample_players(20)),
            encode_rules(&[("a".into(), "b".into())]),
            encode_challenge(5),
            encode_request(Request::Info { challenge: Some(1) }),
            encode_request(Request::Rules { challenge: 1 }),
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for i in 0..50_000 {
            let bytes = if i % 10 == 0 {
                (0..rng.below(64)).map(|_| rng.next() as u8).collect()
            } else {
                rng.mutate(&seeds[i % seeds.len()])
            };
            let _ = decode_response(&bytes);
            let _ = decode_request(&bytes);
        }
    }
}
