//! A link conditioner: fake latency, jitter, loss, duplication and reordering applied to
//! packets in the transport, deterministic from a seed so tests replay exactly.

use sightline_sim::hash::{hash as mix, unit};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// How a link misbehaves, one way.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ConditionerSettings {
    /// Added one-way delay, milliseconds.
    pub latency_ms: f32,
    /// Each packet's delay varies uniformly by up to this much either way, milliseconds.
    /// Packets may then overtake each other, as on a real path.
    pub jitter_ms: f32,
    /// Share of packets dropped, percent.
    pub loss_pct: f32,
    /// Share of packets delivered twice, percent.
    pub duplicate_pct: f32,
    /// Share of packets held back an extra 20-40 ms, arriving after later ones, percent.
    pub reorder_pct: f32,
}

impl ConditionerSettings {
    /// Whether these settings change anything.
    pub fn is_active(&self) -> bool {
        *self != Self::default()
    }

    /// Checks every value is finite and in range.
    pub fn validate(&self) -> Result<(), String> {
        let check = |name: &str, v: f32, max: f32| {
            if v.is_finite() && (0.0..=max).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} must be between 0 and {max}, got {v}"))
            }
        };
        check("latency", self.latency_ms, 5000.0)?;
        check("jitter", self.jitter_ms, 1000.0)?;
        check("loss", self.loss_pct, 100.0)?;
        check("duplication", self.duplicate_pct, 100.0)?;
        check("reordering", self.reorder_pct, 100.0)
    }
}

/// Packets on their way through a conditioned link.
#[derive(Debug)]
pub struct LinkConditioner<P> {
    /// Current behaviour; may be changed at any time and applies to packets sent after.
    pub settings: ConditionerSettings,
    seed: u64,
    sent: u64,
    // Ordered by delivery time, then by send order so equal times keep their order.
    queue: BinaryHeap<Reverse<(Duration, u64, Wrapped<P>)>>,
}

/// Lets packets sit in the heap without needing an order of their own.
#[derive(Debug)]
struct Wrapped<P>(P);

impl<P> PartialEq for Wrapped<P> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<P> Eq for Wrapped<P> {}
impl<P> PartialOrd for Wrapped<P> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Wrapped<P> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<P: Clone> LinkConditioner<P> {
    /// A conditioner whose choices follow from `seed`.
    pub fn new(settings: ConditionerSettings, seed: u64) -> Self {
        Self {
            settings,
            seed,
            sent: 0,
            queue: BinaryHeap::new(),
        }
    }

    /// Takes a packet sent at `now`; it comes out of [`Self::ready`] once its delay is over.
    pub fn send(&mut self, now: Duration, packet: P) {
        let n = self.sent;
        self.sent += 1;
        let s = self.settings;
        if unit(mix(self.seed, n, 1)) * 100.0 < s.loss_pct {
            return;
        }
        let copies = if unit(mix(self.seed, n, 2)) * 100.0 < s.duplicate_pct {
            2
        } else {
            1
        };
        for copy in 0..copies {
            let jitter = (unit(mix(self.seed, n, 3 + copy)) * 2.0 - 1.0) * s.jitter_ms;
            let mut delay_ms = (s.latency_ms + jitter).max(0.0);
            if unit(mix(self.seed, n, 5 + copy)) * 100.0 < s.reorder_pct {
                delay_ms += 20.0 + 20.0 * unit(mix(self.seed, n, 7 + copy));
            }
            let at = now + Duration::from_secs_f64(delay_ms as f64 / 1000.0);
            self.queue
                .push(Reverse((at, n * 2 + copy, Wrapped(packet.clone()))));
        }
    }

    /// Packets whose time has come by `now`, in delivery order.
    pub fn ready(&mut self, now: Duration) -> Vec<P> {
        let mut out = Vec::new();
        while let Some(Reverse((at, _, _))) = self.queue.peek() {
            if *at > now {
                break;
            }
            let Reverse((_, _, Wrapped(p))) = self.queue.pop().expect("peeked");
            out.push(p);
        }
        out
    }

    /// Packets still in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn run(settings: ConditionerSettings, seed: u64, n: u32) -> Vec<(u32, Duration)> {
        let mut c = LinkConditioner::new(settings, seed);
        let mut out = vec![];
        for i in 0..n {
            c.send(ms(i as u64), i);
        }
        for t in 0..(n as u64 + 2000) {
            for p in c.ready(ms(t)) {
                out.push((p, ms(t)));
            }
        }
        out
    }

    #[test]
    fn a_clean_link_delivers_everything_in_order_at_once() {
        let out = run(ConditionerSettings::default(), 1, 100);
        assert_eq!(out.len(), 100);
        assert!(
            out.iter()
                .enumerate()
                .all(|(i, (p, t))| *p == i as u32 && *t == ms(i as u64))
        );
    }

    #[test]
    fn latency_delays_every_packet() {
        let s = ConditionerSettings {
            latency_ms: 75.0,
            ..Default::default()
        };
        for (p, t) in run(s, 1, 50) {
            assert_eq!(t, ms(p as u64 + 75));
        }
    }

    #[test]
    fn jitter_spreads_delays_within_bounds_and_reorders() {
        let s = ConditionerSettings {
            latency_ms: 50.0,
            jitter_ms: 20.0,
            ..Default::default()
        };
        let out = run(s, 7, 1000);
        assert_eq!(out.len(), 1000);
        let delays: Vec<i64> = out
            .iter()
            .map(|(p, t)| t.as_millis() as i64 - *p as i64)
            .collect();
        assert!(delays.iter().all(|d| (30..=71).contains(d)), "{delays:?}");
        let spread = delays.iter().max().unwrap() - delays.iter().min().unwrap();
        assert!(spread >= 35, "jitter barely varied the delay: {spread}");
        assert!(
            out.windows(2).any(|w| w[1].0 < w[0].0),
            "nothing was reordered"
        );
    }

    #[test]
    fn loss_and_duplication_happen_at_about_their_rates() {
        let s = ConditionerSettings {
            loss_pct: 20.0,
            duplicate_pct: 10.0,
            ..Default::default()
        };
        let out = run(s, 3, 10_000);
        let mut counts = vec![0u32; 10_000];
        for (p, _) in &out {
            counts[*p as usize] += 1;
        }
        let lost = counts.iter().filter(|&&c| c == 0).count();
        let doubled = counts.iter().filter(|&&c| c == 2).count();
        assert!((1800..2200).contains(&lost), "lost {lost}");
        assert!((650..950).contains(&doubled), "doubled {doubled}");
    }

    #[test]
    fn the_same_seed_gives_the_same_behaviour() {
        let s = ConditionerSettings {
            latency_ms: 30.0,
            jitter_ms: 10.0,
            loss_pct: 5.0,
            duplicate_pct: 2.0,
            reorder_pct: 2.0,
        };
        assert_eq!(run(s, 11, 500), run(s, 11, 500));
        assert_ne!(run(s, 11, 500), run(s, 12, 500));
    }

    #[test]
    fn settings_are_validated() {
        assert!(ConditionerSettings::default().validate().is_ok());
        let bad = ConditionerSettings {
            loss_pct: 150.0,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("loss"));
        let nan = ConditionerSettings {
            latency_ms: f32::NAN,
            ..Default::default()
        };
        assert!(nan.validate().is_err());
    }
}
