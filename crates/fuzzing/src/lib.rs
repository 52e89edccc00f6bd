//! Fuzz bodies for every decoder and parser that reads outside input: the transport path
//! (datagrams into netcode before they are authenticated, and decrypted netcode payloads
//! into a renet connection, both ways), the four wire
//! message types and [`peek_welcome_version`](sightline_protocol::peek_welcome_version),
//! the map loader, console lines, `+command` arguments, the config file, and hosting's:
//! Source RCON streams, server queries (A2S requests and master `getinfo`s the server
//! reads, A2S and master-list replies the browser reads), and the server's ban file;
//! and the hosting surfaces' state machines over sequences of hostile input: the token
//! service's side of the token exchange, the master server's packet handler, and RCON's
//! sessions; and a host's end of the relay over what reaches its port.
//!
//! Each body takes arbitrary bytes, runs one decoder on them and asserts what must hold
//! for any input, not only that nothing panics: a decoded message passes validation and
//! encodes back, a parsed map keeps every range its format promises, a config file the
//! game writes runs back to the same settings. A panic is a finding.
//!
//! The cargo-fuzz targets in `fuzz/` are one line each around these bodies, and this
//! crate's tests run the same bodies on stable over the seed inputs in `fuzz/corpus/`
//! plus a few thousand inputs mutated from them by a fixed-seed [`mutate::Rng`], so CI
//! catches a regression without a nightly toolchain.

pub mod console;
pub mod map;
pub mod master;
pub mod mutate;
pub mod query;
pub mod rcon;
pub mod relay;
pub mod seeds;
pub mod server;
mod targets;
pub mod token;
pub mod transport;
pub mod wire;

pub use targets::{TARGETS, Target, libfuzzer_dictionary, target};
