//! The token service's steps for one request at a time over an in-memory stream, for
//! fuzzing (the `test-support` feature): each [`TokenBench::poll`] runs the `serve` that
//! a frame of [`TokenService::poll`](super::TokenService) runs on each of its requests,
//! with the service's own rate limiter and allowance of password guesses, and no socket.

use super::service::{Guesses, Issuer, Pending, Served, Stage, serve};
use super::{AdmissionLimits, SecureConfig, TOKEN_BURST, TOKENS_PER_SECOND};
use crate::NetStats;
use crate::bans::AddressBans;
use crate::memory_stream::MemoryStream;
use renetcode::{ConnectToken, NetcodeServer, ServerAuthentication, ServerConfig};
use sightline_limits::{Claim, HostKey, NetworkKey, Rate, Shares};
use sightline_tokens::{NETCODE_PROTOCOL_ID, connection_request, request_address};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

/// Where the open request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchStage {
    /// Reading the client's hello.
    Hello,
    /// Hello answered: reading the client's finish.
    Finish,
    /// Writing the last answer.
    Closing,
}

/// What one poll did with the open request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Polled {
    /// Still being read or answered.
    Waiting,
    /// Its last answer written: closed.
    Answered,
    /// Dropped unanswered (counted in [`NetStats::token_requests_dropped`]).
    Dropped,
    /// Not a token exchange: handed over with the bytes read from it.
    Foreign(Vec<u8>),
}

/// The token service's state with one request open at a time.
pub struct TokenBench {
    limiter: Shares,
    guesses: Guesses,
    stats: NetStats,
    netcode: NetcodeServer,
    config: SecureConfig,
    limits: AdmissionLimits,
    public: SocketAddr,
    bans: AddressBans,
    request: Option<Pending<MemoryStream>>,
    window: Option<usize>,
}

impl TokenBench {
    /// A service with a fresh key and identity, taking `password` (`None`: a public
    /// server) and refusing `bans`.
    pub fn new(password: Option<&str>, bans: AddressBans) -> Self {
        let public = SocketAddr::from(([192, 0, 2, 1], 27015));
        let mut config = SecureConfig::random();
        config.password = password.map(String::from);
        let netcode = NetcodeServer::new(ServerConfig {
            current_time: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default(),
            max_clients: 4,
            protocol_id: NETCODE_PROTOCOL_ID,
            public_addresses: vec![public],
            authentication: ServerAuthentication::Secure {
                private_key: config.key,
            },
        });
        Self {
            limiter: Shares::per_host(Rate::new(TOKEN_BURST, TOKENS_PER_SECOND)),
            guesses: Guesses::new(),
            stats: NetStats::default(),
            netcode,
            config,
            limits: AdmissionLimits::default(),
            public,
            bans,
            request: None,
            window: None,
        }
    }

    /// The service's settings: its identity, password and the key tokens are sealed with.
    pub fn config(&self) -> &SecureConfig {
        &self.config
    }

    /// The address its tokens name.
    pub fn public_addr(&self) -> SocketAddr {
        self.public
    }

    /// netcode's clock (Unix time), which issued tokens start from.
    pub fn netcode_time(&self) -> Duration {
        self.netcode.current_time()
    }

    /// What the service counted so far.
    pub fn stats(&self) -> &NetStats {
        &self.stats
    }

    /// Opens a request from `peer` at `now`, as the service admits one; one still open
    /// is closed unanswered, as a client that gives up.
    pub fn open(&mut self, peer: SocketAddr, now: Instant) {
        self.request = Some(Pending {
            stream: MemoryStream::default(),
            peer,
            place: Claim {
                host: HostKey::of(peer.ip()),
                network: NetworkKey::of(peer.ip()),
                since: now,
                settled: false,
            },
            inbox: Vec::new(),
            outbox: None,
            stage: Stage::Hello,
            closed: false,
        });
    }

    /// Replaces the bans, as the server does when its ban list changes.
    pub fn set_bans(&mut self, bans: AddressBans) {
        self.bans = bans;
    }

    /// Bytes from the client (dropped when no request is open).
    pub fn send(&mut self, bytes: &[u8]) {
        if let Some(p) = &mut self.request {
            p.stream.incoming.extend(bytes);
        }
    }

    /// The client closes its side: what it sent is all there will be.
    pub fn close(&mut self) {
        if let Some(p) = &mut self.request {
            p.stream.eof = true;
        }
    }

    /// How many bytes the client reads a poll (`None`: everything written).
    pub fn read_slowly(&mut self, window: Option<usize>) {
        self.window = window;
    }

    /// One frame of the service for the open request at `now`: what became of it and
    /// the bytes it wrote to the client. `None` when no request is open.
    pub fn poll(&mut self, now: Instant) -> Option<(Polled, Vec<u8>)> {
        let p = self.request.as_mut()?;
        p.stream.window = self.window;
        let mut issuer = Issuer {
            limiter: &mut self.limiter,
            guesses: &mut self.guesses,
            stats: &mut self.stats,
            netcode: &self.netcode,
            config: &self.config,
            limits: self.limits,
            public: self.public,
            bans: &self.bans,
            now,
        };
        let served = serve(p, &mut 0, &mut issuer);
        let written = std::mem::take(&mut p.stream.written);
        let polled = match served {
            Served::Waiting => return Some((Polled::Waiting, written)),
            Served::Answered => Polled::Answered,
            Served::Dropped => Polled::Dropped,
            Served::Foreign => Polled::Foreign(std::mem::take(&mut p.inbox)),
        };
        self.request = None;
        Some((polled, written))
    }

    /// The open request's stage.
    pub fn stage(&self) -> Option<BenchStage> {
        self.request.as_ref().map(|p| match p.stage {
            Stage::Hello => BenchStage::Hello,
            Stage::Finish { .. } => BenchStage::Finish,
            Stage::Closing => BenchStage::Closing,
        })
    }

    /// Bytes the service holds read from the open request.
    pub fn inbox_len(&self) -> usize {
        self.request.as_ref().map_or(0, |p| p.inbox.len())
    }

    /// Bytes the service still has to write to the open request.
    pub fn outbox_len(&self) -> usize {
        self.request
            .as_ref()
            .and_then(|p| p.outbox.as_ref())
            .map_or(0, |(bytes, sent)| bytes.len() - sent)
    }

    /// The address `token`'s sealed part names, as the server reads it from a
    /// connection request (`None` when it does not open with the service's key).
    pub fn token_asker(&self, token: &ConnectToken) -> Option<IpAddr> {
        let request = connection_request(token);
        request_address(&request, &self.config.key, token.create_timestamp)
    }
}
