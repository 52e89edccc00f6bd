//! What the matchmaker hands a player, as JSON both ends read: where to play, and the
//! connect token sealed for them with the fleet's key.

use serde_json::{Value, json};
use sightline_tokens::{ConnectToken, issue_token};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A place on a server for one player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The server's name (a GameServer's, or its address for a static list).
    pub game_server: String,
    /// Where the player connects.
    pub address: SocketAddr,
    /// The client id the token names (what the server lists in its `players` list).
    pub client_id: u64,
    /// The connect token's bytes, as netcode writes them.
    pub token: Vec<u8>,
}

/// Room for a written connect token (netcode writes its public part: about 1.2 kB).
const TOKEN_BYTES: usize = 2048;

impl Ticket {
    /// Seals a ticket for the player `client_id` at `client_ip` on `server` (named
    /// `game_server`), with the fleet's `key`, at `now` (since 1970).
    pub fn seal(
        key: &[u8; 32],
        game_server: String,
        server: SocketAddr,
        client_id: u64,
        client_ip: IpAddr,
        now: Duration,
    ) -> Result<Self, String> {
        let token = issue_token(key, client_id, client_ip, server, now)?;
        let mut bytes = Vec::with_capacity(TOKEN_BYTES);
        token
            .write(&mut bytes)
            .map_err(|e| format!("cannot write the token: {e}"))?;
        Ok(Self {
            game_server,
            address: server,
            client_id,
            token: bytes,
        })
    }

    /// The JSON line the matchmaker prints and serves.
    pub fn to_json(&self) -> String {
        json!({
            "gameServer": self.game_server,
            "address": self.address.to_string(),
            "clientId": self.client_id,
            "token": hex(&self.token),
        })
        .to_string()
    }

    /// Reads [`Self::to_json`]'s text, as a game reads a matchmaker's answer: every field
    /// checked, the token whole and readable.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON: {e}"))?;
        let field = |name: &str| {
            v[name]
                .as_str()
                .ok_or_else(|| format!("the answer has no {name}"))
        };
        let address = field("address")?
            .parse()
            .map_err(|e| format!("the answer's address: {e}"))?;
        let client_id = v["clientId"].as_u64().ok_or("the answer has no clientId")?;
        let token = unhex(field("token")?).map_err(|e| format!("the answer's token: {e}"))?;
        // Whole and in netcode's one form: read, it writes back the same bytes.
        let mut again = Vec::with_capacity(token.len());
        ConnectToken::read(&mut token.as_slice())
            .map_err(|e| e.to_string())
            .and_then(|t| t.write(&mut again).map_err(|e| e.to_string()))
            .map_err(|e| format!("the answer's token cannot be read: {e}"))?;
        if again != token {
            return Err(format!(
                "the answer's token is {} bytes, not one token's {}",
                token.len(),
                again.len()
            ));
        }
        Ok(Self {
            game_server: field("gameServer")?.to_string(),
            address,
            client_id,
            token,
        })
    }

    /// The connect token, read.
    pub fn connect_token(&self) -> Result<ConnectToken, String> {
        ConnectToken::read(&mut self.token.as_slice())
            .map_err(|e| format!("the matchmaker's token cannot be read: {e}"))
    }
}

/// The time since 1970, for sealing and checking tokens.
pub fn unix_now() -> Result<Duration, String> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| format!("the clock is before 1970: {e}"))
}

/// A connect token for the player `client_id` at `client_ip` to join `server`, sealed with
/// the fleet's `key`, as the bytes a client reads.
pub fn seal_token(
    key: &[u8; 32],
    client_id: u64,
    client_ip: IpAddr,
    server: SocketAddr,
) -> Result<Vec<u8>, String> {
    let ticket = Ticket::seal(
        key,
        server.to_string(),
        server,
        client_id,
        client_ip,
        unix_now()?,
    )?;
    Ok(ticket.token)
}

/// Lower-case hexadecimal, for tokens printed as text (as key files hold keys).
pub use sightline_tokens::hex;

/// Parses [`hex`]'s text back.
pub fn unhex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return Err("not hexadecimal".into());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(unhex(&hex(&bytes)).unwrap(), bytes);
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
    }

    #[test]
    fn a_ticket_reads_back_as_written_and_a_damaged_one_is_refused() {
        let ticket = Ticket::seal(
            &[3; 32],
            "sightline-abcde".into(),
            "203.0.113.9:7001".parse().unwrap(),
            77,
            "198.51.100.4".parse().unwrap(),
            Duration::from_secs(1_800_000_000),
        )
        .unwrap();
        let text = ticket.to_json();
        assert_eq!(Ticket::from_json(&text).unwrap(), ticket);
        let token = ticket.connect_token().unwrap();
        assert_eq!(token.client_id, 77);
        assert_eq!(token.server_addresses[0], Some(ticket.address));
        let short = text.replace(&hex(&ticket.token), &hex(&ticket.token[..100]));
        assert!(Ticket::from_json(&short).unwrap_err().contains("token"));
        let long = text.replace(&hex(&ticket.token), &format!("{}00", hex(&ticket.token)));
        assert!(Ticket::from_json(&long).unwrap_err().contains("bytes"));
        let no_address = text.replace("\"address\"", "\"where\"");
        assert!(
            Ticket::from_json(&no_address)
                .unwrap_err()
                .contains("address")
        );
        assert!(Ticket::from_json("<html>").is_err());
    }
}
