//! Per-asker limits, shared by every surface that answers strangers: the token service,
//! netcode's handshakes, A2S, the master list and RCON.
//!
//! A budget shared by all askers is a switch any one host can turn off. So everything
//! here counts by asker: a [`HostKey`] (an IPv4 address, or the IPv6 /64 one subscriber
//! holds whole) inside a [`NetworkKey`] (an IPv4 /24, or an IPv6 /48), with a cap for
//! everyone behind them. [`Shares`] are token buckets at those three levels, where one
//! host can spend at most its own share of its network's; [`admit`] decides who gets a
//! place in a pool of connections, so that stalled connections from a few hosts or
//! networks never keep a newcomer out. Tables are [`LruMap`]s: bounded, and when full
//! they forget the entry used least recently, never everything at once.

mod bucket;
mod keys;
mod lru;
mod pool;
mod shares;

pub use bucket::Bucket;
pub use keys::{HostKey, NetworkKey, canonical_ip};
pub use lru::LruMap;
pub use pool::{Admit, Claim, PoolLimits, admit, oldest_of_busiest};
pub use shares::{MAX_TRACKED, Rate, Refusal, ShareRates, Shares};
