//! A client's `rate`: the most its downlink takes, bytes a second, as in Quake and Source.
//! Quake 3 keeps within it by not sending snapshots, so everything on screen updates less
//! often at once. Here what gives first is the far: when a snapshot would pass what the
//! client's rate has earned, the farthest players' updates are held back
//! ([`Snapshot::held`]), each for at most [`MAX_HELD_SNAPSHOTS`] in a row, so distant
//! players are updated less often (and drawn from the snapshots before). Only when that is
//! not enough does a snapshot wait, as in Quake 3, until the rate has earned it. Either
//! way a slow link is sent what it can carry rather than losing snapshots in its queue.
//! The own player and players new to the client are never held.

use bevy::prelude::*;
use sightline_protocol::{PlayerSnap, ServerDatagram, Snapshot, SnapshotPacket, Wire};
use sightline_sim::PlayerId;

/// Lowest rate honoured, bytes a second: a snapshot of the own player and a few others 64
/// times a second, with headers. A lower `rate` counts as this.
pub const MIN_RATE: u32 = 8_000;

/// Most snapshots in a row a player's update may be held back: a held player is drawn from
/// a measurement at most this many snapshots older (47 ms at 64 a second), which the
/// interpolation delay mostly covers.
pub const MAX_HELD_SNAPSHOTS: u8 = 2;

/// Share of a client's rate the server fills. A slow line is its own bottleneck: sent at
/// exactly its rate, each burst (two snapshots at most) would leave a standing queue in
/// its router, and the queue's delay on every later snapshot; a little under it, the
/// queue drains between snapshots.
pub const RATE_SHARE: f64 = 0.95;

/// Bytes a snapshot datagram costs on the link besides its encoding: UDP/IP's 28, and
/// netcode's and renet's headers.
pub const DATAGRAM_OVERHEAD: usize = 47;

/// A client's rate and what it has earned: a token bucket of bytes, holding at most two
/// snapshots' worth so a quiet moment does not buy a burst.
#[derive(Component, Debug, Clone)]
pub struct DownloadRate {
    bytes_per_second: u32,
    /// Bytes the client may be sent now (negative: overspent).
    allowance: f64,
    /// Server time of the last snapshot, seconds (`None`: none yet).
    last: Option<f64>,
    /// Snapshots in a row each player's update has been held, by id.
    held_for: Box<[u8; 256]>,
    /// Snapshot bytes sent since the last snapshot tick (with [`DATAGRAM_OVERHEAD`]), and
    /// their rate, smoothed, bytes a second: what of everything sent is snapshots.
    sent_since: usize,
    snapshot_bps: f64,
    /// The transport's count of everything sent to the client at the last snapshot tick
    /// ([`sightline_net::SentToClients`]), and its rate, smoothed alike.
    sent_total: Option<u64>,
    sent_bps: f64,
    /// What a snapshot costs the link, smoothed, bytes with [`DATAGRAM_OVERHEAD`] (0: none
    /// sent yet): what a faster stream would take ([`crate::stream`]).
    snapshot_cost: f64,
}

impl DownloadRate {
    /// A client's `rate` in bytes a second (0: no limit, which needs no component).
    pub fn new(bytes_per_second: u32) -> Self {
        Self {
            bytes_per_second: bytes_per_second.max(MIN_RATE),
            allowance: 0.0,
            last: None,
            held_for: Box::new([0; 256]),
            sent_since: 0,
            snapshot_bps: 0.0,
            sent_total: None,
            sent_bps: 0.0,
            snapshot_cost: 0.0,
        }
    }

    /// Bytes a second snapshots may take: the rate's share less what else the client is
    /// sent (the reliable stream: shots heard, the kill feed, chat; acknowledgements sent
    /// alone), down to a quarter of it, which snapshots always keep.
    pub fn for_snapshots(&self) -> f64 {
        let rate = f64::from(self.bytes_per_second) * RATE_SHARE;
        let others = (self.sent_bps - self.snapshot_bps).max(0.0);
        (rate - others).max(rate / 4.0)
    }

    /// What a snapshot costs the link, smoothed, bytes with headers (`None`: none sent
    /// yet).
    pub fn snapshot_cost(&self) -> Option<f64> {
        (self.snapshot_cost > 0.0).then_some(self.snapshot_cost)
    }

    /// The rate honoured, bytes a second.
    pub fn bytes_per_second(&self) -> u32 {
        self.bytes_per_second
    }

    /// Earns what passed since the last snapshot tick (server time `now`, seconds) and
    /// says how many bytes the next snapshot may take, headers included; `None` while the
    /// client is still overspent, when the snapshot waits (Quake 3's way: holding players
    /// back was not enough). `snapshot_hz`, the client's stream, caps the bucket.
    /// `sent_total` is everything sent to the client so far as the transport counts it on
    /// the wire, to tell what snapshots may take ([`Self::for_snapshots`]).
    pub fn budget(&mut self, now: f64, snapshot_hz: u32, sent_total: u64) -> Option<usize> {
        let hz = f64::from(snapshot_hz.max(1));
        let dt = self.last.map_or(1.0 / hz, |last| (now - last).max(0.0));
        if dt > 0.0 {
            let sample = self.sent_since as f64 / dt;
            self.snapshot_bps = 0.9 * self.snapshot_bps + 0.1 * sample;
            self.sent_since = 0;
            if let Some(before) = self.sent_total {
                let sample = sent_total.saturating_sub(before) as f64 / dt;
                self.sent_bps = 0.9 * self.sent_bps + 0.1 * sample;
            }
            self.sent_total = Some(sent_total);
        }
        let for_snapshots = self.for_snapshots();
        let cap = 2.0 * for_snapshots / hz;
        let earned = if self.last.is_some() {
            for_snapshots * dt
        } else {
            cap
        };
        self.last = Some(now);
        self.allowance = (self.allowance + earned).min(cap);
        (self.allowance > 0.0).then_some(self.allowance as usize)
    }

    /// Spends what a snapshot of `bytes` (its encoding) cost, and notes who in it was
    /// held.
    pub fn spend(&mut self, bytes: usize, sent: &Snapshot) {
        let cost = (bytes + DATAGRAM_OVERHEAD) as f64;
        self.allowance -= cost;
        self.sent_since += bytes + DATAGRAM_OVERHEAD;
        self.snapshot_cost = if self.snapshot_cost > 0.0 {
            0.9 * self.snapshot_cost + 0.1 * cost
        } else {
            cost
        };
        for p in &sent.players {
            let held = &mut self.held_for[usize::from(p.id.0)];
            *held = match sent.held.binary_search(&p.id) {
                Ok(_) => held.saturating_add(1),
                Err(_) => 0,
            };
        }
    }

    /// Whether `id`'s update may be held back once more.
    fn may_hold(&self, id: PlayerId) -> bool {
        self.held_for[usize::from(id.0)] < MAX_HELD_SNAPSHOTS
    }
}

/// `sent`, encoded against `baseline`, within `budget` bytes where holding back players
/// can get it there: the farthest from `own` first, doubling how many until it fits or
/// none is left to hold. The held players go in `sent.held`, and `sent` becomes what the
/// client will resolve (each held player at its reference), to be kept as the baseline of
/// later snapshots. Returns the encoding.
pub(crate) fn hold_for_rate(
    sent: &mut Snapshot,
    baseline: &Snapshot,
    own: Option<&PlayerSnap>,
    budget: usize,
    rate: &DownloadRate,
    bytes: Vec<u8>,
) -> Vec<u8> {
    let fits = |encoded: &[u8]| encoded.len() + DATAGRAM_OVERHEAD <= budget;
    if fits(&bytes) {
        return bytes;
    }
    let (me, from) = (own.map(|p| p.id), own.map_or([0; 3], |p| p.pos));
    let in_baseline = |id: PlayerId| baseline.players.binary_search_by_key(&id, |b| b.id).is_ok();
    let mut candidates: Vec<(i64, PlayerId)> = sent
        .players
        .iter()
        .filter(|p| Some(p.id) != me && in_baseline(p.id) && rate.may_hold(p.id))
        .map(|p| (squared_distance(p.pos, from), p.id))
        .collect();
    if candidates.is_empty() {
        return bytes;
    }
    // Farthest first.
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    let mut count = 1;
    let (packet, encoded) = loop {
        let mut held: Vec<PlayerId> = candidates[..count].iter().map(|(_, id)| *id).collect();
        held.sort_unstable();
        let trial = Snapshot {
            held,
            ..sent.clone()
        };
        let packet = SnapshotPacket::encode(&trial, Some(baseline));
        let Ok(encoded) = ServerDatagram::Snapshot(packet.clone()).encode() else {
            return bytes; // `sent` untouched: what goes is what was encoded first
        };
        if fits(&encoded) || count == candidates.len() {
            break (packet, encoded);
        }
        count = (count * 2).min(candidates.len());
    };
    // Kept as the client will resolve it: each held player at its reference.
    let Ok(resolved) = packet.resolve(Some(baseline)) else {
        return bytes; // cannot happen: a packet resolves against its own baseline
    };
    *sent = resolved;
    encoded
}

/// Squared distance between two grid positions, in steps.
pub(crate) fn squared_distance(a: [i32; 3], b: [i32; 3]) -> i64 {
    (0..3)
        .map(|i| (i64::from(a[i]) - i64::from(b[i])).pow(2))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_earns_in_time_and_keeps_no_more_than_two_snapshots() {
        let mut rate = DownloadRate::new(16_000);
        // What a snapshot interval earns at 64 a second: 237.5 bytes.
        let per = 16_000.0 * RATE_SHARE / 64.0;
        // The first snapshot may take two snapshots' worth.
        assert_eq!(rate.budget(10.0, 64, 0), Some((2.0 * per) as usize));
        rate.spend(453, &Snapshot::default());
        let left = 2.0 * per - 500.0;
        assert_eq!(
            rate.budget(10.0 + 1.0 / 64.0, 64, 0),
            Some((left + per) as usize)
        );
        // Overspent, the next snapshot waits until the rate has earned it back.
        rate.spend(453, &Snapshot::default());
        let left = left + per - 500.0;
        assert!(left + per < 0.0);
        assert_eq!(rate.budget(10.0 + 2.0 / 64.0, 64, 0), None);
        assert_eq!(
            rate.budget(10.0 + 4.0 / 64.0, 64, 0),
            Some((left + 3.0 * per) as usize)
        );
        // A long quiet buys no burst.
        assert_eq!(rate.budget(20.0, 64, 0), Some((2.0 * per) as usize));
    }

    /// The budget a client gets once the smoothing has settled, its snapshots taking
    /// `snapshot` bytes and the transport sending `others` more each snapshot interval.
    fn settled_budget(rate: u32, snapshot: usize, others: u64) -> Option<usize> {
        let mut r = DownloadRate::new(rate);
        let (mut total, mut budget) = (0, None);
        for k in 0..400 {
            budget = r.budget(10.0 + f64::from(k) / 64.0, 64, total);
            r.spend(snapshot, &Snapshot::default());
            total += (snapshot + DATAGRAM_OVERHEAD) as u64 + others;
        }
        budget
    }

    #[test]
    fn what_else_the_transport_sends_comes_off_the_rate_down_to_a_quarter() {
        // The rate's share is 15.2 kB/s: 237.5 bytes a snapshot interval.
        let share = 16_000.0 * RATE_SHARE;
        let two_intervals = |bps: f64| (2.0 * bps / 64.0) as usize;
        // Alone, a snapshot of 53 bytes (100 with headers) leaves two intervals' worth.
        assert_eq!(settled_budget(16_000, 53, 0), Some(two_intervals(share)));
        // 62 bytes more an interval (4 kB/s of reliable messages and acknowledgements)
        // come off what snapshots earn.
        let shared = settled_budget(16_000, 53, 62).unwrap();
        let expected = two_intervals(share - 62.0 * 64.0);
        assert!(
            shared.abs_diff(expected) <= 1,
            "{shared} against {expected}"
        );
        // A flood leaves snapshots a quarter of the share (small ones, 50 bytes with
        // headers, to fit in it).
        let flooded = settled_budget(16_000, 3, 2_000).unwrap();
        let expected = two_intervals(share / 4.0);
        assert!(
            flooded.abs_diff(expected) <= 1,
            "{flooded} against {expected}"
        );
        // Under the floor counts as the floor.
        assert_eq!(DownloadRate::new(10).bytes_per_second(), MIN_RATE);
    }
}
