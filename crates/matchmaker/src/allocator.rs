//! Asking the Agones allocator service for a Ready GameServer of the fleet (REST,
//! `POST /gameserverallocation`, with the mutual TLS the allocator requires).

use serde_json::{Value, json};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// The name of the GameServer port players connect to (the Fleet's `ports[].name`).
pub const GAME_PORT_NAME: &str = "game";

/// The Agones list the servers keep their players in (see the server's `PLAYERS_LIST`).
pub const PLAYERS_LIST: &str = "players";

/// How long one allocation request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The most of an allocator's answer read (an allocation is a few hundred bytes).
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

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
    /// Allocates a server. Agones answers 429 when no server is Ready
    /// ([`AllocateError::NoneReady`], which a matchmaker's queue retries); other errors
    /// say what the allocator answered, or why it could not be asked.
    pub fn allocate(&self) -> Result<Allocation, AllocateError> {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(REQUEST_TIMEOUT));
        if let Some(tls) = &self.tls {
            config = config.tls_config(tls_config(tls).map_err(AllocateError::Failed)?);
        }
        let agent = config.build().new_agent();
        let url = format!("{}/gameserverallocation", self.url.trim_end_matches('/'));
        let body = allocation_request(&self.namespace, &self.fleet).to_string();
        let mut response = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.as_str())
            .map_err(|e| {
                AllocateError::Failed(format!("cannot reach the allocator at {url}: {e}"))
            })?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| AllocateError::Failed(format!("reading the allocator's answer: {e}")))?;
        if status.as_u16() == 429 {
            return Err(AllocateError::NoneReady(
                text.trim().chars().take(200).collect(),
            ));
        }
        if !status.is_success() {
            return Err(AllocateError::Failed(format!(
                "the allocator answered {status}: {}",
                text.trim()
            )));
        }
        parse_allocation(&text).map_err(AllocateError::Failed)
    }
}

/// Why no server was allocated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocateError {
    /// No server of the fleet is Ready with room (the allocator's 429, with what it
    /// said): wait and ask again.
    NoneReady(String),
    /// Anything else, in words.
    Failed(String),
}

impl std::fmt::Display for AllocateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoneReady(said) => write!(
                f,
                "no server of the fleet is Ready with room (the allocator answered 429: {said})"
            ),
            Self::Failed(reason) => f.write_str(reason),
        }
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
}
