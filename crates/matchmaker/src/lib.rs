//! An example matchmaker for a Sightline fleet on Agones. For one player it asks the Agones
//! allocator service for a Ready GameServer of the fleet with room in its `players` list,
//! then seals a connect token for that player and that server's address with the key the
//! fleet's servers load (`--key-file`, run with `--no-token-service`): only whoever holds
//! the key can let a player in, and the token works for that player's address only.
//!
//! The allocator is spoken to over its REST API (`POST /gameserverallocation`, JSON), with
//! the mutual TLS the Agones allocator requires; plain `http://` serves tests and a
//! port-forward inside the cluster. A real matchmaker adds queues, parties and skill; the
//! allocation and the token are the parts that are Sightline's.

use serde_json::{Value, json};
use sightline_tokens::issue_token;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The name of the GameServer port players connect to (the Fleet's `ports[].name`).
pub const GAME_PORT_NAME: &str = "game";

/// The Agones list the servers keep their players in (see the server's `PLAYERS_LIST`).
pub const PLAYERS_LIST: &str = "players";

/// How long one allocation request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// The client certificate and key, and the CA of the allocator's certificate, for mutual
/// TLS (PEM files, as Agones's install docs make them).
#[derive(Debug, Clone)]
pub struct MutualTls {
    /// The allocator service's CA certificate.
    pub ca_cert: Vec<u8>,
    /// This matchmaker's client certificate.
    pub client_cert: Vec<u8>,
    /// This matchmaker's client key.
    pub client_key: Vec<u8>,
}

impl MutualTls {
    /// Reads the three PEM files.
    pub fn load(ca_cert: &Path, client_cert: &Path, client_key: &Path) -> Result<Self, String> {
        let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
        Ok(Self {
            ca_cert: read(ca_cert)?,
            client_cert: read(client_cert)?,
            client_key: read(client_key)?,
        })
    }
}

/// The allocator service and what to ask it for.
#[derive(Debug, Clone)]
pub struct Allocator {
    /// Its base URL: `https://HOST:PORT` (the `agones-allocator` service), or `http://` for
    /// a stand-in.
    pub url: String,
    /// The Kubernetes namespace of the fleet.
    pub namespace: String,
    /// The fleet's name (its `agones.dev/fleet` label).
    pub fleet: String,
    /// Mutual TLS for `https://` URLs.
    pub tls: Option<MutualTls>,
}

/// A GameServer allocated for a player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// The GameServer's name.
    pub game_server: String,
    /// Where players reach it: its node's address and the host port of its game port.
    pub address: SocketAddr,
}

/// The allocation request: a Ready server of `fleet` with at least one free place in its
/// players list, packed onto as few nodes as may be (Agones's default).
pub fn allocation_request(namespace: &str, fleet: &str) -> Value {
    json!({
        "namespace": namespace,
        "gameServerSelectors": [{
            "matchLabels": { "agones.dev/fleet": fleet },
            "lists": { PLAYERS_LIST: { "minAvailable": 1 } }
        }]
    })
}

/// Reads the allocator's answer: the server's address and the port named
/// [`GAME_PORT_NAME`].
pub fn parse_allocation(body: &str) -> Result<Allocation, String> {
    let reply: Value = serde_json::from_str(body)
        .map_err(|e| format!("the allocator's answer is not JSON: {e}"))?;
    let game_server = reply["gameServerName"]
        .as_str()
        .ok_or("the allocator's answer names no gameServerName")?
        .to_string();
    let address: IpAddr = reply["address"]
        .as_str()
        .ok_or("the allocator's answer has no address")?
        .parse()
        .map_err(|e| format!("the allocated address: {e}"))?;
    let port = reply["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == GAME_PORT_NAME)
        .and_then(|p| p["port"].as_u64())
        .and_then(|p| u16::try_from(p).ok())
        .ok_or_else(|| format!("the allocated server has no port named {GAME_PORT_NAME:?}"))?;
    Ok(Allocation {
        game_server,
        address: SocketAddr::new(address, port),
    })
}

impl Allocator {
    /// Allocates a server. Errors say what the allocator answered, or why it could not be
    /// asked; Agones answers 429 when no server is Ready, which a matchmaker retries.
    pub fn allocate(&self) -> Result<Allocation, String> {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(REQUEST_TIMEOUT));
        if let Some(tls) = &self.tls {
            config = config.tls_config(tls_config(tls)?);
        }
        let agent = config.build().new_agent();
        let url = format!("{}/gameserverallocation", self.url.trim_end_matches('/'));
        let body = allocation_request(&self.namespace, &self.fleet).to_string();
        let mut response = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.as_str())
            .map_err(|e| format!("cannot reach the allocator at {url}: {e}"))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("reading the allocator's answer: {e}"))?;
        if !status.is_success() {
            return Err(format!("the allocator answered {status}: {}", text.trim()));
        }
        parse_allocation(&text)
    }
}

fn tls_config(tls: &MutualTls) -> Result<ureq::tls::TlsConfig, String> {
    use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
    let certs = |pem: &[u8], what: &str| -> Result<Vec<Certificate<'static>>, String> {
        let certs: Vec<_> = ureq::tls::parse_pem(pem)
            .filter_map(|item| match item {
                Ok(PemItem::Certificate(c)) => Some(Ok(c)),
                Ok(_) => None,
                Err(e) => Some(Err(format!("{what}: {e}"))),
            })
            .collect::<Result<_, _>>()?;
        if certs.is_empty() {
            return Err(format!("{what}: no certificate in the file"));
        }
        Ok(certs)
    };
    let ca = certs(&tls.ca_cert, "--ca-cert")?;
    let chain = certs(&tls.client_cert, "--client-cert")?;
    let key = PrivateKey::from_pem(&tls.client_key).map_err(|e| format!("--client-key: {e}"))?;
    Ok(TlsConfig::builder()
        .root_certs(RootCerts::new_with_certs(&ca))
        .client_cert(Some(ClientCert::new_with_certs(&chain, key)))
        .build())
}

/// A connect token for the player `client_id` at `client_ip` to join `server`, sealed with
/// the fleet's `key`, as the bytes a client reads (netcode.io's 2048).
pub fn seal_token(
    key: &[u8; 32],
    client_id: u64,
    client_ip: IpAddr,
    server: SocketAddr,
) -> Result<Vec<u8>, String> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| format!("the clock is before 1970: {e}"))?;
    let token = issue_token(key, client_id, client_ip, server, now)?;
    let mut bytes = Vec::new();
    token
        .write(&mut bytes)
        .map_err(|e| format!("cannot write the token: {e}"))?;
    Ok(bytes)
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
    fn the_request_asks_for_a_ready_server_of_the_fleet_with_room() {
        let request = allocation_request("games", "sightline");
        assert_eq!(request["namespace"], "games");
        let selector = &request["gameServerSelectors"][0];
        assert_eq!(selector["matchLabels"]["agones.dev/fleet"], "sightline");
        assert_eq!(selector["lists"]["players"]["minAvailable"], 1);
    }

    #[test]
    fn an_answer_gives_the_game_port_and_its_address() {
        let body = r#"{"gameServerName":"sightline-x7k2p-abcde","ports":[
            {"name":"tokens","port":7002},{"name":"game","port":7001}],
            "address":"203.0.113.9","nodeName":"node-1","source":"local"}"#;
        let got = parse_allocation(body).unwrap();
        assert_eq!(got.game_server, "sightline-x7k2p-abcde");
        assert_eq!(got.address, "203.0.113.9:7001".parse().unwrap());
        let no_game = r#"{"gameServerName":"x","ports":[{"name":"tokens","port":7002}],
            "address":"203.0.113.9"}"#;
        assert!(parse_allocation(no_game).unwrap_err().contains("game"));
        assert!(parse_allocation("<html>").is_err());
    }

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(unhex(&hex(&bytes)).unwrap(), bytes);
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
    }
}
