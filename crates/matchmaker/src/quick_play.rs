//! The game's end of quick play: ask a matchmaker service for a ticket, and check it
//! before netcode uses it.

use crate::ticket::{Ticket, unix_now};
use std::time::Duration;

/// The most of an answer read: a ticket is about 4.2 kB of JSON.
const MAX_ANSWER_BYTES: u64 = 16 * 1024;
/// How much longer than the service's queue the game waits for its answer.
const ANSWER_SLACK: Duration = Duration::from_secs(15);
/// The queue wait the game expects of a service (its `--queue-seconds` default).
pub const DEFAULT_QUEUE_WAIT: Duration = Duration::from_secs(60);

/// Where quick play asks, and whom it trusts there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuickPlay {
    /// The service's base URL: `https://HOST[:PORT]` (plain `http://` only to this
    /// machine, where nothing on the way can read the token).
    pub url: String,
    /// A certificate authority (PEM) to trust for the service instead of the usual public
    /// ones: a community's own, or a test's.
    pub ca_pem: Option<Vec<u8>>,
}

impl QuickPlay {
    /// Asks for a ticket, waiting while the service queues the request (up to
    /// [`DEFAULT_QUEUE_WAIT`] and a little). Errors are sentences for the player.
    pub fn ask(&self) -> Result<Ticket, String> {
        let url = self.endpoint()?;
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(DEFAULT_QUEUE_WAIT + ANSWER_SLACK));
        if let Some(pem) = &self.ca_pem {
            config = config.tls_config(trusting(pem)?);
        }
        let agent = config.build().new_agent();
        let mut response = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send("{}")
            .map_err(|e| format!("cannot reach the matchmaker at {}: {e}", self.url))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| format!("reading the matchmaker's answer: {e}"))?;
        let said = || {
            serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_string))
                .unwrap_or_else(|| text.chars().take(200).collect())
        };
        let ticket = match status {
            200 => Ticket::from_json(&text)
                .map_err(|e| format!("the matchmaker's answer cannot be used: {e}"))?,
            429 => return Err(format!("the matchmaker refused you for now: {}", said())),
            503 => return Err(format!("no server is free: {}", said())),
            _ => return Err(format!("the matchmaker answered {status}: {}", said())),
        };
        check_fresh(&ticket, unix_now()?)?;
        Ok(ticket)
    }

    /// The quick-play URL, refusing plain HTTP to another machine.
    fn endpoint(&self) -> Result<String, String> {
        let base = self.url.trim().trim_end_matches('/');
        let plain_host = base.strip_prefix("http://");
        if let Some(rest) = plain_host {
            let host = rest.split(['/', '?']).next().unwrap_or_default();
            let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
            let local = host == "localhost"
                || host
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if !local {
                return Err(format!(
                    "{base}: quick play needs https:// (plain http:// only to this machine, \
                     as anyone on the way could read the token)"
                ));
            }
        } else if !base.starts_with("https://") {
            return Err(format!("{base}: expected an https:// URL"));
        }
        Ok(format!("{base}/v1/quickplay"))
    }
}

/// TLS trusting only the authority in `pem`.
fn trusting(pem: &[u8]) -> Result<ureq::tls::TlsConfig, String> {
    use ureq::tls::{PemItem, RootCerts, TlsConfig};
    let certs: Vec<_> = ureq::tls::parse_pem(pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err("the matchmaker's certificate authority file holds no certificate".into());
    }
    Ok(TlsConfig::builder()
        .root_certs(RootCerts::new_with_certs(&certs))
        .build())
}

/// Whether the ticket's token can still be used at `now` (since 1970): one that expired
/// before the game got it is named as such, not left to netcode's silent timeout.
pub fn check_fresh(ticket: &Ticket, now: Duration) -> Result<(), String> {
    let token = ticket.connect_token()?;
    let now = now.as_secs();
    if token.expire_timestamp <= now {
        return Err(format!(
            "the matchmaker's token for {} expired {} s before it could be used: try \
             again (and check this computer's clock)",
            ticket.address,
            now - token.expire_timestamp
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(url: &str) -> QuickPlay {
        QuickPlay {
            url: url.into(),
            ca_pem: None,
        }
    }

    #[test]
    fn plain_http_is_only_for_this_machine() {
        for local in [
            "http://127.0.0.1:8080",
            "http://localhost:8080/",
            "http://[::1]:9",
        ] {
            assert!(ask(local).endpoint().is_ok(), "{local}");
        }
        assert_eq!(
            ask("https://mm.example.org/").endpoint().unwrap(),
            "https://mm.example.org/v1/quickplay"
        );
        for far in [
            "http://mm.example.org",
            "http://127.0.0.1.example.org",
            "ftp://x",
            "",
        ] {
            assert!(ask(far).endpoint().is_err(), "{far}");
        }
    }

    #[test]
    fn a_token_that_expired_before_it_arrived_is_named_as_such() {
        let made = Duration::from_secs(1_800_000_000);
        let ticket = Ticket::seal(
            &[9; 32],
            "s".into(),
            "203.0.113.9:7001".parse().unwrap(),
            1,
            "198.51.100.4".parse().unwrap(),
            made,
        )
        .unwrap();
        assert!(check_fresh(&ticket, made + Duration::from_secs(2)).is_ok());
        let late = check_fresh(&ticket, made + Duration::from_secs(70)).unwrap_err();
        assert!(late.contains("expired"), "{late}");
    }
}
