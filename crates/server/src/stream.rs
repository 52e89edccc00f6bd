//! Each client's snapshot stream: how often it is sent the world. Every client is sent at
//! least the server's snapshot rate (`sv_snapshotrate`); one that asks for more
//! (`cl_updaterate`, as in Source) is sent up to its ask, the tick rate and the host's
//! `sv_maxsnapshotrate`, on ticks that include every one of the server's own snapshot
//! ticks, so moving between the two never leaves a longer gap. A fresher stream shows a
//! fresher world: a snapshot every tick at 128 Hz halves what the interpolation waits
//! for and how far behind the others are drawn (see docs/NETCODE.md, "Snapshot rate
//! against freshness"), for about twice the bytes. So a client with a `rate` gets the
//! faster stream only while its rate carries it: taken when a snapshot's measured cost
//! at the faster pace fits in what the rate leaves snapshots with a fifth to spare, left
//! as soon as it does not fit, and the server's own pace kept meanwhile.

use crate::rate::DownloadRate;
use bevy::prelude::*;
use sightline_sim::{Tick, TickConfig};

/// Share of what a client's rate leaves snapshots that the faster stream may take to be
/// taken up: the rest keeps a client near its rate from moving back and forth.
pub const FASTER_STREAM_SHARE: f64 = 0.8;

/// A client's snapshot stream: ticks between the snapshots it asked for (within the
/// server's bounds), and between those it is sent now.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotStream {
    wanted_every: u32,
    every: u32,
}

impl SnapshotStream {
    /// The stream of a client that asked for `asked_hz` snapshots a second (0: the
    /// server's choice) from a server ticking as `config` says and sending at most
    /// `max_hz`. It starts at the fastest allowed when the client has no `rate`, and at
    /// the server's own pace when it has one, until the rate is seen to carry more.
    pub fn new(config: &TickConfig, max_hz: u32, asked_hz: u32, rated: bool) -> Self {
        let wanted_every = ticks_between(config, max_hz, asked_hz);
        Self {
            wanted_every,
            every: if rated {
                config.snapshot_every.max(1)
            } else {
                wanted_every
            },
        }
    }

    /// Ticks between snapshots now.
    pub fn every(&self) -> u32 {
        self.every
    }

    /// Snapshots a second now.
    pub fn hz(&self, config: &TickConfig) -> u32 {
        config.tick_hz / self.every.max(1)
    }

    /// Whether the client is sent a snapshot after `tick`.
    pub fn is_due(&self, tick: Tick) -> bool {
        tick.0.is_multiple_of(self.every.max(1))
    }

    /// Moves between the faster stream asked for and the server's own pace as the
    /// client's `rate` allows (`None`: no limit, so always the faster). Called on the
    /// server's own snapshot ticks, which both streams share, so a move never stretches
    /// a gap.
    pub fn fit_to_rate(&mut self, config: &TickConfig, rate: Option<&DownloadRate>) {
        let base = config.snapshot_every.max(1);
        let Some(rate) = rate else {
            self.every = self.wanted_every;
            return;
        };
        if self.wanted_every == base {
            self.every = base;
            return;
        }
        // Not measured yet: the server's pace until a snapshot's cost is known.
        let Some(cost) = rate.snapshot_cost() else {
            self.every = base;
            return;
        };
        let faster = cost * f64::from(config.tick_hz / self.wanted_every);
        let room = rate.for_snapshots();
        let fits = if self.every == self.wanted_every {
            faster <= room
        } else {
            faster <= FASTER_STREAM_SHARE * room
        };
        self.every = if fits { self.wanted_every } else { base };
    }
}

/// Ticks between the snapshots of a client that asked for `asked_hz` a second (0: the
/// server's choice) from a server ticking as `config` says and sending at most `max_hz`:
/// the fastest stream within both whose ticks include the server's own snapshot ticks,
/// and never slower than the server's own.
pub fn ticks_between(config: &TickConfig, max_hz: u32, asked_hz: u32) -> u32 {
    let base = config.snapshot_every.max(1);
    let wanted = match asked_hz {
        0 => config.snapshot_hz(),
        hz => hz.min(max_hz),
    };
    (1..base)
        .filter(|d| base.is_multiple_of(*d))
        .find(|d| config.tick_hz / d <= wanted)
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_protocol::Snapshot;

    fn config(tick_hz: u32, snapshot_hz: u32) -> TickConfig {
        TickConfig::new(tick_hz, snapshot_hz).unwrap()
    }

    #[test]
    fn a_client_is_sent_what_it_asks_within_the_servers_bounds() {
        let c = config(128, 64);
        // Every tick where asked and allowed; the server's pace otherwise.
        assert_eq!(ticks_between(&c, 128, 128), 1);
        assert_eq!(ticks_between(&c, 128, 1000), 1, "no faster than the tick");
        assert_eq!(ticks_between(&c, 64, 128), 2, "the host's cap");
        assert_eq!(ticks_between(&c, 128, 100), 2, "128 is more than asked");
        assert_eq!(
            ticks_between(&c, 128, 20),
            2,
            "never slower than the server"
        );
        assert_eq!(ticks_between(&c, 128, 0), 2, "the server's choice");
        // A stream that includes every one of the server's snapshot ticks: at 120 Hz
        // with 30 snapshots (every 4th tick), 60 (every 2nd) fits an ask of 100 and 40
        // (every 3rd) is never offered.
        let c = config(120, 30);
        assert_eq!(ticks_between(&c, 120, 100), 2);
        assert_eq!(ticks_between(&c, 120, 45), 4);
        assert_eq!(ticks_between(&c, 120, 120), 1);
    }

    #[test]
    fn a_faster_stream_keeps_every_tick_of_the_servers_own() {
        let c = config(128, 64);
        let fast = SnapshotStream::new(&c, 128, 128, false);
        for t in 0..64 {
            if c.is_snapshot_tick(Tick(t)) {
                assert!(fast.is_due(Tick(t)));
            }
        }
        assert_eq!(fast.hz(&c), 128);
        // Asking for the server's choice is the server's pace.
        assert_eq!(SnapshotStream::new(&c, 128, 0, false).hz(&c), 64);
    }

    /// A rate that has seen `n` snapshots of `bytes` (their encoding) at 64 a second.
    fn measured(rate: u32, bytes: usize, n: u32) -> DownloadRate {
        let mut r = DownloadRate::new(rate);
        for k in 0..n {
            r.budget(10.0 + f64::from(k) / 64.0, 64, 0);
            r.spend(bytes, &Snapshot::default());
        }
        r
    }

    #[test]
    fn the_faster_stream_is_taken_where_the_rate_carries_it_and_left_where_not() {
        let c = config(128, 64);
        // Unlimited: the faster stream at once.
        let mut s = SnapshotStream::new(&c, 128, 128, false);
        s.fit_to_rate(&c, None);
        assert_eq!(s.every(), 1);
        // Rated, nothing measured: the server's pace.
        let mut s = SnapshotStream::new(&c, 128, 128, true);
        assert_eq!(s.every(), 2);
        s.fit_to_rate(&c, Some(&DownloadRate::new(30_000)));
        assert_eq!(s.every(), 2);
        // 100 bytes a snapshot with headers: 12.8 kB/s at 128 a second, within a fifth
        // to spare of 30 kB/s's share.
        let small = measured(30_000, 100 - crate::rate::DATAGRAM_OVERHEAD, 50);
        s.fit_to_rate(&c, Some(&small));
        assert_eq!(s.every(), 1);
        // 230 bytes: 29.4 kB/s at 128, more than the share (28.5 kB/s): back to 64.
        let large = measured(30_000, 230 - crate::rate::DATAGRAM_OVERHEAD, 200);
        s.fit_to_rate(&c, Some(&large));
        assert_eq!(s.every(), 2);
        // 200 bytes: 25.6 kB/s fits the share but not with a fifth to spare, so a client
        // at the server's pace stays there, and one on the faster stream keeps it.
        let near = measured(30_000, 200 - crate::rate::DATAGRAM_OVERHEAD, 200);
        s.fit_to_rate(&c, Some(&near));
        assert_eq!(s.every(), 2);
        let mut fast = SnapshotStream::new(&c, 128, 128, false);
        fast.fit_to_rate(&c, Some(&near));
        assert_eq!(fast.every(), 1);
        // Asking for no more than the server's pace is that pace whatever the rate.
        let mut slow = SnapshotStream::new(&c, 128, 64, true);
        slow.fit_to_rate(&c, Some(&small));
        assert_eq!(slow.every(), 2);
    }
}
