//! Sealing a connect token for one client's address, and opening a connection request's
//! token to read that address back.

use renetcode::{ConnectToken, NETCODE_KEY_BYTES, NETCODE_USER_DATA_BYTES};
use sightline_limits::canonical_ip;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Identifies Sightline traffic to netcode, which drops packets of other games. It does not
/// change with the game's protocol version, so a mismatched client still reaches the
/// handshake and is told which versions differ.
pub const NETCODE_PROTOCOL_ID: u64 = 0x5347_4854_4c4e_0001;

/// Seconds a connect token stays usable: long enough to start a handshake, too short to
/// hoard.
pub const TOKEN_EXPIRE_SECONDS: u64 = 10;
/// Seconds of silence after which netcode drops a connection (chosen by the server and
/// sealed into the token, never by the client).
pub const CONNECTION_TIMEOUT_SECONDS: i32 = 10;

/// Size of a netcode connection request packet: prefix, version info, protocol id,
/// expiry, nonce and the sealed private token.
pub const CONNECTION_REQUEST_BYTES: usize = 1 + 13 + 8 + 8 + 24 + 1024;

/// Makes a connect token for `client_ip` to join the server whose tokens name `server`,
/// sealed with `key`: what the token service hands out, and what a matchmaker holding the
/// server's key (`--key-file`) issues. `now` is the Unix time.
///
/// The token is netcode.io 1.02's, for protocol id [`NETCODE_PROTOCOL_ID`], expiring in
/// [`TOKEN_EXPIRE_SECONDS`] with a [`CONNECTION_TIMEOUT_SECONDS`] timeout; its user data
/// holds the client's address (byte 0 is 4 or 6, then the address's bytes), which the
/// server checks against where the handshake comes from.
pub fn issue_token(
    key: &[u8; NETCODE_KEY_BYTES],
    client_id: u64,
    client_ip: IpAddr,
    server: SocketAddr,
    now: Duration,
) -> Result<ConnectToken, String> {
    ConnectToken::generate(
        now,
        NETCODE_PROTOCOL_ID,
        TOKEN_EXPIRE_SECONDS,
        client_id,
        CONNECTION_TIMEOUT_SECONDS,
        vec![server],
        Some(&address_user_data(canonical_ip(client_ip))),
        key,
    )
    .map_err(|e| format!("cannot make a connect token: {e}"))
}

/// The asker's address, sealed into its token's user data.
pub fn address_user_data(ip: IpAddr) -> [u8; NETCODE_USER_DATA_BYTES] {
    let mut data = [0; NETCODE_USER_DATA_BYTES];
    match ip {
        IpAddr::V4(v4) => {
            data[0] = 4;
            data[1..5].copy_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            data[0] = 6;
            data[1..17].copy_from_slice(&v6.octets());
        }
    }
    data
}

/// Whether a token's user data names `ip` (IPv4 and its IPv6-mapped form are one).
pub fn user_data_matches(data: &[u8; NETCODE_USER_DATA_BYTES], ip: IpAddr) -> bool {
    address_user_data(canonical_ip(ip)) == *data
}

/// netcode's version string, which a connection request opens with and its token's
/// additional data repeats.
const NETCODE_VERSION_INFO: &[u8; 13] = b"NETCODE 1.02\0";

/// The address a connection request's token was issued to, read by opening its private
/// part with `key`: `None` unless the request is netcode's, for our protocol, unexpired
/// at `now_unix` (seconds), sealed with `key`, and names an address. Forging one needs
/// the key, so a request that opens and names its sender's address came from a client
/// that proved that address to the token service (or a matchmaker holding the key):
/// what the per-address handshake limit may count. One XChaCha20-Poly1305 open of 1 KiB,
/// which netcode itself would spend on the request anyway.
pub fn request_address(
    request: &[u8],
    key: &[u8; NETCODE_KEY_BYTES],
    now_unix: u64,
) -> Option<IpAddr> {
    use chacha20poly1305::aead::AeadInPlace;
    use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};
    if request.len() != CONNECTION_REQUEST_BYTES || request[0] != 0 {
        return None;
    }
    let (version, rest) = request[1..].split_at(13);
    let (protocol, rest) = rest.split_at(8);
    let (expire, rest) = rest.split_at(8);
    let (xnonce, sealed) = rest.split_at(24);
    let expire_at = u64::from_le_bytes(expire.try_into().ok()?);
    if version != NETCODE_VERSION_INFO
        || u64::from_le_bytes(protocol.try_into().ok()?) != NETCODE_PROTOCOL_ID
        || expire_at < now_unix
    {
        return None;
    }
    let mut aad = [0u8; 29];
    aad[..13].copy_from_slice(version);
    aad[13..21].copy_from_slice(protocol);
    aad[21..].copy_from_slice(expire);
    let mut plain = sealed.to_vec();
    let (body, tag) = plain.split_at_mut(sealed.len() - 16);
    let tag = *Tag::from_slice(tag);
    XChaCha20Poly1305::new(key.into())
        .decrypt_in_place_detached(XNonce::from_slice(xnonce), &aad, body, &tag)
        .ok()?;
    // Client id, timeout, then the server addresses (each a type byte and its address
    // and port), the two session keys, and the user data: the asker's address.
    let count = u32::from_le_bytes(body.get(12..16)?.try_into().ok()?);
    let mut at = 16usize;
    for _ in 0..count.min(32) {
        at += match *body.get(at)? {
            0 => 1,
            1 => 1 + 4 + 2,
            2 => 1 + 16 + 2,
            _ => return None,
        };
    }
    let user: &[u8; NETCODE_USER_DATA_BYTES] = body
        .get(at + 64..at + 64 + NETCODE_USER_DATA_BYTES)?
        .try_into()
        .ok()?;
    match user[0] {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(&user[1..5]).ok()?)),
        6 => Some(IpAddr::from(<[u8; 16]>::try_from(&user[1..17]).ok()?)),
        _ => None,
    }
}

/// The connection request a client sends for `token`, as netcode lays it out (for tests
/// and fuzzing: the real client builds its own inside renetcode).
pub fn connection_request(token: &ConnectToken) -> Vec<u8> {
    let mut request = vec![0u8];
    request.extend_from_slice(&token.version_info);
    request.extend_from_slice(&token.protocol_id.to_le_bytes());
    request.extend_from_slice(&token.expire_timestamp.to_le_bytes());
    request.extend_from_slice(&token.xnonce);
    request.extend_from_slice(&token.private_data);
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn the_address_in_a_token_matches_only_its_host() {
        let ip = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3));
        let data = address_user_data(ip);
        assert!(user_data_matches(&data, ip));
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 1, 2, 3).to_ipv6_mapped());
        assert!(user_data_matches(&data, mapped));
        assert!(!user_data_matches(
            &data,
            IpAddr::V4(Ipv4Addr::new(10, 1, 2, 4))
        ));
        assert!(!user_data_matches(&data, IpAddr::V6(Ipv6Addr::LOCALHOST)));
    }

    #[test]
    fn a_connection_request_names_its_askers_address_only_if_it_opens() {
        let key = renetcode::generate_random_bytes();
        let server: SocketAddr = "192.0.2.1:27015".parse().unwrap();
        let now = Duration::from_secs(1_800_000_000);
        for asker in [
            IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7)),
            IpAddr::V6("2001:db8::7".parse().unwrap()),
        ] {
            let token = issue_token(&key, 42, asker, server, now).unwrap();
            let request = connection_request(&token);
            assert_eq!(request.len(), CONNECTION_REQUEST_BYTES);
            assert_eq!(request_address(&request, &key, now.as_secs()), Some(asker));
            // Another key, a flipped bit, an expired token, another protocol: nothing.
            let other = renetcode::generate_random_bytes();
            assert_eq!(request_address(&request, &other, now.as_secs()), None);
            let mut flipped = request.clone();
            flipped[600] ^= 1;
            assert_eq!(request_address(&flipped, &key, now.as_secs()), None);
            let late = now.as_secs() + TOKEN_EXPIRE_SECONDS + 1;
            assert_eq!(request_address(&request, &key, late), None);
            let mut protocol = request.clone();
            protocol[14] ^= 1;
            assert_eq!(request_address(&protocol, &key, now.as_secs()), None);
            assert_eq!(request_address(&request[1..], &key, now.as_secs()), None);
        }
    }
}
